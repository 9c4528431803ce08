//! Property tests of `[openapi]` documents: generated documents (odd
//! versions, servers, paths, methods, operation ids, parameters and
//! `$ref`s, cycles among them) as JSON, YAML, and raw text with a
//! byte-order mark or damage, loaded as a world's API. Nothing panics, and
//! every problem names world.toml or the document.

use super::problems;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,8}",
        "\\PC{0,10}",
        Just(String::new()),
        Just("get_ticket".to_string()),
        Just("\u{1b}[2J".to_string()),
    ]
}

fn version() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("3.0.3")),
        Just(json!("3.1.0")),
        Just(json!(3.1)),
        Just(json!("2.0")),
        Just(Value::Null),
        text().prop_map(Value::from),
    ]
}

fn server() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("https://tickets.internal/api".to_string()),
        Just("http://127.0.0.1:8080".to_string()),
        Just(String::new()),
        Just("https://x/api?key=1".to_string()),
        Just("https://x y z/\u{0}".to_string()),
        Just("https://{region}.x".to_string()),
        Just("/relative".to_string()),
        text(),
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/tickets/{id}".to_string()),
        Just("/tickets".to_string()),
        Just("/{}".to_string()),
        Just("/a{b}c".to_string()),
        "/[a-z{}?#%/]{0,12}",
        text(),
    ]
}

fn reference() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"$ref": "#/components/parameters/Id"})),
        Just(json!({"$ref": "#/components/parameters/Loop"})),
        Just(json!({"$ref": "other.yaml#/x"})),
        Just(json!({"$ref": "#/nowhere"})),
        Just(json!({"$ref": 7})),
        (
            text(),
            prop_oneof![Just("path"), Just("query"), Just("header"), Just("cookie")]
        )
            .prop_map(|(name, at)| json!({"name": name, "in": at})),
    ]
}

fn operation() -> impl Strategy<Value = Value> {
    (
        prop::option::of(text()),
        prop::collection::vec(reference(), 0..3),
        prop::option::of(prop_oneof![
            Just(json!({"content": {"application/json": {}}})),
            Just(json!({"content": {"text/plain": {}}})),
            Just(json!({"$ref": "#/components/requestBodies/Loop"})),
            Just(json!(5)),
        ]),
    )
        .prop_map(|(id, params, body)| {
            let mut op = json!({"parameters": params});
            if let Some(id) = id {
                op["operationId"] = id.into();
            }
            if let Some(body) = body {
                op["requestBody"] = body;
            }
            op
        })
}

fn document() -> impl Strategy<Value = Value> {
    let item = prop::collection::btree_map(
        prop_oneof![
            Just("get"),
            Just("post"),
            Just("head"),
            Just("delete"),
            Just("parameters"),
            Just("$ref")
        ],
        operation(),
        0..3,
    );
    (
        version(),
        prop::option::of(server()),
        prop::collection::btree_map(path(), item, 0..4),
        any::<bool>(),
    )
        .prop_map(|(version, server, paths, security)| {
            let mut doc = Map::new();
            if !version.is_null() {
                doc.insert("openapi".into(), version);
            }
            if let Some(s) = server {
                doc.insert(
                    "servers".into(),
                    json!([{"url": s, "variables": {"region": {"default": "eu"}}}]),
                );
            }
            let paths: Map<String, Value> = paths
                .into_iter()
                .map(|(p, ops)| {
                    let ops: Map<String, Value> =
                        ops.into_iter().map(|(m, o)| (m.to_string(), o)).collect();
                    (p, Value::Object(ops))
                })
                .collect();
            doc.insert("paths".into(), Value::Object(paths));
            doc.insert(
                "components".into(),
                json!({
                    "parameters": {
                        "Id": {"name": "id", "in": "path"},
                        "Loop": {"$ref": "#/components/parameters/Loop"},
                    },
                    "requestBodies": {"Loop": {"$ref": "#/components/requestBodies/Loop"}},
                }),
            );
            if security {
                doc.insert("security".into(), json!([{"bearer": []}]));
            }
            Value::Object(doc)
        })
}

/// How the document is written to its file.
#[derive(Debug, Clone)]
enum Form {
    Json,
    Yaml,
    /// YAML after a byte-order mark.
    Bom,
    /// YAML cut at a byte.
    Cut(prop::sample::Index),
    /// Not UTF-8.
    Latin1,
}

fn form() -> impl Strategy<Value = Form> {
    prop_oneof![
        Just(Form::Json),
        Just(Form::Yaml),
        Just(Form::Bom),
        any::<prop::sample::Index>().prop_map(Form::Cut),
        Just(Form::Latin1),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn openapi_documents_give_routes_or_problems_naming_their_file(
        doc in document(),
        form in form(),
        declared_server in prop::option::of(server()),
        map in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (name, bytes) = match &form {
            Form::Json => ("api.json", serde_json::to_vec(&doc).unwrap()),
            Form::Yaml => ("api.yaml", serde_norway::to_string(&doc).unwrap().into_bytes()),
            Form::Bom => (
                "api.yaml",
                format!("\u{feff}{}", serde_norway::to_string(&doc).unwrap()).into_bytes(),
            ),
            Form::Cut(at) => {
                let text = serde_norway::to_string(&doc).unwrap().into_bytes();
                ("api.yaml", text[..at.index(text.len() + 1)].to_vec())
            }
            Form::Latin1 => ("api.yaml", b"openapi: \"3.0.3\"\ninfo: \xff\n".to_vec()),
        };
        std::fs::write(dir.path().join(name), &bytes).unwrap();
        let mut world = format!(
            "name = \"w\"\nversion = 1\n\n[[tools]]\nname = \"get_ticket\"\nop = \"respond\"\nresponse = {{}}\n\n[openapi]\nfile = \"{name}\"\n"
        );
        if let Some(s) = &declared_server {
            world.push_str(&format!("server = {}\n", toml::Value::from(s.as_str())));
        }
        if map {
            world.push_str("tools = { getTicket = \"get_ticket\" }\n");
        }
        std::fs::write(dir.path().join("world.toml"), world).unwrap();
        let (found, notes) = problems(dir.path());
        for p in &found {
            prop_assert!(
                p.file == dir.path().join("world.toml") || p.file == dir.path().join(name),
                "{p} names neither world.toml nor {name}"
            );
        }
        if matches!(form, Form::Bom) && found.is_empty() {
            prop_assert!(notes.iter().all(|n| !n.contains("more than one document")));
        }
    }
}
