//! A grade: as text (every assertion with expected vs actual, then the
//! state diff), and a re-graded run as `grade` writes it or as its
//! `grade --json` document.

use serde::Serialize;
use std::io::{self, Write};
use worldline_case::shown::one_line;
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

/// Every assertion with expected vs actual, then the state diff (turn by
/// turn when the case checks turns).
pub fn write(out: &mut impl Write, grade: &Grade, indent: &str) -> io::Result<()> {
    for a in &grade.assertions {
        let mark = if a.passed { "ok  " } else { "FAIL" };
        if a.passed {
            writeln!(out, "{indent}{mark} {}", super::field(&a.what))?;
        } else {
            writeln!(
                out,
                "{indent}{mark} {}: expected {}, got {}",
                super::field(&a.what),
                super::bounded(&a.expected.to_string()),
                super::bounded(&a.actual.to_string())
            )?;
        }
    }
    if !grade.turns.is_empty() {
        writeln!(out, "{indent}state diff by the user's turns:")?;
        for t in &grade.turns {
            let end = t
                .ended_at
                .map_or("at the run's end".to_string(), |s| format!("at event {s}"));
            let lines = t.diff.lines();
            let what = if lines.is_empty() { ", unchanged" } else { ":" };
            writeln!(out, "{indent}  turn {} (ended {end}){what}", t.turn)?;
            for l in lines {
                writeln!(out, "{indent}    {}", super::field(&l))?;
            }
        }
        return Ok(());
    }
    let lines = grade.diff.lines();
    if lines.is_empty() {
        writeln!(out, "{indent}state: unchanged")?;
    } else {
        writeln!(out, "{indent}state diff:")?;
        for l in lines {
            writeln!(out, "{indent}  {}", super::field(&l))?;
        }
    }
    Ok(())
}

/// `grade`: a line naming the run, its status and the case it was graded
/// against, the grader's warnings, the agent's own error, then the grade.
pub fn write_regrade(out: &mut impl Write, s: &RegradeSummary<'_>) -> io::Result<()> {
    writeln!(
        out,
        "grade {}  {}  (against {})",
        s.bundle,
        s.status,
        one_line(&s.case)
    )?;
    for w in s.warnings {
        writeln!(out, "  warning: {w}")?;
    }
    // As `run::write_agent_error` does (run.rs imports this file).
    for l in s.agent_error.iter().flat_map(|e| e.lines()) {
        writeln!(out, "  {l}")?;
    }
    write(out, s.grade, "  ")
}
