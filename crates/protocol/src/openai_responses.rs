//! OpenAI Responses over HTTP (`POST {base}/responses`): the request's
//! `instructions` and `input` items (messages, `function_call`,
//! `function_call_output`) become the chat-completions call every
//! provider answers, and the answer a `response` object (`message` and
//! `function_call` output items), its event stream, or OpenAI's error.
//! The API's server-side state (`previous_response_id`, `store`d
//! conversations) does not exist in a world: such a request is a 400.

use super::openai_chat::{self, Reply};
use super::{Fidelity, HttpResponse, sse};
use serde_json::{Map, Value, json};

/// A Responses request as the model call it becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesRequest {
    pub request: Value,
    pub stream: bool,
    /// How the answer is given under the run's rules.
    pub fidelity: Fidelity,
}

const CHUNK_CHARS: usize = 16;

fn invalid(message: &str) -> HttpResponse {
    openai_chat::error(400, "invalid_request_error", None, message)
}

/// The text of a message item's `content`: a string or its text parts
/// (a chat-completions message's `content` takes the same shapes, so the
/// exports read it with this too).
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What of a request beyond its conversation, tools and sampling the chat
/// call carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// Nothing more (runs under rules 0).
    Sampling,
    /// Its output format (`text.format` as `response_format`: structured
    /// output), `reasoning.effort` as `reasoning_effort` and
    /// `parallel_tool_calls` (rules 1 on, decision 0423).
    FormatAndReasoning,
}

/// `text.format` as chat completions' `response_format`: a JSON schema's
/// name, schema, strictness and description under `json_schema`.
fn response_format(format: &Value) -> Option<Value> {
    match format["type"].as_str()? {
        "json_schema" => {
            let mut schema = Map::new();
            for key in ["name", "schema", "strict", "description"] {
                if let Some(v) = format.get(key) {
                    schema.insert(key.into(), v.clone());
                }
            }
            Some(json!({"type": "json_schema", "json_schema": schema}))
        }
        t @ ("json_object" | "text") => Some(json!({"type": t})),
        _ => None,
    }
}

/// What of an `input` array's items the chat call cannot carry, from
/// [`Fidelity::Vendor`]: a content part other than text (an image, a
/// file), said as a 400 as an item of a type it does not carry is
/// (before, such a part was dropped without a word).
fn uncarried_part(items: &[Value]) -> Option<HttpResponse> {
    let (at, part) = items.iter().enumerate().find_map(|(i, item)| {
        let parts = item["content"].as_array()?;
        let part = parts.iter().find(|p| {
            !matches!(
                p["type"].as_str(),
                Some("input_text" | "output_text" | "text" | "refusal")
            )
        })?;
        Some((i, part))
    })?;
    let kind = part["type"]
        .as_str()
        .map_or_else(|| part["type"].to_string(), String::from);
    Some(invalid(&format!(
        "input[{at}]: content parts of type `{kind}` are not supported in a worldline world (the model call carries text): send the content as `input_text`"
    )))
}

/// OpenAI's 400 for an `input` that is neither text nor an array of items.
fn input_refusal(input: &Value) -> HttpResponse {
    let (code, message) = match input {
        Value::Null => (
            "missing_required_parameter",
            "Missing required parameter: 'input'.".to_string(),
        ),
        other => {
            let kind = match other {
                Value::Bool(_) => "a boolean",
                Value::Number(n) if n.is_f64() => "a decimal",
                Value::Number(_) => "an integer",
                _ => "an object",
            };
            (
                "invalid_type",
                format!(
                    "Invalid type for 'input': expected one of a string or array of input items, but got {kind} instead."
                ),
            )
        }
    };
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": code}});
    HttpResponse::json(400, &body)
}

