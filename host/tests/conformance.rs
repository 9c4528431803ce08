//! The conformance matrix: one scenario (`tests/conformance/incident.toml`:
//! read the alert, list deploys twice because the first list is stale, roll
//! D-42 back, add a note the host asks approval for first, a denied close)
//! worked by every agent path the
//! project runs, and read by every reader of runs. Each path's run must
//! give the same observable facts to each reader: the case's
//! `[[expect.calls]]` counts (denied, by args) and gold grading, `history
//! --json` (each call typed, in order, and the approval), `export --format
//! trajectories` (messages, tool calls and results, reward, the approval),
//! `otel` (one `execute_tool` span per tool call, one `chat` span per model
//! call, one `approval` span), the UI's run page
//! (each call named), `case from-run` (the stale answer and the denial
//! carried as `[[inject]]` rules),
//! `fork --respond` at a tool call (and at a model call where there is one),
//! `replay` (and of a copy whose grade is forged: diverged at its grade),
//! `verify`, `diff` against the first path's run, and `rerun` (its replay
//! `identical`).
//!
//! A new agent path or a new reader joins this matrix (docs/architecture.md,
//! "Every path, every reader").

use crate::common;
use crate::ui_support::Server;

use common::*;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tool calls every path makes, in order.
pub(crate) const CALLS: [&str; 6] = [
    "get_alert",
    "list_deploys",
    "list_deploys",
    "rollback_deploy",
    "add_incident_note",
    "close_ticket",
];

pub(crate) fn scenario() -> PathBuf {
    tests_dir().join("conformance/incident.toml")
}

pub(crate) fn script(name: &str) -> PathBuf {
    tests_dir().join("conformance").join(name)
}

/// One way an agent reaches the world.
struct AgentPath {
    name: &'static str,
    /// Whether the agent asks a model (the scripted one): an outside MCP
    /// client is the agent itself.
    model: bool,
    /// How `run RUN` is repeated: the arguments after the case.
    agent: fn() -> Vec<std::ffi::OsString>,
}

fn component(wasm: PathBuf) -> Vec<std::ffi::OsString> {
    vec!["--agent".into(), wasm.into()]
}

fn native(script: PathBuf) -> Vec<std::ffi::OsString> {
    vec![
        "--exec".into(),
        "--".into(),
        native_python().into(),
        script.into(),
    ]
}

const PATHS: &[AgentPath] = &[
    AgentPath {
        name: "rust component (guest SDK)",
        model: true,
        agent: || component(guest("model-agent")),
    },
    AgentPath {
        name: "python component (urllib: OpenAI API, MCP)",
        model: true,
        agent: || component(python_guest("examples/python-http-agent/agent.py")),
    },
    AgentPath {
        name: "python component (guest SDK)",
        model: true,
        agent: || component(python_guest("examples/python-model-agent/agent.py")),
    },
    AgentPath {
        name: "typescript component (guest SDK)",
        model: true,
        agent: || component(js_guest("examples/ts-model-agent/agent.ts")),
    },
    AgentPath {
        name: "typescript component (official openai + MCP packages)",
        model: true,
        agent: || component(js_guest("examples/js-openai-agent/agent.ts")),
    },
    AgentPath {
        name: "typescript component (OpenAI Agents SDK, @openai/agents + MCP client)",
        model: true,
        agent: || component(js_guest("examples/js-agents-sdk-agent/agent.ts")),
    },
    AgentPath {
        name: "native, MCP over HTTP on the loopback server",
        model: true,
        agent: || native(workspace_root().join("examples/native-agents/openai_mcp_agent.py")),
    },
    AgentPath {
        name: "native, LangGraph over the loopback server",
        model: true,
        agent: || native(workspace_root().join("examples/native-agents/langgraph_agent.py")),
    },
    AgentPath {
        name: "native, OpenAI Agents SDK over MCP on the loopback server",
        model: true,
        agent: || native(workspace_root().join("examples/native-agents/agents_sdk_agent.py")),
    },
    AgentPath {
        name: "native, REST through the proxy",
        model: true,
        agent: || native(script("rest_agent.py")),
    },
];

