//! The run's calls on the virtual clock: every tool call, model call, user
//! turn (and the user's own tool call) and approval as a bar from the moment the agent made it (the
//! run's clock before it: the previous event's time, or from rules 5 the
//! time before an HTTP answer that is ready later, `log/clock.rs`) to the
//! moment it was answered, so where the
//! run's time went shows at a glance. Times are virtual: the same on every
//! replay.
//!
//! Why a call's span runs from the event before (was decision 0225): events
//! record the virtual time a call returned, and the clock moves only at host
//! calls (the tick plus the call's modelled latency), so the difference from
//! the previous event's `vtime_ns` is what the call cost the run, identical on
//! every replay. No new field is recorded, so old bundles chart the same, and a
//! chart of virtual time answers "where did the run's time go" the way the
//! agent experienced it, which is what timeouts and deadlines act on. Real
//! latency is shown only in the model usage table, labelled as wall clock.

use super::html::{url, vtime};
use maud::{Markup, html};
use worldline_log::log::clock::RunClock;
use worldline_log::log::delivery;
use worldline_log::log::{Call, Event, Kind};

/// Whether `e` is a tool call.
pub(crate) fn is_tool_call(e: &Event) -> bool {
    Kind::of(&e.call) == Some(Kind::ToolsCall)
}

/// The tool a tool-call event called.
pub(crate) fn tool_name(e: &Event) -> Option<String> {
    match e.typed() {
        Call::ToolsCall { request, .. } => Some(request.name),
        _ => None,
    }
}

/// Whether `e` is a model call.
pub(crate) fn is_model_call(e: &Event) -> bool {
    Kind::of(&e.call) == Some(Kind::ModelComplete)
}

/// One call's place on the clock.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Span {
    pub seq: u64,
    /// `tool`, `model`, `user` or `approval`.
    pub kind: &'static str,
    pub label: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// What kind of call an event is, if it is one the chart shows.
pub(crate) fn kind_of(e: &Event) -> Option<&'static str> {
    match Kind::of(&e.call)? {
        Kind::ToolsCall => Some("tool"),
        Kind::ModelComplete => Some("model"),
        Kind::UserSay | Kind::UserToolsCall => Some("user"),
        Kind::ApprovalRequest => Some("approval"),
        _ => None,
    }
}

fn label(call: Call) -> String {
    match call {
        Call::ToolsCall { request, .. } => request.name,
        Call::ModelComplete { request, response } => super::usage::model_name(&request, &response)
            .unwrap_or("model")
            .to_string(),
        Call::ApprovalRequest { request, .. } => request.kind.as_str().unwrap_or("?").to_string(),
        Call::UserSay { .. } => "turn".into(),
        Call::UserToolsCall { request, .. } => request.name,
        _ => "?".into(),
    }
}

/// The calls of `events`, of a run under `rules`, with their spans: an
/// answer the agent went on without ends where it went on, marked
/// (`log/delivery.rs`).
pub(crate) fn spans(events: &[Event], rules: u32) -> Vec<Span> {
    let mut clock = RunClock::new(rules);
    let gone = delivery::undelivered(events, rules);
    events
        .iter()
        .filter_map(|e| {
            let call = e.typed();
            let start_ns = clock.began(e.vtime_ns, &call);
            let kind = kind_of(e)?;
            let went_on = gone.get(&e.seq).copied();
            let mut label = label(call);
            if went_on.is_some() {
                label.push_str(" (never delivered)");
            }
            Some(Span {
                seq: e.seq,
                kind,
                label,
                start_ns,
                end_ns: went_on.unwrap_or(e.vtime_ns).max(start_ns),
            })
        })
        .collect()
}

fn pct(ns: u64, total: u64) -> String {
    format!("{:.3}%", ns as f64 * 100.0 / total.max(1) as f64)
}

/// The chart of the run's calls, each bar on the whole run's clock: all of
/// them, or, past [`SHOWN`](super::html::SHOWN) calls, those among the
/// events of `range` (the timeline's page, so a long run's chart is as
/// bounded as its table); nothing for a run without such calls.
pub(crate) fn chart(
    id: &str,
    events: &[Event],
    rules: u32,
    range: std::ops::Range<usize>,
) -> Markup {
    let spans = spans(events, rules);
    // The latest answer the agent took or step it made, which (from rules
    // 5) need not be the last event's.
    let gone = delivery::undelivered(events, rules);
    let total = (events.iter())
        .map(|e| gone.get(&e.seq).copied().unwrap_or(e.vtime_ns))
        .max()
        .unwrap_or(0)
        .max(1);
    if spans.is_empty() {
        return html! {};
    }
    let page: Vec<&Span> = (spans.iter())
        .filter(|s| spans.len() <= super::html::SHOWN || range.contains(&(s.seq as usize)))
        .collect();
    html! {
        h2 { "Calls on the virtual clock " small {
            "(" (super::html::count(spans.len() as u64, "call")) ", " (vtime(total)) " in all"
            @if page.len() < spans.len() { "; the " (page.len()) " of events " (range.start) "–" (range.end.saturating_sub(1)) }
            ")"
        } }
        div #calls {
            @for s in &page {
                div class={ "lane k-" (s.kind) } data-seq=(s.seq) {
                    a href={ "/run/" (url(id)) "/event/" (s.seq) } { "event " (s.seq) }
                    span { span class={ "kind k-" (s.kind) } { (s.kind) } " " span.mono { (s.label) } }
                    div.track title={ (vtime(s.start_ns)) " – " (vtime(s.end_ns)) } {
                        span.span style={ "left:" (pct(s.start_ns, total)) ";width:" (pct(s.end_ns - s.start_ns, total)) } {}
                    }
                    span.num.dur { (duration(s.end_ns - s.start_ns)) }
                }
            }
        }
    }
}

/// A virtual duration in ms (µs when under one).
pub(crate) fn duration(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else {
        format!("{} µs", ns / 1000)
    }
}
