//! `worldline case from-trace TRACE -o DIR`: an OpenTelemetry trace of an
//! agent run (outside worldline or exported by `otel --content`) made a
//! case folder: a world whose tools are the ones the trace shows, a case
//! whose task is the first model call's user message, the model's answers
//! in order, the recorded tool results pinned in order (`[[inject]]` rules
//! by call number) and a `not_recorded` error for any other call, and a
//! README saying what was taken and what is left to write.
//!
//! The model's answers are a scripted, in-order `[model] responses` list
//! rather than a `recorded` provider's recording: a trace keeps the
//! messages but not the whole request the recorded provider keys on
//! (decision 0213).

pub(crate) mod genai;
pub(crate) mod otlp;
#[cfg(test)]
mod properties;

use anyhow::Result;
use genai::Run;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use worldline_case::case::origin::{CreatedFrom, Origin};
use worldline_case::error::InputError;

/// The world every trace case gets (under `DIR/worlds/`).
const WORLD: &str = "traced";

/// Which setting turns message capture on, per instrumentation.
const CONTENT_SETTINGS: &str = "OpenTelemetry's openai-v2 / genai instrumentations: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (SPAN_ONLY or SPAN_AND_EVENT for the latest); OpenInference: leave OPENINFERENCE_HIDE_INPUTS and OPENINFERENCE_HIDE_OUTPUTS unset (or false); OpenLLMetry (Traceloop): TRACELOOP_TRACE_CONTENT=true; worldline: `worldline otel --content`";

/// One agent run in a trace file, as `--list` shows it.
#[derive(Debug, Serialize)]
pub struct Listed {
    pub trace_id: String,
    pub model_calls: usize,
    pub tool_calls: usize,
    pub tools: Vec<String>,
}

/// What `case from-trace` wrote.
#[derive(Debug, Serialize)]
pub struct FromTrace {
    pub trace_id: String,
    pub dir: PathBuf,
    pub case: PathBuf,
    pub world: PathBuf,
    pub model_calls: usize,
    pub tool_calls: usize,
    /// Tool calls whose recorded result is pinned as an `[[inject]]` rule
    /// (a call the trace holds no result of is answered by the world).
    pub pinned: usize,
    /// The simulated user's turns made `[[user.rules]]` (0: no `[user]`).
    pub user_turns: usize,
    pub tools: Vec<String>,
    /// The forms the model calls were read in.
    pub forms: Vec<&'static str>,
}

/// The agent runs of a trace file: its traces that hold a model call.
fn runs_in(path: &Path) -> Result<BTreeMap<String, Run>, InputError> {
    let spans = otlp::read(path).map_err(|u| InputError {
        line: (u.line > 0).then_some((u.line, u.column)),
        ..InputError::new(path, u.message)
    })?;
    let mut by_trace: BTreeMap<String, Vec<otlp::Span>> = BTreeMap::new();
    for s in spans {
        by_trace.entry(s.trace_id.clone()).or_default().push(s);
    }
    let runs: BTreeMap<String, Run> = by_trace
        .into_iter()
        .map(|(id, spans)| (id, genai::run_of(&spans)))
        .filter(|(_, r)| !r.model_calls.is_empty())
        .collect();
    if runs.is_empty() {
        return Err(InputError::new(
            path,
            "has no model call: no span with gen_ai.operation.name = \"chat\" and no OpenInference LLM span",
        ));
    }
    Ok(runs)
}

/// `--list`: every agent run in the file, or those whose trace id starts
/// with `trace_id` (it was ignored: every run was listed); none is an error
/// as `-o` gives it.
pub fn list(path: &Path, trace_id: Option<&str>) -> Result<Vec<Listed>> {
    let mut runs = runs_in(path)?;
    if let Some(want) = trace_id {
        let matching = starting_with(&runs, want);
        if matching.is_empty() {
            return Err(no_such_run(path, &runs, want, &matching).into());
        }
        runs.retain(|id, _| matching.contains(id));
    }
    Ok(runs
        .into_iter()
        .map(|(trace_id, r)| Listed {
            trace_id,
            model_calls: r.model_calls.len(),
            tool_calls: r.tool_calls.len(),
            tools: tool_names(&r),
        })
        .collect())
}

