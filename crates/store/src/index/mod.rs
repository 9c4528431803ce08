//! The run index: one SQLite row per bundle in `<store>/index.sqlite`, so
//! `runs` and `gc` answer from a query instead of reading every bundle.
//!
//! The bundles stay the truth; the index is a cache of them. Every command
//! that writes a run upserts its row ([`record`]), a suite's rows a batch
//! at a time (decision 0393). Readers ([`Index::open`])
//! never trust it blindly: a missing, unreadable or foreign-version file is
//! rebuilt from the bundles, and when the `runs/` folder changed since the
//! index last matched it (its modification time differs), the folder is
//! listed and the index reconciled (`folder.rs`). Several processes share
//! it through SQLite's write-ahead log and a busy timeout. Damage is looked
//! for (`damage.rs`): SQLite's integrity check runs when the files changed
//! in a way no worldline process accounts for, and a read that finds a
//! value it cannot decode or a malformed page makes [`Index::read`]
//! rebuild the index from the bundles and read again, saying so on stderr.
//!
//! The other modules: `schema.rs` (tables, columns, a row in and out),
//! `write.rs` (the write transaction, rows of new runs), `query.rs`
//! (`runs`' filters), `page.rs` (a page of a listing and its count),
//! `row.rs` (a row from a bundle), `long_path.rs` (an index at a path too
//! long for SQLite).

mod behind;
mod damage;
mod folder;
mod long_path;
pub mod page;
pub mod query;
pub mod row;
mod schema;
mod write;

use crate::store::StoreDir;
use anyhow::{Context as _, Result};
use damage::{Closing, Mark, Unusable, discard, is_unusable};
use rusqlite::{Connection, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use behind::Committer;
pub(crate) use schema::{COLUMNS, row_of};
pub use write::{
    close_writers, committer, flush, open_writer, record, record_file, save_row, settle,
};

/// The index file inside a store.
pub const FILE: &str = crate::store::INDEX_FILE;

/// How long a writer waits for another one before giving up (a second in
/// this crate's tests, which hold a lock to see the error).
const BUSY: Duration = Duration::from_secs(if cfg!(test) { 1 } else { 30 });

/// The write-ahead log's pages before a commit checkpoints it (SQLite's
/// default is 1,000). No connection checkpoints when it closes, so a
/// command that writes one row pays no checkpoint's `fsync`s; the log a
/// later process reads back to open the index stays this short.
pub const LOG_PAGES: u32 = 256;

/// The longest log a command leaves behind: past it, the command's end
/// checkpoints the log down to nothing. A process reads every frame of
/// the log back when it opens the index, and forgets what an earlier one
/// checkpointed, so without this the log of one-row commands only grew.
pub const LOG_LEFT: u64 = 64 * FRAME;

/// A frame of the log: a 4 KiB page and its 24-byte header.
const FRAME: u64 = 4096 + 24;

/// What the log file is cut back to at a checkpoint: twice
/// [`LOG_PAGES`] frames.
pub const LOG_BYTES: u64 = 2 * LOG_PAGES as u64 * FRAME;

/// An open index.
pub struct Index {
    conn: Connection,
    runs_dir: PathBuf,
    /// Declared after `conn`, so it is dropped after the connection closes.
    closing: Closing,
    /// The store's folder, when the index is opened through its
    /// descriptor (`long_path.rs`): closed after the connection.
    _folder: Option<std::fs::File>,
}

/// What bringing the index up to date did.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize)]
pub struct Sync {
    /// Rows added or re-read from their bundles.
    pub read: usize,
    /// Rows dropped because their bundle is gone.
    pub dropped: usize,
    /// Whether the index file was unusable and built anew.
    pub rebuilt: bool,
    /// Whether SQLite's integrity check ran: the files had changed in a
    /// way no worldline process accounts for.
    pub checked: bool,
}

/// How the index and the bundle folder differ (`index --check`).
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    pub indexed: usize,
    pub bundles: usize,
    /// Bundles without a row.
    pub missing: Vec<String>,
    /// Rows without a bundle.
    pub orphaned: Vec<String>,
    /// Rows whose recorded size differs from the file's.
    pub stale: Vec<String>,
}

impl Check {
    pub fn consistent(&self) -> bool {
        self.missing.is_empty() && self.orphaned.is_empty() && self.stale.is_empty()
    }
}

