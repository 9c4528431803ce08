//! A run as a conversation: the messages each model call added, the
//! model's answer, the agent's turns with the user (and the user's calls
//! of their own tools) and the approvals, in
//! the order they happened. Each tool call shows once: in the answer that
//! asked for it (linked to its event), its result below as a tool message;
//! the answer is not repeated when the next request carries it back.

use super::calls::{is_tool_call, tool_name};
use super::html::url;
use super::table::rows_or_json;
use maud::{Markup, html};
use serde_json::Value;
use std::collections::BTreeMap;
use worldline_case::canon;
use worldline_log::log::event::By;
use worldline_log::log::payload::{
    Answer, ApprovalAsk, Decision, ModelAnswer, Said, ToolRequest, Turn,
};
use worldline_log::log::{Call, Event, Held};

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => canon::to_string(other),
    }
}

fn link(id: &str, seq: u64) -> Markup {
    html! { a href={ "/run/" (url(id)) "/event/" (seq) } { "event " (seq) } }
}

/// An answer's tool calls, each linked to the tool-call event that ran it.
fn tool_calls(id: &str, events: &[Event], after: usize, calls: &Value) -> Markup {
    let mut later = events
        .iter()
        .skip(after + 1)
        .filter(|x| is_tool_call(x))
        .map(|x| (x.seq, tool_name(x)));
    html! {
        @for c in calls.as_array().into_iter().flatten() {
            @let name = c["function"]["name"].as_str().unwrap_or("?");
            div.mono.call {
                "→ " (name) "(" (text_of(&c["function"]["arguments"])) ")"
                @if let Some((seq, _)) = later.find(|(_, n)| n.as_deref() == Some(name)) { " " (link(id, seq)) }
            }
        }
    }
}

/// A message the request added (`None` for the answer it carries back).
fn message(m: &Value, previous: Option<&Value>) -> Option<Markup> {
    let role = m["role"].as_str().unwrap_or("?");
    if role == "assistant"
        && previous
            .is_some_and(|p| p["content"] == m["content"] && p["tool_calls"] == m["tool_calls"])
    {
        return None;
    }
    Some(html! {
        div class={ "msg " (role) } {
            b { (role) } " "
            @if role == "tool" {
                span.keys { "result" @if let Some(t) = m["tool_call_id"].as_str() { " of " (t) } } " "
                (rows_or_json(&serde_json::from_str(&text_of(&m["content"])).unwrap_or_else(|_| m["content"].clone())))
            } @else {
                (text_of(&m["content"]))
                @for c in m["tool_calls"].as_array().into_iter().flatten() {
                    div.mono { "→ " (c["function"]["name"].as_str().unwrap_or("?")) }
                }
            }
        }
    })
}

/// The messages of model call `seq` from the `from`th on, and how many
/// it sent: those it appended as held, or its request put back when the
/// call before sent fewer than it kept of its base (decision 0380).
fn sent_from(held: &mut Held, seq: u64, from: usize) -> (Vec<Value>, usize) {
    match held.appended(seq) {
        None => (Vec::new(), 0),
        Some((keep, appended)) if from >= keep => {
            let count = keep + appended.len();
            let new = appended.get((from - keep).min(appended.len())..);
            (new.unwrap_or(&[]).to_vec(), count)
        }
        Some(_) => {
            let request = held.request(seq).expect("a held model call");
            let all = request["request"]["messages"]
                .as_array()
                .map_or(&[][..], Vec::as_slice);
            (
                all.get(from.min(all.len())..).unwrap_or(&[]).to_vec(),
                all.len(),
            )
        }
    }
}

/// One model call (the `i`th event, answered by `response`): the new
/// messages, then the answer; `None` when not `shown` (a call before the
/// page: only what it sent and answered is noted, for the calls after).
fn model_call(
    id: &str,
    events: &[Event],
    i: usize,
    (held, response): (&mut Held, &ModelAnswer),
    (seen, previous): (&mut usize, &mut Option<Value>),
    (shown, gone): (bool, bool),
) -> Option<Markup> {
    let e = &events[i];
    let (messages, count) = sent_from(held, e.seq, *seen);
    *seen = count;
    let answer = response.message().cloned().unwrap_or(Value::Null);
    // An answer the agent went on without is no message it sends back.
    let before = match gone {
        true => previous.clone(),
        false => previous.replace(answer.clone()),
    };
    if !shown {
        return None;
    }
    let new: Vec<Markup> = messages
        .iter()
        .filter_map(|m| message(m, before.as_ref()))
        .collect();
    Some(html! {
        @for m in new { (m) }
        div.msg.assistant {
            b { "model" } " " (link(id, e.seq)) " "
            @if gone { span.mark.undelivered { "never delivered" } " " }
            @match &response.error {
                Some(err) => { span.badge.bad { (err.kind) } " " (text_of(err.message())) }
                None => { (text_of(&answer["content"])) (tool_calls(id, events, i, &answer["tool_calls"])) }
            }
        }
    })
}

/// Who answered a user turn: the player's rule or model, or a fork.
fn by(e: &Event, turn: &Turn) -> String {
    match turn.user.as_ref().and_then(|u| u.by.as_ref()) {
        Some(b) => canon::to_string(b),
        None if e.mark().is_some_and(|m| matches!(m.by, By::Fork)) => "answered by a fork".into(),
        None => String::new(),
    }
}

