//! What an agent run's spans say, in the three forms instrumentations
//! emit: the current GenAI attributes (`gen_ai.input.messages`,
//! `gen_ai.output.messages`, `gen_ai.tool.definitions`, `execute_tool`
//! spans), the older per-message span events (`gen_ai.user.message`,
//! `gen_ai.choice`, ...), and OpenInference's flattened attributes
//! (`llm.input_messages.N.message.*`, TOOL spans). Messages come out in
//! one shape: `{role, content}` in, `{content?, tool_calls}` out.

use super::otlp::Span;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// One model call: the messages sent and the answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelCall {
    /// `{role, content}` each; `content` is text.
    pub input: Vec<Value>,
    /// `None` when the span has no content.
    pub output: Option<Answer>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    pub content: Option<String>,
    /// `(name, arguments as JSON text)`.
    pub tool_calls: Vec<(String, String)>,
}

/// One tool call with what it returned (`None`: not recorded).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub name: String,
    pub arguments: Option<Value>,
    pub result: Option<Value>,
}

/// A tool the agent declared.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolDef {
    pub name: String,
    pub description: String,
    pub params: Value,
}

/// An agent run read from a trace.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub model_calls: Vec<ModelCall>,
    pub tool_calls: Vec<ToolCall>,
    /// By name, first definition kept.
    pub tools: BTreeMap<String, ToolDef>,
    pub start_ns: u64,
    /// Which form the model calls were in.
    pub forms: Vec<&'static str>,
}

impl Run {
    /// Model calls whose messages were not captured.
    pub(crate) fn without_content(&self) -> usize {
        self.model_calls
            .iter()
            .filter(|c| c.input.is_empty() && c.output.is_none())
            .count()
    }
}

/// JSON text parsed, or the text itself.
fn parsed(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

/// A message's text: `content` as a string, or its text parts joined.
fn text_of(m: &Value) -> Option<String> {
    match (&m["content"], &m["parts"]) {
        (Value::String(s), _) => Some(s.clone()),
        (Value::Array(parts), _) | (_, Value::Array(parts)) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p["type"] == "text" || p.get("text").is_some())
                .filter_map(|p| p["content"].as_str().or(p["text"].as_str()))
                .collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
        _ => None,
    }
}

fn message(m: &Value) -> Value {
    let response = m["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["type"] == "tool_call_response")
        .map(|p| match &p["response"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    json!({"role": m["role"].as_str().unwrap_or("user"), "content": response.or_else(|| text_of(m))})
}

/// Tool calls when the trace has no tool spans (the openai instrumentations
/// trace model calls only): each answer's calls, with the results the next
/// model call sent back as `tool` messages, in order.
fn calls_from_messages(calls: &[ModelCall]) -> Vec<ToolCall> {
    let mut out = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let Some(answer) = &c.output else { continue };
        let results: Vec<Value> = calls.get(i + 1).map_or_else(Vec::new, |next| {
            let after = next
                .input
                .iter()
                .rposition(|m| m["role"] == "assistant")
                .map_or(0, |p| p + 1);
            next.input[after..]
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| parsed(&m["content"]))
                .collect()
        });
        for (k, (name, args)) in answer.tool_calls.iter().enumerate() {
            out.push(ToolCall {
                name: name.clone(),
                arguments: serde_json::from_str(args).ok(),
                result: results.get(k).cloned(),
            });
        }
    }
    out
}

/// Tool calls of an answer: OpenAI's `tool_calls` or GenAI `tool_call` parts.
fn calls_of(m: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in m["tool_calls"].as_array().into_iter().flatten() {
        let f = if c.get("function").is_some() {
            &c["function"]
        } else {
            c
        };
        if let Some(name) = f["name"].as_str() {
            out.push((name.to_string(), args_text(&f["arguments"])));
        }
    }
    for p in m["parts"].as_array().into_iter().flatten() {
        if p["type"] == "tool_call"
            && let Some(name) = p["name"].as_str()
        {
            out.push((name.to_string(), args_text(&p["arguments"])));
        }
    }
    out
}

fn args_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "{}".into(),
        other => other.to_string(),
    }
}

/// An answer from an output message (GenAI), a choice (OpenAI's
/// `{message, finish_reason}`) or a flattened message.
fn answer(v: &Value) -> Answer {
    let m = if v.get("message").is_some() {
        &v["message"]
    } else {
        v
    };
    Answer {
        content: text_of(m).filter(|t| !t.is_empty()),
        tool_calls: calls_of(m),
    }
}

/// `prefix.N.rest` attributes regrouped: N → rest → value.
fn indexed<'a>(span: &'a Span, prefix: &str) -> BTreeMap<usize, BTreeMap<&'a str, &'a Value>> {
    let mut out: BTreeMap<usize, BTreeMap<&str, &Value>> = BTreeMap::new();
    for (k, v) in &span.attrs {
        if let Some(rest) = k.strip_prefix(prefix)
            && let Some((n, field)) = rest.split_once('.')
            && let Ok(n) = n.parse()
        {
            out.entry(n).or_default().insert(field, v);
        }
    }
    out
}

