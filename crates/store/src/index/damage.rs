//! Finding a damaged index: what counts as unusable, SQLite's integrity
//! check, and the mark (`<store>/index.checked`) of the state the index
//! files were last known sound in, so the check runs only when they
//! changed in a way no worldline process accounts for (decision 0264).
//!
//! The mark is the index file's and its write-ahead log's sizes and
//! modification times. It is recorded after a passed check, and after
//! every change worldline makes itself (a commit, the checkpoint of a
//! last close, a new file) when the files matched it just before: a
//! change worldline made from a sound state leaves it sound. Anything
//! else that touches the files (another program, a disk) leaves them not
//! matching the mark, and the next reader checks.

use super::Index;
use crate::store::StoreDir;
use anyhow::{Context as _, Result};
use rusqlite::ErrorCode;
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

/// Where the mark is kept, beside the index.
const CHECKED: &str = "index.checked";

/// The file is an SQLite database, but not this index.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct Unusable(pub(super) String);

/// Whether an error means the file is not a usable index: SQLite finds
/// it malformed, or a value in it does not decode as the schema says.
pub(super) fn is_unusable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        let damaged = c.downcast_ref::<rusqlite::Error>().is_some_and(|e| {
            matches!(
                e,
                rusqlite::Error::FromSqlConversionFailure(..)
                    | rusqlite::Error::IntegralValueOutOfRange(..)
                    | rusqlite::Error::Utf8Error(..)
                    | rusqlite::Error::InvalidColumnType(..)
            ) || e.sqlite_error_code().is_some_and(|code| {
                matches!(code, ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
            })
        });
        damaged || c.downcast_ref::<Unusable>().is_some()
    })
}

/// The index files of one store and their mark.
#[derive(Debug, Clone)]
pub(super) struct Mark {
    index: PathBuf,
    file: PathBuf,
}

impl Mark {
    pub(super) fn of(store: &StoreDir) -> Mark {
        Mark {
            index: super::index_path(store),
            file: store.root.join(CHECKED),
        }
    }

    /// The index file's and its log's sizes and modification times. An
    /// empty or missing log is `-`: a connection creates an empty one
    /// when it opens and deletes it when it closes last, which changes
    /// nothing in the index.
    fn signature(&self) -> String {
        ["", "-wal"]
            .iter()
            .map(|suffix| {
                let meta = std::fs::metadata(format!("{}{suffix}", self.index.display()));
                match meta {
                    Ok(m) if m.len() > 0 || suffix.is_empty() => {
                        let t = m
                            .modified()
                            .ok()
                            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                            .map_or(0, |d| d.as_nanos());
                        format!("{}:{t}", m.len())
                    }
                    _ => "-".to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The files' signature when they are as last known sound (they match
    /// the mark, or there is no index file yet, so nothing to damage).
    pub(super) fn sound(&self) -> Option<String> {
        let now = self.signature();
        let recorded = worldline_case::bounded::read(&self.file, 4096).ok();
        let fresh = now.starts_with("- ");
        (fresh || recorded.as_deref() == Some(now.as_bytes())).then_some(now)
    }

    /// Note the files as they are now as sound, unless that is what
    /// `before` already says. Best effort: without the mark the next
    /// reader checks again.
    pub(super) fn record_since(&self, before: &str) {
        let now = self.signature();
        if now != before {
            self.record_now(&now);
        }
    }

    /// Overwritten in place, not replaced by a rename: a rename that
    /// replaces a file deletes an inode, and this runs after every run a
    /// suite writes (decision 0322). A torn or half-written mark matches
    /// no signature, so at worst the next reader checks.
    fn record_now(&self, signature: &str) {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        // O_NONBLOCK: a FIFO in its place fails to open instead of waiting
        // for a reader.
        let _ = std::fs::File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.file)
            .and_then(|mut f| {
                f.write_all(signature.as_bytes())?;
                f.set_len(signature.len() as u64)
            });
    }
}

/// Records the mark after the connection closed (its checkpoint changes
/// the files) when they were sound just before: an [`Index`] field
/// declared after the connection, so it is dropped after it.
#[derive(Debug)]
pub(super) struct Closing {
    pub(super) mark: Mark,
    /// The files' signature just before the close, when they were sound.
    pub(super) sound: Option<String>,
}

impl Drop for Closing {
    fn drop(&mut self) {
        if let Some(before) = &self.sound {
            self.mark.record_since(before);
        }
    }
}

impl Drop for Index {
    fn drop(&mut self) {
        self.closing.sound = self.closing.mark.sound();
    }
}

impl Index {
    /// SQLite's integrity check (tables against their indexes too), when
    /// the files are not as last known sound; a failure is [`Unusable`].
    /// Whether it ran.
    pub(super) fn check_integrity(&self) -> Result<bool> {
        let mark = &self.closing.mark;
        if mark.sound().is_some() {
            return Ok(false);
        }
        let verdict: String = self
            .conn
            .query_row("PRAGMA integrity_check(1)", [], |r| r.get(0))?;
        if verdict != "ok" {
            return Err(Unusable(format!(
                "{} fails SQLite's integrity check: {verdict}",
                mark.index.display()
            ))
            .into());
        }
        mark.record_now(&mark.signature());
        Ok(true)
    }
}

/// Remove an unusable index file (and its log) so it can be built anew.
pub(super) fn discard(store: &StoreDir) -> Result<()> {
    let path = super::index_path(store);
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", p.display())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::row::sample;
    use super::*;

    fn checked(store: &StoreDir) -> (bool, bool) {
        let (_, s) = Index::open(store).unwrap();
        (s.checked, s.rebuilt)
    }

    #[test]
    fn worldlines_own_changes_keep_the_mark_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreDir::open(dir.path()).unwrap();
        let mut writer = Index::connect(&store).unwrap();
        writer.upsert_all(&[sample(1)]).unwrap();
        assert_eq!(checked(&store), (false, false), "a new index is sound");
        writer.upsert_all(&[sample(2)]).unwrap();
        drop(writer);
        assert_eq!(checked(&store), (false, false), "so are its own writes");

        let index = super::super::index_path(&store);
        // worldline's closes leave the log (decision 0388); another
        // program's checkpoint moves every row into the database file,
        // which the damage below then hits.
        rusqlite::Connection::open(&index)
            .unwrap()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        assert_eq!(checked(&store), (true, false), "a checkpoint from outside");
        let bytes = std::fs::read(&index).unwrap();
        std::fs::write(&index, &bytes).unwrap();
        assert_eq!(checked(&store), (true, false), "a change from outside");
        assert_eq!(checked(&store), (false, false), "checked once");

        let mut damaged = bytes;
        let half = damaged.len() / 2;
        damaged[half..].fill(0xfe);
        std::fs::write(&index, &damaged).unwrap();
        assert!(checked(&store).1, "damage is found and rebuilt");
        assert_eq!(checked(&store), (false, false), "a rebuilt index is sound");
    }
}
