//! SIGINT and SIGTERM as a flag: a native session polls it and ends its
//! run (graded, footer written) instead of dying with the bundle open, and
//! a suite ([`Interrupt`]) starts no more cases and reports those it ran;
//! and SIGPIPE held off the threads that write to the agent, for the same
//! reason.
//!
//! Why the threads that write to a native agent hold SIGPIPE (was decision
//! 0236): `worldline run CASE --exec -- /bin/true` was killed by SIGPIPE (exit
//! 141, a bundle without a footer, no report) whenever `/bin/true` had exited
//! before the task was written. The thread writing the task to stdin and the
//! one serving MCP over stdio block SIGPIPE for themselves
//! (`hold_sigpipe_on_this_thread`), so a write to a closed pipe fails with
//! `EPIPE`, which they already treat as the end of the agent's side. A SIGPIPE
//! raised by a write is directed at the writing thread, so this changes nothing
//! elsewhere, and a child starts with the default action whatever the parent's
//! mask. Ignoring SIGPIPE for the whole process would be a setting concurrent
//! runs of a suite race to set and restore, and turns a report's `println!`
//! into a panic when stdout is closed; `main` restores the default so that
//! `worldline history RUN | head` ends quietly. Not writing the task to stdin
//! would break agents written to read it (the documented interface).

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

static RECEIVED: AtomicBool = AtomicBool::new(false);
/// A command that catches them for its whole life (`serve`, `mcp`).
static HELD: AtomicBool = AtomicBool::new(false);
/// Taken while the first native run starts or the last one ends, so one
/// starting is never left with the default actions another's end put back.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
/// Which of the two arrived last.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Native runs under way in this process.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
/// A suite under way ([`Interrupt`]), or a campaign's worker
/// ([`noted_in_a_worker`]): it ends the process (once it has reported),
/// not the last native run.
static SUITE: AtomicBool = AtomicBool::new(false);

extern "C" fn note(signal: libc::c_int) {
    SIGNAL.store(signal, Ordering::SeqCst);
    RECEIVED.store(true, Ordering::SeqCst);
}

/// When the first signal arrived ([`note_then_again`]), in nanoseconds
/// of `CLOCK_MONOTONIC`.
static FIRST_AT: AtomicU64 = AtomicU64::new(0);

/// How soon after the first a signal is the same interrupt sent twice, not
/// a second one: GNU `timeout` sends its signal to the command and then to
/// the command's process group, microseconds apart, and the second ended a
/// suite at once (no report, no JUnit file, nothing said) one time in a
/// few. No one presses Ctrl-C twice within it.
const SAME_INTERRUPT_NS: u64 = 250_000_000;

/// `CLOCK_MONOTONIC` in nanoseconds (`clock_gettime` is
/// async-signal-safe); the host's own, never a run's.
fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a timespec on the stack.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// [`note`], and a second signal ([`again`]) ends the process at once.
extern "C" fn note_then_again(signal: libc::c_int) {
    note(signal);
    FIRST_AT.store(monotonic_ns(), Ordering::SeqCst);
    set(again as *const () as libc::sighandler_t);
}

/// What [`again`] writes on stderr.
static AGAIN: [&[u8]; 2] = [
    b"SIGINT again: ending at once; the runs under way are cut off and the report is not written\n",
    b"SIGTERM again: ending at once; the runs under way are cut off and the report is not written\n",
];

/// What [`again`] writes on stderr in `serve` ([`catch_then_again`]).
static AGAIN_SERVING: [&[u8]; 2] = [
    b"SIGINT again: ending at once; the episodes under way are cut off, their runs not finished\n",
    b"SIGTERM again: ending at once; the episodes under way are cut off, their runs not finished\n",
];

/// Whether [`catch_then_again`] set the actions (`serve`).
static SERVING: AtomicBool = AtomicBool::new(false);

