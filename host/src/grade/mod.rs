//! The grader: judges a run on the world's final state, its calls and its
//! output against a case's `[expect]`. It needs only the recorded events and
//! the states, so an old run can be re-graded against a newer case without
//! re-running the agent.

pub mod diff;
pub mod gold;
pub mod regrade;
pub mod signature;
pub mod verdict;

use crate::case::expect::{CallCheck, Expect, StateCheck};
use crate::log::{Effect, Event, Status};
use crate::path::JsonPath;
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

fn contains(haystack: &Value, needle: &Value) -> bool {
    match (haystack, needle) {
        (Value::String(h), Value::String(n)) => h.contains(n.as_str()),
        (Value::Array(items), n) => items.contains(n),
        (Value::Object(m), Value::String(k)) => m.contains_key(k),
        _ => false,
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

/// Judge the value at `place` (`None`: there is none) by `test`.
fn value_check(place: &str, value: Option<&Value>, test: Option<Test>) -> Assertion {
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
            format!("{place} equals"),
            v.clone(),
            actual,
            value == Some(v),
        ),
        Some(Test::Contains(v)) => check(
            format!("{place} contains"),
            v.clone(),
            actual,
            value.is_some_and(|x| contains(x, v)),
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
        return value_check(&format!("file {path}"), data.as_ref(), c.test());
    }
    let table = c.table.as_deref().unwrap_or("");
    if let Some(n) = c.count {
        return count_check(c, table, n, state);
    }
    let key = c.key.as_deref().unwrap_or("");
    let row = state.row(table, key);
    let (place, value) = match &c.field {
        Some(f) => (
            format!("{table}/{key}.{f}"),
            row.and_then(|r| value_at(r, JsonPath::parse(f).ok().as_ref())),
        ),
        None => (format!("{table}/{key}"), row),
    };
    value_check(&place, value, c.test())
}

/// How many rows of `table` match the check's `where`, against `n`.
fn count_check(c: &StateCheck, table: &str, n: u64, state: &State) -> Assertion {
    let filters: Vec<(Option<JsonPath>, &Value)> = c
        .where_
        .iter()
        .map(|(k, v)| (JsonPath::parse(k).ok(), v))
        .collect();
    let count = state.tables.get(table).map_or(0, |t| {
        t.rows
            .values()
            .filter(|r| {
                filters
                    .iter()
                    .all(|(p, v)| value_at(r, p.as_ref()) == Some(v))
            })
            .count() as u64
    });
    let filter = if c.where_.is_empty() {
        String::new()
    } else {
        format!(" where {}", crate::canon::to_string(&c.where_))
    };
    check(
        format!("count {table}{filter}"),
        json!(n),
        json!(count),
        count == n,
    )
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
                .all(|(k, v)| e.request["args"].get(k) == Some(v))
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
        let same = before == after;
        let actual = if same {
            json!("unchanged")
        } else {
            json!("changed")
        };
        out.push(check(
            format!("unchanged {u}"),
            json!("unchanged"),
            actual,
            same,
        ));
    }
    for c in &expect.calls {
        out.push(calls_check(c, ev.events));
    }
    if !expect.gold.is_empty() {
        out.push(gold::assertion(expect, ev.gold, ev.final_state));
    }
    if let Some(o) = &expect.output {
        let text = ev.output.unwrap_or("");
        if let Some(e) = &o.equals {
            out.push(check(
                "output equals".into(),
                json!(e),
                json!(ev.output),
                ev.output == Some(e.as_str()),
            ));
        }
        if let Some(c) = &o.contains {
            out.push(check(
                "output contains".into(),
                json!(c),
                json!(ev.output),
                text.contains(c.as_str()),
            ));
        }
        let parsed: Option<Value> = serde_json::from_str(text).ok();
        for j in &o.json {
            let path = JsonPath::parse(&j.path).ok();
            let v = parsed.as_ref().and_then(|p| value_at(p, path.as_ref()));
            let test = j
                .equals
                .as_ref()
                .map(Test::Equals)
                .or(j.contains.as_ref().map(Test::Contains))
                .or(j.exists.map(Test::Exists));
            out.push(value_check(&format!("output {}", j.path), v, test));
        }
    }
    Grade {
        passed: out.iter().all(|a| a.passed),
        assertions: out,
        diff: diff::diff(ev.initial, ev.final_state),
    }
}
