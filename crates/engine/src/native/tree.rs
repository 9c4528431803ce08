//! The processes of a native run, kept in one tree and ended together
//! (decision 0237). worldline starts a keeper: a fork that never execs,
//! makes itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`) and
//! forks the agent's command. An orphan is re-parented to its nearest
//! subreaper, so whatever the agent starts, a daemon that left its process
//! group and session (`setsid`, a double fork) included, stays a
//! descendant of the keeper. The keeper holds none of the agent's pipes,
//! reports the agent's wait status on a pipe of its own, and exits once it
//! has no child left. Ending the run kills every descendant of the keeper
//! (found in /proc by parent pid, again until none is left), then reaps
//! the keeper. Should worldline die first (SIGKILL), the kernel tells the
//! keeper (`PR_SET_PDEATHSIG`), which kills the tree itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long ending a run keeps killing what is left before it gives up
/// (a process stuck in the kernel dies when it leaves it).
const KILL_FOR: Duration = Duration::from_secs(5);

/// How long the keeper gets to reap the last of the tree and exit.
const KEEPER_EXITS_WITHIN: Duration = Duration::from_secs(1);

/// A started command and everything it starts.
pub(super) struct Tree {
    keeper: Child,
    status: Option<File>,
    ended: bool,
}

/// The agent's stdio, as [`Command`] piped it.
pub(super) struct Stdio {
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
}

/// Start `cmd` under a keeper, in a session (and process group) of its
/// own. Its stdio, working directory and environment are `cmd`'s, as for
/// [`Command::spawn`].
pub(super) fn spawn(cmd: &mut Command) -> io::Result<Tree> {
    let (read, write) = status_pipe()?;
    let status_fd = write.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe functions (prctl, sigaction, getppid, fork,
    // open, read, dup2, close, signal, kill, waitpid, write, _exit); it
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || keep(status_fd));
    }
    let keeper = cmd.spawn();
    drop(write);
    Ok(Tree {
        keeper: keeper?,
        status: Some(File::from(read)),
        ended: false,
    })
}

impl Tree {
    /// The agent's stdin, stdout and stderr (once).
    pub(super) fn stdio(&mut self) -> Stdio {
        Stdio {
            stdin: self.keeper.stdin.take(),
            stdout: self.keeper.stdout.take(),
            stderr: self.keeper.stderr.take(),
        }
    }

    /// The agent's wait status, sent once it ends (`None`: the keeper died
    /// without saying).
    pub(super) fn watch(&mut self) -> mpsc::Receiver<Option<ExitStatus>> {
        let (done, waited) = mpsc::channel();
        if let Some(mut pipe) = self.status.take() {
            std::thread::spawn(move || {
                let mut raw = [0u8; 4];
                let status = pipe
                    .read_exact(&mut raw)
                    .ok()
                    .map(|()| ExitStatus::from_raw(i32::from_ne_bytes(raw)));
                let _ = done.send(status);
            });
        }
        waited
    }

