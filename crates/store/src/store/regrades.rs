//! A folder store's re-grades: `grades/<run>/1.json`, `2.json`, … in the
//! order `grade --rejudge` made them (the recorded grade stays in the
//! bundle). A database store keeps them in its database (`shared.rs`).

use super::StoreDir;
use serde_json::Value;
use std::path::PathBuf;
use worldline_case::error::InputError;

fn dir(store: &StoreDir, run_id: &str) -> PathBuf {
    store.root.join("grades").join(run_id)
}

/// Remove run `run_id`'s re-grades with the run (gc): none is fine.
pub(crate) fn remove(store: &StoreDir, run_id: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let dir = dir(store, run_id);
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// Keep `grade` as run `run_id`'s next re-grade; its number.
pub(super) fn put(store: &StoreDir, run_id: &str, grade: &Value) -> Result<i32, InputError> {
    let dir = dir(store, run_id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| InputError::new(&dir, format!("cannot create: {e}")))?;
    let n = (1..)
        .find(|n| !dir.join(format!("{n}.json")).exists())
        .unwrap_or(1);
    let path = dir.join(format!("{n}.json"));
    let text = worldline_case::canon::to_string(grade);
    worldline_case::durable::create_new(&path, text.as_bytes())
        .map_err(|e| InputError::new(&path, format!("cannot write: {e}")))?;
    Ok(n)
}

/// Run `run_id`'s re-grades kept that read as JSON, the newest first.
pub(super) fn all(store: &StoreDir, run_id: &str) -> Vec<Value> {
    let dir = dir(store, run_id);
    let mut kept: Vec<Value> = (1..)
        .map(|n| dir.join(format!("{n}.json")))
        .take_while(|p| p.is_file())
        .filter_map(|p| {
            let bytes =
                worldline_case::bounded::read(&p, worldline_case::bounded::DOCUMENT).ok()?;
            serde_json::from_slice(&bytes).ok()
        })
        .collect();
    kept.reverse();
    kept
}
