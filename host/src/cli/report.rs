//! How runs and grades are shown: the status users script against, exit
//! codes, and the text report of assertions and the state diff.

use crate::error::ExitCode;
use crate::grade::Grade;
use crate::log::{Footer, Status};

/// The status a run is reported with: the grade's verdict (`passed`,
/// `failed`) when the case has expectations and the agent finished, else
/// how the run ended.
pub fn shown_status(status: Status, grade: Option<&Grade>) -> &'static str {
    match grade {
        Some(g) if !status.is_fault() => g.verdict(),
        _ => status.as_str(),
    }
}

/// [`shown_status`] of a recorded run, from its footer.
pub fn recorded_status(footer: &Footer) -> &'static str {
    match footer.verdict() {
        Some(v) if !footer.status.is_fault() => v,
        _ => footer.status.as_str(),
    }
}

/// Exit code: 0 passed/completed, 1 failed/errored, 3 agent fault.
pub fn exit_code(status: Status, grade: Option<&Grade>) -> ExitCode {
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

/// Every assertion with expected vs actual, then the state diff.
pub fn print_grade(grade: &Grade, indent: &str) {
    for a in &grade.assertions {
        let mark = if a.passed { "ok  " } else { "FAIL" };
        if a.passed {
            println!("{indent}{mark} {}", a.what);
        } else {
            println!(
                "{indent}{mark} {}: expected {}, got {}",
                a.what, a.expected, a.actual
            );
        }
    }
    let lines = grade.diff.lines();
    if lines.is_empty() {
        println!("{indent}state: unchanged");
    } else {
        println!("{indent}state diff:");
        for l in lines {
            println!("{indent}  {l}");
        }
    }
}

/// The first failed assertion, briefly.
pub fn first_failure(grade: &Grade) -> Option<String> {
    grade
        .failures()
        .next()
        .map(|a| format!("{}: expected {}, got {}", a.what, a.expected, a.actual))
}
