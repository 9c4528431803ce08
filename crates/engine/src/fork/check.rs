//! Checks of a fork's edits against the run they apply to, before anything
//! runs: a response must fit the call it replaces, a state patch must name
//! a table, row and field of the world as it is before the fork point, and
//! a permission edit must match a tool of the world. The CLI (`fork`) and
//! the browser UI's fork form both build their edits here.
//!
//! Why edits are checked in the fork layer (was decision 0090): `fork::fork`
//! calls these checks too, so no caller can run an unchecked fork, and the CLI
//! and the UI refuse the same edits with the same words, which checks in each
//! caller would not guarantee.
//!
//! Why `--respond` has one shape at every tool and model call (was decision
//! 0125): `{"ok": value}` (a bare value is wrapped so) or `{"error": {"kind",
//! "message"}}`, and the notes the host recorded beside the original answer (a
//! service's reads and fuel, a model call's provider and usage) are neither
//! asked for nor accepted: the fork answered the call, and its event is marked
//! `fork-respond`. The shape check used to compare keys with the recorded
//! response, so every response at a service tool failed; asking for the notes
//! would make users copy internal records they cannot know for a call that
//! never ran.

use crate::grade::final_state;
use crate::replay::RecordedRun;
use serde_json::Value;
use worldline_case::error::InputError;
use worldline_case::error_kind::ErrorKind;
use worldline_case::path::kind_of;
use worldline_case::world::{FILE_PERMISSIONS, glob_match};
use worldline_log::log::Kind;
use worldline_log::log::bundle::Edit;
use worldline_log::log::call::Call;
use worldline_protocol::routes::Route;

/// A fork's edits as typed by a user: JSON text and `PATH=JSON` patches.
#[derive(Debug, Clone, Default)]
pub struct EditText {
    pub respond: Option<String>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub set: Vec<String>,
}

fn json_arg(flag: &str, text: &str) -> Result<Value, InputError> {
    // A key written twice in one object is refused, as a rows file's is
    // (serde_json kept the last: one of two answers was dropped unsaid).
    let value = worldline_case::world::one_field::from_str(text, true).map_err(|e| {
        // At most the first 200 characters of it (a 120 KB `--respond`
        // was echoed whole).
        let shown = worldline_case::shown::text(text);
        InputError::new(flag, format!("`{shown}` is not JSON: {e}"))
    })?;
    match worldline_case::wide_integer::find(text) {
        Some(wide) => Err(InputError::new(
            flag,
            format!("`{text}`: {}", wide.message()),
        )),
        None => Ok(value),
    }
}

impl EditText {
    /// Parse the edits (syntax only; [`check`] checks them against a run).
    pub fn parse(&self) -> Result<Vec<Edit>, InputError> {
        let mut edits = Vec::new();
        if let Some(r) = &self.respond {
            edits.push(Edit::Respond {
                response: json_arg("--respond", r)?,
            });
        }
        edits.extend(self.allow.iter().map(|t| Edit::Allow { tool: t.clone() }));
        edits.extend(self.deny.iter().map(|t| Edit::Deny { tool: t.clone() }));
        for s in &self.set {
            let (path, value) = s.split_once('=').ok_or_else(|| {
                InputError::new(
                    "--set",
                    format!("`{s}` is not PATH=JSON (for example tickets/T-1.status=\"open\")"),
                )
            })?;
            worldline_runtime::mediate::parse_patch(path)
                .map_err(|m| InputError::new("--set", m))?;
            edits.push(Edit::Set {
                path: path.to_string(),
                value: json_arg("--set", value)?,
            });
        }
        Ok(edits)
    }
}

/// One edit as the flag that makes it (`--set tickets/T-1.status="open"`).
pub fn describe(edit: &Edit) -> String {
    let c = worldline_case::canon::to_string;
    match edit {
        Edit::Respond { response } => format!("--respond {}", c(response)),
        Edit::Allow { tool } => format!("--allow {tool}"),
        Edit::Deny { tool } => format!("--deny {tool}"),
        Edit::Set { path, value } => format!("--set {path}={}", c(value)),
        Edit::Reseed { model_seed } => format!("--samples (model seed {model_seed})"),
    }
}

