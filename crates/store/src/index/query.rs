//! Queries on the index: the filters of `worldline runs`, newest first;
//! counts, and rows read one at a time or from an offset (for pages).

use super::row::Row;
use super::{COLUMNS, Index, row_of};
use anyhow::Result;
use rusqlite::types::Value;
use worldline_log::log::Status;

/// Which runs to list. Empty fields do not filter.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    /// Run statuses (`completed`, `errored`, `trapped`, ..., `incomplete`,
    /// `broken`); `faulted` stands for every agent fault; `passed` and
    /// `failed` for the outcome.
    pub status: Vec<String>,
    /// `passed`, `failed` or `none` (not graded).
    pub grade: Option<String>,
    /// Case name; `*`, `?` and `[...]` are wildcards.
    pub case: Option<String>,
    /// World reference (`name@version`); wildcards as for `case`.
    pub world: Option<String>,
    /// A prefix of the agent's SHA-256.
    pub agent: Option<String>,
    /// Text the first failure's signature contains.
    pub signature: Option<String>,
    /// Unix seconds: created at or after.
    pub since: Option<i64>,
    /// Unix seconds: created before.
    pub until: Option<i64>,
    /// Forks of this run (its id).
    pub parent: Option<String>,
    pub limit: Option<u64>,
}

/// What [`Filter::status`] takes: the outcomes, `faulted`, every status a
/// run can end with, and the two of a row without a footer (`incomplete`)
/// or without a readable bundle (`broken`).
pub fn status_words() -> Vec<&'static str> {
    let mut words = vec!["passed", "failed", "faulted"];
    words.extend(Status::ALL.map(Status::as_str));
    words.extend(["incomplete", "broken"]);
    words
}

impl Filter {
    /// The SQL `WHERE` clause and its parameters.
    fn clause(&self) -> (String, Vec<Value>) {
        let mut params: Vec<Value> = Vec::new();
        // `cond` with its `?` bound to `v`.
        let mut bind = |cond: &str, v: Value| {
            params.push(v);
            cond.replace('?', &format!("?{}", params.len()))
        };
        let text = |s: &str| Value::Text(s.to_string());
        let mut conds = Vec::new();
        if !self.status.is_empty() {
            let mut alts = Vec::new();
            for s in &self.status {
                match s.as_str() {
                    "faulted" => alts.extend(
                        Status::ALL
                            .into_iter()
                            .filter(|f| f.is_fault())
                            .map(|f| bind("status = ?", text(f.as_str()))),
                    ),
                    "passed" | "failed" => alts.push(bind("outcome = ?", text(s))),
                    other => alts.push(bind("status = ?", text(other))),
                }
            }
            conds.push(format!("({})", alts.join(" OR ")));
        }
        match self.grade.as_deref() {
            None => {}
            Some("none") => conds.push("grade IS NULL".into()),
            Some(g) => conds.push(bind("grade = ?", text(g))),
        }
        if let Some(c) = &self.case {
            conds.push(bind("case_name GLOB ?", text(c)));
        }
        if let Some(w) = &self.world {
            conds.push(bind("world GLOB ?", text(w)));
        }
        if let Some(a) = &self.agent {
            conds.push(bind(
                "substr(agent, 1, length(?)) = ?",
                text(&a.to_ascii_lowercase()),
            ));
        }
        if let Some(s) = &self.signature {
            conds.push(bind("instr(signature, ?) > 0", text(s)));
        }
        if let Some(t) = self.since {
            conds.push(bind("created >= ?", Value::Integer(t)));
        }
        if let Some(t) = self.until {
            conds.push(bind("created < ?", Value::Integer(t)));
        }
        if let Some(p) = &self.parent {
            conds.push(bind("parent = ?", text(p)));
        }
        let clause = if conds.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conds.join(" AND "))
        };
        (clause, params)
    }
}

/// The order of every listing: newest first, ties by id (descending), so
/// the order is total and the same on every read.
pub(super) const NEWEST_FIRST: &str = "ORDER BY created DESC, id DESC";

impl Index {
    /// The runs `filter` selects, newest first (ties by id, descending).
    pub fn query(&self, filter: &Filter) -> Result<Vec<Row>> {
        self.select(filter, filter.limit, 0)
    }

