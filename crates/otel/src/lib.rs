//! OpenTelemetry export of recorded runs (`worldline otel`), following the
//! GenAI semantic conventions: one `invoke_agent` span per run, a child
//! `execute_tool` span per tool call, a `chat` span per model call and an
//! `invoke_agent user` span per turn of a simulated user ([`user`]), with
//! an `execute_tool` span under it per call the user made of its own
//! tools before answering (`worldline.ran_by` `user`), span
//! events for injected and fuzz faults, and `worldline.*` attributes (run
//! id, seq, effect, event and chain hashes, grade).
//!
//! Times are virtual: a run starts at its case's clock and each event ends
//! at its recorded virtual time (real latency, recorded for live model
//! calls only, is an attribute). Trace and span ids are derived from the
//! run's chain hash, so exporting a run twice sends the same spans (and a
//! redacted copy, whose header names its run, its chain hash and its case's
//! clock, is exported as that run: the same trace whoever reads it). Tool
//! arguments and results are opt-in (`--content`), and pass through the
//! view's redactor. The wire format is `opentelemetry-proto`'s messages;
//! [`send`] posts them as OTLP/HTTP protobuf or writes them to a file.

#![deny(unreachable_pub)]

pub mod send;
mod user;

pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span, Status, span, status,
};
use serde_json::Value;
use worldline_case::canon;
use worldline_log::log::call::{Answer, Call, CallError, ModelAnswer, ModelRequest, ToolRequest};
use worldline_log::log::clock::RunClock;
use worldline_log::log::delivery;
use worldline_log::log::event::By;
use worldline_log::log::{Event, HeldBundle, Kind, asked};
use worldline_log::redact::Redactor;

/// One run to export, its events held compact (decision 0380).
pub struct RunView {
    /// The run's id (of a redacted copy, the id of the run it is a copy of).
    pub run_id: String,
    pub bundle: HeldBundle,
    /// Unix nanoseconds virtual time 0 stands for (the case clock).
    pub start_ns: u64,
}

/// What goes into the spans beyond the defaults.
#[derive(Default)]
pub struct Options {
    /// Tool arguments and results, model messages (`gen_ai.tool.call.*`).
    pub content: bool,
}

fn text(key: &str, v: impl Into<String>) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
        ..KeyValue::default()
    }
}

fn texts<S: Into<String>>(key: &str, vs: impl IntoIterator<Item = S>) -> KeyValue {
    let values = (vs.into_iter())
        .map(|v| AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        })
        .collect();
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::ArrayValue(ArrayValue { values })),
        }),
        ..KeyValue::default()
    }
}

fn flag(key: &str, v: bool) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::BoolValue(v)),
        }),
        ..KeyValue::default()
    }
}

fn int(key: &str, v: i64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(v)),
        }),
        ..KeyValue::default()
    }
}

/// The first `n` bytes of SHA-256 of the parts (ids: 16 for a trace, 8
/// for a span).
fn id(n: usize, parts: &[&str]) -> Vec<u8> {
    let digest = canon::sha256_hex(parts.join("\0"));
    hex::decode(&digest[..2 * n]).expect("hex digest")
}

/// The hash a run's ids derive from: its chain hash, or the last event's
/// for a run without a footer; for a redacted copy, the chain hash of the
/// run it is a copy of (a viewer's export of a run is the same trace as a
/// responder's).
fn chain_of(b: &HeldBundle) -> String {
    if let Some(r) = &b.header.redacted {
        return r.original_chain_hash.clone();
    }
    b.footer.as_ref().map_or_else(
        || (b.events.as_held().last()).map_or_else(String::new, |e| e.hash.clone()),
        |f| f.chain_hash.clone(),
    )
}

/// The trace and root span ids of run `run_id`: the same each time it is
/// exported, and a trace of its own (runs whose events are the same, or
/// that made none, shared one, and a backend merged them).
pub fn ids_of(run_id: &str, b: &HeldBundle) -> (Vec<u8>, Vec<u8>) {
    let chain = chain_of(b);
    (
        id(16, &["trace", &chain, run_id]),
        id(8, &["span", &chain, "run"]),
    )
}

