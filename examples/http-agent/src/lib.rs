//! An agent that knows nothing of worldline's own interfaces: it asks its
//! model through OpenAI Chat Completions (`POST
//! https://api.openai.com/v1/chat/completions`) and reaches its tools over
//! MCP (`http://world/mcp`), with a plain `wasi:http` client, as an agent
//! written against the vendors' APIs does. It retries a 429 or 5xx after
//! the `retry-after` the server sends, and a request that times out.
//!
//! Task keys besides the case's own: `probe_url` (a URL fetched once at
//! the start, whose outcome is noted in the output), `stream` (ask for
//! server-sent events and put the completion together from its chunks),
//! `api = "anthropic"` (ask through Anthropic Messages, `POST
//! https://api.anthropic.com/v1/messages`, instead), `api = "responses"`
//! (through OpenAI Responses, `POST https://api.openai.com/v1/responses`),
//! `requests` (`[{method, url, body?}]`: no model, the agent sends these
//! requests in order, e.g. to the world's own APIs, and answers with each
//! status and body).

mod http;

use serde_json::{Value, json};

const MODEL_URL: &str = "https://api.openai.com/v1/chat/completions";
const MESSAGES_URL: &str = "https://api.anthropic.com/v1/messages";
const RESPONSES_URL: &str = "https://api.openai.com/v1/responses";
const MCP_URL: &str = "http://world/mcp";
/// Most model turns before the agent gives up.
const MAX_TURNS: usize = 16;
/// Attempts of one model request (the official SDKs retry twice).
const ATTEMPTS: usize = 3;

const SYSTEM: &str = "You are the on-call engineer. Use the tools to find what caused the alert, \
fix it with the smallest safe change, record one incident note, and close the ticket only when \
the cause is fixed. Answer with a JSON object when you are done.";

fn run(task: Value) -> Result<Value, worldline_guest::Error> {
    agent(task).map_err(worldline_guest::Error::failed)
}

fn agent(task: Value) -> Result<Value, String> {
    if let Some(list) = task["requests"].as_array() {
        return Ok(send_all(list));
    }
    let probe = task["probe_url"].as_str().map(|url| match http::get(url) {
        Ok(r) => json!({"status": r.status}),
        Err(e) => json!({"error": e}),
    });
    let mut mcp = Mcp { next_id: 0 };
    mcp.rpc(
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "http-agent", "version": "0.1.0"},
        }),
    )?;
    mcp.notify("notifications/initialized")?;
    let listed = mcp.rpc("tools/list", json!({}))?;
    if task["api"] == "anthropic" {
        return messages_loop(&task, &mut mcp, &listed, probe);
    }
    if task["api"] == "responses" {
        return responses_loop(&task, &mut mcp, &listed, probe);
    }
    let tools: Vec<Value> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t["name"], "description": t["description"], "parameters": t["inputSchema"],
            }})
        })
        .collect();
    let mut messages = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": task.to_string()}),
    ];
    let stream = task["stream"] == true;
    let mut retries = 0;
    for turn in 1..=MAX_TURNS {
        let mut request = json!({
            "model": "gpt-4o-mini", "messages": messages, "tools": tools, "temperature": 0,
        });
        if stream {
            request["stream"] = json!(true);
            request["stream_options"] = json!({"include_usage": true});
        }
        let (completion, tries) = complete(&request)?;
        retries += tries;
        let message = completion["choices"][0]["message"].clone();
        messages.push(message.clone());
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            let text = message["content"].as_str().unwrap_or_default();
            return Ok(answer(text, turn, retries, probe));
        }
        for call in calls {
            let args: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
                    .map_err(|e| format!("the model's arguments are not JSON: {e}"))?;
            let result = mcp.rpc(
                "tools/call",
                json!({"name": call["function"]["name"], "arguments": args}),
            )?;
            let content = result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": content}));
        }
    }
    Err(format!("no answer after {MAX_TURNS} model turns"))
}

/// The agent's output: the model's final text (its JSON object, or the
/// text as `answer`), with the turns taken, the model retries and the probe.
fn answer(text: &str, turn: usize, retries: usize, probe: Option<Value>) -> Value {
    let mut out = serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"answer": text}));
    out["turns"] = json!(turn);
    out["model_retries"] = json!(retries);
    if let Some(p) = probe {
        out["probe"] = p;
    }
    out
}