/// Check `edits` for a fork of `rec` at event `at`. Returns notes worth
/// telling the user (a patch that creates a row), or the first edit that
/// does not fit, naming its flag.
pub fn check(
    store: &worldline_store::store::StoreDir,
    rec: &RecordedRun,
    at: u64,
    edits: &[Edit],
) -> Result<Vec<String>, InputError> {
    let events = rec.events();
    if at > events.len() as u64 {
        return Err(InputError::new(
            "--at",
            format!(
                "{at} is past the run's end (it has {}; a fork is at {} at most, the end)",
                numbered(events.len()),
                events.len()
            ),
        ));
    }
    // A fork at the end of a run killed inside a call of a tool that may
    // write makes that call again: only `resume --resend-in-flight` does,
    // as asked and recorded (a fork did it unasked, and said nothing). A
    // --deny of that tool makes no call, and applies there, as a killed
    // run's end takes edits (a --respond replaces a recorded answer only).
    let denied =
        |tool: &str| (edits.iter()).any(|e| matches!(e, Edit::Deny { tool: d } if d == tool));
    if at == events.len() as u64
        && let Some(tool) = rec.bundle.in_flight.as_ref().and_then(|i| i.tool.as_ref())
        && !denied(tool)
    {
        return Err(InputError::new(
            "--at",
            format!(
                "{at} is where the run was killed inside a call of tool `{tool}`, which may write: a fork there calls it again, and its writes were not recorded. Fork at {} or earlier, deny it there (--deny {tool}), or `{}` to call it again",
                at.saturating_sub(1),
                super::again(store, &["resume", &rec.id, "--resend-in-flight"]),
            ),
        ));
    }
    let world = &rec.case.world;
    let before = final_state(&world.initial, &events[..at as usize]);
    let mut notes = Vec::new();
    // A finished run makes no call at its end: an edit there (recorded in
    // the fork's header) would never apply. A killed run's end is where
    // it goes on live, so an edit there applies to its next call.
    let past_end = |flag: &str| {
        (rec.bundle.footer.is_some() && at == events.len() as u64).then(|| {
            // A run of no events has no earlier event to give (it said
            // "give --at 0 or earlier" of --at 0).
            let instead = match at {
                0 => "it made no call at all, so an edit has nothing to apply to; fork a run that made the call".to_string(),
                _ => format!("give --at {} or earlier", at - 1),
            };
            InputError::new(
                flag,
                format!(
                    "event {at} is the end of a finished run ({}): it makes no call there for the edit to apply to; {instead}",
                    rec.bundle.footer.as_ref().map_or("", |f| f.status.as_str())
                ),
            )
        })
    };
    for edit in edits {
        if let Some(e) = match edit {
            Edit::Allow { .. } => past_end("--allow"),
            Edit::Deny { .. } => past_end("--deny"),
            Edit::Set { .. } => past_end("--set"),
            Edit::Respond { .. } | Edit::Reseed { .. } => None,
        } {
            return Err(e);
        }
        match edit {
            Edit::Respond { response } => {
                let Some(event) = events.get(at as usize) else {
                    return Err(InputError::new(
                        "--respond",
                        format!(
                            "needs a recorded event {at} to replace (the run has {} events)",
                            events.len()
                        ),
                    ));
                };
                let response = shape_response(&event.call, &event.response, response.clone());
                fits(&event.call, &event.response, &response).map_err(|m| {
                    InputError::new("--respond", format!("event {at} is `{}`: {m}", event.call))
                })?;
                unparsed_for_anthropic(event, &response).map_or(Ok(()), |m| {
                    Err(InputError::new("--respond", format!("event {at}: {m}")))
                })?;
            }
            Edit::Allow { tool } => {
                tool_exists("--allow", tool, world)?;
                allow_lifts(rec, at, edits, tool)?;
                notes.extend(still_denied(rec, tool));
            }
            Edit::Deny { tool } => tool_exists("--deny", tool, world)?,
            Edit::Set { path, value } => {
                if let Some(note) = patch_fits(&before, path, value, at)? {
                    notes.push(note);
                }
                notes.extend(written_over(events.get(at as usize), path, at));
            }
            Edit::Reseed { .. } => {}
        }
    }
    Ok(notes)
}