/// The spans of one run, each handed to `emit` as it is made, until
/// `emit` says to stop (`false`): each event as a span reads it
/// (`Held::shown`), or put back whole one at a time when the spans carry
/// the messages or a redactor reads the events whole. Nothing holds the
/// run's spans (a long run's with `--content` are gigabytes).
fn each_span(
    run: &mut RunView,
    mut redactor: Option<&mut Redactor>,
    opts: &Options,
    emit: &mut dyn FnMut(Span) -> bool,
) {
    let b = &mut run.bundle;
    let chain = chain_of(b);
    let (trace_id, root_id) = ids_of(&run.run_id, b);
    // The case's name as the view's policy shows it (a name may hold
    // what the policy hides, as `history` shows it).
    let case = match redactor.as_deref_mut() {
        Some(r) => r.text(&b.header.case),
        None => b.header.case.clone(),
    };
    let start_ns = run.start_ns;
    let at = |vtime: u64| start_ns.saturating_add(vtime);
    // The answers the agent went on without, and when it did: their spans
    // end then, not when they were ready, and the run's with the last
    // answer the agent took or step it made, which (from rules 5) need
    // not be the last event's.
    let gone = delivery::undelivered(b.events.as_held(), b.header.rules.unwrap_or(0));
    let end = (b.events.as_held().iter())
        .map(|e| gone.get(&e.seq).copied().unwrap_or(e.vtime_ns))
        .max()
        .unwrap_or(0);
    let footer = b.footer.as_ref();
    let status = footer.map_or("incomplete", |f| f.status.as_str());
    let grade = footer.and_then(|f| f.verdict());
    // Failed as `runs`, `run` and `test` say it: a run with a failure
    // signature (a fault, a failed grade, a limit or an error the case did
    // not expect), or none to read (killed before its footer). A limit
    // without `[expect]` was OK, its reason the description.
    let signature = footer.and_then(worldline_log::log::signature::of_footer);
    let failed = footer.is_none() || signature.is_some();
    let mut attrs = vec![
        text("gen_ai.operation.name", "invoke_agent"),
        text("gen_ai.agent.name", case.clone()),
        text("gen_ai.agent.id", b.header.agent_sha256.clone()),
        text("gen_ai.conversation.id", run.run_id.clone()),
        text("worldline.run_id", run.run_id.clone()),
        text("worldline.case", case.clone()),
        text("worldline.world", b.header.world.clone()),
        text("worldline.seed", b.header.seed.to_string()),
        text("worldline.status", status),
        text("worldline.chain_hash", chain.clone()),
        int("worldline.events", b.events.len() as i64),
    ];
    if let Some(g) = grade {
        attrs.push(text("worldline.grade", g));
    }
    // The judged checks' calls, which are no event of the run: counted on
    // the run's span, apart from the agent's model calls.
    let judges =
        worldline_log::log::usage::ModelTotals::of_judges_in(footer.and_then(|f| f.grade.as_ref()));
    if judges.calls > 0 {
        attrs.push(int("worldline.judge.calls", judges.calls as i64));
        attrs.push(int(
            "worldline.judge.input_tokens",
            judges.prompt_tokens as i64,
        ));
        attrs.push(int(
            "worldline.judge.output_tokens",
            judges.completion_tokens as i64,
        ));
    }
    if let Some(p) = &b.header.parent {
        attrs.push(text("worldline.parent", format!("{}@{}", p.run, p.event)));
    }
    if b.header.redacted.is_some() {
        attrs.push(text("worldline.redacted_copy", "true"));
    }
    let root = Span {
        trace_id: trace_id.clone(),
        span_id: root_id.clone(),
        name: format!("invoke_agent {case}"),
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: at(0),
        end_time_unix_nano: at(end),
        attributes: attrs,
        status: Some(Status {
            code: (if failed {
                status::StatusCode::Error
            } else {
                status::StatusCode::Ok
            }) as i32,
            message: signature
                .map(|s| match redactor.as_deref_mut() {
                    Some(r) => r.text(&s),
                    None => s,
                })
                .unwrap_or_default(),
        }),
        ..Span::default()
    };
    if !emit(root) {
        return;
    }
    let mut clock = RunClock::new(b.header.rules.unwrap_or(0));
    let whole = opts.content || redactor.is_some();
    // The latest model answer's tool calls not yet made: a tool span
    // carries the id of the call it answers.
    let mut asked: Vec<asked::Asked> = Vec::new();
    // When the latest model answer was ready: the calls it asked for that
    // the agent runs itself begin then.
    let mut answered_at = 0;
    // The simulated user's calls of its own tools since its last turn,
    // and when the first began: their spans go under the turn they were
    // made for, which began with them (a user's tool calls were left out).
    let mut user_calls: Vec<Span> = Vec::new();
    for seq in 0..b.events.len() as u64 {
        let e = match whole {
            true => b.events.event(seq),
            false => b.events.shown(seq),
        };
        let Some(e) = e else { break };
        let mut e = e.into_owned();
        if let Some(r) = redactor.as_deref_mut() {
            r.event(&mut e);
        }
        let call = e.typed();
        let kind = Kind::of(&e.call);
        let mut start = clock.began(e.vtime_ns, &call);
        if let (Some(Kind::UserSay), Some(first)) = (kind, user_calls.first()) {
            start = start.min(first.start_time_unix_nano.saturating_sub(start_ns));
        }
        let call_id = match call {
            Call::ModelComplete { request, response } => {
                for (a, message) in asked::answered_in(&mut asked, request.messages()) {
                    let result = match &message["content"] {
                        Value::String(t) => t.clone(),
                        other => canon::to_string(other),
                    };
                    let mut attrs = vec![
                        text("gen_ai.operation.name", "execute_tool"),
                        text("gen_ai.tool.name", a.name.clone()),
                        text("gen_ai.tool.type", "function"),
                        text("gen_ai.tool.call.id", a.id.clone()),
                        text("worldline.ran_by", "agent"),
                        text("worldline.run_id", run.run_id.clone()),
                        int("worldline.seq", e.seq as i64),
                    ];
                    if opts.content {
                        attrs.push(text(
                            "gen_ai.tool.call.arguments",
                            canon::to_string(&a.args),
                        ));
                        attrs.push(text("gen_ai.tool.call.result", result));
                    }
                    let tool = Span {
                        trace_id: trace_id.clone(),
                        span_id: id(8, &["span", &chain, &e.seq.to_string(), &a.id]),
                        parent_span_id: root_id.clone(),
                        name: format!("execute_tool {}", a.name),
                        kind: span::SpanKind::Internal as i32,
                        start_time_unix_nano: at(answered_at),
                        end_time_unix_nano: at(start.max(answered_at)),
                        attributes: attrs,
                        ..Span::default()
                    };
                    if !emit(tool) {
                        return;
                    }
                }
                // An answer the agent went on without asked it for nothing.
                if !gone.contains_key(&e.seq) {
                    asked = response.message().map(asked::asked).unwrap_or_default();
                    answered_at = e.vtime_ns;
                }
                None
            }
            Call::ToolsCall { request, .. } => {
                asked::take(&mut asked, &request.name, request.args()).map(|a| a.id)
            }
            _ => None,
        };
        let Some(Described {
            name,
            mut attrs,
            error,
        }) = describe(&e, opts, call_id)
        else {
            continue;
        };
        attrs.extend([
            text("worldline.run_id", run.run_id.clone()),
            int("worldline.seq", e.seq as i64),
            text("worldline.effect", format!("{:?}", e.effect).to_lowercase()),
            text("worldline.event_hash", e.hash.clone()),
        ]);
        let went_on = gone.get(&e.seq).copied();
        if went_on.is_some() {
            // Ready after the agent had gone on: its span ends where the
            // agent stopped waiting, and says when the answer was ready.
            attrs.extend([
                text("worldline.delivered", "false"),
                int("worldline.ready_ns", e.vtime_ns as i64),
            ]);
        }
        let end = went_on.unwrap_or(e.vtime_ns).max(start);
        let span_id = id(8, &["span", &chain, &e.seq.to_string()]);
        let span = Span {
            trace_id: trace_id.clone(),
            span_id: span_id.clone(),
            parent_span_id: root_id.clone(),
            name,
            kind: span::SpanKind::Client as i32,
            start_time_unix_nano: at(start),
            end_time_unix_nano: at(end),
            attributes: attrs,
            events: fault_events(&e, at(end)),
            status: error.map(|err| Status {
                code: status::StatusCode::Error as i32,
                message: format!("{}: {}", err.kind, err.message().as_str().unwrap_or("")),
            }),
            ..Span::default()
        };
        match kind {
            Some(Kind::UserToolsCall) => user_calls.push(span),
            Some(Kind::UserSay) => {
                let calls = user_calls.drain(..).map(|c| Span {
                    parent_span_id: span_id.clone(),
                    ..c
                });
                if !std::iter::once(span).chain(calls).all(&mut *emit) {
                    return;
                }
            }
            _ => {
                if !emit(span) {
                    return;
                }
            }
        }
    }
    // Calls of a turn the run ended before (killed as the user answered).
    user_calls.into_iter().all(emit);
}

