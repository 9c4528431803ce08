//! A simulated user's turn as a span: the agent's `user.say` is an
//! `invoke_agent user` span (the user is an agent the run's agent talks
//! to, as the GenAI conventions' agent spans name one), with the turn's
//! number, who played it, how the conversation ended if it did, and, for
//! a user played by a model, that model's call (`gen_ai.request.model`,
//! token usage, latencies). With `--content` the agent's message is its
//! input message and the user's reply its output message, in the GenAI
//! conventions' parts form, and an ending's reason is
//! `worldline.user.end_reason`. The calls the user made of its own tools
//! before answering are `execute_tool` spans under the turn's
//! (`worldline.ran_by` `user`, made in `lib.rs` as the agent's are).
//! `case from-trace` reads these spans back as a scripted user's rules
//! (one a turn, with its calls).

use crate::{Options, flag, int, text};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use serde_json::{Value, json};
use worldline_case::canon;
use worldline_log::log::call::{Said, Turn};
use worldline_log::log::event::By;

/// The span's name and `gen_ai.agent.name`.
pub(crate) const AGENT: &str = "user";

/// Who answered a turn, from its recorded `user.by` and the event's mark:
/// `model`, `script` (a scripted user's rule or default), `stand-in` (a
/// model-played user's scripted stand-in), `turn-limit`, `already-ended`,
/// `fuzz`, `fork` (a fork's `--respond`), `nobody` (the case has no user),
/// or `other`.
fn played_by(turn: &Turn, mark: Option<&By>) -> &'static str {
    if matches!(mark, Some(By::Fork)) {
        return "fork";
    }
    let by = turn.user.as_ref().and_then(|u| u.by.as_ref());
    let Some(by) = by.and_then(Value::as_object) else {
        return "other";
    };
    if by.contains_key("model") {
        "model"
    } else if by.get("stand_in") == Some(&Value::Bool(true)) {
        "stand-in"
    } else if by.contains_key("rule") || by.contains_key("default") {
        "script"
    } else if by.contains_key("turn_limit") {
        "turn-limit"
    } else if by.contains_key("already_ended") {
        "already-ended"
    } else if by.contains_key("fuzz") {
        "fuzz"
    } else if by.contains_key("nobody") {
        "nobody"
    } else {
        "other"
    }
}

/// The span of one user turn: its name and attributes.
pub(crate) fn span(
    said: &Said,
    turn: &Turn,
    mark: Option<&By>,
    opts: &Options,
) -> (String, Vec<KeyValue>) {
    let mut attrs = vec![
        text("gen_ai.operation.name", "invoke_agent"),
        text("gen_ai.agent.name", AGENT),
        text("worldline.user.played_by", played_by(turn, mark)),
    ];
    if let Some(n) = turn.user.as_ref().and_then(|u| u.turn) {
        attrs.push(int(
            "worldline.user.turn",
            i64::try_from(n).unwrap_or(i64::MAX),
        ));
    }
    // The model that played the user: its call, as a chat span says it.
    let by = turn.user.as_ref().and_then(|u| u.by.as_ref());
    if let Some(call) = by.map(|b| &b["model"]).filter(|c| c.is_object()) {
        if let Some(m) = call["model"].as_str() {
            attrs.push(text("gen_ai.request.model", m));
        }
        for (key, field) in [
            ("gen_ai.usage.input_tokens", "prompt_tokens"),
            ("gen_ai.usage.output_tokens", "completion_tokens"),
        ] {
            if let Some(n) = call["usage"][field].as_i64() {
                attrs.push(int(key, n));
            }
        }
        for key in ["real_latency_ms", "virtual_latency_ms"] {
            if let Some(ms) = call[key].as_i64() {
                attrs.push(int(&format!("worldline.{key}"), ms));
            }
        }
    }
    if let Some(end) = &turn.ended {
        attrs.push(flag("worldline.user.ended", true));
        attrs.push(flag("worldline.user.satisfied", end.satisfied()));
    }
    if opts.content {
        let parts = |role: &str, t: &str| json!([{"role": role, "parts": [{"type": "text", "content": t}]}]);
        attrs.push(text(
            "gen_ai.input.messages",
            canon::to_string(&parts("user", &said.message)),
        ));
        if let Some(reply) = &turn.reply {
            let mut out = parts("assistant", reply);
            out[0]["finish_reason"] = "stop".into();
            attrs.push(text("gen_ai.output.messages", canon::to_string(&out)));
        }
        if let Some(reason) = turn.ended.as_ref().and_then(|e| e.reason().as_str()) {
            attrs.push(text("worldline.user.end_reason", reason));
        }
    }
    (format!("invoke_agent {AGENT}"), attrs)
}
