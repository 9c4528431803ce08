//! Fuzz campaign reports kept in the store (`fuzz` on a database store),
//! raw and redacted, so every machine's UI lists and shows them. A viewer
//! is granted the redacted column only; which column to read is the
//! caller's (this crate knows no report).

use super::writer::Writer;
use super::{Database, DbError};

impl Database {
    /// Store campaign `id`'s report (`report`, and its redacted form).
    pub fn put_campaign(
        &self,
        id: &str,
        report: &str,
        redacted: &str,
        w: &Writer,
    ) -> Result<(), DbError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO campaigns (id, report, redacted, writer_user, writer_host)
                 VALUES ($1, $2, $3, $4, $5)",
                &[&id, &report, &redacted, &w.user, &w.host],
            )
            .map(|_| ())
        })
    }

    /// Every campaign's id and report (raw, or `redacted`), newest first.
    pub fn campaigns(&self, redacted: bool) -> Result<Vec<(String, String)>, DbError> {
        let column = column(redacted);
        self.with(|c| {
            let rows = c.query(
                &format!("SELECT id, {column} FROM campaigns ORDER BY id DESC"),
                &[],
            )?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    /// Campaign `id`'s report (raw, or `redacted`), if stored.
    pub fn campaign(&self, id: &str, redacted: bool) -> Result<Option<String>, DbError> {
        let column = column(redacted);
        self.with(|c| {
            Ok(c.query_opt(
                &format!("SELECT {column} FROM campaigns WHERE id = $1"),
                &[&id],
            )?
            .map(|r| r.get(0)))
        })
    }
}

fn column(redacted: bool) -> &'static str {
    match redacted {
        true => "redacted",
        false => "report",
    }
}