/// Why an answer cannot reach an agent that asked over Anthropic's
/// Messages API: a tool call whose arguments are no JSON object, which
/// Messages carries as the call's `input` (the agent got `{}` for it
/// without a word, where an OpenAI-format agent gets the text).
fn unparsed_for_anthropic(event: &worldline_log::log::Event, response: &Value) -> Option<String> {
    let Call::ModelComplete { request, .. } = event.typed() else {
        return None;
    };
    if request.transport?.api() != Route::AnthropicMessages.api() {
        return None;
    }
    let calls = response["ok"]["choices"][0]["message"]["tool_calls"].as_array()?;
    calls.iter().find_map(|c| {
        let args = c["function"]["arguments"].as_str()?;
        match serde_json::from_str::<Value>(args) {
            Ok(Value::Object(_)) => None,
            _ => Some(format!(
                "the agent asked over Anthropic's Messages API, which carries a tool call's input as a JSON object: the arguments of `{}` ({}) are not one; give them as a JSON object",
                c["function"]["name"].as_str().unwrap_or("?"),
                worldline_case::shown::text(args)
            )),
        }
    })
}

/// A note for `--set PATH` when the recorded event at the fork point
/// wrote the row PATH names: made again, its write lands after the patch
/// and may undo it (documented, and it was said nowhere).
fn written_over(event: Option<&worldline_log::log::Event>, path: &str, at: u64) -> Option<String> {
    let event = event?;
    let row = (event.writes.iter()).find_map(|w| match w {
        worldline_case::world::state::Write::Put { table, key, .. }
        | worldline_case::world::state::Write::Delete { table, key } => {
            let row = format!("{table}/{key}");
            let rest = path.strip_prefix(&row)?;
            (rest.is_empty() || rest.starts_with('.')).then_some(row)
        }
        worldline_case::world::state::Write::File { .. } => None,
    })?;
    Some(format!(
        "event {at} (`{}`) wrote {row} in the recording: if the fork's agent makes that call again, its write lands after the patch and may undo it; fork at {} to patch the row after it",
        event.call,
        at + 1
    ))
}

/// `--allow tool` must lift the denial of each tool it matches: a deny
/// rule of the case (or of an earlier fork point, or of this fork's
/// `--deny`) that it does not name exactly still wins over it, and the fork
/// would run as its parent did.
fn allow_lifts(rec: &RecordedRun, at: u64, edits: &[Edit], tool: &str) -> Result<(), InputError> {
    let mut permissions = rec.case.permissions.clone();
    let earlier = (rec.bundle.header.parent.iter())
        .flat_map(|p| p.fork_points())
        .filter(|p| p.event < at)
        .flat_map(|p| p.edits);
    for edit in earlier.chain(edits.iter().cloned()) {
        match edit {
            Edit::Allow { tool } => permissions.set(&tool, true),
            Edit::Deny { tool } => permissions.set(&tool, false),
            _ => {}
        }
    }
    let world = &rec.case.world;
    for t in world.tools.iter().filter(|t| glob_match(tool, &t.name)) {
        if let Some(rule) = permissions.deny.iter().find(|g| glob_match(g, &t.name)) {
            if rule == tool {
                let m = format!("`{tool}` is denied again by this fork's `--deny {rule}`");
                return Err(InputError::new("--allow", m));
            }
            return Err(InputError::new(
                "--allow",
                format!(
                    "`{tool}` would not lift the denial of `{}`: the deny rule `{rule}` still matches it, and a deny rule wins over an allow; give `--allow {rule}` to lift that rule",
                    t.name
                ),
            ));
        }
    }
    Ok(())
}

/// A note for `--allow tool` when a case's `[[inject]]` rule denies a tool
/// it matches: the rule still denies it (a permission is lifted, not a
/// fault), which a fork that changes nothing else would not show.
fn still_denied(rec: &RecordedRun, tool: &str) -> Option<String> {
    let world = &rec.case.world;
    let denied: Vec<&str> = (rec.case.inject.iter())
        .filter(|(rule, _)| rule.deny)
        .filter(|(rule, _)| {
            (world.tools.iter())
                .any(|t| glob_match(tool, &t.name) && glob_match(&rule.tool, &t.name))
        })
        .map(|(rule, _)| rule.tool.as_str())
        .collect();
    (!denied.is_empty()).then(|| {
        format!(
            "--allow {tool}: the case's [[inject]] rule for `{}` (deny = true) still denies the calls it matches: --allow lifts a permission, not an injected fault; to answer such a call, fork at it with --respond",
            denied.join("`, `")
        )
    })
}