/// A tool or model call's span: its name, GenAI attributes and error.
struct Described {
    name: String,
    attrs: Vec<KeyValue>,
    error: Option<CallError>,
}

/// `None` for other host calls (clocks, randomness, streams), which stay
/// in the log. `call_id`: the id of the model's call a tool call answers.
/// A user's turn is a span too (a model-played user's turns were left
/// out, so `case from-trace` could not read such a run).
fn describe(e: &Event, opts: &Options, call_id: Option<String>) -> Option<Described> {
    let ((name, attrs), error) = match e.typed() {
        Call::ToolsCall { request, response } => (
            tool_span(e.seq, call_id, &request, &response, &e.response, opts),
            response.error,
        ),
        Call::ModelComplete { request, response } => {
            (model_span(&request, &response, opts), response.error)
        }
        // A call the simulated user made of one of its own tools
        // (`[[user_tools]]`), as the agent's are, said to be the user's.
        Call::UserToolsCall { request, response } => {
            let (name, mut attrs) = tool_span(e.seq, None, &request, &response, &e.response, opts);
            attrs.push(text("worldline.ran_by", user::AGENT));
            ((name, attrs), response.error)
        }
        // An approval, the agent's or the host's before an `ask` tool.
        Call::ApprovalRequest { request, response } => {
            (approval_span(&request, &response, opts), None)
        }
        Call::UserSay { request, response } => {
            let mark = e.mark();
            let by = mark.as_ref().map(|m| &m.by);
            (user::span(&request, &response, by, opts), None)
        }
        _ => return None,
    };
    Some(Described { name, attrs, error })
}

