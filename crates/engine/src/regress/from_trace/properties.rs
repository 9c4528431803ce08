//! Property tests of `case from-trace`'s readers: generated OTLP JSON and
//! OTLP protobuf traces (odd trace ids, tool names, results, schemas and
//! numbers, JSON nested deep), and damaged bytes, each read and made a case
//! folder. Nothing panics, and every refusal is an input error naming the
//! trace file (exit 2), never an internal one.

use super::{from_trace, list, otlp};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use proptest::prelude::*;
use prost::Message as _;
use serde_json::{Value, json};
use std::path::Path;
use worldline_case::error::InputError;

/// Text with what breaks naive code: escapes, path parts, non-ASCII.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,8}",
        "\\PC{0,10}",
        Just(String::new()),
        Just("../../x/".to_string()),
        Just("é€😀é€😀é€".to_string()),
        Just("\u{1b}[31mred".to_string()),
        Just("not-found".to_string()),
        Just("weird-kind".to_string()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("error".to_string()),
        Just("kind".to_string()),
        Just("message".to_string()),
        Just("$ref".to_string()),
        Just("type".to_string()),
        Just("minLength".to_string()),
        Just("properties".to_string()),
        Just("required".to_string()),
        text(),
    ]
}

/// JSON nested `depth` arrays deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |v, _| json!([v]))
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        text().prop_map(Value::from),
        (0usize..300).prop_map(nested),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// One agent run as a trace: a model call that calls `tool`, the tool's
/// span with its result, and the trace's id.
#[derive(Debug, Clone)]
struct Spec {
    trace_id: String,
    task: String,
    tool: String,
    schema: Value,
    args: Value,
    result: Value,
    /// An `intValue` attribute given as a JSON number (maybe past i64).
    number: u64,
    tool_span: bool,
    runs: usize,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop_oneof![
            text(),
            "[0-9a-fA-F]{32}",
            // As protobuf's JSON mapping writes a trace id.
            prop::array::uniform16(any::<u8>()).prop_map(|b| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.encode(b)
            }),
        ],
        text(),
        text(),
        json_value(),
        json_value(),
        json_value(),
        any::<u64>(),
        any::<bool>(),
        1usize..4,
    )
        .prop_map(
            |(trace_id, task, tool, schema, args, result, number, tool_span, runs)| Spec {
                trace_id,
                task,
                tool,
                schema,
                args,
                result,
                number,
                tool_span,
                runs,
            },
        )
}

/// A span's attributes as (key, JSON value).
type Attributes = Vec<(String, Value)>;

/// The chat span's attributes and the tool span's.
fn attributes(s: &Spec) -> (Attributes, Attributes) {
    let chat = vec![
        ("gen_ai.operation.name".into(), json!("chat")),
        (
            "gen_ai.input.messages".into(),
            json!(json!([{"role": "user", "content": s.task}]).to_string()),
        ),
        (
            "gen_ai.output.messages".into(),
            json!(
                json!([{"role": "assistant", "parts": [{"type": "tool_call", "name": s.tool, "arguments": s.args}]}])
                    .to_string()
            ),
        ),
        (
            "gen_ai.tool.definitions".into(),
            json!(json!([{"name": s.tool, "parameters": s.schema}]).to_string()),
        ),
    ];
    let tool = vec![
        ("gen_ai.operation.name".into(), json!("execute_tool")),
        ("gen_ai.tool.name".into(), json!(s.tool)),
        (
            "gen_ai.tool.call.result".into(),
            json!(s.result.to_string()),
        ),
    ];
    (chat, tool)
}

