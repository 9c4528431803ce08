//! The grader: judges a run on the world's final state, its calls and its
//! output against a case's `[expect]`. It needs only the recorded events and
//! the states, so an old run can be re-graded against a newer case without
//! re-running the agent.

pub mod conversation;
pub mod diff;
pub mod gold;
pub mod regrade;
pub mod signature;
pub mod verdict;

use crate::canon::same;
use crate::case::expect::{CallCheck, Conditions, Expect, OutputCheck, StateCheck, conditions};
use crate::log::{Effect, Event, Status};
use crate::path::JsonPath;
use crate::world::compare::Op;
use crate::world::glob_match;
use crate::world::state::State;
use diff::StateDiff;
use serde::Serialize;
use serde_json::{Value, json};

/// One assertion's result.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Assertion {
    pub what: String,
    pub passed: bool,
    pub expected: Value,
    pub actual: Value,
}

/// The grade of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grade {
    pub passed: bool,
    pub assertions: Vec<Assertion>,
    /// The world from initial to final state.
    pub diff: StateDiff,
}

impl Grade {
    pub fn verdict(&self) -> &'static str {
        if self.passed { "passed" } else { "failed" }
    }

    pub fn failures(&self) -> impl Iterator<Item = &Assertion> {
        self.assertions.iter().filter(|a| !a.passed)
    }
}

/// What the grader looks at.
pub struct Evidence<'a> {
    pub status: Status,
    pub output: Option<&'a str>,
    pub events: &'a [Event],
    pub initial: &'a State,
    pub final_state: &'a State,
    /// The case's gold state, when it has `[[expect.gold]]` calls.
    pub gold: Option<&'a gold::GoldState>,
}

fn check(what: String, expected: Value, actual: Value, passed: bool) -> Assertion {
    Assertion {
        what,
        passed,
        expected,
        actual,
    }
}

/// The value at a path the case checked when it loaded (so it parses).
fn value_at<'a>(value: &'a Value, path: Option<&JsonPath>) -> Option<&'a Value> {
    path?.get(value)
}

/// What an assertion asks of the value at a place (a file, a row or a
/// field of it, a path into the output).
enum Test<'a> {
    Exists(bool),
    Absent(bool),
    Equals(&'a Value),
    Contains(&'a Value),
}

/// Judge the value at `place` (`None`: there is none) by `test`; numbers
/// compare by value, text without regard to case when `ignore_case`.
fn value_check(
    place: &str,
    value: Option<&Value>,
    test: Option<Test>,
    ignore_case: bool,
) -> Assertion {
    let case = if ignore_case { " (ignoring case)" } else { "" };
    let actual = value.cloned().unwrap_or(Value::Null);
    match test {
        Some(Test::Exists(e)) => check(
            format!("{place} exists"),
            json!(e),
            json!(value.is_some()),
            value.is_some() == e,
        ),
        Some(Test::Absent(a)) => check(
            format!("{place} absent"),
            json!(a),
            json!(value.is_none()),
            value.is_none() == a,
        ),
        Some(Test::Equals(v)) => check(
            format!("{place} equals{case}"),
            v.clone(),
            actual,
            value.is_some_and(|x| Op::Eq.holds(x, v, ignore_case)),
        ),
        Some(Test::Contains(v)) => check(
            format!("{place} contains{case}"),
            v.clone(),
            actual,
            value.is_some_and(|x| Op::Contains.holds(x, v, ignore_case)),
        ),
        None => check(place.to_string(), Value::Null, actual, false),
    }
}

impl StateCheck {
    /// The test of a file or row assertion (`count` is judged apart).
    fn test(&self) -> Option<Test<'_>> {
        self.exists
            .map(Test::Exists)
            .or(self.absent.map(Test::Absent))
            .or(self.equals.as_ref().map(Test::Equals))
            .or(self.contains.as_ref().map(Test::Contains))
    }
}

fn state_check(c: &StateCheck, state: &State) -> Assertion {
    if let Some(path) = &c.file {
        let data = state
            .files
            .get(path)
            .map(|d| Value::String(String::from_utf8_lossy(&d.to_bytes()).into_owned()));
        return value_check(
            &format!("file {path}"),
            data.as_ref(),
            c.test(),
            c.ignore_case,
        );
    }
    let table = c.table.as_deref().unwrap_or("");
    if let Some(field) = &c.sum {
        return sum_check(c, table, field, state);
    }
    if c.count.is_some() || c.key.is_none() {
        return count_check(c, table, state);
    }
    let key = c.key.as_ref().map(crate::canon::key_of).unwrap_or_default();
    let row = state.row(table, &key);
    let (place, value) = match &c.field {
        Some(f) => (
            format!("{table}/{key}.{f}"),
            row.and_then(|r| value_at(r, JsonPath::parse(f).ok().as_ref())),
        ),
        None => (format!("{table}/{key}"), row),
    };
    value_check(&place, value, c.test(), c.ignore_case)
}