fn tool_def(v: &Value) -> Option<ToolDef> {
    let f = if v.get("function").is_some() {
        &v["function"]
    } else {
        v
    };
    Some(ToolDef {
        name: f["name"].as_str()?.to_string(),
        description: f["description"].as_str().unwrap_or("").to_string(),
        params: f
            .get("parameters")
            .filter(|p| p.is_object())
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"})),
    })
}

/// A GenAI chat span (attributes or events).
fn genai_chat(span: &Span, run: &mut Run) -> ModelCall {
    let mut input = Vec::new();
    if let Some(system) = span.attrs.get("gen_ai.system_instructions") {
        let parts = parsed(system);
        let text = text_of(&json!({"parts": parts})).or(parts.as_str().map(String::from));
        input.push(json!({"role": "system", "content": text}));
    }
    let mut output = None;
    if let Some(msgs) = span.attrs.get("gen_ai.input.messages") {
        input.extend(parsed(msgs).as_array().into_iter().flatten().map(message));
        run.forms.push("gen_ai attributes");
    }
    if let Some(out) = span.attrs.get("gen_ai.output.messages") {
        output = parsed(out).as_array().and_then(|a| a.first()).map(answer);
    }
    for e in &span.events {
        let role = match e.name.as_str() {
            "gen_ai.system.message" => "system",
            "gen_ai.user.message" => "user",
            "gen_ai.assistant.message" => "assistant",
            "gen_ai.tool.message" => "tool",
            "gen_ai.choice" => {
                let body = e.attrs.get("message").map(parsed).unwrap_or_else(|| {
                    json!({"content": e.attrs.get("content"), "tool_calls": e.attrs.get("tool_calls").map(parsed)})
                });
                output = Some(answer(&body));
                continue;
            }
            _ => continue,
        };
        if input.is_empty() || run.forms.last() != Some(&"gen_ai events") {
            run.forms.push("gen_ai events");
        }
        let content = e.attrs.get("content").map(parsed);
        input.push(json!({"role": role, "content": content.as_ref().and_then(|c| text_of(&json!({"content": c})).or(c.as_str().map(String::from)))}));
    }
    if let Some(defs) = span.attrs.get("gen_ai.tool.definitions") {
        for d in parsed(defs)
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(tool_def)
        {
            run.tools.entry(d.name.clone()).or_insert(d);
        }
    }
    ModelCall { input, output }
}

/// An OpenInference LLM span.
fn openinference_llm(span: &Span, run: &mut Run) -> ModelCall {
    run.forms.push("openinference");
    let input = indexed(span, "llm.input_messages.")
        .values()
        .map(|m| {
            json!({
                "role": m.get("message.role").and_then(|v| v.as_str()).unwrap_or("user"),
                "content": m.get("message.content").and_then(|v| v.as_str()),
            })
        })
        .collect();
    let output = indexed(span, "llm.output_messages.").get(&0).map(|m| {
        let calls = m
            .iter()
            .filter_map(|(k, v)| {
                let rest = k.strip_prefix("message.tool_calls.")?;
                let (n, field) = rest.split_once('.')?;
                Some((n.parse::<usize>().ok()?, field, *v))
            })
            .fold(
                BTreeMap::<usize, (String, String)>::new(),
                |mut acc, (n, f, v)| {
                    let e = acc.entry(n).or_default();
                    match f {
                        "tool_call.function.name" => e.0 = v.as_str().unwrap_or("").into(),
                        "tool_call.function.arguments" => e.1 = args_text(v),
                        _ => {}
                    }
                    acc
                },
            );
        Answer {
            content: m
                .get("message.content")
                .and_then(|v| v.as_str())
                .filter(|t| !t.is_empty())
                .map(String::from),
            tool_calls: calls.into_values().filter(|(n, _)| !n.is_empty()).collect(),
        }
    });
    for t in indexed(span, "llm.tools.").values() {
        if let Some(d) = t
            .get("tool.json_schema")
            .map(|v| parsed(v))
            .as_ref()
            .and_then(tool_def)
        {
            run.tools.entry(d.name.clone()).or_insert(d);
        }
    }
    ModelCall { input, output }
}

