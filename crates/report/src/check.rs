//! Problems with input files (`worldline check`, a suite's collection
//! errors): the `--json` shape of an error with its place, and the
//! `check` document and text.

use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use worldline_case::check::{Checked, Kind};
use worldline_case::error::InputError;

/// A problem with an input file, at its line and column when it has one.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Problem {
    pub column: Option<usize>,
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl Problem {
    pub fn of(e: &InputError) -> Self {
        Problem {
            column: e.line.map(|(_, c)| c),
            file: e.file.display().to_string(),
            line: e.line.map(|(l, _)| l),
            message: e.message.clone(),
        }
    }

    /// `file:line:col: message`, as errors are shown everywhere else: one
    /// line however the file is named (a line break in it is `\n`).
    pub fn text(&self) -> String {
        let place = match (self.line, self.column) {
            (Some(l), Some(c)) => format!(":{l}:{c}"),
            _ => String::new(),
        };
        let file = worldline_case::shown::one_line(&self.file);
        format!("{file}{place}: {}", self.message)
    }
}

/// One checked file.
#[derive(Serialize)]
pub struct CheckedFile {
    pub kind: Kind,
    pub path: String,
}

/// The `check --json` document.
#[derive(Serialize)]
pub struct CheckSummary {
    pub cases: usize,
    pub files: Vec<CheckedFile>,
    pub notes: Vec<String>,
    pub ok: bool,
    pub problems: Vec<Problem>,
    pub profiles: usize,
    pub projects: usize,
    pub worlds: usize,
}

impl CheckSummary {
    pub fn of(c: &Checked) -> Self {
        CheckSummary {
            cases: c.count(Kind::Case),
            files: c
                .files
                .iter()
                .map(|(p, k)| CheckedFile {
                    kind: *k,
                    path: p.display().to_string(),
                })
                .collect(),
            notes: c.notes.clone(),
            ok: c.problems.is_empty(),
            problems: c.problems.iter().map(Problem::of).collect(),
            profiles: c.count(Kind::Profile),
            projects: c.count(Kind::Project),
            worlds: c.count(Kind::World),
        }
    }
}

/// Every problem as `file:line:col: message`, the notes, then the counts.
pub fn write(out: &mut impl Write, c: &Checked) -> io::Result<()> {
    let s = CheckSummary::of(c);
    for p in &s.problems {
        writeln!(out, "{}", p.text())?;
    }
    for n in &s.notes {
        writeln!(out, "note: {n}")?;
    }
    let files: std::collections::BTreeSet<&str> =
        s.problems.iter().map(|p| p.file.as_str()).collect();
    let verdict = match s.problems.len() {
        0 => "no problems".to_string(),
        n => format!("{n} problem(s) in {} file(s)", files.len()),
    };
    writeln!(
        out,
        "checked {} case(s), {} world(s), {} fault profile(s), {} project file(s): {verdict}",
        s.cases, s.worlds, s.profiles, s.projects
    )?;
    Ok(())
}