/// An approval's span, `approval <kind>`: who asked (`agent`, or `host`
/// before a tool whose permission is `ask`), the decision and a denial's
/// reason, the `[[approve]]` rule that decided; with `--content` the
/// details asked about. A denial is a decision, not an error: no status.
fn approval_span(
    request: &worldline_log::log::payload::ApprovalAsk,
    response: &worldline_log::log::payload::Decision,
    opts: &Options,
) -> (String, Vec<KeyValue>) {
    let said = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => canon::to_string(other),
    };
    let kind = said(&request.kind);
    let mut attrs = vec![
        text("worldline.approval.kind", kind.clone()),
        text(
            "worldline.approval.asked_by",
            if request.by.is_some() {
                "host"
            } else {
                "agent"
            },
        ),
        text(
            "worldline.approval.decision",
            if response.denied.is_some() {
                "denied"
            } else {
                "approved"
            },
        ),
    ];
    if let Some(reason) = &response.denied {
        attrs.push(text("worldline.approval.reason", said(reason)));
    }
    if let Some(approver) = response.detail.get("approver") {
        attrs.push(text(
            "worldline.approval.approver",
            canon::to_string(approver),
        ));
    }
    if opts.content {
        attrs.push(text(
            "worldline.approval.details",
            canon::to_string(&request.details),
        ));
    }
    (format!("approval {kind}"), attrs)
}

