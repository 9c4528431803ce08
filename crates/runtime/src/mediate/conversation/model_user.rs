//! The model-played user: the case's persona is the system message, the
//! agent's messages are the `user` turns and the user's own replies the
//! `assistant` turns, and the request goes through the same providers as
//! the agent's model calls (scripted, openai, recorded). A reply holding
//! the satisfied or end marker ends the conversation. When the world has
//! `[[user_tools]]` the request carries them as `tools`; `prior_turns` come
//! first, and the persona alone is the system message when
//! `append_instructions = false` (a benchmark's own prompt, decision 0386); a reply with tool
//! calls is a step, its calls made as `user/tools.call` events and their
//! results sent back as `tool` messages, until the model answers with text
//! or [`MAX_STEPS`] steps have called tools.

use serde_json::{Value, json};
use worldline_case::case::user::{Line, UserConfig};
use worldline_case::world::Tool;

/// The system message: the persona, then the instructions worldline
/// appends unless the case says not to.
fn system(config: &UserConfig) -> String {
    if !config.append_instructions {
        return config.persona.clone();
    }
    format!(
        "{}\n\nYou are the user in this conversation; the other side is an assistant working for you. Answer as the user, briefly. When your request has been handled to your satisfaction, reply with {} and a short goodbye; when you give up, reply with {} and why.",
        config.persona.trim(),
        config.satisfied_marker,
        config.end_marker.0.join(" or ")
    )
}

/// The most model steps with tool calls in one user turn; at the limit the
/// user leaves, unsatisfied, without a further model call.
pub(crate) const MAX_STEPS: usize = 8;

/// The `[[user_tools]]` as OpenAI-style `tools` (as the agent's requests
/// carry them).
pub(crate) fn tools(user_tools: &[Tool]) -> Vec<Value> {
    user_tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.params,
            }})
        })
        .collect()
}

/// The tool calls of a model step's answer: `(id, name, args)`, the
/// arguments parsed from their JSON text (unparsable text is sent as a
/// string, which the tool refuses).
pub(crate) fn tool_calls(response: &Value) -> Vec<(String, String, Value)> {
    let Some(calls) = response["ok"]["choices"][0]["message"]["tool_calls"].as_array() else {
        return Vec::new();
    };
    calls
        .iter()
        .map(|c| {
            let text = c["function"]["arguments"].as_str().unwrap_or("{}");
            let args = serde_json::from_str(text).unwrap_or_else(|_| json!(text));
            (
                c["id"].as_str().unwrap_or("").to_string(),
                c["function"]["name"].as_str().unwrap_or("").to_string(),
                args,
            )
        })
        .collect()
}

/// The chat-completions request for the next user line: `transcript` is
/// the earlier `(agent message, user reply)` turns, `message` the agent's
/// new one, `tools` the user's tools (none: no `tools` key, as before
/// they existed) and `steps` this turn's earlier tool-calling steps (the
/// assistant message and the `tool` messages answering it).
pub(crate) fn request(
    config: &UserConfig,
    transcript: &[(String, String)],
    message: &str,
    tools: &[Value],
    steps: &[Value],
) -> Value {
    let mut messages = vec![json!({"role": "system", "content": system(config)})];
    for (said, replied) in config.prior_turns.iter().chain(transcript) {
        messages.push(json!({"role": "user", "content": said}));
        messages.push(json!({"role": "assistant", "content": replied}));
    }
    messages.push(json!({"role": "user", "content": message}));
    messages.extend(steps.iter().cloned());
    if tools.is_empty() {
        json!({"messages": messages})
    } else {
        json!({"messages": messages, "tools": tools})
    }
}

/// The user's line from the model's answer (`{"ok": completion}` or
/// `{"error": ...}`).
pub(crate) fn line(config: &UserConfig, response: &Value) -> Line {
    if let Some(e) = response.get("error") {
        return Line {
            end: Some(format!(
                "the model playing the user failed ({}: {})",
                e["kind"].as_str().unwrap_or("failed"),
                e["message"].as_str().unwrap_or("")
            )),
            ..Line::default()
        };
    }
    let text = response["ok"]["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let markers = std::iter::once((&config.satisfied_marker, true))
        .chain(config.end_marker.0.iter().map(|m| (m, false)));
    for (marker, satisfied) in markers {
        if text.contains(marker.as_str()) {
            let reason = text.replace(marker.as_str(), "").trim().to_string();
            return Line {
                end: Some(if reason.is_empty() {
                    marker.clone()
                } else {
                    reason
                }),
                satisfied,
                reply: None,
            };
        }
    }
    Line {
        reply: Some(text),
        ..Line::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_flip_and_markers_end_the_conversation() {
        let c = UserConfig {
            persona: "You want a refund for order A-1.".into(),
            ..UserConfig::default()
        };
        let r = request(
            &c,
            &[("Hi?".into(), "Refund please".into())],
            "Which order?",
            &[],
            &[],
        );
        assert!(r.get("tools").is_none());
        let roles: Vec<&str> = r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        let said = |t: &str| {
            line(
                &c,
                &json!({"ok": {"choices": [{"message": {"content": t}}]}}),
            )
        };
        assert_eq!(said("A-1").reply.as_deref(), Some("A-1"));
        let done = said("[SATISFIED] Thanks!");
        assert_eq!(
            (done.end.as_deref(), done.satisfied),
            (Some("Thanks!"), true)
        );
        let gave_up = said("[END]");
        assert_eq!(
            (gave_up.end.as_deref(), gave_up.satisfied),
            (Some("[END]"), false)
        );
        let failed = line(
            &c,
            &json!({"error": {"kind": "timeout", "message": "slow"}}),
        );
        assert!(failed.end.unwrap().contains("timeout: slow"));
    }

    #[test]
    fn a_benchmark_prompt_stands_alone_after_its_prior_turns() {
        let c: UserConfig = toml::from_str(
            "played_by = 'model'\ndefault = 'stand-in'\npersona = 'tau2 prompt'\nappend_instructions = false\nsatisfied_marker = '###STOP###'\nend_marker = ['###TRANSFER###', '###OUT-OF-SCOPE###']\nprior_turns = [['Hi! How can I help you today?', 'My flight.']]",
        )
        .unwrap();
        let r = request(&c, &[], "Which one?", &[], &[]);
        assert_eq!(
            r["messages"],
            json!([
                {"role": "system", "content": "tau2 prompt"},
                {"role": "user", "content": "Hi! How can I help you today?"},
                {"role": "assistant", "content": "My flight."},
                {"role": "user", "content": "Which one?"},
            ])
        );
        let said = |t: &str| {
            line(
                &c,
                &json!({"ok": {"choices": [{"message": {"content": t}}]}}),
            )
        };
        let out = said("###OUT-OF-SCOPE###");
        assert_eq!(
            (out.end.as_deref(), out.satisfied),
            (Some("###OUT-OF-SCOPE###"), false)
        );
        assert!(said("Done ###STOP###").satisfied);
    }
}
