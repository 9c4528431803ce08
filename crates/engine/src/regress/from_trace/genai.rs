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
    /// The provider's error, when the call failed without an answer: the
    /// error kind a scripted reply gives and the HTTP status, if known.
    pub failed: Option<(&'static str, Option<u16>)>,
    /// The choices the answer held (a request for `n` > 1); `output` is
    /// the first.
    pub choices: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    pub content: Option<String>,
    /// `(name, arguments as JSON text)`.
    pub tool_calls: Vec<(String, String)>,
    /// Each call's id, when the trace gives it (beside `tool_calls`).
    pub call_ids: Vec<Option<String>>,
}

/// One tool call with what it returned (`None`: not recorded).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub name: String,
    /// The model's id for the call, when the trace gives it.
    pub id: Option<String>,
    pub arguments: Option<Value>,
    pub result: Option<Value>,
}

/// What `worldline otel` says a tool call the simulated user made of its
/// own tools was run by (`worldline.ran_by`).
const USER_RAN: &str = "user";

/// A simulated user's turn: a span `worldline otel` writes for each
/// `user.say` (`invoke_agent user`, with `worldline.user.played_by`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UserTurn {
    /// The turn's number (`worldline.user.turn`; none for a fork's answer).
    pub turn: Option<u64>,
    /// `worldline.user.played_by`: model, script, stand-in, fork, ...
    pub played_by: String,
    /// The user's reply (its output message), when they answered and the
    /// content was captured.
    pub reply: Option<String>,
    /// How they left: the reason (when captured) and whether satisfied.
    pub ended: Option<(Option<String>, bool)>,
    /// The virtual time the model playing the user took.
    pub latency_ms: Option<u64>,
    /// The calls the user made of its own tools before it answered, in
    /// order: the `execute_tool` spans under its span that say
    /// `worldline.ran_by` `user`.
    pub calls: Vec<ToolCall>,
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
    /// A simulated user's turns, in the order they started.
    pub user_turns: Vec<UserTurn>,
    /// By name, first definition kept.
    pub tools: BTreeMap<String, ToolDef>,
    pub start_ns: u64,
    /// Which form the model calls were in.
    pub forms: Vec<&'static str>,
    /// The first message attribute that could not be read, naming its
    /// span: a case made without it would say something else (a damaged
    /// `gen_ai.input.messages` was an empty task, exit 0).
    pub damaged: Option<String>,
    /// The run's seed, when a root span carries `worldline.seed` (a trace
    /// `worldline otel` exported).
    pub seed: Option<u64>,
}

impl Run {
    /// Note that `span`'s attribute `key` (or its event's) could not be
    /// read, and why; the first such is kept.
    fn damage(&mut self, span: &Span, what: &str, why: &str) {
        if self.damaged.is_none() {
            self.damaged = Some(format!(
                "span `{}` (id {}): its {what} {why}; record the trace again, or mend that span",
                worldline_case::shown::text(&span.name),
                worldline_case::shown::text(&span.span_id),
            ));
        }
    }

    /// Model calls whose messages were not captured.
    pub(crate) fn without_content(&self) -> usize {
        self.model_calls
            .iter()
            .filter(|c| c.input.is_empty() && c.output.is_none() && c.failed.is_none())
            .count()
    }
}

/// JSON text parsed, or the text itself (also when it holds an integer
/// no 64 bits hold, which parsing would turn into the nearest float:
/// [`unholdable`] names it).
fn parsed(v: &Value) -> Value {
    match v {
        Value::String(s) if worldline_case::wide_integer::find(s).is_none() => {
            serde_json::from_str(s).unwrap_or_else(|_| v.clone())
        }
        other => other.clone(),
    }
}

/// A tool's result out of its transport's wrapper: a text content part
/// (`{"type": "text", "text": T}`, as an MCP tool's content and the Agents
/// SDK's tool outputs come; `input_text` as the Responses API carries it)
/// or a list of only such parts is its text, the parts' joined, read as
/// JSON when it is JSON. Pinned as it was, a replayed agent saw the answer
/// wrapped twice, and a recorded `{error: {kind}}` was pinned a success.
fn result_of(v: &Value) -> Value {
    let v = parsed(v);
    let texts: Option<Vec<&str>> = match &v {
        Value::Array(parts) if !parts.is_empty() => parts.iter().map(text_part).collect(),
        Value::Object(_) => text_part(&v).map(|t| vec![t]),
        _ => None,
    };
    match texts {
        Some(texts) => parsed(&Value::from(texts.concat())),
        None => v,
    }
}

/// The text of a text content part that holds nothing else.
fn text_part(p: &Value) -> Option<&str> {
    let o = p.as_object()?;
    let wrapper_only =
        (o.keys()).all(|k| matches!(k.as_str(), "type" | "text" | "annotations" | "_meta"));
    let kind = o.get("type")?.as_str()?;
    if !wrapper_only || !matches!(kind, "text" | "input_text" | "output_text") {
        return None;
    }
    o.get("text")?.as_str()
}