fn tool_exists(
    flag: &str,
    tool: &str,
    world: &worldline_case::world::World,
) -> Result<(), InputError> {
    // A world file's permission is one too, as in a case's `[permissions]`
    // (`--deny files.read` was refused as no tool).
    let file_permission = FILE_PERMISSIONS.iter().any(|f| glob_match(tool, f));
    if file_permission || world.tools.iter().any(|t| glob_match(tool, &t.name)) {
        return Ok(());
    }
    let names: Vec<&str> = world.tools.iter().map(|t| t.name.as_str()).collect();
    Err(InputError::new(
        flag,
        format!(
            "`{tool}` matches no tool of world {} (its tools: {}) nor a world file's permission ({})",
            world.reference(),
            names.join(", "),
            FILE_PERMISSIONS.join(", ")
        ),
    ))
}

/// Whether `new` can stand for the recorded response `old` of `call`.
fn fits(call: &str, old: &Value, new: &Value) -> Result<(), String> {
    match Kind::of(call) {
        // Each typed as the agent is given it: an answer of another type
        // was recorded, then refused where the run wrote it (an
        // incomplete run left in the store, blamed on the store), or
        // shown as what the agent was not given (`{"approved": false}`
        // listed as approved, the agent denied).
        Some(Kind::UserSay) => {
            let turn = "a user turn's response is the reply as text, {\"reply\": \"text\"}, or {\"ended\": {\"reason\": \"text\", \"satisfied\": true|false}}";
            let ended_fits = |e: &Value| {
                e.as_object().is_some_and(|e| {
                    e.iter().all(|(k, v)| match k.as_str() {
                        "reason" => v.is_string(),
                        "satisfied" => v.is_boolean(),
                        _ => false,
                    })
                })
            };
            let fits = match new.as_object() {
                Some(m) if m.len() == 1 => match m.iter().next() {
                    Some((k, v)) if k == "reply" => v.is_string(),
                    Some((k, v)) if k == "ended" => ended_fits(v),
                    _ => false,
                },
                _ => false,
            };
            return fits.then_some(()).ok_or_else(|| turn.into());
        }
        Some(Kind::ApprovalRequest) => {
            let decision = "an approval's response is \"approved\" or \"denied\" (or {\"approved\": true} / {\"denied\": \"reason\"})";
            let fits = match new.as_object() {
                Some(m) if m.len() == 1 => {
                    m.get("approved") == Some(&Value::Bool(true))
                        || m.get("denied").is_some_and(Value::is_string)
                }
                _ => false,
            };
            return fits.then_some(()).ok_or_else(|| decision.into());
        }
        _ => {}
    }
    if is_result(old) {
        let Value::Object(m) = new else {
            return Err(format!(
                "its response is {{\"ok\": ...}} or {{\"error\": {{\"kind\", \"message\"}}}}, not {}",
                kind_of(new)
            ));
        };
        if m.len() != 1 || !(m.contains_key("ok") || m.contains_key("error")) {
            return Err("a response has exactly one of `ok` and `error`, and nothing else".into());
        }
        if let Some(err) = m.get("error") {
            let k = err.get("kind").and_then(Value::as_str);
            // An agent is given an error's kind and message and nothing
            // else, on every path: another key would be recorded in the
            // edit and change nothing.
            let other = err
                .as_object()
                .is_some_and(|e| e.keys().any(|k| k != "kind" && k != "message"));
            if k.is_none_or(|k| k.parse::<ErrorKind>().is_err())
                || !err["message"].is_string()
                || other
            {
                let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
                return Err(format!(
                    "an error is {{\"kind\": one of {}, \"message\": text}}, and nothing else",
                    kinds.join(", ")
                ));
            }
            return Ok(());
        }
        return match old.get("ok") {
            Some(was) if kind_of(was) != kind_of(&new["ok"]) => Err(format!(
                "the recorded `ok` value is {}, the new one is {}",
                kind_of(was),
                kind_of(&new["ok"])
            )),
            // A model call's answer is a chat completion: one without a
            // message reached the agent as an empty answer, or trapped
            // an SDK (`choices is undefined`).
            Some(_) if Kind::of(call) == Some(Kind::ModelComplete)
                && !new["ok"]["choices"][0]["message"].is_object() =>
            {
                Err("a model call's `ok` is a chat completion, {\"choices\": [{\"message\": {\"role\": \"assistant\", \"content\": ...}}]} (`worldline show RUN --at N --json` shows the recorded one); a case's reply shape ({\"content\": ...}) is not one".into())
            }
            _ => Ok(()),
        };
    }
    // Random bytes are the bytes asked for, as hex: other text ended the
    // guest (`exit(1)` in CPython's entropy read) instead of exit 2 here.
    if call.ends_with("random-bytes") {
        let digits = old.as_str().map_or(0, str::len);
        let fits = new
            .as_str()
            .is_some_and(|s| s.len() == digits && s.bytes().all(|b| b.is_ascii_hexdigit()));
        if !fits {
            return Err(format!(
                "its response is the {} bytes asked for, as {digits} hex digits",
                digits / 2
            ));
        }
    }
    same_shape(old, new, "")
        .map_err(|m| format!("{m} (a `{call}` response has the shape of the recorded one)"))
}

