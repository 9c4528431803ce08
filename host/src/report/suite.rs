//! A suite: the `test --json` document and the text report (a line per
//! case, then `N passed, N failed`).

use crate::suite::{CaseRun, SuiteRun};
use serde::Serialize;

/// One case of the `test --json` document.
#[derive(Serialize)]
pub struct CaseSummary<'a> {
    pub bundle: Option<String>,
    pub case: &'a str,
    pub chain_hash: Option<&'a str>,
    pub elapsed_ms: f64,
    pub events: Option<u64>,
    pub failures: Option<Vec<&'a crate::grade::Assertion>>,
    pub fuel: Option<u64>,
    pub passed: bool,
    pub path: String,
    pub reason: Option<String>,
    pub run_id: Option<&'a str>,
    pub run_status: Option<&'static str>,
    pub status: &'static str,
}

/// The `test --json` document.
#[derive(Serialize)]
pub struct SuiteSummary<'a> {
    pub cases: Vec<CaseSummary<'a>>,
    pub elapsed_ms: f64,
    pub failed: usize,
    pub passed: usize,
    pub total: usize,
}

impl<'a> CaseSummary<'a> {
    fn of(c: &'a CaseRun) -> Self {
        let o = c.outcome.as_ref().ok();
        CaseSummary {
            bundle: o.and_then(|o| o.bundle.as_ref().map(|b| b.display().to_string())),
            case: &c.name,
            chain_hash: o.map(|o| o.footer.chain_hash.as_str()),
            elapsed_ms: c.elapsed.as_secs_f64() * 1000.0,
            events: o.map(|o| o.footer.events),
            failures: o
                .and_then(|o| o.grade.as_ref())
                .map(|g| g.failures().collect()),
            fuel: o.map(|o| o.footer.fuel),
            passed: c.passed(),
            path: c.path.display().to_string(),
            reason: c.reason(),
            run_id: o.and_then(|o| o.run_id.as_deref()),
            run_status: o.map(|o| o.footer.status.as_str()),
            status: c.status(),
        }
    }
}

impl<'a> SuiteSummary<'a> {
    pub fn of(s: &'a SuiteRun) -> Self {
        SuiteSummary {
            cases: s.cases.iter().map(CaseSummary::of).collect(),
            elapsed_ms: s.elapsed.as_secs_f64() * 1000.0,
            failed: s.failed(),
            passed: s.passed(),
            total: s.cases.len(),
        }
    }
}

/// A line per case (mark, name, events, time, and why it did not pass),
/// then the counts.
pub fn print(s: &SuiteRun) {
    let width = s.cases.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &s.cases {
        let mark = if c.passed() { "PASS" } else { "FAIL" };
        let events = c.outcome.as_ref().map_or(0, |o| o.footer.events);
        let line = format!(
            "{mark}  {:width$}  {:>6} events  {:>7.1} ms",
            c.name,
            events,
            c.elapsed.as_secs_f64() * 1000.0
        );
        match c.reason() {
            Some(r) => println!("{line}  {} — {r}", c.status()),
            None => println!("{line}"),
        }
    }
    println!("{} passed, {} failed", s.passed(), s.failed());
}