/// One chat completion (see [`ask`]).
fn complete(request: &Value) -> Result<(Value, usize), String> {
    ask(
        MODEL_URL,
        ("authorization", "Bearer sk-agent-secret"),
        request,
    )
}

/// One model request to `url`, retried on 429, 5xx and timeouts; the
/// answer and how many retries it took.
fn ask(url: &str, key: (&str, &str), request: &Value) -> Result<(Value, usize), String> {
    let body = request.to_string();
    let mut last = String::new();
    for attempt in 0..ATTEMPTS {
        match http::post_json(url, &body, &[key]) {
            Ok(r)
                if r.status == 200
                    && r.header("content-type").as_deref() == Some("text/event-stream") =>
            {
                return Ok((assemble(&r.body)?, attempt));
            }
            Ok(r) if r.status == 200 => {
                let v: Value = serde_json::from_slice(&r.body)
                    .map_err(|e| format!("the completion is not JSON: {e}"))?;
                return Ok((v, attempt));
            }
            Ok(r) if r.status == 429 || r.status >= 500 => {
                last = format!("HTTP {}: {}", r.status, String::from_utf8_lossy(&r.body));
                let wait = r
                    .header("retry-after")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(1);
                http::sleep_seconds(wait);
            }
            Ok(r) => {
                return Err(format!(
                    "HTTP {}: {}",
                    r.status,
                    String::from_utf8_lossy(&r.body)
                ));
            }
            Err(e) if e.contains("timeout") || e.contains("Timeout") => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(format!("the model failed {ATTEMPTS} times; last: {last}"))
}

/// The same tool loop through Anthropic Messages: `tool_use` blocks are
/// run over MCP and answered with `tool_result` blocks.
fn messages_loop(
    task: &Value,
    mcp: &mut Mcp,
    listed: &Value,
    probe: Option<Value>,
) -> Result<Value, String> {
    let tools: Vec<Value> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| json!({"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}))
        .collect();
    let mut messages = vec![json!({"role": "user", "content": task.to_string()})];
    let mut retries = 0;
    for turn in 1..=MAX_TURNS {
        let request = json!({
            "model": "claude-sonnet-4-5", "max_tokens": 1024, "system": SYSTEM,
            "messages": messages, "tools": tools, "temperature": 0,
        });
        let (message, tries) = ask(MESSAGES_URL, ("x-api-key", "sk-ant-agent-secret"), &request)?;
        retries += tries;
        let content = message["content"].as_array().cloned().unwrap_or_default();
        messages.push(json!({"role": "assistant", "content": content}));
        let uses: Vec<&Value> = content.iter().filter(|b| b["type"] == "tool_use").collect();
        if uses.is_empty() {
            let text: String = content.iter().filter_map(|b| b["text"].as_str()).collect();
            let mut out = answer(&text, turn, retries, probe);
            out["stop_reason"] = message["stop_reason"].clone();
            return Ok(out);
        }
        let mut results = Vec::new();
        for u in uses {
            let result = mcp.rpc(
                "tools/call",
                json!({"name": u["name"], "arguments": u["input"]}),
            )?;
            results.push(json!({
                "type": "tool_result", "tool_use_id": u["id"],
                "content": result["content"][0]["text"], "is_error": result["isError"],
            }));
        }
        messages.push(json!({"role": "user", "content": results}));
    }
    Err(format!("no answer after {MAX_TURNS} model turns"))
}

/// The same tool loop through OpenAI Responses: `function_call` output
/// items are run over MCP and sent back as `function_call_output` items
/// (the whole conversation each time: nothing is stored server-side).
fn responses_loop(
    task: &Value,
    mcp: &mut Mcp,
    listed: &Value,
    probe: Option<Value>,
) -> Result<Value, String> {
    let tools: Vec<Value> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| json!({"type": "function", "name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}))
        .collect();
    let mut input = vec![json!({"role": "user", "content": task.to_string()})];
    let mut retries = 0;
    for turn in 1..=MAX_TURNS {
        let request = json!({
            "model": "gpt-4.1-mini", "instructions": SYSTEM, "input": input, "tools": tools,
            "temperature": 0, "store": false,
        });
        let (response, tries) = ask(
            RESPONSES_URL,
            ("authorization", "Bearer sk-agent-secret"),
            &request,
        )?;
        retries += tries;
        let output = response["output"].as_array().cloned().unwrap_or_default();
        let calls: Vec<&Value> = output
            .iter()
            .filter(|i| i["type"] == "function_call")
            .collect();
        if calls.is_empty() {
            let text: String = output
                .iter()
                .filter(|i| i["type"] == "message")
                .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
                .filter_map(|c| c["text"].as_str().map(String::from))
                .collect();
            let mut out = answer(&text, turn, retries, probe);
            out["response_status"] = response["status"].clone();
            return Ok(out);
        }
        for c in calls {
            input.push(json!({"type": "function_call", "call_id": c["call_id"], "name": c["name"], "arguments": c["arguments"]}));
            let args: Value = serde_json::from_str(c["arguments"].as_str().unwrap_or("{}"))
                .map_err(|e| format!("the model's arguments are not JSON: {e}"))?;
            let result = mcp.rpc("tools/call", json!({"name": c["name"], "arguments": args}))?;
            input.push(json!({"type": "function_call_output", "call_id": c["call_id"], "output": result["content"][0]["text"]}));
        }
    }
    Err(format!("no answer after {MAX_TURNS} model turns"))
}

/// Send each `{method, url, body?}` and note what came back.
fn send_all(list: &[Value]) -> Value {
    let answers: Vec<Value> = list
        .iter()
        .map(|r| {
            let body = r.get("body").map(Value::to_string);
            let method = r["method"].as_str().unwrap_or("GET");
            match http::request(method, r["url"].as_str().unwrap_or_default(), body.as_deref()) {
                Ok(resp) => json!({
                    "status": resp.status,
                    "body": serde_json::from_slice::<Value>(&resp.body).unwrap_or_else(|_| json!(String::from_utf8_lossy(&resp.body))),
                }),
                Err(e) => json!({"error": e}),
            }
        })
        .collect();
    json!({"responses": answers})
}

/// A completion put together from `chat.completion.chunk` events: the
/// content pieces joined, tool calls by index, the finish reason and usage.
fn assemble(body: &[u8]) -> Result<Value, String> {
    let text = String::from_utf8_lossy(body);
    let mut content = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = Value::Null;
    let mut usage = Value::Null;
    let mut done = false;
    for event in text.split("\n\n").filter(|e| !e.is_empty()) {
        let data = event
            .strip_prefix("data: ")
            .ok_or_else(|| format!("not an SSE data line: {event}"))?;
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| format!("a chunk is not JSON: {e}"))?;
        if !chunk["usage"].is_null() {
            usage = chunk["usage"].clone();
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        let delta = &choice["delta"];
        if let Some(piece) = delta["content"].as_str() {
            content.push_str(piece);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let i = call["index"].as_u64().unwrap_or(0) as usize;
            if calls.len() <= i {
                calls.resize(
                    i + 1,
                    json!({"type": "function", "function": {"name": "", "arguments": ""}}),
                );
            }
            let slot = &mut calls[i];
            if let Some(id) = call.get("id") {
                slot["id"] = id.clone();
            }
            let f = &call["function"];
            for key in ["name", "arguments"] {
                if let Some(part) = f[key].as_str() {
                    let joined = format!("{}{part}", slot["function"][key].as_str().unwrap_or(""));
                    slot["function"][key] = json!(joined);
                }
            }
        }
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    if !done {
        return Err("the stream ended without [DONE]".into());
    }
    let mut message = json!({"role": "assistant", "content": if content.is_empty() { Value::Null } else { json!(content) }});
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    Ok(
        json!({"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}),
    )
}

/// A JSON-RPC client of the world's MCP endpoint.
struct Mcp {
    next_id: u64,
}

impl Mcp {
    fn rpc(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let body =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let r = http::post_json(
            MCP_URL,
            &body.to_string(),
            &[("accept", "application/json, text/event-stream")],
        )?;
        let v: Value = serde_json::from_slice(&r.body)
            .map_err(|e| format!("{method}: HTTP {} and no JSON-RPC answer: {e}", r.status))?;
        if let Some(e) = v.get("error") {
            return Err(format!("{method}: JSON-RPC error {e}"));
        }
        Ok(v["result"].clone())
    }

    fn notify(&mut self, method: &str) -> Result<(), String> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let r = http::post_json(MCP_URL, &body.to_string(), &[])?;
        match r.status {
            202 => Ok(()),
            s => Err(format!("{method}: HTTP {s}")),
        }
    }
}

worldline_guest::agent!(run);