/// What the host records beside a result about how it was answered: a
/// world service's reads and fuel (`service`), a model call's provider and
/// usage (`model_call`). A fork's response is answered by the fork, so it
/// carries none of them.
const NOTES: [&str; 2] = ["service", "model_call"];

/// A tool or model call's response: `{"ok": ...}` or `{"error": ...}`, and
/// what the host noted beside it.
fn is_result(v: &Value) -> bool {
    matches!(v, Value::Object(m)
        if (m.contains_key("ok") != m.contains_key("error"))
            && m.keys().all(|k| k == "ok" || k == "error" || NOTES.contains(&k.as_str())))
}

/// A tool or model call's response is `{"ok": ...}` or `{"error": ...}`;
/// a bare value given for one (`recorded` is the response it replaces) is
/// taken as the `ok` value.
pub fn shape_response(call: &str, recorded: &Value, response: Value) -> Value {
    let response = match worldline_runtime::mediate::conversation::shape_response(call, response) {
        Ok(shaped) => return shaped,
        Err(response) => response,
    };
    let wrapped = is_result(recorded)
        && !matches!(&response, Value::Object(m) if m.contains_key("ok") || m.contains_key("error"));
    if wrapped {
        serde_json::json!({ "ok": response })
    } else {
        response
    }
}

/// Same JSON types and object keys, all the way down (array elements
/// against the recorded first element).
fn same_shape(old: &Value, new: &Value, at: &str) -> Result<(), String> {
    let here = if at.is_empty() { "the response" } else { at };
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let (ka, kb): (Vec<&String>, Vec<&String>) = (a.keys().collect(), b.keys().collect());
            if ka != kb {
                return Err(format!(
                    "{here} has keys {:?}, the recorded one {:?}",
                    kb, ka
                ));
            }
            for (k, v) in a {
                same_shape(v, &b[k], &format!("{at}.{k}"))?;
            }
            Ok(())
        }
        // Each element has the shape of one the recorded array holds, the
        // one at its place first: a list whose elements differ (a tool
        // list, each tool's `required` or not) was held to its first
        // element's, and its own recorded answer refused.
        (Value::Array(a), Value::Array(b)) if !a.is_empty() => {
            b.iter().enumerate().try_for_each(|(i, y)| {
                let at = format!("{at}[{i}]");
                let own = a.get(i).unwrap_or(&a[a.len() - 1]);
                match same_shape(own, y, &at) {
                    Ok(()) => Ok(()),
                    Err(_) if a.iter().any(|x| same_shape(x, y, &at).is_ok()) => Ok(()),
                    Err(e) => Err(e),
                }
            })
        }
        (Value::Array(_), Value::Array(_)) => Ok(()),
        // A whole number where one is recorded (a clock's nanoseconds are
        // a u64: -5 and 1.5 were recorded as its answer).
        (Value::Number(a), Value::Number(b)) if a.is_u64() && !b.is_u64() => Err(format!(
            "{here} is {b}, the recorded one a whole number from 0 to {}",
            u64::MAX
        )),
        (Value::Number(a), Value::Number(b)) if a.is_i64() && !(b.is_i64() || b.is_u64()) => {
            Err(format!("{here} is {b}, the recorded one a whole number"))
        }
        _ if kind_of(old) == kind_of(new) => Ok(()),
        _ => Err(format!(
            "{here} is {}, the recorded one {}",
            kind_of(new),
            kind_of(old)
        )),
    }
}

