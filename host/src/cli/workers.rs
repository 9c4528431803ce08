//! Jobs in processes of their own (decision 0406), for the commands that
//! share items out (`fuzz`, `verify`): how many jobs each process takes,
//! and a worker's command line.

use std::ffi::OsString;
use std::process::Command;

/// How `jobs` are shared out among processes: this one's first, then a
/// worker's each. As many processes as cores, at most one a job or an
/// item, so each job runs in a process of its own where the cores allow;
/// no more jobs than items (a job is a thread).
pub fn shares(jobs: usize, items: u64) -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = jobs
        .min(usize::try_from(items).unwrap_or(usize::MAX))
        .max(1);
    let processes = jobs.min(cores);
    (0..processes)
        .map(|p| jobs / processes + usize::from(p < jobs % processes))
        .collect()
}

/// This process's command line again, with `flag JOBS` before any `--`
/// (after which come a native agent's arguments). A `--store` address
/// holding a password is given without it, the password in the worker's
/// `PGPASSWORD`: no command line worldline starts shows it (any user
/// reads another's `/proc/PID/cmdline`; only its owner its environment).
pub fn command(flag: &str, jobs: usize) -> std::io::Result<Command> {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut command = Command::new(std::env::current_exe()?);
    if let Some(password) = without_password(&mut args[..at]) {
        use std::os::unix::ffi::OsStringExt;
        command.env("PGPASSWORD", OsString::from_vec(password));
    }
    command
        .args(&args[..at])
        .arg(flag)
        .arg(jobs.to_string())
        .args(&args[at..]);
    Ok(command)
}

/// The `--store` of `args` (`--store ADDR` or `--store=ADDR`), when it is
/// a database address holding a password, made the address without it;
/// the password.
fn without_password(args: &mut [OsString]) -> Option<Vec<u8>> {
    let at = args
        .iter()
        .position(|a| a == "--store" || a.to_str().is_some_and(|a| a.starts_with("--store=")))?;
    let (value, prefix) = match args[at].to_str()?.strip_prefix("--store=") {
        Some(v) => (v.to_string(), "--store="),
        None => (args.get(at + 1)?.to_str()?.to_string(), ""),
    };
    if !worldline_pgstore::url::is_postgres(&value) {
        return None;
    }
    let url = worldline_pgstore::url::parse(&value).ok()?;
    let password = worldline_pgstore::url::password(&url)?;
    let slot = if prefix.is_empty() { at + 1 } else { at };
    args[slot] = format!("{prefix}{}", url.shown).into();
    Some(password)
}

/// Run a command that may be a worker (`worker`): `run` sets its flag once
/// it serves. An error before then (its setup: the store full as it kept
/// the agent) is told to the process that started it, which stops on it
/// as on its own; once serving, the worker answers its errors itself.
/// It ended unsaid: "a worker ended before its runs were done", exit 4.
pub fn as_worker(
    worker: bool,
    run: impl FnOnce(&mut bool) -> anyhow::Result<super::exit::ExitCode>,
) -> anyhow::Result<super::exit::ExitCode> {
    let mut serving = false;
    let ran = run(&mut serving);
    if worker
        && !serving
        && let Err(e) = &ran
    {
        let _ = worldline_engine::lanes::worker::refuse(std::io::stdout(), e);
    }
    ran
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_address_s_password_goes_to_the_worker_s_environment() {
        let mut args: Vec<OsString> = [
            "fuzz",
            "c.toml",
            "--store",
            "postgres://u:p%40ss@h:5/db?schema=s",
        ]
        .map(OsString::from)
        .into();
        assert_eq!(without_password(&mut args), Some(b"p@ss".to_vec()));
        assert_eq!(args[3], "postgres://u@h:5/db?schema=s");
        let mut args: Vec<OsString> = ["fuzz", "--store=postgres://u:pw@h/db"]
            .map(OsString::from)
            .into();
        assert_eq!(without_password(&mut args), Some(b"pw".to_vec()));
        assert_eq!(args[1], "--store=postgres://u@h/db");
        let mut args: Vec<OsString> = ["fuzz", "--store", "postgres://u@h/db"]
            .map(OsString::from)
            .into();
        assert_eq!(without_password(&mut args), None);
        assert_eq!(args[2], "postgres://u@h/db");
        let mut args: Vec<OsString> = ["fuzz", "--store", "st"].map(OsString::from).into();
        assert_eq!(without_password(&mut args), None);
    }

    #[test]
    fn jobs_are_shared_among_at_most_as_many_processes_as_cores_and_items() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(shares(1, 100), [1]);
        assert_eq!(shares(5, 1), [1], "one item: one process, one job");
        assert_eq!(
            shares(1_000, 2).iter().sum::<usize>(),
            2,
            "no more jobs than items"
        );
        let s = shares(2 * cores + 1, 1000);
        assert_eq!(s.len(), cores);
        assert_eq!(s.iter().sum::<usize>(), 2 * cores + 1);
        assert!(s.windows(2).all(|w| w[0] >= w[1]), "{s:?}");
    }
}