/// The run in these spans (one trace's), in start order.
pub(crate) fn run_of(spans: &[Span]) -> Run {
    let mut spans: Vec<&Span> = spans.iter().collect();
    spans.sort_by_key(|s| s.start_ns);
    let mut run = Run {
        start_ns: spans.first().map_or(0, |s| s.start_ns),
        ..Run::default()
    };
    for s in spans {
        let op = s.text("gen_ai.operation.name").unwrap_or("");
        let oi = s.text("openinference.span.kind").unwrap_or("");
        if oi == "LLM" {
            let c = openinference_llm(s, &mut run);
            run.model_calls.push(c);
        } else if oi == "TOOL" {
            run.tool_calls.push(ToolCall {
                name: s.text("tool.name").unwrap_or(&s.name).to_string(),
                arguments: s.attrs.get("input.value").map(parsed),
                result: s.attrs.get("output.value").map(parsed),
            });
        } else if matches!(op, "chat" | "text_completion" | "generate_content") {
            let c = genai_chat(s, &mut run);
            run.model_calls.push(c);
        } else if op == "execute_tool" {
            run.tool_calls.push(ToolCall {
                name: s.text("gen_ai.tool.name").unwrap_or("").to_string(),
                arguments: s.attrs.get("gen_ai.tool.call.arguments").map(parsed),
                result: s.attrs.get("gen_ai.tool.call.result").map(parsed),
            });
        }
    }
    run.forms.dedup();
    if run.tool_calls.is_empty() {
        run.tool_calls = calls_from_messages(&run.model_calls);
    }
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(attrs: &[(&str, Value)]) -> Span {
        Span {
            trace_id: "t".into(),
            span_id: "s".into(),
            name: "x".into(),
            start_ns: 1,
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            events: Vec::new(),
        }
    }

    #[test]
    fn the_current_attributes_and_openinference_give_the_same_call() {
        let genai = span(&[
            ("gen_ai.operation.name", json!("chat")),
            (
                "gen_ai.input.messages",
                json!(r#"[{"role":"user","parts":[{"type":"text","content":"hi"}]}]"#),
            ),
            (
                "gen_ai.output.messages",
                json!(
                    r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"get","arguments":{"id":"A"}}],"finish_reason":"tool_call"}]"#
                ),
            ),
            (
                "gen_ai.tool.definitions",
                json!(r#"[{"type":"function","name":"get","parameters":{"type":"object"}}]"#),
            ),
        ]);
        let oi = span(&[
            ("openinference.span.kind", json!("LLM")),
            ("llm.input_messages.0.message.role", json!("user")),
            ("llm.input_messages.0.message.content", json!("hi")),
            ("llm.output_messages.0.message.role", json!("assistant")),
            (
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                json!("get"),
            ),
            (
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
                json!("{\"id\":\"A\"}"),
            ),
            (
                "llm.tools.0.tool.json_schema",
                json!(
                    r#"{"type":"function","function":{"name":"get","parameters":{"type":"object"}}}"#
                ),
            ),
        ]);
        let a = run_of(&[genai]);
        let b = run_of(&[oi]);
        assert_eq!(a.model_calls, b.model_calls);
        assert_eq!(a.tools, b.tools);
        assert_eq!(
            a.model_calls[0].output.as_ref().unwrap().tool_calls,
            [("get".to_string(), "{\"id\":\"A\"}".to_string())]
        );
    }

    #[test]
    fn without_tool_spans_results_come_from_the_next_calls_tool_messages() {
        let first = span(&[
            ("gen_ai.operation.name", json!("chat")),
            (
                "gen_ai.input.messages",
                json!(r#"[{"role":"user","content":"hi"}]"#),
            ),
            (
                "gen_ai.output.messages",
                json!(
                    r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"get","arguments":{"id":"A"}}]}]"#
                ),
            ),
        ]);
        let mut second = span(&[
            ("gen_ai.operation.name", json!("chat")),
            (
                "gen_ai.input.messages",
                json!(
                    r#"[{"role":"user","content":"hi"},{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"get","arguments":{"id":"A"}}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"c1","response":{"status":"open"}}]}]"#
                ),
            ),
            (
                "gen_ai.output.messages",
                json!(r#"[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]"#),
            ),
        ]);
        second.start_ns = 2;
        let r = run_of(&[first, second]);
        assert_eq!(
            r.tool_calls,
            [ToolCall {
                name: "get".into(),
                arguments: Some(json!({"id": "A"})),
                result: Some(json!({"status": "open"})),
            }]
        );
    }

    #[test]
    fn per_message_events_are_read_too() {
        let mut s = span(&[("gen_ai.operation.name", json!("chat"))]);
        s.events = vec![
            super::super::otlp::SpanEvent {
                name: "gen_ai.user.message".into(),
                attrs: [("content".to_string(), json!("hi"))].into(),
            },
            super::super::otlp::SpanEvent {
                name: "gen_ai.choice".into(),
                attrs: [("message".to_string(), json!(r#"{"content":"done"}"#))].into(),
            },
        ];
        let r = run_of(&[s]);
        assert_eq!(
            r.model_calls[0].input,
            [json!({"role": "user", "content": "hi"})]
        );
        assert_eq!(
            r.model_calls[0].output.as_ref().unwrap().content.as_deref(),
            Some("done")
        );
        assert_eq!(r.without_content(), 0);
    }
}
