//! The `worldline:agent` interfaces tools, files and trace, served from
//! the world session and recorded like every other host call (model calls
//! are in `model/`).
//!
//! A tool call is answered in this order: bad JSON or unknown tool, then
//! permissions (a denied call changes nothing), then the case's
//! `[[inject]]` rules, then the tool's operation over the state. The
//! simulated user's calls of their own tools are served here too.

use super::bindings::worldline::agent::{files, tools, trace, types};
use super::service::{Ran, run_tool};
use super::{HostServices, RunState, ServiceReply};
use serde_json::{Value, json};
use std::borrow::Cow;
use types::ToolError;
use worldline_case::canon;
use worldline_case::case::fuzz;
use worldline_case::case::inject::Action;
use worldline_case::error_kind::ErrorKind;
use worldline_case::time;
use worldline_case::world::state::{FileData, Write};
use worldline_case::world::tools::{AsOf, Tool};
use worldline_case::world::{file_path, injection};
use worldline_log::log::call::{self, FileRequest, Note, Spec, ToolRequest, Transport};
use worldline_log::log::{Effect, kind, rules};

/// The one conversion from the host's error kinds to the generated WIT enum.
impl From<ErrorKind> for types::ErrorKind {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Denied => types::ErrorKind::Denied,
            ErrorKind::NotFound => types::ErrorKind::NotFound,
            ErrorKind::InvalidArgs => types::ErrorKind::InvalidArgs,
            ErrorKind::Timeout => types::ErrorKind::Timeout,
            ErrorKind::Unavailable => types::ErrorKind::Unavailable,
            ErrorKind::Conflict => types::ErrorKind::Conflict,
            ErrorKind::Failed => types::ErrorKind::Failed,
        }
    }
}

/// An error answer: `{"error": {"kind": ..., "message": ...}}`.
pub(crate) fn error_answer(kind: ErrorKind, message: impl Into<String>) -> ServiceReply {
    let effect = if kind == ErrorKind::Denied {
        Effect::Denied
    } else {
        Effect::Failed
    };
    ServiceReply::with_effect(
        json!({"error": {"kind": kind, "message": message.into()}}),
        effect,
    )
}

/// Turn a recorded answer (`{"ok": v}` / `{"error": ...}`), given as its
/// error and its `ok`, into the guest's result, with `ok` mapped by `f`.
fn decode<T>(
    error: Option<&call::CallError>,
    ok: Option<&Value>,
    f: impl FnOnce(&Value) -> T,
) -> Result<T, ToolError> {
    match error {
        Some(e) => Err(error_of(e)),
        None => Ok(f(ok.unwrap_or(&Value::Null))),
    }
}

/// A recorded error as the guest's (a message that is not text reaches
/// it as none, as it always has).
pub(super) fn error_of(e: &call::CallError) -> ToolError {
    let message = match e.message() {
        Value::String(m) => m.clone(),
        _ => String::new(),
    };
    ToolError {
        kind: ErrorKind::named(&e.kind).into(),
        message,
    }
}

/// A tool as `tools.specs` records it.
fn spec(t: &Tool) -> Spec {
    Spec {
        name: t.name.clone(),
        description: t.description.clone(),
        params: t.params.clone(),
        mutates: t.mutates,
        detail: Default::default(),
    }
}

/// Record what a service said about its call beside the answer
/// (`"service"`: reads, fuel, or the trap and backtrace).
fn noting(mut answer: ServiceReply, service: Option<Value>) -> ServiceReply {
    if let (Some(detail), Value::Object(response)) = (service, &mut answer.response) {
        response.insert("service".into(), detail);
    }
    answer
}

/// Run the tool as the world defines it.
fn plain(s: &mut HostServices, tool: &Tool, args: &Value, as_of: &AsOf) -> ServiceReply {
    let Ran { result, service } = run_tool(s, tool, args, as_of);
    let answer = match result {
        Ok((out, writes)) => ServiceReply {
            effect: if writes.is_empty() {
                Effect::Read
            } else {
                Effect::Write
            },
            writes,
            ..ServiceReply::read(super::ok(out))
        },
        Err(f) => error_answer(f.kind, f.message),
    };
    noting(answer, service)
}