/// A second signal: the process ends at once, saying so, unless it is the
/// first sent twice ([`SAME_INTERRUPT_NS`]).
extern "C" fn again(signal: libc::c_int) {
    if monotonic_ns().saturating_sub(FIRST_AT.load(Ordering::SeqCst)) < SAME_INTERRUPT_NS {
        return;
    }
    let said = if SERVING.load(Ordering::SeqCst) {
        AGAIN_SERVING[usize::from(signal != libc::SIGINT)]
    } else {
        AGAIN[usize::from(signal != libc::SIGINT)]
    };
    // SAFETY: write(2), signal(2) and raise(3) are async-signal-safe; the
    // message is static.
    unsafe {
        libc::write(libc::STDERR_FILENO, said.as_ptr().cast(), said.len());
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// A campaign's worker process, for its whole life: SIGINT and SIGTERM
/// are noted and never end it (a Ctrl-C reaches the whole process group;
/// the campaign passes on one sent to it alone, [`pass_on`]). Its native
/// runs under way stop (`trapped`) and are answered, those it holds are
/// answered as not run, and it ends when the campaign closes its input.
/// The signal was ignored, and each native run's [`Running`] put back its
/// own action: a Ctrl-C after a worker's first native run killed it, and
/// the campaign ended as an internal error, with no report.
pub fn noted_in_a_worker() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    SUITE.store(true, Ordering::SeqCst);
    set(note as *const () as libc::sighandler_t);
}

/// What [`said_if_ended_early`]'s handler writes on stderr.
static EARLY: [&[u8]; 2] = [
    b"SIGINT: interrupted before anything ran (nothing was replayed or recorded); the command ends\n",
    b"SIGTERM: interrupted before anything ran (nothing was replayed or recorded); the command ends\n",
];

extern "C" fn say_then_end(signal: libc::c_int) {
    let said = EARLY[usize::from(signal != libc::SIGINT)];
    // SAFETY: write(2), signal(2) and raise(3) are async-signal-safe; the
    // message is static.
    unsafe {
        libc::write(libc::STDERR_FILENO, said.as_ptr().cast(), said.len());
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// Until a command that reports as it goes catches them ([`Interrupt`]):
/// SIGINT and SIGTERM end the process at once, as by default, but saying
/// so on stderr. `verify` or `fuzz` (`--json`) ended by one while it read
/// the store or compiled printed nothing at all.
pub fn said_if_ended_early() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    set(say_then_end as *const () as libc::sighandler_t);
}

/// Send process `pid` (a worker) the signal that arrived, if one did: its
/// runs under way stop as this process's do.
pub(crate) fn pass_on(pid: u32) {
    if received() {
        // SAFETY: a signal to a child of this process not yet waited for
        // (its id is not reused).
        unsafe { libc::kill(pid as libc::pid_t, SIGNAL.load(Ordering::SeqCst)) };
    }
}

/// From now on, for the process's life (`serve`, `mcp`, which poll the
/// flag to end gracefully), SIGINT and SIGTERM set the flag instead of
/// ending the process.
pub(crate) fn catch() {
    HELD.store(true, Ordering::SeqCst);
    set(note as *const () as libc::sighandler_t);
}

/// [`catch`], and a second signal ends the process at once (unless it is
/// the first sent twice, [`SAME_INTERRUPT_NS`]), saying so: `serve`,
/// whose first signal closes the connections and ends their episodes
/// (a second was noted and ignored while the server waited, for a
/// world's compile among others).
pub(crate) fn catch_then_again() {
    HELD.store(true, Ordering::SeqCst);
    SERVING.store(true, Ordering::SeqCst);
    set(note_then_again as *const () as libc::sighandler_t);
}

/// SIGINT's and SIGTERM's action (`signal` is async-signal-safe, so a
/// handler may call this).
fn set(action: libc::sighandler_t) {
    // SAFETY: the handlers only store to atomics and set these actions,
    // which is async-signal-safe; the default action is the system's.
    unsafe {
        libc::signal(libc::SIGINT, action);
        libc::signal(libc::SIGTERM, action);
    }
}

/// Whether SIGINT or SIGTERM arrived since [`catch`].
pub(crate) fn received() -> bool {
    RECEIVED.load(Ordering::SeqCst)
}

/// The signal that arrived, by name, if one did.
pub(crate) fn interrupted() -> Option<&'static str> {
    received().then(|| match SIGNAL.load(Ordering::SeqCst) {
        libc::SIGINT => "SIGINT",
        _ => "SIGTERM",
    })
}

/// SIGINT and SIGTERM while a suite runs (`test`): the first is noted, and
/// the suite starts no more cases, lets those under way end (a native run
/// is stopped, as it is under `run`) and reports what ran; a second ends
/// the process at once, as in nextest and pytest. [`Interrupt::end`] then
/// ends the process as the first would have.
pub struct Interrupt(());

impl Interrupt {
    pub fn start() -> Interrupt {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        SUITE.store(true, Ordering::SeqCst);
        set(note_then_again as *const () as libc::sighandler_t);
        Interrupt(())
    }

    /// Whether SIGINT or SIGTERM has arrived since [`Interrupt::start`].
    pub fn arrived(&self) -> bool {
        received()
    }

    /// [`arrived`](Self::arrived) for a caller that holds no `Interrupt`
    /// (a build's helper polls it while the command holds one).
    pub fn noted() -> bool {
        received()
    }

    /// The signal that arrived (`SIGINT`, `SIGTERM`), if one did.
    pub fn signal(&self) -> Option<&'static str> {
        interrupted()
    }

    /// Once the suite has reported: the process ended by the signal that
    /// arrived, if one did (its shell sees what it sent), else the default
    /// actions back.
    pub fn end(self) {
        drop(self);
        end_if_signalled();
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        SUITE.store(false, Ordering::SeqCst);
        if RUNNING.load(Ordering::SeqCst) == 0 && !received() && !HELD.load(Ordering::SeqCst) {
            set(libc::SIG_DFL);
        }
    }
}