fn otlp_json(s: &Spec) -> Vec<u8> {
    let (chat, tool) = attributes(s);
    let attrs = |list: &[(String, Value)]| -> Value {
        let mut out: Vec<Value> = list
            .iter()
            .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
            .collect();
        out.push(json!({"key": "count", "value": {"intValue": s.number}}));
        out.into()
    };
    let mut spans = Vec::new();
    for run in 0..s.runs {
        let id = format!(
            "{}{}",
            s.trace_id,
            if run == 0 {
                String::new()
            } else {
                run.to_string()
            }
        );
        spans.push(json!({"traceId": id, "spanId": "01", "name": "chat", "startTimeUnixNano": "1", "attributes": attrs(&chat)}));
        if s.tool_span {
            spans.push(json!({"traceId": id, "spanId": "02", "name": "tool", "startTimeUnixNano": 2, "attributes": attrs(&tool)}));
        }
    }
    serde_json::to_vec(&json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})).unwrap()
}

fn otlp_proto(s: &Spec) -> Vec<u8> {
    let (chat, tool) = attributes(s);
    let attrs = |list: &[(String, Value)]| -> Vec<KeyValue> {
        let mut out: Vec<KeyValue> = list
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.clone(),
                value: Some(AnyValue {
                    value: Some(any_value::Value::StringValue(
                        v.as_str().unwrap_or_default().to_string(),
                    )),
                }),
                ..Default::default()
            })
            .collect();
        out.push(KeyValue {
            key: "count".into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::IntValue(s.number as i64)),
            }),
            ..Default::default()
        });
        out
    };
    let mut spans = Vec::new();
    for run in 0..s.runs {
        let mut id = s.trace_id.as_bytes().to_vec();
        id.push(run as u8);
        spans.push(Span {
            trace_id: id.clone(),
            span_id: vec![1],
            name: "chat".into(),
            start_time_unix_nano: 1,
            attributes: attrs(&chat),
            ..Default::default()
        });
        if s.tool_span {
            spans.push(Span {
                trace_id: id,
                span_id: vec![2],
                name: String::new(),
                start_time_unix_nano: 2,
                attributes: attrs(&tool),
                ..Default::default()
            });
        }
    }
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

/// Read `bytes` as a trace file and make a case folder of it (and list it):
/// a folder, or an input error naming the file.
fn made_or_refused(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.otlp");
    std::fs::write(&trace, bytes).unwrap();
    let _ = otlp::parse(bytes);
    if let Err(e) = list(&trace, None) {
        named(&e, &trace)?;
    }
    match from_trace(&trace, &dir.path().join("out"), None) {
        Ok(made) => {
            prop_assert!(made.case.starts_with(dir.path().join("out/cases")));
            prop_assert!(made.case.is_file());
        }
        Err(e) => {
            named(&e, &trace)?;
            prop_assert!(!dir.path().join("out").exists());
        }
    }
    Ok(())
}

fn named(e: &anyhow::Error, trace: &Path) -> Result<(), TestCaseError> {
    let input = e.chain().find_map(|c| c.downcast_ref::<InputError>());
    prop_assert!(input.is_some(), "not an input error: {e:#}");
    prop_assert_eq!(&input.unwrap().file, trace, "{:#}", e);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn otlp_json_traces_become_a_case_or_an_input_error(s in spec()) {
        made_or_refused(&otlp_json(&s))?;
    }

    #[test]
    fn otlp_protobuf_traces_become_a_case_or_an_input_error(
        s in spec(),
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..3),
    ) {
        let whole = otlp_proto(&s);
        made_or_refused(&whole)?;
        // Damaged: cut short and bytes changed.
        let mut damaged = whole[..cut.index(whole.len() + 1)].to_vec();
        for (at, b) in flips {
            if !damaged.is_empty() {
                let i = at.index(damaged.len());
                damaged[i] ^= b;
            }
        }
        made_or_refused(&damaged)?;
    }
}

/// An integer TOML cannot hold is named where it is in the case (it was
/// "u64 value was too large", naming nothing).
#[test]
fn an_integer_past_toml_is_named_where_it_is() {
    let case =
        json!({"inject": [{"tool": "lookup", "response": {"v": 9_223_372_036_854_775_808_u64}}]});
    let e = super::toml_of(&case).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "inject[0].response.v is the integer 9223372036854775808, past what a case holds"
        ),
        "{e}"
    );
    assert!(super::toml_of(&json!({"v": i64::MAX})).is_ok());
}
