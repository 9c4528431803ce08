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
/// (after which come a native agent's arguments).
pub fn command(flag: &str, jobs: usize) -> std::io::Result<Command> {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args(&args[..at])
        .arg(flag)
        .arg(jobs.to_string())
        .args(&args[at..]);
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

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
