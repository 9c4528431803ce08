//! The index's tables and how a [`Row`] is written to and read from them:
//! the schema (its version in `PRAGMA user_version`), the column list, and
//! the insert and decode of one row.

use super::row::Row;
use anyhow::Result;
use rusqlite::{Connection, params};
use std::path::Path;
use worldline_log::log::bundle;

/// The schema version (`PRAGMA user_version`): 2 added `rules`
/// ([`add_rules`]); another one is rebuilt.
pub(super) const VERSION: i64 = 2;

/// The tables and their indexes. `runs_created`, `runs_case` and
/// `runs_outcome` end in `created` (and, as every index of a table
/// `WITHOUT ROWID`, the key `id`), so a listing newest first reads them in
/// order and a page of ids is read from the index alone.
pub(super) const SCHEMA: &str = "
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
  chain_hash TEXT,
  rules INTEGER
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS runs_created ON runs(created, id);
CREATE INDEX IF NOT EXISTS runs_case ON runs(case_name, created);
CREATE INDEX IF NOT EXISTS runs_outcome ON runs(outcome, created);
CREATE INDEX IF NOT EXISTS runs_parent ON runs(parent);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
";

/// The columns [`Row`]s are read from, in [`row_of`]'s order.
pub(crate) const COLUMNS: &str = "id, created, case_name, world, agent, case_hash, world_hash, seed, status, grade, outcome, signature, events, parent, fork_event, tags, size, chain_hash, rules";

/// Add or replace the row of a run.
pub(super) fn upsert(conn: &Connection, r: &Row) -> Result<()> {
    insert(conn, r, "INSERT OR REPLACE")
}

/// Write a row with `verb` (`INSERT OR REPLACE`, `INSERT OR IGNORE`).
pub(super) fn insert(conn: &Connection, r: &Row, verb: &str) -> Result<()> {
    conn.execute(
        &format!(
            "{verb} INTO runs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
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
            r.rules,
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
        rules: r.get(18)?,
    })
}

/// Bring an index of version 1 (written before `rules` was a column) to
/// version 2 inside the opening transaction: the column added, each
/// row's rules read from its bundle's header (0 for a header without
/// them; none for a bundle gone or unreadable, as a broken row has), so
/// an index written before opens with every row whole, reading each
/// header once rather than every bundle whole as a rebuild would.
pub(super) fn add_rules(tx: &Connection, runs_dir: &Path) -> Result<()> {
    tx.execute_batch("ALTER TABLE runs ADD COLUMN rules INTEGER")?;
    let ids: Vec<String> = tx
        .prepare("SELECT id FROM runs WHERE status <> 'broken' ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut set = tx.prepare("UPDATE runs SET rules = ?1 WHERE id = ?2")?;
    for id in ids {
        let header = bundle::read_header(&runs_dir.join(format!("{id}.jsonl")));
        if let Ok(h) = header {
            set.execute(params![h.rules.unwrap_or(0), id])?;
        }
    }
    Ok(())
}
