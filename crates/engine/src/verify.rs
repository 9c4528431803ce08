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
//! gain. Each result is kept at its run's place in the list, so the output
//! does not depend on the number of jobs or on which lane ran a run.
//!
//! On more than one core the jobs run in processes of their own, as a
//! fuzz campaign's do (decision 0406): the first run is checked here (its
//! agent then compiled into the store's cache), then the rest are shared
//! out among this process and its workers (`verify --verify-worker N`,
//! sent the list of runs first), each answering a run with its
//! [`Checked`].

use crate::lanes::worker::{self, Worker};
use crate::lanes::{self, Answer, Remote};
use crate::replay::{self, ReplayReport};
use anyhow::{Result, anyhow};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore as _, SeedableRng as _};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use worldline_case::bounded::WORKER_LINE;
use worldline_log::log::{bundle, rules};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// How one run's check ended.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checked {
    Replayed(Box<ReplayReport>),
    /// An MCP session (`worldline mcp`), replayed from its events
    /// (decision 0356).
    McpSession(Box<ReplayReport>),
    /// It could not be opened or replayed (why).
    Unreadable(String),
    /// Cut off before its header (killed as it started, or a full disk):
    /// nothing to replay, and not drift.
    Headless,
    /// A native run of a transport this build does not replay (neither a
    /// process it started nor a session it re-derives from its events):
    /// its hash chain was checked when it was read.
    Session,
    /// A redacted copy (`export --redacted`, imported): its hash chain and
    /// footer checked as it was read; it cannot be re-executed.
    Copy,
    /// Recorded under these rules by a later worldline: not replayed here,
    /// and not drift (a later worldline verifies it).
    Later(u32),
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

/// A run checked, as a lane answers it: its place in the list of runs
/// and how its check ended.
#[derive(Serialize, Deserialize)]
pub struct CheckedRun {
    index: u64,
    checked: Checked,
}

impl Answer for CheckedRun {
    fn index(&self) -> u64 {
        self.index
    }
}

/// The first line `verify` writes its worker: the runs it shares out,
/// which the worker's items index, lent by `verify` (a copy of a long
/// list held as much again until its workers had started).
#[derive(Serialize, Deserialize)]
pub struct Hello<'a> {
    runs: Cow<'a, [String]>,
}

impl Hello<'_> {
    /// The runs shared out.
    pub fn runs(&self) -> &[String] {
        &self.runs
    }

    /// Whether it fits the one line a worker reads first (a list of some
    /// 600,000 runs does not: such a `verify` keeps its jobs on threads).
    /// Its JSON is counted, not kept.
    pub fn fits_a_line(&self) -> bool {
        struct Count(usize);
        impl Write for Count {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0 += bytes.len();
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut count = Count(0);
        serde_json::to_writer(&mut count, self).is_ok() && count.0 < WORKER_LINE as usize
    }
}