fn tool_names(r: &Run) -> Vec<String> {
    let mut names: Vec<String> = r.tools.keys().cloned().collect();
    for t in &r.tool_calls {
        names.push(t.name.clone());
    }
    for c in &r.model_calls {
        for (n, _) in c.output.iter().flat_map(|o| &o.tool_calls) {
            names.push(n.clone());
        }
    }
    names.sort();
    names.dedup();
    names
}

/// Write the case folder `out` (which must not exist) from the run in
/// `path` (the one named by `trace_id`, or the only one). Everything is
/// written to a sibling folder first and renamed into place, so a failure
/// leaves nothing.
pub fn from_trace(path: &Path, out: &Path, trace_id: Option<&str>) -> Result<FromTrace> {
    worldline_case::output::check_new(out, "the case folder (-o)")?;
    let mut runs = runs_in(path)?;
    let id = pick(path, &runs, trace_id)?;
    let run = runs.remove(&id).unwrap_or_default();
    // A message attribute that does not parse (cut off at a length limit)
    // would be read as no messages: the task empty, an answer missing.
    if let Some(why) = &run.damaged {
        return Err(InputError::new(path, why.clone()).into());
    }
    let missing = run.without_content();
    if missing > 0 {
        return Err(InputError::new(
            path,
            format!(
                "was recorded without message content ({missing} of {} model calls have no messages), so there is no task or answer to take; record it again with content capture on. {CONTENT_SETTINGS}",
                run.model_calls.len()
            ),
        )
        .into());
    }
    // A call whose answer cannot be read would be left out of the script,
    // and every answer after it given one call early (it was, and the
    // summary counted it).
    let total = run.model_calls.len();
    if let Some(n) = (run.model_calls.iter()).position(|c| c.output.is_none() && c.failed.is_none())
    {
        return Err(InputError::new(
            path,
            format!(
                "model call {} of {total} has no answer to script (no `gen_ai.output.messages`, or not a list of messages with content or tool calls), so every later answer would be given one call early; record the trace again with content capture on, or mend that span. {CONTENT_SETTINGS}",
                n + 1
            ),
        )
        .into());
    }
    // A user's turn whose reply was not captured would be a rule with
    // nothing to say.
    if let Some(n) = (run.user_turns.iter()).position(|t| t.reply.is_none() && t.ended.is_none()) {
        return Err(InputError::new(
            path,
            format!(
                "the simulated user's turn {} of {} has no reply (no `gen_ai.output.messages` on its `invoke_agent user` span), so there is no line to script; export the run again with `worldline otel --content`",
                n + 1,
                run.user_turns.len()
            ),
        )
        .into());
    }
    // A result pinned as text would not be the answer the trace recorded
    // (an integer past 64 bits was pinned as the nearest float, a number
    // past a float's range or deep nesting as a string).
    for (n, t) in run.tool_calls.iter().enumerate() {
        if let Some(why) = t
            .result
            .as_ref()
            .and_then(Value::as_str)
            .and_then(genai::unholdable)
        {
            return Err(InputError::new(
                path,
                format!(
                    "the result of tool call {} (`{}`) is JSON a case cannot hold ({why}); mend that span's result",
                    n + 1,
                    t.name
                ),
            )
            .into());
        }
    }
    let bytes = worldline_case::bounded::read(path, otlp::MAX_BYTES)
        .map_err(|e| InputError::new(path, format!("cannot read: {e}")))?;
    let origin = Origin {
        created_from: CreatedFrom::Trace,
        run: None,
        chain_hash: None,
        bundle: None,
        world_hash: None,
        trace_id: Some(id.clone()),
        trace_sha256: Some(worldline_case::canon::sha256_hex(&bytes)),
    };
    // The trace id names a file: only its letters and digits.
    let name = match worldline_case::shown::file_part(&id, 8) {
        Some(part) => format!("trace-{part}"),
        None => "trace".to_string(),
    };
    let tools = tool_names(&run);
    if tools.iter().any(String::is_empty) {
        return Err(InputError::new(
            path,
            "has a tool call with no tool name (a tool span without `gen_ai.tool.name` or `tool.name`, or a tool call without `name`); name the tool in the trace",
        )
        .into());
    }
    let unwritable = |e: anyhow::Error| {
        InputError::new(
            path,
            format!(
                "cannot be written as a case: {}",
                worldline_case::shown::text(&format!("{e:#}"))
            ),
        )
    };
    let world_text = world_toml(&run, &tools).map_err(unwritable)?;
    let case_text = case_toml(&run, &tools, &origin, path).map_err(unwritable)?;
    let readme = readme(&run, &id, &name, path, &tools);

    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| InputError::new(parent, format!("cannot create: {e}")))?;
    let tmp = tempfile::Builder::new()
        .prefix(".from-trace-")
        .tempdir_in(parent)
        .map_err(|e| InputError::new(parent, format!("cannot write here: {e}")))?;
    let world_file = Path::new("worlds").join(WORLD).join("v1/world.toml");
    let case_file = Path::new("cases").join(format!("{name}.toml"));
    for (rel, text) in [
        (world_file.as_path(), world_text.as_str()),
        (case_file.as_path(), case_text.as_str()),
        (Path::new("README.md"), readme.as_str()),
    ] {
        let p = tmp.path().join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d)
                .map_err(|e| InputError::new(d, format!("cannot create: {e}")))?;
        }
        std::fs::write(&p, text).map_err(|e| InputError::new(&p, format!("cannot write: {e}")))?;
    }
    // The case must load against its world before the folder appears; a
    // problem is the trace's (what it holds cannot be a world or a case),
    // named by the file it would have gone into.
    worldline_case::case::load(&tmp.path().join(&case_file), None).map_err(|e| {
        let within = e.file.strip_prefix(tmp.path()).unwrap_or(&e.file);
        let at = e
            .line
            .map_or_else(String::new, |(l, c)| format!(":{l}:{c}"));
        InputError::new(
            path,
            format!(
                "holds what cannot be made a case: the {} it gives{at} would say: {}",
                within.display(),
                e.message.replace(&format!("{}/", tmp.path().display()), "")
            ),
        )
    })?;
    let kept = tmp.keep();
    std::fs::rename(&kept, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&kept);
        InputError::new(out, format!("cannot create: {e}"))
    })?;
    Ok(FromTrace {
        trace_id: id,
        dir: out.to_path_buf(),
        case: out.join(case_file),
        world: out.join(world_file),
        model_calls: run.model_calls.len(),
        tool_calls: run.tool_calls.len(),
        pinned: pinned(&run),
        user_turns: user_rules(&run).len(),
        tools,
        forms: run.forms,
    })
}

