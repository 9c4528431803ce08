//! The store's shared redaction policy and each run's redacted copy (what a
//! viewer reads). The policy and its salt are one row that a responder
//! reads and sets; setting it makes every copy (and every campaign
//! report's redacted form) again in the same transaction, and a writer stores a run's copy in the transaction that
//! stores the run, under the policy it read (a policy changed meanwhile
//! sends the writer back to read it again). How a copy is made is the
//! caller's (this crate knows no run).

use super::{Database, DbError};
use postgres::GenericClient;

/// The policy a store redacts with: a `redact.toml` text, its SHA-256, and
/// the store's secret salt.
#[derive(Debug, Clone, PartialEq)]
pub struct Shared {
    pub policy: String,
    pub policy_sha256: String,
    pub salt: String,
}

/// Makes a run's redacted copy from its raw lines (an error names why not).
pub type Remake<'a> = dyn FnMut(&str, &[String]) -> Result<Vec<String>, String> + 'a;

/// Makes a kept JSON document's (a campaign or shard report's) redacted
/// form from its raw text.
pub type Redo<'a> = dyn FnMut(&str) -> Result<String, String> + 'a;

/// Runs whose copies are made again in one batch.
const BATCH: usize = 200;

impl Database {
    /// The store's policy and salt (a responder's read).
    pub fn shared_policy(&self) -> Result<Shared, DbError> {
        self.with(|c| {
            let r = c.query_one(
                "SELECT policy, policy_sha256, salt FROM redaction WHERE id = 1",
                &[],
            )?;
            Ok(Shared {
                policy: r.get(0),
                policy_sha256: r.get(1),
                salt: r.get(2),
            })
        })
    }

    /// The hash of each case and of each world the store's runs ran,
    /// each once.
    pub fn run_inputs(&self) -> Result<(Vec<String>, Vec<String>), DbError> {
        self.with(|c| {
            let of = |c: &mut postgres::Client, column: &str| {
                let sql = format!("SELECT DISTINCT {column} FROM runs ORDER BY 1");
                let rows = c.query(&sql, &[])?;
                Ok::<Vec<String>, postgres::Error>(rows.iter().map(|r| r.get(0)).collect())
            };
            Ok((of(c, "case_hash")?, of(c, "world_hash")?))
        })
    }

    /// Set the store's policy (`policy` hashing to `sha256`) and make the
    /// copy of every run, and the redacted form of every campaign report
    /// and shard report (`redo`), again under it, in one transaction; how
    /// many run copies were made.
    pub fn set_policy(
        &self,
        policy: &str,
        sha256: &str,
        remake: &mut Remake,
        redo: &mut Redo,
    ) -> Result<usize, DbError> {
        self.remake_where(Some((policy, sha256, redo)), remake)
    }

    /// Make the copies of runs that have none under the store's current
    /// policy (runs stored before copies were kept); how many.
    pub fn fill_copies(&self, remake: &mut Remake) -> Result<usize, DbError> {
        self.remake_where(None, remake)
    }

    fn remake_where(
        &self,
        set: Option<(&str, &str, &mut Redo)>,
        remake: &mut Remake,
    ) -> Result<usize, DbError> {
        let shown = self.url.shown.clone();
        let mut refused: Option<String> = None;
        let made = self.with(|c| {
            let mut tx = c.transaction()?;
            let mut sha: String = tx
                .query_one(
                    "SELECT policy_sha256 FROM redaction WHERE id = 1 FOR UPDATE",
                    &[],
                )?
                .get(0);
            if let Some((policy, new_sha, redo)) = set {
                tx.execute(
                    "UPDATE redaction SET policy = $1, policy_sha256 = $2, set_by = session_user,
                         set_at = now() WHERE id = 1",
                    &[&policy, &new_sha],
                )?;
                sha = new_sha.to_string();
                for kept in KEPT_REPORTS {
                    if let Some(m) = redo_reports(&mut tx, &kept, redo)? {
                        refused = Some(m);
                        return Ok(0);
                    }
                }
            }
            let ids: Vec<String> = tx
                .query(
                    "SELECT id FROM runs WHERE copy_policy IS DISTINCT FROM $1 ORDER BY id",
                    &[&sha],
                )?
                .iter()
                .map(|r| r.get(0))
                .collect();
            for chunk in ids.chunks(BATCH) {
                for (id, lines) in lines_in(&mut tx, "frames", chunk)? {
                    let copy = match remake(&id, &lines) {
                        Ok(copy) => copy,
                        Err(m) => {
                            refused = Some(format!("run {id}: {m}"));
                            return Ok(0);
                        }
                    };
                    let copy: Vec<&str> = copy.iter().map(String::as_str).collect();
                    put_copy(&mut tx, &id, &sha, &copy)?;
                }
            }
            tx.commit()?;
            Ok(ids.len())
        })?;
        match refused {
            Some(message) => Err(DbError::refused(&shown, message)),
            None => Ok(made),
        }
    }
}

