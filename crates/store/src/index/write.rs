//! Writing rows: the one write transaction every change goes through (the
//! mark of a sound index follows it), and the rows of runs just written or
//! imported, upserted through one kept connection per process.

use super::behind::{self, Committer};
use super::row::{self, Row};
use super::schema::upsert;
use super::{Index, index_path};
use crate::store::StoreDir;
use anyhow::Result;
use rusqlite::{TransactionBehavior, params};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use worldline_log::log::{Footer, Header};

impl Index {
    /// Run `f` in one write transaction. When the index files were sound
    /// just before it (see `damage.rs`), they are noted sound after it.
    pub(super) fn write<T>(
        &mut self,
        f: impl FnOnce(&rusqlite::Transaction) -> Result<T>,
    ) -> Result<T> {
        self.write_now(f).map_err(|e| {
            let path = self.runs_dir.with_file_name(super::FILE);
            super::named_if_locked(e, &path)
        })
    }

    fn write_now<T>(&mut self, f: impl FnOnce(&rusqlite::Transaction) -> Result<T>) -> Result<T> {
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

    /// Move the log's pages into the index file and empty the log; the
    /// files, sound before, are noted sound after.
    fn checkpoint(&mut self) -> Result<()> {
        let before = self.closing.mark.sound();
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        if let Some(before) = before {
            self.closing.mark.record_since(&before);
        }
        Ok(())
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

/// Queue the row of a run just written, from what the run kept in
/// memory; the queued rows of a store are upserted together (see
/// [`ROWS`]). The bundle is what matters: when the index cannot be
/// updated, a warning says so and the next reader reconciles or rebuilds
/// it.
pub fn record(store: &StoreDir, run_id: &str, header: &Header, footer: &Footer, events: usize) {
    let row = std::fs::metadata(store.bundle_path(run_id)).map(|meta| {
        let created = row::created_of(run_id, &meta);
        Row::of_parts(run_id, created, meta.len(), header, Some(footer), events)
    });
    match row {
        Ok(row) => queue(store, row),
        Err(e) => warn_unsaved(run_id, &e.into()),
    }
}

/// Upsert the row of a bundle put into the store (an import).
pub fn record_file(store: &StoreDir, run_id: &str) {
    let result = Row::read(run_id, &store.bundle_path(run_id))
        .map_err(anyhow::Error::from)
        .and_then(|r| save_row(store, &r));
    if let Err(e) = result {
        warn_unsaved(run_id, &e);
    }
}

/// Rows of new runs a process keeps before upserting them in one
/// transaction (decision 0393): one commit, one pass over the log's
/// frames and one update of the damage mark for this many runs instead
/// of each. A row is only the index's copy of its bundle, which is
/// already written (and made durable by its suite's batch): a process
/// killed with rows queued leaves bundles the index lacks, which the next
/// reader finds (the `runs/` folder changed) and reads (`folder.rs`).
const ROWS: usize = 64;

/// Upsert one row now through this process's connection to the store's
/// index, opened on first use and kept: opening and closing SQLite for
/// every run (the close checkpoints the log) costs ~15 ms, the upsert
/// well under one. Rows this process queued for the store go in the same
/// transaction.
pub fn save_row(store: &StoreDir, row: &Row) -> Result<()> {
    {
        let mut writers = lock_writers();
        writer_of(&mut writers, store)?.queued.push(row.clone());
    }
    commit(&index_path(store))
}

/// Upsert the rows this process queued for `store` (before a read of its
/// index, which must see them), and wait for a batch a suite's committer
/// is committing.
pub fn flush(store: &StoreDir) {
    let path = index_path(store);
    if let Err(e) = commit(&path) {
        warn_unsaved("the last runs", &e);
    }
    let index = lock_writers().get(&path).map(|w| w.index.clone());
    if let Some(index) = index {
        drop(lock_index(&index));
    }
}

/// At the end of a suite of `runs` runs: upsert the rows queued for
/// `store` and, after at least [`ROWS`] runs, first checkpoint the index's
/// log down to nothing, so the next process that opens the index (a
/// `fork`, a `runs`) reads back only the suite's last rows (it read up to
/// 2 MiB). Those rows start the log again: its header and its folder are
/// made durable by this suite, not by the first commit of the next
/// command (two `fsync`s of the first fork after a suite). A suite's
/// `fsync`s of the checkpoint are paid once for its runs; a command of
/// one run still leaves the checkpoint to a later commit (decisions 0388,
/// 0393).
pub fn settle(store: &StoreDir, runs: usize) {
    if runs >= ROWS {
        let index = lock_writers()
            .get(&index_path(store))
            .map(|w| w.index.clone());
        if let Some(index) = index
            && let Err(e) = lock_index(&index).checkpoint()
        {
            ::log::warn!("the run index's log was not checkpointed ({e:#})");
        }
    }
    flush(store);
}

/// Commit `store`'s full batches of rows on a thread of their own while
/// the value lives (a suite's `runs` runs, decision 0397); none for fewer
/// runs than fill a batch, whose rows `settle` commits.
pub fn committer(store: &StoreDir, runs: usize) -> Option<Committer> {
    if runs < ROWS {
        return None;
    }
    let path = index_path(store);
    Some(Committer::start(path.clone(), move || {
        if let Err(e) = commit(&path) {
            warn_unsaved("the last runs", &e);
        }
    }))
}

/// A kept connection and the rows queued for it. The connection has a
/// lock of its own, so rows are queued while a batch is committed (by a
/// suite's committer, `behind.rs`).
struct Writer {
    index: Arc<Mutex<Index>>,
    queued: Vec<Row>,
}

/// This process's kept connections, one per store's index.
static WRITERS: Mutex<BTreeMap<PathBuf, Writer>> = Mutex::new(BTreeMap::new());

fn lock_writers() -> MutexGuard<'static, BTreeMap<PathBuf, Writer>> {
    WRITERS.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock_index(index: &Mutex<Index>) -> MutexGuard<'_, Index> {
    index.lock().unwrap_or_else(|e| e.into_inner())
}

/// Open the kept writer of `store`'s index now: for a command that
/// records one run after work of its own, on a thread of its own while
/// that work goes on (`fork`, decision 0398). An error is left to the
/// [`record`] that follows, which opens the index again and says why.
pub fn open_writer(store: &StoreDir) {
    let _ = writer_of(&mut lock_writers(), store);
}

fn writer_of<'a>(
    writers: &'a mut BTreeMap<PathBuf, Writer>,
    store: &StoreDir,
) -> Result<&'a mut Writer> {
    Ok(match writers.entry(index_path(store)) {
        std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::btree_map::Entry::Vacant(v) => v.insert(Writer {
            index: Arc::new(Mutex::new(
                Index::connect(store)
                    .map_err(|e| super::named_if_unwritable(e, &index_path(store)))?,
            )),
            queued: Vec::new(),
        }),
    })
}

