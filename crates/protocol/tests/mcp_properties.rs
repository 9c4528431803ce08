//! Property tests of the MCP message parser (`mcp::request`) and of the
//! answers built from what the mediator returns (issue 43): whatever bytes
//! a client sends, and whatever a tool or a world file answers, nothing
//! panics; every answer the protocol gives by itself is a status the
//! Streamable HTTP transport allows, with a JSON-RPC body that echoes the
//! request's id.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use worldline_protocol::HttpResponse;
use worldline_protocol::mcp::{self, McpTool, Step};

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A method name: the ones served, near misses, or anything.
fn method_name() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/read",
            "resources/templates/list",
            "notifications/initialized",
            "Tools/Call",
            "",
        ])
        .prop_map(Value::from),
        ".{0,16}".prop_map(Value::from),
        json_value(),
    ]
}

/// Params shaped like what the served methods read, or anything.
fn params() -> impl Strategy<Value = Value> {
    let uri = prop_oneof![
        "file:///[a-z/%0-9A-F.]{0,16}".prop_map(Value::from),
        "file:///.{0,8}%.{0,3}".prop_map(Value::from),
        json_value(),
    ];
    prop_oneof![
        (json_value(), json_value())
            .prop_map(|(name, arguments)| json!({"name": name, "arguments": arguments})),
        ".{0,10}".prop_map(|name| json!({"name": name})),
        uri.prop_map(|uri| json!({"uri": uri})),
        ".{0,12}".prop_map(|v| json!({"protocolVersion": v})),
        json_value(),
    ]
}

/// A JSON-RPC message, each member present or not.
fn message() -> impl Strategy<Value = Value> {
    (
        prop::option::of(json_value()),
        prop::option::of(method_name()),
        prop::option::of(params()),
        prop::option::of(json_value()),
        any::<bool>(),
    )
        .prop_map(|(id, method, params, result, versioned)| {
            let mut m = Map::new();
            if versioned {
                m.insert("jsonrpc".into(), json!("2.0"));
            }
            for (k, v) in [
                ("id", id),
                ("method", method),
                ("params", params),
                ("result", result),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            Value::Object(m)
        })
}

/// A request body: a message, a message cut anywhere, a batch, or bytes.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => message().prop_map(|m| m.to_string().into_bytes()),
        2 => (message(), any::<prop::sample::Index>()).prop_map(|(m, at)| {
            let text = m.to_string().into_bytes();
            let cut = at.index(text.len() + 1);
            text[..cut].to_vec()
        }),
        1 => prop::collection::vec(message(), 0..4).prop_map(|b| Value::Array(b).to_string().into_bytes()),
        1 => json_value().prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

fn http_method() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("POST".to_string()),
        1 => prop::sample::select(vec!["post", "GET", "DELETE", "PUT", ""]).prop_map(String::from),
        1 => "[A-Za-z]{0,8}",
    ]
}

/// The body of a JSON answer (panics when it is not JSON).
fn body_json(r: &HttpResponse) -> Value {
    serde_json::from_slice(&r.body).unwrap_or_else(|e| {
        panic!(
            "status {} with a body that is not JSON ({e}): {:?}",
            r.status,
            String::from_utf8_lossy(&r.body)
        )
    })
}

/// Whether `v` holds a number with a fraction: JSON-RPC ids are strings
/// or integers, and a float may come back in its shortest other digits.
fn has_fraction(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(a) => a.iter().any(has_fraction),
        Value::Object(m) => m.values().any(has_fraction),
        _ => false,
    }
}

/// An answer built from a mediator's response: JSON-RPC with `id`.
fn check_answer(r: &HttpResponse, id: &Value) {
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    let doc = body_json(r);
    assert_eq!(doc["jsonrpc"], "2.0", "{doc}");
    if !has_fraction(id) {
        assert_eq!(&doc["id"], id, "{doc}");
    }
    assert!(
        doc.get("result").is_some() != doc.get("error").is_some(),
        "{doc}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_request_gets_a_step_and_protocol_answers_are_well_formed(
        method in http_method(),
        body in body(),
        files in any::<bool>(),
        checked in any::<bool>(),
        exact in any::<bool>(),
    ) {
        let step = mcp::request(&method, &body, files, checked, exact);
        let sent: Option<Value> = serde_json::from_slice(&body).ok();
        match step {
            Step::Reply { response, .. } => {
                prop_assert!(
                    [200, 202, 400, 405].contains(&response.status),
                    "status {}", response.status
                );
                if matches!(response.status, 200 | 400) {
                    let doc = body_json(&response);
                    prop_assert_eq!(&doc["jsonrpc"], "2.0");
                    if response.status == 200 {
                        let id = sent.as_ref().and_then(|m| m.get("id")).cloned();
                        if !id.as_ref().is_some_and(has_fraction) {
                            prop_assert_eq!(Some(&doc["id"]), id.as_ref(), "{}", doc);
                        }
                    }
                }
                if response.status == 405 {
                    prop_assert!(!method.eq_ignore_ascii_case("POST"));
                }
            }
            Step::ListTools { id } | Step::ListResources { id } => {
                prop_assert_eq!(sent.as_ref().and_then(|m| m.get("id")), Some(&id));
            }
            Step::CallTool { id, name, args } => {
                let sent = sent.expect("a call was parsed from JSON");
                prop_assert_eq!(&sent["id"], &id);
                prop_assert_eq!(sent["params"]["name"].as_str(), Some(name.as_str()));
                let given = &sent["params"]["arguments"];
                let as_given = args == *given || (given.is_null() && args == json!({}));
                prop_assert!(as_given, "arguments {} from {}", args, given);
            }
            Step::ReadResource { id, path } => {
                prop_assert_eq!(sent.as_ref().and_then(|m| m.get("id")), Some(&id));
                prop_assert!(!path.is_empty());
            }
        }
    }

    #[test]
    fn answers_from_any_mediated_response_are_json_rpc(
        id in json_value(),
        response in json_value(),
        ok in json_value(),
        error in json_value(),
        path in ".{0,16}",
        tools in prop::collection::vec((".{0,10}", ".{0,10}", json_value()), 0..4),
    ) {
        let tools: Vec<McpTool> = tools
            .into_iter()
            .map(|(name, description, input_schema)| McpTool { name, description, input_schema })
            .collect();
        check_answer(&mcp::tools_list(&id, &tools), &id);
        for r in [response.clone(), json!({"ok": ok}), json!({"error": error})] {
            check_answer(&mcp::tool_result(&id, &r), &id);
            check_answer(&mcp::resources_list(&id, &r, |_| true), &id);
            check_answer(&mcp::resource_read(&id, &path, &r), &id);
        }
    }
}
