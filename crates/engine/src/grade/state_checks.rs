//! The final-state assertions of `[[expect.state]]`: a row or a field of it
//! (named by key, or picked first/last among the rows a `where` matches),
//! a file, a row count and a sum, over rows in key order.

use super::{Assertion, Test, check, value_at, value_check};
use serde_json::{Value, json};
use worldline_case::case::conditions::{Conditions, conditions};
use worldline_case::case::expect::{Pick, StateCheck};
use worldline_case::path::JsonPath;
use worldline_case::world::compare::{self, Numbers};
use worldline_case::world::state::State;

/// The test of a file or row assertion (`count` is judged apart).
fn test_of(c: &StateCheck) -> Option<Test<'_>> {
    c.exists
        .map(Test::Exists)
        .or(c.absent.map(Test::Absent))
        .or(c.equals.as_ref().map(Test::Equals))
        .or(c.contains.as_ref().map(Test::Contains))
}

pub(super) fn state_check(c: &StateCheck, state: &State, numbers: Numbers) -> Assertion {
    let numbers = c.numbers.unwrap_or(numbers);
    if let Some(path) = &c.file {
        let data = state
            .files
            .get(path)
            .map(|d| Value::String(String::from_utf8_lossy(&d.to_bytes()).into_owned()));
        return value_check(
            &format!("file {path}"),
            data.as_ref(),
            test_of(c),
            c.ignore_case,
            numbers,
        );
    }
    let table = c.table.as_deref().unwrap_or("");
    if let Some(field) = &c.sum {
        return sum_check(c, table, field, state, numbers);
    }
    if let Some(pick) = c.row {
        return picked_row_check(c, table, pick, state, numbers);
    }
    if c.count.is_some() || c.key.is_none() {
        return count_check(c, table, state, numbers);
    }
    let key = c
        .key
        .as_ref()
        .map(worldline_case::canon::key_of)
        .unwrap_or_default();
    let row = state.row(table, &key);
    let (place, value) = match &c.field {
        Some(f) => (
            format!("{table}/{key}.{f}"),
            row.and_then(|r| value_at(r, JsonPath::parse(f).ok().as_ref())),
        ),
        None => (format!("{table}/{key}"), row),
    };
    value_check(&place, value, test_of(c), c.ignore_case, numbers)
}

/// The rows of `table` that match the check's `where`, with their keys,
/// in key order.
fn matching_rows<'a>(
    c: &StateCheck,
    table: &str,
    state: &'a State,
    numbers: Numbers,
) -> Vec<(&'a String, &'a Value)> {
    // Paths and operators are read once, not per row. Both were checked
    // when the case loaded; one that does not read matches no row.
    let filters: Vec<(Option<JsonPath>, Option<Conditions>)> = c
        .where_
        .iter()
        .map(|(k, v)| (JsonPath::parse(k).ok(), conditions(v).ok()))
        .collect();
    let holds = |row: &Value, path: Option<&JsonPath>, conds: &Option<Conditions>| {
        let field = value_at(row, path).unwrap_or(&Value::Null);
        conds
            .as_ref()
            .is_some_and(|cs| cs.hold(field, c.ignore_case, numbers))
    };
    state.tables.get(table).map_or(Vec::new(), |t| {
        t.in_key_order()
            .into_iter()
            .filter(|(_, r)| filters.iter().all(|(p, cs)| holds(r, p.as_ref(), cs)))
            .collect()
    })
}

/// The first or last row matching the check's `where` (in key order, or
/// by `order_by`), judged like a row named by key; none is an absent row.
fn picked_row_check(
    c: &StateCheck,
    table: &str,
    pick: Pick,
    state: &State,
    numbers: Numbers,
) -> Assertion {
    let mut rows = matching_rows(c, table, state, numbers);
    if let Some(by) = &c.order_by {
        let path = JsonPath::parse(by).ok();
        let at = |r: &Value| value_at(r, path.as_ref()).cloned().unwrap_or(Value::Null);
        // Stable: rows equal in `by` stay in key order.
        rows.sort_by(|(_, a), (_, b)| {
            compare::compare(&at(a), &at(b)).unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    let picked = match pick {
        Pick::First => rows.first(),
        Pick::Last => rows.last(),
    };
    let which = match pick {
        Pick::First => "first",
        Pick::Last => "last",
    };
    let order = c
        .order_by
        .as_ref()
        .map_or(String::new(), |by| format!(" by {by}"));
    let key = picked.map_or("none".to_string(), |(k, _)| k.to_string());
    let mut place = format!("{table} {which}{order}{} ({key})", where_text(c));
    let row = picked.map(|(_, r)| *r);
    let value = match &c.field {
        Some(f) => {
            place.push_str(&format!(".{f}"));
            row.and_then(|r| value_at(r, JsonPath::parse(f).ok().as_ref()))
        }
        None => row,
    };
    value_check(&place, value, test_of(c), c.ignore_case, numbers)
}

/// ` where {...}`, or nothing.
fn where_text(c: &StateCheck) -> String {
    if c.where_.is_empty() {
        String::new()
    } else {
        format!(" where {}", worldline_case::canon::to_string(&c.where_))
    }
}

/// `n` within the check's `min`/`max`, with what was expected.
fn in_bounds(c: &StateCheck, n: f64) -> (Value, bool) {
    let ok = c.min.is_none_or(|m| n >= m) && c.max.is_none_or(|m| n <= m);
    (json!({"min": c.min, "max": c.max}), ok)
}

/// How many rows of `table` match the check's `where`, against `count` or
/// `min`/`max`.
fn count_check(c: &StateCheck, table: &str, state: &State, numbers: Numbers) -> Assertion {
    let count = matching_rows(c, table, state, numbers).len() as u64;
    let what = format!("count {table}{}", where_text(c));
    match c.count {
        Some(n) => check(what, json!(n), json!(count), count == n),
        None => {
            let (expected, ok) = in_bounds(c, count as f64);
            check(format!("{what} in range"), expected, json!(count), ok)
        }
    }
}

/// The sum of a field over the matching rows, against `equals` or
/// `min`/`max`. Sums of decimals are compared to one part in 10^9, so
/// `0.1 + 0.2` equals `0.3`.
fn sum_check(
    c: &StateCheck,
    table: &str,
    field: &str,
    state: &State,
    numbers: Numbers,
) -> Assertion {
    let path = JsonPath::parse(field).ok();
    let sum: f64 = matching_rows(c, table, state, numbers)
        .into_iter()
        .filter_map(|(_, r)| value_at(r, path.as_ref())?.as_f64())
        .sum();
    let what = format!("sum {table}.{field}{}", where_text(c));
    match c.equals.as_ref() {
        Some(want) => {
            let ok = want
                .as_f64()
                .is_some_and(|w| (sum - w).abs() <= 1e-9 * w.abs().max(1.0));
            check(what, want.clone(), json!(sum), ok)
        }
        None => {
            let (expected, ok) = in_bounds(c, sum);
            check(format!("{what} in range"), expected, json!(sum), ok)
        }
    }
}