/// Upsert the rows queued for the index at `path` in one transaction,
/// taken out of the queue first: rows queued meanwhile wait for the next.
fn commit(path: &Path) -> Result<()> {
    let (index, rows) = {
        let mut writers = lock_writers();
        let Some(writer) = writers.get_mut(path).filter(|w| !w.queued.is_empty()) else {
            return Ok(());
        };
        (writer.index.clone(), std::mem::take(&mut writer.queued))
    };
    let saved =
        (lock_index(&index).upsert_all(&rows)).map_err(|e| super::named_if_unwritable(e, path));
    if saved.is_err() {
        // Maybe the file was replaced (a rebuild): open it afresh next time.
        let mut writers = lock_writers();
        if writers
            .get(path)
            .is_some_and(|w| Arc::ptr_eq(&w.index, &index))
        {
            writers.remove(path);
        }
    }
    saved
}

fn queue(store: &StoreDir, row: Row) {
    let queued = match writer_of(&mut lock_writers(), store) {
        Ok(w) => {
            w.queued.push(row);
            w.queued.len()
        }
        Err(e) => return warn_unsaved(&row.run_id, &e),
    };
    let path = index_path(store);
    if queued >= ROWS
        && !behind::wake(&path)
        && let Err(e) = commit(&path)
    {
        warn_unsaved("the last runs", &e);
    }
}

/// Upsert the queued rows and close the connections [`save_row`] kept, at
/// the end of a command. A static is never dropped, so without this the
/// process exits with its connection open and the damage mark is not
/// brought up to date (`damage.rs`). The close does not checkpoint the log
/// (decision 0388) unless it is longer than [`LOG_LEFT`](super::LOG_LEFT):
/// the next process reads all of it back to open the index (a fork read
/// 16 MB left by earlier forks), and commits alone never cut it back, since
/// each process's first read forgets what an earlier one checkpointed.
pub fn close_writers() {
    let mut closing = std::mem::take(&mut *lock_writers());
    for (path, writer) in closing.iter_mut() {
        let rows = std::mem::take(&mut writer.queued);
        let mut index = lock_index(&writer.index);
        if let Err(e) = index.upsert_all(&rows) {
            warn_unsaved("the last runs", &e);
        }
        let log = std::fs::metadata(format!("{}-wal", path.display())).map_or(0, |m| m.len());
        if log > super::LOG_LEFT
            && let Err(e) = index.checkpoint()
        {
            ::log::warn!("the run index's log was not checkpointed ({e:#})");
        }
    }
    drop(closing);
}

