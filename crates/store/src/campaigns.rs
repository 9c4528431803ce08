//! Campaign reports kept in the store (`campaigns/<id>.json`, the `fuzz
//! --json` document), so a campaign can be looked at after it ran (the
//! UI's campaigns pages). Ids sort by time like run ids. A database store
//! keeps them in its database instead, raw and redacted, for every
//! machine (`store/shared.rs`).
//!
//! Why campaign reports are kept in the store (was decision 0091): passing runs
//! are never written (docs/decisions/0062-campaign-tally.md), so the report is
//! the campaign's only record; the UI reads it as a JSON value so the page
//! follows the document and not a Rust type. Campaign rows in the run index
//! were the alternative.

use crate::store::StoreDir;
use anyhow::Result;
use serde_json::Value;
use std::path::PathBuf;

fn dir(store: &StoreDir) -> PathBuf {
    store.root.join("campaigns")
}

/// Whether `id` can name a campaign (a file in `campaigns/`, nothing else).
fn is_id(id: &str) -> bool {
    id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Keep a campaign's report; returns its id.
pub fn save(store: &StoreDir, report: &Value) -> Result<String> {
    let id = store.new_run_id("campaign");
    if store.database().is_some() {
        store.put_campaign(&id, report)?;
        return Ok(id);
    }
    let d = dir(store);
    std::fs::create_dir_all(&d).map_err(|e| store.write_error(&d, e))?;
    let path = d.join(format!("{id}.json"));
    // A full disk names the file and the store (it was a bare "No space
    // left on device", exit 4).
    worldline_case::durable::write(&path, serde_json::to_string_pretty(report)?.as_bytes())
        .map_err(|e| store.write_error(&path, e))?;
    Ok(id)
}

/// Every kept campaign's id and report, newest first (a report that
/// cannot be read is left out). From a database store, a viewer's are
/// the redacted reports.
pub fn all(store: &StoreDir) -> Result<Vec<(String, Value)>> {
    if store.database().is_some() {
        return Ok(store.campaigns()?);
    }
    Ok(ids(store)
        .into_iter()
        .filter_map(|id| Some((id.clone(), load(store, &id).ok()?)))
        .collect())
}

/// Every campaign file's id, newest first.
fn ids(store: &StoreDir) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(dir(store))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            name.strip_suffix(".json").map(str::to_string)
        })
        .filter(|id| is_id(id))
        .collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    ids
}

/// A kept campaign's report (from a database store, a viewer's is the
/// redacted one).
pub fn load(store: &StoreDir, id: &str) -> Result<Value> {
    if store.database().is_some() {
        return Ok(store.campaign(id)?);
    }
    let path = dir(store).join(format!("{id}.json"));
    if !is_id(id) || !path.is_file() {
        return Err(
            worldline_case::error::InputError::new(&path, "no such campaign in the store").into(),
        );
    }
    let text = worldline_case::bounded::read_text(&path, worldline_case::bounded::DOCUMENT)
        .map_err(|e| worldline_case::error::InputError::new(&path, format!("cannot read: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        worldline_case::error::InputError::new(&path, format!("not a campaign report: {e}")).into()
    })
}