/// Replay each of `runs` on `jobs` jobs, those of the `workers` it starts
/// (handed what to send them first) in their processes and the rest on
/// threads of this one; each result to `each` in the order of `runs`, as
/// soon as the results before it are in, so that a store's checks are not
/// held until the last. After a signal ([`unstopped`]) it begins no run,
/// and the runs checked after one not begun are handed on at the end.
pub fn verify(
    sandbox: &Sandbox,
    store: &StoreDir,
    runs: &[String],
    jobs: usize,
    workers: impl FnOnce(&Hello) -> Result<Vec<Worker<CheckedRun>>>,
    each: impl FnMut(usize, Checked) + Send,
) -> Result<()> {
    // Bundles being created are hard-linked from a temporary file; one a
    // killed writer left is not a run.
    worldline_case::durable::sweep(&store.runs_dir());
    if runs.is_empty() {
        return Ok(());
    }
    // A store's runs share a few cases and agents: each is read once.
    let opened = replay::Opened::default();
    let (reached, done) = (AtomicUsize::new(0), AtomicBool::new(false));
    let order = Mutex::new(InOrder {
        next: 0,
        waiting: BTreeMap::new(),
        each,
    });
    let keep = |c: CheckedRun| {
        let i = usize::try_from(c.index).unwrap_or(usize::MAX);
        reached.fetch_max(i, Ordering::Relaxed);
        if i < runs.len() {
            order.lock().expect("results lock").put(i, c.checked);
        }
    };
    std::thread::scope(|s| {
        // The bundles read ahead of the replays (decision 0403).
        s.spawn(|| {
            read_ahead(runs.len(), &reached, &done, |i| {
                if worldline_store::store::is_run_id(&runs[i]) {
                    start_reading(&store.bundle_path(&runs[i]));
                }
            })
        });
        let shared = (|| {
            // The first run here, so its agent is in the cache (when the
            // cache can be written) before a worker would compile it too.
            keep(CheckedRun {
                index: 0,
                checked: check(sandbox, store, &runs[0], &opened),
            });
            let workers = workers(&Hello {
                runs: Cow::Borrowed(runs),
            })?;
            let remote: usize = workers.iter().map(|w| w.jobs()).sum();
            let workers = workers
                .into_iter()
                .map(|w| Box::new(w) as Box<dyn Remote<CheckedRun>>)
                .collect();
            let rest: Vec<u64> = (1..runs.len() as u64).collect();
            lanes::run(
                &rest,
                jobs.saturating_sub(remote),
                workers,
                &|i| {
                    reached.fetch_max(i as usize, Ordering::Relaxed);
                    Ok(unstopped().then(|| CheckedRun {
                        index: i,
                        checked: check(sandbox, store, &runs[i as usize], &opened),
                    }))
                },
                &keep,
                &|| !unstopped(),
            )
        })();
        done.store(true, Ordering::Relaxed);
        shared
    })?;
    let order = order.into_inner().expect("results lock");
    match runs.get(order.next) {
        Some(_) if !unstopped() => {
            order.rest();
            Ok(())
        }
        Some(run) => Err(anyhow!("run {run} was not checked")),
        None => Ok(()),
    }
}

/// Whether no SIGINT or SIGTERM its caller catches
/// ([`crate::native::Interrupt`]) has arrived: once one has, no run is
/// begun (those under way end and are handed on), as a suite's cases.
fn unstopped() -> bool {
    !crate::native::signals::received()
}

/// Results handed on in the order of the runs: those that come early wait
/// for the ones before them (a few, as the jobs take the runs in order).
struct InOrder<F> {
    next: usize,
    waiting: BTreeMap<usize, Checked>,
    each: F,
}

impl<F: FnMut(usize, Checked)> InOrder<F> {
    fn put(&mut self, i: usize, checked: Checked) {
        if i < self.next {
            return;
        }
        self.waiting.insert(i, checked);
        while let Some(checked) = self.waiting.remove(&self.next) {
            (self.each)(self.next, checked);
            self.next += 1;
        }
    }

    /// Once a signal stopped the check: those that came after a run not
    /// begun, in order.
    fn rest(mut self) {
        for (i, checked) in std::mem::take(&mut self.waiting) {
            (self.each)(i, checked);
        }
    }
}

