//! The world's tools as an MCP server (Streamable HTTP transport, JSON-RPC
//! 2.0, protocol revisions 2024-11-05 to 2025-11-25): `initialize`,
//! `ping`, `tools/list` and `tools/call`, and the world's files as
//! resources (`resources/list`, `resources/read`, `file:///<path>` URIs).
//! A `tools/call` is handed back to the caller as a [`Step::CallTool`] so
//! it becomes the same mediated tool call as `tools.call`; its answer comes
//! back here as a `CallToolResult` (a tool error is `isError: true`
//! carrying the error kind). Resources are handed back the same way, as
//! the mediated `files.paths` and `files.read`. Protocol errors are
//! JSON-RPC errors, as the spec says.
//!
//! Why the world's files are MCP resources read as `files.paths` and
//! `files.read` (was decision 0285): each `resources/list` or `resources/read`
//! is the same mediated call as `files.paths("")` or `files.read(path)`,
//! following the pattern of `tools/call` (the protocol layer names the step,
//! the handler makes the existing mediated call), so permissions, grading, fork
//! and replay need nothing new. URIs are `file:///`, the scheme MCP clients
//! know (the files are the only filesystem an agent has), not a `world://`
//! scheme; no resource templates (listing is cheap and exact); no subscriptions
//! (nothing changes the files but the agent's own writes).

use super::HttpResponse;
use serde_json::{Value, json};
use worldline_case::world::state::FileData;

/// Protocol revisions answered, newest first.
pub const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
/// The spec's code for a resource that does not exist.
const RESOURCE_NOT_FOUND: i64 = -32002;
/// The URI prefix of a world file.
const FILE_URI: &str = "file:///";

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
    /// `resources/list`: answer with [`resources_list`].
    ListResources { id: Value },
    /// `resources/read` of the world file `path`: answer with [`resource_read`].
    ReadResource { id: Value, path: String },
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

fn rpc_error_data(id: &Value, code: i64, message: &str, data: Value) -> HttpResponse {
    HttpResponse::json(
        200,
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}}),
    )
}

/// What the server offers: the tools, and the world's files when it has any.
fn capabilities(files: bool) -> Value {
    let mut offered = json!({"tools": {"listChanged": false}});
    if files {
        offered["resources"] = json!({"listChanged": false, "subscribe": false});
    }
    offered
}

fn reply(method: Option<&str>, response: HttpResponse) -> Step {
    Step::Reply {
        method: method.map(String::from),
        response,
    }
}

/// Read one request to the endpoint. Only POST carries JSON-RPC; the
/// server offers no event stream (GET) and no sessions to end (DELETE).
/// `files`: whether the world has files to offer as resources. A world
/// without files advertises no `resources` capability, so `initialize`
/// answers exactly as it did before resources existed and runs recorded
/// then replay `identical`. `checked` (rules 10): a message that is no
/// JSON-RPC 2.0 request, notification or response is refused
/// ([`invalid`]); before, only a message without a method was. `exact`
/// (rules 11): so is one that writes a key twice in one object or holds
/// an integer no 64 bits hold ([`inexact`]).
pub fn request(method: &str, body: &[u8], files: bool, checked: bool, exact: bool) -> Step {
    if !method.eq_ignore_ascii_case("POST") {
        return reply(None, HttpResponse::empty(405).with_header("allow", "POST"));
    }
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return reply(None, rpc_error(&Value::Null, PARSE_ERROR, "Parse error"));
    };
    if let Some(refused) = invalid(&message).filter(|_| checked) {
        let method = message["method"].as_str();
        return reply(method, refused);
    }
    if let Some(why) = inexact(body).filter(|_| exact) {
        let method = message["method"].as_str();
        let why = format!("Invalid Request: {why}");
        return reply(method, rpc_error(&Value::Null, INVALID_REQUEST, &why));
    }
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
                        "capabilities": capabilities(files),
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
        "resources/list" => Step::ListResources { id },
        // World files are listed one by one: there are no templates.
        "resources/templates/list" => reply(Some(name), rpc(&id, json!({"resourceTemplates": []}))),
        "resources/read" => match params["uri"].as_str().map(file_path) {
            Some(Some(path)) => Step::ReadResource { id, path },
            Some(None) => reply(
                Some(name),
                rpc_error_data(
                    &id,
                    RESOURCE_NOT_FOUND,
                    "Resource not found: world files are file:///<path>",
                    json!({"uri": params["uri"]}),
                ),
            ),
            None => reply(
                Some(name),
                rpc_error(&id, INVALID_PARAMS, "resources/read needs params.uri"),
            ),
        },
        other => reply(
            Some(name),
            rpc_error(&id, METHOD_NOT_FOUND, &format!("Method not found: {other}")),
        ),
    }
}

