//! SIGINT and SIGTERM as a flag: a native session polls it and ends its
//! run (graded, footer written) instead of dying with the bundle open.

use std::sync::atomic::{AtomicBool, Ordering};

static RECEIVED: AtomicBool = AtomicBool::new(false);

extern "C" fn note(_: libc::c_int) {
    RECEIVED.store(true, Ordering::SeqCst);
}

/// From now on, SIGINT and SIGTERM set the flag instead of ending the
/// process.
pub fn catch() {
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, note as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, note as *const () as libc::sighandler_t);
    }
}

/// Whether SIGINT or SIGTERM arrived since [`catch`].
pub fn received() -> bool {
    RECEIVED.load(Ordering::SeqCst)
}
