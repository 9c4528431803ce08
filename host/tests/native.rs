//! Agents outside the sandbox: `worldline mcp` serves a case's world to a
//! real MCP client (the official `mcp` Python package) over stdio and over
//! Streamable HTTP. Each `tools/call` is the same mediated, recorded tool
//! call a WebAssembly agent makes, with its transport noted; the run ends
//! and is graded when the client disconnects or on SIGTERM.

use crate::common;

use common::native::mcp_http_server as http_server;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const TOOL_CALL: &str = "worldline:agent/tools.call";

/// The incident case without an output check (an MCP client returns none).
const ROLLBACK: &str = r#"world = "incident@v4"
seed = 7
clock = 2026-03-01T12:05:00Z
task = { alert = "ALERT-7", ticket = "T-100" }

[expect]
unchanged = ["alerts", "services", "deploys/D-41", "tickets/T-99"]

[[expect.state]]
table = "deploys"
key = "D-42"
field = "status"
equals = "rolled_back"

[[expect.state]]
table = "tickets"
key = "T-100"
field = "status"
equals = "closed"
"#;

fn client() -> PathBuf {
    tests_dir().join("native/mcp_client.py")
}

fn rollback_case(dir: &Path) -> PathBuf {
    write_case(dir, "rollback", ROLLBACK)
}

fn worlds() -> PathBuf {
    workspace_root().join("worlds")
}

/// The one JSON line the client printed.
fn client_report(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "the client printed no report ({e}):\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The single bundle in `store`.
fn only_bundle(store: &Path) -> PathBuf {
    let bundles = files_with_suffix(&store.join("runs"), ".jsonl");
    assert_eq!(bundles.len(), 1, "expected one bundle: {bundles:?}");
    bundles[0].clone()
}

/// What every MCP session must have done to the world and the log.
fn check_session(report: &Value, bundle: &Path, transport: &str) {
    assert!(
        report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "rollback_deploy"),
        "{report}"
    );
    let results = report["results"].as_array().unwrap();
    assert_eq!(results[2]["isError"], false, "{report}");
    assert!(
        results[2]["text"].as_str().unwrap().contains("rolled_back"),
        "{report}"
    );
    let unknown = &results[5];
    assert_eq!(unknown["isError"], true, "{report}");
    let b = read_bundle(bundle);
    assert_eq!(b.header["isolation"], "native");
    assert_eq!(b.header["native"]["transport"], transport);
    let calls: Vec<&Value> = b.events.iter().filter(|e| e["call"] == TOOL_CALL).collect();
    assert_eq!(calls.len(), 6, "one recorded tool call per tools/call");
    assert_eq!(calls[2]["request"]["name"], "rollback_deploy");
    assert!(
        calls[2]["request"]["transport"]
            .get(if transport == "mcp-stdio" {
                "stdio"
            } else {
                "loopback"
            })
            .is_some(),
        "the transport is noted: {}",
        calls[2]["request"]
    );
    let footer = b.footer.as_ref().expect("the run was finished");
    assert_eq!(footer["status"], "completed");
    assert_eq!(footer["grade"]["passed"], true, "{footer}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_real_mcp_client_over_stdio_works_the_case_and_the_run_is_graded_on_disconnect() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = rollback_case(dir.path());
    let out = Command::new(native_python())
        .arg(client())
        .arg("stdio")
        .arg(env!("CARGO_BIN_EXE_worldline"))
        .args(["mcp".as_ref(), case.as_os_str()])
        .args(["--worlds".as_ref(), worlds().as_os_str()])
        .args(["--store".as_ref(), store.as_os_str(), "--json".as_ref()])
        .output()
        .expect("starting the MCP client");
    assert!(out.status.success(), "{out:?}");
    let report = client_report(&out);
    check_session(&report, &only_bundle(&store), "mcp-stdio");
    // The server's --json report went to stderr (stdout was the channel),
    // which the client passed through.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"run_status\": \"completed\""), "{stderr}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_real_mcp_client_over_http_works_the_case_a_second_client_is_refused() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = rollback_case(dir.path());
    let (server, url) = http_server(&store, &case);
    let out = Command::new(native_python())
        .arg(client())
        .args(["http", &url, "--second", &url])
        .output()
        .expect("starting the MCP client");
    let server = server.wait_with_output().expect("worldline mcp ended");
    assert!(out.status.success(), "{out:?}");
    let report = client_report(&out);
    assert!(
        report["second"].as_str().unwrap().starts_with("refused"),
        "{report}"
    );
    check_session(&report, &only_bundle(&store), "mcp-http");
    // The client's DELETE ended the run; the report is on stdout.
    assert_eq!(server.status.code(), Some(0), "{server:?}");
    let summary: Value = serde_json::from_slice(&server.stdout).expect("one JSON report");
    assert_eq!(summary["status"], "passed", "{summary}");
}

#[test]
fn sigterm_ends_an_http_session_with_a_graded_bundle() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = rollback_case(dir.path());
    let (server, _url) = http_server(&store, &case);
    // SAFETY: signalling the child this test started.
    unsafe {
        libc::kill(server.id() as i32, libc::SIGTERM);
    }
    let server = server.wait_with_output().expect("worldline mcp ended");
    // Nothing was done: the run is graded, and fails.
    assert_eq!(server.status.code(), Some(1), "{server:?}");
    let summary: Value = serde_json::from_slice(&server.stdout).expect("one JSON report");
    assert_eq!(summary["run_status"], "completed", "{summary}");
    assert_eq!(summary["status"], "failed", "{summary}");
    assert!(read_bundle(&only_bundle(&store)).footer.is_some());
}