/// Why a message (JSON that parsed) is not read as it was written: a key
/// written twice in one object (serde_json kept the last, so a
/// `tools/call` with two `name`s called the second), or an integer no 64
/// bits hold (read as the nearest float: the id `12345678901234567890123`
/// came back `1.2345678901234568e+22`). Answered `-32600` with a null id,
/// as JSON-RPC answers a request whose id could not be read.
fn inexact(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    if let Err(e) = worldline_case::world::one_field::from_str(text, true) {
        return Some(e.to_string());
    }
    worldline_case::wide_integer::find(text).map(|w| w.message())
}

/// Why `message` is no JSON-RPC 2.0 message, answered `-32600` Invalid
/// Request: a batch (MCP 2025-06-18 removed JSON-RPC batching, and this
/// server speaks 2025-11-25 unless a client asks for an earlier revision),
/// no `"jsonrpc": "2.0"`, or an `id` that is no string, number or null.
/// The answer names the request's id when it is one.
fn invalid(message: &Value) -> Option<HttpResponse> {
    let refuse = |id: &Value, why: &str| {
        let id = match id {
            Value::String(_) | Value::Number(_) => id,
            _ => &Value::Null,
        };
        Some(rpc_error(
            id,
            INVALID_REQUEST,
            &format!("Invalid Request: {why}"),
        ))
    };
    let Some(fields) = message.as_object() else {
        return refuse(
            &Value::Null,
            if message.is_array() {
                "a batch (a JSON array) is not taken: MCP 2025-06-18 removed JSON-RPC batching; send each message in a request of its own"
            } else {
                "a message is a JSON object"
            },
        );
    };
    let id = fields.get("id").unwrap_or(&Value::Null);
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse(id, "\"jsonrpc\" must be \"2.0\"");
    }
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return refuse(id, "\"id\" must be a string, a number or null");
    }
    None
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

