//! The grader: judges a run on the world's final state, its calls and its
//! output against a case's `[expect]`. It needs only the recorded events and
//! the states, so an old run can be re-graded against a newer case without
//! re-running the agent.

pub mod diff;
pub mod regrade;
pub mod signature;
pub mod verdict;

use crate::case::expect::{CallCheck, Expect, StateCheck, at_path};
use crate::log::{Effect, Event, Status};
use crate::world::glob_match;
use crate::world::state::State;
use diff::StateDiff;
use serde::Serialize;
use serde_json::{Value, json};

/// One assertion's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

fn state_check(c: &StateCheck, state: &State) -> Assertion {
    if let Some(path) = &c.file {
        let data = state
            .files
            .get(path)
            .map(|d| Value::String(String::from_utf8_lossy(&d.to_bytes()).into_owned()));
        let what = format!("file {path}");
        return match (&c.exists, &c.absent, &c.equals, &c.contains) {
            (Some(e), ..) => check(
                format!("{what} exists"),
                json!(e),
                json!(data.is_some()),
                data.is_some() == *e,
            ),
            (_, Some(a), ..) => check(
                format!("{what} absent"),
                json!(a),
                json!(data.is_none()),
                data.is_none() == *a,
            ),
            (_, _, Some(v), _) => check(
                format!("{what} equals"),
                v.clone(),
                data.clone().unwrap_or(Value::Null),
                data.as_ref() == Some(v),
            ),
            (_, _, _, Some(v)) => check(
                format!("{what} contains"),
                v.clone(),
                data.clone().unwrap_or(Value::Null),
                data.as_ref().is_some_and(|d| contains(d, v)),
            ),
            _ => check(what, Value::Null, Value::Null, false),
        };
    }
    let table = c.table.as_deref().unwrap_or("");
    if let Some(n) = c.count {
        let count = state.tables.get(table).map_or(0, |t| {
            t.rows
                .values()
                .filter(|r| c.where_.iter().all(|(k, v)| at_path(r, k) == Some(v)))
                .count() as u64
        });
        let filter = if c.where_.is_empty() {
            String::new()
        } else {
            format!(" where {}", crate::canon::to_string(&c.where_))
        };
        return check(
            format!("count {table}{filter}"),
            json!(n),
            json!(count),
            count == n,
        );
    }
    let key = c.key.as_deref().unwrap_or("");
    let row = state.row(table, key);
    let value = match &c.field {
        Some(f) => row.and_then(|r| at_path(r, f)),
        None => row,
    };
    let place = match &c.field {
        Some(f) => format!("{table}/{key}.{f}"),
        None => format!("{table}/{key}"),
    };
    let actual = value.cloned().unwrap_or(Value::Null);
    match (&c.exists, &c.absent, &c.equals, &c.contains) {
        (Some(e), ..) => check(
            format!("{place} exists"),
            json!(e),
            json!(value.is_some()),
            value.is_some() == *e,
        ),
        (_, Some(a), ..) => check(
            format!("{place} absent"),
            json!(a),
            json!(value.is_none()),
            value.is_none() == *a,
        ),
        (_, _, Some(v), _) => check(
            format!("{place} equals"),
            v.clone(),
            actual,
            value == Some(v),
        ),
        (_, _, _, Some(v)) => check(
            format!("{place} contains"),
            v.clone(),
            actual,
            value.is_some_and(|x| contains(x, v)),
        ),
        _ => check(place, Value::Null, actual, false),
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
            let v = parsed.as_ref().and_then(|p| at_path(p, &j.path));
            let actual = v.cloned().unwrap_or(Value::Null);
            let a = match (&j.equals, &j.contains, &j.exists) {
                (Some(e), ..) => check(
                    format!("output {} equals", j.path),
                    e.clone(),
                    actual,
                    v == Some(e),
                ),
                (_, Some(c), _) => check(
                    format!("output {} contains", j.path),
                    c.clone(),
                    actual,
                    v.is_some_and(|x| contains(x, c)),
                ),
                (_, _, Some(e)) => check(
                    format!("output {} exists", j.path),
                    json!(e),
                    json!(v.is_some()),
                    v.is_some() == *e,
                ),
                _ => check(format!("output {}", j.path), Value::Null, actual, false),
            };
            out.push(a);
        }
    }
    Grade {
        passed: out.iter().all(|a| a.passed),
        assertions: out,
        diff: diff::diff(ev.initial, ev.final_state),
    }
}
