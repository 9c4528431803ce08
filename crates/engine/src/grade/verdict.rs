//! What a run counts as: the status users script against (the grade's
//! verdict, or how the run ended), its exit code, and its first failure.

use super::Grade;
use crate::error::ExitCode;
use crate::log::{Footer, Status};

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

/// Exit code: 0 passed/completed, 1 failed/errored (or the scripted model
/// ran out), 3 agent fault.
pub fn exit_code(status: Status, grade: Option<&Grade>) -> ExitCode {
    if status == Status::Unscripted {
        return ExitCode::Failed;
    }
    if status.is_fault() {
        return ExitCode::AgentFault;
    }
    match grade {
        Some(g) if g.passed => ExitCode::Ok,
        Some(_) => ExitCode::Failed,
        None if status == Status::Completed => ExitCode::Ok,
        None => ExitCode::Failed,
    }
}

/// The first failed assertion, briefly.
pub fn first_failure(grade: &Grade) -> Option<String> {
    grade
        .failures()
        .next()
        .map(|a| format!("{}: expected {}, got {}", a.what, a.expected, a.actual))
}
