//! The world's tools as an MCP server (Streamable HTTP transport, JSON-RPC
//! 2.0, protocol revisions 2024-11-05 to 2025-11-25): `initialize`,
//! `ping`, `tools/list` and `tools/call`. A `tools/call` is handed back to
//! the caller as a [`Step::CallTool`] so it becomes the same mediated tool
//! call as `tools.call`; its answer comes back here as a `CallToolResult`
//! (a tool error is `isError: true` carrying the error kind). Protocol
//! errors are JSON-RPC errors, as the spec says.

use super::HttpResponse;
use serde_json::{Value, json};

/// Protocol revisions answered, newest first.
pub const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// A tool as `tools/list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub input_schema: Value,
}

/// What one HTTP request to the endpoint asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Answered by the protocol alone (`initialize`, `ping`, notifications,
    /// protocol errors, methods the transport does not serve).
    Reply {
        /// The JSON-RPC method, when there was one.
        method: Option<String>,
        response: HttpResponse,
    },
    /// `tools/list`: answer with [`tools_list`].
    ListTools { id: Value },
    /// `tools/call`: answer with [`tool_result`].
    CallTool {
        id: Value,
        name: String,
        args: Value,
    },
}

fn rpc(id: &Value, result: Value) -> HttpResponse {
    HttpResponse::json(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn rpc_error(id: &Value, code: i64, message: &str) -> HttpResponse {
    let status = if *id == Value::Null { 400 } else { 200 };
    HttpResponse::json(
        status,
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    )
}

fn reply(method: Option<&str>, response: HttpResponse) -> Step {
    Step::Reply {
        method: method.map(String::from),
        response,
    }
}

/// Read one request to the endpoint. Only POST carries JSON-RPC; the
/// server offers no event stream (GET) and no sessions to end (DELETE).
pub fn request(method: &str, body: &[u8]) -> Step {
    if !method.eq_ignore_ascii_case("POST") {
        return reply(None, HttpResponse::empty(405).with_header("allow", "POST"));
    }
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return reply(None, rpc_error(&Value::Null, PARSE_ERROR, "Parse error"));
    };
    let Some(name) = message["method"].as_str() else {
        if message.is_object()
            && (message.get("result").is_some() || message.get("error").is_some())
        {
            // A client's response (to a request this server never sends).
            return reply(None, HttpResponse::empty(202));
        }
        return reply(
            None,
            rpc_error(&Value::Null, INVALID_REQUEST, "Invalid Request"),
        );
    };
    let Some(id) = message.get("id").cloned() else {
        // A notification (`notifications/initialized`, ...): accepted.
        return reply(Some(name), HttpResponse::empty(202));
    };
    let params = &message["params"];
    match name {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or_default();
            let version = VERSIONS
                .iter()
                .find(|v| **v == asked)
                .unwrap_or(&VERSIONS[0]);
            reply(
                Some(name),
                rpc(
                    &id,
                    json!({
                        "protocolVersion": version,
                        "capabilities": {"tools": {"listChanged": false}},
                        "serverInfo": {"name": "worldline", "version": env!("CARGO_PKG_VERSION")},
                    }),
                ),
            )
        }
        "ping" => reply(Some(name), rpc(&id, json!({}))),
        "tools/list" => Step::ListTools { id },
        "tools/call" => match params["name"].as_str() {
            Some(tool) => Step::CallTool {
                id,
                name: tool.to_string(),
                args: match &params["arguments"] {
                    Value::Null => json!({}),
                    a => a.clone(),
                },
            },
            None => reply(
                Some(name),
                rpc_error(&id, INVALID_PARAMS, "tools/call needs params.name"),
            ),
        },
        other => reply(
            Some(name),
            rpc_error(&id, METHOD_NOT_FOUND, &format!("Method not found: {other}")),
        ),
    }
}

/// The `tools/list` result.
pub fn tools_list(id: &Value, tools: &[McpTool]) -> HttpResponse {
    let tools: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema})
        })
        .collect();
    rpc(id, json!({"tools": tools}))
}

/// The `tools/call` result for the mediated call's `response`
/// (`{"ok": v}` or `{"error": {kind, message}}`): the value as JSON text
/// (and as `structuredContent` when it is an object), or `isError` with
/// the error kind and message as JSON text.
pub fn tool_result(id: &Value, response: &Value) -> HttpResponse {
    if let Some(e) = response.get("error") {
        let error = json!({"error": {"kind": e["kind"], "message": e["message"]}});
        let text = worldline_case::canon::to_string(&error);
        return rpc(
            id,
            json!({"content": [{"type": "text", "text": text}], "isError": true}),
        );
    }
    let ok = response.get("ok").unwrap_or(&Value::Null);
    let mut result = json!({
        "content": [{"type": "text", "text": worldline_case::canon::to_string(ok)}],
        "isError": false,
    });
    if ok.is_object() {
        result["structuredContent"] = ok.clone();
    }
    rpc(id, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(r: &HttpResponse) -> Value {
        serde_json::from_slice(&r.body).unwrap()
    }

    #[test]
    fn initialize_echoes_a_known_revision() {
        let msg = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
        let Step::Reply { method, response } = request("POST", msg) else {
            panic!()
        };
        assert_eq!(method.as_deref(), Some("initialize"));
        let v = body(&response);
        assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(v["id"], 1);
        let newer = br#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2099-01-01"}}"#;
        let Step::Reply { response, .. } = request("POST", newer) else {
            panic!()
        };
        assert_eq!(body(&response)["result"]["protocolVersion"], VERSIONS[0]);
    }

    #[test]
    fn calls_lists_notifications_and_protocol_errors() {
        let call = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"A"}}}"#;
        assert_eq!(
            request("POST", call),
            Step::CallTool {
                id: json!(3),
                name: "get_alert".into(),
                args: json!({"id": "A"})
            }
        );
        let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        assert_eq!(request("POST", list), Step::ListTools { id: json!(2) });
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(
            matches!(request("POST", note), Step::Reply { response, .. } if response.status == 202)
        );
        let Step::Reply { response, .. } = request("POST", b"{nope") else {
            panic!()
        };
        assert_eq!(
            (response.status, body(&response)["error"]["code"].clone()),
            (400, json!(-32700))
        );
        let unknown = br#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#;
        let Step::Reply { response, .. } = request("POST", unknown) else {
            panic!()
        };
        assert_eq!(body(&response)["error"]["code"], -32601);
        let nameless = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#;
        let Step::Reply { response, .. } = request("POST", nameless) else {
            panic!()
        };
        assert_eq!(body(&response)["error"]["code"], -32602);
        assert!(
            matches!(request("GET", b""), Step::Reply { response, .. } if response.status == 405)
        );
    }

    #[test]
    fn tool_answers_and_tool_errors() {
        let ok = tool_result(&json!(1), &json!({"ok": {"id": "D-42"}}));
        let v = body(&ok);
        assert_eq!(v["result"]["isError"], false);
        assert_eq!(v["result"]["structuredContent"]["id"], "D-42");
        assert_eq!(v["result"]["content"][0]["text"], "{\"id\":\"D-42\"}");
        let err = tool_result(
            &json!(1),
            &json!({"error": {"kind": "denied", "message": "no"}}),
        );
        let v = body(&err);
        assert_eq!(v["result"]["isError"], true);
        let text: Value =
            serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["error"]["kind"], "denied");
        let list = tools_list(
            &json!(2),
            &[McpTool {
                name: "t".into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
            }],
        );
        assert_eq!(
            body(&list)["result"]["tools"][0]["inputSchema"]["type"],
            "object"
        );
    }
}