/// `worldline mcp` over stdio, driven by a real MCP client: the run's id.
pub(crate) fn mcp_stdio(store: &Path) -> String {
    let before = run_ids(store);
    let bin = env!("CARGO_BIN_EXE_worldline");
    let out = Command::new(native_python())
        .arg(script("mcp_client.py"))
        .args(["stdio", bin, "mcp"])
        .arg(scenario())
        .arg("--worlds")
        .arg(workspace_root().join("worlds"))
        .args(["--store".as_ref(), store.as_os_str()])
        .env("WORLDLINE_STORE_CACHE", store_cache())
        .output()
        .expect("the MCP client runs");
    assert!(out.status.success(), "the MCP client failed: {out:?}");
    new_run(store, &before)
}

/// `worldline mcp --http`, driven by a real MCP client: the run's id.
fn mcp_http(store: &Path) -> String {
    let before = run_ids(store);
    let (mut server, url) = common::native::mcp_http_server(store, &scenario());
    let out = Command::new(native_python())
        .arg(script("mcp_client.py"))
        .args(["http", url.as_str()])
        .output()
        .expect("the MCP client runs");
    assert!(out.status.success(), "the MCP client failed: {out:?}");
    // The client's DELETE ended the session: the server grades and exits.
    let status = server.wait().expect("the server exits");
    assert!(status.code().is_some(), "{status:?}");
    new_run(store, &before)
}

/// The runs in `store`.
fn run_ids(store: &Path) -> Vec<String> {
    let runs = worldline(store, ["runs", "--json", "--limit", "100000"]);
    runs.expect_code(0);
    let list = runs.json().as_array().unwrap();
    list.iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect()
}

/// The one run in `store` that is not in `before`.
fn new_run(store: &Path, before: &[String]) -> String {
    let new: Vec<String> = run_ids(store)
        .into_iter()
        .filter(|r| !before.contains(r))
        .collect();
    assert_eq!(new.len(), 1, "{new:?}");
    new[0].clone()
}

/// `worldline ARGS` on `store`, which must exit `code`.
#[track_caller]
fn ok_at(store: &Path, code: i32, args: &[&dyn AsRef<OsStr>]) -> CliOutput {
    let out = wl(store, args);
    out.expect_code(code);
    out
}