    /// At most `limit` of the runs `filter` selects, newest first, after
    /// skipping `offset` of them. With an offset, the page's ids are found
    /// first (from an index alone when the filter's columns are in it) and
    /// only their rows are read.
    pub(super) fn select(
        &self,
        filter: &Filter,
        limit: Option<u64>,
        offset: u64,
    ) -> Result<Vec<Row>> {
        let (clause, params) = filter.clause();
        // SQLite's LIMIT and OFFSET are signed 64-bit: a larger count (all
        // of them, as far as any store goes) is the largest it takes.
        let most = |n: u64| n.min(i64::MAX as u64);
        let offset = most(offset);
        let limit = limit.map_or_else(String::new, |n| format!(" LIMIT {}", most(n)));
        let sql = if offset == 0 {
            format!("SELECT {COLUMNS} FROM runs {clause} {NEWEST_FIRST}{limit}")
        } else {
            let limit = if limit.is_empty() {
                " LIMIT -1".into()
            } else {
                limit
            };
            format!(
                "SELECT {COLUMNS} FROM runs WHERE id IN \
                 (SELECT id FROM runs {clause} {NEWEST_FIRST}{limit} OFFSET {offset}) {NEWEST_FIRST}"
            )
        };
        let mut stmt = self.conn().prepare(&sql)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(params), row_of)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// How many runs `filter` selects (its limit aside).
    pub fn count(&self, filter: &Filter) -> Result<u64> {
        let (clause, params) = filter.clause();
        let n: i64 = self.conn().query_row(
            &format!("SELECT count(*) FROM runs {clause}"),
            rusqlite::params_from_iter(params),
            |r| r.get(0),
        )?;
        Ok(n as u64)
    }

    /// Every run `filter` selects (its limit aside), newest first, one row
    /// at a time to `f`, which returns whether to go on; its error ends the
    /// reading.
    pub fn each(&self, filter: &Filter, mut f: impl FnMut(Row) -> Result<bool>) -> Result<()> {
        let (clause, params) = filter.clause();
        let mut stmt = self.conn().prepare(&format!(
            "SELECT {COLUMNS} FROM runs {clause} {NEWEST_FIRST}"
        ))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
        while let Some(r) = rows.next()? {
            if !f(row_of(r)?)? {
                break;
            }
        }
        Ok(())
    }

    /// Every row, oldest first (for retention).
    pub fn all(&self) -> Result<Vec<Row>> {
        let mut stmt = self
            .conn()
            .prepare(&format!("SELECT {COLUMNS} FROM runs ORDER BY created, id"))?;
        let rows = stmt.query_map([], row_of)?.collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }
}

/// Unix seconds of a `--since`/`--until` value: RFC 3339 (`2026-11-20T08:00:00Z`),
/// a date (`2026-11-20`, midnight UTC), or an age before `now` (`90m`,
/// `12h`, `7d`, `2w`).
pub fn parse_time(text: &str, now: i64) -> Result<i64, String> {
    let t = text.trim();
    if let Some(unit) = t.chars().last().filter(char::is_ascii_alphabetic)
        && let Ok(n) = t[..t.len() - 1].parse::<i64>()
    {
        let secs = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => {
                return Err(format!(
                    "unknown unit `{unit}` in `{t}` (use s, m, h, d or w)"
                ));
            }
        };
        return Ok(now - n * secs);
    }
    let full = if t.len() == 10 {
        format!("{t}T00:00:00Z")
    } else {
        t.to_string()
    };
    worldline_case::time::parse_rfc3339(&full)
        .map(|ns| ns.div_euclid(1_000_000_000) as i64)
        .ok_or_else(|| {
            format!("`{t}` is not a time: give 2026-11-20, 2026-11-20T08:00:00Z, or an age like 7d or 12h")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_dates_datetimes_or_ages() {
        let now = 1_795_253_832;
        assert_eq!(parse_time("7d", now), Ok(now - 7 * 86_400));
        assert_eq!(parse_time("90m", now), Ok(now - 5400));
        assert_eq!(parse_time("2026-11-21", now), Ok(1_795_219_200));
        assert_eq!(parse_time("2026-11-21T09:37:12Z", now), Ok(now));
        assert!(parse_time("7y", now).unwrap_err().contains("unknown unit"));
        assert!(
            parse_time("yesterday", now)
                .unwrap_err()
                .contains("not a time")
        );
    }
}
