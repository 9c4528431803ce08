//! Campaign reports kept in the store (`campaigns/<id>.json`, the `fuzz
//! --json` document), so a campaign can be looked at after it ran (the
//! UI's campaigns pages). Ids sort by time like run ids.

use crate::store::StoreDir;
use anyhow::Result;
use serde_json::Value;
use std::path::PathBuf;

fn dir(store: &StoreDir) -> PathBuf {
    store.root.join("campaigns")
}

/// Keep a campaign's report; returns its id.
pub fn save(store: &StoreDir, report: &Value) -> Result<String> {
    let id = store.new_run_id("campaign");
    std::fs::create_dir_all(dir(store))?;
    crate::durable::write(
        &dir(store).join(format!("{id}.json")),
        serde_json::to_string_pretty(report)?.as_bytes(),
    )?;
    Ok(id)
}

/// Every kept campaign's id, newest first.
pub fn ids(store: &StoreDir) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir(store))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.strip_suffix(".json").map(str::to_string)
        })
        .filter(|id| id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        .collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    ids
}

/// A kept campaign's report.
pub fn load(store: &StoreDir, id: &str) -> Result<Value> {
    let path = dir(store).join(format!("{id}.json"));
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') || !path.is_file() {
        return Err(crate::error::InputError::new(&path, "no such campaign in the store").into());
    }
    let text = crate::bounded::read_text(&path, crate::bounded::DOCUMENT)
        .map_err(|e| crate::error::InputError::new(&path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        crate::error::InputError::new(&path, format!("not a campaign report: {e}")).into()
    })
}