/// Why `text`, kept as text by [`parsed`], is JSON a case cannot hold:
/// an integer past 64 bits, a number past a float's range, or nesting
/// past what is read; `None` for text that is no JSON at all (a tool's
/// plain answer).
pub(crate) fn unholdable(text: &str) -> Option<String> {
    if let Some(wide) = worldline_case::wide_integer::find(text) {
        return Some(wide.message());
    }
    let e = serde_json::from_str::<Value>(text).err()?;
    let said = e.to_string();
    (said.starts_with("number out of range") || said.starts_with("recursion limit exceeded"))
        .then_some(said)
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
    let part =
        (m["parts"].as_array().into_iter().flatten()).find(|p| p["type"] == "tool_call_response");
    let response = part.map(|p| match &p["response"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let mut out = json!({"role": m["role"].as_str().unwrap_or("user"), "content": response.or_else(|| text_of(m))});
    // Which call a tool message answers: OpenAI's `tool_call_id`, a GenAI
    // part's `id`.
    if let Some(id) = (m["tool_call_id"].as_str()).or(part.and_then(|p| p["id"].as_str())) {
        out["tool_call_id"] = id.into();
    }
    out
}

/// Tool calls when the trace has no tool spans (the openai instrumentations
/// trace model calls only): each answer's calls, with the results the next
/// model call sent back as `tool` messages: the one naming the call's id
/// when they name ids (results sent back in another order, or one missing,
/// were given to the wrong calls), else in order.
fn calls_from_messages(calls: &[ModelCall]) -> Vec<ToolCall> {
    let mut out = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let Some(answer) = &c.output else { continue };
        let results: Vec<&Value> = calls.get(i + 1).map_or_else(Vec::new, |next| {
            let after = next
                .input
                .iter()
                .rposition(|m| m["role"] == "assistant")
                .map_or(0, |p| p + 1);
            next.input[after..]
                .iter()
                .filter(|m| m["role"] == "tool")
                .collect()
        });
        let by_id = results.iter().any(|m| m["tool_call_id"].is_string());
        for (k, (name, args)) in answer.tool_calls.iter().enumerate() {
            let id = answer.call_ids.get(k).cloned().flatten();
            let result = match (by_id, &id) {
                (true, Some(id)) => results.iter().find(|m| m["tool_call_id"] == id.as_str()),
                _ => results.get(k),
            };
            out.push(ToolCall {
                name: name.clone(),
                id,
                arguments: serde_json::from_str(args).ok(),
                result: result.map(|m| result_of(&m["content"])),
            });
        }
    }
    out
}

/// Tool spans in the order the model asked for their calls, when every
/// one names a call an answer made (spans of calls run at once end, and
/// may start, in any order; a case pins results by each tool's n-th call,
/// which a replay makes in the answers' order). Else as they started.
fn in_asked_order(run: &mut Run) {
    let asked: Vec<&str> = (run.model_calls.iter())
        .filter_map(|c| c.output.as_ref())
        .flat_map(|a| a.call_ids.iter().flatten().map(String::as_str))
        .collect();
    let place = |t: &ToolCall| {
        let id = t.id.as_deref()?;
        asked.iter().position(|a| *a == id)
    };
    // Ids a provider reuses from answer to answer place nothing.
    let unique = asked.len()
        == asked
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len();
    if unique && run.tool_calls.iter().all(|t| place(t).is_some()) {
        run.tool_calls.sort_by_key(place);
    }
}

/// Tool calls of an answer, each with its id when it has one: OpenAI's
/// `tool_calls` or GenAI `tool_call` parts.
fn calls_of(m: &Value) -> Vec<((String, String), Option<String>)> {
    let mut out = Vec::new();
    let id = |c: &Value| c["id"].as_str().map(String::from);
    for c in m["tool_calls"].as_array().into_iter().flatten() {
        let f = if c.get("function").is_some() {
            &c["function"]
        } else {
            c
        };
        if let Some(name) = f["name"].as_str() {
            out.push(((name.to_string(), args_text(&f["arguments"])), id(c)));
        }
    }
    for p in m["parts"].as_array().into_iter().flatten() {
        if p["type"] == "tool_call"
            && let Some(name) = p["name"].as_str()
        {
            out.push(((name.to_string(), args_text(&p["arguments"])), id(p)));
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
    let (tool_calls, call_ids) = calls_of(m).into_iter().unzip();
    Answer {
        content: text_of(m).filter(|t| !t.is_empty()),
        tool_calls,
        call_ids,
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

/// Why JSON `v` (an attribute's value, parsed) is not what was wanted,
/// `want` (a list, an object): text that did not parse says why it did
/// not (cut off at an attribute length limit, such as
/// `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`, or damaged).
fn unread(v: &Value, want: &str) -> String {
    match v {
        Value::String(text) => match unholdable(text).or_else(|| {
            serde_json::from_str::<Value>(text)
                .err()
                .map(|e| e.to_string())
        }) {
            Some(why) => format!(
                "is not JSON ({why}): cut off (at an attribute length limit such as OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT?) or damaged"
            ),
            None => format!("holds text where {want} belongs"),
        },
        Value::Array(_) => format!("holds a list where {want} belongs"),
        Value::Object(_) => format!("holds an object where {want} belongs"),
        other => format!("holds {other} where {want} belongs"),
    }
}

/// The messages a GenAI attribute (`gen_ai.input.messages`,
/// `gen_ai.output.messages`) holds: a JSON list (or a list value). Null
/// (as `worldline otel` wrote for a call that failed) is no messages; any
/// other value is noted as damage and read as none.
fn messages_in(span: &Span, key: &str, run: &mut Run) -> Option<Vec<Value>> {
    match parsed(span.attrs.get(key)?) {
        Value::Array(list) => Some(list),
        Value::Null => None,
        other => {
            let what = format!("`{}`", worldline_case::shown::text(key));
            run.damage(span, &what, &unread(&other, "a JSON list of messages"));
            None
        }
    }
}

/// A simulated user's turn from its `invoke_agent user` span.
fn user_turn(span: &Span, run: &mut Run) -> UserTurn {
    let reply = messages_in(span, "gen_ai.output.messages", run)
        .and_then(|out| out.into_iter().next())
        .and_then(|m| text_of(m.get("message").unwrap_or(&m)));
    let ended = (span.attrs.get("worldline.user.ended") == Some(&Value::Bool(true))).then(|| {
        let reason = span.text("worldline.user.end_reason").map(String::from);
        let satisfied = span.attrs.get("worldline.user.satisfied") == Some(&Value::Bool(true));
        (reason, satisfied)
    });
    UserTurn {
        turn: span
            .attrs
            .get("worldline.user.turn")
            .and_then(Value::as_u64),
        played_by: span
            .text("worldline.user.played_by")
            .unwrap_or("")
            .to_string(),
        reply,
        ended,
        latency_ms: span
            .attrs
            .get("worldline.virtual_latency_ms")
            .and_then(Value::as_u64),
        calls: Vec::new(),
    }
}

/// A tool call from an `execute_tool` span (or one that names its tool
/// without saying its operation).
fn tool_call(s: &Span) -> ToolCall {
    ToolCall {
        name: s.text("gen_ai.tool.name").unwrap_or("").to_string(),
        id: s.text("gen_ai.tool.call.id").map(String::from),
        arguments: s.attrs.get("gen_ai.tool.call.arguments").map(parsed),
        result: s.attrs.get("gen_ai.tool.call.result").map(result_of),
    }
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
    let mut choices = 1;
    if span.attrs.contains_key("gen_ai.input.messages") {
        let msgs = messages_in(span, "gen_ai.input.messages", run);
        input.extend(msgs.iter().flatten().map(message));
        run.forms.push("gen_ai attributes");
    }
    // Each output message is a choice (the conventions' "candidate"):
    // the answer is the first.
    if let Some(out) = messages_in(span, "gen_ai.output.messages", run) {
        output = out.first().map(answer);
        choices = out.len().max(1);
    }
    for e in &span.events {
        let role = match e.name.as_str() {
            "gen_ai.system.message" => "system",
            "gen_ai.user.message" => "user",
            "gen_ai.assistant.message" => "assistant",
            "gen_ai.tool.message" => "tool",
            "gen_ai.choice" => {
                let message = e.attrs.get("message").map(parsed);
                if let Some(m) = message.as_ref().filter(|m| !m.is_object()) {
                    let why = unread(m, "a JSON object (the message)");
                    run.damage(span, "`gen_ai.choice` event's `message`", &why);
                }
                let body = message.unwrap_or_else(|| {
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
        // Content that is JSON (a tool's object or list) is kept as its
        // text: it was dropped, and a tool's result with it.
        let content = e.attrs.get("content").map(parsed);
        let text = content.as_ref().and_then(|c| {
            (text_of(&json!({"content": c})).or(c.as_str().map(String::from)))
                .or_else(|| (!c.is_null()).then(|| c.to_string()))
        });
        let mut m = json!({"role": role, "content": text});
        if let Some(id) = e.attrs.get("id").and_then(Value::as_str) {
            m["tool_call_id"] = id.into();
        }
        input.push(m);
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
    ModelCall {
        input,
        output,
        failed: None,
        choices,
    }
}

/// What a model call's span says of its failure, when it failed without an
/// answer (it was dropped, and the failure a case from the trace should
/// reproduce with it): `timeout` when its `error.type` says so, else
/// `unavailable`, with the HTTP status its `error.type` or
/// `http.response.status_code` gives.
fn failure(span: &Span, output: Option<&Answer>) -> Option<(&'static str, Option<u16>)> {
    if !span.failed || output.is_some() {
        return None;
    }
    let kind = span.text("error.type").unwrap_or("");
    let status = (kind.parse::<u16>().ok())
        .or(span
            .attrs
            .get("http.response.status_code")
            .and_then(Value::as_u64)
            .and_then(|n| u16::try_from(n).ok()))
        .filter(|s| (400..=599).contains(s));
    let timeout =
        kind.to_ascii_lowercase().contains("timeout") || status == Some(408) || status == Some(504);
    Some((
        if timeout { "timeout" } else { "unavailable" },
        status.filter(|_| !timeout),
    ))
}

/// An OpenInference message's text: `message.content`, or the text parts
/// of `message.contents.N.message_content.*` joined in order (the form the
/// instrumentations write a list of content parts in: tool messages, the
/// Responses API's answers; it was read as no text at all).
fn oi_text(m: &BTreeMap<&str, &Value>) -> Option<String> {
    if let Some(text) = m.get("message.content").and_then(|v| v.as_str()) {
        return Some(text.to_string());
    }
    let mut parts: BTreeMap<usize, (Option<&str>, Option<&str>)> = BTreeMap::new();
    for (k, v) in m {
        if let Some(rest) = k.strip_prefix("message.contents.")
            && let Some((n, field)) = rest.split_once('.')
            && let Ok(n) = n.parse::<usize>()
        {
            let part = parts.entry(n).or_default();
            match field {
                "message_content.type" => part.0 = v.as_str(),
                "message_content.text" => part.1 = v.as_str(),
                _ => {}
            }
        }
    }
    let texts: Vec<&str> = (parts.into_values())
        .filter(|(kind, _)| matches!(kind, None | Some("text")))
        .filter_map(|(_, text)| text)
        .collect();
    (!texts.is_empty()).then(|| texts.concat())
}

/// The tool calls of one flattened OpenInference output message, with
/// their ids, in order.
fn oi_calls(m: &BTreeMap<&str, &Value>) -> Vec<((String, String), Option<String>)> {
    let calls = m
        .iter()
        .filter_map(|(k, v)| {
            let rest = k.strip_prefix("message.tool_calls.")?;
            let (n, field) = rest.split_once('.')?;
            Some((n.parse::<usize>().ok()?, field, *v))
        })
        .fold(
            BTreeMap::<usize, ((String, String), Option<String>)>::new(),
            |mut acc, (n, f, v)| {
                let e = acc.entry(n).or_default();
                match f {
                    "tool_call.function.name" => e.0.0 = v.as_str().unwrap_or("").into(),
                    "tool_call.function.arguments" => e.0.1 = args_text(v),
                    "tool_call.id" => e.1 = v.as_str().map(String::from),
                    _ => {}
                }
                acc
            },
        );
    (calls.into_values())
        .filter(|((n, _), _)| !n.is_empty())
        .collect()
}

/// The fields of a flattened OpenInference message read as text.
const OI_TEXT_FIELDS: &[&str] = &[
    "message.role",
    "message.content",
    "message.tool_call_id",
    "message_content.type",
    "message_content.text",
    "tool_call.id",
    "tool_call.function.name",
];

/// An OpenInference LLM span.
fn openinference_llm(span: &Span, run: &mut Run) -> ModelCall {
    run.forms.push("openinference");
    // A message's text field that holds no text was read as no text (the
    // task an empty one, an answer without its words): noted as damage,
    // as a GenAI message list that does not parse is.
    for (k, v) in &span.attrs {
        if (k.starts_with("llm.input_messages.") || k.starts_with("llm.output_messages."))
            && OI_TEXT_FIELDS.iter().any(|f| k.ends_with(&format!(".{f}")))
            && !v.is_string()
            && !v.is_null()
        {
            let what = format!("`{}`", worldline_case::shown::text(k));
            run.damage(span, &what, &unread(v, "text"));
        }
    }
    let input = indexed(span, "llm.input_messages.")
        .values()
        .map(|m| {
            let mut out = json!({
                "role": m.get("message.role").and_then(|v| v.as_str()).unwrap_or("user"),
                "content": oi_text(m),
            });
            if let Some(id) = m.get("message.tool_call_id").and_then(|v| v.as_str()) {
                out["tool_call_id"] = id.into();
            }
            out
        })
        .collect();
    // Every output message is part of the one answer: the Responses API's
    // parallel calls come one function call a message (only the first
    // message's calls were kept). Their calls and texts, in order. But a
    // request for `n` > 1 choices (its `llm.invocation_parameters`) is
    // answered one choice a message (`llm.output_messages.N` is choice
    // N), each a whole answer: the answer is the first, as the GenAI form
    // reads its first output message (the choices were merged into one,
    // their texts joined and their calls made one after another).
    let asked = (span.attrs.get("llm.invocation_parameters").map(parsed))
        .and_then(|p| p["n"].as_u64())
        .unwrap_or(1);
    let mut messages = indexed(span, "llm.output_messages.");
    let choices = if asked > 1 { messages.len().max(1) } else { 1 };
    if asked > 1 {
        let first = messages.keys().next().copied();
        messages.retain(|k, _| Some(*k) == first);
    }
    let output = (!messages.is_empty()).then(|| {
        let (tool_calls, call_ids) = messages.values().flat_map(oi_calls).unzip();
        let texts: Vec<String> = (messages.values())
            .filter_map(oi_text)
            .filter(|t| !t.is_empty())
            .collect();
        Answer {
            content: (!texts.is_empty()).then(|| texts.join("\n")),
            tool_calls,
            call_ids,
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
    ModelCall {
        input,
        output,
        failed: None,
        choices,
    }
}

/// Whether a span is a model call's: an OpenInference LLM span or a GenAI
/// chat span.
fn is_model_call(s: &Span) -> bool {
    match s.text("openinference.span.kind") {
        Some("LLM") => true,
        Some("TOOL") => false,
        _ => matches!(
            s.text("gen_ai.operation.name"),
            Some("chat" | "text_completion" | "generate_content")
        ),
    }
}

/// For each span, its outermost ancestor that is a model call's (its own
/// index when none is) and how many model calls' spans are above it.
fn model_call_nesting(spans: &[&Span]) -> Vec<(usize, usize)> {
    let mut by_id: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, s) in spans.iter().enumerate() {
        by_id.entry(s.span_id.as_str()).or_insert(i);
    }
    (0..spans.len())
        .map(|i| {
            let (mut top, mut depth) = (i, 0);
            let mut parent = spans[i].parent_id.as_str();
            // At most one step a span: a damaged trace's loop ends.
            for _ in 0..spans.len() {
                let Some(&p) = by_id.get(parent).filter(|_| !parent.is_empty()) else {
                    break;
                };
                if is_model_call(spans[p]) {
                    (top, depth) = (p, depth + 1);
                }
                parent = spans[p].parent_id.as_str();
            }
            (top, depth)
        })
        .collect()
}

/// The run in these spans (one trace's), in start order.
///
/// A model call's span inside another's is the same call recorded twice,
/// by two instrumentations (OpenInference's Agents SDK instrumentor's
/// `generation` or `response` span holds its `openai` instrumentor's
/// `ChatCompletion` or `Response` span; each was counted, and every answer
/// scripted twice). One span of each such nest is kept: the innermost that
/// carries messages, the request and answer as the provider's client sent
/// and read them (the outer one is the framework's view of the same call,
/// and may lack what the client's instrumentation captured), else the
/// innermost; of spans as deep, the last started (a retry's).
pub(crate) fn run_of(spans: &[Span]) -> Run {
    let mut spans: Vec<&Span> = spans.iter().collect();
    spans.sort_by_key(|s| s.start_ns);
    let mut run = Run {
        start_ns: spans.first().map_or(0, |s| s.start_ns),
        ..Run::default()
    };
    // The seed a root span carries (`worldline otel` puts it on the run's
    // `invoke_agent` span): a case from the trace of a worldline run had
    // seed 0.
    run.seed = (spans.iter())
        .filter(|s| s.parent_id.is_empty())
        .find_map(|s| match s.attrs.get("worldline.seed")? {
            Value::String(t) => t.parse().ok(),
            v => v.as_u64(),
        });
    let nesting = model_call_nesting(&spans);
    // Each nest's calls by its outermost span, in the order nests start.
    let mut nests: BTreeMap<usize, Vec<(usize, usize, ModelCall)>> = BTreeMap::new();
    let mut order = Vec::new();
    // The user's turns by span id, and the user's own tool calls with the
    // span each is under (its turn's, for a trace `worldline otel` wrote).
    let mut turns: BTreeMap<&str, usize> = BTreeMap::new();
    let mut user_calls: Vec<(&str, ToolCall)> = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let op = s.text("gen_ai.operation.name").unwrap_or("");
        let oi = s.text("openinference.span.kind").unwrap_or("");
        let call = if oi == "LLM" {
            Some(openinference_llm(s, &mut run))
        } else if is_model_call(s) {
            Some(genai_chat(s, &mut run))
        } else {
            None
        };
        if let Some(mut c) = call {
            c.failed = failure(s, c.output.as_ref());
            let (top, depth) = nesting[i];
            if !nests.contains_key(&top) {
                order.push(top);
            }
            nests.entry(top).or_default().push((depth, i, c));
        } else if oi == "TOOL" {
            run.tool_calls.push(ToolCall {
                name: s.text("tool.name").unwrap_or(&s.name).to_string(),
                id: s.text("tool_call.id").map(String::from),
                arguments: s.attrs.get("input.value").map(parsed),
                result: s.attrs.get("output.value").map(result_of),
            });
        } else if op == "invoke_agent" && s.attrs.contains_key("worldline.user.played_by") {
            let turn = user_turn(s, &mut run);
            turns.insert(&s.span_id, run.user_turns.len());
            run.user_turns.push(turn);
        } else if op == "execute_tool" && s.text("worldline.ran_by") == Some(USER_RAN) {
            user_calls.push((&s.parent_id, tool_call(s)));
        } else if op == "execute_tool"
            || (op.is_empty() && s.attrs.contains_key("gen_ai.tool.name"))
        {
            // A tool span without `gen_ai.operation.name` (which the
            // conventions require) is still read as one by its tool name:
            // its recorded result was dropped without a word.
            run.tool_calls.push(tool_call(s));
        }
    }
    // A user's call under no turn (the run ended as the user answered)
    // is no rule's: there is no line to script after it.
    for (parent, call) in user_calls {
        if let Some(&i) = turns.get(parent) {
            run.user_turns[i].calls.push(call);
        }
    }
    for top in order {
        let kept = (nests.remove(&top).into_iter().flatten())
            .max_by_key(|(depth, i, c)| (!c.input.is_empty() || c.output.is_some(), *depth, *i));
        run.model_calls.extend(kept.map(|(_, _, c)| c));
    }
    run.forms.dedup();
    if run.tool_calls.is_empty() {
        run.tool_calls = calls_from_messages(&run.model_calls);
    } else {
        in_asked_order(&mut run);
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
            parent_id: String::new(),
            name: "x".into(),
            start_ns: 1,
            failed: false,
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
                "llm.output_messages.0.message.tool_calls.0.tool_call.id",
                json!("c1"),
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
                id: Some("c1".into()),
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

    /// A chat span asking for `lookup` of x (id a) then y (id b).
    fn asking_two(start_ns: u64) -> Span {
        let mut s = span(&[
            ("gen_ai.operation.name", json!("chat")),
            (
                "gen_ai.input.messages",
                json!(r#"[{"role":"user","content":"hi"}]"#),
            ),
            (
                "gen_ai.output.messages",
                json!(
                    r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"a","name":"lookup","arguments":{"k":"x"}},{"type":"tool_call","id":"b","name":"lookup","arguments":{"k":"y"}}]}]"#
                ),
            ),
        ]);
        s.start_ns = start_ns;
        s
    }

    /// An `execute_tool` span of `lookup` for call `id` with `{k}`, and
    /// its result `{v}` when given.
    fn lookup_span(id: &str, k: &str, v: Option<&str>, start_ns: u64) -> Span {
        let mut t = span(&[
            ("gen_ai.operation.name", json!("execute_tool")),
            ("gen_ai.tool.name", json!("lookup")),
            ("gen_ai.tool.call.id", json!(id)),
            (
                "gen_ai.tool.call.arguments",
                json!({ "k": k }).to_string().into(),
            ),
        ]);
        if let Some(v) = v {
            let result = json!({ "v": v }).to_string();
            t.attrs
                .insert("gen_ai.tool.call.result".into(), result.into());
        }
        t.start_ns = start_ns;
        t
    }

    /// Calls run at once, their spans in another order than the model
    /// asked: each result stays with its call (they were swapped).
    #[test]
    fn tool_spans_run_out_of_order_keep_their_results_with_their_calls() {
        let tool =
            |id: &str, k: &str, v: &str, start_ns: u64| lookup_span(id, k, Some(v), start_ns);
        let r = run_of(&[
            asking_two(1),
            tool("b", "y", "Y", 2),
            tool("a", "x", "X", 3),
        ]);
        let got: Vec<(Option<Value>, Option<Value>)> = (r.tool_calls.iter())
            .map(|t| (t.arguments.clone(), t.result.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (Some(json!({"k": "x"})), Some(json!({"v": "X"}))),
                (Some(json!({"k": "y"})), Some(json!({"v": "Y"}))),
            ]
        );
    }

    /// Ids a provider reuses from answer to answer (`call_0` each time)
    /// place nothing: the spans stay in the order they started.
    #[test]
    fn reused_call_ids_leave_the_spans_as_they_started() {
        let chat = |calls: &[(&str, &str)], start_ns: u64| {
            let parts: Vec<String> = (calls.iter())
                .map(|(id, k)| format!(r#"{{"type":"tool_call","id":"{id}","name":"lookup","arguments":{{"k":"{k}"}}}}"#))
                .collect();
            let mut s = asking_two(start_ns);
            let out = format!(r#"[{{"role":"assistant","parts":[{}]}}]"#, parts.join(","));
            s.attrs.insert("gen_ai.output.messages".into(), json!(out));
            s
        };
        let tool = |id: &str, k: &str, start_ns: u64| lookup_span(id, k, None, start_ns);
        let r = run_of(&[
            chat(&[("call_0", "x"), ("call_1", "y")], 1),
            tool("call_0", "x", 2),
            tool("call_1", "y", 3),
            chat(&[("call_0", "z")], 4),
            tool("call_0", "z", 5),
        ]);
        let args: Vec<Option<Value>> = r.tool_calls.iter().map(|t| t.arguments.clone()).collect();
        assert_eq!(
            args,
            [
                Some(json!({"k": "x"})),
                Some(json!({"k": "y"})),
                Some(json!({"k": "z"}))
            ]
        );
    }

    /// Without tool spans, results sent back in another order (or one
    /// missing) are paired by the call ids the tool messages name.
    #[test]
    fn tool_messages_are_paired_by_their_call_ids() {
        let mut next = span(&[
            ("gen_ai.operation.name", json!("chat")),
            (
                "gen_ai.input.messages",
                json!(
                    r#"[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"lookup","arguments":"{}"}},{"id":"b","function":{"name":"lookup","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":"{\"v\":\"Y\"}"}]"#
                ),
            ),
            (
                "gen_ai.output.messages",
                json!(r#"[{"role":"assistant","content":"done"}]"#),
            ),
        ]);
        next.start_ns = 2;
        let r = run_of(&[asking_two(1), next]);
        let results: Vec<Option<Value>> = r.tool_calls.iter().map(|t| t.result.clone()).collect();
        assert_eq!(results, [None, Some(json!({"v": "Y"}))]);
    }

    /// A tool message event whose content is JSON keeps it (it was dropped).
    #[test]
    fn a_tool_message_event_holding_json_keeps_it() {
        let mut s = asking_two(1);
        s.attrs.remove("gen_ai.input.messages");
        let mut next = span(&[("gen_ai.operation.name", json!("chat"))]);
        next.start_ns = 2;
        let event = |name: &str, attrs: &[(&str, Value)]| super::super::otlp::SpanEvent {
            name: name.into(),
            attrs: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        };
        next.events = vec![
            event("gen_ai.user.message", &[("content", json!("hi"))]),
            event(
                "gen_ai.tool.message",
                &[("content", json!({"v": "X"})), ("id", json!("a"))],
            ),
            event(
                "gen_ai.tool.message",
                &[("content", json!([1, 2])), ("id", json!("b"))],
            ),
            event(
                "gen_ai.choice",
                &[("message", json!(r#"{"content":"done"}"#))],
            ),
        ];
        let r = run_of(&[s, next]);
        let results: Vec<Option<Value>> = r.tool_calls.iter().map(|t| t.result.clone()).collect();
        assert_eq!(results, [Some(json!({"v": "X"})), Some(json!([1, 2]))]);
    }

    /// A model call that failed without an answer is kept as its failure
    /// (it was dropped: the case made one call fewer, and no failure).
    #[test]
    fn a_failed_model_call_is_kept_as_its_error() {
        let mut failed = span(&[
            ("gen_ai.operation.name", json!("chat")),
            (
                "gen_ai.input.messages",
                json!(r#"[{"role":"user","content":"hi"}]"#),
            ),
            ("error.type", json!("429")),
        ]);
        failed.failed = true;
        let mut timed_out = failed.clone();
        timed_out
            .attrs
            .insert("error.type".into(), json!("APITimeoutError"));
        timed_out.start_ns = 2;
        let r = run_of(&[failed, timed_out]);
        let got: Vec<_> = r.model_calls.iter().map(|c| c.failed).collect();
        assert_eq!(
            got,
            [Some(("unavailable", Some(429))), Some(("timeout", None))]
        );
        assert_eq!(r.without_content(), 0);
    }

    /// OpenInference's `message.contents` parts are a message's text, and
    /// every output message is part of the one answer (the Responses API
    /// gives each call its own).
    #[test]
    fn openinference_contents_and_every_output_message_are_read() {
        let s = span(&[
            ("openinference.span.kind", json!("LLM")),
            ("llm.input_messages.0.message.role", json!("user")),
            (
                "llm.input_messages.0.message.contents.0.message_content.type",
                json!("text"),
            ),
            (
                "llm.input_messages.0.message.contents.0.message_content.text",
                json!("hi"),
            ),
            (
                "llm.output_messages.0.message.contents.0.message_content.text",
                json!("looking"),
            ),
            (
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
                json!("a"),
            ),
            (
                "llm.output_messages.1.message.tool_calls.0.tool_call.function.name",
                json!("b"),
            ),
        ]);
        let r = run_of(&[s]);
        let c = &r.model_calls[0];
        assert_eq!(c.input, [json!({"role": "user", "content": "hi"})]);
        let a = c.output.as_ref().unwrap();
        assert_eq!(a.content.as_deref(), Some("looking"));
        let names: Vec<&str> = a.tool_calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    /// A request for `n` > 1 choices is answered one choice an output
    /// message: the answer is the first choice, not every choice merged
    /// (their texts joined, their calls one after another).
    #[test]
    fn openinference_choices_of_one_request_are_not_merged() {
        let call = |n: u64| {
            let s = span(&[
                ("openinference.span.kind", json!("LLM")),
                (
                    "llm.invocation_parameters",
                    json!(format!("{{\"n\": {n}}}")),
                ),
                ("llm.input_messages.0.message.content", json!("hi")),
                ("llm.output_messages.0.message.content", json!("Yes.")),
                (
                    "llm.output_messages.1.message.tool_calls.0.tool_call.function.name",
                    json!("b"),
                ),
                ("llm.output_messages.1.message.content", json!("No.")),
            ]);
            run_of(&[s]).model_calls.remove(0)
        };
        let two = call(2);
        assert_eq!(two.choices, 2);
        let a = two.output.unwrap();
        assert_eq!(
            (a.content.as_deref(), a.tool_calls.len()),
            (Some("Yes."), 0)
        );
        // One choice: every output message is part of the answer.
        let one = call(1);
        assert_eq!(one.choices, 1);
        let a = one.output.unwrap();
        assert_eq!(
            (a.content.as_deref(), a.tool_calls.len()),
            (Some("Yes.\nNo."), 1)
        );
    }

    /// A model call's span inside another's is one call: the inner one,
    /// which carries the messages, is kept.
    #[test]
    fn a_model_call_span_inside_another_is_one_call() {
        let mut outer = span(&[("openinference.span.kind", json!("LLM"))]);
        outer.span_id = "outer".into();
        let mut inner = span(&[
            ("openinference.span.kind", json!("LLM")),
            ("llm.input_messages.0.message.content", json!("hi")),
            ("llm.output_messages.0.message.content", json!("done")),
        ]);
        inner.span_id = "inner".into();
        inner.parent_id = "outer".into();
        inner.start_ns = 2;
        let r = run_of(&[inner, outer]);
        assert_eq!(r.model_calls.len(), 1);
        let answer = r.model_calls[0].output.as_ref().unwrap();
        assert_eq!(answer.content.as_deref(), Some("done"));
    }

    /// Message attributes that do not parse (cut off at a length limit)
    /// are damage naming the span and the attribute, in the input as in
    /// the output (a cut `gen_ai.input.messages` was an empty task, exit
    /// 0); an OpenInference message field that holds no text is too. A
    /// `null` (a failed call, as `otel` wrote it) is no messages.
    #[test]
    fn message_attributes_that_do_not_parse_are_named_damage() {
        let cut = json!(r#"[{"role":"user","parts":[{"type":"text","content":"{\"city\": \"Par"#);
        let answer = json!(r#"[{"role":"assistant","content":"ok"}]"#);
        let ask = json!(r#"[{"role":"user","content":"hi"}]"#);
        let mut s = span(&[
            ("gen_ai.operation.name", json!("chat")),
            ("gen_ai.input.messages", cut.clone()),
            ("gen_ai.output.messages", answer.clone()),
        ]);
        s.name = "chat gpt-4.1".into();
        s.span_id = "2222222222222221".into();
        let damaged = run_of(&[s]).damaged.unwrap();
        assert!(
            damaged.starts_with("span `chat gpt-4.1` (id 2222222222222221): its `gen_ai.input.messages` is not JSON (EOF while parsing a string")
                && damaged.contains("cut off"),
            "{damaged}"
        );
        let out = span(&[
            ("gen_ai.operation.name", json!("chat")),
            ("gen_ai.input.messages", ask.clone()),
            ("gen_ai.output.messages", json!(r#"{"role":"assistant"}"#)),
        ]);
        let damaged = run_of(&[out]).damaged.unwrap();
        assert!(
            damaged.contains(
                "its `gen_ai.output.messages` holds an object where a JSON list of messages belongs"
            ),
            "{damaged}"
        );
        let mut failed = span(&[
            ("gen_ai.operation.name", json!("chat")),
            ("gen_ai.input.messages", ask),
            ("gen_ai.output.messages", json!("null")),
        ]);
        failed.failed = true;
        let r = run_of(&[failed]);
        assert_eq!(r.damaged, None);
        assert_eq!(r.model_calls[0].failed, Some(("unavailable", None)));
        let oi = span(&[
            ("openinference.span.kind", json!("LLM")),
            ("llm.input_messages.0.message.role", json!("user")),
            (
                "llm.input_messages.0.message.content",
                json!({"city": "Paris"}),
            ),
            ("llm.output_messages.0.message.content", json!("ok")),
        ]);
        let damaged = run_of(&[oi]).damaged.unwrap();
        assert!(
            damaged.contains(
                "its `llm.input_messages.0.message.content` holds an object where text belongs"
            ),
            "{damaged}"
        );
        assert_eq!(
            run_of(&[span(&[
                ("gen_ai.operation.name", json!("chat")),
                (
                    "gen_ai.input.messages",
                    json!(r#"[{"role":"user","content":"hi"}]"#)
                ),
                ("gen_ai.output.messages", answer)
            ])])
            .damaged,
            None
        );
    }

    /// The seed a root span carries (`worldline otel` writes it on the
    /// run's span) is the run's.
    #[test]
    fn the_seed_comes_from_the_root_span() {
        let chat = span(&[
            ("gen_ai.operation.name", json!("chat")),
            (
                "gen_ai.input.messages",
                json!(r#"[{"role":"user","content":"hi"}]"#),
            ),
            (
                "gen_ai.output.messages",
                json!(r#"[{"role":"assistant","content":"ok"}]"#),
            ),
        ]);
        assert_eq!(run_of(std::slice::from_ref(&chat)).seed, None);
        let mut root = span(&[("worldline.seed", json!("18446744073709551615"))]);
        root.span_id = "root".into();
        let mut child = chat;
        child.parent_id = "root".into();
        assert_eq!(run_of(&[root, child]).seed, Some(u64::MAX));
    }

    /// A result in its transport's text wrapper is its text, read as JSON.
    #[test]
    fn a_result_in_a_text_part_is_taken_out_of_it() {
        let error = r#"{"error":{"kind":"not-found"}}"#;
        for wrapped in [
            json!({"type": "text", "text": error}).to_string(),
            json!([{"type": "input_text", "text": error}]).to_string(),
        ] {
            assert_eq!(
                result_of(&json!(wrapped)),
                json!({"error": {"kind": "not-found"}})
            );
        }
        let plain = json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]);
        assert_eq!(result_of(&plain), json!("ab"));
        // Anything more than the wrapper is the tool's own answer.
        let own = json!({"type": "text", "text": "a", "id": 1});
        assert_eq!(result_of(&own), own);
    }

    /// A user's own tool call (`worldline.ran_by` `user`) is its turn's,
    /// by the span it is under, not one of the agent's calls.
    #[test]
    fn a_users_tool_call_is_its_turns_not_the_agents() {
        let at = |mut s: Span, id: &str, parent: &str, start_ns: u64| {
            s.span_id = id.into();
            s.parent_id = parent.into();
            s.start_ns = start_ns;
            s
        };
        let tool = |name: &str, user: bool| {
            let mut attrs = vec![
                ("gen_ai.operation.name", json!("execute_tool")),
                ("gen_ai.tool.name", json!(name)),
                ("gen_ai.tool.call.arguments", json!(r#"{"id":"phone"}"#)),
                ("gen_ai.tool.call.result", json!(r#"{"ok":true}"#)),
            ];
            if user {
                attrs.push(("worldline.ran_by", json!("user")));
            }
            span(&attrs)
        };
        let turn = span(&[
            ("gen_ai.operation.name", json!("invoke_agent")),
            ("worldline.user.played_by", json!("script")),
            ("worldline.user.turn", json!(1)),
        ]);
        let run = run_of(&[
            at(
                span(&[("gen_ai.operation.name", json!("invoke_agent"))]),
                "r",
                "",
                1,
            ),
            at(tool("get_line", false), "a", "r", 2),
            at(turn, "u", "r", 3),
            at(tool("toggle", true), "b", "u", 3),
            at(tool("check", true), "c", "u", 4),
            // Under no turn: no rule's.
            at(tool("late", true), "d", "r", 9),
        ]);
        let names = |calls: &[ToolCall]| calls.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&run.tool_calls), ["get_line"]);
        assert_eq!(names(&run.user_turns[0].calls), ["toggle", "check"]);
        assert_eq!(
            run.user_turns[0].calls[0].arguments,
            Some(json!({"id": "phone"}))
        );
    }
}
