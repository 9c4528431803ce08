//! Commands that run their jobs in worker processes of their own
//! (`fuzz`, `verify`; decision 0406): finding a command's worker, and
//! whether a process is still there.

use std::time::{Duration, Instant};

/// Whether this machine gives a process one core, so a command runs its
/// jobs in one process (a test of its workers then says it is skipped).
pub fn one_core() -> bool {
    let one = std::thread::available_parallelism().map_or(1, |n| n.get()) < 2;
    if one {
        eprintln!("skipped: one core gives a command one process");
    }
    one
}

/// The parent pid of `pid` (`None` once it is gone).
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Whether `pid` is still a process (a zombie is not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| Some(s.rsplit_once(')')?.1.split_whitespace().next()? != "Z"))
        .unwrap_or(false)
}

/// The first child of `pid` started with `flag` (`--fuzz-worker`,
/// `--verify-worker`), waited for up to 20 s.
pub fn worker_of(pid: u32, flag: &str) -> u32 {
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(child) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            if parent_of(child) == Some(pid)
                && cmdline.split(|b| *b == 0).any(|a| a == flag.as_bytes())
            {
                return child;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no {flag} child of {pid} within 20 s");
}