    /// Kill the agent and every process it started, again until none is
    /// left (a process forking meanwhile is found the next time round).
    pub(super) fn kill_all(&self) {
        let until = Instant::now() + KILL_FOR;
        while self.kill_round() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Kill what the tree holds now; whether anything was found. The
    /// keeper's own children first, read from its one `children` file
    /// (what a process forking and exiting over and over leaves is
    /// re-parented there at once): the search of every process takes
    /// longer than such a process lives, and a chase by it alone lost.
    fn kill_round(&self) -> bool {
        let root = self.keeper.id() as i32;
        // The keeper is in the agent's process group: a `kill -STOP 0`
        // (or a terminal's SIGTTIN) stops it too, and a stopped keeper
        // reaps nothing and reports nothing.
        // SAFETY: a signal to this process's own child, not yet reaped.
        unsafe { libc::kill(root, libc::SIGCONT) };
        let keepers = BTreeSet::from([root]);
        let direct = children_of(root);
        for &pid in &direct {
            kill(pid, root, &keepers);
        }
        let alive = descendants(root);
        let tree: BTreeSet<i32> = alive.iter().copied().chain([root]).collect();
        for &pid in &alive {
            kill(pid, root, &tree);
        }
        !direct.is_empty() || !alive.is_empty()
    }

    /// Kill everything in the tree and reap the keeper.
    pub(super) fn end(mut self) {
        self.finish();
    }

    /// Kill the tree until the keeper exits, which it does once it has
    /// no child left: a search that found nothing may have missed a
    /// process forking meanwhile, the keeper's exit does not.
    fn finish(&mut self) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        // Before the keeper is reaped: its pid, which names its session,
        // is not given to another process while it is a zombie.
        self.kill_all();
        let until = Instant::now() + KILL_FOR + KEEPER_EXITS_WITHIN;
        while Instant::now() < until {
            if !matches!(self.keeper.try_wait(), Ok(None)) {
                return;
            }
            self.kill_round();
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = self.keeper.kill();
        let _ = self.keeper.wait();
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A close-on-exec pipe whose ends are above stdio (the child's stdio is
/// set up before the keeper runs, over descriptors 0 to 2).
fn status_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two descriptors on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned here.
    let [r, w] = fds.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    Ok((above_stdio(r)?, above_stdio(w)?))
}

fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: duplicating a descriptor owned here; the copy is owned too.
    let copy = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if copy < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `copy` was just made.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// In the forked child: become the keeper and fork the agent, which
/// returns to exec the command; the keeper never returns.
fn keep(status: RawFd) -> io::Result<()> {
    // SAFETY: see `spawn`; async-signal-safe calls only.
    unsafe {
        // A session of its own (a process group too, as before): no
        // controlling terminal, so an agent that asks one for input
        // (`getpass`, `read < /dev/tty`) fails at once, where it stopped
        // the whole group (SIGTTIN), keeper included, until the time limit.
        if libc::setsid() < 0 {
            return Err(io::Error::last_os_error());
        }
        let on: libc::c_ulong = 1;
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, on) != 0 {
            return Err(io::Error::last_os_error());
        }
        // Should worldline die without ending the run (SIGKILL), the
        // kernel tells the keeper, which then ends the tree itself. The
        // signal is only to wake it: its handler does nothing, and no
        // SA_RESTART, so the keeper's wait returns and it looks.
        let parent = libc::getppid();
        let mut woken: libc::sigaction = std::mem::zeroed();
        woken.sa_sigaction = wake as extern "C" fn(libc::c_int) as libc::sighandler_t;
        if libc::sigaction(ORPHANED, &woken, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        super::signals::told_of_parent_death(parent, ORPHANED)?;
        let agent = libc::fork();
        if agent < 0 {
            return Err(io::Error::last_os_error());
        }
        if agent == 0 {
            // The agent's memory as the system would have it: `worldline`
            // turns transparent huge pages off for itself (decision 0405),
            // which a child inherits.
            libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0);
            return Ok(());
        }
        keeper(agent, parent, status)
    }
}

/// The signal the kernel sends the keeper when worldline's thread that
/// started it ends (`PR_SET_PDEATHSIG`): it outlives the tree unless
/// worldline dies.
const ORPHANED: libc::c_int = libc::SIGUSR1;

extern "C" fn wake(_: libc::c_int) {}

/// The keeper's life: hold nothing the run reads to its end (stdio onto
/// /dev/null, every other descriptor but the status pipe closed, which
/// also lets `spawn` see the exec), report the agent's status, and reap
/// whatever is re-parented here until nothing is left; should worldline
/// (`parent`) die first, kill it all ([`orphaned`]).
///
/// SAFETY: in a forked child only; async-signal-safe calls only.
unsafe fn keeper(agent: libc::pid_t, parent: libc::pid_t, status: RawFd) -> ! {
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            if null >= 0 {
                libc::dup2(null, fd);
            } else {
                libc::close(fd);
            }
        }
        close_all_but(status);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        loop {
            let mut raw = 0;
            let pid = libc::waitpid(-1, &mut raw, 0);
            if pid == agent {
                let bytes = raw.to_ne_bytes();
                libc::write(status, bytes.as_ptr().cast(), bytes.len());
            } else if pid < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(0);
            } else if pid < 0 && libc::getppid() != parent {
                orphaned();
            }
        }
    }
}

