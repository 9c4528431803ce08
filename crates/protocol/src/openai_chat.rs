//! OpenAI Chat Completions over HTTP: the request body becomes the model
//! call `model.complete` makes (the transport's own keys, `stream` and
//! `stream_options`, set aside), and the call's answer becomes what
//! api.openai.com would send: the completion, a `chat.completion.chunk`
//! event stream, or an error body with the status OpenAI uses for it.
//!
//! Why model faults reach an HTTP agent as the vendor's errors (was decision
//! 0164): the point of answering HTTP is that the agent's real retry code is
//! what gets evaluated, so an error kind becomes the status the vendor uses
//! (429 and 503 with `retry-after: 1`; a recorded `status` wins) and each SDK
//! retry is its own recorded model call; a `timeout` is no response at all,
//! stalling in virtual time to the agent's first-byte timeout (or 600 s), since
//! SDKs treat 408 or 504 unlike a timeout. A `rate-limited` error kind would
//! have changed the WIT for every guest.

use super::{Fidelity, HttpResponse, sse};
use serde_json::{Value, json};
use worldline_case::error_kind::ErrorKind;

/// A Chat Completions request, split into the model call and how the
/// answer travels back.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The body as the provider sees it (without `stream`, `stream_options`).
    pub request: Value,
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk carries the usage.
    pub include_usage: bool,
    /// How the answer is streamed under the run's rules.
    pub fidelity: Fidelity,
}

/// How the answer reaches the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Http(HttpResponse),
    /// A timeout: the request stalls (in virtual time) and never answers.
    Stall,
}

/// Characters per streamed content chunk.
const CHUNK_CHARS: usize = 16;

/// An OpenAI error body.
pub fn error(status: u16, kind: &str, code: Option<&str>, message: &str) -> HttpResponse {
    HttpResponse::json(
        status,
        &json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
    )
}

/// The roles Chat Completions takes, in the order OpenAI's 400 names them.
const ROLES: [&str; 6] = [
    "system",
    "assistant",
    "user",
    "function",
    "tool",
    "developer",
];

/// OpenAI's 400 for the request's `messages`, as api.openai.com words it:
/// missing, not an array, empty, or a message whose `role` it does not
/// take; `None` when they are well formed to that extent.
fn messages_refusal(fields: &serde_json::Map<String, Value>) -> Option<HttpResponse> {
    let refused = |param: &str, code: &str, message: String| {
        let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}});
        Some(HttpResponse::json(400, &body))
    };
    let messages = match fields.get("messages") {
        None | Some(Value::Null) => {
            return refused(
                "messages",
                "missing_required_parameter",
                "Missing required parameter: 'messages'.".into(),
            );
        }
        Some(Value::Array(m)) => m,
        Some(other) => {
            let kind = match other {
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                _ => "an object",
            };
            return refused(
                "messages",
                "invalid_type",
                format!(
                    "Invalid type for 'messages': expected an array of objects, but got {kind} instead."
                ),
            );
        }
    };
    if messages.is_empty() {
        return refused(
            "messages",
            "empty_array",
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.".into(),
        );
    }
    for (i, m) in messages.iter().enumerate() {
        let role = &m["role"];
        if role.is_null() {
            return refused(
                &format!("messages[{i}].role"),
                "missing_required_parameter",
                format!("Missing required parameter: 'messages[{i}].role'."),
            );
        }
        if !role.as_str().is_some_and(|r| ROLES.contains(&r)) {
            let shown = role.as_str().map_or_else(|| role.to_string(), String::from);
            return refused(
                &format!("messages[{i}].role"),
                "invalid_value",
                format!(
                    "Invalid value: '{shown}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."
                ),
            );
        }
    }
    None
}

/// Read a request body; a body that is not a JSON object is answered with
/// OpenAI's 400, and so, when `strict` (rules 4), are `messages` OpenAI
/// would refuse ([`messages_refusal`]); the answer is given as `fidelity`
/// says.
pub fn parse(body: &[u8], strict: bool, fidelity: Fidelity) -> Result<ChatRequest, HttpResponse> {
    let mut request: Value = serde_json::from_slice(body).map_err(|e| {
        error(
            400,
            "invalid_request_error",
            None,
            &format!("We could not parse the JSON body of your request. ({e})"),
        )
    })?;
    let Some(fields) = request.as_object_mut() else {
        return Err(error(
            400,
            "invalid_request_error",
            None,
            "The request body must be a JSON object.",
        ));
    };
    if let Some(refused) = messages_refusal(fields).filter(|_| strict) {
        return Err(refused);
    }
    let stream = fields.remove("stream").and_then(|v| v.as_bool()) == Some(true);
    let options = fields.remove("stream_options");
    let include_usage = options
        .as_ref()
        .and_then(|o| o["include_usage"].as_bool())
        .unwrap_or(false);
    Ok(ChatRequest {
        request,
        stream,
        include_usage,
        fidelity,
    })
}

