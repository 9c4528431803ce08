//! The final-state assertions of `[[expect.state]]`: a row or a field of it
//! (named by key, or picked first/last among the rows a `where` matches),
//! a file, a row count and a sum, over rows in key order; text compared
//! with its line feeds removed when the check says `ignore_newlines`.

use super::{Assertion, Test, check, presence, value_at, value_check};
use serde_json::{Map, Value, json};
use worldline_case::case::conditions::{Conditions, conditions};
use worldline_case::case::expect::{Pick, StateCheck};
use worldline_case::path::JsonPath;
use worldline_case::world::compare::{self, Equality};
use worldline_case::world::state::State;

/// The test of a file or row assertion (`count` is judged apart), with
/// `expected` for the check's `equals` or `contains`, named under the
/// run's `rules` ([`presence`]).
fn test_of<'a>(c: &StateCheck, expected: Option<&'a Value>, rules: u32) -> Option<Test<'a>> {
    let test = presence(c.exists, c.absent, rules);
    test.or(match (expected, c.equals.is_some()) {
        (Some(v), true) if c.as_set => Some(Test::SameSet(v)),
        (Some(v), true) => Some(Test::Equals(v)),
        (Some(v), false) => Some(Test::Contains(v)),
        (None, _) => None,
    })
}

/// Judge `value` at `place` by the check's test; with `ignore_newlines`,
/// both texts without their line feeds.
fn judge(
    c: &StateCheck,
    place: &str,
    value: Option<&Value>,
    (eq, rules): (Equality, u32),
) -> Assertion {
    let expected = c.equals.as_ref().or(c.contains.as_ref());
    if !c.ignore_newlines {
        return value_check(place, value, test_of(c, expected, rules), c.ignore_case, eq);
    }
    let value = value.map(compare::without_newlines);
    let expected = expected.map(compare::without_newlines);
    value_check(
        &format!("{place} (newlines removed)"),
        value.as_ref(),
        test_of(c, expected.as_ref(), rules),
        c.ignore_case,
        eq,
    )
}

