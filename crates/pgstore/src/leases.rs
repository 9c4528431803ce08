//! What keeps gc on one machine from removing what another uses
//! (docs/decisions/0255): the database's own locks and tables, as
//! `store/lease.rs` (engine) does with files within one machine.
//!
//! - gc's gate is the transaction-level advisory lock
//!   (`hashtext('<schema>')`, 0): [`Database::hold`] takes it shared,
//!   [`Database::collect`] exclusively, so gc's removals see every name
//!   held before them.
//! - What a stored run needs is kept by the database itself:
//!   `run_objects` references `objects`, so a run stored while gc removed
//!   one of its objects is refused (`put_run` then sends the object with
//!   it), and a gc pass whose removal meets a run stored meanwhile is
//!   refused and tries again.
//! - A process's lease is its rows in `leases` under a holder number,
//!   alive while its connection holds the session-level advisory lock
//!   (`hashtext('<schema>')`, holder). A gc pass that can take that lock
//!   knows the holder has ended and removes its rows.
//! - gc removes a run only when no live holder names it and no remaining
//!   run forks from it, and an object only when no remaining run needs it
//!   (`run_objects`) and no live holder names it.

use super::roles::Role;
use super::{Database, DbError};
use postgres::Transaction;
use std::collections::BTreeSet;

/// This process's lease: its holder number once it holds a name, and the
/// names it holds.
#[derive(Default)]
pub(crate) struct Lease {
    holder: Option<i32>,
    /// The generation of the connection whose session lock keeps the
    /// holder alive: the lock went with an earlier connection.
    generation: u64,
    held: BTreeSet<String>,
}

/// What [`Database::collect`] removed, and which of the runs asked for it
/// kept.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Collected {
    /// Runs removed (their lines, copies and `run_objects` with them).
    pub runs: Vec<String>,
    /// Runs asked for that stay: a live process holds them, or a run
    /// stored meanwhile forks from them.
    pub runs_kept: Vec<String>,
    /// Objects removed.
    pub objects: Vec<String>,
}

/// Take gc's gate shared until the transaction ends.
pub(crate) fn enter_shared(tx: &mut Transaction, schema: &str) -> Result<(), postgres::Error> {
    tx.execute(
        "SELECT pg_advisory_xact_lock_shared(hashtext($1), 0)",
        &[&schema],
    )
    .map(|_| ())
}

impl Database {
    /// Hold `names` (run ids, object hashes) until this process's
    /// connection ends: no gc pass that begins after this returns removes
    /// them. Returns those of `names` that are runs gc removed already
    /// (a working folder may still have their bundle). A viewer holds
    /// nothing (it cannot fork, replay or store a run).
    pub fn hold(&self, names: &[&str]) -> Result<Vec<String>, DbError> {
        if self.role == Role::Viewer {
            return Ok(Vec::new());
        }
        let mut lease = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        let new: Vec<String> = names
            .iter()
            .filter(|n| !n.is_empty() && !lease.held.contains(**n))
            .map(|n| n.to_string())
            .collect::<BTreeSet<String>>()
            .into_iter()
            .collect();
        if new.is_empty() {
            return Ok(Vec::new());
        }
        let schema = &self.url.schema;
        let (holder, generation, gone) = self.with_generation(|c, generation| {
            let mut tx = c.transaction()?;
            enter_shared(&mut tx, schema)?;
            // The connection was made again since the lease was taken (the
            // server restarted): its session lock is gone, so every name
            // is held again under a new holder.
            let (holder, asked) = match lease.holder {
                Some(h) if lease.generation == generation => (h, new.clone()),
                Some(_) => {
                    let all: BTreeSet<String> = lease.held.iter().chain(&new).cloned().collect();
                    (new_holder(&mut tx, schema)?, all.into_iter().collect())
                }
                None => (new_holder(&mut tx, schema)?, new.clone()),
            };
            let gone: Vec<String> = tx
                .query(
                    "WITH held AS (
                         INSERT INTO leases (holder, name) SELECT $1, unnest($2::text[])
                         ON CONFLICT DO NOTHING
                     )
                     SELECT n FROM unnest($2::text[]) AS n
                     WHERE EXISTS (SELECT 1 FROM removed WHERE run_id = n)
                       AND NOT EXISTS (SELECT 1 FROM runs WHERE id = n) ORDER BY n",
                    &[&holder, &asked],
                )?
                .iter()
                .map(|r| r.get::<_, String>(0))
                .filter(|n| new.binary_search(n).is_ok())
                .collect();
            tx.commit()?;
            Ok((holder, generation, gone))
        })?;
        lease.holder = Some(holder);
        lease.generation = generation;
        lease.held.extend(new);
        Ok(gone)
    }

    /// gc's removals, in one transaction holding its gate exclusively:
    /// the leases of ended holders are removed; then the runs of `runs`
    /// no live holder names and no remaining run forks from (however far
    /// down), noted in `removed`; then the objects of `objects` stored more
    /// than `grace_s` seconds ago that no remaining run needs and no live
    /// holder names.
    pub fn collect(
        &self,
        runs: &[String],
        objects: &[String],
        grace_s: i64,
    ) -> Result<Collected, DbError> {
        self.gather(runs, objects, grace_s, true)
    }

    /// What [`collect`](Self::collect) would remove now, found by doing it
    /// and rolling it back (`gc --dry-run`): the same gate, the same
    /// queries, nothing changed.
    pub fn would_collect(
        &self,
        runs: &[String],
        objects: &[String],
        grace_s: i64,
    ) -> Result<Collected, DbError> {
        self.gather(runs, objects, grace_s, false)
    }

    fn gather(
        &self,
        runs: &[String],
        objects: &[String],
        grace_s: i64,
        apply: bool,
    ) -> Result<Collected, DbError> {
        let schema = &self.url.schema;
        let own = self
            .lease
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .holder
            .unwrap_or(0);
        // A run stored while the pass ran that needs an object it removes
        // makes the server refuse the pass (`run_objects` references
        // `objects`): it is made again, and then sees that run.
        self.with(|c| {
            let mut tries = 0;
            loop {
                match gather_in(c, schema, own, runs, objects, grace_s, apply) {
                    Err(e)
                        if e.code() == Some(&postgres::error::SqlState::FOREIGN_KEY_VIOLATION)
                            && tries < 5 =>
                    {
                        tries += 1;
                    }
                    done => return done,
                }
            }
        })
    }
}