/// The status, error type and code OpenAI answers a failure of `kind`
/// with; a recorded `status` (an upstream's 429, a scripted one) wins.
fn status_of(kind: ErrorKind, status: Option<u16>) -> (u16, &'static str, Option<&'static str>) {
    match (status, kind) {
        (Some(429), _) => (429, "requests", Some("rate_limit_exceeded")),
        (Some(s), _) if s >= 500 => (s, "server_error", None),
        (Some(s), _) if s >= 400 => (s, "invalid_request_error", None),
        (_, ErrorKind::InvalidArgs) => (400, "invalid_request_error", None),
        (_, ErrorKind::Denied) => (403, "permission_error", None),
        (_, ErrorKind::NotFound) => (404, "invalid_request_error", Some("model_not_found")),
        (_, ErrorKind::Conflict) => (409, "invalid_request_error", None),
        (_, ErrorKind::Unavailable) => (503, "server_error", None),
        (_, ErrorKind::Failed | ErrorKind::Timeout) => (500, "server_error", None),
    }
}

/// The answer to `chat` for the mediated model call's `response`
/// (`{"ok": completion}` or `{"error": {kind, message, status?}}`).
pub fn reply(chat: &ChatRequest, response: &Value) -> Reply {
    if let Some(e) = response.get("error") {
        let kind = ErrorKind::named(e["kind"].as_str().unwrap_or_default());
        if kind == ErrorKind::Timeout && e.get("status").is_none() {
            return Reply::Stall;
        }
        let recorded = e["status"].as_u64().and_then(|s| u16::try_from(s).ok());
        let (status, kind, code) = status_of(kind, recorded);
        let message = e["message"].as_str().unwrap_or("the model call failed");
        let mut r = error(status, kind, code, message);
        if status == 429 || status == 503 {
            r = r.with_header("retry-after", "1");
        }
        return Reply::Http(r);
    }
    let completion = response.get("ok").unwrap_or(&Value::Null);
    Reply::Http(if chat.stream {
        let events = chunks(completion, chat.include_usage, chat.fidelity);
        sse::response(&events, "data: [DONE]\n\n")
    } else {
        HttpResponse::json(200, completion)
    })
}