/// Read a request body, carrying what `carried` says; from
/// [`Fidelity::Vendor`] an `input` of the wrong type, a content part or a
/// tool the chat call cannot carry is a 400 saying so.
pub fn parse(
    body: &[u8],
    carried: Carried,
    fidelity: Fidelity,
) -> Result<ResponsesRequest, HttpResponse> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        invalid(&format!(
            "We could not parse the JSON body of your request. ({e})"
        ))
    })?;
    if !v.is_object() {
        return Err(invalid("The request body must be a JSON object."));
    }
    if !v["previous_response_id"].is_null() {
        return Err(invalid(
            "previous_response_id is not supported in a worldline world (nothing is stored between requests): send the whole conversation as `input`",
        ));
    }
    let mut messages: Vec<Value> = Vec::new();
    if let Some(i) = v["instructions"].as_str() {
        messages.push(json!({"role": "system", "content": i}));
    }
    let items = match &v["input"] {
        Value::String(s) => vec![json!({"role": "user", "content": s})],
        Value::Array(a) => a.clone(),
        other if fidelity == Fidelity::Vendor => return Err(input_refusal(other)),
        _ => return Err(invalid("Missing required parameter: 'input'.")),
    };
    if fidelity == Fidelity::Vendor {
        if let Some(refused) = uncarried_part(&items) {
            return Err(refused);
        }
        let tools = v["tools"].as_array().into_iter().flatten();
        if let Some(t) = tools.into_iter().find(|t| t["type"] != "function") {
            let kind = t["type"]
                .as_str()
                .map_or_else(|| t["type"].to_string(), String::from);
            return Err(invalid(&format!(
                "tools: tools of type `{kind}` are not supported in a worldline world (the world answers function tools): declare it as a function tool of the world"
            )));
        }
    }
    for item in &items {
        match item["type"].as_str().unwrap_or("message") {
            "message" => {
                let role = match item["role"].as_str() {
                    Some("developer" | "system") => "system",
                    Some(r @ ("user" | "assistant")) => r,
                    _ => return Err(invalid("input: a message needs a role")),
                };
                messages.push(json!({"role": role, "content": text_of(&item["content"])}));
            }
            "function_call" => {
                let call = json!({"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item["arguments"]}});
                match messages.last_mut() {
                    Some(m) if m["role"] == "assistant" && m.get("tool_calls").is_some() => {
                        m["tool_calls"].as_array_mut().unwrap().push(call);
                    }
                    _ => messages
                        .push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
                }
            }
            "function_call_output" => {
                let output = match &item["output"] {
                    Value::String(s) => s.clone(),
                    other => text_of(other),
                };
                messages.push(
                    json!({"role": "tool", "tool_call_id": item["call_id"], "content": output}),
                );
            }
            other => {
                return Err(invalid(&format!(
                    "input: items of type `{other}` are not supported"
                )));
            }
        }
    }
    let mut request = Map::new();
    request.insert("messages".into(), json!(messages));
    for (from, to) in [
        ("model", "model"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("max_output_tokens", "max_tokens"),
    ] {
        if let Some(x) = v.get(from) {
            request.insert(to.into(), x.clone());
        }
    }
    if let Some(tools) = v["tools"].as_array() {
        let tools: Vec<Value> = tools
            .iter()
            .filter(|t| t["type"] == "function")
            .map(|t| json!({"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["parameters"],
            }}))
            .collect();
        request.insert("tools".into(), json!(tools));
    }
    if let Some(choice) = v.get("tool_choice") {
        let c = match choice {
            Value::Object(_) => json!({"type": "function", "function": {"name": choice["name"]}}),
            other => other.clone(),
        };
        request.insert("tool_choice".into(), c);
    }
    if carried == Carried::FormatAndReasoning {
        if let Some(f) = response_format(&v["text"]["format"]) {
            request.insert("response_format".into(), f);
        }
        if let Some(effort) = v["reasoning"].get("effort").filter(|e| !e.is_null()) {
            request.insert("reasoning_effort".into(), effort.clone());
        }
        if let Some(p) = v.get("parallel_tool_calls") {
            request.insert("parallel_tool_calls".into(), p.clone());
        }
    }
    Ok(ResponsesRequest {
        request: Value::Object(request),
        stream: v["stream"] == true,
        fidelity,
    })
}

/// A chat completion as a `response` object; from [`Fidelity::Vendor`] a
/// refusal is a `refusal` content part of the message (before, dropped).
pub fn response(completion: &Value, fidelity: Fidelity) -> Value {
    let id = completion["id"].as_str().unwrap_or("worldline");
    let msg = &completion["choices"][0]["message"];
    let mut output = Vec::new();
    let mut content = Vec::new();
    if let Some(text) = msg["content"].as_str().filter(|t| !t.is_empty()) {
        content.push(json!({"type": "output_text", "text": text, "annotations": []}));
    }
    let refusal = msg["refusal"].as_str().filter(|r| !r.is_empty());
    if let Some(refusal) = refusal.filter(|_| fidelity == Fidelity::Vendor) {
        content.push(json!({"type": "refusal", "refusal": refusal}));
    }
    if !content.is_empty() {
        output.push(json!({
            "type": "message", "id": format!("msg_{id}"), "status": "completed", "role": "assistant",
            "content": content,
        }));
    }
    for c in msg["tool_calls"].as_array().into_iter().flatten() {
        output.push(json!({
            "type": "function_call", "id": format!("fc_{}", c["id"].as_str().unwrap_or_default()),
            "call_id": c["id"], "name": c["function"]["name"],
            "arguments": c["function"]["arguments"], "status": "completed",
        }));
    }
    let usage = &completion["usage"];
    // A reply cut short is an `incomplete` response saying why, as the
    // API sends it (the SDKs read `status`, not a finish reason).
    let cut = match completion["choices"][0]["finish_reason"].as_str() {
        Some("length") => Some("max_output_tokens"),
        Some("content_filter") => Some("content_filter"),
        _ => None,
    };
    json!({
        "id": format!("resp_{id}"),
        "object": "response",
        "created_at": completion["created"],
        "status": if cut.is_some() { "incomplete" } else { "completed" },
        "model": completion["model"],
        "output": output,
        "error": null,
        "incomplete_details": cut.map(|reason| json!({"reason": reason})),
        "usage": {
            "input_tokens": usage["prompt_tokens"].as_u64().unwrap_or(0),
            "output_tokens": usage["completion_tokens"].as_u64().unwrap_or(0),
            "total_tokens": usage["total_tokens"].as_u64().unwrap_or(0),
        },
    })
}

/// A `response` as the Responses API's event stream: each content part
/// of a message item added before its deltas and done after them
/// (decision 0420). From [`Fidelity::Vendor`] the stream opens as the API
/// does, `response.created` then `response.in_progress` with the response
/// not yet holding its usage or why it is incomplete (before, no
/// `response.in_progress`, and `response.created` held both).
pub fn events(resp: &Value, fidelity: Fidelity) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut push = |kind: &str, mut data: Value| {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(out.len());
        out.push((kind.to_string(), data));
    };
    let mut pending = resp.clone();
    pending["status"] = json!("in_progress");
    pending["output"] = json!([]);
    if fidelity == Fidelity::Vendor {
        pending["usage"] = Value::Null;
        pending["incomplete_details"] = Value::Null;
        push("response.created", json!({"response": pending}));
        push("response.in_progress", json!({"response": pending}));
    } else {
        push("response.created", json!({"response": pending}));
    }
    for (i, item) in resp["output"].as_array().into_iter().flatten().enumerate() {
        let mut started = item.clone();
        started["status"] = json!("in_progress");
        if item["type"] == "message" {
            started["content"] = json!([]);
            push(
                "response.output_item.added",
                json!({"output_index": i, "item": started}),
            );
            // Each content part opens before its deltas and closes after
            // them: the SDKs' stream helpers index the part the deltas
            // name (`responses.stream()` failed without it).
            let parts = item["content"].as_array().into_iter().flatten();
            for (c, part) in parts.enumerate() {
                let (field, delta, done) = match part["type"].as_str() {
                    Some("refusal") => {
                        ("refusal", "response.refusal.delta", "response.refusal.done")
                    }
                    _ => (
                        "text",
                        "response.output_text.delta",
                        "response.output_text.done",
                    ),
                };
                let text = part[field].as_str().unwrap_or_default();
                let mut empty = part.clone();
                empty[field] = json!("");
                let at = json!({"output_index": i, "content_index": c, "item_id": item["id"]});
                let with = |key: &str, value: Value| {
                    let mut data = at.clone();
                    data[key] = value;
                    data
                };
                push("response.content_part.added", with("part", empty));
                for piece in sse::pieces(text, CHUNK_CHARS) {
                    push(delta, with("delta", json!(piece)));
                }
                push(done, with(field, json!(text)));
                push("response.content_part.done", with("part", part.clone()));
            }
        } else {
            started["arguments"] = json!("");
            push(
                "response.output_item.added",
                json!({"output_index": i, "item": started}),
            );
            push(
                "response.function_call_arguments.delta",
                json!({"output_index": i, "item_id": item["id"], "delta": item["arguments"]}),
            );
            push(
                "response.function_call_arguments.done",
                json!({"output_index": i, "item_id": item["id"], "arguments": item["arguments"]}),
            );
        }
        push(
            "response.output_item.done",
            json!({"output_index": i, "item": item}),
        );
    }
    let end = match resp["status"].as_str() {
        Some("incomplete") => "response.incomplete",
        _ => "response.completed",
    };
    push(end, json!({"response": resp}));
    out
}

