//! `verify`'s runner: many recorded runs replayed strictly, in parallel,
//! each ending as a report, an error, or a bundle cut off before its
//! header; optionally a seeded random sample of them (a nightly check of a
//! large store that covers it all over the nights, any night's sample
//! repeatable from its seed).
//!
//! Why a watchdog-stopped run verifies as `timeout` (was decision 0124): the
//! watchdog is wall-clock, so a replay on a busier machine stops sooner, and
//! `verify` counted such runs as drift. A replay of a run whose footer says
//! `timeout` gives verdict `timeout` when every event it made matches, whether
//! it reached the recording's end or its own watchdog fired first, and `verify`
//! counts these outside the drift rate; a real mismatch is still `diverged`.
//! Lifting the watchdog during replay would let a run that spun for ever hang
//! verify; skipping timeout runs would lose their recorded prefix, still worth
//! checking.
//!
//! Why `--sample N` is a seeded random sample, printed (was decision 0262): a
//! nightly check of a large store cannot replay every run; a fresh sample each
//! night (a partial Fisher-Yates shuffle over ChaCha8, seeded by `--seed` or a
//! fresh seed printed before anything is replayed) covers the store over the
//! nights, and the printed seed makes any night's check repeatable exactly.
//! Real randomness only picks which recorded runs to check; nothing of it
//! reaches a run or a record. A fixed default seed would check the same runs
//! every night and the rest never; the newest N runs would miss drift in old
//! runs (a changed world file, a new engine), which is what a nightly check is
//! for; sampling by hashing run ids with the seed is more machinery for little
//! gain. Replays run on `--jobs` threads through the index-ordered parallel
//! map, so the output does not depend on the number of threads.

use crate::replay::{self, ReplayReport};
use anyhow::Result;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore as _, SeedableRng as _};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use worldline_log::log::bundle;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// How one run's check ended.
pub enum Checked {
    Replayed(ReplayReport),
    /// It could not be opened or replayed (why).
    Unreadable(String),
    /// Cut off before its header (killed as it started, or a full disk):
    /// nothing to replay, and not drift.
    Headless,
    /// An outside client's session that cannot be re-derived from its
    /// events: no process to run again; its hash chain was checked when it
    /// was read.
    Session,
}

/// `n` of `runs` drawn without replacement from `seed`, in the order of
/// `runs` (all of them when `n` is as many or more).
pub fn sample(runs: &[String], n: usize, seed: u64) -> Vec<String> {
    if n >= runs.len() {
        return runs.to_vec();
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<usize> = (0..runs.len()).collect();
    // A partial Fisher-Yates shuffle: the first `n` places are the sample.
    for i in 0..n {
        let left = (runs.len() - i) as u64;
        let j = i + (rng.next_u64() % left) as usize;
        order.swap(i, j);
    }
    let mut picked = order[..n].to_vec();
    picked.sort_unstable();
    picked.into_iter().map(|i| runs[i].clone()).collect()
}

/// A seed for a sample when none is given (printed with the sample, so
/// the same runs can be checked again).
pub fn fresh_seed() -> u64 {
    let mut bytes = [0u8; 8];
    // Without the system's randomness, the time still varies the sample.
    if getrandom::fill(&mut bytes).is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        bytes = (now.as_nanos() as u64).to_le_bytes();
    }
    // Short enough to type back.
    u64::from_le_bytes(bytes) % 1_000_000_000
}

/// Replay each of `runs` on `jobs` threads; results in the order of `runs`.
pub fn verify(
    sandbox: &Sandbox,
    store: &StoreDir,
    runs: &[String],
    jobs: usize,
) -> Result<Vec<Checked>> {
    // Bundles being created are hard-linked from a temporary file; one a
    // killed writer left is not a run.
    worldline_case::durable::sweep(&store.runs_dir());
    // A store's runs share a few cases and agents: each is read once.
    let opened = replay::Opened::default();
    let (reached, done) = (AtomicUsize::new(0), AtomicBool::new(false));
    std::thread::scope(|s| {
        // The bundles read ahead of the replays (decision 0403).
        s.spawn(|| {
            read_ahead(runs.len(), &reached, &done, |i| {
                if worldline_store::store::is_run_id(&runs[i]) {
                    start_reading(&store.bundle_path(&runs[i]));
                }
            })
        });
        let checked = worldline_case::parallel::par_map(runs.len(), jobs, |i| {
            reached.fetch_max(i, Ordering::Relaxed);
            Ok(check(sandbox, store, &runs[i], &opened))
        });
        done.store(true, Ordering::Relaxed);
        checked
    })
}