fn tool_span(
    seq: u64,
    call_id: Option<String>,
    request: &ToolRequest,
    answer: &Answer,
    response: &Value,
    opts: &Options,
) -> (String, Vec<KeyValue>) {
    let tool = request.name.clone();
    let mut attrs = vec![
        text("gen_ai.operation.name", "execute_tool"),
        text("gen_ai.tool.name", tool.clone()),
        text("gen_ai.tool.type", "function"),
        // The model's id for the call (the one its chat span's output
        // names), else worldline's: a call no model asked for.
        text(
            "gen_ai.tool.call.id",
            call_id.unwrap_or_else(|| format!("call-{seq}")),
        ),
    ];
    if let Some(err) = &answer.error {
        attrs.push(text("error.type", err.kind.clone()));
    }
    if opts.content {
        attrs.push(text(
            "gen_ai.tool.call.arguments",
            canon::to_string(request.args()),
        ));
        let result = answer.ok.as_ref().unwrap_or(response);
        attrs.push(text("gen_ai.tool.call.result", canon::to_string(result)));
    }
    (format!("execute_tool {tool}"), attrs)
}

fn model_span(
    request: &ModelRequest,
    answer: &ModelAnswer,
    opts: &Options,
) -> (String, Vec<KeyValue>) {
    // The model the provider was asked for: the body it was sent names
    // it (the case's `[model] model` over the agent's), else the agent's;
    // from rules 11 the body is recorded as what it changed (decision 0430).
    let sent = (answer.model_call.as_ref()).and_then(|c| {
        let body = (c.detail.get("rendered")).or(c.detail.get("rendered_changes")?.get("set"));
        body?.get("model")?.as_str()
    });
    let requested = sent.or(request.model()).unwrap_or("").to_string();
    let mut attrs = vec![
        text("gen_ai.operation.name", "chat"),
        text("gen_ai.provider.name", request.provider.clone()),
    ];
    // No model asked for (a scripted one): no attribute, not an empty one.
    if !requested.is_empty() {
        attrs.push(text("gen_ai.request.model", requested.clone()));
    }
    if let Some(m) = answer.model() {
        attrs.push(text("gen_ai.response.model", m));
    }
    let usage = answer.usage().unwrap_or(&Value::Null);
    for (key, field) in [
        ("gen_ai.usage.input_tokens", "prompt_tokens"),
        ("gen_ai.usage.output_tokens", "completion_tokens"),
    ] {
        if let Some(n) = usage[field].as_i64() {
            attrs.push(int(key, n));
        }
    }
    // A list, as the GenAI conventions type it: one reason a choice, each
    // choice's (of `n` > 1 choices only the first's was said).
    let choices = answer.choices().and_then(Value::as_array);
    let reasons: Vec<&str> = (choices.into_iter().flatten())
        .filter_map(|c| c["finish_reason"].as_str())
        .collect();
    if !reasons.is_empty() {
        attrs.push(texts("gen_ai.response.finish_reasons", reasons));
    }
    // How many choices were asked for, when not one (the conventions'
    // `gen_ai.request.choice.count`).
    if let Some(n) = request
        .request
        .get("n")
        .and_then(Value::as_i64)
        .filter(|n| *n != 1)
    {
        attrs.push(int("gen_ai.request.choice.count", n));
    }
    if let Some(call) = &answer.model_call {
        for (key, ms) in [
            ("worldline.real_latency_ms", &call.real_latency_ms),
            ("worldline.virtual_latency_ms", &call.virtual_latency_ms),
        ] {
            if let Some(ms) = ms.as_ref().and_then(Value::as_i64) {
                attrs.push(int(key, ms));
            }
        }
    }
    if let Some(err) = &answer.error {
        attrs.push(text("error.type", err.kind.clone()));
    }
    // A call that failed has no choices: no attribute (it was the text
    // `null`, which a reader takes for messages that do not parse).
    if opts.content {
        if let Some(messages) = request.request.get("messages").filter(|m| !m.is_null()) {
            attrs.push(text("gen_ai.input.messages", canon::to_string(messages)));
        }
        if let Some(choices) = answer.choices().filter(|c| !c.is_null()) {
            attrs.push(text("gen_ai.output.messages", canon::to_string(choices)));
        }
    }
    let name = if requested.is_empty() {
        "chat".to_string()
    } else {
        format!("chat {requested}")
    };
    (name, attrs)
}

