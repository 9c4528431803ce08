//! `diff`: two runs side by side, as text (where their timelines first
//! differ, each side's event in one line, how their final states differ,
//! and their outputs when those differ) or as the `diff --json` document.

use super::history::{mark, vtime};
use super::timeline::{Cut, short_call, summary_cut, writes_cut};
use serde_json::{Value, json};
use std::io::{self, Write};
use worldline_engine::grade::diff::StateDiff;
use worldline_log::log::Event;

/// One of the runs compared.
pub struct Side<'a> {
    pub run: &'a str,
    pub events: &'a [Event],
    /// What the run returned.
    pub output: Option<&'a str>,
}

/// Two runs compared.
pub struct Compared<'a> {
    pub a: Side<'a>,
    pub b: Side<'a>,
    /// The first event at which the timelines differ (`None`: the same
    /// events).
    pub first: Option<usize>,
    /// The final states, a to b.
    pub state: &'a StateDiff,
    /// Whether values were hidden by a redaction policy.
    pub redacted_view: bool,
}

/// `diff --json`: the first divergence (each side's call, request,
/// response and writes), the final states' difference and each run's
/// output.
pub fn json(c: &Compared<'_>) -> Value {
    let side = |e: Option<&Event>| {
        e.map(|e| json!({"call": e.call, "request": e.request, "response": e.response, "writes": e.writes, "effect": e.effect, "injected": e.injected, "vtime_ns": e.vtime_ns}))
    };
    let (ea, eb) = (c.a.events, c.b.events);
    json!({
        "a": c.a.run, "b": c.b.run,
        "first_divergence": c.first.map(|i| json!({"index": i, "a": side(ea.get(i)), "b": side(eb.get(i))})),
        "final_state_diff": c.state,
        "outputs": [c.a.output, c.b.output],
        "redacted_view": c.redacted_view,
    })
}

/// When an event happened, its effect and the fault injected into it, as
/// `history` shows them.
fn when(e: &Event) -> String {
    format!(
        "{}  {}{}",
        vtime(e.vtime_ns),
        format!("{:?}", e.effect).to_lowercase(),
        mark(e)
    )
}

/// `diff`: the runs, where they first differ (values cut as `cut` says)
/// and their final states.
pub fn write(out: &mut impl Write, c: &Compared<'_>, cut: Cut) -> io::Result<()> {
    let (ea, eb) = (c.a.events, c.b.events);
    writeln!(
        out,
        "a: {}  ({} events)\nb: {}  ({} events)",
        c.a.run,
        ea.len(),
        c.b.run,
        eb.len()
    )?;
    match c.first {
        None => writeln!(out, "same events")?,
        Some(i) => {
            // As `history` shows it: the call, then what it did (a clock
            // read was its answer alone).
            let line = |e: Option<&Event>| {
                e.map_or("(none)".into(), |e| {
                    let summary = summary_cut(e, cut);
                    format!(
                        "{}  {}",
                        short_call(&e.call),
                        worldline_case::shown::one_line(&summary)
                    )
                })
            };
            writeln!(out, "first difference at event {i}:")?;
            writeln!(out, "  a: {}", line(ea.get(i)))?;
            writeln!(out, "  b: {}", line(eb.get(i)))?;
            // Events alike in their lines may differ in what they wrote
            // (a fork's `--set` patch): both lines were all it showed.
            if let (Some(x), Some(y)) = (ea.get(i), eb.get(i))
                && x.writes != y.writes
            {
                writeln!(out, "  a wrote: {}", writes_cut(x, cut))?;
                writeln!(out, "  b wrote: {}", writes_cut(y, cut))?;
            }
            // Or in when they happened, their effect or a fault injected
            // into one (a latency: the lines alike, every later time not).
            if let (Some(x), Some(y)) = (ea.get(i), eb.get(i))
                && ((&x.injected, x.vtime_ns) != (&y.injected, y.vtime_ns)
                    || (x.effect != y.effect && line(Some(x)) == line(Some(y))))
            {
                writeln!(out, "  a at: {}", when(x))?;
                writeln!(out, "  b at: {}", when(y))?;
            }
            // Or in a request or an answer the lines do not show (a model
            // request's `temperature`): two equal lines were all it said.
            if let (Some(x), Some(y)) = (ea.get(i), eb.get(i))
                && line(Some(x)) == line(Some(y))
            {
                for (what, a, b) in [
                    ("request", &x.request, &y.request),
                    ("response", &x.response, &y.response),
                ] {
                    for d in worldline_engine::replay::json_diff(a, b) {
                        let d = worldline_case::shown::one_line(&d);
                        writeln!(out, "  {what} {}", super::timeline::cut_text(&d, cut))?;
                    }
                }
            }
        }
    }
    if c.state.is_empty() {
        writeln!(out, "final states: identical")?;
    } else {
        writeln!(out, "final state, a -> b:")?;
        for l in c.state.lines() {
            writeln!(out, "  {l}")?;
        }
    }
    // What each run returned (a run may answer otherwise with the same
    // calls and state: it was said only in `--json`).
    if c.outputs_differ() {
        let shown = |o: Option<&str>| o.map_or("(none)".into(), super::field);
        writeln!(out, "outputs differ:")?;
        writeln!(out, "  a: {}", shown(c.a.output))?;
        writeln!(out, "  b: {}", shown(c.b.output))?;
    }
    Ok(())
}

impl Compared<'_> {
    /// Whether the runs returned different outputs.
    pub fn outputs_differ(&self) -> bool {
        // The same JSON value written with other spacing (a native
        // agent's `json.dumps`) is the same output, as grading reads it.
        let value = |o: Option<&str>| o.and_then(|o| serde_json::from_str::<Value>(o).ok());
        match (value(self.a.output), value(self.b.output)) {
            (Some(a), Some(b)) => a != b,
            _ => self.a.output != self.b.output,
        }
    }

    /// Whether the runs differ at all: in an event, the final state, or
    /// what they returned (`diff` exits 1 then).
    pub fn differ(&self) -> bool {
        self.first.is_some() || !self.state.is_empty() || self.outputs_differ()
    }
}