/// The trace ids of `runs` that start with `want` (any case).
fn starting_with(runs: &BTreeMap<String, Run>, want: &str) -> Vec<String> {
    let want = want.to_lowercase();
    (runs.keys().filter(|k| k.starts_with(&want)).cloned()).collect()
}

/// The error for a `--trace-id` that names no one run: `matching` are the
/// runs it names.
fn no_such_run(
    path: &Path,
    runs: &BTreeMap<String, Run>,
    want: &str,
    matching: &[String],
) -> InputError {
    InputError::new(
        path,
        format!(
            "has {} agent run(s) whose trace id starts with {}; it has {} (--list without --trace-id shows them)",
            matching.len(),
            worldline_case::shown::text(&want.to_lowercase()),
            worldline_case::shown::list(runs.keys())
        ),
    )
}

/// The run `trace_id` names (a unique prefix of one), or the only one.
/// Ids listed in an error are at most [`worldline_case::shown::MAX_ITEMS`].
fn pick(
    path: &Path,
    runs: &BTreeMap<String, Run>,
    trace_id: Option<&str>,
) -> Result<String, InputError> {
    match trace_id {
        Some(want) => match starting_with(runs, want).as_slice() {
            [one] => Ok(one.clone()),
            matching => Err(no_such_run(path, runs, want, matching)),
        },
        None if runs.len() == 1 => Ok(runs.keys().next().cloned().unwrap_or_default()),
        None => Err(InputError::new(
            path,
            format!(
                "holds {} agent runs ({}); pick one with --trace-id (--list shows them)",
                runs.len(),
                worldline_case::shown::list(runs.keys())
            ),
        )),
    }
}

