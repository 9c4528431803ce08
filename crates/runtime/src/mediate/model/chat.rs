//! OpenAI chat-completions shapes as the host reads and builds them: the
//! last user/tool message a rule looks at, the sampling parameters that
//! are recorded, and complete responses built from scripted replies.

use serde_json::{Map, Value, json};
use worldline_case::case::model::{Reply, ReplyTable};

/// Sampling parameters of a request, as recorded with each call.
pub(crate) fn params(request: &Value) -> Value {
    let mut m = Map::new();
    for key in [
        "model",
        "temperature",
        "top_p",
        "seed",
        "max_tokens",
        "stop",
    ] {
        if let Some(v) = request.get(key) {
            m.insert(key.to_string(), v.clone());
        }
    }
    Value::Object(m)
}

/// The last message with role `user` or `tool`: its content as text, and
/// the message with `content` parsed when that text is JSON.
pub(crate) fn last_input(request: &Value) -> Option<(String, Value)> {
    let messages = request.get("messages")?.as_array()?;
    let m = messages
        .iter()
        .rev()
        .find(|m| matches!(m["role"].as_str(), Some("user" | "tool")))?;
    let text = match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        // Content parts: keep their text.
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    };
    let mut parsed = m.clone();
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        parsed["content"] = v;
    }
    Some((text, parsed))
}

/// A rough, deterministic token count (four bytes a token).
fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// The scripted model's prompt tokens, `tokens` of the canonical text of
/// the request's `messages`, counted from the request before: the
/// messages it shares with that one (compared, not serialized) keep their
/// lengths, only the ones after are serialized. A conversation that sends
/// its whole history each call costs a serialization of what it added,
/// not of all of it (issue 40; the counts are the same as before).
#[derive(Default)]
pub(crate) struct Prompt {
    /// The last request's messages and each one's canonical length.
    messages: Vec<(Value, usize)>,
    /// The model call the last request was recorded as.
    of: Option<u64>,
}

impl Prompt {
    /// The prompt tokens of `request`, recorded as model call `seq`.
    /// `appended`: the request holds only the messages it appended to the
    /// last one's (a request read as resent, decision 0392; see
    /// [`Prompt::counted`]).
    pub(crate) fn tokens(&mut self, request: &Value, seq: Option<u64>, appended: bool) -> u64 {
        self.of = seq;
        let Some(messages) = request.get("messages").and_then(Value::as_array) else {
            self.messages.clear();
            return tokens(&worldline_case::canon::to_string(
                request.get("messages").unwrap_or(&Value::Null),
            ));
        };
        let same = if appended {
            self.messages.len()
        } else {
            self.messages
                .iter()
                .zip(messages)
                .take_while(|((kept, _), m)| kept == *m)
                .count()
        };
        let new = if appended {
            messages.as_slice()
        } else {
            &messages[same..]
        };
        self.messages.truncate(same);
        for m in new {
            let len = worldline_case::canon::to_string(m).len();
            self.messages.push((m.clone(), len));
        }
        // `[`, `]`, the commas between, and each message.
        let len = 2
            + self.messages.len().saturating_sub(1)
            + self.messages.iter().map(|(_, l)| l).sum::<usize>();
        (len as u64).div_ceil(4)
    }

    /// Whether the last request counted is model call `seq`'s, with
    /// `count` messages: a request that resends its conversation can be
    /// counted from what it appended.
    pub(crate) fn counted(&self, seq: u64, count: usize) -> bool {
        self.of == Some(seq) && self.messages.len() == count
    }
}

/// The reply as a table.
pub(crate) fn table(reply: &Reply) -> ReplyTable {
    match reply {
        Reply::Text(t) => ReplyTable {
            content: Some(t.clone()),
            ..ReplyTable::default()
        },
        Reply::Full(t) => t.clone(),
    }
}