#[test]
fn a_non_loopback_address_is_refused() {
    let dir = temp_dir();
    let case = rollback_case(dir.path());
    let store = dir.path().join("store");
    let out = worldline(
        &store,
        [
            "mcp".as_ref(),
            case.as_os_str(),
            "--http".as_ref(),
            "0.0.0.0:8765".as_ref(),
        ],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("not a loopback address"), "{out}");
}

/// `run CASE --exec -- python SCRIPT --json --worlds worlds/` in `store`,
/// with `extra` arguments before `--exec` and `env` added to worldline's
/// environment.
fn exec_run(
    store: &Path,
    case: &Path,
    script: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> CliOutput {
    let mut args: Vec<&std::ffi::OsStr> = vec!["run".as_ref(), case.as_os_str(), "--json".as_ref()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    let worlds = worlds();
    args.extend(["--worlds".as_ref(), worlds.as_os_str()]);
    args.extend([
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
    ]);
    let python = native_python();
    args.extend([python.as_os_str(), script.as_os_str()]);
    worldline_env(args, env)
}

fn openai_agent() -> PathBuf {
    workspace_root().join("examples/native-agents/openai_mcp_agent.py")
}

fn model_case(name: &str) -> PathBuf {
    workspace_root().join(format!("cases/model/{name}.toml"))
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn an_openai_and_mcp_agent_passes_and_replays_identical_at_the_boundary() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = exec_run(&store, &model_case("rollback"), &openai_agent(), &[], &[]);
    out.expect_code(0);
    let doc = out.json();
    assert_eq!(doc["status"], "passed", "{out}");
    assert_eq!(doc["isolation"]["kind"], "native", "{out}");
    assert!(doc["output"].as_str().unwrap().contains("D-42"), "{out}");
    let b = read_bundle(&out.bundle());
    assert_eq!(b.header["isolation"], "native");
    assert_eq!(b.header["native"]["transport"], "exec");
    let model: Vec<&Value> = b
        .events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/model.complete")
        .collect();
    assert_eq!(model.len(), 6, "one model call per turn");
    assert_eq!(
        model[0]["request"]["transport"]["loopback"]["path"],
        "/v1/chat/completions"
    );
    // The port and the token are not recorded.
    let text = std::fs::read_to_string(out.bundle()).unwrap();
    assert!(!text.contains("127.0.0.1"), "the port leaked into the log");
    let run = doc["run_id"].as_str().unwrap();
    let replay = worldline(&store, ["replay", run, "--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    assert_eq!(replay.json()["scope"], "boundary", "{replay}");
    let text = worldline(&store, ["replay", run]);
    assert!(text.stdout.contains("identical at the boundary"), "{text}");
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["boundary_replay"], 1, "{verify}");
    assert_eq!(verify.json()["identical"], 0, "{verify}");

    // Killed after its third model call: what a SIGKILL leaves is the
    // bundle's lines up to one (each line is one write), here cut there
    // and kept as a run of its own. `resume` starts the process again,
    // answers its requests from the recording up to the cut (the events
    // the same), and goes on live to the same final state.
    let recorded = std::fs::read_to_string(out.bundle()).unwrap();
    let lines: Vec<&str> = recorded.split_inclusive('\n').collect();
    let third = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("\"call\":\"worldline:agent/model.complete\""))
        .nth(2)
        .map(|(i, _)| i)
        .expect("a third model call");
    let cut_id = format!("{}cafe", &run[..run.len() - 4]);
    let cut = common::bundle_in(&store, &cut_id);
    std::fs::write(&cut, lines[..=third].concat()).unwrap();
    let held = read_bundle(&cut).events.len();
    let resumed = worldline(&store, ["resume", &cut_id, "--json"]);
    resumed.expect_code(0);
    assert_eq!(resumed.json()["status"], "passed", "{resumed}");
    assert_eq!(resumed.json()["resumed_from"]["event"], held as u64);
    assert_eq!(
        resumed.json()["final_state_hash"],
        doc["final_state_hash"],
        "{resumed}"
    );
    let again = read_bundle(&resumed.bundle());
    assert_eq!(again.events[..held], b.events[..held]);
    assert_eq!(again.events.len(), b.events.len());
    let rid = resumed.json()["run_id"].as_str().unwrap().to_string();
    let history = worldline(&store, ["history", &rid]);
    assert!(
        history
            .stdout
            .contains(&format!("resumed from {cut_id} at event {held}"))
            && history.stdout.contains("[resumed: live from here]"),
        "{history}"
    );
    let replay = worldline(&store, ["replay", &rid, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    assert_eq!(replay.json()["scope"], "boundary", "{replay}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_changed_agent_diverges_at_the_request_it_changed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = dir.path().join("agent.py");
    std::fs::copy(openai_agent(), &agent).unwrap();
    let out = exec_run(&store, &model_case("rollback"), &agent, &[], &[]);
    out.expect_code(0);
    let b = read_bundle(&out.bundle());
    let first_model = b
        .events
        .iter()
        .position(|e| e["call"] == "worldline:agent/model.complete")
        .unwrap();
    // The same agent asking another model.
    let text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(&agent, text.replace("gpt-4.1-mini", "gpt-5-nano")).unwrap();
    let run = out.json()["run_id"].as_str().unwrap();
    let replay = worldline(&store, ["replay", run, "--json"]);
    replay.expect_code(1);
    let r = replay.json();
    assert_eq!(r["verdict"], "diverged", "{replay}");
    assert_eq!(r["divergence"]["index"], first_model as u64, "{replay}");
    let diff: Vec<&str> = r["diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        diff,
        ["$.request.request.model: \"gpt-4.1-mini\" → \"gpt-5-nano\""],
        "{replay}"
    );
    // The same agent changed later in the run: the same requests up to its
    // last tool call, whose arguments gain a field.
    let at = "args = json.loads(call.function.arguments or \"{}\")";
    assert!(text.contains(at), "the example agent parses its arguments");
    let changed = text.replace(
        at,
        &format!(
            "{at}\n                    if call.function.name == \"close_ticket\":\n                        args[\"reason\"] = \"changed\""
        ),
    );
    std::fs::write(&agent, changed).unwrap();
    let close = b
        .events
        .iter()
        .position(|e| e["call"] == TOOL_CALL && e["request"]["name"] == "close_ticket")
        .unwrap();
    let replay = worldline(&store, ["replay", run, "--json"]);
    replay.expect_code(1);
    let r = replay.json();
    assert_eq!(r["verdict"], "diverged", "{replay}");
    assert_eq!(r["divergence"]["index"], close as u64, "{replay}");
    let diff = r["diff"].as_array().unwrap();
    assert_eq!(diff.len(), 1, "{replay}");
    assert!(diff[0].as_str().unwrap().contains("reason"), "{replay}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn the_process_gets_a_scrubbed_environment_and_its_token_is_required() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let probe = tests_dir().join("native/env_probe.py");
    let secret = [("WORLDLINE_TEST_SECRET", "s3cret")];
    let out = exec_run(&store, &model_case("rollback"), &probe, &[], &secret);
    out.expect_code(1); // graded on the incident: the probe does nothing
    let output: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    let env: Vec<&str> = output["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for name in [
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "WORLDLINE_MCP_URL",
        "WORLDLINE_TASK",
        "PATH",
    ] {
        assert!(env.contains(&name), "{name} missing: {env:?}");
    }
    assert!(!env.contains(&"WORLDLINE_TEST_SECRET"), "{env:?}");
    assert_eq!(output["cwd_is_home"], true);
    assert_eq!(output["task"]["alert"], "ALERT-7");
    assert_eq!(output["without_token"], 401);
    assert_eq!(output["unserved"], 404);
    assert_eq!(output["huge"], 413);
    let b = read_bundle(&out.bundle());
    assert!(
        b.events
            .iter()
            .any(|e| e["call"] == "native:loopback/denied" && e["request"]["path"] == "/v1/files"),
        "the unserved request is recorded"
    );
    // Passed through when named.
    let out = exec_run(
        &store,
        &model_case("rollback"),
        &probe,
        &["--pass-env", "WORLDLINE_TEST_SECRET"],
        &secret,
    );
    let output: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    assert!(
        output["env"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "WORLDLINE_TEST_SECRET")
    );
}

/// `worldline mcp CASE` over stdio on `store`, with `extra` arguments, its
/// three streams piped.
fn mcp_over_stdio(case: &Path, store: &Path, extra: &[&str]) -> std::process::Child {
    crate::common::cli()
        .args(["mcp".as_ref(), case.as_os_str()])
        .args(extra)
        .args(["--worlds".as_ref(), worlds().as_os_str()])
        .args(["--store".as_ref(), store.as_os_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting worldline mcp")
}

/// A client that closed its reading end before its answer was written:
/// the answer that could not be sent is not flushed into the report, which
/// goes to stderr once the client is gone (`--json` read whole there).
#[test]
fn an_answer_a_gone_client_refused_stays_out_of_the_json_report() {
    use std::io::Write;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = rollback_case(dir.path());
    let mut server = mcp_over_stdio(&case, &store, &["--json"]);
    // The client stops reading before it asks.
    drop(server.stdout.take());
    let mut stdin = server.stdin.take().unwrap();
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
                "\n"
            )
            .as_bytes(),
        )
        .unwrap();
    drop(stdin);
    let out = server.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_str(&stderr)
        .unwrap_or_else(|e| panic!("the report on stderr is one JSON document ({e}): {stderr}"));
    assert!(report["run_id"].is_string(), "{report}");
    assert!(!stderr.contains("serverInfo"), "{stderr}");
}

#[test]
fn malformed_and_huge_messages_over_stdio_get_errors_and_the_session_goes_on() {
    use std::io::Write;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = rollback_case(dir.path());
    let mut server = mcp_over_stdio(&case, &store, &[]);
    let mut stdin = server.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let huge = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"pad\":\"{}\"}}\n",
            "x".repeat(17 << 20)
        );
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#.to_string() + "\n",
            "{nope\n".to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string() + "\n",
            huge,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"ALERT-7"}}}"#.to_string() + "\n",
        ];
        for l in lines {
            stdin.write_all(l.as_bytes()).unwrap();
        }
        // Dropping stdin is the client disconnecting.
    });
    let out = server.wait_with_output().unwrap();
    writer.join().unwrap();
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "worldline");
    assert_eq!(answers[1]["error"]["code"], -32700);
    assert_eq!(answers[2]["error"]["code"], -32700);
    assert!(
        answers[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than")
    );
    assert_eq!(answers[3]["result"]["isError"], false, "{}", answers[3]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("run "),
        "the report went to stderr: {stderr}"
    );
    let bundle = only_bundle(&store);
    let b = read_bundle(&bundle);
    assert!(b.footer.is_some());

    // The session replays identical, its messages derived again from its
    // events (the malformed one and the notification included), and forks:
    // denied the tool at its call, the same messages make a run that
    // replays identical too (decision 0356).
    let replay = wl(&store, &[&"replay", &bundle, &"--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    let events = &b.events;
    let call = events
        .iter()
        .position(|e| e["call"] == "worldline:agent/tools.call")
        .expect("the tool call's event")
        .to_string();
    let fork = wl(
        &store,
        &[
            &"fork",
            &bundle,
            &"--at",
            &call,
            &"--deny",
            &"get_alert",
            &"--json",
        ],
    );
    assert!(fork.code <= 1, "{fork}");
    let fork = fork.json();
    assert_eq!(fork["events"], events.len(), "{fork}");
    let forked = fork["run_id"].as_str().unwrap();
    let h = wl(&store, &[&"history", &forked, &"--json"]);
    assert!(h.stdout.contains("denied"), "{h}");
    let replay = wl(&store, &[&"replay", &forked, &"--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    // `verify` replays both at the boundary instead of only reading them,
    // and counts them as the MCP sessions they are.
    let verified = wl(&store, &[&"verify", &"--json"]);
    verified.expect_code(0);
    let v = verified.json();
    assert_eq!(
        (v["replayed"].as_u64(), v["mcp_sessions"].as_u64()),
        (Some(2), Some(2)),
        "{v}"
    );
    assert_eq!(v["diverged"], 0, "{v}");
    assert_eq!(v["unreplayed_native"], 0, "{v}");
    let verified = wl(&store, &[&"verify"]);
    assert!(
        verified.stdout.contains(
            "2 runs: 2 identical or verified (2 of them boundary replays of native agents, 2 of those MCP sessions), 0 diverged, 0 unreadable, 0 incomplete without a header; drift rate 0.0%"
        ),
        "{verified}"
    );
}

/// A case of the incident world with `limits` added.
fn limited_case(dir: &Path, limits: &str) -> PathBuf {
    write_case(dir, "limited", &format!("{ROLLBACK}\n[limits]\n{limits}\n"))
}

/// A native agent written inline (Python).
fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const ONE_CALL_THEN: &str = r#"
import asyncio, json, os, signal, sys, time
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

async def main():
    async with streamable_http_client(os.environ["WORLDLINE_MCP_URL"]) as (r, w, *_):
        async with ClientSession(r, w) as s:
            await s.initialize()
            await s.call_tool("rollback_deploy", {"id": "D-42", "reason": "r"})
            THEN

asyncio.run(main())
"#;

#[test]
fn a_process_that_never_reads_its_task_gets_a_finished_run() {
    // A task larger than a pipe holds (64 KiB): writing it to a process
    // that exits without reading stdin always meets a closed pipe, which
    // once killed worldline with SIGPIPE (exit 141, no footer).
    let dir = temp_dir();
    let store = dir.path().join("store");
    let blob = "x".repeat(100_000);
    let case = write_case(
        dir.path(),
        "big-task",
        &format!(
            "world = \"incident@v4\"\nseed = 1\nclock = 2026-03-01T12:05:00Z\ntask = {{ blob = \"{blob}\" }}\n"
        ),
    );
    let worlds = worlds();
    let out = worldline_raw([
        "run".as_ref(),
        case.as_os_str(),
        "--json".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        "/bin/true".as_ref(),
    ]);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "completed", "{out}");
    let b = read_bundle(&out.bundle());
    assert_eq!(b.footer.as_ref().expect("a footer")["status"], "completed");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn kill_9_mid_run_leaves_a_readable_graded_bundle() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = script(
        dir.path(),
        "killed.py",
        &ONE_CALL_THEN.replace("THEN", "os.kill(os.getpid(), signal.SIGKILL)"),
    );
    let out = exec_run(&store, &rollback_case(dir.path()), &agent, &[], &[]);
    out.expect_code(3); // an agent fault, as a guest's trap is
    let doc = out.json();
    assert_eq!(doc["run_status"], "trapped", "{out}");
    assert!(doc["error"].as_str().unwrap().contains("signal 9"), "{out}");
    let b = read_bundle(&out.bundle());
    let grade = &b.footer.as_ref().expect("a footer")["grade"];
    // The rollback happened before the kill; the ticket was never closed.
    assert_eq!(grade["passed"], false);
    assert!(
        b.events
            .iter()
            .any(|e| e["request"]["name"] == "rollback_deploy")
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn an_agent_that_never_connects_is_stopped_at_the_time_limit() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = script(dir.path(), "idle.py", "import time\ntime.sleep(60)\n");
    let case = limited_case(dir.path(), "timeout_ms = 1500");
    let started = std::time::Instant::now();
    let out = exec_run(&store, &case, &agent, &[], &[]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    out.expect_code(3);
    assert_eq!(out.json()["run_status"], "timeout", "{out}");
    assert!(
        out.json()["error"].as_str().unwrap().contains("timeout_ms"),
        "{out}"
    );
    assert!(read_bundle(&out.bundle()).footer.is_some());
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_flood_of_calls_is_stopped_at_the_event_limit() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let flood =
        "for _ in range(10000):\n                await s.call_tool('get_alert', {'id': 'ALERT-7'})";
    let agent = script(
        dir.path(),
        "flood.py",
        &ONE_CALL_THEN.replace("THEN", flood),
    );
    let case = limited_case(dir.path(), "max_events = 200");
    let out = exec_run(&store, &case, &agent, &[], &[]);
    out.expect_code(3);
    assert_eq!(out.json()["run_status"], "trapped", "{out}");
    assert!(
        out.json()["error"].as_str().unwrap().contains("max_events"),
        "{out}"
    );
    assert_eq!(read_bundle(&out.bundle()).events.len(), 200);
    // The process makes the refused call again: the run replays to the
    // same end (a served episode and an MCP session did not).
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let replay = worldline(&store, ["replay", &run, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn the_proxy_answers_declared_routes_and_refuses_the_rest_tunnels_included() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "routes",
        "world = \"incident@v5\"\nseed = 3\nclock = 2026-03-01T12:05:00Z\ntask = {}\n",
    );
    let probe = tests_dir().join("native/proxy_probe.py");
    let out = exec_run(&store, &case, &probe, &[], &[]);
    out.expect_code(0);
    let output: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["route"]["status"], 200, "{output}");
    assert_eq!(output["route"]["body"]["id"], "ALERT-7", "{output}");
    assert_eq!(output["other"]["status"], 403, "{output}");
    assert!(output["tunnel"]["error"].is_string(), "{output}");
    let b = read_bundle(&out.bundle());
    let call = b
        .events
        .iter()
        .find(|e| e["call"] == TOOL_CALL)
        .expect("the route's tool call");
    assert_eq!(call["request"]["name"], "get_alert");
    assert_eq!(
        call["request"]["transport"]["proxy"]["url"],
        "http://alerts.internal/api/alerts/ALERT-7"
    );
    let denied: Vec<&Value> = b
        .events
        .iter()
        .filter(|e| e["call"] == "native:loopback/denied")
        .map(|e| &e["request"])
        .collect();
    assert!(
        denied.iter().any(|r| r["url"] == "http://example.com/"),
        "{denied:?}"
    );
    assert!(
        denied.iter().any(|r| r["method"] == "CONNECT"),
        "{denied:?}"
    );
}

/// The model call's event name.
const MODEL_CALL: &str = "worldline:agent/model.complete";

/// How many events of `call` the bundle at `path` holds.
fn calls_of(path: &Path, call: &str) -> usize {
    let events = read_bundle(path).events;
    events.iter().filter(|e| e["call"] == call).count()
}

/// `tests/bundles/before-rules-3/NAME.json`, recorded under rules 2,
/// imported into `store` (it replays `identical`), and `NAME.toml` run
/// anew with `tests/native/PROBE`: a count of the recording's events of a
/// call, the new run, and its output.
fn recorded_then_anew(
    store: &Path,
    name: &str,
    probe: &str,
) -> (impl Fn(&str) -> usize, CliOutput, Value) {
    recorded_in_then_anew(store, "before-rules-3", name, probe)
}

/// [`recorded_then_anew`] of the fixture `name` in `tests/bundles/<folder>`.
fn recorded_in_then_anew(
    store: &Path,
    folder: &str,
    name: &str,
    probe: &str,
) -> (impl Fn(&str) -> usize, CliOutput, Value) {
    let old = common::imported_fixture(store, folder, &format!("{name}.json"));
    let recording = common::bundle_in(store, &old);
    let case = tests_dir().join(format!("bundles/{folder}/{name}.toml"));
    let out = exec_run(
        store,
        &case,
        &tests_dir().join("native").join(probe),
        &[],
        &[],
    );
    out.expect_code(0);
    let output = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    (move |call: &str| calls_of(&recording, call), out, output)
}

/// A model API asked at its vendor's public URL over plain http through
/// the proxy is answered by the case's model, and a tunnel to the vendor
/// is refused naming the variable that reaches it (rules 3, decision
/// 0423). Under rules 2 both were refused as not part of the world, as
/// the run recorded then (`tests/bundles/before-rules-3`) shows; it
/// replays as it ran.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_vendor_s_model_api_over_plain_http_is_answered_through_the_proxy() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (recorded, out, output) = recorded_then_anew(&store, "vendor-http", "vendor_probe.py");
    assert_eq!(recorded("native:loopback/denied"), 3);
    let openai = &output["openai"];
    assert_eq!(openai["status"], 200, "{output}");
    assert_eq!(
        openai["body"]["choices"][0]["message"]["content"],
        "hello from the world"
    );
    let anthropic = &output["anthropic"];
    assert_eq!(anthropic["status"], 200, "{output}");
    assert_eq!(
        anthropic["body"]["content"][0]["text"],
        "hello from the world"
    );
    let tunnel = output["tunnel"]["error"].as_str().unwrap();
    assert!(
        tunnel.contains("https://api.openai.com is a model API this world answers")
            && tunnel.contains("leave OPENAI_BASE_URL as worldline sets it"),
        "{tunnel}"
    );
    let b = read_bundle(&out.bundle());
    let asked: Vec<&Value> = b
        .events
        .iter()
        .filter_map(|e| {
            e["request"]["transport"]["proxy"]["url"]
                .as_str()
                .map(|_| e)
        })
        .collect();
    assert_eq!(asked.len(), 2, "{:?}", b.events);
    assert_eq!(
        asked[0]["request"]["transport"]["proxy"]["url"],
        "http://api.openai.com/v1/chat/completions"
    );
    replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// A Chat Completions request whose `messages` OpenAI refuses is
/// answered OpenAI's 400 and reaches no model (rules 3, decision 0423);
/// the scripted model answered each, as the run recorded under rules 2
/// (`tests/bundles/before-rules-3/chat-messages.json`) shows, and that
/// run replays as it ran.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn chat_messages_openai_refuses_are_its_400_not_a_model_s_answer() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (recorded, out, output) = recorded_then_anew(&store, "chat-messages", "chat_probe.py");
    assert_eq!(recorded(MODEL_CALL), 5);
    assert_eq!(output["good"]["status"], 200, "{output}");
    for (name, param, code) in [
        ("no_messages", "messages", "missing_required_parameter"),
        ("empty", "messages", "empty_array"),
        ("unknown_role", "messages[0].role", "invalid_value"),
        ("no_role", "messages[1].role", "missing_required_parameter"),
    ] {
        let got = &output[name];
        assert_eq!(got["status"], 400, "{name}: {output}");
        assert_eq!(got["error"]["param"], param, "{name}: {output}");
        assert_eq!(got["error"]["code"], code, "{name}: {output}");
    }
    assert_eq!(calls_of(&out.bundle(), MODEL_CALL), 1);
    replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// The model APIs answer as their vendors do from rules 9 (decision
/// 0423): a stream of `n: 2` carries both choices, Anthropic's content
/// filter is `refusal`, a Messages role other than `user`/`assistant` is
/// its 400, a native agent's Messages timeout is Anthropic's
/// `timeout_error`, a Responses `input` of the wrong type, an image part
/// and a `web_search` tool are 400s saying so, a Responses stream sends
/// `response.in_progress` before any usage, and `$now` writes nine
/// fraction digits. The run recorded under rules 8
/// (`tests/bundles/before-rules-9/answers.json`), whose every request
/// carries a digest of the answers before it, replays as it ran.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn model_api_answers_take_the_vendors_shapes_from_rules_9() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (recorded, out, output) =
        recorded_in_then_anew(&store, "before-rules-9", "answers", "answers_probe.py");
    // Under rules 8 the bogus role and the image reached the model.
    assert_eq!(recorded(MODEL_CALL), 8);
    let got = output["got"].as_array().unwrap();
    let status = |i: usize| got[i][0].as_u64().unwrap();
    let text = |i: usize| got[i][1].as_str().unwrap();
    let json = |i: usize| serde_json::from_str::<Value>(text(i)).unwrap();
    assert!(text(0).contains(r#""index":1"#), "two choices: {}", text(0));
    assert_eq!(json(1)["stop_reason"], "refusal", "{}", text(1));
    assert_eq!(status(3), 408, "{}", text(3));
    assert_eq!(
        (&json(3)["type"], &json(3)["error"]["type"]),
        (&Value::from("error"), &Value::from("timeout_error"))
    );
    let events: Vec<&str> = (text(4).lines())
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(events[..2], ["response.created", "response.in_progress"]);
    let created = (text(4).lines().nth(1))
        .and_then(|l| l.strip_prefix("data: "))
        .unwrap();
    let created: Value = serde_json::from_str(created).unwrap();
    assert_eq!(created["response"]["usage"], Value::Null);
    let as_of = json(5)["as_of"].as_str().unwrap().to_string();
    assert_eq!(as_of, "2026-03-01T12:05:06.206000000Z");
    assert_eq!(status(6), 400, "{}", text(6));
    assert_eq!(
        json(6)["error"]["message"],
        "messages.0.role: Input should be 'user' or 'assistant'"
    );
    assert_eq!(status(7), 400);
    assert_eq!(json(7)["error"]["code"], "invalid_type", "{}", text(7));
    assert_eq!(status(8), 400);
    assert!(text(8).contains("input_image"), "{}", text(8));
    assert_eq!(status(9), 200);
    replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// The world's MCP endpoint reads a message as JSON-RPC 2.0 says from
/// rules 10 (decision 0423): one without `"jsonrpc"` or whose `id` is an
/// object is `-32600` Invalid Request, and a batch is `-32600` saying MCP
/// 2025-06-18 removed batching. The run recorded under rules 9
/// (`tests/bundles/before-rules-10/rpc.json`), where the first two were
/// served (an object id was echoed, the tool called) and the batch was a
/// bare "Invalid Request", replays as it ran: its last request carries a
/// digest of every answer before it.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn mcp_messages_that_are_no_json_rpc_2_0_are_invalid_requests_from_rules_10() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (recorded, out, output) =
        recorded_in_then_anew(&store, "before-rules-10", "rpc", "rpc_probe.py");
    // Under rules 9 the object id's `tools/call` reached the tool.
    assert_eq!(recorded(TOOL_CALL), 2);
    let got = output["got"].as_array().unwrap();
    let status = |i: usize| got[i][0].as_u64().unwrap();
    let json = |i: usize| serde_json::from_str::<Value>(got[i][1].as_str().unwrap()).unwrap();
    assert_eq!(status(0), 200, "{output}");
    let no_version = json(2);
    assert_eq!(
        (&no_version["id"], &no_version["error"]["code"]),
        (&Value::from(2), &Value::from(-32600)),
        "{output}"
    );
    assert_eq!(
        no_version["error"]["message"],
        "Invalid Request: \"jsonrpc\" must be \"2.0\""
    );
    assert_eq!(status(3), 400, "{output}");
    assert_eq!(
        (&json(3)["id"], &json(3)["error"]["code"]),
        (&Value::Null, &Value::from(-32600))
    );
    assert_eq!(status(4), 400, "{output}");
    let batch = json(4)["error"]["message"].as_str().unwrap().to_string();
    assert!(
        batch.contains("MCP 2025-06-18 removed JSON-RPC batching"),
        "{batch}"
    );
    assert_eq!(status(5), 200, "{output}");
    assert_eq!(calls_of(&out.bundle(), TOOL_CALL), 1);
    replays_identical(&store, out.json()["run_id"].as_str().unwrap());
}

/// Answers of an OpenAI-compatible endpoint put in each API's shape
/// (rules 9): a refusal reaches the agent over all three APIs, a tool
/// call whose arguments are no JSON object is a Messages 500 saying so
/// (it was `{}`), and an answer with no choice fails the model call (it
/// was an answer with nothing in it).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn refusals_unreadable_tool_input_and_no_choice_are_answered_as_the_vendors() {
    let completion = |message: Value, finish: &str| {
        serde_json::json!({"id": "chatcmpl-up", "object": "chat.completion", "created": 1, "model": "up",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}})
    };
    let refusal = completion(
        serde_json::json!({"role": "assistant", "content": null, "refusal": "I cannot help with that"}),
        "stop",
    );
    let broken = completion(
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "get_alert", "arguments": "{\"id\": \"ALERT-7\""}}]}),
        "tool_calls",
    );
    let mut empty = completion(Value::Null, "stop");
    empty["choices"] = serde_json::json!([]);
    let (url, _) = common::chat::serve_answers(vec![
        refusal.clone(),
        refusal.clone(),
        refusal,
        broken,
        empty,
    ]);
    let dir = temp_dir();
    let case = dir.path().join("upstream.toml");
    std::fs::write(
        &case,
        format!(
            "world = \"incident@v5\"\nseed = 3\nclock = 2026-03-01T12:05:00Z\ntask = {{}}\n[model]\nprovider = \"openai\"\nbase_url = \"{url}\"\nmodel = \"up\"\nretries = 0\n"
        ),
    )
    .unwrap();
    let hi = serde_json::json!([{"role": "user", "content": "hi"}]);
    let asks = serde_json::json!([
        ["chat", {"model": "m", "messages": hi, "stream": true}],
        ["responses", {"model": "m", "input": "hi"}],
        ["messages", {"model": "c", "max_tokens": 9, "messages": hi}],
        ["messages", {"model": "c", "max_tokens": 9, "messages": hi}],
        ["chat", {"model": "m", "messages": hi}],
    ])
    .to_string();
    let store = dir.path().join("store");
    let probe = tests_dir().join("native/asks_probe.py");
    let out = exec_run(
        &store,
        &case,
        &probe,
        &["--pass-env", "ASKS"],
        &[("ASKS", &asks)],
    );
    out.expect_code(0);
    let got: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    let text = |i: usize| got[i][1].as_str().unwrap();
    let json = |i: usize| serde_json::from_str::<Value>(text(i)).unwrap();
    assert!(
        text(0).contains(r#""delta":{"refusal":"I cannot help wi"}"#),
        "{}",
        text(0)
    );
    assert_eq!(
        json(1)["output"][0]["content"][0],
        serde_json::json!({"type": "refusal", "refusal": "I cannot help with that"})
    );
    assert_eq!(json(2)["stop_reason"], "refusal", "{}", text(2));
    assert_eq!(json(2)["content"][0]["text"], "I cannot help with that");
    assert_eq!(got[3][0], 500, "{}", text(3));
    assert!(text(3).contains("no JSON object"), "{}", text(3));
    assert_eq!(got[4][0], 500, "{}", text(4));
    assert!(text(4).contains("no choice"), "{}", text(4));
    assert_eq!(calls_of(&out.bundle(), MODEL_CALL), 5);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn isolate_net_leaves_only_the_run_s_server_reachable() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let probe = tests_dir().join("native/net_probe.py");
    let out = exec_run(
        &store,
        &rollback_case(dir.path()),
        &probe,
        &["--isolate-net"],
        &[],
    );
    if out.code == 2 {
        // No network namespaces here: the reason is said, nothing ran.
        assert!(out.stderr.contains("unshare(CLONE_NEWNET)"), "{out}");
        return;
    }
    let output: Value = serde_json::from_str(out.json()["output"].as_str().unwrap()).unwrap();
    assert_eq!(output["direct"], libc::ENETUNREACH, "{output}");
    assert_eq!(output["server"], 404, "{output}");
    assert_eq!(out.json()["isolation"]["network"], "isolated", "{out}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_suite_of_native_runs_passes_and_a_fork_at_a_tool_call_runs_the_process_again() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let python = native_python();
    let cases = workspace_root().join("cases/model");
    let agent = openai_agent();
    // model-timeout.toml times out the first model call: a 408 the SDK
    // retries at once.
    let out = worldline_raw([
        "test".as_ref(),
        cases.as_os_str(),
        "--json".as_ref(),
        "--jobs".as_ref(),
        "2".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        python.as_os_str(),
        agent.as_os_str(),
    ]);
    out.expect_code(0);
    assert_eq!(out.json()["passed"], 3, "{out}");
    let out = exec_run(&store, &model_case("rollback"), &agent, &[], &[]);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let b = read_bundle(&out.bundle());
    let close = b
        .events
        .iter()
        .position(|e| e["request"]["name"] == "close_ticket")
        .unwrap();
    let denied = r#"{"error": {"kind": "denied", "message": "change freeze"}}"#;
    let fork = wl(
        &store,
        &[
            &"fork",
            &run,
            &"--at",
            &close.to_string(),
            &"--respond",
            &denied,
            &"--json",
        ],
    );
    // The ticket stays open, and the case's scripted model has no rule for
    // the denial: the run ends `unscripted` (the script's gap, not the
    // agent's fault), exit 1.
    fork.expect_code(1);
    let doc = fork.json();
    assert_eq!(doc["run_status"], "unscripted", "{fork}");
    assert_eq!(doc["parent"]["event"], close as u64, "{fork}");
    let forked = read_bundle(Path::new(doc["bundle"].as_str().unwrap()));
    assert_eq!(forked.header["native"]["transport"], "exec");
    assert_eq!(forked.events[close]["response"]["error"]["kind"], "denied");
    assert_eq!(forked.events[..close], b.events[..close]);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn the_official_client_streams_and_speaks_responses_over_the_loopback() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let probe = tests_dir().join("native/stream_probe.py");
    let out = exec_run(&store, &model_case("rollback"), &probe, &[], &[]);
    let output: Value = serde_json::from_str(
        out.json()["output"]
            .as_str()
            .unwrap_or_else(|| panic!("no output:\n{out}")),
    )
    .unwrap();
    assert_eq!(output["chat_stream"][0], "get_alert", "{output}");
    assert_eq!(output["responses"][0], "get_alert", "{output}");
    assert_eq!(output["responses_stream"][0], "get_alert", "{output}");
    let b = read_bundle(&out.bundle());
    let apis: Vec<&Value> = b
        .events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/model.complete")
        .map(|e| &e["request"]["transport"]["loopback"])
        .collect();
    assert_eq!(apis.len(), 3);
    assert_eq!(apis[0]["api"], "openai.chat");
    assert_eq!(apis[0]["stream"], true);
    assert_eq!(apis[2]["api"], "openai.responses");
    assert_eq!(apis[2]["stream"], true);
}

/// The official client's `responses.stream()` reads a text reply (it
/// failed, `IndexError`, on deltas of a content part never added), and a
/// reply the script cuts short (`finish_reason = "length"`) is an
/// `incomplete` response saying why (it read as `completed`).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn the_official_clients_responses_stream_reads_text_and_a_cut_reply_is_incomplete() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = dir.path().join("case.toml");
    std::fs::write(
        &case,
        r#"world = "incident@v4"
seed = 1
clock = 2026-03-01T12:05:00Z
task = "hi"

[[model.responses]]
content = "hello from a stream longer than one piece"

[[model.responses]]
content = "cut off mid-sen"
finish_reason = "length"
"#,
    )
    .unwrap();
    let probe = tests_dir().join("native/text_stream_probe.py");
    let out = exec_run(&store, &case, &probe, &[], &[]);
    let output: Value = serde_json::from_str(
        out.json()["output"]
            .as_str()
            .unwrap_or_else(|| panic!("no output:\n{out}")),
    )
    .unwrap();
    assert_eq!(
        output,
        serde_json::json!({
            "streamed": "hello from a stream longer than one piece",
            "streamed_status": "completed",
            "status": "incomplete",
            "why": "max_output_tokens",
        })
    );
    let replay = worldline(&store, ["replay", out.json()["run_id"].as_str().unwrap()]);
    replay.expect_code(0);
    assert!(replay.stdout.contains("identical"), "{replay}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_langgraph_agent_passes_the_model_cases_and_replays_identical_at_the_boundary() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let python = native_python();
    // LangGraph takes seconds to import (over 20 on a loaded machine): the
    // cases as they are, with a wall-clock limit such a machine cannot miss.
    let cases = dir.path().join("cases");
    std::fs::create_dir(&cases).unwrap();
    for name in ["rollback", "rollback-weighted", "model-timeout"] {
        let text = std::fs::read_to_string(model_case(name)).unwrap();
        let limits = "\n[limits]\ntimeout_ms = 600000\n";
        std::fs::write(cases.join(format!("{name}.toml")), text + limits).unwrap();
    }
    let worlds = worlds();
    let agent = workspace_root().join("examples/native-agents/langgraph_agent.py");
    let out = worldline_raw([
        "test".as_ref(),
        cases.as_os_str(),
        "--json".as_ref(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        python.as_os_str(),
        agent.as_os_str(),
    ]);
    out.expect_code(0);
    assert_eq!(out.json()["passed"], 3, "{out}");
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["boundary_replay"], 3, "{verify}");
}

#[test]
fn a_killed_mcp_session_keeps_the_reads_its_client_got() {
    use std::io::{BufRead, BufReader, Write};
    let dir = temp_dir();
    let store = dir.path().join("store");
    let mut server = crate::common::cli()
        .args(["mcp".as_ref(), rollback_case(dir.path()).as_os_str()])
        .args(["--worlds".as_ref(), worlds().as_os_str()])
        .args(["--store".as_ref(), store.as_os_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting worldline mcp");
    let mut stdin = server.stdin.take().unwrap();
    let mut answers = BufReader::new(server.stdout.take().unwrap()).lines();
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_alert","arguments":{"id":"ALERT-7"}}}"#,
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    // The client has the read's answer, then the server is killed.
    let read = loop {
        let answer: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
        if answer["id"] == 2 {
            break answer;
        }
    };
    assert_eq!(read["result"]["isError"], false, "{read}");
    unsafe {
        libc::kill(server.id() as i32, libc::SIGKILL);
    }
    server.wait().unwrap();
    let b = read_bundle(&only_bundle(&store));
    assert!(b.footer.is_none(), "killed: no footer");
    assert!(
        b.events.iter().any(|e| e["request"]["name"] == "get_alert"),
        "the read the client got is in the bundle: {:?}",
        b.events
    );
}

/// A native agent's reproducer that ends otherwise when it is written
/// (its parallel requests in another order; here a counter of its own) is
/// kept and said to have: it was an internal error (exit 4) that lost the
/// campaign's report.
#[test]
fn a_native_reproducer_that_ends_otherwise_is_kept_and_said_to() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let counter = dir.path().join("count");
    let agent = script(
        dir.path(),
        "agent.sh",
        &format!(
            "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}\nif [ $n -eq 1 ]; then echo \"\\\"first\\\"\"; else echo \"\\\"later\\\"\"; fi\n",
            c = counter.display()
        ),
    );
    let case = write_case(
        dir.path(),
        "counted",
        "world = \"incident@v4\"\nseed = 1\nclock = 2026-03-01T12:05:00Z\ntask = {}\n\n[expect.output]\nequals = \"later\"\n",
    );
    let faults = script(
        dir.path(),
        "faults.toml",
        "[[tools]]\ntool = \"get_alert\"\ndeny = 0.5\n",
    );
    let worlds = worlds();
    let out = worldline_raw([
        "fuzz".as_ref(),
        case.as_os_str(),
        "--runs".as_ref(),
        "1".as_ref(),
        "--faults".as_ref(),
        faults.as_os_str(),
        "--json".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        "sh".as_ref(),
        agent.as_os_str(),
    ]);
    out.expect_code(1);
    let group = &out.json()["groups"][0];
    assert_eq!(group["reproducer_ended"], "passed", "{out}");
}
