//! `validate`: a line per case (how each scripted agent did, whether the
//! grade was the same twice, what leaked), the failing cases and why, what
//! could not be checked, then the totals; or the `validate --json`
//! document.

use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{self, Write};
use worldline_case::shown::{message, one_line};
use worldline_engine::validate::{Probe, Validated};

/// One case's line of the report.
#[derive(Serialize)]
pub struct Row {
    case: String,
    path: String,
    /// `ok`, `failing`, or `broken` (the case did not load, or its gold
    /// calls fail on its world).
    verdict: &'static str,
    #[serde(flatten)]
    validated: Option<Validated>,
    /// A broken case's keys of a validated one, so every result has them
    /// all (a reader's `r["ok"]` failed on a broken case's).
    #[serde(flatten)]
    unchecked: Option<Unchecked>,
    /// Why a broken case is broken.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Row {
    /// A case validated (`ok` or `failing`).
    pub fn validated(case: String, path: String, v: Validated) -> Row {
        Row {
            case,
            path,
            verdict: if v.ok { "ok" } else { "failing" },
            validated: Some(v),
            unchecked: None,
            error: None,
        }
    }

    /// A case that did not load, or whose gold calls fail on its world.
    pub fn broken(case: String, path: String, error: String) -> Row {
        Row {
            case,
            path,
            verdict: "broken",
            validated: None,
            unchecked: Some(Unchecked {
                ok: false,
                problems: vec![error.clone()],
                ..Unchecked::default()
            }),
            error: Some(error),
        }
    }
}

/// What a broken case's result says where a validated one's says how it
/// went: not ok, its error as its one problem, no probe run (`null`).
#[derive(Serialize, Default)]
struct Unchecked {
    ok: bool,
    problems: Vec<String>,
    notes: Vec<String>,
    oracle: Option<Probe>,
    do_nothing: Option<Probe>,
    empty_answer: Option<Probe>,
    deterministic: Option<bool>,
    leaks: Vec<()>,
}

/// The `validate --json` document.
#[derive(Serialize)]
pub struct Report<'a> {
    cases: usize,
    ok: usize,
    failing: usize,
    broken: usize,
    results: &'a [Row],
}

impl<'a> Report<'a> {
    /// The report of `rows`, counted by verdict.
    pub fn of(rows: &'a [Row]) -> Report<'a> {
        let count = |v: &str| rows.iter().filter(|r| r.verdict == v).count();
        Report {
            cases: rows.len(),
            ok: count("ok"),
            failing: count("failing"),
            broken: count("broken"),
            results: rows,
        }
    }

    /// Whether every case validated.
    pub fn passed(&self) -> bool {
        self.failing + self.broken == 0
    }
}

/// `pass`/`fail` as a probe ended, `-` when it did not run.
fn shown(p: Option<&Probe>) -> &'static str {
    match p {
        None => "-",
        Some(p) if p.status == "not run" => "-",
        Some(p) if p.passed => "pass",
        Some(_) => "fail",
    }
}

/// `validate`: the table, the failing cases, the notes, the totals.
pub fn write(out: &mut impl Write, r: &Report<'_>) -> io::Result<()> {
    // At least the header's (a case named `c` pushed the columns of its
    // row left of their headers); counted in characters, as `{:width$}` pads.
    let width = (r.results.iter())
        .map(|x| message(&one_line(&x.case)).chars().count())
        .max()
        .unwrap_or(0)
        .max("case".len());
    writeln!(
        out,
        "{:width$}  {:7} {:10} {:12} {:5} {:5}  verdict",
        "case", "oracle", "do-nothing", "empty-answer", "same", "leaks"
    )?;
    for row in r.results {
        let v = row.validated.as_ref();
        let same = match v {
            Some(v) if v.deterministic => "yes",
            Some(_) => "NO",
            None => "-",
        };
        writeln!(
            out,
            "{:width$}  {:7} {:10} {:12} {:5} {:5}  {}",
            message(&one_line(&row.case)),
            shown(v.and_then(|v| v.oracle.as_ref())),
            shown(v.map(|v| &v.do_nothing)),
            shown(v.map(|v| &v.empty_answer)),
            same,
            v.map_or("-".to_string(), |v| v.leaks.len().to_string()),
            row.verdict
        )?;
    }
    let failing: Vec<&Row> = r.results.iter().filter(|x| x.verdict != "ok").collect();
    if !failing.is_empty() {
        writeln!(out, "\nfailing cases:")?;
        for row in failing {
            writeln!(
                out,
                "  {} ({})",
                message(&one_line(&row.case)),
                message(&one_line(&row.path))
            )?;
            if let Some(e) = &row.error {
                writeln!(out, "    {}", message(e))?;
            }
            for p in row.validated.iter().flat_map(|v| &v.problems) {
                writeln!(out, "    {}", message(p))?;
            }
        }
    }
    // Each note once, with the cases it applies to.
    let mut notes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for row in r.results {
        for n in row.validated.iter().flat_map(|v| &v.notes) {
            notes.entry(n).or_default().push(&row.case);
        }
    }
    if !notes.is_empty() {
        writeln!(out, "\nnot fully validated:")?;
        for (note, cases) in notes {
            writeln!(out, "  {note} ({} cases):", cases.len())?;
            writeln!(out, "    {}", message(&one_line(&cases.join(", "))))?;
        }
    }
    writeln!(
        out,
        "\nvalidate: {} cases, {} ok, {} failing, {} broken",
        r.cases, r.ok, r.failing, r.broken
    )
}