/// A span event for a fault a case rule (`inject`) or a fuzz profile
/// (`fuzz`) put into the answer.
fn fault_events(e: &Event, at: u64) -> Vec<span::Event> {
    let Some(mark) = e.mark() else {
        return Vec::new();
    };
    // A fork's `--respond` is the user's edit, not a fault a rule or fuzz
    // planned: named as such (it was exported as an `inject`).
    let source = match mark.by {
        By::Fuzz(_) => "fuzz",
        By::Fork => "fork",
        By::Rule(_) | By::Other => "inject",
    };
    let mut attrs = vec![text("worldline.fault.source", source)];
    if let Some(action) = mark.action {
        let action = match action {
            Value::String(s) => s.clone(),
            other => canon::to_string(other),
        };
        attrs.push(text("worldline.fault.action", action));
    }
    attrs.push(text("worldline.fault", canon::to_string(mark.raw)));
    vec![span::Event {
        time_unix_nano: at,
        name: format!("worldline.fault.{source}"),
        attributes: attrs,
        ..span::Event::default()
    }]
}

/// The most spans one request carries: the OpenTelemetry SDK
/// BatchSpanProcessor's default batch (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
pub const BATCH_SPANS: usize = 512;

/// The most bytes one request's protobuf body holds: 4 MiB, the message
/// size gRPC receivers take by default and well under the Collector's
/// OTLP/HTTP limit (20 MiB). A span larger than this on its own (a long
/// conversation's messages with `--content`) is a request of its own.
pub const BATCH_BYTES: usize = 4 << 20;

/// What [`export`] sent: how many requests and spans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    pub requests: usize,
    pub spans: usize,
}

/// Export the spans of `runs`, in order, as OTLP requests handed to
/// `send` one at a time as each is full, batched as the OpenTelemetry
/// SDK's BatchSpanProcessor exports: at most [`BATCH_SPANS`] spans and
/// [`BATCH_BYTES`] bytes each (one request when there are no spans). A
/// long run was one request (past 64 MiB for a long run with
/// `--content`), which collectors and `case from-trace` refused; a
/// backend joins a run's spans by its trace id whichever request brought
/// them. Memory is one request's spans, not the runs' (every span of
/// every run was held, then every request: 9 GB for a 2,000-call run with
/// `--content`). The first error of `send` stops the export and is
/// returned.
pub fn export<E>(
    runs: &mut [RunView],
    mut redactor: Option<&mut Redactor>,
    opts: &Options,
    send: impl FnMut(ExportTraceServiceRequest) -> Result<(), E>,
) -> Result<Sent, E> {
    let mut batcher = Batcher::new(BATCH_SPANS, BATCH_BYTES, send);
    for run in runs {
        each_span(run, redactor.as_deref_mut(), opts, &mut |s| batcher.push(s));
        if batcher.failed.is_some() {
            break;
        }
    }
    batcher.finish()
}

/// Spans gathered into requests of at most `max_spans` spans and
/// `max_bytes` bytes (a span larger than that alone), each handed to
/// `send` when the next span would not fit.
struct Batcher<F, E> {
    max_spans: usize,
    max_bytes: usize,
    /// The bytes of a request without spans.
    envelope: usize,
    batch: Vec<Span>,
    bytes: usize,
    send: F,
    sent: Sent,
    failed: Option<E>,
}

