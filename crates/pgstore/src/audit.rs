//! The audit of unredacted reads: one row per run read raw (who: the
//! database user and the UI token's name; when: the server's clock, as
//! metadata; which run; which command or route), appended by responders
//! and listed by `worldline audit`. A viewer can neither write nor read it.

use super::{Database, DbError};
use serde::Serialize;

/// One unredacted read.
#[derive(Debug, Clone, Serialize)]
pub struct Read {
    pub seq: i64,
    /// RFC 3339, UTC.
    pub at: String,
    pub db_user: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    pub command: String,
}

/// Which reads to list.
#[derive(Debug, Default)]
pub struct Filter {
    pub run: Option<String>,
    /// Unix seconds: reads at or after.
    pub since: Option<i64>,
}

impl Database {
    /// Note that `runs` (or none: a view of no one run) were read raw by
    /// `command`, through the UI token `token` when there is one. A read
    /// that cannot be noted must not happen: the caller stops on an error.
    pub fn audit(&self, token: Option<&str>, runs: &[&str], command: &str) -> Result<(), DbError> {
        let runs: Vec<Option<&str>> = match runs.is_empty() {
            true => vec![None],
            false => runs.iter().map(|r| Some(*r)).collect(),
        };
        self.with(|c| {
            c.execute(
                "INSERT INTO audit (token, run_id, command)
                 SELECT $1, r, $3 FROM unnest($2::text[]) WITH ORDINALITY AS t (r, k) ORDER BY k",
                &[&token, &runs, &command],
            )
            .map(|_| ())
        })
    }

    /// The reads `filter` selects, oldest first.
    pub fn audited(&self, filter: &Filter) -> Result<Vec<Read>, DbError> {
        self.with(|c| {
            let rows = c.query(
                "SELECT seq, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
                        db_user, token, run_id, command
                 FROM audit
                 WHERE ($1::text IS NULL OR run_id LIKE $1 || '%')
                   AND ($2::bigint IS NULL OR at >= to_timestamp($2::bigint::double precision))
                 ORDER BY seq",
                &[&filter.run, &filter.since],
            )?;
            Ok(rows
                .iter()
                .map(|r| Read {
                    seq: r.get(0),
                    at: r.get(1),
                    db_user: r.get(2),
                    token: r.get(3),
                    run_id: r.get(4),
                    command: r.get(5),
                })
                .collect())
        })
    }
}
