//! Anthropic Messages over HTTP (`POST {base}/v1/messages`): the request is
//! translated into the chat-completions call every provider answers
//! (system, text, `tool_use` and `tool_result` blocks, tools, tool choice,
//! sampling), and the call's answer back into a Messages response, its
//! event stream (`message_start` … `message_stop`), or Anthropic's error
//! body and status.

use super::openai_chat::Reply;
use super::{Fidelity, HttpResponse, sse};
use serde_json::{Map, Value, json};
use worldline_case::error_kind::ErrorKind;

/// A Messages request as the model call it becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct MessagesRequest {
    /// The chat-completions request the provider answers.
    pub request: Value,
    pub stream: bool,
    /// How the answer is given under the run's rules.
    pub fidelity: Fidelity,
}

/// Characters per streamed text delta.
const CHUNK_CHARS: usize = 16;

/// An Anthropic error body.
pub fn error(status: u16, kind: &str, message: &str) -> HttpResponse {
    HttpResponse::json(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

fn invalid(message: &str) -> HttpResponse {
    error(400, "invalid_request_error", message)
}

/// The text of `content`: a string, or the text of its text blocks.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// One Messages message (the `at`th) as chat-completions messages; from
/// [`Fidelity::Vendor`] a role other than `user` or `assistant` is
/// Anthropic's 400 whatever the content (before, text content went on
/// with any role, or none).
fn messages_of(m: &Value, at: usize, fidelity: Fidelity) -> Result<Vec<Value>, HttpResponse> {
    let role = m["role"].as_str().unwrap_or_default();
    if fidelity == Fidelity::Vendor && !matches!(role, "user" | "assistant") {
        return Err(invalid(&match &m["role"] {
            Value::Null => format!("messages.{at}.role: Field required"),
            _ => format!("messages.{at}.role: Input should be 'user' or 'assistant'"),
        }));
    }
    let blocks = match &m["content"] {
        Value::String(s) => return Ok(vec![json!({"role": role, "content": s})]),
        Value::Array(b) => b,
        _ => {
            return Err(invalid(
                "messages: content must be a string or an array of blocks",
            ));
        }
    };
    let mut out = Vec::new();
    match role {
        "user" => {
            for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                let mut text = text_of(&b["content"]);
                if b["is_error"] == true && text.is_empty() {
                    text = "error".into();
                }
                out.push(
                    json!({"role": "tool", "tool_call_id": b["tool_use_id"], "content": text}),
                );
            }
            let text = text_of(&m["content"]);
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text}));
            }
        }
        "assistant" => {
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    json!({"id": b["id"], "type": "function", "function": {
                        "name": b["name"], "arguments": worldline_case::canon::to_string(&b["input"]),
                    }})
                })
                .collect();
            let text = text_of(&m["content"]);
            let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !calls.is_empty() {
                msg["tool_calls"] = json!(calls);
            }
            out.push(msg);
        }
        other => return Err(invalid(&format!("messages: unexpected role `{other}`"))),
    }
    Ok(out)
}

/// Read a request body: a JSON object with `messages`, else Anthropic's 400;
/// the answer is given as `fidelity` says.
pub fn parse(body: &[u8], fidelity: Fidelity) -> Result<MessagesRequest, HttpResponse> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| invalid(&format!("the body is not JSON: {e}")))?;
    let Some(messages) = v["messages"].as_array() else {
        return Err(invalid("messages: Field required"));
    };
    let mut chat = Vec::new();
    let system = text_of(&v["system"]);
    if !system.is_empty() {
        chat.push(json!({"role": "system", "content": system}));
    }
    for (at, m) in messages.iter().enumerate() {
        chat.extend(messages_of(m, at, fidelity)?);
    }
    let mut request = Map::new();
    request.insert("messages".into(), json!(chat));
    for (from, to) in [
        ("model", "model"),
        ("max_tokens", "max_tokens"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("stop_sequences", "stop"),
    ] {
        if let Some(x) = v.get(from) {
            request.insert(to.into(), x.clone());
        }
    }
    if let Some(tools) = v["tools"].as_array() {
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["input_schema"],
            }}))
            .collect();
        request.insert("tools".into(), json!(tools));
    }
    if let Some(choice) = v.get("tool_choice") {
        let c = match choice["type"].as_str() {
            Some("any") => json!("required"),
            Some("none") => json!("none"),
            Some("tool") => json!({"type": "function", "function": {"name": choice["name"]}}),
            _ => json!("auto"),
        };
        request.insert("tool_choice".into(), c);
    }
    Ok(MessagesRequest {
        request: Value::Object(request),
        stream: v["stream"] == true,
        fidelity,
    })
}