impl<F: FnMut(ExportTraceServiceRequest) -> Result<(), E>, E> Batcher<F, E> {
    fn new(max_spans: usize, max_bytes: usize, send: F) -> Self {
        use prost::Message as _;
        // The resource and scope around the spans, and room for the two
        // lengths around them to grow to their longest (5 bytes each up
        // to 32 GiB, from 1).
        let envelope = request_of(Vec::new()).encoded_len() + 8;
        Batcher {
            max_spans,
            max_bytes,
            envelope,
            batch: Vec::new(),
            bytes: envelope,
            send,
            sent: Sent::default(),
            failed: None,
        }
    }

    /// Add `span`, sending the batch before it when it would not fit;
    /// `false` once a send failed (nothing more is sent).
    fn push(&mut self, span: Span) -> bool {
        // `ScopeSpans.spans` is field 2.
        let n = prost::encoding::message::encoded_len(2, &span);
        let full = self.batch.len() >= self.max_spans || self.bytes + n > self.max_bytes;
        if !self.batch.is_empty() && full && !self.flush() {
            return false;
        }
        self.bytes += n;
        self.batch.push(span);
        self.sent.spans += 1;
        true
    }

    /// Send the batch; `false` when it failed.
    fn flush(&mut self) -> bool {
        let spans = std::mem::take(&mut self.batch);
        self.bytes = self.envelope;
        match (self.send)(request_of(spans)) {
            Ok(()) => {
                self.sent.requests += 1;
                true
            }
            Err(e) => {
                self.failed = Some(e);
                false
            }
        }
    }

    /// Send what is left (a request without spans when none was sent).
    fn finish(mut self) -> Result<Sent, E> {
        if self.failed.is_none() && (!self.batch.is_empty() || self.sent.requests == 0) {
            self.flush();
        }
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.sent),
        }
    }
}