/// Keep only `fields` of each row write (the rest of the row stays as it
/// was, or absent for a new row); other writes are dropped.
fn partial_writes(s: &HostServices, writes: Vec<Write>, fields: &[String]) -> Vec<Write> {
    writes
        .into_iter()
        .filter_map(|w| match w {
            Write::Put { table, key, row } => {
                let mut base = match s.world.state.row(&table, &key) {
                    Some(Value::Object(before)) => before.clone(),
                    _ => {
                        let key_field = s
                            .world
                            .state
                            .tables
                            .get(&table)
                            .map_or("id", |t| t.key.as_str());
                        let mut m = serde_json::Map::new();
                        m.insert(key_field.to_string(), Value::String(key.clone()));
                        m
                    }
                };
                for f in fields {
                    if let Some(v) = row.get(f) {
                        base.insert(f.clone(), v.clone());
                    }
                }
                Some(Write::Put {
                    table,
                    key,
                    row: Value::Object(base),
                })
            }
            _ => None,
        })
        .collect()
}

/// Where an injected answer comes from: a case rule or a fuzz fault.
struct Source {
    /// The mark's origin: `{"rule": i}` or `{"fuzz": {tool, nth, ...}}`.
    mark: serde_json::Map<String, Value>,
    message: Option<String>,
    latency_ms: Option<u64>,
}

/// Answer through an injected action.
fn injected(
    s: &mut HostServices,
    tool: &Tool,
    args: &Value,
    action: &Action,
    source: Source,
    now: AsOf,
) -> ServiceReply {
    let (mut answer, detail) = match action {
        Action::Delay => (plain(s, tool, args, &now), json!({"action": "latency"})),
        Action::Deny => (
            error_answer(ErrorKind::Denied, ErrorKind::Denied.default_message()),
            json!({"action": "deny"}),
        ),
        Action::Error(kind) => {
            let message = source
                .message
                .unwrap_or_else(|| kind.default_message().into());
            (
                error_answer(*kind, message),
                json!({"action": "error", "kind": kind}),
            )
        }
        Action::Respond(v) => (
            ServiceReply::read(super::ok(v.clone())),
            json!({"action": "response"}),
        ),
        Action::Injection(i) => {
            let mut answer = plain(s, tool, args, &now);
            let landed = fill_vectors(s, &mut answer, Some((i.vector.as_deref(), &i.text)));
            (answer, json!({"action": "injection", "vectors": landed}))
        }
        Action::Empty => {
            let as_of = AsOf { empty: true, ..now };
            let Ran { result, service } = run_tool(s, tool, args, &as_of);
            let answer = match result {
                Ok((out, _)) => ServiceReply::read(super::ok(out)),
                Err(f) => error_answer(f.kind, f.message),
            };
            (noting(answer, service), json!({"action": "empty"}))
        }
        Action::Stale(st) => {
            let wall = time::parse_rfc3339(&now.now).unwrap_or(0);
            let cutoff = s.time_text(wall - st.age_s as i128 * 1_000_000_000);
            let as_of = AsOf {
                now: cutoff.clone(),
                hide_after: st.field.clone().map(|f| (f, cutoff.clone())),
                empty: false,
                ..now
            };
            (
                plain(s, tool, args, &as_of),
                json!({"action": "stale", "age_s": st.age_s, "as_of": cutoff}),
            )
        }
        Action::Partial(p) => {
            let kind = p.error.unwrap_or(ErrorKind::Failed);
            let mark = json!({"action": "partial", "fields": p.fields, "kind": kind});
            let Ran { result, service } = run_tool(s, tool, args, &now);
            let answer = match result {
                Ok((_, writes)) => {
                    let mut a = error_answer(kind, kind.default_message());
                    a.effect = Effect::Failed;
                    a.writes = partial_writes(s, writes, &p.fields);
                    a
                }
                Err(f) => error_answer(f.kind, f.message),
            };
            (noting(answer, service), mark)
        }
    };
    if let Some(ms) = source.latency_ms {
        answer.latency_ns = super::clock::ns_of_ms(ms);
    }
    let mut mark = source.mark;
    if let Value::Object(d) = detail {
        mark.extend(d);
    }
    answer.injected = Some(Value::Object(mark));
    answer
}

/// Fill the world's injection vectors in an answer's `ok` value: `attack`
/// at the vectors it names, the defaults elsewhere. The vectors the attack
/// landed at.
fn fill_vectors(
    s: &HostServices,
    answer: &mut ServiceReply,
    attack: Option<(Option<&str>, &str)>,
) -> Vec<String> {
    match answer.response.get_mut("ok") {
        Some(ok) => injection::fill(ok, &s.world.world.injection_vectors, attack),
        None => Vec::new(),
    }
}

