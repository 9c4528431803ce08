//! A first SIGINT or SIGTERM to a command that reports as it goes
//! (`verify`, `fork --samples`, `repro`), handled as `test` and `fuzz` handle it:
//! the command begins nothing more, what is under way ends (written
//! whole), the report of what was done is written and closed with
//! `interrupted`, then the signal ends the process (exit 130 or 143 in a
//! shell); a second ends it at once. These commands were ended by the
//! signal mid-report: `--json` cut off, nothing said, and a branch left
//! without a footer.

use std::sync::atomic::{AtomicBool, Ordering};
use worldline_engine::native::Interrupt;

/// What a command that reports as it goes (these, `test`, `fuzz`) says on
/// stderr at the first signal: it begins no more `what` (`cases`,
/// `replays`), and the report follows once those under way end.
pub fn notice(signal: &str, what: &str) -> String {
    format!(
        "{signal}: starting no more {what}; the report follows once the {what} under way end (again to end at once)"
    )
}

/// The signal caught while the command's work goes on.
pub struct Stopping {
    interrupt: Interrupt,
    /// What the command begins (`branches`, `replays`), for the notice.
    what: &'static str,
    said: AtomicBool,
}

impl Stopping {
    /// Catch the first signal from now on.
    pub fn start(what: &'static str) -> Stopping {
        Stopping {
            interrupt: Interrupt::start(),
            what,
            said: AtomicBool::new(false),
        }
    }

    /// The signal that arrived (`SIGINT`, `SIGTERM`), if one did: said on
    /// stderr the first time it is seen.
    pub fn seen(&self) -> Option<&'static str> {
        let signal = self.interrupt.signal()?;
        if !self.said.swap(true, Ordering::SeqCst) {
            eprintln!("{}", notice(signal, self.what));
        }
        Some(signal)
    }

    /// Once the report is written: the process ended by the signal that
    /// arrived, if one did, else the default actions back.
    pub fn end(self) {
        self.seen();
        self.interrupt.end();
    }
}