/// Bytes kept as they are in a URI path (RFC 3986 unreserved, and `/`).
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// The URI of the world file `path`.
pub fn file_uri(path: &str) -> String {
    let mut uri = String::from(FILE_URI);
    for b in path.bytes() {
        if unreserved(b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// The world file a `file:///` URI names; `None` for any other URI.
fn file_path(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix(FILE_URI)?.as_bytes();
    let mut out = Vec::with_capacity(rest.len());
    let mut i = 0;
    while i < rest.len() {
        if rest[i] == b'%' {
            let hex = std::str::from_utf8(rest.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(rest[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().filter(|p| !p.is_empty())
}

/// The media type of a world file, by its extension.
fn mime_type(path: &str) -> Option<&'static str> {
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "log" => "text/plain",
        "json" => "application/json",
        "jsonl" => "application/jsonl",
        "csv" => "text/csv",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "html" | "htm" => "text/html",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "png" => "image/png",
        _ => return None,
    })
}

/// The MIME type a world file is listed and read with: its extension's,
/// else `application/octet-stream` for bytes that are not UTF-8 text
/// (`binary`), else none.
fn content_type(path: &str, binary: bool) -> Option<&'static str> {
    mime_type(path).or(binary.then_some("application/octet-stream"))
}

/// A failed mediated call as a JSON-RPC error: not found as the spec's
/// -32002, anything else (denied, a fault) as an internal error carrying
/// the kind.
fn file_error(id: &Value, uri: &str, e: &Value) -> HttpResponse {
    let kind = e["kind"].as_str().unwrap_or("failed");
    let message = e["message"].as_str().unwrap_or_default();
    let code = if kind == "not-found" {
        RESOURCE_NOT_FOUND
    } else {
        INTERNAL_ERROR
    };
    rpc_error_data(
        id,
        code,
        &format!("{kind}: {message}"),
        json!({"uri": uri, "kind": kind}),
    )
}

/// The `resources/list` result for the mediated `files.paths` `response`
/// (`{"ok": [paths]}` or `{"error"}`): every world file, in path order,
/// with the MIME type `resources/read` gives it (`binary`: whether a
/// path's file holds bytes that are not UTF-8 text).
pub fn resources_list(id: &Value, response: &Value, binary: impl Fn(&str) -> bool) -> HttpResponse {
    if let Some(e) = response.get("error") {
        return file_error(id, "", e);
    }
    let resources: Vec<Value> = response["ok"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|path| {
            let mut r = json!({"uri": file_uri(path), "name": path});
            if let Some(m) = content_type(path, binary(path)) {
                r["mimeType"] = json!(m);
            }
            r
        })
        .collect();
    rpc(id, json!({"resources": resources}))
}

/// The `resources/read` result for the mediated `files.read` `response` of
/// `path` (`{"ok": file data}` or `{"error"}`): UTF-8 text as `text`, other
/// bytes as base64 `blob`.
pub fn resource_read(id: &Value, path: &str, response: &Value) -> HttpResponse {
    let uri = file_uri(path);
    if let Some(e) = response.get("error") {
        return file_error(id, &uri, e);
    }
    let data =
        serde_json::from_value(response["ok"].clone()).unwrap_or(FileData::Text(String::new()));
    let mut content = json!({"uri": uri});
    if let Some(m) = content_type(path, !matches!(data, FileData::Text(_))) {
        content["mimeType"] = json!(m);
    }
    match data {
        FileData::Text(text) => content["text"] = json!(text),
        bytes => {
            use base64::Engine as _;
            let encoded = base64::engine::general_purpose::STANDARD.encode(bytes.to_bytes());
            content["blob"] = json!(encoded);
        }
    }
    rpc(id, json!({"contents": [content]}))
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
        let Step::Reply { method, response } = request("POST", msg, true, true, true) else {
            panic!()
        };
        assert_eq!(method.as_deref(), Some("initialize"));
        let v = body(&response);
        assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(v["id"], 1);
        let newer = br#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2099-01-01"}}"#;
        let Step::Reply { response, .. } = request("POST", newer, true, true, true) else {
            panic!()
        };
        assert_eq!(body(&response)["result"]["protocolVersion"], VERSIONS[0]);
    }

    /// Read exactly (rules 11), a key written twice and an id past 64
    /// bits are `-32600` with a null id; under 10 the last key was taken
    /// (`get_ticket` called) and the id echoed as a float.
    #[test]
    fn a_key_written_twice_or_a_wide_id_is_an_invalid_request_when_exact() {
        let twice = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"close_ticket","name":"get_ticket","arguments":{}}}"#;
        let wide = br#"{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping"}"#;
        for (msg, said) in [
            (
                &twice[..],
                "the field `name` is written twice in one object",
            ),
            (
                &wide[..],
                "the integer 12345678901234567890123 is past 64 bits",
            ),
        ] {
            let Step::Reply { response, .. } = request("POST", msg, true, true, true) else {
                panic!()
            };
            let v = body(&response);
            assert_eq!((response.status, &v["id"]), (400, &Value::Null), "{v}");
            assert_eq!(v["error"]["code"], INVALID_REQUEST, "{v}");
            let message = v["error"]["message"].as_str().unwrap();
            assert!(
                message.starts_with("Invalid Request: ") && message.contains(said),
                "{v}"
            );
        }
        assert!(matches!(
            request("POST", twice, true, true, false),
            Step::CallTool { name, .. } if name == "get_ticket"
        ));
    }

    /// A world without files offers no resources: `initialize` answers
    /// byte for byte as before resources existed (recorded runs replay).
    #[test]
    fn resources_are_offered_only_by_a_world_with_files() {
        let msg = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#;
        let offered = |files| {
            let Step::Reply { response, .. } = request("POST", msg, files, true, true) else {
                panic!()
            };
            body(&response)["result"]["capabilities"].clone()
        };
        assert_eq!(offered(false), json!({"tools": {"listChanged": false}}));
        assert_eq!(
            offered(true)["resources"],
            json!({"listChanged": false, "subscribe": false})
        );
    }

    /// Checked (rules 10), a message that is no JSON-RPC 2.0 message is
    /// `-32600` saying why; unchecked (rules 9) it was served.
    #[test]
    fn a_message_that_is_no_json_rpc_2_0_is_an_invalid_request_when_checked() {
        let refused = |msg: &[u8], checked| match request("POST", msg, true, checked, true) {
            Step::Reply { response, .. } => {
                let v = body(&response);
                (v["error"]["code"] == INVALID_REQUEST).then_some((response.status, v))
            }
            _ => None,
        };
        let no_version = br#"{"id":1,"method":"tools/list"}"#;
        let (status, v) = refused(no_version, true).unwrap();
        assert_eq!((status, &v["id"]), (200, &json!(1)));
        assert_eq!(
            v["error"]["message"],
            "Invalid Request: \"jsonrpc\" must be \"2.0\""
        );
        assert!(refused(no_version, false).is_none());
        let old = br#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#;
        assert!(refused(old, true).is_some() && refused(old, false).is_none());
        let object_id = br#"{"jsonrpc":"2.0","id":{"n":1},"method":"tools/list"}"#;
        let (status, v) = refused(object_id, true).unwrap();
        assert_eq!((status, &v["id"]), (400, &Value::Null));
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("\"id\" must be")
        );
        assert_eq!(
            request("POST", object_id, true, false, true),
            Step::ListTools {
                id: json!({"n": 1})
            }
        );
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
        let (status, v) = refused(batch, true).unwrap();
        assert_eq!(status, 400);
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("MCP 2025-06-18 removed JSON-RPC batching"),
            "{v}"
        );
        let null_id = br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#;
        assert!(refused(null_id, true).is_none());
    }

    #[test]
    fn calls_lists_notifications_and_protocol_errors() {
        let call = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"A"}}}"#;
        assert_eq!(
            request("POST", call, true, true, true),
            Step::CallTool {
                id: json!(3),
                name: "get_alert".into(),
                args: json!({"id": "A"})
            }
        );
        let list = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
        assert_eq!(
            request("POST", list, true, true, true),
            Step::ListTools { id: json!(2) }
        );
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert!(
            matches!(request("POST", note, true, true, true), Step::Reply { response, .. } if response.status == 202)
        );
        let Step::Reply { response, .. } = request("POST", b"{nope", true, true, true) else {
            panic!()
        };
        assert_eq!(
            (response.status, body(&response)["error"]["code"].clone()),
            (400, json!(-32700))
        );
        let unknown = br#"{"jsonrpc":"2.0","id":4,"method":"prompts/list"}"#;
        let Step::Reply { response, .. } = request("POST", unknown, true, true, true) else {
            panic!()
        };
        assert_eq!(body(&response)["error"]["code"], -32601);
        let nameless = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#;
        let Step::Reply { response, .. } = request("POST", nameless, true, true, true) else {
            panic!()
        };
        assert_eq!(body(&response)["error"]["code"], -32602);
        assert!(
            matches!(request("GET", b"", true, true, true), Step::Reply { response, .. } if response.status == 405)
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

    #[test]
    fn world_files_are_resources() {
        let list = br#"{"jsonrpc":"2.0","id":7,"method":"resources/list","params":{}}"#;
        assert_eq!(
            request("POST", list, true, true, true),
            Step::ListResources { id: json!(7) }
        );
        let read = br#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"file:///runbooks/check%20out.md"}}"#;
        assert_eq!(
            request("POST", read, true, true, true),
            Step::ReadResource {
                id: json!(8),
                path: "runbooks/check out.md".into()
            }
        );
        let other =
            br#"{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"https://x/y"}}"#;
        let Step::Reply { response, .. } = request("POST", other, true, true, true) else {
            panic!()
        };
        assert_eq!(body(&response)["error"]["code"], -32002);
        let listed = resources_list(
            &json!(7),
            &json!({"ok": ["runbooks/check out.md", "data/blob.bin", "data/notes"]}),
            |p| p == "data/blob.bin",
        );
        let v = body(&listed);
        assert_eq!(
            v["result"]["resources"][0],
            json!({"uri": "file:///runbooks/check%20out.md", "name": "runbooks/check out.md", "mimeType": "text/markdown"})
        );
        // Listed as read: bytes as octet-stream, text of no known kind bare.
        assert_eq!(
            v["result"]["resources"][1]["mimeType"],
            "application/octet-stream"
        );
        assert!(v["result"]["resources"][2].get("mimeType").is_none());
        let text = resource_read(&json!(8), "a.md", &json!({"ok": "# hi"}));
        assert_eq!(body(&text)["result"]["contents"][0]["text"], "# hi");
        let blob = resource_read(&json!(8), "b.bin", &json!({"ok": {"hex": "00ff"}}));
        let c = &body(&blob)["result"]["contents"][0];
        assert_eq!(
            (c["blob"].as_str(), c["mimeType"].as_str()),
            (Some("AP8="), Some("application/octet-stream"))
        );
        let missing = resource_read(
            &json!(8),
            "nope.md",
            &json!({"error": {"kind": "not-found", "message": "no world file `nope.md`"}}),
        );
        assert_eq!(body(&missing)["error"]["code"], -32002);
        let denied = resources_list(
            &json!(7),
            &json!({"error": {"kind": "denied", "message": "files.paths is not permitted"}}),
            |_| false,
        );
        let e = &body(&denied)["error"];
        assert_eq!(
            (e["code"].clone(), e["data"]["kind"].clone()),
            (json!(-32603), json!("denied"))
        );
    }
}