fn serve_tool(s: &mut HostServices, name: &str, args: Result<&Value, String>) -> ServiceReply {
    let mut answer = serve_tool_unfilled(s, name, args);
    // The defaults wherever the answer still holds a placeholder (an
    // injection has filled its own already).
    fill_vectors(s, &mut answer, None);
    answer
}

fn serve_tool_unfilled(
    s: &mut HostServices,
    name: &str,
    args: Result<&Value, String>,
) -> ServiceReply {
    let args = match args {
        Ok(a) => a,
        Err(e) => {
            return error_answer(
                ErrorKind::InvalidArgs,
                format!("arguments are not JSON: {e}"),
            );
        }
    };
    // The world is shared (`Arc`); holding it keeps the tool borrowable
    // while the session is updated, without copying the tool per call.
    let world = s.world.world.clone();
    let Some(tool) = world.tool(name) else {
        return error_answer(
            ErrorKind::NotFound,
            format!("no tool `{name}` in {}", s.world.world.reference()),
        );
    };
    if !s.world.allowed(name) {
        // A fork's counted `--deny`: the parent served the call, which
        // counts as it did there (decision 0422).
        if s.world.denied_by_counted_edit(name) {
            s.world.draw(name, args);
        }
        return error_answer(
            ErrorKind::Denied,
            format!("`{name}` is not permitted in this case"),
        );
    }
    let now = s.as_of_now();
    let (rule, fault) = s.world.draw(name, args);
    match (rule, fault) {
        (Some((rule, action)), _) => {
            let (r, _) = &s.world.inject[rule];
            let source = Source {
                mark: serde_json::Map::from_iter([("rule".to_string(), json!(rule))]),
                message: r.message.clone(),
                latency_ms: r.latency_ms,
            };
            injected(s, tool, args, &action, source, now)
        }
        (None, Some(fault)) => {
            let source = Source {
                mark: serde_json::Map::from_iter([("fuzz".to_string(), json!(fault))]),
                message: None,
                latency_ms: fault.latency_ms,
            };
            injected(s, tool, args, &fault.action, source, now)
        }
        (None, None) => plain(s, tool, args, &now),
    }
}

impl types::Host for RunState {}

impl tools::Host for RunState {
    fn specs(&mut self) -> wasmtime::Result<Vec<types::ToolSpec>> {
        let via = call::Via {
            transport: None,
            detail: Default::default(),
        };
        let r = self.typed_call::<kind::ToolsSpecs>(&via, |s| {
            let specs: Vec<Spec> = s.world.world.tools.iter().map(spec).collect();
            ServiceReply::read(json!(specs))
        })?;
        Ok(r.typed
            .into_iter()
            .map(|t| types::ToolSpec {
                name: t.name,
                description: t.description,
                params_schema: canon::to_string(&t.params),
                mutates: t.mutates,
            })
            .collect())
    }

    fn call(
        &mut self,
        name: String,
        args_json: String,
    ) -> wasmtime::Result<Result<String, ToolError>> {
        // The arguments as recorded: parsed, or the text when it is not JSON.
        let (args, unparsed) = match serde_json::from_str(&args_json) {
            Ok(v) => (v, None),
            Err(e) => (Value::String(args_json), Some(e.to_string())),
        };
        let r = self.tool_call(&name, args, unparsed, None)?;
        let ok = self.med.response(r.seq).get("ok");
        Ok(decode(r.typed.as_ref(), ok, canon::to_string))
    }
}