/// The answer to `req` for the mediated model call's `response`: errors as
/// Chat Completions sends them (the same API family), else the response.
pub fn reply(req: &ResponsesRequest, answer: &Value) -> Reply {
    if answer.get("error").is_some() {
        let as_chat = openai_chat::ChatRequest {
            request: Value::Null,
            stream: false,
            include_usage: false,
            fidelity: req.fidelity,
        };
        return openai_chat::reply(&as_chat, answer);
    }
    let r = response(answer.get("ok").unwrap_or(&Value::Null), req.fidelity);
    Reply::Http(if req.stream {
        sse::named_response(&events(&r, req.fidelity))
    } else {
        HttpResponse::json(200, &r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_items_become_chat_messages() {
        let body = json!({
            "model": "gpt-4.1", "instructions": "be brief", "max_output_tokens": 100,
            "tools": [{"type": "function", "name": "get_alert", "parameters": {"type": "object"}}],
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "ALERT-7"}]},
                {"type": "function_call", "call_id": "c1", "name": "get_alert", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "get_alert", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "{\"kind\":\"latency\"}"},
            ],
        });
        let r = parse(
            body.to_string().as_bytes(),
            Carried::Sampling,
            Fidelity::Loose,
        )
        .unwrap();
        let m = r.request["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "be brief"}));
        assert_eq!(m[1], json!({"role": "user", "content": "ALERT-7"}));
        assert_eq!(m[2]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(m[3]["role"], "tool");
        assert_eq!(r.request["max_tokens"], 100);
        assert_eq!(r.request["tools"][0]["function"]["name"], "get_alert");
        let stateful = br#"{"input":"hi","previous_response_id":"resp_1"}"#;
        assert_eq!(
            parse(stateful, Carried::Sampling, Fidelity::Loose)
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            parse(b"{}", Carried::Sampling, Fidelity::Loose)
                .unwrap_err()
                .status,
            400
        );
    }

    #[test]
    fn structured_output_and_reasoning_are_carried_from_rules_1() {
        let schema = json!({"type": "object", "properties": {"severity": {"type": "string"}}});
        let body = json!({
            "input": "triage ALERT-7",
            "text": {"format": {"type": "json_schema", "name": "triage", "schema": schema, "strict": true}},
            "reasoning": {"effort": "low", "summary": "auto"},
            "parallel_tool_calls": false,
        })
        .to_string();
        let carried = parse(
            body.as_bytes(),
            Carried::FormatAndReasoning,
            Fidelity::Loose,
        )
        .unwrap();
        assert_eq!(
            carried.request["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "triage", "schema": schema, "strict": true}})
        );
        assert_eq!(carried.request["reasoning_effort"], "low");
        assert_eq!(carried.request["parallel_tool_calls"], false);
        let before = parse(body.as_bytes(), Carried::Sampling, Fidelity::Loose).unwrap();
        for key in ["response_format", "reasoning_effort", "parallel_tool_calls"] {
            assert!(before.request.get(key).is_none(), "{key}");
        }
        let json_mode = br#"{"input":"x","text":{"format":{"type":"json_object"}}}"#;
        let r = parse(json_mode, Carried::FormatAndReasoning, Fidelity::Loose).unwrap();
        assert_eq!(r.request["response_format"], json!({"type": "json_object"}));
    }

    #[test]
    fn answers_are_response_objects_and_streams() {
        let completion = json!({"id": "chatcmpl-scripted-2", "created": 9, "model": "scripted",
            "choices": [{"finish_reason": "tool_calls", "message": {"content": null,
            "tool_calls": [{"id": "call_2_0", "function": {"name": "list_deploys", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}});
        let r = response(&completion, Fidelity::Loose);
        assert_eq!(r["output"][0]["type"], "function_call");
        assert_eq!(r["output"][0]["call_id"], "call_2_0");
        assert_eq!(r["usage"]["total_tokens"], 8);
        let req = parse(
            br#"{"input":"x","stream":true}"#,
            Carried::Sampling,
            Fidelity::Loose,
        )
        .unwrap();
        let Reply::Http(h) = reply(&req, &json!({"ok": completion})) else {
            panic!()
        };
        let text = String::from_utf8(h.body).unwrap();
        assert!(text.starts_with("event: response.created\n"));
        assert!(text.contains("event: response.function_call_arguments.done\n"));
        assert!(text.trim_end().ends_with("}") && text.contains("event: response.completed\n"));
        let limited = json!({"error": {"kind": "unavailable", "message": "x", "status": 429}});
        assert!(matches!(reply(&req, &limited), Reply::Http(h) if h.status == 429));
    }

    /// A text reply streams its content part around its deltas (the SDKs'
    /// `responses.stream()` failed on a delta of a part never added), and
    /// a reply cut short is `incomplete`, saying why, streamed or not.
    #[test]
    fn text_streams_in_its_content_part_and_a_cut_reply_is_incomplete() {
        let completion = |finish: &str| {
            json!({"id": "c", "created": 9, "model": "scripted",
                "choices": [{"finish_reason": finish, "message": {"content": "cut off mid-sen"}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}})
        };
        let kinds = |r: &Value| -> Vec<String> {
            events(r, Fidelity::Loose)
                .into_iter()
                .map(|(k, _)| k)
                .collect()
        };
        let done = response(&completion("stop"), Fidelity::Loose);
        assert_eq!(
            (done["status"].as_str(), &done["incomplete_details"]),
            (Some("completed"), &Value::Null)
        );
        let seen = kinds(&done);
        let at = |k: &str| {
            seen.iter()
                .position(|s| s == k)
                .unwrap_or_else(|| panic!("no {k}: {seen:?}"))
        };
        assert!(at("response.content_part.added") < at("response.output_text.delta"));
        assert!(at("response.output_text.done") < at("response.content_part.done"));
        assert!(at("response.content_part.done") < at("response.output_item.done"));
        let (_, part) = &events(&done, Fidelity::Loose)[at("response.content_part.done")];
        assert_eq!(part["part"]["text"], "cut off mid-sen");
        for (finish, reason) in [
            ("length", "max_output_tokens"),
            ("content_filter", "content_filter"),
        ] {
            let cut = response(&completion(finish), Fidelity::Loose);
            assert_eq!(cut["status"], "incomplete", "{finish}");
            assert_eq!(cut["incomplete_details"]["reason"], reason, "{finish}");
            assert_eq!(
                kinds(&cut).last().map(String::as_str),
                Some("response.incomplete")
            );
        }
    }
}
