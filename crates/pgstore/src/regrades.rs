//! Grades `grade --rejudge` made of a stored run, numbered 1, 2, ... per
//! run, with who made each; the newest is what a later re-grade on any
//! machine reads as the recorded one. They go with their run (gc).

use super::writer::Writer;
use super::{Database, DbError};

impl Database {
    /// Keep `grade` (a JSON text) as run `run_id`'s next re-grade; its
    /// number, or `None` when the database holds no such run. Two machines
    /// re-grading one run at once take the run's row in turn.
    pub fn put_regrade(
        &self,
        run_id: &str,
        grade: &str,
        w: &Writer,
    ) -> Result<Option<i32>, DbError> {
        self.with(|c| {
            let mut tx = c.transaction()?;
            if tx
                .query_opt("SELECT 1 FROM runs WHERE id = $1 FOR UPDATE", &[&run_id])?
                .is_none()
            {
                return Ok(None);
            }
            let n: i32 = tx
                .query_one(
                    "INSERT INTO regrades (run_id, n, grade, writer_user, writer_host)
                     SELECT $1, coalesce(max(n), 0) + 1, $2::text::json, $3, $4
                     FROM regrades WHERE run_id = $1
                     RETURNING n",
                    &[&run_id, &grade, &w.user, &w.host],
                )?
                .get(0);
            tx.commit()?;
            Ok(Some(n))
        })
    }

    /// Run `run_id`'s re-grades (JSON texts), the newest first.
    pub fn regrades(&self, run_id: &str) -> Result<Vec<String>, DbError> {
        self.with(|c| {
            Ok(c.query(
                "SELECT grade::text FROM regrades WHERE run_id = $1 ORDER BY n DESC",
                &[&run_id],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect())
        })
    }
}
