//! Pins: runs under investigation, kept by `gc` whatever their age. A pin
//! is a file `<store>/pins/<run-id>` (holding an optional note), so pins
//! survive an index rebuild and two processes never fight over one file.
//! A database-kept store keeps them in its `pins` table instead.

use crate::store::StoreDir;
use anyhow::{Context as _, Result};
use std::collections::BTreeSet;
use std::path::PathBuf;

fn dir(store: &StoreDir) -> PathBuf {
    store.root.join("pins")
}

/// A run id that can name a file in `pins/`.
fn plain(run_id: &str) -> Result<()> {
    anyhow::ensure!(
        !run_id.is_empty()
            && run_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
        worldline_case::error::InputError::new(
            run_id,
            "not a run id (letters, digits, - and _); list runs with `worldline runs`"
        )
    );
    Ok(())
}

/// Pin a run (by id), with a note; without one, a pinned run keeps its
/// note.
pub fn pin(store: &StoreDir, run_id: &str, note: Option<&str>) -> Result<()> {
    plain(run_id)?;
    let removed = || {
        worldline_case::error::InputError::new(
            run_id,
            "was removed by a `worldline gc` pass as it was being pinned: nothing is pinned",
        )
    };
    if let Some(db) = store.database() {
        // Held first, under the database's gc gate, as below.
        if !db
            .hold(&[run_id])
            .map_err(crate::store::db_error)?
            .is_empty()
        {
            return Err(removed().into());
        }
        return Ok(db.pin(run_id, note).map_err(crate::store::db_error)?);
    }
    // Held first, as a reader holds a run: a gc pass under way (which
    // read the pins before this one was written) has ended when the hold
    // is taken, and none that begins after it removes the run while the
    // pin is written. The run is then there, or that pass removed it: a
    // pin said "pinned" of a run the pass beside it removed.
    store.hold(&[run_id])?;
    if store.bundle_path(run_id).symlink_metadata().is_err() {
        return Err(removed().into());
    }
    let d = dir(store);
    std::fs::create_dir_all(&d).map_err(|e| store.write_error(&d, e))?;
    let path = d.join(run_id);
    // Pinned again without a note: the one it has stays.
    if note.is_none() && path.is_file() {
        return Ok(());
    }
    // Written beside it and renamed: on a full disk the pin was cut off
    // (its old note lost, or a new pin left empty) and the error exit 4.
    worldline_case::durable::write(&path, note.unwrap_or_default().as_bytes())
        .map_err(|e| store.write_error(&path, e))?;
    Ok(())
}

/// Unpin a run; whether it was pinned.
pub fn unpin(store: &StoreDir, run_id: &str) -> Result<bool> {
    plain(run_id)?;
    if let Some(db) = store.database() {
        return Ok(db.unpin(run_id).map_err(crate::store::db_error)?);
    }
    let path = dir(store).join(run_id);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// The pinned run ids.
pub fn list(store: &StoreDir) -> Result<BTreeSet<String>> {
    if let Some(db) = store.database() {
        return Ok(db.pins().map_err(crate::store::db_error)?);
    }
    let d = dir(store);
    match std::fs::read_dir(&d) {
        Ok(rd) => Ok(rd
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeSet::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", d.display())),
    }
}
