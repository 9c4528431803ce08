//! What a run counts as: the status users script against (the grade's
//! verdict, or how the run ended), how it came out, and its first failure.

use super::Grade;
use worldline_log::log::{Footer, Status};

/// The status a run is reported with: the grade's verdict (`passed`,
/// `failed`) when the case has expectations and the agent finished, else
/// how the run ended.
pub fn shown_status(status: Status, grade: Option<&Grade>) -> &'static str {
    match grade {
        Some(g) if !status.overrides_grade() => g.verdict(),
        _ => status.as_str(),
    }
}

/// [`shown_status`] of a recorded run, from its footer.
pub fn recorded_status(footer: &Footer) -> &'static str {
    match footer.verdict() {
        Some(v) if !footer.status.overrides_grade() => v,
        _ => footer.status.as_str(),
    }
}

/// How a run came out, as a command reports it (the CLI's exit code:
/// 0, 1 and 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Passed its grade, or completed with none.
    Passed,
    /// Failed its grade, errored, or the scripted model ran out.
    Failed,
    /// A trap, fuel, memory or the watchdog.
    AgentFault,
}

/// How a run that ended with `status` and `grade` came out.
pub fn ending(status: Status, grade: Option<&Grade>) -> Ending {
    if status == Status::Unscripted {
        return Ending::Failed;
    }
    if status.is_fault() {
        return Ending::AgentFault;
    }
    match grade {
        Some(g) if g.passed => Ending::Passed,
        Some(_) => Ending::Failed,
        None if status == Status::Completed => Ending::Passed,
        None => Ending::Failed,
    }
}

/// The first failed assertion, briefly.
pub fn first_failure(grade: &Grade) -> Option<String> {
    grade
        .failures()
        .next()
        .map(|a| format!("{}: expected {}, got {}", a.what, a.expected, a.actual))
}
