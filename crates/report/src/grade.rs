//! A grade: as text (every assertion with expected vs actual, then the
//! state diff) and the `grade --json` document of a re-graded run.

use serde::Serialize;
use worldline_engine::grade::Grade;

/// The `grade --json` document.
#[derive(Serialize)]
pub struct RegradeSummary<'a> {
    /// The agent's own error when the recorded run did not complete.
    pub agent_error: Option<worldline_engine::traceback::AgentError>,
    pub bundle: String,
    pub case: String,
    pub grade: &'a Grade,
    pub recorded_grade: Option<&'static str>,
    pub run_status: &'static str,
    pub status: &'static str,
    pub warnings: &'a [String],
}

/// Every assertion with expected vs actual, then the state diff.
pub fn print(grade: &Grade, indent: &str) {
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
