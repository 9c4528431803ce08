//! Run a selected suite (`worldline test`): keep its cases in the store,
//! run them reporting each step to the caller's sink, and remember which
//! did not pass for `--rerun-failed`. Which cases run is
//! [`suite::pick`](crate::suite::pick); rendering is the caller's.

use super::sink::FirstError;
use crate::suite::{Entry, Suite, SuiteEvent, SuiteRun, last};
use anyhow::Result;
use std::path::PathBuf;

/// A suite that ran.
pub struct Tested {
    pub run: SuiteRun,
    /// One per case that asked for token ids (`[model] token_ids`) and got
    /// runs whose endpoint returned none: the case file and the first
    /// such run's warning.
    pub token_warnings: Vec<(PathBuf, String)>,
}

/// Run `suite`: its cases are kept in the store first; each step goes to
/// `sink`, whose first error (writing the file `sink_file`) fails the
/// session before the last session's failures are recorded (a record that
/// cannot be written is a warning).
pub fn test(
    suite: &Suite,
    sink_file: Option<&std::path::Path>,
    sink: &(dyn Fn(&SuiteEvent<'_>) -> std::io::Result<()> + Sync),
) -> Result<Tested> {
    let cases: Vec<&worldline_case::case::Case> = suite.cases.iter().map(|e| &e.case).collect();
    suite.store.put_cases(&cases)?;
    let error = FirstError::new();
    let run = suite.run(&|e| error.keep(sink(&e)))?;
    error.into_result(sink_file)?;
    let token_warnings = token_warnings(suite.cases, &run);
    // The suite ran and its runs are kept: a record that cannot be
    // written loses `--rerun-failed`'s list, not the report and JUnit
    // (the command ended with that error alone, exit 4).
    if let Err(e) = last::record(suite.store, &run) {
        ::log::warn!(
            "{e:#}; the report follows, but `--rerun-failed` will not find this session's failures"
        );
    }
    Ok(Tested {
        run,
        token_warnings,
    })
}

/// The case files (with their warning) of the cases that asked for token
/// ids and got runs whose endpoint returned none, in the run's order.
fn token_warnings(entries: &[Entry], run: &SuiteRun) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for case in &run.cases {
        let Some(entry) = entries.iter().find(|e| e.index == case.index) else {
            continue;
        };
        if !entry.case.model.token_ids {
            continue;
        }
        let missing = case.attempts.iter().find_map(|a| a.tokens_missing.clone());
        if let Some(w) = missing {
            out.push((entry.case.path.clone(), w));
        }
    }
    out
}
