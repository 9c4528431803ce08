//! The log's typed vocabulary (`log/call.rs`) against runs recorded before
//! it existed. `tests/recorded/<name>/run.json` is a `worldline export` of
//! a run made by the host of main a311351 (2026-11-25); beside it is what
//! that host printed for the run: `history.json` (`history --json
//! --full`), `otel.pb` (`otel -o FILE --content`, OTLP protobuf), `trajectories.jsonl`
//! (`export --format trajectories`) and `from-run.toml` (`case from-run`).
//! `tests/recorded/README.md` says how they were made.
//!
//! Each run must import, replay `identical`, and print the same things
//! now; each of its events must read as its kind and write back the JSON
//! it was read from.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use worldline_log::log::{Call, Kind, bundle};

/// The recorded runs' folders.
fn recorded() -> Vec<PathBuf> {
    let dirs: Vec<PathBuf> = files_with_suffix(&tests_dir().join("recorded"), "run.json")
        .into_iter()
        .map(|p| p.parent().unwrap().to_path_buf())
        .collect();
    assert!(dirs.len() >= 3, "recorded runs are missing: {dirs:?}");
    dirs
}

/// The run's bundle, from its export file (its chain checked).
fn bundle_of(dir: &Path) -> bundle::Bundle {
    let export: Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    let text = export["bundle"]
        .as_str()
        .expect("an export holds its bundle");
    bundle::parse(text.as_bytes(), &dir.join("run.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

#[test]
fn recorded_events_read_as_their_kinds_and_write_back_the_same_json() {
    let mut kinds = BTreeSet::new();
    let mut transports = BTreeSet::new();
    for dir in recorded() {
        for e in bundle_of(&dir).events {
            let at = format!("{} event {}", dir.display(), e.seq);
            let typed = Call::read_strict(&e.call, &e.request, &e.response)
                .unwrap_or_else(|why| panic!("{at}: {why}"));
            match Kind::of(&e.call) {
                Some(kind) => {
                    assert_eq!(typed.kind(), Some(kind), "{at}: read as {typed:?}");
                    kinds.insert(kind);
                }
                None => assert!(
                    matches!(typed, Call::Wasi { .. }),
                    "{at}: `{}` is neither a kind of the vocabulary nor a WASI call",
                    e.call
                ),
            }
            if let Some(t) = typed.transport() {
                transports.insert(t.api().to_string());
            }
            assert_eq!(
                serde_json::to_value(&typed).unwrap(),
                json!({"call": e.call, "request": e.request, "response": e.response}),
                "{at}"
            );
        }
    }
    for kind in [
        Kind::ToolsCall,
        Kind::ToolsSpecs,
        Kind::ModelComplete,
        Kind::UserSay,
        Kind::ApprovalRequest,
        Kind::TraceNote,
    ] {
        assert!(
            kinds.contains(&kind),
            "no recorded run has a {kind:?} event"
        );
    }
    assert!(
        transports.contains("mcp") && transports.contains("openai.chat"),
        "{transports:?}"
    );
}

/// `now` and `before` are equal; else the first event where they differ.
#[track_caller]
fn same(now: &Value, before: &Value, what: &str) {
    if now == before {
        return;
    }
    let (a, b) = (&now["events"], &before["events"]);
    let first = (0..a.as_array().map_or(0, Vec::len))
        .find(|&i| a[i] != b[i])
        .map_or_else(
            || "outside the events".to_string(),
            |i| format!("now {}\nbefore {}", a[i], b[i]),
        );
    panic!("{what} differs: {first}");
}

/// `worldline ARGS` on `store`, which must succeed.
fn ok(store: &Path, args: &[&dyn AsRef<std::ffi::OsStr>]) -> CliOutput {
    let out = wl(store, args);
    out.expect_code(0);
    out
}

fn text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An OTLP export's spans without their tool call ids and trace ids, and
/// their finish reasons as one text, and without a simulated user's turns
/// (`invoke_agent user` spans since 2026-12-06) and approvals (`approval
/// KIND` spans since 2026-12-07).
fn otel_without_call_ids(
    bytes: &[u8],
) -> opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    use prost::Message as _;
    let mut req =
        opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::decode(bytes)
            .expect("an OTLP export");
    for scope in (req.resource_spans.iter_mut()).flat_map(|r| &mut r.scope_spans) {
        scope.spans.retain(|s| {
            s.name != "invoke_agent user"
                && !s
                    .attributes
                    .iter()
                    .any(|kv| kv.key == "worldline.approval.kind")
        });
    }
    for span in (req.resource_spans.iter_mut())
        .flat_map(|r| &mut r.scope_spans)
        .flat_map(|s| &mut s.spans)
    {
        span.attributes.retain(|kv| kv.key != "gen_ai.tool.call.id");
        span.trace_id.clear();
        // The finish reasons as the one reason they were before.
        for kv in &mut span.attributes {
            if kv.key == "gen_ai.response.finish_reasons"
                && let Some(v) = kv.value.as_mut()
                && let Some(Value::ArrayValue(list)) = &v.value
            {
                v.value = list.values.first().and_then(|one| one.value.clone());
            }
        }
    }
    req
}

#[test]
fn recorded_runs_replay_identical_and_read_as_they_did() {
    for dir in recorded() {
        let store = temp_dir();
        let s = store.path();
        let imported = ok(s, &[&"import", &dir.join("run.json"), &"--json"]);
        let run = imported.json()["run_id"].as_str().unwrap().to_string();
        replays_identical(s, &run);

        // `run` is the bundle's path, which names the store.
        let mut history = ok(s, &[&"history", &run, &"--full", &"--json"])
            .json()
            .clone();
        let mut before: Value = serde_json::from_str(&text(&dir.join("history.json"))).unwrap();
        history["run"] = Value::Null;
        before["run"] = Value::Null;
        same(&history, &before, &format!("{}: history", dir.display()));

        let otel = s.join("otel.pb");
        ok(s, &[&"otel", &run, &"-o", &otel, &"--content"]);
        let (now, then) = (
            std::fs::read(&otel).unwrap(),
            std::fs::read(dir.join("otel.pb")).unwrap(),
        );
        // Since 2026-12-05 a tool span's `gen_ai.tool.call.id` is the id
        // the model gave the call, where a model asked for it (it was
        // `call-N`), a run's trace id derives from its run id too (runs
        // of the same events shared a trace), and finish reasons are a
        // list, since 2026-12-06 a simulated user's turns are spans, and
        // since 2026-12-07 approvals: without them, and the list as its
        // one reason, the spans are as they were.
        assert!(
            now == then || otel_without_call_ids(&now) == otel_without_call_ids(&then),
            "{}: otel differs",
            dir.display()
        );

        let trajectories = s.join("trajectories.jsonl");
        let args: [&dyn AsRef<std::ffi::OsStr>; 6] = [
            &"export",
            &run,
            &"--format",
            &"trajectories",
            &"-o",
            &trajectories,
        ];
        ok(s, &args);
        let read = |p: &Path| -> Value { serde_json::from_str(text(p).trim()).unwrap() };
        let (mut now, then) = (read(&trajectories), read(&dir.join("trajectories.jsonl")));
        // Since 2026-12-03 a run without model calls has its turns with a
        // simulated user among its messages: the recorded file has none,
        // and without them the line is as it was.
        let said = |m: &Value| {
            m["role"] == "user"
                || (m["role"] == "assistant"
                    && m["content"].is_string()
                    && m.get("tool_calls").is_none())
        };
        // Since 2026-12-07 the approvals are in `approvals` and, for a run
        // without model calls, the agent's among the messages (a call of
        // `approval_request` and its answer): without them the line is as
        // it was.
        let approvals = now.as_object_mut().unwrap().remove("approvals");
        let asked: Vec<Value> = (now["messages"].as_array().unwrap().iter())
            .filter(|m| m["tool_calls"][0]["function"]["name"] == "approval_request")
            .map(|m| m["tool_calls"][0]["id"].clone())
            .collect();
        now["messages"].as_array_mut().unwrap().retain(|m| {
            !asked.contains(&m["tool_calls"][0]["id"]) && !asked.contains(&m["tool_call_id"])
        });
        if dir.ends_with("support-approval") {
            assert!(approvals.is_some(), "{}: approvals", dir.display());
        }
        let before = now["messages"].as_array().unwrap().len();
        if !then["messages"].as_array().unwrap().iter().any(said) {
            now["messages"].as_array_mut().unwrap().retain(|m| !said(m));
        }
        assert_eq!(now, then, "{}: trajectories", dir.display());
        if now["messages"].as_array().unwrap().len() == before && approvals.is_none() {
            // Nothing taken out: the very text.
            let (now, then) = (text(&trajectories), text(&dir.join("trajectories.jsonl")));
            assert_eq!(now, then, "{}: trajectories", dir.display());
        }

        let case = s.join("from-run.toml");
        ok(s, &[&"case", &"from-run", &run, &"-o", &case]);
        assert_eq!(
            text(&case),
            text(&dir.join("from-run.toml")),
            "{}: case from-run",
            dir.display()
        );
    }
}
