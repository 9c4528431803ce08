//! The run index: one SQLite row per bundle in `<store>/index.sqlite`, so
//! `runs` and `gc` answer from a query instead of reading every bundle.
//!
//! The bundles stay the truth; the index is a cache of them. Every command
//! that writes a run upserts its row ([`record`]). Readers ([`Index::open`])
//! never trust it blindly: a missing, unreadable or foreign-version file is
//! rebuilt from the bundles, and when the `runs/` folder changed since the
//! index last matched it (its modification time differs), the folder is
//! listed and the index reconciled (new bundles read, vanished ones
//! dropped); rows of runs that had not finished are re-read when their
//! file grew. Several processes share it through SQLite's write-ahead log
//! and a busy timeout. Damage is looked for: SQLite's integrity check runs
//! whenever the file changed since it last passed (`index.checked` keeps
//! the sizes and times it passed at), and a read that finds a value it
//! cannot decode or a malformed page makes [`Index::read`] rebuild the
//! index from the bundles and read again, saying so on stderr.

pub mod query;
pub mod row;

use crate::log::{Footer, Header};
use crate::store::StoreDir;
use anyhow::{Context as _, Result};
use row::Row;
use rusqlite::{Connection, ErrorCode, OptionalExtension as _, TransactionBehavior, params};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The index file inside a store.
pub const FILE: &str = crate::store::INDEX_FILE;

/// The schema version (`PRAGMA user_version`); another one is rebuilt.
const VERSION: i64 = 1;

/// How long a writer waits for another one before giving up.
const BUSY: Duration = Duration::from_secs(30);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  created INTEGER NOT NULL,
  case_name TEXT NOT NULL,
  world TEXT NOT NULL,
  agent TEXT NOT NULL,
  case_hash TEXT NOT NULL,
  world_hash TEXT NOT NULL,
  seed INTEGER NOT NULL,
  status TEXT NOT NULL,
  grade TEXT,
  outcome TEXT NOT NULL,
  signature TEXT,
  events INTEGER NOT NULL,
  parent TEXT,
  fork_event INTEGER,
  tags TEXT NOT NULL,
  size INTEGER NOT NULL,
  chain_hash TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS runs_created ON runs(created, id);
CREATE INDEX IF NOT EXISTS runs_case ON runs(case_name, created);
CREATE INDEX IF NOT EXISTS runs_outcome ON runs(outcome, created);
CREATE INDEX IF NOT EXISTS runs_parent ON runs(parent);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
";

/// The columns [`Row`]s are read from, in [`row_of`]'s order.
pub(crate) const COLUMNS: &str = "id, created, case_name, world, agent, case_hash, world_hash, seed, status, grade, outcome, signature, events, parent, fork_event, tags, size, chain_hash";