/// Whether `e` is SQLite refusing to write a file this process may not
/// (the store's folder writable, the index file not).
fn is_read_only(e: &anyhow::Error) -> bool {
    sqlite_said(e, &[rusqlite::ErrorCode::ReadOnly])
}

/// Whether SQLite could not write `e` for want of space: a full disk is
/// `SQLITE_FULL` where a write fell short, an I/O error where a file could
/// not grow at all (the shared-memory file: `SQLITE_IOERR_SHMSIZE`).
pub(crate) fn is_full(e: &anyhow::Error) -> bool {
    use rusqlite::ErrorCode::{DiskFull, SystemIoFailure};
    sqlite_said(e, &[DiskFull, SystemIoFailure])
}

/// `e` as the store's write error, naming it and what to do, when the
/// disk is full (it was SQLite's words alone, exit 4); else as it is.
fn named_if_full(store: &StoreDir, e: anyhow::Error) -> anyhow::Error {
    match is_full(&e) {
        true => store.full_disk_error(&index_path(store), e).into(),
        false => e,
    }
}

/// Why the index on disk cannot be written.
enum Unwritable {
    ReadOnly,
    Full,
    /// The store's folder can be written, its index's files not (another
    /// user's, not group-writable): they, their modes and owners.
    Files(String),
}

/// The files of the index at `path` (`index.sqlite`, its `-wal`, `-shm`)
/// this process may not write, each with its mode and owner; `None` when
/// each may be written (or is absent).
fn unwritable_files(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt as _;
    let files: Vec<String> = ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let file = PathBuf::from(format!("{}{suffix}", path.display()));
            let meta = file.metadata().ok()?;
            (!crate::store::may_write(&file)).then(|| {
                format!(
                    "{} (mode {:04o}, owner uid {}, group gid {})",
                    file.display(),
                    meta.mode() & 0o7777,
                    meta.uid(),
                    meta.gid()
                )
            })
        })
        .collect();
    (!files.is_empty()).then(|| files.join(", "))
}

/// SQLite's "attempt to write a readonly database" for the index at
/// `path` said with the files it could not write and what to do.
pub(crate) fn named_if_unwritable(e: anyhow::Error, path: &Path) -> anyhow::Error {
    match unwritable_files(path).filter(|_| is_read_only(&e)) {
        Some(files) => e.context(unwritable_said(&files)),
        None => e,
    }
}

/// What to do about [`unwritable_files`].
fn unwritable_said(files: &str) -> String {
    format!(
        "the run index's files {files} cannot be written by this user, though the store's folder can: have their owner make them group-writable (`chmod g+w`), or remove them (the index is a cache of the bundles: the next command makes it again, with the umask's mode)"
    )
}

/// Refuse `what` (a command that writes the run index on disk) when this
/// process may write the store's folder but not the index's files,
/// naming them, their modes and owners, before anything is tried.
pub fn needs_writing(store: &StoreDir, what: &str) -> Result<()> {
    match unwritable_files(&index_path(store)) {
        Some(files) => Err(worldline_case::error::InputError::new(
            index_path(store),
            format!(
                "{what} writes the run index, but {}",
                unwritable_said(&files)
            ),
        )
        .into()),
        None => Ok(()),
    }
}

/// Whether SQLite's error somewhere in `e`'s chain is one of `codes`.
fn sqlite_said(e: &anyhow::Error, codes: &[rusqlite::ErrorCode]) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<rusqlite::Error>()
            .and_then(rusqlite::Error::sqlite_error_code)
            .is_some_and(|code| codes.contains(&code))
    })
}

/// Make the index file, empty (SQLite reads that as an empty database),
/// when it is missing: with the mode the umask gives, as the store's other
/// files have. SQLite makes a missing file 0644 whatever the umask, and
/// its log and shared memory take the file's mode, so another user of a
/// group-shared store (umask 002) could not write the index. A file that
/// cannot be made here is left to SQLite's open, which says why.
fn made_by_the_umask(path: &Path) {
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path);
}

fn index_path(store: &StoreDir) -> PathBuf {
    store.root.join(FILE)
}

/// `e` named when another process's lock caused it: SQLite's own words
/// ("database is locked") name neither the file nor whose lock it is
/// (decision 0413).
fn named_if_locked(e: anyhow::Error, path: &Path) -> anyhow::Error {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    let locked = sqlite_said(&e, &[DatabaseBusy, DatabaseLocked]);
    if !locked {
        return e;
    }
    e.context(format!(
        "the run index {} stayed locked by another process for {} s (another worldline \
         writing to this store, or a program that holds the file open); run the command \
         again when it ends, or find it with `fuser {}`",
        path.display(),
        BUSY.as_secs(),
        path.display()
    ))
}