/// The rows of `table` that match the check's `where`.
fn matching_rows<'a>(c: &StateCheck, table: &str, state: &'a State) -> Vec<&'a Value> {
    // Paths and operators are read once, not per row. Both were checked
    // when the case loaded; one that does not read matches no row.
    let filters: Vec<(Option<JsonPath>, Option<Conditions>)> = c
        .where_
        .iter()
        .map(|(k, v)| (JsonPath::parse(k).ok(), conditions(v).ok()))
        .collect();
    let holds = |row: &Value, path: Option<&JsonPath>, conds: &Option<Conditions>| {
        let field = value_at(row, path).unwrap_or(&Value::Null);
        conds.as_ref().is_some_and(|(ops, own_case)| {
            ops.iter()
                .all(|(op, v)| op.holds(field, v, *own_case || c.ignore_case))
        })
    };
    state.tables.get(table).map_or(Vec::new(), |t| {
        t.rows
            .values()
            .filter(|r| filters.iter().all(|(p, cs)| holds(r, p.as_ref(), cs)))
            .collect()
    })
}

/// ` where {...}`, or nothing.
fn where_text(c: &StateCheck) -> String {
    if c.where_.is_empty() {
        String::new()
    } else {
        format!(" where {}", crate::canon::to_string(&c.where_))
    }
}

/// `n` within the check's `min`/`max`, with what was expected.
fn in_bounds(c: &StateCheck, n: f64) -> (Value, bool) {
    let ok = c.min.is_none_or(|m| n >= m) && c.max.is_none_or(|m| n <= m);
    (json!({"min": c.min, "max": c.max}), ok)
}

/// How many rows of `table` match the check's `where`, against `count` or
/// `min`/`max`.
fn count_check(c: &StateCheck, table: &str, state: &State) -> Assertion {
    let count = matching_rows(c, table, state).len() as u64;
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
fn sum_check(c: &StateCheck, table: &str, field: &str, state: &State) -> Assertion {
    let path = JsonPath::parse(field).ok();
    let sum: f64 = matching_rows(c, table, state)
        .into_iter()
        .filter_map(|r| value_at(r, path.as_ref())?.as_f64())
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

/// The tool-call events that a calls check counts.
fn matching_calls<'a>(c: &CallCheck, events: &'a [Event]) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.call == "worldline:agent/tools.call")
        .filter(|e| {
            e.request["name"]
                .as_str()
                .is_some_and(|n| glob_match(&c.tool, n))
        })
        .filter(|e| {
            c.args
                .iter()
                .all(|(k, v)| e.request["args"].get(k).is_some_and(|a| same(a, v)))
        })
        .filter(|e| c.denied.is_none_or(|d| (e.effect == Effect::Denied) == d))
        .collect()
}

fn calls_check(c: &CallCheck, events: &[Event]) -> Assertion {
    let n = matching_calls(c, events).len() as u64;
    let mut what = format!("calls {}", c.tool);
    if !c.args.is_empty() {
        what.push_str(&format!(" {}", crate::canon::to_string(&c.args)));
    }
    match c.denied {
        Some(true) => what.push_str(" (denied)"),
        Some(false) => what.push_str(" (allowed)"),
        None => {}
    }
    if let Some(a) = c.attempted {
        return check(
            format!("{what} attempted"),
            json!(a),
            json!(n > 0),
            (n > 0) == a,
        );
    }
    if let Some(want) = c.count {
        return check(format!("{what} count"), json!(want), json!(n), n == want);
    }
    let ok = c.min.is_none_or(|m| n >= m) && c.max.is_none_or(|m| n <= m);
    check(
        format!("{what} count in range"),
        json!({"min": c.min, "max": c.max}),
        json!(n),
        ok,
    )
}

