//! Commands that run their jobs in worker processes of their own
//! (`fuzz`, `verify`; decision 0406): a native agent that writes down
//! which process ran it, a campaign of it, finding a command's worker,
//! and whether a process is still there.

use super::{CliOutput, child_within, workspace_root, worldline_raw, write_case};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A Python agent that writes down, in `dir/pids`, the worldline process
/// whose keeper started it (its parent's parent), and answers; and a case
/// of the incident world whose campaign varies the clock.
pub struct RunnerAgent {
    pub agent: PathBuf,
    pub case: PathBuf,
    pub pids: PathBuf,
}

impl RunnerAgent {
    pub fn new(dir: &Path) -> RunnerAgent {
        let pids = dir.join("pids");
        let agent = dir.join("agent.py");
        std::fs::write(
            &agent,
            format!(
                "import os\n\
                 stat = open(f'/proc/{{os.getppid()}}/stat').read()\n\
                 runner = stat.rsplit(')', 1)[1].split()[1]\n\
                 open({:?}, 'a').write(runner + '\\n')\n\
                 print('{{}}')\n",
                pids.display().to_string()
            ),
        )
        .unwrap();
        let case = write_case(
            dir,
            "skew",
            "world = \"incident@v4\"\nseed = 7\nclock = 2026-03-01T12:05:00Z\ntask = { alert = \"ALERT-7\" }\n\n[fuzz]\nclock_skew_s = [-5, 5]\n",
        );
        RunnerAgent { agent, case, pids }
    }

    /// `fuzz` of its case by it: `runs` variations on `jobs` jobs into
    /// `store`, then `extra`.
    pub fn campaign(&self, store: &Path, runs: &str, jobs: &str, extra: &[&str]) -> CliOutput {
        let worlds = workspace_root().join("worlds");
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "fuzz".as_ref(),
            self.case.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--runs".as_ref(),
            runs.as_ref(),
            "--jobs".as_ref(),
            jobs.as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend(["--exec", "--", "python3"].map(std::ffi::OsStr::new));
        args.push(self.agent.as_os_str());
        worldline_raw(args)
    }

    /// Forget the processes written down so far.
    pub fn forget(&self) {
        let _ = std::fs::remove_file(&self.pids);
    }

    /// The processes written down since [`forget`](Self::forget): how
    /// many times it ran, and in how many processes.
    pub fn runners(&self) -> (usize, usize) {
        let mut runners: Vec<String> = std::fs::read_to_string(&self.pids)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect();
        let ran = runners.len();
        runners.sort();
        runners.dedup();
        (ran, runners.len())
    }
}

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

/// Kill the worker `parent` started with `flag` (`--fuzz-worker`): what
/// `parent` then said as it ended, which must name the worker (`a fuzz
/// worker (pid N) ended before its runs were done`) and its signal.
pub fn kill_its_worker(parent: std::process::Child, flag: &str, of: &str) -> CliOutput {
    let worker = worker_of(parent.id(), flag);
    // SAFETY: a signal to a process this test's command started.
    unsafe { libc::kill(worker as i32, libc::SIGKILL) };
    let out = child_within(Duration::from_secs(60), parent)
        .expect("the command ended after its worker died");
    assert!(
        out.stderr.contains(&format!(
            "a {of} worker (pid {worker}) ended before its runs were done"
        )),
        "{out}"
    );
    assert!(out.stderr.contains("signal: 9"), "{out}");
    out
}

/// Kill `parent`: the worker it started with `flag` must end within 10 s.
pub fn killed_takes_its_worker(mut parent: std::process::Child, flag: &str) {
    let worker = worker_of(parent.id(), flag);
    parent.kill().unwrap();
    parent.wait().unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while alive(worker) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !alive(worker),
        "worker {worker} outlived {flag}'s parent by 10 s"
    );
}