/// A table of reports kept with a redacted form made under the policy:
/// how its rows are read (keys as a `text[]`, then the raw report), how
/// one is updated (`$1` the keys, `$2` the redacted form), and how a
/// refusal names one.
struct KeptReports {
    select: &'static str,
    update: &'static str,
    name: fn(&[String]) -> String,
}

/// Campaign reports (0250) and shard reports (0249).
const KEPT_REPORTS: [KeptReports; 2] = [
    KeptReports {
        select: "SELECT ARRAY[id], report FROM campaigns ORDER BY id",
        update: "UPDATE campaigns SET redacted = $2 WHERE id = ($1::text[])[1]",
        name: |k| format!("campaign {}", k[0]),
    },
    KeptReports {
        select: "SELECT ARRAY[suite, part], report FROM shard_reports ORDER BY suite, part",
        update: "UPDATE shard_reports SET redacted = $2
                 WHERE suite = ($1::text[])[1] AND part = ($1::text[])[2]",
        name: |k| format!("suite {}'s shard {}", k[0], k[1]),
    },
];

/// Make the redacted form of every report of `kept` again with `redo`;
/// the first one `redo` refuses, named, and nothing more done.
fn redo_reports(
    tx: &mut postgres::Transaction,
    kept: &KeptReports,
    redo: &mut Redo,
) -> Result<Option<String>, postgres::Error> {
    for r in &tx.query(kept.select, &[])? {
        let (keys, report): (Vec<String>, String) = (r.get(0), r.get(1));
        match redo(&report) {
            Ok(redacted) => {
                tx.execute(kept.update, &[&keys, &redacted])?;
            }
            Err(m) => return Ok(Some(format!("{}: {m}", (kept.name)(&keys)))),
        }
    }
    Ok(None)
}

/// The lines of `ids` in `table` (`frames` or `redacted_frames`), by run.
pub(crate) fn lines_in(
    c: &mut impl GenericClient,
    table: &str,
    ids: &[String],
) -> Result<std::collections::BTreeMap<String, Vec<String>>, postgres::Error> {
    let rows = c.query(
        &format!("SELECT run_id, line FROM {table} WHERE run_id = ANY($1) ORDER BY run_id, n"),
        &[&ids],
    )?;
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for r in &rows {
        out.entry(r.get(0)).or_default().push(r.get(1));
    }
    Ok(out)
}

/// Replace run `id`'s copy with `lines` made under policy `sha`, and give
/// it the next copy sequence number (so viewers pull it again).
pub(crate) fn put_copy(
    c: &mut impl GenericClient,
    id: &str,
    sha: &str,
    lines: &[&str],
) -> Result<(), postgres::Error> {
    let ns: Vec<i32> = (0..lines.len() as i32).collect();
    c.execute("DELETE FROM redacted_frames WHERE run_id = $1", &[&id])?;
    c.execute(
        "INSERT INTO redacted_frames (run_id, n, line)
         SELECT $1, t.n, t.line FROM unnest($2::integer[], $3::text[]) AS t (n, line)",
        &[&id, &ns, &lines],
    )?;
    c.execute(
        "UPDATE runs SET copy_policy = $2, copy_seq = nextval('copy_seq') WHERE id = $1",
        &[&id, &sha],
    )?;
    Ok(())
}
