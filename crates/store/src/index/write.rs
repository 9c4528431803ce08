//! Writing rows: the one write transaction every change goes through (the
//! mark of a sound index follows it), and the rows of runs just written or
//! imported, upserted through one kept connection per process.

use super::row::{self, Row};
use super::schema::upsert;
use super::{Index, index_path};
use crate::store::StoreDir;
use anyhow::Result;
use rusqlite::{TransactionBehavior, params};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use worldline_log::log::{Footer, Header};

impl Index {
    /// Run `f` in one write transaction. When the index files were sound
    /// just before it (see `damage.rs`), they are noted sound after it.
    pub(super) fn write<T>(
        &mut self,
        f: impl FnOnce(&rusqlite::Transaction) -> Result<T>,
    ) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let before = self.closing.mark.sound();
        let out = f(&tx)?;
        tx.commit()?;
        if let Some(before) = before {
            self.closing.mark.record_since(&before);
        }
        Ok(out)
    }

    /// Add or replace rows in one transaction.
    pub fn upsert_all(&mut self, rows: &[Row]) -> Result<()> {
        self.write(|tx| {
            for r in rows {
                upsert(tx, r)?;
            }
            Ok(())
        })
    }

    /// Drop the rows of runs whose bundles were deleted.
    pub fn remove(&mut self, ids: &[String]) -> Result<()> {
        self.write(|tx| {
            for id in ids {
                tx.execute("DELETE FROM runs WHERE id=?1", params![id])?;
            }
            Ok(())
        })
    }
}

/// Upsert the row of a run just written, from what the run kept in
/// memory. The bundle is what matters: when the index cannot be updated, a
/// warning says so and the next reader reconciles or rebuilds it.
pub fn record(store: &StoreDir, run_id: &str, header: &Header, footer: &Footer, events: usize) {
    let row = std::fs::metadata(store.bundle_path(run_id)).map(|meta| {
        let created = row::created_of(run_id, &meta);
        Row::of_parts(run_id, created, meta.len(), header, Some(footer), events)
    });
    save(store, run_id, row);
}

/// Upsert the row of a bundle put into the store (an import).
pub fn record_file(store: &StoreDir, run_id: &str) {
    save(store, run_id, Row::read(run_id, &store.bundle_path(run_id)));
}

/// Upsert one row through this process's connection to the store's index,
/// opened on first use and kept: opening and closing SQLite for every
/// run (the close checkpoints the log) costs ~15 ms, the upsert well under
/// one.
pub fn save_row(store: &StoreDir, row: &Row) -> Result<()> {
    let mut writers = WRITERS.lock().unwrap_or_else(|e| e.into_inner());
    let key = index_path(store);
    let index = match writers.entry(key) {
        std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::btree_map::Entry::Vacant(v) => v.insert(Index::connect(store)?),
    };
    let saved = index.upsert_all(std::slice::from_ref(row));
    if saved.is_err() {
        // Maybe the file was replaced (a rebuild): open it afresh next time.
        writers.remove(&index_path(store));
    }
    saved
}

/// This process's kept connections, one per store's index.
static WRITERS: Mutex<BTreeMap<PathBuf, Index>> = Mutex::new(BTreeMap::new());

/// Close the connections [`save_row`] kept, at the end of a command. A
/// static is never dropped, so without this the process exits with its
/// connection open and the damage mark is not brought up to date
/// (`damage.rs`). The close does not checkpoint the log (decision 0388):
/// commits do once it passes [`LOG_PAGES`](super::LOG_PAGES), so the log
/// a later process reads back to open the index stays short (it was up to
/// 4 MiB, ~860 reads of 4 KiB for a fork after a 200-run suite, before
/// decision 0321).
pub fn close_writers() {
    let closing = std::mem::take(&mut *WRITERS.lock().unwrap_or_else(|e| e.into_inner()));
    drop(closing);
}

fn save(store: &StoreDir, run_id: &str, row: std::io::Result<Row>) {
    let result = row
        .map_err(anyhow::Error::from)
        .and_then(|r| save_row(store, &r));
    if let Err(e) = result {
        ::log::warn!(
            "the run index was not updated for {run_id} ({e:#}); the next `worldline runs` repairs it"
        );
    }
}
