//! The run page's event table, a page of events at a time: a row per
//! event with its marks (injected and fuzz faults, a fork's answer, a
//! fork point), the interpreter's start-up events folded, stdout/stderr
//! runs folded, and the runtime's own plumbing (clock and randomness
//! reads, polls, environment and preopen look-ups) hidden until asked
//! for. A model call's row names the tool calls it asked for and links
//! them: their arguments show once, on the call's own row.
//!
//! Why the runtime's own events are hidden by a fixed list of interfaces (was
//! decision 0224): the monotonic clock, randomness, `wasi:io`, the environment,
//! stdin, the stdout/stderr and terminal handle look-ups and the preopens are
//! what the JS engine, CPython and Rust's std do for themselves (timers, hash
//! seeds, polls); an agent's behaviour is in its tool, model, user and file
//! calls. Wall-clock reads stay visible because clock-skew faults act on them,
//! and an event a fault or a fork shaped is never hidden. Hiding by position
//! (everything between two `worldline:` calls) would hide the agent's own file
//! reads; filtering on the server would need two sets of event numbers, so the
//! rows stay in the page, hidden by CSS, and the table, its paging and the
//! event numbers do not change.

use super::calls::{is_tool_call, tool_name};
use super::html::{url, vtime};
use maud::{Markup, html};
use std::collections::BTreeMap;
use std::ops::Range;
use worldline_log::log::event::By;
use worldline_log::log::payload::{ModelAnswer, ModelRequest};
use worldline_log::log::{Call, Event};
use worldline_report::timeline::summary;

/// How many events a page of the run's timeline holds.
pub(crate) const PER_PAGE: usize = 200;

/// Calls the runtime (CPython, the JS engine, the Rust std) makes for
/// itself rather than for the agent's logic.
const RUNTIME: &[&str] = &[
    "wasi:clocks/monotonic-clock.",
    "wasi:random/",
    "wasi:io/",
    "wasi:cli/environment.",
    "wasi:cli/stdin.",
    "wasi:cli/stdout.get-",
    "wasi:cli/stderr.get-",
    "wasi:cli/terminal-",
    "wasi:filesystem/preopens.",
];

/// Whether `e` is the runtime's own plumbing (never when a fault or a fork
/// shaped it: those always show).
pub(crate) fn is_noise(e: &Event) -> bool {
    e.injected.is_none() && RUNTIME.iter().any(|p| e.call.starts_with(p))
}

fn is_stdio(e: &Event) -> bool {
    e.request.get("text").is_some() && e.request.get("stream").is_some()
}

/// How many events the interpreter made before the agent's first own call
/// (host calls of `wasi:` only, before any `worldline:` call).
pub(crate) fn startup_len(events: &[Event]) -> usize {
    match events.iter().position(|e| e.call.starts_with("worldline:")) {
        Some(n) if events[..n].iter().all(|e| e.call.starts_with("wasi:")) => n,
        _ => 0,
    }
}

/// An event's marks: injected or fuzz faults, a fork's answer, a fork
/// point, an answer the agent went on without (at `gone`, before it was
/// ready: `log/delivery.rs`).
pub(crate) fn marks(e: &Event, fork_points: &[u64], gone: Option<u64>) -> Markup {
    let injected = e.mark().map(|m| {
        let action = m.action.and_then(|a| a.as_str()).unwrap_or("?");
        let class = match m.by {
            By::Fuzz(_) => "fuzz",
            By::Fork => "fork",
            _ => "injected",
        };
        (class, action, worldline_case::canon::to_string(m.raw))
    });
    html! {
        @if let Some((class, action, all)) = injected {
            span class={ "mark " (class) } title=(all) { (class) ": " (action) }
        }
        @if fork_points.contains(&e.seq) { span.mark.fork { "fork point" } }
        @if let Some(at) = gone {
            span.mark.undelivered title={ "ready at " (vtime(e.vtime_ns)) ", after the agent had gone on at " (vtime(at)) } { "never delivered" }
        }
    }
}

/// What a model call's row says: the last message and the calls it asked
/// for, by name, each linked to its own row.
fn model_what(
    id: &str,
    events: &[Event],
    e: &Event,
    (request, response): (&ModelRequest, &ModelAnswer),
) -> Markup {
    let asked = request.messages().and_then(|m| m.last());
    let calls = response.message().and_then(|m| m["tool_calls"].as_array());
    let Some(calls) = calls.filter(|c| !c.is_empty()) else {
        return html! { (summary(e)) };
    };
    let mut after = events
        .iter()
        .skip(e.seq as usize + 1)
        .filter(|x| is_tool_call(x))
        .map(|x| (x.seq, tool_name(x)));
    html! {
        "[" (request.provider) "] "
        @if let Some(m) = asked { (m["role"].as_str().unwrap_or("?")) " → " }
        "asks for "
        @for c in calls {
            @let name = c["function"]["name"].as_str().unwrap_or("?");
            @match after.find(|(_, n)| n.as_deref() == Some(name)) {
                Some((seq, _)) => { a.call href={ "/run/" (url(id)) "/event/" (seq) } { (name) " (event " (seq) ")" } " " }
                None => { (name) " " }
            }
        }
    }
}