impl Index {
    /// Open the index as it is (created when missing), without looking at
    /// the bundle folder: for writers, which upsert their own row.
    pub fn connect(store: &StoreDir) -> Result<Index> {
        let path = index_path(store);
        Index::connect_at(store, &path).map_err(|e| named_if_locked(e, &path))
    }

    fn connect_at(store: &StoreDir, path: &Path) -> Result<Index> {
        let mark = Mark::of(store);
        // Before opening, which creates the files when they are missing.
        let sound = mark.sound();
        // A folder (or a device) where the index goes is no index: said
        // so, not SQLite's "unable to open database file" (exit 4).
        if path.metadata().is_ok_and(|m| !m.is_file()) {
            return Err(worldline_case::error::InputError::new(
                path,
                "is not a file, and the store's run index goes there: the index is a cache of the bundles, so move this away and the next command makes it again",
            )
            .into());
        }
        made_by_the_umask(path);
        let opening = || format!("opening the run index {}", path.display());
        let (conn, folder) = match long_path::by_descriptor(path).with_context(opening)? {
            Some(by) => (
                Connection::open_with_flags_and_vfs(
                    &by.path,
                    rusqlite::OpenFlags::default(),
                    long_path::VFS,
                )
                .with_context(opening)?,
                Some(by.folder),
            ),
            None => (Connection::open(path).with_context(opening)?, None),
        };
        conn.busy_timeout(BUSY)?;
        let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        // The log is checkpointed by the commit that takes it past
        // LOG_PAGES, never by a close (decision 0388), and one that grew
        // while readers held it is cut back to LOG_BYTES at the next
        // checkpoint (it was seen at 6.7 MB after 270 runs).
        conn.execute_batch(&format!(
            "PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit={LOG_BYTES}; PRAGMA wal_autocheckpoint={LOG_PAGES}"
        ))?;
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        let mut index = Index {
            conn,
            runs_dir: store.runs_dir(),
            closing: Closing { mark, sound: None },
            _folder: folder,
        };
        if index.version()? != schema::VERSION {
            let tx = index
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            match version {
                0 => {
                    // A file at version 0 that holds tables of another
                    // shape (a `runs` without this index's columns) is
                    // no index: rebuilt as another version is.
                    tx.execute_batch(schema::SCHEMA).map_err(|e| {
                        Unusable(format!(
                            "{} has index version 0 and tables this worldline's index cannot take ({e})",
                            path.display()
                        ))
                    })?;
                    tx.execute_batch(&format!("PRAGMA user_version={}", schema::VERSION))?;
                }
                1 => {
                    schema::add_rules(&tx, &index.runs_dir)?;
                    tx.execute_batch(&format!("PRAGMA user_version={}", schema::VERSION))?;
                }
                v if v == schema::VERSION => {}
                other => {
                    return Err(Unusable(format!(
                        "{} has index version {other}, this worldline writes {}",
                        path.display(),
                        schema::VERSION
                    ))
                    .into());
                }
            }
            tx.commit()?;
        }
        if let Some(before) = sound {
            index.closing.mark.record_since(&before);
        }
        Ok(index)
    }