/// `finish_reason` → `stop_reason`: from [`Fidelity::Vendor`] a content
/// filter is Anthropic's `refusal` (before, `end_turn`).
fn stop_reason(finish: &Value, fidelity: Fidelity) -> &'static str {
    match (finish.as_str(), fidelity) {
        (Some("tool_calls"), _) => "tool_use",
        (Some("length"), _) => "max_tokens",
        (Some("content_filter"), Fidelity::Vendor) => "refusal",
        _ => "end_turn",
    }
}

/// A chat completion as a Messages response. From [`Fidelity::Vendor`] a
/// refusal is its text with `stop_reason` `refusal`, and a tool call whose
/// arguments are no JSON object (which Messages carries as the call's
/// `input`) is an error saying so; before, the refusal was dropped and
/// such arguments became `{}` (or went on as they were, an array).
pub fn message(completion: &Value, fidelity: Fidelity) -> Result<Value, String> {
    let choice = &completion["choices"][0];
    let msg = &choice["message"];
    let vendor = fidelity == Fidelity::Vendor;
    let refusal = msg["refusal"].as_str().filter(|r| vendor && !r.is_empty());
    let mut content = Vec::new();
    for text in [msg["content"].as_str(), refusal].into_iter().flatten() {
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
    }
    for c in msg["tool_calls"].as_array().into_iter().flatten() {
        let args = c["function"]["arguments"].as_str().unwrap_or("{}");
        let input = match serde_json::from_str::<Value>(args) {
            Ok(input @ Value::Object(_)) => input,
            Ok(input) if !vendor => input,
            _ if !vendor => json!({}),
            _ => {
                return Err(format!(
                    "the model's tool call `{}` has arguments that are no JSON object ({}), and Anthropic's Messages API carries a tool call's input as one: the answer cannot be given",
                    c["function"]["name"].as_str().unwrap_or("?"),
                    worldline_case::shown::text(args)
                ));
            }
        };
        content.push(json!({"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": input}));
    }
    let stop = match refusal {
        Some(_) => "refusal",
        None => stop_reason(&choice["finish_reason"], fidelity),
    };
    Ok(json!({
        "id": format!("msg_{}", completion["id"].as_str().unwrap_or("worldline")),
        "type": "message",
        "role": "assistant",
        "model": completion["model"],
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {
            "input_tokens": completion["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
            "output_tokens": completion["usage"]["completion_tokens"].as_u64().unwrap_or(0),
        },
    }))
}

/// A Messages response as Anthropic's event stream.
pub fn events(message: &Value) -> Vec<(String, Value)> {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(0);
    let mut out = vec![(
        "message_start".to_string(),
        json!({"type": "message_start", "message": start}),
    )];
    for (i, block) in message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let (empty, deltas): (Value, Vec<Value>) = if block["type"] == "tool_use" {
            let mut b = block.clone();
            b["input"] = json!({});
            let args = worldline_case::canon::to_string(&block["input"]);
            (
                b,
                vec![json!({"type": "input_json_delta", "partial_json": args})],
            )
        } else {
            let text = block["text"].as_str().unwrap_or_default();
            let pieces = sse::pieces(text, CHUNK_CHARS);
            let deltas = pieces
                .into_iter()
                .map(|p| json!({"type": "text_delta", "text": p}));
            (json!({"type": "text", "text": ""}), deltas.collect())
        };
        out.push((
            "content_block_start".into(),
            json!({"type": "content_block_start", "index": i, "content_block": empty}),
        ));
        for d in deltas {
            out.push((
                "content_block_delta".into(),
                json!({"type": "content_block_delta", "index": i, "delta": d}),
            ));
        }
        out.push((
            "content_block_stop".into(),
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    out.push((
        "message_delta".into(),
        json!({"type": "message_delta",
               "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
               "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
    ));
    out.push(("message_stop".into(), json!({"type": "message_stop"})));
    out
}

/// The answer to `req` for the mediated model call's `response`.
pub fn reply(req: &MessagesRequest, response: &Value) -> Reply {
    if let Some(e) = response.get("error") {
        let kind = ErrorKind::named(e["kind"].as_str().unwrap_or_default());
        let recorded = e["status"].as_u64().and_then(|s| u16::try_from(s).ok());
        if kind == ErrorKind::Timeout && recorded.is_none() {
            return Reply::Stall;
        }
        let (status, name) = match (recorded, kind) {
            (Some(429), _) => (429, "rate_limit_error"),
            (Some(s), _) if s >= 500 => (s, "api_error"),
            (Some(s), _) => (s, "invalid_request_error"),
            (None, ErrorKind::InvalidArgs) => (400, "invalid_request_error"),
            (None, ErrorKind::Denied) => (403, "permission_error"),
            (None, ErrorKind::NotFound) => (404, "not_found_error"),
            (None, ErrorKind::Conflict) => (409, "invalid_request_error"),
            (None, ErrorKind::Unavailable) => (529, "overloaded_error"),
            (None, ErrorKind::Failed | ErrorKind::Timeout) => (500, "api_error"),
        };
        let text = e["message"].as_str().unwrap_or("the model call failed");
        let mut r = error(status, name, text);
        if status == 429 || status == 529 || status == 503 {
            r = r.with_header("retry-after", "1");
        }
        return Reply::Http(r);
    }
    let m = match message(response.get("ok").unwrap_or(&Value::Null), req.fidelity) {
        Ok(m) => m,
        Err(why) => return Reply::Http(error(500, "api_error", &why)),
    };
    Reply::Http(if req.stream {
        sse::named_response(&events(&m))
    } else {
        HttpResponse::json(200, &m)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_messages_request_becomes_the_chat_call() {
        let body = json!({
            "model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "be brief",
            "tools": [{"name": "get_alert", "description": "d", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"},
            "messages": [
                {"role": "user", "content": "{\"alert\":\"ALERT-7\"}"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_1", "name": "get_alert", "input": {"id": "ALERT-7"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "{\"kind\":\"latency\"}"}]},
            ],
        });
        let r = parse(body.to_string().as_bytes(), Fidelity::Loose).unwrap();
        assert!(!r.stream);
        let m = &r.request["messages"];
        assert_eq!(m[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(
            m[2]["tool_calls"][0]["function"]["arguments"],
            "{\"id\":\"ALERT-7\"}"
        );
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "tu_1", "content": "{\"kind\":\"latency\"}"})
        );
        assert_eq!(r.request["tool_choice"], "required");
        assert_eq!(
            r.request["tools"][0]["function"]["parameters"]["type"],
            "object"
        );
        assert_eq!(r.request["max_tokens"], 1024);
        assert_eq!(parse(b"{}", Fidelity::Loose).unwrap_err().status, 400);
    }

    #[test]
    fn answers_errors_and_streams_are_anthropic_shaped() {
        let completion = json!({"id": "chatcmpl-scripted-1", "model": "scripted",
            "choices": [{"finish_reason": "tool_calls", "message": {"content": "checking",
            "tool_calls": [{"id": "call_1_0", "function": {"name": "list_deploys", "arguments": "{\"service\":\"checkout\"}"}}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3}});
        let req = parse(br#"{"messages":[],"stream":true}"#, Fidelity::Loose).unwrap();
        let m = message(&completion, Fidelity::Loose).unwrap();
        assert_eq!(m["stop_reason"], "tool_use");
        assert_eq!(m["content"][1]["input"]["service"], "checkout");
        assert_eq!(m["usage"]["output_tokens"], 3);
        let Reply::Http(r) = reply(&req, &json!({"ok": completion})) else {
            panic!()
        };
        let text = String::from_utf8(r.body).unwrap();
        assert!(text.starts_with("event: message_start\ndata: "), "{text}");
        assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
        assert!(text.contains("\"partial_json\":\"{\\\"service\\\":\\\"checkout\\\"}\""));
        let down = json!({"error": {"kind": "unavailable", "message": "busy"}});
        let Reply::Http(r) = reply(&req, &down) else {
            panic!()
        };
        assert_eq!(r.status, 529);
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["error"]["type"], "overloaded_error");
        let timeout = json!({"error": {"kind": "timeout", "message": "x"}});
        assert_eq!(reply(&req, &timeout), Reply::Stall);
    }
}