fn row(id: &str, events: &[Event], e: &Event, marked: &Marked) -> Markup {
    let call = worldline_report::timeline::short_call(&e.call);
    let href = format!("/run/{}/event/{}", url(id), e.seq);
    html! {
        tr id={ "e" (e.seq) } class=[is_noise(e).then_some("noise")] data-href=(href) {
            td.mono { a href=(href) { (e.seq) } }
            td.mono { (vtime(e.vtime_ns)) }
            td { (format!("{:?}", e.effect).to_lowercase()) }
            td.mono title=(e.call) { (call) }
            td.mono {
                @match e.typed() {
                    Call::ModelComplete { request, response } => { (model_what(id, events, e, (&request, &response))) }
                    _ => { (summary(e)) }
                }
                (marks(e, marked.fork_points, marked.gone.get(&e.seq).copied()))
            }
        }
    }
}

fn head() -> Markup {
    html! { thead { tr { th { "#" } th { "vtime" } th { "effect" } th { "call" } th { "what" } } } }
}

/// The folded interpreter start-up rows of `range`.
fn startup(
    id: &str,
    events: &[Event],
    (range, open): (&Range<usize>, bool),
    marked: &Marked,
) -> Markup {
    let end = startup_len(events).min(range.end);
    if range.start >= end {
        return html! {};
    }
    html! {
        details #startup open[open] {
            summary { (end - range.start) " interpreter start-up events (" (range.start) "–" (end - 1) ")" }
            table { (head()) tbody { @for e in &events[range.start..end] { (row(id, events, e, marked)) } } }
        }
    }
}

/// The rows of `range` after the start-up: runs of stdio folded into one.
fn body(id: &str, events: &[Event], from: usize, to: usize, marked: &Marked) -> Markup {
    let mut parts = Vec::new();
    let mut i = from;
    while i < to {
        if !is_stdio(&events[i]) {
            parts.push(row(id, events, &events[i], marked));
            i += 1;
            continue;
        }
        let start = i;
        while i < to && is_stdio(&events[i]) {
            i += 1;
        }
        let text: String = events[start..i]
            .iter()
            .map(|e| e.request["text"].as_str().unwrap_or(""))
            .collect();
        parts.push(html! {
            tr.stdio { td colspan="5" { details {
                summary { (i - start) " stdout/stderr events (" (start) "–" (i - 1) ")" }
                pre { (text) }
            } } }
        });
    }
    html! { @for p in parts { (p) } }
}

/// What a row's marks read besides its event.
pub(crate) struct Marked<'a> {
    pub fork_points: &'a [u64],
    /// The answers the agent went on without, and when.
    pub gone: &'a BTreeMap<u64, u64>,
}

/// Whether event `n`'s row is hidden until the runtime's own events are
/// shown: one of them, or folded with the interpreter's start-up.
pub(crate) fn hidden_row(events: &[Event], n: usize) -> bool {
    n < startup_len(events) || events.get(n).is_some_and(is_noise)
}

/// The table of `range`, with the runtime-events toggle; `shown`: the
/// runtime's own events shown (`?noise=1`: the start-up opened and their
/// rows in view without JavaScript, as a jump to one of them asks).
pub(crate) fn table(
    id: &str,
    events: &[Event],
    (range, shown): (Range<usize>, bool),
    marked: &Marked,
) -> Markup {
    let from = startup_len(events).clamp(range.start, range.end);
    let noise = events[from..range.end]
        .iter()
        .filter(|e| is_noise(e))
        .count();
    let page = range.start / PER_PAGE + 1;
    // Without JavaScript the box does nothing: a link asks the server.
    let other = format!(
        "/run/{}?page={page}{}",
        url(id),
        if shown { "" } else { "&noise=1" }
    );
    html! {
        (startup(id, events, (&range, shown), marked))
        label.toggle for="show-noise" {
            input #show-noise type="checkbox" checked[shown];
            " show the runtime's own events (" (noise) " on this page: clock and randomness reads, polls, environment) — key r"
        }
        noscript { " " a #noise-link href=(other) { @if shown { "hide them" } @else { "show them" } } }
        table #timeline class=[(!shown).then_some("hide-noise")] { (head()) tbody { (body(id, events, from, range.end, marked)) } }
    }
}