/// Judge check `c` on `state`, comparing as `eq` says and naming it under
/// the run's `rules`.
pub(super) fn state_check(
    c: &StateCheck,
    state: &State,
    (eq, rules): (Equality, u32),
) -> Assertion {
    let eq = eq.with_numbers(c.numbers);
    if let Some(path) = &c.file {
        let data = state
            .files
            .get(path)
            .map(|d| Value::String(String::from_utf8_lossy(&d.to_bytes()).into_owned()));
        return judge(c, &format!("file {path}"), data.as_ref(), (eq, rules));
    }
    let table = c.table.as_deref().unwrap_or("");
    if let Some(field) = &c.sum {
        return sum_check(c, table, field, state, eq);
    }
    if let Some(pick) = c.row {
        return picked_row_check(c, table, pick, state, (eq, rules));
    }
    if c.count.is_some() || c.key.is_none() {
        return count_check(c, table, state, eq);
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
    judge(c, &place, value, (eq, rules))
}

/// The rows of `table` that match the check's `where`, with their keys,
/// in key order.
fn matching_rows<'a>(
    c: &StateCheck,
    table: &str,
    state: &'a State,
    eq: Equality,
) -> Vec<(&'a String, &'a Value)> {
    // Paths and operators are read once, not per row. Both were checked
    // when the case loaded; one that does not read matches no row.
    let folded: Map<String, Value>;
    let where_ = if c.ignore_newlines {
        folded = c
            .where_
            .iter()
            .map(|(k, v)| (k.clone(), compare::without_newlines(v)))
            .collect();
        &folded
    } else {
        &c.where_
    };
    let filters: Vec<(Option<JsonPath>, Option<Conditions>)> = where_
        .iter()
        .map(|(k, v)| (JsonPath::parse(k).ok(), conditions(v).ok()))
        .collect();
    let holds = |row: &Value, path: Option<&JsonPath>, conds: &Option<Conditions>| {
        let field = value_at(row, path).unwrap_or(&Value::Null);
        let field = if c.ignore_newlines {
            &compare::without_newlines(field)
        } else {
            field
        };
        conds
            .as_ref()
            .is_some_and(|cs| cs.hold(field, c.ignore_case, eq))
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
    (eq, rules): (Equality, u32),
) -> Assertion {
    let mut rows = matching_rows(c, table, state, eq);
    if let Some(by) = &c.order_by {
        let path = JsonPath::parse(by).ok();
        let at = |r: &Value| value_at(r, path.as_ref()).cloned().unwrap_or(Value::Null);
        // Stable: rows equal in `by` stay in key order.
        rows.sort_by(|(_, a), (_, b)| {
            eq.order(&at(a), &at(b))
                .unwrap_or(std::cmp::Ordering::Equal)
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
    judge(c, &place, value, (eq, rules))
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
fn count_check(c: &StateCheck, table: &str, state: &State, eq: Equality) -> Assertion {
    let count = matching_rows(c, table, state, eq).len() as u64;
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
fn sum_check(c: &StateCheck, table: &str, field: &str, state: &State, eq: Equality) -> Assertion {
    let path = JsonPath::parse(field).ok();
    let rows = matching_rows(c, table, state, eq);
    let what = format!("sum {table}.{field}{}", where_text(c));
    // A row whose field is absent or null adds nothing (as SQL's SUM);
    // one that holds no number fails the check: a sum without it would
    // look like a total.
    let not_a_number = (rows.iter())
        .filter_map(|(k, r)| Some((k, value_at(r, path.as_ref())?)))
        .find(|(_, v)| !v.is_null() && v.as_f64().is_none());
    if let Some((key, v)) = not_a_number {
        let expected = c.equals.clone().unwrap_or_else(|| in_bounds(c, 0.0).0);
        let actual = format!("row {key}'s {field} is {v}, not a number");
        return check(what, expected, json!(actual), false);
    }
    // Folded from 0: `Sum for f64` starts from -0.0, which an empty sum
    // was reported as (`got -0.0`).
    let sum = (rows.iter())
        .filter_map(|(_, r)| value_at(r, path.as_ref())?.as_f64())
        .fold(0.0, |sum, x| sum + x);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A trash of two emails (AgentDojo workspace's injection tasks 6–10).
    fn trash() -> State {
        serde_json::from_value(json!({"tables": {"trash": {"key": "id_", "rows": {
            "34": {"id_": "34", "seq": 2, "body": "From Lily:\nHi Emma,\n\nthe plan.",
                   "attachments": ["3", "0", "3"]},
            "9": {"id_": "9", "seq": 1, "body": "other", "attachments": []},
        }}}, "files": {}}))
        .unwrap()
    }

    fn judged(check: &str) -> bool {
        let c: StateCheck = toml::from_str(check).unwrap();
        c.check(&[&"trash".to_string()]).unwrap();
        state_check(
            &c,
            &trash(),
            (Equality::default(), worldline_log::log::rules::CURRENT),
        )
        .passed
    }

    /// A `sum` over a row whose field holds no number fails, naming it
    /// (it was left out: the sum of the rest passed as the total); absent
    /// or null fields add nothing.
    #[test]
    fn a_sum_over_a_field_that_is_no_number_fails() {
        let state: State =
            serde_json::from_value(json!({"tables": {"orders": {"key": "id", "rows": {
            "7": {"id": 7, "total": 10},
            "8": {"id": 8, "total": "5"},
            "9": {"id": 9, "total": null},
            "10": {"id": 10},
        }}}, "files": {}}))
            .unwrap();
        let c: StateCheck = toml::from_str("table='orders'\nsum='total'\nequals=10").unwrap();
        let a = state_check(
            &c,
            &state,
            (Equality::default(), worldline_log::log::rules::CURRENT),
        );
        assert!(!a.passed);
        assert_eq!(a.actual, json!("row 8's total is \"5\", not a number"));
        let c: StateCheck =
            toml::from_str("table='orders'\nsum='total'\nequals=10\nwhere={id={ne=8}}").unwrap();
        assert!(
            state_check(
                &c,
                &state,
                (Equality::default(), worldline_log::log::rules::CURRENT)
            )
            .passed
        );
    }

    /// `ignore_newlines`: `body.replace("\n", "")` on both sides, in the
    /// judged value and in `where`.
    #[test]
    fn ignore_newlines_compares_text_without_line_feeds() {
        let body = "table='trash'\nkey='34'\nfield='body'\n";
        assert!(!judged(&format!("{body}contains='Hi Emma,the plan'")));
        assert!(judged(&format!(
            "{body}contains='Hi Emma,the plan'\nignore_newlines=true"
        )));
        assert!(judged(&format!(
            "{body}contains=\"Hi Emma,\\n\\nthe\\n plan\"\nignore_newlines=true"
        )));
        assert!(!judged(&format!(
            "{body}contains='Hi Emma, the plan'\nignore_newlines=true"
        )));
        let count = "table='trash'\nwhere={body={contains='Lily:Hi'}}\ncount=1";
        assert!(!judged(count));
        assert!(judged(&format!("{count}\nignore_newlines=true")));
        let picked = "table='trash'\nrow='last'\norder_by='seq'\nfield='body'";
        assert!(judged(&format!(
            "{picked}\nequals='From Lily:Hi Emma,the plan.'\nignore_newlines=true"
        )));
    }

    /// `as_set`: `set(email.attachments) == {...}`.
    #[test]
    fn as_set_compares_lists_in_any_order_and_number() {
        let at = "table='trash'\nkey='34'\nfield='attachments'\n";
        assert!(!judged(&format!("{at}equals=['0', '3']")));
        assert!(judged(&format!("{at}equals=['0', '3']\nas_set=true")));
        assert!(judged(&format!("{at}equals=['3', '0', '0']\nas_set=true")));
        assert!(!judged(&format!("{at}equals=['0', '3', '4']\nas_set=true")));
        assert!(!judged(&format!("{at}equals=['0']\nas_set=true")));
        let none = "table='trash'\nkey='9'\nfield='attachments'\n";
        assert!(judged(&format!("{none}equals=[]\nas_set=true")));
        assert!(!judged(
            "table='trash'\nkey='9'\nfield='body'\nequals=[]\nas_set=true"
        ));
    }
}
