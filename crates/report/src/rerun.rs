//! A rerun (and a fork): the run's summary plus what it was run against.

use super::run::RunSummary;
use serde::Serialize;
use serde_json::Value;
use worldline_engine::grade::Grade;

/// An assertion whose verdict changed between the original and the rerun.
#[derive(Serialize)]
pub struct Change {
    pub after: bool,
    pub before: Option<bool>,
    pub what: String,
}

/// The run a rerun re-ran.
#[derive(Serialize)]
pub struct Original<'a> {
    pub output: Option<&'a str>,
    pub run: &'a str,
    pub status: &'static str,
}

/// The `rerun --json` document.
#[derive(Serialize)]
pub struct RerunSummary<'a> {
    #[serde(flatten)]
    pub run: RunSummary<'a>,
    pub changed_assertions: &'a [Change],
    pub original: Original<'a>,
}

/// Where a fork branched off.
#[derive(Serialize)]
pub struct ForkParent<'a> {
    pub event: u64,
    pub run: &'a str,
}

/// The `fork --json` document.
#[derive(Serialize)]
pub struct ForkSummary<'a> {
    #[serde(flatten)]
    pub run: RunSummary<'a>,
    pub parent: ForkParent<'a>,
}

/// `what → passed` of a recorded grade (as JSON).
fn verdicts(grade: Option<&Value>) -> Vec<(String, bool)> {
    grade
        .and_then(|g| g["assertions"].as_array())
        .map(|a| {
            a.iter()
                .map(|x| {
                    (
                        x["what"].as_str().unwrap_or("").to_string(),
                        x["passed"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The assertions of `after` whose verdict differs from the recorded
/// grade's (`before`: absent there counts as changed).
pub fn changed_assertions(before: Option<&Value>, after: Option<&Grade>) -> Vec<Change> {
    let before = verdicts(before);
    after
        .map(|g| g.assertions.iter())
        .into_iter()
        .flatten()
        .filter_map(|a| {
            let was = before.iter().find(|(w, _)| *w == a.what).map(|(_, p)| *p);
            (was != Some(a.passed)).then(|| Change {
                after: a.passed,
                before: was,
                what: a.what.clone(),
            })
        })
        .collect()
}