/// Said once a process: a full disk failed every batch's rows after the
/// first alike, and a suite said the same line a dozen times.
fn warn_unsaved(runs: &str, e: &anyhow::Error) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    ::log::warn!(
        "the run index was not updated for {runs} ({e:#}); the next `worldline runs` repairs it"
    );
}

#[cfg(test)]
mod tests {
    use super::super::row::sample;
    use super::*;

    /// The kept connections are the process's: one test at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    fn indexed(store: &StoreDir) -> usize {
        Index::connect(store).unwrap().all().unwrap().len()
    }

    /// Queued rows wait for the batch, a flush, a row saved at once or the
    /// command's end; a suite of many runs leaves only its last rows in
    /// the log.
    #[test]
    fn queued_rows_are_committed_together_and_a_long_suite_leaves_its_last_rows_in_the_log() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let store = StoreDir::open(dir.path()).unwrap();
        for i in 0..ROWS as i64 - 1 {
            queue(&store, sample(i));
        }
        assert_eq!(indexed(&store), 0, "queued, not yet committed");
        queue(&store, sample(ROWS as i64));
        assert_eq!(indexed(&store), ROWS, "the batch committed together");
        queue(&store, sample(1000));
        flush(&store);
        assert_eq!(indexed(&store), ROWS + 1);
        queue(&store, sample(1001));
        save_row(&store, &sample(1002)).unwrap();
        assert_eq!(indexed(&store), ROWS + 3, "saved with the queued row");
        queue(&store, sample(1003));
        let log = dir.path().join(format!("{}-wal", super::super::FILE));
        let before = std::fs::metadata(&log).map_or(0, |m| m.len());
        settle(&store, ROWS);
        assert_eq!(indexed(&store), ROWS + 4);
        let after = std::fs::metadata(&log).map_or(0, |m| m.len());
        assert!(
            after > 0 && after < before,
            "the log holds the last row, not the batches before it ({before} → {after} bytes)"
        );
        queue(&store, sample(1004));
        close_writers();
        assert_eq!(indexed(&store), ROWS + 5, "the command's end commits");
    }

    /// While a suite's committer runs, the run whose row fills a batch
    /// does not wait for its commit (here held up by holding the
    /// connection): the committer commits it.
    #[test]
    fn a_full_batch_is_committed_by_the_committer_not_the_run_that_filled_it() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let store = StoreDir::open(dir.path()).unwrap();
        let committer = committer(&store, ROWS);
        for i in 0..ROWS as i64 - 1 {
            queue(&store, sample(i));
        }
        let index = lock_writers()[&index_path(&store)].index.clone();
        let held = lock_index(&index);
        let (queued, done) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                queue(&store, sample(1000));
                let _ = queued.send(());
            });
            let waited = done
                .recv_timeout(std::time::Duration::from_secs(2))
                .is_err();
            drop(held);
            assert!(
                !waited,
                "the run that filled the batch waited for its commit"
            );
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while indexed(&store) < ROWS && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(indexed(&store), ROWS, "committed by the committer");
        // Stopped: the run that fills a batch commits it again.
        drop(committer);
        for i in 2000..2000 + ROWS as i64 {
            queue(&store, sample(i));
        }
        assert_eq!(indexed(&store), 2 * ROWS);
        close_writers();
    }

    /// Commands of one row each (a `fork`, a `run`) leave a short log: the
    /// next process reads every frame of it back to open the index. Each
    /// process's first read of the log forgets what an earlier one
    /// checkpointed, so without a checkpoint at the end of a command the
    /// log only grew (16 MB after a few thousand forks).
    #[test]
    fn commands_of_one_row_each_leave_a_short_log() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let store = StoreDir::open(dir.path()).unwrap();
        let log = dir.path().join(format!("{}-wal", super::super::FILE));
        let mut longest = 0;
        for i in 0..300 {
            save_row(&store, &sample(i)).unwrap();
            close_writers();
            longest = longest.max(std::fs::metadata(&log).map_or(0, |m| m.len()));
        }
        assert_eq!(indexed(&store), 300);
        assert!(
            longest <= super::super::LOG_LEFT,
            "a command left a log of {longest} bytes"
        );
    }
}