/// A user turn: the agent's message and the user's reply (or leaving).
fn user_turn(id: &str, e: &Event, said: &Said, turn: &Turn) -> Markup {
    html! {
        div.msg.agent { b { "agent → user" } " " (link(id, e.seq)) " " (said.message) }
        div.msg.user {
            b { "user" } " "
            @if let Some(reply) = &turn.reply { (reply) }
            @else if let Some(end) = &turn.ended {
                "ended (" (if end.satisfied() { "satisfied" } else { "not satisfied" }) "): " (text_of(end.reason()))
            } @else { span.mono { (canon::to_string(&e.response)) } }
            " " span.keys { (by(e, turn)) }
        }
    }
}

/// A call the user made of their own tool (the device), before answering.
fn user_tool(id: &str, e: &Event, request: &ToolRequest, answer: &Answer) -> Markup {
    html! {
        div.msg.user {
            b { "user calls " (request.name) } " " (link(id, e.seq)) " "
            span.mono { (text_of(request.args())) } " → "
            @match &answer.error {
                Some(err) => { span.badge.bad { (err.kind) } " " (text_of(err.message())) }
                None => { (rows_or_json(answer.ok.as_ref().unwrap_or(&Value::Null))) }
            }
        }
    }
}

fn approval(id: &str, e: &Event, ask: &ApprovalAsk, decision: &Decision) -> Markup {
    html! {
        div.msg.approval {
            b { "approval" } " " (link(id, e.seq)) " " (text_of(&ask.kind)) " "
            span.mono { (text_of(&ask.details)) } " → "
            @match &decision.denied { Some(r) => { span.badge.bad { "denied" } " " (text_of(r)) } None => { span.badge.ok { "approved" } } }
        }
    }
}

fn raw(id: &str, e: &Event) -> Markup {
    html! {
        div.msg {
            b { (e.call) } " " (link(id, e.seq)) " "
            span.mono { (canon::to_string(&e.request)) " → " (canon::to_string(&e.response)) }
        }
    }
}

/// Parts (model calls, user turns and calls, approvals) a page of the
/// conversation shows: a long run's is paged on its own, apart from the
/// timeline (whose pages of 200 events held a turn or two of an SDK
/// agent's, among the runtime's own events).
const PER_PAGE: usize = 50;

/// Whether `e` is a part of the conversation (anything but a tool call
/// the agent made: that shows in the answer that asked for it).
fn is_part(e: &Event) -> bool {
    super::calls::kind_of(e).is_some_and(|k| k != "tool")
}

/// The conversation (nothing when the run has none), the page of it
/// `q`'s `conv` asks for (the first by default) and its pager: `events`
/// as their rows read them, `held` for each model call's messages, the
/// answers the agent went on without (`gone`) marked.
pub(crate) fn section(
    id: &str,
    (events, gone): (&[Event], &BTreeMap<u64, u64>),
    held: &mut Held,
    q: &BTreeMap<String, String>,
) -> Markup {
    let all: Vec<usize> = (0..events.len()).filter(|&i| is_part(&events[i])).collect();
    let pages = all.len().div_ceil(PER_PAGE);
    if pages == 0 {
        return html! {};
    }
    let at = q
        .get("conv")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, pages);
    let page = &all[(at - 1) * PER_PAGE..(at * PER_PAGE).min(all.len())];
    let (first, last) = (page[0], page[page.len() - 1]);
    let mut state = (0, None);
    let mut parts = Vec::new();
    for (i, e) in events.iter().enumerate().take(last + 1) {
        if !is_part(e) {
            continue;
        }
        let shown = i >= first;
        let part = match e.typed() {
            Call::ModelComplete { response, .. } => model_call(
                id,
                events,
                i,
                (&mut *held, &response),
                (&mut state.0, &mut state.1),
                (shown, gone.contains_key(&e.seq)),
            ),
            _ if !shown => None,
            Call::UserSay { request, response } => Some(user_turn(id, e, &request, &response)),
            Call::UserToolsCall { request, response } => {
                Some(user_tool(id, e, &request, &response))
            }
            Call::ApprovalRequest { request, response } => {
                Some(approval(id, e, &request, &response))
            }
            // A model call, turn or approval whose shape this host does not
            // know (a newer host's, or a hand-edited bundle): shown raw.
            _ => Some(raw(id, e)),
        };
        parts.extend(part);
    }
    let from = (at - 1) * PER_PAGE;
    html! {
        h2 { "Conversation" @if pages > 1 {
            " " small { "(" (from + 1) "–" (from + page.len()) " of " (all.len()) " model calls, turns and approvals)" }
        } }
        div.conv #conversation { @for p in parts { (p) } }
        @if pages > 1 { (pager(id, q, at, pages)) }
    }
}

/// The conversation's pager: its links keep the timeline's page.
fn pager(id: &str, q: &BTreeMap<String, String>, at: usize, pages: usize) -> Markup {
    let timeline = q
        .get("page")
        .map(|p| format!("page={}&", url(p)))
        .unwrap_or_default();
    let href = |k: usize| format!("/run/{}?{timeline}conv={k}#conversation", url(id));
    html! {
        p.pager {
            @if at > 1 { a #prev-conv href=(href(at - 1)) { "← earlier" } " " }
            "conversation page " (at) " of " (pages)
            @if at < pages { " " a #next-conv href=(href(at + 1)) { "later →" } }
        }
    }
}