/// The output assertions. Text assertions match the output as written or,
/// when it is JSON, as decoded (`"\u00a3"` contains `£`).
fn output_checks(o: &OutputCheck, output: Option<&str>, out: &mut Vec<Assertion>) {
    let text = output.unwrap_or("");
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let decoded = parsed.as_ref().map(crate::canon::to_string);
    let fold = |t: &str| {
        if o.ignore_case {
            t.to_lowercase()
        } else {
            t.to_string()
        }
    };
    let forms: Vec<String> = std::iter::once(text.to_string())
        .chain(decoded)
        .map(|t| fold(&t))
        .collect();
    let has = |needle: &str| forms.iter().any(|f| f.contains(&fold(needle)));
    let case = if o.ignore_case {
        " (ignoring case)"
    } else {
        ""
    };
    if let Some(e) = &o.equals {
        out.push(check(
            format!("output equals{case}"),
            json!(e),
            json!(output),
            output.is_some_and(|t| fold(t) == fold(e)),
        ));
    }
    if let Some(c) = &o.contains {
        out.push(check(
            format!("output contains{case}"),
            json!(c),
            json!(output),
            has(c),
        ));
    }
    if !o.any_of.is_empty() {
        out.push(check(
            format!("output contains any of{case}"),
            json!(o.any_of),
            json!(output),
            o.any_of.iter().any(|c| has(c)),
        ));
    }
    for j in &o.json {
        let path = JsonPath::parse(&j.path).ok();
        let v = parsed.as_ref().and_then(|p| value_at(p, path.as_ref()));
        let test = j
            .equals
            .as_ref()
            .map(Test::Equals)
            .or(j.contains.as_ref().map(Test::Contains))
            .or(j.exists.map(Test::Exists));
        out.push(value_check(&format!("output {}", j.path), v, test, false));
    }
}

/// The final state of a recorded run: its writes applied to the initial
/// state, in order.
pub fn final_state(initial: &State, events: &[Event]) -> State {
    let mut state = initial.clone();
    for e in events {
        for w in &e.writes {
            state.apply(w);
        }
    }
    state
}

/// Grade a run against expectations.
pub fn grade(expect: &Expect, ev: &Evidence) -> Grade {
    let mut out = Vec::new();
    let want_status = expect.status.clone().unwrap_or_else(|| "completed".into());
    out.push(check(
        "status".into(),
        json!(want_status),
        json!(ev.status.as_str()),
        ev.status.as_str() == want_status,
    ));
    for c in &expect.state {
        out.push(state_check(c, ev.final_state));
    }
    for u in &expect.unchanged {
        let (before, after) = match u.split_once('/') {
            Some((t, k)) => (
                ev.initial.row(t, k).cloned(),
                ev.final_state.row(t, k).cloned(),
            ),
            None => (
                ev.initial.tables.get(u).map(|t| json!(t.rows)),
                ev.final_state.tables.get(u).map(|t| json!(t.rows)),
            ),
        };
        let kept = match (&before, &after) {
            (Some(b), Some(a)) => same(b, a),
            (b, a) => b == a,
        };
        let actual = if kept {
            json!("unchanged")
        } else {
            json!("changed")
        };
        out.push(check(
            format!("unchanged {u}"),
            json!("unchanged"),
            actual,
            kept,
        ));
    }
    for c in &expect.calls {
        out.push(calls_check(c, ev.events));
    }
    if !expect.gold.is_empty() {
        out.push(gold::assertion(expect, ev.gold, ev.final_state));
    }
    if let Some(o) = &expect.output {
        output_checks(o, ev.output, &mut out);
    }
    if let Some(c) = &expect.conversation {
        out.extend(conversation::checks(c, ev.events));
    }
    Grade {
        passed: out.iter().all(|a| a.passed),
        assertions: out,
        diff: diff::diff(ev.initial, ev.final_state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(check: &str, output: &str) -> Vec<(String, bool)> {
        let o: OutputCheck = toml::from_str(check).unwrap();
        let mut out = Vec::new();
        output_checks(&o, Some(output), &mut out);
        out.into_iter().map(|a| (a.what, a.passed)).collect()
    }

    #[test]
    fn output_text_checks_match_decoded_json_any_of_and_without_case() {
        // Python's json.dumps writes `£` as `\u00a3`.
        let escaped = r#"{"reply": "Refunded \u00a35 to Anna"}"#;
        assert_eq!(
            judge("contains = '£5'", escaped),
            [("output contains".into(), true)]
        );
        assert_eq!(
            judge("contains = '£6'", escaped),
            [("output contains".into(), false)]
        );
        assert_eq!(
            judge(
                "any_of = ['declined', 'refunded']\nignore_case = true",
                escaped
            ),
            [("output contains any of (ignoring case)".into(), true)]
        );
        assert_eq!(
            judge("any_of = ['declined', 'refunded']", escaped),
            [("output contains any of".into(), false)]
        );
        assert_eq!(
            judge("equals = 'DONE'\nignore_case = true", "done"),
            [("output equals (ignoring case)".into(), true)]
        );
        assert_eq!(
            judge("contains = 'a b'", "not json: a b"),
            [("output contains".into(), true)]
        );
    }
}