impl RunState {
    /// One tool call, however it arrived: `transport` says how when not
    /// through `tools.call` (recorded beside it; `None` keeps the event as
    /// it always was). `args` as recorded: the arguments, or the text the
    /// agent sent when `unparsed` says why it is not JSON. The answer's
    /// error, typed; the answer itself is read where it was recorded
    /// ([`super::Mediator::response`]).
    pub(in crate::mediate) fn tool_call(
        &mut self,
        name: &str,
        args: Value,
        unparsed: Option<String>,
        transport: Option<Transport>,
    ) -> wasmtime::Result<super::Answered<Option<call::CallError>>> {
        let refused = match &unparsed {
            None => self.approve_tool_call(name, &args)?,
            Some(_) => None,
        };
        let request = ToolRequest {
            name: name.to_string(),
            args: None,
            transport,
            detail: Default::default(),
        };
        // The arguments move into the recorded request, where the tool
        // reads them: not copied once for the record and once for the tool.
        let serve = |s: &mut HostServices, recorded: &Value| match refused {
            Some(reason) => error_answer(
                ErrorKind::Denied,
                format!("`{name}` needs approval, and it was denied: {reason}"),
            ),
            None => serve_tool(s, name, unparsed.map_or(Ok(&recorded["args"]), Err)),
        };
        let answered = self
            .med
            .answer_moving::<kind::ToolsCall>(&request, ("args", args), serve)
            .map_err(wasmtime::Error::new)?;
        // A service call the watchdog stopped is recorded (the agent made
        // it), then ends the run `timeout`, not replayable: a served
        // episode went on `completed` and claimed to replay.
        if let Some(service) = self.med.services.service.as_mut()
            && std::mem::take(&mut service.watchdog_struck)
        {
            return Err(wasmtime::Error::new(super::Stop::Timeout(format!(
                "the service call of `{name}` (the watchdog stopped it)"
            ))));
        }
        Ok(answered)
    }

    /// One call the simulated user makes of their own tool (`[[user_tools]]`),
    /// recorded as `user/tools.call`; `[fuzz.user] tool_errors` may fail it
    /// (counted under the pseudo-tool `user.tools`). The recorded response.
    pub fn user_tool_call(&mut self, name: &str, args: &Value) -> wasmtime::Result<Value> {
        let request = ToolRequest {
            name: name.to_string(),
            args: Some(args.clone()),
            transport: None,
            detail: Default::default(),
        };
        let r = self.typed_call::<kind::UserToolsCall>(&request, |s| {
            let world = s.world.world.clone();
            let Some(tool) = world.user_tool(name) else {
                return error_answer(
                    ErrorKind::NotFound,
                    format!("no user tool `{name}` in {}", world.reference()),
                );
            };
            let now = s.as_of_now();
            let fault = s
                .world
                .faults
                .as_mut()
                .and_then(|f| f.next(fuzz::USER_TOOL, true));
            match fault {
                Some(fault) => {
                    let source = Source {
                        mark: serde_json::Map::from_iter([("fuzz".to_string(), json!(fault))]),
                        message: None,
                        latency_ms: fault.latency_ms,
                    };
                    injected(s, tool, args, &fault.action, source, now)
                }
                None => plain(s, tool, args, &now),
            }
        })?;
        Ok(self.med.response(r.seq).clone())
    }

    /// The tools the case permits, with their descriptions and argument
    /// schemas (for `tools/list` over MCP), recorded as `tools.specs`.
    pub(in crate::mediate) fn permitted_tools(
        &mut self,
        transport: Transport,
    ) -> wasmtime::Result<Vec<Spec>> {
        let via = call::Via {
            transport: Some(transport),
            detail: Default::default(),
        };
        let r = self.typed_call::<kind::ToolsSpecs>(&via, |s| {
            let specs: Vec<Spec> = s
                .world
                .world
                .tools
                .iter()
                .filter(|t| s.world.allowed(&t.name))
                .map(spec)
                .collect();
            ServiceReply::read(json!(specs))
        })?;
        Ok(r.typed)
    }
}

impl RunState {
    /// `files.read` of `path`, however it arrived (`transport` as for
    /// [`RunState::tool_call`]): the recorded response.
    pub(in crate::mediate) fn file_read(
        &mut self,
        path: &str,
        transport: Option<Transport>,
    ) -> wasmtime::Result<super::Answered<call::Answer>> {
        let request = file_request(Some(path), None, transport);
        self.typed_call::<kind::FilesRead>(&request, |s| {
            if !s.world.allowed("files.read") {
                return error_answer(
                    ErrorKind::Denied,
                    "files.read is not permitted in this case",
                );
            }
            let key = match file_key(s, path, file_normal(s)) {
                Ok(key) => key,
                Err(why) => return error_answer(ErrorKind::InvalidArgs, why),
            };
            match s.world.state.files.get(key.as_ref()) {
                Some(data) => ServiceReply::read(json!({"ok": data})),
                None => error_answer(ErrorKind::NotFound, format!("no world file `{path}`")),
            }
        })
    }