/// A complete chat-completions response for a scripted reply. `n` numbers
/// the model call (ids are derived from it), `created` is virtual time,
/// `prompt_tokens` from `Prompt::tokens`.
pub(crate) fn completion(reply: &ReplyTable, prompt_tokens: u64, n: u64, created: i64) -> Value {
    let tool_calls: Vec<Value> = reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let arguments = match &c.arguments {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_string(),
                v => worldline_case::canon::to_string(v),
            };
            json!({
                "id": format!("call_{n}_{i}"),
                "type": "function",
                "function": {"name": c.name, "arguments": arguments},
            })
        })
        .collect();
    let finish = reply.finish_reason.clone().unwrap_or_else(|| {
        if tool_calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        }
    });
    let completion_tokens = tokens(reply.content.as_deref().unwrap_or(""))
        + tool_calls
            .iter()
            .map(|c| tokens(&c["function"].to_string()))
            .sum::<u64>();
    let mut message = json!({"role": "assistant", "content": reply.content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    json!({
        "id": format!("chatcmpl-scripted-{n}"),
        "object": "chat.completion",
        "created": created,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}

/// Whether an endpoint's answer is a chat completion the agent can use.
pub(crate) fn is_completion(v: &Value) -> bool {
    v.get("choices").and_then(Value::as_array).is_some()
}

/// Whether a chat completion holds no choice (`choices: []`), which no
/// agent can read an answer from.
pub(crate) fn no_choice(v: &Value) -> bool {
    v["choices"].as_array().is_some_and(Vec::is_empty)
}

/// The most choices a request's `n` asks for that OpenAI takes.
const MOST_CHOICES: u64 = 128;

/// A scripted completion as the `n` choices a request asks for (`n` from
/// 2 to [`MOST_CHOICES`]), each the reply, the usage counting each
/// (rules 9); any other `n` leaves its one choice.
pub(crate) fn as_choices(completion: &mut Value, n: &Value) {
    let Some(n) = n.as_u64().filter(|n| (2..=MOST_CHOICES).contains(n)) else {
        return;
    };
    let one = completion["choices"][0].clone();
    let choices: Vec<Value> = (0..n)
        .map(|i| {
            let mut c = one.clone();
            c["index"] = json!(i);
            c
        })
        .collect();
    completion["choices"] = json!(choices);
    let usage = &mut completion["usage"];
    let each = usage["completion_tokens"].as_u64().unwrap_or(0);
    let prompt = usage["prompt_tokens"].as_u64().unwrap_or(0);
    usage["completion_tokens"] = json!(each * n);
    usage["total_tokens"] = json!(prompt + each * n);
}

/// `finish_reason` of the first choice.
pub(crate) fn finish_reason(v: &Value) -> Value {
    v["choices"][0]["finish_reason"].clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::case::model::ScriptedToolCall;

    #[test]
    fn the_last_tool_message_is_read_with_json_content() {
        let req = json!({"messages": [
            {"role": "user", "content": "close T-100"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"id\":\"D-42\"}"},
        ]});
        let (text, msg) = last_input(&req).unwrap();
        assert_eq!(text, "{\"id\":\"D-42\"}");
        assert_eq!(msg["content"]["id"], "D-42");
    }

    #[test]
    fn prompt_tokens_counted_from_the_request_before_are_the_whole_count() {
        let whole = |r: &Value| {
            tokens(&worldline_case::canon::to_string(
                r.get("messages").unwrap_or(&Value::Null),
            ))
        };
        let mut prompt = Prompt::default();
        let mut messages = vec![json!({"role": "system", "content": "be brief"})];
        let mut check = |messages: &[Value]| {
            let r = json!({"model": "m", "messages": messages});
            assert_eq!(prompt.tokens(&r, None, false), whole(&r), "{r}");
        };
        check(&[]);
        for i in 0..6 {
            check(&messages);
            messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "é\"x".repeat(i)}));
        }
        // A request that changed an earlier message (a fork's), a shorter
        // one, and one without a list.
        messages[1]["content"] = json!("other");
        check(&messages);
        check(&messages[..2]);
        // Counted from what a resent request appended (decision 0392).
        let mut prompt = Prompt::default();
        let r = json!({"messages": messages[..3]});
        assert_eq!(prompt.tokens(&r, Some(4), false), whole(&r));
        assert!(prompt.counted(4, 3) && !prompt.counted(5, 3) && !prompt.counted(4, 2));
        let appended = json!({"messages": messages[3..]});
        assert_eq!(
            prompt.tokens(&appended, Some(6), true),
            whole(&json!({"messages": messages}))
        );
        assert!(prompt.counted(6, messages.len()));
        let mut prompt = Prompt::default();
        let r = json!({"model": "m"});
        assert_eq!(prompt.tokens(&r, None, false), whole(&r));
    }

    #[test]
    fn scripted_replies_become_full_completions() {
        let reply = ReplyTable {
            tool_calls: vec![ScriptedToolCall {
                name: "get_ticket".into(),
                arguments: json!({"id": "T-100"}),
            }],
            ..ReplyTable::default()
        };
        let v = completion(
            &reply,
            Prompt::default().tokens(&json!({"messages": []}), None, false),
            3,
            7,
        );
        assert!(is_completion(&v));
        assert_eq!(finish_reason(&v), "tool_calls");
        let call = &v["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["id"], "call_3_0");
        assert_eq!(call["function"]["arguments"], "{\"id\":\"T-100\"}");
        assert_eq!(
            v["usage"]["total_tokens"],
            v["usage"]["completion_tokens"].as_u64().unwrap() + 1
        );
    }
}
