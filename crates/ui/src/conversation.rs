//! A run as a conversation: the messages each model call added, the
//! model's answer, the agent's turns with the user and the approvals, in
//! the order they happened. Each tool call shows once: in the answer that
//! asked for it (linked to its event), its result below as a tool message;
//! the answer is not repeated when the next request carries it back.

use super::calls::TOOL_CALL;
use super::html::url;
use super::table::rows_or_json;
use maud::{Markup, html};
use serde_json::Value;
use std::ops::Range;
use worldline_case::canon;
use worldline_engine::log::Event;
use worldline_engine::mediate::conversation::{APPROVAL, SAY};
use worldline_engine::mediate::model::CALL as MODEL_CALL;

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
        .filter(|x| x.call == TOOL_CALL);
    html! {
        @for c in calls.as_array().into_iter().flatten() {
            @let name = c["function"]["name"].as_str().unwrap_or("?");
            div.mono.call {
                "→ " (name) "(" (text_of(&c["function"]["arguments"])) ")"
                @if let Some(x) = later.find(|x| x.request["name"] == name) { " " (link(id, x.seq)) }
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

/// One model call: the new messages, then the answer.
fn model_call(
    id: &str,
    events: &[Event],
    i: usize,
    seen: &mut usize,
    previous: &mut Option<Value>,
) -> Markup {
    let e = &events[i];
    let messages = e.request["request"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let new: Vec<Markup> = messages
        .get((*seen).min(messages.len())..)
        .unwrap_or(&[])
        .iter()
        .filter_map(|m| message(m, previous.as_ref()))
        .collect();
    *seen = messages.len();
    let answer = &e.response["ok"]["choices"][0]["message"];
    *previous = Some(answer.clone());
    html! {
        @for m in new { (m) }
        div.msg.assistant {
            b { "model" } " " (link(id, e.seq)) " "
            @match e.response.get("error") {
                Some(err) => { span.badge.bad { (err["kind"].as_str().unwrap_or("?")) } " " (text_of(&err["message"])) }
                None => { (text_of(&answer["content"])) (tool_calls(id, events, i, &answer["tool_calls"])) }
            }
        }
    }
}

/// Who answered a user turn: the player's rule or model, or a fork.
fn by(e: &Event) -> String {
    match (&e.response["user"]["by"], &e.injected) {
        (Value::Null, Some(i)) if i["action"] == "fork-respond" => "answered by a fork".into(),
        (Value::Null, _) => String::new(),
        (b, _) => canon::to_string(b),
    }
}

/// A user turn: the agent's message and the user's reply (or leaving).
fn user_turn(id: &str, e: &Event) -> Markup {
    let r = &e.response;
    html! {
        div.msg.agent { b { "agent → user" } " " (link(id, e.seq)) " " (text_of(&e.request["message"])) }
        div.msg.user {
            b { "user" } " "
            @if let Some(reply) = r.get("reply") { (text_of(reply)) }
            @else if let Some(end) = r.get("ended") {
                "ended (" (if end["satisfied"] == true { "satisfied" } else { "not satisfied" }) "): " (text_of(&end["reason"]))
            } @else { span.mono { (canon::to_string(r)) } }
            " " span.keys { (by(e)) }
        }
    }
}

fn approval(id: &str, e: &Event) -> Markup {
    html! {
        div.msg.approval {
            b { "approval" } " " (link(id, e.seq)) " " (text_of(&e.request["kind"])) " "
            span.mono { (text_of(&e.request["details"])) } " → "
            @match e.response.get("denied") { Some(r) => { span.badge.bad { "denied" } " " (text_of(r)) } None => { span.badge.ok { "approved" } } }
        }
    }
}

/// The conversation of the events in `range` (nothing when it has none).
pub fn section(id: &str, events: &[Event], range: Range<usize>) -> Markup {
    let (mut seen, mut previous) = (0, None);
    let mut parts = Vec::new();
    for (i, e) in events.iter().enumerate().take(range.end) {
        let part = match e.call.as_str() {
            MODEL_CALL => model_call(id, events, i, &mut seen, &mut previous),
            SAY => user_turn(id, e),
            APPROVAL => approval(id, e),
            _ => continue,
        };
        if i >= range.start {
            parts.push(part);
        }
    }
    if parts.is_empty() {
        return html! {};
    }
    html! { h2 { "Conversation" } div.conv #conversation { @for p in parts { (p) } } }
}
