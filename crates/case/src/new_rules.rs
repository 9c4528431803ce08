//! Whether the rules that refuse what no run can meet apply to what this
//! thread reads (decision 0412): not while it reads a case a run recorded
//! (replay, `verify`, `fork`, `resume`), nor the world that case loads,
//! since a run recorded before a rule replays as it ran. [`Reading`] marks
//! the thread; the checks of those rules, in the case's tables and in a
//! world's rows, ask [`apply`].

use std::cell::Cell;

thread_local! {
    /// Set on a thread while it reads a recorded case.
    static RECORDED: Cell<bool> = const { Cell::new(false) };
}

/// The thread marked as reading a recorded case until this is dropped (on
/// a panic too).
pub(crate) struct Reading(bool);

impl Reading {
    pub(crate) fn start() -> Reading {
        Reading(RECORDED.replace(true))
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        RECORDED.set(self.0);
    }
}

/// Whether decision 0412's rules apply to what is being read: not to a
/// case a run recorded, nor its world.
pub(crate) fn apply() -> bool {
    !RECORDED.get()
}
