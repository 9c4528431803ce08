//! A partitioned suite's shard reports kept in the store (`test
//! --partition` on a database store), raw and redacted, so `merge --suite`
//! reads them from the database instead of report files. A shard run again
//! replaces its report.

use super::{Database, DbError};

/// One shard's report as stored.
pub struct ShardReport<'a> {
    pub suite: &'a str,
    /// `i/n` (or `count:i/n`...): the partition as `test` was given it.
    pub part: &'a str,
    /// The whole selection's hash (the same in every shard of one suite).
    pub selection: &'a str,
    /// The `test --json` document, and its redacted form.
    pub report: &'a str,
    pub redacted: &'a str,
}

impl Database {
    /// Store (or replace) a shard's report; the suite's reports of another
    /// partitioning (`count:i/2` when this is `count:1/3`: the suite run
    /// again on another number of machines) are removed with it, since no
    /// merge could take them with this one. Returns how many were.
    pub fn put_shard(&self, s: &ShardReport, w: &super::writer::Writer) -> Result<u64, DbError> {
        // `kind:i/n` → `kind:%/n`, the LIKE pattern of its partitioning.
        let partitioning = match (s.part.split_once(':'), s.part.rsplit_once('/')) {
            (Some((kind, _)), Some((_, n))) => format!("{kind}:%/{n}"),
            _ => s.part.to_string(),
        };
        self.with(|c| {
            let mut tx = c.transaction()?;
            let gone = tx.execute(
                "DELETE FROM shard_reports WHERE suite = $1 AND part NOT LIKE $2",
                &[&s.suite, &partitioning],
            )?;
            tx.execute(
                "INSERT INTO shard_reports (suite, part, selection, report, redacted, writer_user, writer_host)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (suite, part) DO UPDATE SET selection = excluded.selection,
                     report = excluded.report, redacted = excluded.redacted,
                     writer_user = excluded.writer_user, writer_host = excluded.writer_host,
                     stored_at = now()",
                &[&s.suite, &s.part, &s.selection, &s.report, &s.redacted, &w.user, &w.host],
            )?;
            tx.commit()?;
            Ok(gone)
        })
    }

    /// The reports of suite `suite`'s shards, by partition: raw ones, or
    /// (`redacted`) their redacted form.
    pub fn shards(&self, suite: &str, redacted: bool) -> Result<Vec<(String, String)>, DbError> {
        let column = if redacted { "redacted" } else { "report" };
        self.with(|c| {
            let rows = c.query(
                &format!("SELECT part, {column} FROM shard_reports WHERE suite = $1 ORDER BY part"),
                &[&suite],
            )?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }
}