/// Every reader, on one path's run.
fn read_all(path: &str, model: bool, store: &Path, run: &str, first: Option<&str>) {
    let at = |what: &str| format!("{path}: {what}");

    // The grade: [[expect.calls]] (denied, by args), gold, state.
    let runs = ok_at(store, 0, &[&"runs", &"--json", &"--limit", &"100000"]);
    let row = runs
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == run)
        .unwrap_or_else(|| panic!("{}: {runs}", at("not in runs")))
        .clone();
    assert_eq!(row["grade"], "passed", "{}\n{runs}", at("the grade"));

    // history --json: every call typed, in order, the denied one denied.
    let history = ok_at(store, 0, &[&"history", &run, &"--json"]);
    let events = history.json()["events"].as_array().unwrap().clone();
    let tools: Vec<&Value> = events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .collect();
    let named: Vec<String> = tools
        .iter()
        .map(|e| {
            e["summary"]
                .as_str()
                .unwrap()
                .split('(')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(named, CALLS, "{}", at("history's tool calls"));
    assert_eq!(tools[5]["effect"], "denied", "{}", at("the denied close"));
    assert_eq!(
        tools[1]["injected"]["action"],
        "stale",
        "{}",
        at("the stale list")
    );
    // The approval the host asked before the note, approved.
    let approvals: Vec<&Value> = events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/approval.request")
        .collect();
    assert_eq!(approvals.len(), 1, "{}", at("history's approval"));
    assert!(
        approvals[0]["summary"]
            .as_str()
            .unwrap()
            .ends_with("-> approved"),
        "{}: {}",
        at("history's approval"),
        approvals[0]
    );
    let models: Vec<&Value> = events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/model.complete")
        .collect();
    if model {
        assert_eq!(models.len(), 7, "{}", at("history's model calls"));
        for m in &models {
            assert!(
                m["summary"].as_str().unwrap().starts_with("[scripted]"),
                "{}: {m}",
                at("a model call")
            );
        }
    }
    for e in &events {
        let call = e["call"].as_str().unwrap();
        assert!(
            call.starts_with("wasi:")
                || call.starts_with("worldline:")
                || call.starts_with("native:"),
            "{}: {e}",
            at("an event's kind")
        );
    }

    // export --format trajectories: the conversation, the tool calls and
    // their results, the reward.
    let dir = temp_dir();
    let file = dir.path().join("t.jsonl");
    ok_at(
        store,
        0,
        &[
            &"export",
            &run,
            &"--format",
            &"trajectories",
            &"--output",
            &file,
        ],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let traj: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        traj["reward"].as_f64(),
        Some(1.0),
        "{}: {traj}",
        at("the trajectory's reward")
    );
    let messages = traj["messages"].as_array().unwrap();
    let calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        CALLS,
        "{}: {traj}",
        at("the trajectory's tool calls")
    );
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(
        results,
        CALLS.len(),
        "{}: {traj}",
        at("the trajectory's tool results")
    );
    let asked: Vec<(&Value, &Value, &Value)> = (traj["approvals"].as_array().into_iter())
        .flatten()
        .map(|a| (&a["details"]["tool"], &a["asked_by"], &a["decision"]))
        .collect();
    assert_eq!(
        asked,
        [(
            &Value::from("add_incident_note"),
            &Value::from("host"),
            &Value::from("approved")
        )],
        "{}: {traj}",
        at("the trajectory's approvals")
    );

    // otel: a span per tool call and per model call.
    let spans = dir.path().join("spans.pb");
    let otel = ok_at(store, 0, &[&"otel", &run, &"--output", &spans, &"--json"]);
    let bytes = std::fs::read(&spans).unwrap();
    // Spans by their `gen_ai.operation.name`, as the protobuf writes the
    // attribute (key, then an AnyValue holding the string).
    let operations = |op: &str| {
        let mut needle = b"gen_ai.operation.name".to_vec();
        needle.extend([0x12, op.len() as u8 + 2, 0x0a, op.len() as u8]);
        needle.extend(op.as_bytes());
        bytes.windows(needle.len()).filter(|w| *w == needle).count()
    };
    assert_eq!(
        operations("execute_tool"),
        CALLS.len(),
        "{}: {otel}",
        at("execute_tool spans")
    );
    assert_eq!(
        operations("chat"),
        if model { 7 } else { 0 },
        "{}: {otel}",
        at("chat spans")
    );
    let named = b"approval tool";
    assert_eq!(
        bytes.windows(named.len()).filter(|w| w == named).count(),
        1,
        "{}: {otel}",
        at("approval spans")
    );

    // The UI's run page names every call.
    let server = Server::start(store, &[]);
    let page = server.get(&format!("/run/{run}"));
    assert_eq!(page.status, 200, "{}", at("the UI's run page"));
    for tool in CALLS {
        assert!(
            page.body.contains(tool),
            "{}: no {tool}",
            at("the UI's run page")
        );
    }
    assert!(!page.body.contains("tool ?"), "{}", at("the UI's run page"));
    drop(server);

    // case from-run: the stale answer and the denial carried as rules.
    let case = dir.path().join("from-run.toml");
    let made = ok_at(
        store,
        0,
        &[&"case", &"from-run", &run, &"-o", &case, &"--json"],
    );
    assert_eq!(made.json()["injects"], 2, "{}: {made}", at("case from-run"));
    let doc: toml::Table = toml::from_str(&std::fs::read_to_string(&case).unwrap()).unwrap();
    let rules = doc["inject"].as_array().unwrap();
    let carried: Vec<(Option<&str>, Option<i64>)> = rules
        .iter()
        .map(|r| (r["tool"].as_str(), r["nth"].as_integer()))
        .collect();
    assert_eq!(
        carried,
        [
            (Some("list_deploys"), Some(1)),
            (Some("close_ticket"), Some(1))
        ],
        "{}",
        at("case from-run")
    );
    assert!(rules[0].get("stale").is_some(), "{}", at("case from-run"));
    assert_eq!(
        rules[1]["deny"].as_bool(),
        Some(true),
        "{}",
        at("case from-run")
    );

    // diff against the first path's run: the same world, the same calls.
    if let Some(first_run) = first {
        let diff = wl(store, &[&"diff", &first_run, &run, &"--json"]);
        assert!(diff.code == 0 || diff.code == 1, "{}: {diff}", at("diff"));
        // The same rows and files; only times may differ (a protocol's
        // own messages, an MCP `initialize`, move the virtual clock). The
        // check read `state`, a key `diff` does not write, and held
        // whatever the final states were.
        let d = &diff.json()["final_state_diff"];
        assert!(
            d.is_object(),
            "{}: {}",
            at("diff's final states"),
            diff.json()
        );
        // An RFC 3339 time in UTC, as the virtual clock writes it.
        let time = |v: &serde_json::Value| {
            v.as_str().is_some_and(|t| {
                let b = t.as_bytes();
                b.len() >= 20
                    && (b[4], b[7], b[10], b[13]) == (b'-', b'-', b'T', b':')
                    && t.ends_with('Z')
            })
        };
        let empty = |v: &serde_json::Value| v.as_object().is_none_or(|o| o.is_empty());
        assert!(empty(&d["files"]), "{}: {d}", at("diff's final files"));
        for (table, t) in d["tables"].as_object().into_iter().flatten() {
            assert!(
                empty(&t["added"]) && empty(&t["removed"]),
                "{}: {table}: {d}",
                at("diff's final rows")
            );
            for (key, fields) in t["changed"].as_object().into_iter().flatten() {
                for (field, change) in fields.as_object().into_iter().flatten() {
                    assert!(
                        time(&change["before"]) && time(&change["after"]),
                        "{}: {table}/{key}.{field}: {d}",
                        at("diff's final fields")
                    );
                }
            }
        }
    }

    // Every run replays identical, verifies and forks; an MCP session
    // too, its client's messages derived again from its events (decision
    // 0356).
    let replay = ok_at(store, 0, &[&"replay", &run, &"--json"]);
    assert_eq!(
        replay.json()["verdict"],
        "identical",
        "{}: {replay}",
        at("replay")
    );
    ok_at(store, 0, &[&"verify", &run]);
    // Its grade forged, the footer sealed again: the replay grades the
    // run again and diverges at the grade (decision 0424).
    let forged = temp_dir();
    let forged = forged.path().join("forged.jsonl");
    forge_grade(&bundle_in(store, run), &forged, |g| {
        g["passed"] = false.into();
        g["reward"] = 0.0.into();
    });
    let replay = ok_at(store, 1, &[&"replay", &forged, &"--json"]);
    assert_eq!(
        replay.json()["divergence"]["field"],
        "grade",
        "{}: {replay}",
        at("a forged grade's replay")
    );

    // fork --respond at the denied close: answered this time, so the
    // case's denied count fails.
    let close = tools[5]["seq"].as_u64().unwrap().to_string();
    let fork = wl(
        store,
        &[
            &"fork",
            &run,
            &"--at",
            &close,
            &"--respond",
            &r#"{"ok": {"id": "T-100", "status": "closed"}}"#,
            &"--json",
        ],
    );
    assert_eq!(fork.code, 1, "{}: {fork}", at("fork at a tool call"));
    assert_eq!(
        fork.json()["status"],
        "failed",
        "{}: {fork}",
        at("fork at a tool call")
    );
    if model {
        let first_model = models[0]["seq"].as_u64().unwrap().to_string();
        let answer = r#"{"ok": {"id": "f", "object": "chat.completion", "model": "forked", "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{\"cause_deploy\": \"none\"}"}}]}}"#;
        let fork = wl(
            store,
            &[
                &"fork",
                &run,
                &"--at",
                &first_model,
                &"--respond",
                &answer,
                &"--json",
            ],
        );
        assert_eq!(fork.code, 1, "{}: {fork}", at("fork at a model call"));
        let forked = fork.json()["run_id"].as_str().unwrap().to_string();
        let h = ok_at(store, 0, &[&"history", &forked, &"--json"]);
        let tool_calls = h.json()["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["call"] == "worldline:agent/tools.call")
            .count();
        assert_eq!(
            tool_calls,
            0,
            "{}: {h}",
            at("the fork at the first model call")
        );
    }
}

/// `rerun` of a path's run: with the same component and `--model fail`,
/// every model call is answered from the recording and the rerun passes;
/// a native run is rerun with the Rust component, whose requests differ
/// and go to the case's model. Either rerun replays `identical`.
fn rerun_of(path: &str, store: &Path, run: &str, agent: &[std::ffi::OsString]) {
    let at = |what: &str| format!("{path}: {what}");
    let same = agent[0] == "--agent";
    let (wasm, mode) = match same {
        true => (PathBuf::from(&agent[1]), "fail"),
        false => (guest("model-agent"), "recorded"),
    };
    let rerun = ok_at(
        store,
        0,
        &[
            &"rerun", &run, &"--agent", &wasm, &"--model", &mode, &"--json",
        ],
    );
    let bundle = read_bundle(&rerun.bundle());
    let providers: Vec<&str> = (bundle.events.iter())
        .filter(|e| e["call"] == "worldline:agent/model.complete")
        .map(|e| e["request"]["provider"].as_str().unwrap_or_default())
        .collect();
    assert!(
        !providers.is_empty(),
        "{}: {rerun}",
        at("the rerun's model calls")
    );
    if same {
        assert!(
            providers.iter().all(|p| *p == "recording"),
            "{}: {providers:?}",
            at("the rerun's answers")
        );
    }
    let id = rerun.json()["run_id"].as_str().unwrap().to_string();
    let replay = ok_at(store, 0, &[&"replay", &id, &"--json"]);
    assert_eq!(
        replay.json()["verdict"],
        "identical",
        "{}: {replay}",
        at("the rerun's replay")
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages, componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn every_agent_path_is_graded_replayed_exported_and_debugged_alike() {
    let store = temp_dir();
    let store = store.path();
    let mut first: Option<String> = None;
    for path in PATHS {
        let mut args: Vec<std::ffi::OsString> = vec!["run".into(), scenario().into()];
        args.extend([
            "--worlds".into(),
            workspace_root().join("worlds").into(),
            "--json".into(),
        ]);
        // The store before the agent: what follows `--exec --` is its command.
        args.extend(["--store".into(), store.into()]);
        args.extend((path.agent)());
        let out = worldline_raw(&args);
        assert_eq!(out.code, 0, "{}: the run must pass:\n{out}", path.name);
        let run = out.json()["run_id"].as_str().unwrap().to_string();
        read_all(path.name, path.model, store, &run, first.as_deref());
        rerun_of(path.name, store, &run, &(path.agent)());
        first.get_or_insert(run);
    }
    for (name, serve) in [
        ("worldline mcp over stdio", mcp_stdio as fn(&Path) -> String),
        ("worldline mcp over HTTP", mcp_http),
    ] {
        let run = serve(store);
        read_all(name, false, store, &run, first.as_deref());
    }
}
