//! The last `test` session on a store: which cases did not pass, so
//! `test --rerun-failed` can run just those (pytest's `--lf`). Kept in
//! `<store>/last-test.json`, written atomically after each session (the
//! last of two sessions ending at once wins, whole).

use super::SuiteRun;
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use worldline_case::error::InputError;
use worldline_store::store::StoreDir;

#[derive(Serialize, Deserialize)]
struct LastSession {
    /// Case files (absolute) that failed, faulted or could not run.
    failed: Vec<PathBuf>,
}

fn file(store: &StoreDir) -> PathBuf {
    store.root.join("last-test.json")
}

/// The case file as the session names it (absolute, links resolved).
pub fn key(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Remember the cases of `run` that did not pass (skipped ones count as
/// not passed: they have not been seen to pass; nor have those that
/// could not be loaded, pytest's `--lf` runs a file that failed to
/// collect again).
pub fn record(store: &StoreDir, run: &SuiteRun) -> Result<()> {
    let last = LastSession {
        failed: (run.cases.iter())
            .filter(|c| !c.passed())
            .map(|c| key(&c.path))
            .chain(run.collection_errors.iter().map(|e| key(&e.file)))
            .collect(),
    };
    let path = file(store);
    worldline_case::durable::write(&path, &serde_json::to_vec_pretty(&last)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// The cases that did not pass in the last session on `store`.
pub fn failed(store: &StoreDir) -> Result<Vec<PathBuf>, InputError> {
    let path = file(store);
    let text = worldline_case::bounded::read_text(&path, worldline_case::bounded::DOCUMENT).map_err(|_| {
        InputError::new(
            &store.root,
            "no earlier `worldline test` session on this store to take failed cases from; run the suite once without --rerun-failed",
        )
    })?;
    let last: LastSession = serde_json::from_str(&text).map_err(|e| {
        InputError::new(
            &path,
            format!("is not a last-session record ({e}); delete it and run the suite once"),
        )
    })?;
    Ok(last.failed)
}