/// A native run under way: a signal that stopped it (its run ended
/// `trapped`, its bundle whole) then ends the process, as the signal would
/// have without [`catch`], once no native run is under way; the command
/// does not go on to start runs the flag would stop at once (a suite
/// recorded each case after a Ctrl-C as a `trapped` failure, `verify`
/// counted the replays after it as drift).
pub(crate) struct Running(());

impl Running {
    /// Caught from the first run's start until the last one ends: a
    /// process that runs native agents now and then (`ui` replaying one)
    /// was left catching them for good, so SIGTERM no longer stopped it,
    /// and a signal noted meanwhile ended it inside its next native run.
    pub(crate) fn start() -> Running {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        if RUNNING.fetch_add(1, Ordering::SeqCst) == 0 && !SUITE.load(Ordering::SeqCst) {
            set(note as *const () as libc::sighandler_t);
        }
        Running(())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let last = RUNNING.fetch_sub(1, Ordering::SeqCst) == 1;
        // A suite reports first, and keeps its own actions.
        let suite = SUITE.load(Ordering::SeqCst);
        if last && !received() && !HELD.load(Ordering::SeqCst) && !suite {
            set(libc::SIG_DFL);
        }
        if last && !suite {
            end_if_signalled();
        }
    }
}

/// When a signal arrived: what the process wrote flushed and the run
/// index's queued rows committed (as the command's end commits them: an
/// interrupted `fork --samples` or `fuzz --keep-all` left its last runs
/// out of the index), then the signal's default action raised again, so
/// the process ends as it would have (its shell sees what it sent).
fn end_if_signalled() {
    if !received() {
        return;
    }
    let signal = SIGNAL.load(Ordering::SeqCst);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    worldline_store::index::close_writers();
    // SAFETY: the default action of a signal that arrived, raised again.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// In a child between fork and exec (or one that never execs): be sent
/// `signal` when the thread of `parent` that started it ends
/// (`PR_SET_PDEATHSIG`), and end now if `parent` is gone already (it died
/// before the request was made). Both the keeper of a native run and a
/// fuzz or verify worker end with worldline this way, SIGKILL included.
///
/// SAFETY: async-signal-safe calls only (prctl, getppid, _exit).
pub(crate) unsafe fn told_of_parent_death(
    parent: libc::pid_t,
    signal: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: as the function's contract says.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    Ok(())
}

/// Have `command`'s process killed when the calling thread ends, the
/// command killed or ended by a signal included: a helper it waits on (a
/// benchmark's converter) does not go on working for no one.
pub fn ends_with_this_thread(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: async-signal-safe calls only; nothing is allocated between
    // fork and exec.
    unsafe {
        command.pre_exec(move || told_of_parent_death(parent, libc::SIGKILL));
    }
}

/// Block SIGPIPE on the calling thread: a write to a pipe the agent has
/// closed (a process that exits without reading its stdin, an MCP client
/// gone from stdio) then fails with `EPIPE` instead of killing worldline,
/// whose `main` restores SIGPIPE's default action for `| head`. The
/// signal such a write raises is the writing thread's own, so other
/// threads keep the default.
pub fn hold_sigpipe_on_this_thread() {
    // SAFETY: a signal set built on the stack and this thread's own mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
