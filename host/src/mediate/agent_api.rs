//! The `worldline:agent` interfaces — tools, model, files, trace — served
//! from the world session and recorded like every other host call.
//!
//! A tool call is answered in this order: bad JSON or unknown tool, then
//! permissions (a denied call changes nothing), then the tool's operation
//! over the state.

use super::bindings::worldline::agent::{files, model, tools, trace, types};
use super::{Answer, RunState, Services};
use crate::canon;
use crate::log::Effect;
use crate::world::state::{FileData, Write};
use crate::world::tools::execute;
use serde_json::{Value, json};
use types::{ErrorKind, ToolError};

/// The scripted model provider: the case's responses, in order.
pub struct ScriptedModel {
    responses: Vec<Value>,
    next: usize,
}

impl ScriptedModel {
    pub fn new(responses: Vec<Value>) -> Self {
        ScriptedModel { responses, next: 0 }
    }
}

pub fn kind_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Denied => "denied",
        ErrorKind::NotFound => "not-found",
        ErrorKind::InvalidArgs => "invalid-args",
        ErrorKind::Timeout => "timeout",
        ErrorKind::Unavailable => "unavailable",
        ErrorKind::Conflict => "conflict",
        ErrorKind::Failed => "failed",
    }
}

fn kind_of(name: &str) -> ErrorKind {
    match name {
        "denied" => ErrorKind::Denied,
        "not-found" => ErrorKind::NotFound,
        "invalid-args" => ErrorKind::InvalidArgs,
        "timeout" => ErrorKind::Timeout,
        "unavailable" => ErrorKind::Unavailable,
        "conflict" => ErrorKind::Conflict,
        _ => ErrorKind::Failed,
    }
}

/// An error answer: `{"error": {"kind": ..., "message": ...}}`.
pub fn error_answer(kind: &str, message: impl Into<String>) -> Answer {
    let effect = if kind == "denied" {
        Effect::Denied
    } else {
        Effect::Failed
    };
    Answer::with_effect(
        json!({"error": {"kind": kind, "message": message.into()}}),
        effect,
    )
}

/// Turn a recorded `{"ok": v}` / `{"error": ...}` response into the guest's
/// result, with `ok` mapped by `f`.
fn decode<T>(response: &Value, f: impl FnOnce(&Value) -> T) -> Result<T, ToolError> {
    match response.get("error") {
        Some(e) => Err(ToolError {
            kind: kind_of(e["kind"].as_str().unwrap_or("failed")),
            message: e["message"].as_str().unwrap_or("").to_string(),
        }),
        None => Ok(f(response.get("ok").unwrap_or(&Value::Null))),
    }
}

fn serve_tool(s: &mut Services, name: &str, args: Result<Value, String>) -> Answer {
    let args = match args {
        Ok(a) => a,
        Err(e) => return error_answer("invalid-args", format!("arguments are not JSON: {e}")),
    };
    let Some(tool) = s.world.world.tool(name).cloned() else {
        return error_answer(
            "not-found",
            format!("no tool `{name}` in {}", s.world.world.reference()),
        );
    };
    if !s.world.allowed(name) {
        return error_answer("denied", format!("`{name}` is not permitted in this case"));
    }
    let now = s.now_text();
    match execute(&tool, &args, &s.world.state, &now) {
        Ok((out, writes)) => Answer {
            effect: if writes.is_empty() {
                Effect::Read
            } else {
                Effect::Write
            },
            writes,
            ..Answer::read(json!({"ok": out}))
        },
        Err(f) => error_answer(f.kind, f.message),
    }
}

impl types::Host for RunState {}