/// worldline died with the run under way: kill the keeper's children
/// (as `/proc/thread-self/children` lists them) and reap them, again as
/// what they started is re-parented here, until none is left; then exit.
///
/// SAFETY: in the keeper only; async-signal-safe calls only.
unsafe fn orphaned() -> ! {
    unsafe {
        loop {
            let listed = libc::open(c"/proc/thread-self/children".as_ptr(), libc::O_RDONLY);
            if listed >= 0 {
                let (mut buf, mut pid) = ([0u8; 512], 0 as libc::pid_t);
                loop {
                    let n = libc::read(listed, buf.as_mut_ptr().cast(), buf.len());
                    if n <= 0 {
                        break;
                    }
                    for &b in &buf[..n as usize] {
                        if b.is_ascii_digit() {
                            pid = pid.saturating_mul(10).saturating_add((b - b'0').into());
                        } else if pid > 0 {
                            libc::kill(pid, libc::SIGKILL);
                            pid = 0;
                        }
                    }
                }
                if pid > 0 {
                    libc::kill(pid, libc::SIGKILL);
                }
                libc::close(listed);
            }
            if libc::waitpid(-1, std::ptr::null_mut(), 0) < 0
                && *libc::__errno_location() != libc::EINTR
            {
                libc::_exit(0);
            }
        }
    }
}

/// Close every descriptor from 3 up except `keep`.
///
/// SAFETY: in a forked child only.
unsafe fn close_all_but(keep: RawFd) {
    unsafe {
        let ranges = [(3, keep - 1), (keep + 1, RawFd::MAX)];
        for (first, last) in ranges {
            if first > last {
                continue;
            }
            // Each argument as the long the system call reads.
            let (from, to, no_flags): (libc::c_long, libc::c_long, libc::c_long) =
                (first.into(), last.into(), 0);
            let closed = libc::syscall(libc::SYS_close_range, from, to, no_flags);
            if closed != 0 {
                // Before Linux 5.9: one by one, up to the descriptor limit.
                let mut limit: libc::rlimit = std::mem::zeroed();
                let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                    limit.rlim_cur.min(1 << 20) as RawFd
                } else {
                    1 << 16
                };
                for fd in first..=last.min(top) {
                    libc::close(fd);
                }
            }
        }
    }
}

/// The live (not yet reaped or dying) descendants of `root`, from /proc.
fn descendants(root: i32) -> Vec<i32> {
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    let mut zombies = BTreeSet::new();
    // The keeper's session (its id is the keeper's pid): what the agent
    // started and left there is found even when the keeper is gone (an
    // agent that SIGKILLed it left its background children to init).
    let mut session = Vec::new();
    for (pid, ppid, state, sid) in processes() {
        children.entry(ppid).or_default().push(pid);
        if state == 'Z' || state == 'X' {
            zombies.insert(pid);
        } else if sid == Some(root) && pid != root {
            session.push(pid);
        }
    }
    let mut found = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut next: Vec<i32> = [root].into_iter().chain(session.iter().copied()).collect();
    found.extend(session);
    while let Some(parent) = next.pop() {
        for &child in children.get(&parent).into_iter().flatten() {
            // A zombie's children are searched too: read before it died,
            // they were not yet the keeper's.
            if seen.insert(child) {
                next.push(child);
                if !zombies.contains(&child) {
                    found.insert(child);
                }
            }
        }
    }
    found.into_iter().collect()
}

/// The children of process `pid` (single-threaded: the keeper), from its
/// `children` file.
fn children_of(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Every process as (pid, parent pid, state, session id).
fn processes() -> Vec<(i32, i32, char, Option<i32>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (ppid, state) = parent_and_state(&stat)?;
            Some((pid, ppid, state, session_of(&stat)))
        })
        .collect()
}

/// The parent pid and state of a `/proc/PID/stat` line (`PID (COMM)
/// STATE PPID ...`, where COMM may hold spaces and parentheses).
fn parent_and_state(stat: &str) -> Option<(i32, char)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((ppid, state))
}

/// The session id of a `/proc/PID/stat` line (`... STATE PPID PGRP
/// SESSION ...`).
fn session_of(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(3)?.parse().ok()
}