/// One OTLP request of `spans`, under worldline's resource and scope.
fn request_of(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    text("service.name", "worldline"),
                    text("service.version", env!("CARGO_PKG_VERSION")),
                ],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "worldline".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Spans are batched by count and by body size, in order, each
    /// request's body within the bound unless one span alone exceeds it.
    /// Each request is sent as it is full, before the spans after it are
    /// given.
    #[test]
    fn spans_are_batched_by_count_and_size() {
        use prost::Message as _;
        let span = |i: usize, pad: usize| Span {
            trace_id: vec![1; 16],
            span_id: (i as u64).to_be_bytes().to_vec(),
            name: "x".repeat(pad),
            ..Span::default()
        };
        let names = |reqs: &[ExportTraceServiceRequest]| -> Vec<Vec<u64>> {
            reqs.iter()
                .map(|r| {
                    (r.resource_spans.iter().flat_map(|rs| &rs.scope_spans))
                        .flat_map(|ss| &ss.spans)
                        .map(|s| u64::from_be_bytes(s.span_id.clone().try_into().unwrap()))
                        .collect()
                })
                .collect()
        };
        let batches = |spans: Vec<Span>, max_spans, max_bytes| {
            let mut out = Vec::new();
            let mut b = Batcher::new(max_spans, max_bytes, |r| {
                out.push(r);
                Ok::<(), ()>(())
            });
            for s in spans {
                assert!(b.push(s));
            }
            let sent = b.finish().unwrap();
            assert_eq!(sent.requests, out.len());
            out
        };
        // Lazily: the first request is sent when the fourth span comes.
        let mut sent = 0;
        let mut b = Batcher::new(3, 1 << 20, |_| {
            sent += 1;
            Ok::<(), ()>(())
        });
        for i in 0..3 {
            b.push(span(i, 1));
        }
        b.push(span(3, 1));
        drop(b);
        assert_eq!(sent, 1, "the first batch went when it was full");
        let mut failing = Batcher::new(1, 1 << 20, |_| Err("refused"));
        assert!(failing.push(span(0, 1)));
        assert!(!failing.push(span(1, 1)), "a failed send stops the rest");
        assert_eq!(failing.finish(), Err("refused"));
        let by_count = batches((0..7).map(|i| span(i, 1)).collect(), 3, 1 << 20);
        assert_eq!(names(&by_count), [vec![0, 1, 2], vec![3, 4, 5], vec![6]]);
        // 1,000-byte spans under a 2,500-byte bound: two a request; a
        // 5,000-byte span alone.
        let spans = vec![
            span(0, 1000),
            span(1, 1000),
            span(2, 1000),
            span(3, 5000),
            span(4, 1000),
        ];
        let by_size = batches(spans, 512, 2500);
        assert_eq!(names(&by_size), [vec![0, 1], vec![2], vec![3], vec![4]]);
        for r in &by_size {
            let one = r.resource_spans[0].scope_spans[0].spans.len() == 1;
            assert!(r.encoded_len() <= 2500 || one, "{}", r.encoded_len());
        }
        // Concatenated, the bodies are one request holding every span.
        let mut bytes = Vec::new();
        for r in &by_size {
            bytes.extend(r.encode_to_vec());
        }
        let whole = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        assert_eq!(names(&[whole]).concat(), names(&by_size).concat());
        assert_eq!(batches(Vec::new(), 3, 100).len(), 1);
    }

    /// A model call of `n` = 2 choices says both choices' finish reasons
    /// and the count asked for (only the first choice's reason was said).
    #[test]
    fn each_choice_s_finish_reason_is_exported() {
        let request: ModelRequest = serde_json::from_value(json!({
            "provider": "openai",
            "request": {"messages": [{"role": "user", "content": "hi"}], "n": 2}
        }))
        .unwrap();
        let answer: ModelAnswer = serde_json::from_value(json!({"ok": {"choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Yes."}, "finish_reason": "stop"},
            {"index": 1, "message": {"role": "assistant", "content": "No"}, "finish_reason": "length"},
        ]}}))
        .unwrap();
        let (_, attrs) = model_span(&request, &answer, &Options { content: true });
        let get = |k: &str| {
            attrs
                .iter()
                .find(|a| a.key == k)
                .and_then(|a| a.value.clone())
        };
        let reasons = match get("gen_ai.response.finish_reasons").and_then(|v| v.value) {
            Some(any_value::Value::ArrayValue(a)) => a.values,
            other => panic!("{other:?}"),
        };
        let text = |v: &AnyValue| match &v.value {
            Some(any_value::Value::StringValue(s)) => s.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            reasons.iter().map(text).collect::<Vec<_>>(),
            ["stop", "length"]
        );
        assert_eq!(
            get("gen_ai.request.choice.count").and_then(|v| v.value),
            Some(any_value::Value::IntValue(2))
        );
    }

    /// A fork's `--respond` is a `worldline.fault.fork` event (it was
    /// exported as an `inject`), a rule's an `inject`, fuzz's a `fuzz`.
    #[test]
    fn each_mark_is_named_by_who_shaped_the_answer() {
        let event = |mark: Value| Event {
            call: "worldline:agent/tools.call".into(),
            effect: worldline_log::log::Effect::Read,
            fuel: 0,
            hash: String::new(),
            injected: Some(mark),
            request: json!({"name": "x", "args": {}}),
            response: json!({"ok": null}),
            seq: 0,
            vtime_ns: 0,
            writes: Vec::new(),
        };
        for (mark, name) in [
            (json!({"action": "fork-respond"}), "worldline.fault.fork"),
            (
                json!({"rule": 0, "action": "deny"}),
                "worldline.fault.inject",
            ),
            (
                json!({"fuzz": {"tool": "x", "nth": 1, "action": "stale"}, "action": "stale"}),
                "worldline.fault.fuzz",
            ),
        ] {
            let got = fault_events(&event(mark.clone()), 5);
            assert_eq!(got.len(), 1, "{mark}");
            assert_eq!(got[0].name, name, "{mark}");
        }
    }
}
