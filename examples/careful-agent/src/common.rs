//! Helpers shared by both worlds: time, reads with one retry, writes that
//! are checked before they are repeated.

use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};
use worldline_guest::{Error, ErrorKind, tools, trace};

/// How old a list may be before it is read again.
pub const MAX_AGE_S: i64 = 120;

/// The virtual clock, in seconds since the Unix epoch.
pub fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Seconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SS[.frac]Z`.
pub fn parse_ts(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' || !text.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from civil (proleptic Gregorian), after H. Hinnant.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

/// The timestamp field `field` of a row, in seconds (0 when absent).
pub fn ts(row: &Value, field: &str) -> i64 {
    row[field].as_str().and_then(parse_ts).unwrap_or(0)
}

/// A JSON string's text, for messages (`?` when it is not a string).
pub fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("?")
}

/// True when a wrapped list's `as_of` is too old (or missing).
pub fn is_stale(answer: &Value) -> bool {
    match answer["as_of"].as_str().and_then(parse_ts) {
        Some(as_of) => now_s() - as_of > MAX_AGE_S,
        None => true,
    }
}

pub fn call(name: &str, args: Value) -> Result<Value, Error> {
    tools::call(name, &args)
}

/// A read: retried once when it times out or the service is unavailable.
pub fn read(name: &str, args: Value) -> Result<Value, Error> {
    match call(name, args.clone()) {
        Err(e) if matches!(e.kind, ErrorKind::Timeout | ErrorKind::Unavailable) => {
            trace::note(
                "retry",
                &format!("{name} failed ({e}); reads are safe to retry once"),
            );
            call(name, args)
        }
        other => other,
    }
}

/// How a write ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Wrote {
    /// The call answered with the new row.
    Done(Value),
    /// The call failed, but a check shows the change is there.
    Landed,
    /// Denied: not repeated, and nothing is done in its place.
    Denied,
    /// Failed and (after at most one checked retry) still not done.
    Failed(String),
}

impl Wrote {
    pub fn ok(&self) -> bool {
        matches!(self, Wrote::Done(_) | Wrote::Landed)
    }

    pub fn label(&self) -> &'static str {
        match self {
            Wrote::Done(_) => "done",
            Wrote::Landed => "done (reply lost, checked)",
            Wrote::Denied => "denied",
            Wrote::Failed(_) => "failed",
        }
    }
}

/// A write that is never repeated blindly. After a failure, `landed` looks
/// at the world (with a read) to see whether the change is there anyway;
/// only when it is not is the write tried once more.
pub fn write(name: &str, args: Value, landed: impl Fn() -> bool) -> Wrote {
    for attempt in 1..=2 {
        match call(name, args.clone()) {
            Ok(row) => return Wrote::Done(row),
            Err(e) if e.kind == ErrorKind::Denied => {
                trace::note(
                    "denied",
                    &format!("{name} was denied ({e}); not repeating it"),
                );
                return Wrote::Denied;
            }
            Err(e) => {
                trace::note(
                    "check",
                    &format!("{name} failed ({e}); checking whether it landed"),
                );
                if landed() {
                    trace::note(
                        "check",
                        &format!("{name} landed despite the error; not repeating it"),
                    );
                    return Wrote::Landed;
                }
                if attempt == 2 || matches!(e.kind, ErrorKind::InvalidArgs | ErrorKind::NotFound) {
                    return Wrote::Failed(e.to_string());
                }
                trace::note("retry", &format!("{name} did not land; trying once more"));
            }
        }
    }
    unreachable!()
}

/// Keep the rows of `list` plus `extra` (if not already there), newest
/// first by `field`.
pub fn merge_newest_first(mut list: Vec<Value>, extra: Option<Value>, field: &str) -> Vec<Value> {
    if let Some(row) = extra {
        list.retain(|r| r["id"] != row["id"]);
        list.push(row);
    }
    list.sort_by_key(|r| std::cmp::Reverse(ts(r, field)));
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc3339() {
        assert_eq!(parse_ts("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_ts("2026-03-01T12:00:00Z"), Some(1_772_366_400));
        assert_eq!(parse_ts("2026-03-01T12:00:00.5Z"), Some(1_772_366_400));
        assert_eq!(parse_ts("yesterday"), None);
    }
}
