//! The index against the bundle folder: bringing it up to date when
//! `runs/` changed since it last matched (bundles read, vanished ones
//! dropped, unfinished runs re-read when they grew), and comparing the two
//! without repairing anything (`index --check`).

use super::row::Row;
use super::schema::insert;
use super::{Check, Index, Sync};
use anyhow::{Context as _, Result};
use rusqlite::{OptionalExtension as _, params};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

impl Index {
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
    pub fn note_synced(&mut self) -> Result<()> {
        let (mtime, _) = folder_mtime(&self.runs_dir)?;
        self.set_synced(&mtime)
    }

    fn set_synced(&mut self, mtime: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO meta(key, value) VALUES('runs_mtime', ?1)
                 ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                params![mtime],
            )?;
            Ok(())
        })
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
        self.write(|tx| {
            // A row its writer recorded meanwhile is newer than ours.
            for r in &rows {
                insert(tx, r, "INSERT OR IGNORE")?;
            }
            for id in &gone {
                tx.execute("DELETE FROM runs WHERE id=?1", params![id])?;
            }
            Ok(())
        })?;
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
        self.read_again(&changed, Again::Unfinished)?;
        Ok(changed.len())
    }

    /// Re-read every row whose bundle's size is not the one recorded (a
    /// bundle edited or cut short in place, which leaves the folder's time
    /// as it was, so [`Index::sync`] does not look), and read the bundles
    /// the index lacks: `worldline index`, which looks at every bundle.
    /// Returns how many rows were read.
    pub fn refresh_changed(&mut self) -> Result<usize> {
        let check = self.check()?;
        let ids: Vec<String> = check.stale.into_iter().chain(check.missing).collect();
        self.read_again(&ids, Again::Every)
    }

    /// Replace the rows of `ids` with their bundles read again (a bundle
    /// deleted meanwhile loses its row); returns how many were read.
    fn read_again(&mut self, ids: &[String], which: Again) -> Result<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        let rows = read_rows(&self.runs_dir, ids)?;
        let (delete, verb) = match which {
            Again::Every => ("DELETE FROM runs WHERE id=?1", "INSERT OR REPLACE"),
            // A row its writer recorded while the bundle was read (the
            // run finished meanwhile) is newer than ours: kept.
            Again::Unfinished => (
                "DELETE FROM runs WHERE id=?1 AND outcome='incomplete'",
                "INSERT OR IGNORE",
            ),
        };
        self.write(|tx| {
            for id in ids {
                tx.execute(delete, params![id])?;
            }
            for r in &rows {
                insert(tx, r, verb)?;
            }
            Ok(())
        })?;
        Ok(rows.len())
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
                    // A link to nothing is a broken run of size 0, as its
                    // row was written (-1 here called it stale for ever).
                    let len = std::fs::metadata(self.runs_dir.join(format!("{id}.jsonl")))
                        .map_or(0, |m| m.len() as i64);
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

    /// [`check`](Self::check), and every other row compared with its bundle
    /// read again: a bundle edited in place at its size, or a row changed
    /// in the index file (a failed run's verdict made `passed`), is
    /// `stale` too (`index --check`, which compared sizes only and said
    /// both were consistent). Reads every bundle.
    pub fn check_rows(&self) -> Result<Check> {
        let mut c = self.check()?;
        let sized: BTreeSet<&String> = c.stale.iter().chain(&c.orphaned).collect();
        let rows: Vec<Row> = (self.all()?.into_iter())
            .filter(|r| !sized.contains(&r.run_id))
            .collect();
        let ids: Vec<String> = rows.iter().map(|r| r.run_id.clone()).collect();
        // Read as `index` reads them (a bundle gone meanwhile is skipped).
        let again: BTreeMap<String, Row> = (read_rows(&self.runs_dir, &ids)?.into_iter())
            .map(|r| (r.run_id.clone(), r))
            .collect();
        let changed = rows
            .into_iter()
            .filter(|r| again.get(&r.run_id).is_some_and(|a| a != r))
            .map(|r| r.run_id);
        c.stale.extend(changed);
        c.stale.sort();
        Ok(c)
    }
}

/// Which rows [`Index::read_again`] replaces.
enum Again {
    /// Every one named (`worldline index`).
    Every,
    /// Those still unfinished when the bundles have been read.
    Unfinished,
}

/// The run ids of the bundles in the folder (a `.jsonl` file whose name
/// is no run id is no run: worldline did not write it).
pub(super) fn list_bundles(dir: &Path) -> Result<BTreeSet<String>> {
    Ok(std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .filter(|id| crate::store::is_run_id(id))
                .map(String::from)
        })
        .collect())
}

/// Rows of the named bundles; a bundle deleted meanwhile is skipped.
pub(super) fn read_rows(dir: &Path, ids: &[String]) -> Result<Vec<Row>> {
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