/// Check a `table/key[.field]` patch against the state before event `at`;
/// a note when it creates a row.
fn patch_fits(
    before: &worldline_case::world::state::State,
    path: &str,
    value: &Value,
    at: u64,
) -> Result<Option<String>, InputError> {
    let err = |m: String| InputError::new("--set", format!("`{path}`: {m}"));
    let (table, key, field) =
        worldline_runtime::mediate::parse_patch(path).map_err(|m| InputError::new("--set", m))?;
    let Some(t) = before.tables.get(table) else {
        let names: Vec<&str> = before.tables.keys().map(String::as_str).collect();
        return Err(err(format!(
            "the world has no table `{table}` (its tables: {})",
            names.join(", ")
        )));
    };
    let row = t.rows.get(key);
    if key.is_empty() {
        return Err(err("the row's key is empty".into()));
    }
    // A quoted key without dots is read with its quotes (only a key with
    // dots of its own is quoted, as old runs' patches were read).
    if let Some(bare) = (key.strip_prefix('"').and_then(|k| k.strip_suffix('"')))
        .filter(|k| row.is_none() && !k.is_empty() && t.rows.contains_key(*k))
    {
        let rest = path.split_once('/').map_or("", |(_, r)| &r[key.len()..]);
        return Err(err(format!(
            "table `{table}` has no row `{key}` (quotes and all): quotes mark a key with dots of its own, and `{bare}` has none; write `{table}/{bare}{rest}`"
        )));
    }
    match field {
        None => {
            let Value::Object(m) = value else {
                return Err(err(format!(
                    "a row is a JSON object, not {}",
                    kind_of(value)
                )));
            };
            match m.get(&t.key) {
                Some(k) if k.as_str().map_or_else(|| k.to_string(), str::to_string) != key => {
                    return Err(err(format!(
                        "the row's key field `{}` is {k}, not `{key}`",
                        t.key
                    )));
                }
                Some(_) => {}
                // A row without its key field would be stored keyed
                // `key` with the field null: a row keeps its key.
                None => {
                    return Err(err(format!(
                        "the row has no key field `{0}`: give it (`\"{0}\": {1}`), as every row of `{table}` has",
                        t.key,
                        serde_json::Value::from(key)
                    )));
                }
            }
            Ok(row
                .is_none()
                .then(|| format!("--set {path}: creates row `{key}` in table `{table}` (it does not exist before event {at})")))
        }
        Some(field) => {
            let Some(row) = row else {
                // A key with dots of its own was read up to its first dot.
                let written = path.split_once('/').map_or("", |(_, r)| r);
                if let Some(dotted) = (t.rows.keys()).find(|k| {
                    k.contains('.')
                        && written
                            .strip_prefix(k.as_str())
                            .is_some_and(|r| r.is_empty() || r.starts_with('.'))
                }) {
                    let field = &written[dotted.len()..];
                    return Err(err(format!(
                        "table `{table}` has no row `{key}`; its row `{dotted}` has dots of its own: quote it (`{table}/\"{dotted}\"{field}`)"
                    )));
                }
                let quote = match written.contains('.') && !written.starts_with('"') {
                    true => format!(
                        ", quoting a key with dots of its own (`{table}/\"{written}\"={{...}}`)"
                    ),
                    false => String::new(),
                };
                return Err(err(format!(
                    "table `{table}` has no row `{key}` before event {at}; set the whole row (`{table}/{key}={{...}}`) to create it{quote}"
                )));
            };
            let Some(old) = field.get(row) else {
                let fields: Vec<&str> = row
                    .as_object()
                    .map(|m| m.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return Err(err(format!(
                    "row `{key}` of `{table}` has no such field (its fields: {})",
                    fields.join(", ")
                )));
            };
            // The path names the row's key field itself (the same value
            // in the row): a row keeps its key, as a whole row set does.
            if row.get(&t.key).is_some_and(|k| std::ptr::eq(k, old)) && old != value {
                return Err(err(format!(
                    "`{}` is the key field of `{table}`, and a row keeps its key; set a whole row (`{table}/NEW_KEY={{...}}`) to add one under another key",
                    t.key
                )));
            }
            Ok(None)
        }
    }
}

/// How many events a run has and their numbers, for a message naming an
/// event it does not have: `3 events, numbered 0 to 2`, `no events` (a
/// run of none said it had "0 events, numbered from 0").
pub fn numbered(count: usize) -> String {
    match count {
        0 => "no events".into(),
        1 => "1 event, numbered 0".into(),
        n => format!("{n} events, numbered 0 to {}", n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A run's events are said with their numbers, a run of none as
    /// having none.
    #[test]
    fn a_run_s_events_are_said_with_their_numbers() {
        assert_eq!(numbered(0), "no events");
        assert_eq!(numbered(1), "1 event, numbered 0");
        assert_eq!(numbered(402), "402 events, numbered 0 to 401");
    }

    #[test]
    fn results_keep_ok_or_error_and_the_ok_type() {
        let call = Kind::ToolsCall.name();
        let old = json!({"ok": {"deploys": []}});
        assert!(fits(call, &old, &json!({"ok": {"deploys": [1]}})).is_ok());
        assert!(
            fits(
                call,
                &old,
                &json!({"error": {"kind": "timeout", "message": "x"}})
            )
            .is_ok()
        );
        let e = fits(
            call,
            &old,
            &json!({"error": {"kind": "late", "message": "x"}}),
        )
        .unwrap_err();
        assert!(e.contains("not-found"), "{e}");
        let e = fits(call, &old, &json!({"ok": [1]})).unwrap_err();
        assert!(e.contains("an object") && e.contains("an array"), "{e}");
        assert!(fits(call, &old, &json!({"ok": 1, "error": 2})).is_err());
        // Once recorded in the edit, and no agent was given it.
        let extra = json!({"error": {"kind": "timeout", "message": "m", "extra": 5}});
        assert!(
            fits(call, &old, &extra)
                .unwrap_err()
                .contains("nothing else")
        );
        // A service tool's or a model call's notes are not asked for.
        for note in NOTES {
            let old = json!({"ok": {"n": 1}, note: {"fuel": 3}});
            assert!(fits(call, &old, &json!({"ok": {"n": 2}})).is_ok(), "{note}");
            assert!(
                fits(
                    call,
                    &old,
                    &json!({"error": {"kind": "failed", "message": "x"}})
                )
                .is_ok()
            );
            assert_eq!(
                shape_response(call, &old, json!({"n": 5})),
                json!({"ok": {"n": 5}})
            );
            assert!(fits(call, &old, &json!({"ok": {"n": 2}, note: {}})).is_err());
        }
        // A model call's answer is a chat completion (any object was
        // taken, and the agent got an empty answer, or an SDK trapped).
        let model = Kind::ModelComplete.name();
        let old = json!({"ok": {"choices": [{"message": {"role": "assistant", "content": "a"}}]}});
        let said = json!({"ok": {"choices": [{"message": {"role": "assistant", "content": "b"}}]}});
        assert!(fits(model, &old, &said).is_ok());
        for bare in [
            json!({"ok": {"foo": 1}}),
            json!({"ok": {"content": "hello"}}),
        ] {
            let e = fits(model, &old, &bare).unwrap_err();
            assert!(e.contains("chat completion"), "{e}");
        }
    }

    #[test]
    fn random_bytes_and_whole_numbers_keep_what_the_call_returns() {
        let bytes = "wasi:random/random.get-random-bytes";
        for bad in [json!("zz"), json!("00"), json!("0a0b0c"), json!(7)] {
            assert!(fits(bytes, &json!("00ff"), &bad).is_err(), "{bad}");
        }
        assert!(fits(bytes, &json!("00ff"), &json!("0aFb")).is_ok());
        let now = "wasi:clocks/monotonic-clock.now";
        for bad in [json!(-5), json!(1.5)] {
            let said = fits(now, &json!(5), &bad).unwrap_err();
            assert!(said.contains("a whole number from 0"), "{said}");
        }
        assert!(fits(now, &json!(5), &json!(7)).is_ok());
    }

    #[test]
    fn other_calls_keep_the_recorded_shape() {
        let call = "wasi:clocks/wall-clock.now";
        let old = json!({"seconds": 1, "nanoseconds": 2});
        assert!(fits(call, &old, &json!({"seconds": 5, "nanoseconds": 0})).is_ok());
        let e = fits(call, &old, &json!({"ok": {"deploys": []}})).unwrap_err();
        assert!(e.contains("keys") && e.contains(call), "{e}");
        let e = fits(call, &old, &json!({"seconds": "5", "nanoseconds": 0})).unwrap_err();
        assert!(e.contains(".seconds is a string"), "{e}");
        assert!(fits("x", &json!([[1]]), &json!([[2], [3]])).is_ok());
        assert!(fits("x", &json!([[1]]), &json!([[2], ["a"]])).is_err());
    }

    /// A list whose elements differ (a tool list, `required` on one tool
    /// and not another) fits as recorded, less one, or reordered: each
    /// element was held to the first's keys, and the recorded answer
    /// itself was refused. An element of no recorded shape still is.
    #[test]
    fn a_list_of_unlike_elements_keeps_each_element_s_shape() {
        let call = "x";
        let one = json!({"name": "a", "params": {"type": "object", "required": ["id"]}});
        let two = json!({"name": "b", "params": {"type": "object"}});
        let recorded = json!([one, two]);
        assert!(fits(call, &recorded, &recorded).is_ok());
        assert!(fits(call, &recorded, &json!([two])).is_ok());
        assert!(fits(call, &recorded, &json!([two, one])).is_ok());
        let e = fits(call, &recorded, &json!([{"name": "c"}])).unwrap_err();
        assert!(e.contains("[0] has keys"), "{e}");
    }

    #[test]
    fn a_field_set_keeps_the_row_s_key() {
        let before: worldline_case::world::state::State = serde_json::from_value(json!({
            "tables": {"tickets": {"key": "id", "rows": {
                "T-1": {"id": "T-1", "status": "open", "meta": {"id": "x"}}
            }}},
            "files": {}
        }))
        .unwrap();
        let e = patch_fits(&before, "tickets/T-1.id", &json!("T-9"), 2).unwrap_err();
        assert!(
            e.to_string().contains("`id` is the key field of `tickets`"),
            "{e}"
        );
        // The same key, another field, and a field of the same name
        // deeper in the row are edits like any other.
        assert!(patch_fits(&before, "tickets/T-1.id", &json!("T-1"), 2).is_ok());
        assert!(patch_fits(&before, "tickets/T-1.status", &json!("closed"), 2).is_ok());
        assert!(patch_fits(&before, "tickets/T-1.meta.id", &json!("y"), 2).is_ok());
    }

    /// `tickets/"T-1".status` names a row `"T-1"`, quotes and all (only
    /// a key with dots is quoted): the error said to quote it again.
    #[test]
    fn a_quoted_key_without_dots_is_told_to_lose_its_quotes() {
        let before: worldline_case::world::state::State = serde_json::from_value(json!({
            "tables": {"tickets": {"key": "id", "rows": {"T-1": {"id": "T-1", "status": "open"}}}},
            "files": {}
        }))
        .unwrap();
        let e = patch_fits(&before, "tickets/\"T-1\".status", &json!("x"), 2).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("`T-1` has none; write `tickets/T-1.status`"),
            "{e}"
        );
        let e = patch_fits(&before, "tickets/\"T-9\".status", &json!("x"), 2).unwrap_err();
        assert!(
            !e.to_string().contains("quoting"),
            "no quotes inside quotes: {e}"
        );
    }

    /// A row keyed with dots of its own is named quoted, and the error
    /// of the unquoted path says so (it said to create row `T`); a whole
    /// row without its key field, or with an empty key, is refused (it was
    /// stored with the key field null, or keyed "").
    #[test]
    fn a_dotted_key_is_quoted_and_a_whole_row_keeps_its_key() {
        let before: worldline_case::world::state::State = serde_json::from_value(json!({
            "tables": {"tickets": {"key": "id", "rows": {
                "T.7": {"id": "T.7", "status": "open"}
            }}},
            "files": {}
        }))
        .unwrap();
        let e = patch_fits(&before, "tickets/T.7.status", &json!("closed"), 2).unwrap_err();
        assert!(
            e.to_string().ends_with(
                "table `tickets` has no row `T`; its row `T.7` has dots of its own: quote it (`tickets/\"T.7\".status`)"
            ),
            "{e}"
        );
        assert!(patch_fits(&before, "tickets/\"T.7\".status", &json!("closed"), 2).is_ok());
        let e = patch_fits(&before, "tickets/T.8.status", &json!("x"), 2).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("quoting a key with dots of its own (`tickets/\"T.8.status\"={...}`)"),
            "{e}"
        );
        let e = patch_fits(&before, "tickets/T-2", &json!({"status": "open"}), 2).unwrap_err();
        assert!(
            e.to_string().ends_with("the row has no key field `id`: give it (`\"id\": \"T-2\"`), as every row of `tickets` has"),
            "{e}"
        );
        let e = patch_fits(&before, "tickets/", &json!({"id": ""}), 2).unwrap_err();
        assert!(e.to_string().ends_with("the row's key is empty"), "{e}");
        let note = patch_fits(&before, "tickets/\"T.9\"", &json!({"id": "T.9"}), 2).unwrap();
        assert!(note.unwrap().contains("creates row `T.9`"));
    }
}
