//! SIGINT and SIGTERM as a flag: a native session polls it and ends its
//! run (graded, footer written) instead of dying with the bundle open;
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

use std::sync::atomic::{AtomicBool, Ordering};

static RECEIVED: AtomicBool = AtomicBool::new(false);

extern "C" fn note(_: libc::c_int) {
    RECEIVED.store(true, Ordering::SeqCst);
}

/// From now on, SIGINT and SIGTERM set the flag instead of ending the
/// process.
pub(crate) fn catch() {
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, note as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, note as *const () as libc::sighandler_t);
    }
}

/// Whether SIGINT or SIGTERM arrived since [`catch`].
pub(crate) fn received() -> bool {
    RECEIVED.load(Ordering::SeqCst)
}

/// Block SIGPIPE on the calling thread: a write to a pipe the agent has
/// closed (a process that exits without reading its stdin, an MCP client
/// gone from stdio) then fails with `EPIPE` instead of killing worldline,
/// whose `main` restores SIGPIPE's default action for `| head`. The
/// signal such a write raises is the writing thread's own, so other
/// threads keep the default.
pub(crate) fn hold_sigpipe_on_this_thread() {
    // SAFETY: a signal set built on the stack and this thread's own mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