/// Be a worker of a `verify` (its `--verify-worker JOBS`): check the runs
/// its items index in the list the first line of `input` sends, on `jobs`
/// threads, answering each on `output`, until `input` ends.
pub fn serve(
    sandbox: &Sandbox,
    store: &StoreDir,
    jobs: usize,
    input: impl BufRead + Send,
    output: impl Write + Send,
) -> Result<()> {
    let opened = replay::Opened::default();
    let start = |hello: Hello<'static>| {
        let opened = &opened;
        Ok(move |i: u64| {
            let run = usize::try_from(i)
                .ok()
                .and_then(|i| hello.runs.get(i))
                .ok_or_else(|| anyhow!("verify sent run {i} of {}", hello.runs.len()))?;
            Ok(unstopped().then(|| CheckedRun {
                index: i,
                checked: check(sandbox, store, run, opened),
            }))
        })
    };
    worker::serve(jobs, start, input, output)
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
/// comes, and a FIFO or a device is not opened in a way that waits.
fn start_reading(path: &std::path::Path) {
    #[cfg(target_os = "linux")]
    if let Ok(file) = worldline_case::bounded::open(path) {
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
    let rec = match replay::open_in_held(store, path.clone(), opened) {
        Ok(rec) => rec,
        // Only a bundle that does not read is looked at again for its
        // header: each read of it was a file opened and read.
        Err(_) if bundle::has_header(&path).is_ok_and(|has| !has) => return Checked::Headless,
        // A redacted copy is read (held compact), its hashes checked, as
        // `replay` reads it.
        Err(e) if bundle::read_header(&path).is_ok_and(|h| h.redacted.is_some()) => {
            return match bundle::read_held(&path) {
                Ok(_) => Checked::Copy,
                Err(read) => {
                    Checked::Unreadable(format!("{:#}", anyhow::Error::from(read).context(e)))
                }
            };
        }
        // A later worldline's run: its rules are not known here.
        Err(e) => {
            let header = bundle::read_header(&path);
            return match header.map(|h| rules::of_header(h.rules)) {
                Ok(Err(later)) => Checked::Later(later.0),
                _ => Checked::Unreadable(format!("{e:#}")),
            };
        }
    };
    // A served episode or an MCP session replays from its events
    // (decisions 0353, 0356); another transport has no process to run.
    let native = rec.bundle.header.native.as_ref();
    let rederived = crate::native::rederive::rederived(&rec.bundle.header);
    if native.is_some_and(|n| n.transport != "exec") && rederived.is_none() {
        return Checked::Session;
    }
    let session = rederived.is_some_and(crate::native::rederive::is_mcp_session);
    match replay::replay_in(sandbox, store, rec, opened) {
        Ok(r) if session => Checked::McpSession(Box::new(r)),
        Ok(r) => Checked::Replayed(Box::new(r)),
        Err(e) => Checked::Unreadable(format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn a_list_of_runs_past_a_worker_s_line_is_not_sent() {
        let hello = |n: usize| Hello {
            runs: (0..n).map(|i| format!("20261130-050000-{i:08x}")).collect(),
        };
        assert!(hello(10_000).fits_a_line());
        let line = WORKER_LINE as usize;
        assert!(hello(line / 30).fits_a_line());
        assert!(!hello(line / 27).fits_a_line());
    }

    /// A worker's answer reads back as the check it was: what `verify`
    /// reports from it is what it reports from its own threads.
    #[test]
    fn a_checked_run_reads_back_as_written() {
        use crate::replay::{Class, Divergence, Scope, Verdict};
        let diverged = ReplayReport {
            run: "20261130-050000-0000abcd".into(),
            verdict: Verdict::Diverged,
            scope: Scope::Boundary,
            matched: 3,
            recorded: 9,
            chain_hash: "ab".repeat(32),
            divergence: Some(Divergence {
                index: 3,
                class: Class::Mismatch,
                field: Some("request".into()),
                expected: serde_json::json!({"a": [1, 2.5, null], "b": "é\n"}),
                actual: serde_json::json!({"a": [1, 2.5, true]}),
            }),
            diff: vec!["$.a[2]: null → true".into()],
            env_differs: vec!["HOME (changed)".into()],
            stopped: None,
            replay_timed_out: false,
            session: None,
        };
        let identical = ReplayReport {
            verdict: Verdict::Identical,
            scope: Scope::BitForBit,
            divergence: None,
            diff: Vec::new(),
            env_differs: Vec::new(),
            stopped: None,
            replay_timed_out: false,
            ..diverged.clone()
        };
        let checks = [
            Checked::Replayed(Box::new(diverged)),
            Checked::Replayed(Box::new(identical)),
            Checked::Unreadable("cannot read bundle".into()),
            Checked::Headless,
            Checked::Session,
        ];
        for (i, checked) in checks.into_iter().enumerate() {
            let line = serde_json::to_string(&CheckedRun {
                index: i as u64,
                checked,
            })
            .unwrap();
            let back: CheckedRun = serde_json::from_str(&line).unwrap();
            assert_eq!(back.index(), i as u64);
            assert_eq!(serde_json::to_string(&back).unwrap(), line);
            if let Checked::Replayed(r) = &back.checked {
                assert_eq!(
                    serde_json::to_value(r).unwrap(),
                    serde_json::from_str::<Value>(&line).unwrap()["checked"]["replayed"]
                );
            }
        }
    }

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