/// How many runs past the furthest replay begun their bundles are read
/// ahead: enough to keep the disk busy, few enough that the page cache
/// still holds them when their turn comes.
const READ_AHEAD: usize = 64;

/// `hint(i)` for each of `0..total` in order, at most [`READ_AHEAD`] past
/// `reached` (the furthest item begun), until every item is hinted or
/// `done`.
fn read_ahead(total: usize, reached: &AtomicUsize, done: &AtomicBool, mut hint: impl FnMut(usize)) {
    for i in 0..total {
        while i > reached.load(Ordering::Relaxed) + READ_AHEAD {
            if done.load(Ordering::Relaxed) {
                return;
            }
            std::thread::park_timeout(Duration::from_millis(1));
        }
        if done.load(Ordering::Relaxed) {
            return;
        }
        hint(i);
    }
}

/// Ask the system to read the file at `path` into its cache without
/// waiting for it: a store not read for a while is on the disk, and two
/// replays reading their bundles one at a time leave it idle between
/// reads. A hint: any error leaves the file to be read when its turn
/// comes.
fn start_reading(path: &std::path::Path) {
    #[cfg(target_os = "linux")]
    if let Ok(file) = std::fs::File::open(path) {
        use std::os::fd::AsRawFd as _;
        // SAFETY: the descriptor is open for the duration of the call.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}

fn check(sandbox: &Sandbox, store: &StoreDir, run: &str, opened: &replay::Opened) -> Checked {
    let path = match store.resolve_run(run) {
        Ok(path) => path,
        Err(e) => return Checked::Unreadable(format!("{:#}", anyhow::Error::from(e))),
    };
    if bundle::has_header(&path).is_ok_and(|has| !has) {
        return Checked::Headless;
    }
    let rec = match replay::open_in(store, path, opened) {
        Ok(rec) => rec,
        Err(e) => return Checked::Unreadable(format!("{e:#}")),
    };
    // A served episode or an MCP session replays from its events
    // (decisions 0353, 0356); another transport has no process to run.
    let native = rec.bundle.header.native.as_ref();
    let rederived = crate::native::rederive::rederived(&rec.bundle.header).is_some();
    if native.is_some_and(|n| n.transport != "exec") && !rederived {
        return Checked::Session;
    }
    match replay::replay_in(sandbox, store, rec, opened) {
        Ok(r) => Checked::Replayed(r),
        Err(e) => Checked::Unreadable(format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_are_read_ahead_in_order_at_most_a_window_past_the_replays() {
        let (reached, done) = (AtomicUsize::new(0), AtomicBool::new(false));
        let hinted = std::sync::Mutex::new(Vec::new());
        // Wait (on a loaded machine, up to 10 s) for `n` hints, then a
        // little longer, so that any hint past `n` would be seen.
        let settled_at = |n: usize| {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while hinted.lock().unwrap().len() < n && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(Duration::from_millis(50));
            hinted.lock().unwrap().clone()
        };
        // Ends the reader however the checks end, so a failing one fails
        // the test instead of leaving the scope waiting for it.
        struct Ends<'a>(&'a AtomicBool);
        impl Drop for Ends<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        std::thread::scope(|s| {
            s.spawn(|| read_ahead(1000, &reached, &done, |i| hinted.lock().unwrap().push(i)));
            let _ends = Ends(&done);
            assert_eq!(
                settled_at(READ_AHEAD + 1),
                (0..=READ_AHEAD).collect::<Vec<_>>(),
                "a window past item 0"
            );
            reached.store(500, Ordering::Relaxed);
            assert_eq!(settled_at(500 + READ_AHEAD + 1).len(), 500 + READ_AHEAD + 1);
        });
        let seen = hinted.into_inner().unwrap();
        assert_eq!(
            seen,
            (0..seen.len()).collect::<Vec<_>>(),
            "in order, once each"
        );
        assert!(seen.len() < 1000, "stopped when done");
    }

    #[test]
    fn a_sample_is_its_seeds_and_keeps_the_runs_order() {
        let runs: Vec<String> = (0..1000).map(|i| format!("r{i:04}")).collect();
        let a = sample(&runs, 100, 7);
        assert_eq!(a.len(), 100);
        assert_eq!(a, sample(&runs, 100, 7), "the same seed, the same runs");
        assert_ne!(a, sample(&runs, 100, 8));
        assert!(a.windows(2).all(|w| w[0] < w[1]), "in order, no repeats");
        assert_eq!(sample(&runs[..5], 100, 7), runs[..5].to_vec());
    }
}