    /// A store this process cannot write (a read-only mount, another
    /// user's folder, a full disk) is still read: its index is made in
    /// memory from its bundles, as a rebuild would make it, and left on
    /// disk as it is (`why`: read-only, or the disk is full).
    fn in_memory(store: &StoreDir, why: Unwritable) -> Result<(Index, Sync)> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch(schema::SCHEMA)?;
        let mut index = Index {
            conn,
            runs_dir: store.runs_dir(),
            closing: Closing {
                mark: Mark::of(store),
                sound: None,
            },
            _folder: None,
        };
        let s = index.sync()?;
        // Said once: a server (`ui`) opens the index for every request.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| match why {
            Unwritable::Files(files) => ::log::info!(
                "{}, so the run index is read from the bundles in memory",
                unwritable_said(&files)
            ),
            _ => ::log::info!(
                "{} cannot be written here ({}), so its run index is read from its bundles in memory",
                store.root.display(),
                match why {
                    Unwritable::Full => "the disk is full",
                    _ => "read-only",
                }
            ),
        });
        Ok((index, s))
    }

    fn version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// Open the index for reading: checked when its files changed in a way
    /// no worldline process accounts for, rebuilt when unusable, and
    /// brought up to date with the bundle folder (see the module comment).
    pub fn open(store: &StoreDir) -> Result<(Index, Sync)> {
        store.pull()?;
        if !store.writable() {
            return Index::in_memory(store, Unwritable::ReadOnly);
        }
        // The rows this process queued first (decision 0393).
        flush(store);
        let attempt = Index::connect(store).and_then(|mut i| {
            let checked = i.check_integrity()?;
            let s = i.sync()?;
            Ok((i, Sync { checked, ..s }))
        });
        match attempt {
            Err(e) if is_read_only(&e) => {
                let why = unwritable_files(&index_path(store))
                    .map_or(Unwritable::ReadOnly, Unwritable::Files);
                Index::in_memory(store, why)
            }
            // A full disk: the commands that read the store, and `gc`,
            // which frees its space, still work (they failed, exit 4).
            Err(e) if is_full(&e) => Index::in_memory(store, Unwritable::Full),
            Err(e) if is_unusable(&e) => {
                discard(store)?;
                let mut index = Index::connect(store)?;
                let mut s = index.sync()?;
                s.rebuilt = true;
                Ok((index, s))
            }
            other => other,
        }
    }

    /// Open the index and read from it with `f`. An index that a read finds
    /// damaged is rebuilt from the bundles (a note says so, through the
    /// `log` facade the CLI prints) and
    /// read again.
    pub fn read<T>(store: &StoreDir, f: impl Fn(&Index) -> Result<T>) -> Result<(T, Sync)> {
        let (index, sync) = Index::open(store)?;
        let e = match f(&index) {
            Err(e) if is_unusable(&e) => e,
            other => return other.map(|t| (t, sync)),
        };
        drop(index);
        ::log::info!("the run index is damaged ({e:#}); rebuilding it from the bundles");
        discard(store)?;
        let (index, mut sync) = Index::open(store)?;
        sync.rebuilt = true;
        Ok((f(&index)?, sync))
    }

    /// Drop every row and read every bundle again (`index --rebuild`).
    pub fn rebuild(store: &StoreDir) -> Result<(Index, Sync)> {
        Index::rebuild_on_disk(store).map_err(|e| named_if_full(store, e))
    }

    /// The index on disk compared with the bundles, repairing nothing
    /// (`index --check`). SQLite writes even to read an index kept with a
    /// log, so a store this process cannot write is refused, naming it.
    pub fn check_on_disk(store: &StoreDir) -> Result<Check> {
        let what = "`index --check` (SQLite opens the run index on disk for writing, even to read it; `worldline runs` reads the store here)";
        store.needs_writing(what)?;
        needs_writing(store, what)?;
        Index::connect(store)
            .and_then(|index| index.check_rows())
            .map_err(|e| named_if_full(store, e))
    }

    fn rebuild_on_disk(store: &StoreDir) -> Result<(Index, Sync)> {
        flush(store);
        let mut index = match Index::connect(store) {
            Ok(i) => i,
            Err(e) if is_unusable(&e) => {
                discard(store)?;
                Index::connect(store)?
            }
            Err(e) => return Err(e),
        };
        let ids: Vec<String> = folder::list_bundles(&index.runs_dir)?.into_iter().collect();
        let rows = folder::read_rows(&index.runs_dir, &ids)?;
        let dropped = index.write(|tx| {
            let dropped = tx.execute("DELETE FROM runs", [])?;
            tx.execute("DELETE FROM meta", [])?;
            for r in &rows {
                schema::upsert(tx, r)?;
            }
            Ok(dropped)
        })?;
        let s = Sync {
            read: rows.len(),
            dropped: dropped.saturating_sub(rows.len()),
            rebuilt: true,
            checked: false,
        };
        Ok((index, s))
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that must bring the index up to date while another process
    /// holds its write lock says which file is locked and what to do.
    #[test]
    fn an_index_locked_past_the_wait_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreDir::open(dir.path()).unwrap();
        drop(Index::open(&store).unwrap());
        std::fs::write(store.runs_dir().join("20260101-000000-00000000.jsonl"), b"").unwrap();
        let other = Connection::open(index_path(&store)).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let err = Index::open(&store).err().expect("the lock is held");
        let shown = format!("{err:#}");
        assert!(
            shown.contains(&index_path(&store).display().to_string())
                && shown.contains("locked by another process")
                && shown.contains("fuser"),
            "{shown}"
        );
    }
}