impl tools::Host for RunState {
    fn specs(&mut self) -> wasmtime::Result<Vec<types::ToolSpec>> {
        let r = self.call("worldline:agent/tools.specs", json!({}), |s| {
            let specs: Vec<Value> = s
                .world
                .world
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "params": t.params, "mutates": t.mutates}))
                .collect();
            Answer::read(json!(specs))
        })?;
        Ok(r.as_array()
            .map(|a| {
                a.iter()
                    .map(|t| types::ToolSpec {
                        name: t["name"].as_str().unwrap_or("").to_string(),
                        description: t["description"].as_str().unwrap_or("").to_string(),
                        params_schema: canon::to_string(&t["params"]),
                        mutates: t["mutates"].as_bool().unwrap_or(false),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    fn call(
        &mut self,
        name: String,
        args_json: String,
    ) -> wasmtime::Result<Result<String, ToolError>> {
        let args: Result<Value, String> =
            serde_json::from_str(&args_json).map_err(|e| e.to_string());
        let shown_args = args.clone().unwrap_or_else(|_| Value::String(args_json));
        let r = RunState::call(
            self,
            "worldline:agent/tools.call",
            json!({"name": name, "args": shown_args}),
            |s| serve_tool(s, &name, args),
        )?;
        Ok(decode(&r, canon::to_string))
    }
}

impl model::Host for RunState {
    fn complete(&mut self, request_json: String) -> wasmtime::Result<Result<String, ToolError>> {
        let request: Value =
            serde_json::from_str(&request_json).unwrap_or(Value::String(request_json));
        let r = self.call(
            "worldline:agent/model.complete",
            json!({"provider": "scripted", "request": request}),
            |s| {
                let m = &mut s.model;
                match m.responses.get(m.next) {
                    Some(resp) => {
                        m.next += 1;
                        Answer::read(json!({"ok": resp}))
                    }
                    None => error_answer(
                        "unavailable",
                        format!(
                            "the scripted model has no response left (the case's [model] lists {})",
                            m.responses.len()
                        ),
                    ),
                }
            },
        )?;
        Ok(decode(&r, canon::to_string))
    }
}

impl files::Host for RunState {
    fn read(&mut self, path: String) -> wasmtime::Result<Result<Vec<u8>, ToolError>> {
        let r = self.call("worldline:agent/files.read", json!({"path": path}), |s| {
            if !s.world.allowed("files.read") {
                return error_answer("denied", "files.read is not permitted in this case");
            }
            match s.world.state.files.get(&path) {
                Some(data) => Answer::read(json!({"ok": data})),
                None => error_answer("not-found", format!("no world file `{path}`")),
            }
        })?;
        Ok(decode(&r, |v| {
            serde_json::from_value::<FileData>(v.clone())
                .map(|d| d.to_bytes())
                .unwrap_or_default()
        }))
    }

    fn write(&mut self, path: String, data: Vec<u8>) -> wasmtime::Result<Result<(), ToolError>> {
        let data = FileData::from_bytes(data);
        let r = self.call(
            "worldline:agent/files.write",
            json!({"path": path, "data": data}),
            |s| {
                if !s.world.allowed("files.write") {
                    return error_answer("denied", "files.write is not permitted in this case");
                }
                if path.is_empty() {
                    return error_answer("invalid-args", "empty path");
                }
                Answer {
                    effect: Effect::Write,
                    writes: vec![Write::File {
                        path: path.clone(),
                        data,
                    }],
                    ..Answer::read(json!({"ok": null}))
                }
            },
        )?;
        Ok(decode(&r, |_| ()))
    }

    fn paths(&mut self, prefix: String) -> wasmtime::Result<Result<Vec<String>, ToolError>> {
        let r = self.call(
            "worldline:agent/files.paths",
            json!({"prefix": prefix}),
            |s| {
                if !s.world.allowed("files.paths") {
                    return error_answer("denied", "files.paths is not permitted in this case");
                }
                let paths: Vec<&String> = s
                    .world
                    .state
                    .files
                    .keys()
                    .filter(|p| p.starts_with(&prefix))
                    .collect();
                Answer::read(json!({"ok": paths}))
            },
        )?;
        Ok(decode(&r, |v| {
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
        self.call(
            "worldline:agent/trace.note",
            json!({"kind": kind, "text": text}),
            |_| Answer::with_effect(Value::Null, Effect::Note),
        )?;
        Ok(())
    }
}