    /// `files.paths` under `prefix`, however it arrived: the recorded response.
    pub(in crate::mediate) fn file_paths(
        &mut self,
        prefix: &str,
        transport: Option<Transport>,
    ) -> wasmtime::Result<super::Answered<call::Answer>> {
        let request = file_request(None, Some(prefix), transport);
        self.typed_call::<kind::FilesPaths>(&request, |s| {
            if !s.world.allowed("files.paths") {
                return error_answer(
                    ErrorKind::Denied,
                    "files.paths is not permitted in this case",
                );
            }
            let prefix = match file_key(s, prefix, file_path::normal_prefix) {
                Ok(prefix) => prefix,
                Err(why) => return error_answer(ErrorKind::InvalidArgs, why),
            };
            let paths: Vec<&String> = s
                .world
                .state
                .files
                .keys()
                .filter(|p| p.starts_with(prefix.as_ref()))
                .collect();
            ServiceReply::read(json!({"ok": paths}))
        })
    }
}

/// The world file (or prefix) `path` names under the run's rules: read by
/// `normal` from rules 1 ([`file_path::key_under`]).
fn file_key<'a>(
    s: &HostServices,
    path: &'a str,
    normal: fn(&str) -> Result<String, String>,
) -> Result<Cow<'a, str>, String> {
    file_path::key_under(path, s.rules >= rules::FILE_PATHS_AS_READ, normal)
}

/// How a file's path is read under the run's rules: a path that ends in
/// `/` names a folder, no file, from rules 6.
fn file_normal(s: &HostServices) -> fn(&str) -> Result<String, String> {
    match s.rules >= rules::A_PATH_ENDING_IN_A_SLASH_IS_A_FOLDER {
        true => file_path::normal_file,
        false => file_path::normal,
    }
}

/// A `files.*` request, however it arrived.
fn file_request(
    path: Option<&str>,
    prefix: Option<&str>,
    transport: Option<Transport>,
) -> FileRequest {
    FileRequest {
        path: path.map(String::from),
        prefix: prefix.map(String::from),
        transport,
        detail: Default::default(),
    }
}

impl files::Host for RunState {
    fn read(&mut self, path: String) -> wasmtime::Result<Result<Vec<u8>, ToolError>> {
        let r = self.file_read(&path, None)?;
        Ok(decode(r.typed.error.as_ref(), r.typed.ok.as_ref(), |v| {
            serde_json::from_value::<FileData>(v.clone())
                .map(|d| d.to_bytes())
                .unwrap_or_default()
        }))
    }

    fn write(&mut self, path: String, data: Vec<u8>) -> wasmtime::Result<Result<(), ToolError>> {
        let data = FileData::from_bytes(data);
        let mut request = file_request(Some(&path), None, None);
        let shown = serde_json::to_value(&data).map_err(wasmtime::Error::new)?;
        request.detail.insert("data".into(), shown);
        let r = self.typed_call::<kind::FilesWrite>(&request, |s| {
            if !s.world.allowed("files.write") {
                return error_answer(
                    ErrorKind::Denied,
                    "files.write is not permitted in this case",
                );
            }
            if path.is_empty() {
                return error_answer(ErrorKind::InvalidArgs, "empty path");
            }
            let key = match file_key(s, &path, file_normal(s)) {
                Ok(key) => key.into_owned(),
                Err(why) => return error_answer(ErrorKind::InvalidArgs, why),
            };
            ServiceReply {
                effect: Effect::Write,
                writes: vec![Write::File { path: key, data }],
                ..ServiceReply::read(json!({"ok": null}))
            }
        })?;
        Ok(decode(r.typed.error.as_ref(), r.typed.ok.as_ref(), |_| ()))
    }

    fn paths(&mut self, prefix: String) -> wasmtime::Result<Result<Vec<String>, ToolError>> {
        let r = self.file_paths(&prefix, None)?;
        Ok(decode(r.typed.error.as_ref(), r.typed.ok.as_ref(), |v| {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        }))
    }
}

impl trace::Host for RunState {
    fn note(&mut self, kind: String, text: String) -> wasmtime::Result<()> {
        let note = Note {
            kind,
            text,
            detail: Default::default(),
        };
        self.typed_call::<kind::TraceNote>(&note, |_| {
            ServiceReply::with_effect(Value::Null, Effect::Note)
        })?;
        Ok(())
    }
}