/// JSON as TOML; TOML has no null, so null fields and items are left out.
fn toml_of(v: &Value) -> Result<toml::Value> {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(a) => a.iter().filter(|v| !v.is_null()).map(strip).collect(),
            other => other.clone(),
        }
    }
    super::toml_value(&strip(v), "")
}

/// The simulated user's own tools the trace shows it calling, by name.
fn user_tool_names(run: &Run) -> Vec<String> {
    let mut names: Vec<String> = (run.user_turns.iter())
        .flat_map(|t| &t.calls)
        .map(|c| c.name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

fn world_toml(run: &Run, tools: &[String]) -> Result<String> {
    let mut list = Vec::new();
    for name in tools {
        let (description, params) = match run.tools.get(name) {
            Some(d) => (d.description.clone(), d.params.clone()),
            None => (String::new(), json!({"type": "object"})),
        };
        list.push(json!({
            "name": name,
            "description": description,
            "params": params,
            // Never reached while the case's not_recorded rule stands.
            "op": "respond",
            "response": {},
        }));
    }
    let mut doc = json!({
        "name": WORLD,
        "version": 1,
        "description": "The tools an agent declared or called in an OpenTelemetry trace (worldline case from-trace). Add tables and rows (or a [service]) so that calls the trace never made get answers.",
        "permissions": {"default": "allow"},
        "tools": list,
    });
    // The simulated user's own tools its rules call again: no trace says
    // what they take or do, and a scripted user reads none of their
    // answers.
    let user_tools: Vec<Value> = (user_tool_names(run).into_iter())
        .map(|name| {
            json!({
                "name": name,
                "description": "",
                "params": {"type": "object"},
                "op": "respond",
                "response": {},
            })
        })
        .collect();
    if !user_tools.is_empty() {
        doc["user_tools"] = Value::Array(user_tools);
    }
    Ok(toml::to_string(&toml_of(&doc)?)?)
}

/// The first user message: the task (JSON when it parses as JSON).
fn task_of(run: &Run) -> Value {
    let text = run.model_calls[0]
        .input
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("");
    serde_json::from_str(text).unwrap_or_else(|_| Value::from(text))
}

/// A result that is worldline's error shape, `{"error": {"kind": K,
/// "message"?: M}}` with K one of the error kinds: the kind and message.
/// Anything else (another single key, an unknown kind) is a response.
fn error_of(v: &Value) -> Option<(&'static str, Option<&str>)> {
    let o = v.as_object().filter(|o| o.len() == 1)?;
    let e = o.get("error")?;
    let kind: worldline_case::error_kind::ErrorKind = e.get("kind")?.as_str()?.parse().ok()?;
    Some((kind.as_str(), e.get("message").and_then(Value::as_str)))
}

/// The scripted reply that stands for a model call: the same failure when
/// it failed without an answer, else its answer (`None`: neither).
fn scripted_reply(call: &genai::ModelCall) -> Option<Value> {
    if let Some((kind, status)) = call.failed {
        let mut r = json!({"error": kind});
        if let Some(s) = status {
            r["status"] = s.into();
        }
        return Some(r);
    }
    let a = call.output.as_ref()?;
    let mut r = json!({});
    if let Some(c) = &a.content {
        r["content"] = c.clone().into();
    }
    if !a.tool_calls.is_empty() {
        r["tool_calls"] = a
            .tool_calls
            .iter()
            .map(|(name, args)| json!({"name": name, "arguments": args}))
            .collect();
    }
    if r.as_object().is_some_and(|o| o.is_empty()) {
        r["content"] = "".into();
    }
    Some(r)
}

/// A tool call's result, when the trace recorded one: a result not
/// recorded, or recorded empty, pins nothing (the call is answered as the
/// world answers it).
fn recorded_result(t: &genai::ToolCall) -> Option<&Value> {
    t.result.as_ref().filter(|r| !r.is_null())
}

/// How many tool calls have their recorded result pinned.
fn pinned(run: &Run) -> usize {
    run.tool_calls.iter().filter_map(recorded_result).count()
}

/// The simulated user's turns as a scripted user's rules, one a turn (as
/// `case from-run` scripts a model-played user): the turn's number, the
/// calls it made of its own tools before it answered, the reply or the
/// ending, and the time a model playing the user took. A
/// turn the user had already left, or no user answered (the case had
/// none), is no rule.
fn user_rules(run: &Run) -> Vec<Value> {
    let mut rules = Vec::new();
    let mut last = 0;
    for t in &run.user_turns {
        if matches!(t.played_by.as_str(), "already-ended" | "nobody") {
            continue;
        }
        // A fork's answer carries no number: it is the turn after the one
        // before it.
        let turn = match t.turn {
            Some(n) => n,
            None if t.played_by == "fork" => last + 1,
            None => continue,
        };
        last = turn;
        let mut rule = json!({"turn": turn});
        if !t.calls.is_empty() {
            let calls = (t.calls.iter())
                .map(|c| {
                    let args = (c.arguments.clone()).filter(Value::is_object);
                    json!({"tool": c.name, "args": args.unwrap_or_else(|| json!({}))})
                })
                .collect();
            rule["calls"] = Value::Array(calls);
        }
        if let Some(ms) = t.latency_ms {
            rule["latency_ms"] = ms.into();
        }
        match (&t.reply, &t.ended) {
            (_, Some((reason, satisfied))) => {
                rule["end"] = reason.clone().unwrap_or_default().into();
                rule["satisfied"] = (*satisfied).into();
            }
            (Some(reply), None) => rule["reply"] = reply.clone().into(),
            (None, None) => continue,
        }
        rules.push(rule);
    }
    rules
}

fn case_toml(run: &Run, tools: &[String], origin: &Origin, source: &Path) -> Result<String> {
    let responses: Vec<Value> = run.model_calls.iter().filter_map(scripted_reply).collect();
    let mut inject = Vec::new();
    let mut nth: BTreeMap<&str, u64> = BTreeMap::new();
    for t in &run.tool_calls {
        let n = nth.entry(&t.name).or_default();
        *n += 1;
        let mut rule = json!({"tool": t.name, "nth": *n});
        let Some(result) = recorded_result(t) else {
            continue;
        };
        match error_of(result) {
            Some((kind, message)) => {
                rule["error"] = kind.into();
                if let Some(m) = message {
                    rule["message"] = m.into();
                }
            }
            None => rule["response"] = result.clone(),
        }
        inject.push(rule);
    }
    for name in tools {
        inject.push(json!({
            "tool": name,
            "error": "not-found",
            "message": format!("not_recorded: the trace holds no result of this call of `{name}` (it never made the call, or did not record what it returned); give the world rows or a service for it and remove this rule"),
        }));
    }
    let clock = worldline_case::time::rfc3339(run.start_ns as i128);
    let system: Vec<&str> = run.model_calls[0]
        .input
        .iter()
        .filter(|m| m["role"] == "system")
        .filter_map(|m| m["content"].as_str())
        .collect();
    let mut description = format!(
        "Made from trace {} in {} (`worldline case from-trace`).",
        origin.trace_id.as_deref().unwrap_or(""),
        source
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    );
    if !system.is_empty() {
        description.push_str(&format!(
            "\nThe agent's system prompt:\n{}",
            system.join("\n")
        ));
    }
    let mut doc = json!({
        "world": format!("{WORLD}@v1"),
        "description": description,
        // Past TOML's largest integer, its digits (as `case from-run`
        // writes such a seed).
        "seed": match run.seed {
            Some(seed) if i64::try_from(seed).is_err() => Value::from(seed.to_string()),
            seed => Value::from(seed.unwrap_or(0)),
        },
        "task": task_of(run),
        "model": {"provider": "scripted", "responses": responses},
        "inject": inject,
        "origin": origin,
    });
    let rules = user_rules(run);
    if !rules.is_empty() {
        doc["user"] = json!({"played_by": "scripted", "rules": rules});
    }
    let mut table = match toml_of(&doc)? {
        toml::Value::Table(t) => t,
        _ => unreachable!("an object is a table"),
    };
    table.insert(
        "clock".into(),
        toml::Value::Datetime(
            clock
                .parse()
                .map_err(|e| anyhow::anyhow!("clock {clock}: {e}"))?,
        ),
    );
    Ok(format!(
        "# Made by `worldline case from-trace`: see README.md beside cases/ for what\n# was taken from the trace and what is left to write.\n{}",
        toml::to_string(&table)?
    ))
}

fn readme(run: &Run, id: &str, name: &str, source: &Path, tools: &[String]) -> String {
    format!(
        "# Case {name}, from trace {id}\n\n\
Made by `worldline case from-trace {}`.\n\n\
## Taken from the trace\n\n\
- The task: the first model call's user message (`task` in `cases/{name}.toml`).\n\
- The model's answers, in order ({} calls), as `[model] responses`.\n\
- The tools ({}), with the parameters the agent declared where the trace has them, in `worlds/{WORLD}/v1/world.toml`.\n\
- The tool results the trace recorded ({}), pinned in order as `[[inject]]` rules (`tool`, `nth`, `response`).\n\
- The clock: the trace's first span.\n\
- The seed: {}.\n\
{}{}- `[origin]`: the trace id and the SHA-256 of the trace file.\n\
- Read as: {}.\n\n\
## Left to write\n\n\
- Expectations: `[expect]` (the case passes whenever the agent completes).\n\
- State: the world has no tables. Calls the trace holds no result of (it never made them, or did not record what they returned) are answered with a `not-found` error whose message starts `not_recorded`; give the world tables and rows (or a `[service]`) and remove the `not_recorded` rule of a tool to have the world answer it.\n\
- Values the trace held as null are left out (TOML has no null).\n{}{}",
        source.display(),
        run.model_calls.len(),
        if tools.is_empty() {
            "none".to_string()
        } else {
            tools.join(", ")
        },
        match (pinned(run), run.tool_calls.len()) {
            (p, n) if p == n => format!("{n} calls"),
            (p, n) => format!(
                "{p} of its {n} tool calls; a call whose result it did not record is answered by the world, here its tool's `not_recorded` rule"
            ),
        },
        match run.seed {
            Some(seed) => format!("{seed}, the `worldline.seed` of the trace's root span"),
            None => "0 (the trace carries no `worldline.seed`)".to_string(),
        },
        match user_rules(run).len() {
            0 => String::new(),
            n => format!(
                "- The simulated user's turns ({n}), each a `[[user.rules]]` rule of a scripted `[user]` (`turn`, the `calls` it made of its own tools before it answered, then `reply`, or `end` and `satisfied`).\n"
            ),
        },
        user_tools_line(run),
        run.forms.join(", "),
        undefined(run, tools),
        several_choices(run),
    )
}

/// The README line for the simulated user's own tools.
fn user_tools_line(run: &Run) -> String {
    let names = user_tool_names(run);
    if names.is_empty() {
        return String::new();
    }
    format!(
        "- The simulated user's own tools ({}), as `[[user_tools]]` of the world, each answering `{{}}`: the trace does not say what they take or change, and a scripted user reads none of their answers (their recorded results are in the trace only); give them tables to have `[expect]` check what they change.\n",
        names.join(", ")
    )
}

/// The README line for model calls answered with several choices.
fn several_choices(run: &Run) -> String {
    let calls: Vec<String> = (run.model_calls.iter().enumerate())
        .filter(|(_, c)| c.choices > 1)
        .map(|(i, c)| format!("call {} ({} choices)", i + 1, c.choices))
        .collect();
    if calls.is_empty() {
        return String::new();
    }
    format!(
        "- Model calls answered with several choices (`n` > 1): {}. Each is scripted by its first choice, which a scripted model gives each of the `n` choices a request asks for; the other choices are in the trace only.\n",
        calls.join(", ")
    )
}

/// The README line for tools the trace names but does not define.
fn undefined(run: &Run, tools: &[String]) -> String {
    let names: Vec<&str> = tools
        .iter()
        .filter(|t| !run.tools.contains_key(*t))
        .map(String::as_str)
        .collect();
    if names.is_empty() {
        return String::new();
    }
    format!(
        "- Parameters of the tools with no definition in the trace: {} (their `params` are `{{ type = \"object\" }}`; the instrumentation did not record `gen_ai.tool.definitions`).\n",
        names.join(", ")
    )
}