/// An open index.
pub struct Index {
    conn: Connection,
    runs_dir: PathBuf,
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

fn index_path(store: &StoreDir) -> PathBuf {
    store.root.join(FILE)
}

/// Whether an error means the file is not a usable index: SQLite finds
/// it malformed, or a value in it does not decode as the schema says.
fn is_unusable(e: &anyhow::Error) -> bool {
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

/// Where the sizes and times of the index files are kept when they last
/// passed SQLite's integrity check.
const CHECKED: &str = "index.checked";

/// The index file's and its log's sizes and modification times.
fn file_signature(store: &StoreDir) -> String {
    let path = index_path(store);
    ["", "-wal"]
        .iter()
        .map(|suffix| {
            std::fs::metadata(format!("{}{suffix}", path.display())).map_or_else(
                |_| "-".to_string(),
                |m| {
                    let t = m
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos());
                    format!("{}:{t}", m.len())
                },
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The file is an SQLite database, but not this index.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Unusable(String);

impl Index {
    /// Open the index as it is (created when missing), without looking at
    /// the bundle folder: for writers, which upsert their own row.
    pub fn connect(store: &StoreDir) -> Result<Index> {
        let path = index_path(store);
        let conn = Connection::open(&path)
            .with_context(|| format!("opening the run index {}", path.display()))?;
        conn.busy_timeout(BUSY)?;
        let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        let mut index = Index {
            conn,
            runs_dir: store.runs_dir(),
        };
        if index.version()? != VERSION {
            let tx = index
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            match version {
                0 => {
                    tx.execute_batch(SCHEMA)?;
                    tx.execute_batch(&format!("PRAGMA user_version={VERSION}"))?;
                }
                VERSION => {}
                other => {
                    return Err(Unusable(format!(
                        "{} has index version {other}, this worldline writes {VERSION}",
                        path.display()
                    ))
                    .into());
                }
            }
            tx.commit()?;
        }
        Ok(index)
    }

    fn version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// Open the index for reading: rebuilt when unusable (or when the
    /// integrity check fails), and brought up to date with the bundle folder
    /// (see the module comment).
    pub fn open(store: &StoreDir) -> Result<(Index, Sync)> {
        store.pull()?;
        let attempt = Index::connect(store).and_then(|mut i| {
            let s = i.sync()?;
            i.integrity_check(store)?;
            Ok((i, s))
        });
        match attempt {
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
    /// damaged is rebuilt from the bundles (a note on stderr says so) and
    /// read again.
    pub fn read<T>(store: &StoreDir, f: impl Fn(&Index) -> Result<T>) -> Result<(T, Sync)> {
        let (index, sync) = Index::open(store)?;
        let e = match f(&index) {
            Err(e) if is_unusable(&e) => e,
            other => return other.map(|t| (t, sync)),
        };
        drop(index);
        eprintln!("note: the run index is damaged ({e:#}); rebuilding it from the bundles");
        discard(store)?;
        let (index, mut sync) = Index::open(store)?;
        sync.rebuilt = true;
        Ok((f(&index)?, sync))
    }

    /// SQLite's integrity check (tables against their indexes too) of the file, when it changed since it last
    /// passed one; a failure is [`Unusable`].
    fn integrity_check(&self, store: &StoreDir) -> Result<()> {
        let checked = store.root.join(CHECKED);
        let signature = file_signature(store);
        if std::fs::read_to_string(&checked).is_ok_and(|s| s == signature) {
            return Ok(());
        }
        let verdict: String = self
            .conn
            .query_row("PRAGMA integrity_check(1)", [], |r| r.get(0))?;
        if verdict != "ok" {
            return Err(Unusable(format!(
                "{} fails SQLite's integrity check: {verdict}",
                index_path(store).display()
            ))
            .into());
        }
        // Best effort: without it the next reader checks again.
        let _ = crate::durable::write(&checked, signature.as_bytes());
        Ok(())
    }

    /// Drop every row and read every bundle again (`index --rebuild`).
    pub fn rebuild(store: &StoreDir) -> Result<(Index, Sync)> {
        let mut index = match Index::connect(store) {
            Ok(i) => i,
            Err(e) if is_unusable(&e) => {
                discard(store)?;
                Index::connect(store)?
            }
            Err(e) => return Err(e),
        };
        let ids: Vec<String> = list_bundles(&index.runs_dir)?.into_iter().collect();
        let rows = read_rows(&index.runs_dir, &ids)?;
        let tx = index
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let dropped = tx.execute("DELETE FROM runs", [])?;
        tx.execute("DELETE FROM meta", [])?;
        for r in &rows {
            upsert(&tx, r)?;
        }
        tx.commit()?;
        let s = Sync {
            read: rows.len(),
            dropped: dropped.saturating_sub(rows.len()),
            rebuilt: true,
        };
        Ok((index, s))
    }

    /// Bring the index up to date with the bundle folder.
    pub fn sync(&mut self) -> Result<Sync> {
        let mut s = Sync::default();
        let mtime = folder_mtime(&self.runs_dir)?;
        let recorded: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key='runs_mtime'", [], |r| {
                r.get(0)
            })
            .optional()?;
        if recorded.as_deref() != Some(mtime.0.as_str()) {
            let (read, dropped) = self.reconcile()?;
            s.read += read;
            s.dropped += dropped;
            // A change within the folder's timestamp granularity could
            // leave the time as it is: only a settled time is trusted.
            if mtime.1 {
                self.set_synced(&mtime.0)?;
            }
        }
        s.read += self.refresh_unfinished()?;
        Ok(s)
    }

    /// Record the folder's current modification time as matched by the
    /// index, so readers skip listing it until it changes.
    pub fn note_synced(&self) -> Result<()> {
        let (mtime, _) = folder_mtime(&self.runs_dir)?;
        self.set_synced(&mtime)
    }

    fn set_synced(&self, mtime: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES('runs_mtime', ?1)
             ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            params![mtime],
        )?;
        Ok(())
    }

    /// List the folder; read bundles the index lacks, drop rows whose
    /// bundle is gone.
    fn reconcile(&mut self) -> Result<(usize, usize)> {
        // Rows first: a run recorded while the folder is listed is then
        // read once more rather than dropped.
        let indexed = self.sizes()?;
        let on_disk = list_bundles(&self.runs_dir)?;
        let missing: Vec<String> = on_disk
            .iter()
            .filter(|id| !indexed.contains_key(*id))
            .cloned()
            .collect();
        let gone: Vec<&String> = indexed.keys().filter(|id| !on_disk.contains(*id)).collect();
        if missing.is_empty() && gone.is_empty() {
            return Ok((0, 0));
        }
        let rows = read_rows(&self.runs_dir, &missing)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // A row its writer recorded meanwhile is newer than ours.
        for r in &rows {
            insert(&tx, r, "INSERT OR IGNORE")?;
        }
        for id in &gone {
            tx.execute("DELETE FROM runs WHERE id=?1", params![id])?;
        }
        tx.commit()?;
        Ok((rows.len(), gone.len()))
    }

    /// Re-read rows of runs that had not finished when indexed, when their
    /// bundle changed size (they finished, or grew).
    fn refresh_unfinished(&mut self) -> Result<usize> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, size FROM runs WHERE outcome='incomplete'")?;
        let rows: Vec<(String, i64)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        drop(stmt);
        let changed: Vec<String> = rows
            .into_iter()
            .filter(|(id, size)| {
                std::fs::metadata(self.runs_dir.join(format!("{id}.jsonl")))
                    .map_or(true, |m| m.len() as i64 != *size)
            })
            .map(|(id, _)| id)
            .collect();
        if changed.is_empty() {
            return Ok(0);
        }
        let rows = read_rows(&self.runs_dir, &changed)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for id in &changed {
            tx.execute("DELETE FROM runs WHERE id=?1", params![id])?;
        }
        for r in &rows {
            upsert(&tx, r)?;
        }
        tx.commit()?;
        Ok(changed.len())
    }

    /// Every row's recorded bundle size, by id.
    fn sizes(&self) -> Result<BTreeMap<String, i64>> {
        let mut stmt = self.conn.prepare("SELECT id, size FROM runs")?;
        let map = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(map)
    }

    /// Compare every row with the folder, repairing nothing.
    pub fn check(&self) -> Result<Check> {
        let on_disk = list_bundles(&self.runs_dir)?;
        let indexed = self.sizes()?;
        let mut c = Check {
            indexed: indexed.len(),
            bundles: on_disk.len(),
            ..Check::default()
        };
        for id in &on_disk {
            match indexed.get(id) {
                None => c.missing.push(id.clone()),
                Some(size) => {
                    let len = std::fs::metadata(self.runs_dir.join(format!("{id}.jsonl")))
                        .map_or(-1, |m| m.len() as i64);
                    if len != *size {
                        c.stale.push(id.clone());
                    }
                }
            }
        }
        c.orphaned = indexed
            .keys()
            .filter(|id| !on_disk.contains(*id))
            .cloned()
            .collect();
        Ok(c)
    }

    /// Add or replace rows in one transaction.
    pub fn upsert_all(&mut self, rows: &[Row]) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for r in rows {
            upsert(&tx, r)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Drop the rows of runs whose bundles were deleted.
    pub fn remove(&mut self, ids: &[String]) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        for id in ids {
            tx.execute("DELETE FROM runs WHERE id=?1", params![id])?;
        }
        tx.commit()?;
        Ok(())
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
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
    static WRITERS: Mutex<BTreeMap<PathBuf, Index>> = Mutex::new(BTreeMap::new());
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

fn save(store: &StoreDir, run_id: &str, row: std::io::Result<Row>) {
    let result = row
        .map_err(anyhow::Error::from)
        .and_then(|r| save_row(store, &r));
    if let Err(e) = result {
        eprintln!(
            "warning: the run index was not updated for {run_id} ({e:#}); the next `worldline runs` repairs it"
        );
    }
}

fn upsert(conn: &Connection, r: &Row) -> Result<()> {
    insert(conn, r, "INSERT OR REPLACE")
}

fn insert(conn: &Connection, r: &Row, verb: &str) -> Result<()> {
    conn.execute(
        &format!(
            "{verb} INTO runs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
        ),
        params![
            r.run_id,
            r.created,
            r.case,
            r.world,
            r.agent,
            r.case_hash,
            r.world_hash,
            r.seed as i64,
            r.status,
            r.grade,
            r.outcome,
            r.signature,
            r.events as i64,
            r.parent,
            r.fork_event.map(|e| e as i64),
            r.tags.join(" "),
            r.size as i64,
            r.chain_hash,
        ],
    )?;
    Ok(())
}

/// A [`Row`] from a result row selected with [`COLUMNS`].
pub(crate) fn row_of(r: &rusqlite::Row) -> rusqlite::Result<Row> {
    let tags: String = r.get(15)?;
    Ok(Row {
        run_id: r.get(0)?,
        created: r.get(1)?,
        case: r.get(2)?,
        world: r.get(3)?,
        agent: r.get(4)?,
        case_hash: r.get(5)?,
        world_hash: r.get(6)?,
        seed: r.get::<_, i64>(7)? as u64,
        status: r.get(8)?,
        grade: r.get(9)?,
        outcome: r.get(10)?,
        signature: r.get(11)?,
        events: r.get::<_, i64>(12)? as u64,
        parent: r.get(13)?,
        fork_event: r.get::<_, Option<i64>>(14)?.map(|e| e as u64),
        tags: tags.split_whitespace().map(String::from).collect(),
        size: r.get::<_, i64>(16)? as u64,
        chain_hash: r.get(17)?,
    })
}

/// Remove an unusable index file (and its log) so it can be built anew.
fn discard(store: &StoreDir) -> Result<()> {
    let path = index_path(store);
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

/// The run ids of the bundles in the folder.
fn list_bundles(dir: &Path) -> Result<BTreeSet<String>> {
    Ok(std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .map(String::from)
        })
        .collect())
}

/// Rows of the named bundles; a bundle deleted meanwhile is skipped.
fn read_rows(dir: &Path, ids: &[String]) -> Result<Vec<Row>> {
    let mut rows = Vec::with_capacity(ids.len());
    for id in ids {
        match Row::read(id, &dir.join(format!("{id}.jsonl"))) {
            Ok(r) => rows.push(r),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("reading run {id}")),
        }
    }
    Ok(rows)
}

/// The folder's modification time (nanoseconds, as text), and whether it
/// is settled (more than two seconds old).
fn folder_mtime(dir: &Path) -> Result<(String, bool)> {
    let t = std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .with_context(|| format!("reading {}", dir.display()))?;
    let ns = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    let settled = SystemTime::now()
        .duration_since(t)
        .is_ok_and(|age| age > Duration::from_secs(2));
    Ok((ns.to_string(), settled))
}