/// [`Database::gather`]'s transaction, once.
fn gather_in(
    c: &mut postgres::Client,
    schema: &str,
    own: i32,
    runs: &[String],
    objects: &[String],
    grace_s: i64,
    apply: bool,
) -> Result<Collected, postgres::Error> {
    let mut tx = c.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1), 0)", &[&schema])?;
    reap_ended(&mut tx, schema, own)?;
    let mut removed: Vec<String> = tx
                .query(
                    "WITH RECURSIVE asked AS (
                         SELECT id FROM runs WHERE id = ANY($1)
                           AND NOT EXISTS (SELECT 1 FROM leases WHERE name = id)
                     ), ancestors (id) AS (
                         SELECT r.parent FROM runs r
                         WHERE r.parent IS NOT NULL AND NOT EXISTS (SELECT 1 FROM asked a WHERE a.id = r.id)
                         UNION
                         SELECT r.parent FROM runs r JOIN ancestors x ON r.id = x.id
                         WHERE r.parent IS NOT NULL
                     ), gone AS (
                         SELECT id FROM asked WHERE id NOT IN (SELECT id FROM ancestors)
                     ), noted AS (
                         INSERT INTO removed (run_id) SELECT id FROM gone ORDER BY id
                     )
                     DELETE FROM runs WHERE id IN (SELECT id FROM gone) RETURNING id",
                    &[&runs],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
    removed.sort();
    let runs_kept: Vec<String> = tx
        .query(
            "SELECT n FROM unnest($1::text[]) AS n
                     WHERE EXISTS (SELECT 1 FROM runs WHERE id = n)
                        OR EXISTS (SELECT 1 FROM leases WHERE name = n)
                     ORDER BY n",
            &[&runs],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut objects_gone: Vec<String> = tx
        .query(
            "DELETE FROM objects o WHERE o.sha256 = ANY($1)
                       AND o.stored_at < now() - make_interval(secs => $2)
                       AND NOT EXISTS (SELECT 1 FROM run_objects ro WHERE ro.sha256 = o.sha256)
                       AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.name = o.sha256)
                     RETURNING o.sha256",
            &[&objects, &(grace_s as f64)],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    objects_gone.sort();
    match apply {
        true => tx.commit()?,
        false => tx.rollback()?,
    }
    Ok(Collected {
        runs: removed,
        runs_kept,
        objects: objects_gone,
    })
}

/// A holder number no live process uses, with its session lock taken (a
/// number the sequence wrapped onto a live holder's is skipped).
fn new_holder(tx: &mut Transaction, schema: &str) -> Result<i32, postgres::Error> {
    loop {
        let row = tx.query_one(
            "SELECT h, pg_try_advisory_lock(hashtext($1), h)
             FROM (SELECT nextval('lease_holders')::integer AS h) AS s",
            &[&schema],
        )?;
        if row.get::<_, bool>(1) {
            return Ok(row.get(0));
        }
    }
}

/// Remove the leases of holders that have ended (their session lock can
/// be taken), other than this process's own (`own`).
fn reap_ended(tx: &mut Transaction, schema: &str, own: i32) -> Result<(), postgres::Error> {
    let ended: Vec<i32> = tx
        .query(
            "SELECT h FROM (SELECT DISTINCT holder AS h FROM leases WHERE holder <> $2) AS d
             WHERE pg_try_advisory_lock(hashtext($1), h)",
            &[&schema, &own],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if ended.is_empty() {
        return Ok(());
    }
    tx.execute("DELETE FROM leases WHERE holder = ANY($1)", &[&ended])?;
    tx.query(
        "SELECT pg_advisory_unlock(hashtext($1), h) FROM unnest($2::integer[]) AS h",
        &[&schema, &ended],
    )?;
    Ok(())
}