/// A completion as the `chat.completion.chunk` events OpenAI streams: for
/// each choice (the first only under [`Fidelity::Loose`]) the role, its
/// refusal (from [`Fidelity::Vendor`]) and content in pieces, each tool
/// call whole and the finish reason; then the usage when asked for.
pub fn chunks(completion: &Value, include_usage: bool, fidelity: Fidelity) -> Vec<Value> {
    let chunk = |choices: Value| {
        json!({
            "id": completion["id"],
            "object": "chat.completion.chunk",
            "created": completion["created"],
            "model": completion["model"],
            "choices": choices,
        })
    };
    let choices: Vec<(Value, &Value)> = match fidelity {
        Fidelity::Loose => vec![(json!(0), &completion["choices"][0])],
        Fidelity::Vendor => (completion["choices"].as_array().into_iter().flatten())
            .enumerate()
            .map(|(i, c)| (c.get("index").cloned().unwrap_or(json!(i)), c))
            .collect(),
    };
    let mut out = Vec::new();
    for (index, choice) in choices {
        let delta = |d: Value| chunk(json!([{"index": index, "delta": d, "finish_reason": null}]));
        let message = &choice["message"];
        let refusal = message["refusal"]
            .as_str()
            .filter(|_| fidelity == Fidelity::Vendor);
        match refusal {
            Some(refusal) => {
                out.push(delta(json!({"role": "assistant", "refusal": ""})));
                for piece in sse::pieces(refusal, CHUNK_CHARS) {
                    out.push(delta(json!({"refusal": piece})));
                }
            }
            None => out.push(delta(json!({"role": "assistant", "content": ""}))),
        }
        if let Some(text) = message["content"].as_str() {
            for piece in sse::pieces(text, CHUNK_CHARS) {
                out.push(delta(json!({"content": piece})));
            }
        }
        if let Some(calls) = message["tool_calls"].as_array() {
            for (i, c) in calls.iter().enumerate() {
                let mut call = c.clone();
                call["index"] = json!(i);
                out.push(delta(json!({"tool_calls": [call]})));
            }
        }
        out.push(chunk(
            json!([{"index": index, "delta": {}, "finish_reason": choice["finish_reason"]}]),
        ));
    }
    if include_usage {
        let mut last = chunk(json!([]));
        last["usage"] = completion["usage"].clone();
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn completion() -> Value {
        json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 7, "model": "scripted",
               "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
               "content": null, "tool_calls": [{"id": "call_1_0", "type": "function",
               "function": {"name": "get_alert", "arguments": "{}"}}]}}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}})
    }

    #[test]
    fn the_transport_keys_are_set_aside() {
        let body = br#"{"model":"gpt-4o","messages":[],"stream":true,"stream_options":{"include_usage":true},"temperature":0}"#;
        let chat = parse(body, false, Fidelity::Loose).unwrap();
        assert!(chat.stream && chat.include_usage);
        assert_eq!(
            chat.request,
            json!({"model": "gpt-4o", "messages": [], "temperature": 0})
        );
        assert_eq!(
            parse(b"[1]", true, Fidelity::Loose).unwrap_err().status,
            400
        );
        assert_eq!(parse(b"{", true, Fidelity::Loose).unwrap_err().status, 400);
    }

    #[test]
    fn messages_openai_refuses_are_its_400_when_strict() {
        let refusal = |body: &str| {
            let r = parse(body.as_bytes(), true, Fidelity::Loose).unwrap_err();
            assert_eq!(r.status, 400);
            let e = serde_json::from_slice::<Value>(&r.body).unwrap()["error"].clone();
            assert_eq!(e["type"], "invalid_request_error");
            (e["param"].clone(), e["code"].clone(), e["message"].clone())
        };
        let (param, code, _) = refusal(r#"{"model":"m"}"#);
        assert_eq!(
            (param, code),
            (json!("messages"), json!("missing_required_parameter"))
        );
        let (_, code, _) = refusal(r#"{"messages":"hi"}"#);
        assert_eq!(code, "invalid_type");
        let (_, code, _) = refusal(r#"{"messages":[]}"#);
        assert_eq!(code, "empty_array");
        let (param, code, message) =
            refusal(r#"{"messages":[{"role":"user","content":"a"},{"role":"bot"}]}"#);
        assert_eq!(
            (param, code),
            (json!("messages[1].role"), json!("invalid_value"))
        );
        assert!(
            message
                .as_str()
                .unwrap()
                .starts_with("Invalid value: 'bot'.")
        );
        let (param, code, _) = refusal(r#"{"messages":[{"content":"a"}]}"#);
        assert_eq!(
            (param, code),
            (
                json!("messages[0].role"),
                json!("missing_required_parameter")
            )
        );
        for role in ROLES {
            let body = format!(r#"{{"messages":[{{"role":"{role}"}}]}}"#);
            assert!(
                parse(body.as_bytes(), true, Fidelity::Loose).is_ok(),
                "{role}"
            );
        }
        assert!(parse(br#"{"model":"m"}"#, false, Fidelity::Loose).is_ok());
    }

    #[test]
    fn answers_and_errors_are_what_openai_sends() {
        let chat = parse(br#"{"messages":[]}"#, false, Fidelity::Loose).unwrap();
        let Reply::Http(ok) = reply(&chat, &json!({"ok": completion()})) else {
            panic!()
        };
        assert_eq!(ok.status, 200);
        assert_eq!(
            serde_json::from_slice::<Value>(&ok.body).unwrap(),
            completion()
        );
        let limited =
            json!({"error": {"kind": "unavailable", "message": "slow down", "status": 429}});
        let Reply::Http(r) = reply(&chat, &limited) else {
            panic!()
        };
        assert_eq!(r.status, 429);
        assert!(r.headers.contains(&("retry-after".into(), "1".into())));
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["error"]["code"], "rate_limit_exceeded");
        assert_eq!(body["error"]["message"], "slow down");
        let down = json!({"error": {"kind": "unavailable", "message": "down"}});
        assert!(matches!(reply(&chat, &down), Reply::Http(r) if r.status == 503));
        let failed = json!({"error": {"kind": "failed", "message": "x"}});
        assert!(matches!(reply(&chat, &failed), Reply::Http(r) if r.status == 500));
        let timeout = json!({"error": {"kind": "timeout", "message": "x"}});
        assert_eq!(reply(&chat, &timeout), Reply::Stall);
    }

    #[test]
    fn a_stream_is_chunks_then_done() {
        let chat = parse(br#"{"messages":[],"stream":true}"#, false, Fidelity::Loose).unwrap();
        let mut c = completion();
        c["choices"][0]["message"]["content"] = json!("abcdefghijklmnopqrstuvwxyz");
        let Reply::Http(r) = reply(&chat, &json!({"ok": c})) else {
            panic!()
        };
        let text = String::from_utf8(r.body).unwrap();
        let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
        // role, two content pieces, one tool call, the finish, [DONE].
        assert_eq!(events.len(), 6);
        assert_eq!(events[5], "data: [DONE]");
        let finish: Value = serde_json::from_str(&events[4]["data: ".len()..]).unwrap();
        assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
        let call: Value = serde_json::from_str(&events[3]["data: ".len()..]).unwrap();
        assert_eq!(call["choices"][0]["delta"]["tool_calls"][0]["index"], 0);
        assert_eq!(r.headers[0].1, "text/event-stream");
    }
}