/// SIGKILL `pid` if its parent is still in `tree`, or it is still in the
/// session of the keeper `root` (checked through a
/// pidfd where the kernel has them, so a pid reused meanwhile is never
/// hit).
fn kill(pid: i32, root: i32, tree: &BTreeSet<i32>) {
    // SAFETY: pidfd_open with a pid and no flags; the descriptor returned
    // is owned below.
    let (target, no_flags): (libc::c_long, libc::c_long) = (pid.into(), 0);
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, target, no_flags) };
    if fd < 0 {
        if io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
            // Before Linux 5.3: by pid, just after it was found.
            // SAFETY: signalling a process found under this run's keeper.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        return;
    }
    // SAFETY: `fd` was just returned by pidfd_open.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let parent = parent_and_state(&stat);
    if !parent.is_some_and(|(ppid, _)| tree.contains(&ppid)) && session_of(&stat) != Some(root) {
        return;
    }
    // SAFETY: a pidfd owned here, a signal number, no info, no flags.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            libc::c_long::from(fd.as_raw_fd()),
            libc::c_long::from(libc::SIGKILL),
            std::ptr::null::<libc::siginfo_t>(),
            no_flags,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pid a test's shell printed on its first line of `out`, read
    /// byte by byte (a process it started may hold the pipe open).
    fn pid_line(out: &mut impl Read) -> i32 {
        let mut pid = String::new();
        let mut byte = [0u8];
        while out.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
            pid.push(byte[0] as char);
        }
        pid.trim().parse().unwrap()
    }

    /// Whether process `pid` has ended (gone, or a zombie).
    fn gone(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| parent_and_state(&s))
            .is_none_or(|(_, state)| state == 'Z')
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        assert_eq!(
            parent_and_state("42 (a) b (c)) S 7 42 42 0"),
            Some((7, 'S'))
        );
        assert_eq!(parent_and_state("1 (init) R 0"), Some((0, 'R')));
        assert_eq!(parent_and_state("garbage"), None);
    }

    /// An agent that kills its keeper leaves what it started to init; what
    /// is still in the keeper's session is found and ended with the tree
    /// all the same (it ran on after the run, for good).
    #[test]
    fn what_an_agent_left_after_killing_its_keeper_is_ended_with_the_tree() {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "sleep 30 & echo $!; kill -9 $PPID; exit 0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut tree = spawn(&mut cmd).unwrap();
        let mut out = tree.stdio().stdout.unwrap();
        assert_eq!(tree.watch().recv().unwrap(), None, "the keeper died unsaid");
        let pid = pid_line(&mut out);
        tree.end();
        assert!(
            gone(pid),
            "{pid}, started before the keeper was killed, outlived its tree"
        );
    }

    /// A process that forks and exits over and over, leaving its session
    /// now and then, is ended with the tree: the search of every process
    /// took longer than a generation lives, and the chase gave up after
    /// its 5 s with the newest one left to init, forking for good.
    #[test]
    fn a_fork_hopper_is_ended_with_the_tree() {
        let marker = format!("hopper-{}", std::process::id());
        let hopper = "import os, sys, time\nn = 0\nwhile True:\n    if os.fork(): os._exit(0)\n    n += 1\n    if n % 1000 == 0:\n        os.setsid()\n    time.sleep(0.001)\n";
        // Four trees: one chase in three or so lost it before.
        for _ in 0..4 {
            let mut cmd = Command::new("python3");
            cmd.args(["-c", hopper, &marker])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            let tree = spawn(&mut cmd).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            tree.end();
        }
        let with_marker = || {
            processes()
                .into_iter()
                .filter(|(pid, _, state, _)| {
                    *state != 'Z' && {
                        let line =
                            std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                        String::from_utf8_lossy(&line).contains(&marker)
                    }
                })
                .map(|(pid, ..)| pid)
                .collect::<Vec<_>>()
        };
        let left = with_marker();
        // Whatever escaped is ended here, so that a failure leaves nothing.
        for _ in 0..2000 {
            for pid in with_marker() {
                // SAFETY: freezing then killing the escaped hopper.
                unsafe { libc::kill(pid, libc::SIGSTOP) };
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            if with_marker().is_empty() {
                break;
            }
        }
        assert!(left.is_empty(), "the hopper outlived its tree: {left:?}");
    }

    #[test]
    fn a_daemon_that_left_the_session_is_ended_with_the_tree() {
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "setsid sleep 30 & echo $!; exit 3"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut tree = spawn(&mut cmd).unwrap();
        let mut out = tree.stdio().stdout.unwrap();
        let status = tree.watch().recv().unwrap().unwrap();
        assert_eq!(status.code(), Some(3));
        // The daemon holds stdout: read its pid's line only.
        let pid = pid_line(&mut out);
        assert!(descendants(tree.keeper.id() as i32).contains(&pid));
        tree.end();
        assert!(gone(pid), "the daemon {pid} outlived its tree");
        let mut rest = Vec::new();
        out.read_to_end(&mut rest).unwrap();
    }
}
