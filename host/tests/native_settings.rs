//! `--exec` as a first-class agent (issue 39): `exec` and `pass_env` in
//! worldline.toml and in a case (the case winning, the command line over
//! both), a case's `[env] vars` given to the process and recorded, the
//! passed-through variables recorded by name and hash and named by a
//! replay that meets other values, an `https://` route refused naming its
//! `http://` URL, the SDKs' telemetry off and unrecorded; the agent's own
//! exception shown wherever it is in stderr, `history --stdout/--stderr`,
//! a scripted model that runs out as its own outcome; `repro` in another
//! environment saying why its repetitions ended otherwise and which
//! variables differ; and the small
//! things: `run` without an agent, slow fuzz rates, divergence kinds,
//! `check` on a scripted call to a tool the world lacks.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A native agent on the standard library only: it reports the variables
/// it got, and makes one model call whose message carries `WL_TEST_A` (so
/// a replay with another value diverges there).
const PROBE: &str = r#"
import json, os, sys, urllib.request
names = ["WL_TEST_A", "WL_TEST_B", "GREETING", "OPENAI_AGENTS_DISABLE_TRACING",
         "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING"]
env = {n: os.environ.get(n) for n in names}
body = json.dumps({"model": "m", "messages": [
    {"role": "user", "content": "a=" + str(os.environ.get("WL_TEST_A"))}]}).encode()
req = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=10) as r:
    reply = json.loads(r.read())
print(json.dumps({"who": sys.argv[1], "env": env,
                  "reply": reply["choices"][0]["message"]["content"]}))
"#;

const CASE_HEAD: &str = "world = \"incident@v4\"\nseed = 7\nclock = 2026-03-01T12:05:00Z\ntask = { alert = \"ALERT-7\" }\n";

/// A project in `dir`: worldline.toml naming `exec` and `pass_env`, the
/// probe, and two cases (one naming its own agent and vars).
fn project(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::write(dir.join("probe.py"), PROBE).unwrap();
    let worlds = workspace_root().join("worlds");
    std::fs::write(
        dir.join("worldline.toml"),
        format!(
            "exec = [\"python3\", \"probe.py\", \"project\"]\npass_env = [\"WL_TEST_A\"]\nworlds = \"{}\"\nstore = \"store\"\n",
            worlds.display()
        ),
    )
    .unwrap();
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::write(cases.join("probe.py"), PROBE).unwrap();
    let plain = write_case(
        &cases,
        "plain",
        &format!("{CASE_HEAD}[model]\nresponses = [\"ok\"]\n"),
    );
    let own = write_case(
        &cases,
        "own",
        &format!(
            "{CASE_HEAD}exec = [\"python3\", \"probe.py\", \"case\"]\npass_env = [\"WL_TEST_B\"]\n\n[env]\nvars = {{ GREETING = \"hi\" }}\n\n[model]\nresponses = [\"ok\"]\n"
        ),
    );
    (plain, own)
}

const SECRETS: &[(&str, &str)] = &[("WL_TEST_A", "alpha"), ("WL_TEST_B", "beta")];

#[test]
fn exec_and_pass_env_come_from_the_project_the_case_and_the_command_line_in_that_order() {
    let dir = temp_dir();
    let (plain, own) = project(dir.path());
    let run = |case: &Path, extra: &[&str]| {
        let mut args = vec!["run", case.to_str().unwrap(), "--json"];
        args.extend(extra);
        worldline_at(dir.path(), args, SECRETS)
    };

    // The project's agent and pass_env; the telemetry switches set.
    let out = run(&plain, &[]);
    out.expect_code(0);
    let got = out.output();
    assert_eq!(got["who"], "project", "{out}");
    assert_eq!(got["env"]["WL_TEST_A"], "alpha", "{out}");
    assert_eq!(got["env"]["WL_TEST_B"], Value::Null, "{out}");
    assert_eq!(got["env"]["OPENAI_AGENTS_DISABLE_TRACING"], "1", "{out}");
    assert_eq!(got["env"]["LANGSMITH_TRACING"], "false", "{out}");
    // `settings` says what the file supplied, its `exec` and `pass_env`
    // among them (they were left out), and what the command line
    // overrode.
    let supplied = &out.json()["settings"]["supplied"];
    assert_eq!(
        supplied["exec"],
        json!([
            "python3",
            dir.path().join("probe.py").display().to_string(),
            "project"
        ]),
        "{out}"
    );
    assert_eq!(supplied["pass_env"], json!(["WL_TEST_A"]), "{out}");
    let replaced = run(
        &plain,
        &[
            "--pass-env",
            "WL_TEST_B",
            "--exec",
            "--",
            "python3",
            "probe.py",
            "cli",
        ],
    );
    let settings = &replaced.json()["settings"];
    assert!(settings["supplied"].get("exec").is_none(), "{replaced}");
    assert_eq!(
        settings["overridden"],
        json!(["exec", "pass_env"]),
        "{replaced}"
    );
    let b = read_bundle(&out.bundle());
    let passed = &b.header["env"]["passed"];
    assert_eq!(
        passed["WL_TEST_A"].as_str().unwrap(),
        sha256_hex(b"alpha"),
        "the value's hash is recorded: {}",
        b.header
    );
    assert!(
        !b.header.to_string().contains("alpha"),
        "the value itself is never recorded: {}",
        b.header
    );

    // The case's own agent, pass_env and [env] vars, recorded.
    let out = run(&own, &[]);
    out.expect_code(0);
    let got = out.output();
    assert_eq!(got["who"], "case", "{out}");
    assert_eq!(got["env"]["WL_TEST_B"], "beta", "{out}");
    assert_eq!(got["env"]["WL_TEST_A"], Value::Null, "{out}");
    assert_eq!(got["env"]["GREETING"], "hi", "{out}");
    let b = read_bundle(&out.bundle());
    assert_eq!(b.header["env"]["vars"]["GREETING"], "hi", "{}", b.header);
    assert!(b.header["env"]["passed"]["WL_TEST_B"].is_string());

    // The command line over both.
    let cli = dir.path().join("probe.py");
    let out = run(
        &own,
        &[
            "--pass-env",
            "WL_TEST_A",
            "--exec",
            "--",
            "python3",
            cli.to_str().unwrap(),
            "cli",
        ],
    );
    out.expect_code(0);
    let got = out.output();
    assert_eq!(got["who"], "cli", "{out}");
    assert_eq!(got["env"]["WL_TEST_A"], "alpha", "{out}");
    assert_eq!(got["env"]["WL_TEST_B"], Value::Null, "{out}");
}

/// SHA-256 of `bytes`, in hex.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn a_replay_that_meets_other_values_says_which_and_prints_the_divergence_as_documented() {
    let dir = temp_dir();
    let (plain, _) = project(dir.path());
    let out = worldline_at(
        dir.path(),
        ["run", plain.to_str().unwrap(), "--json"],
        SECRETS,
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();

    let same = worldline_at(dir.path(), ["replay", id.as_str(), "--json"], SECRETS);
    same.expect_code(0);
    assert_eq!(same.json()["verdict"], "identical", "{same}");
    assert!(same.json().get("env_differs").is_none(), "{same}");

    let other = [("WL_TEST_A", "omega")];
    let json = worldline_at(dir.path(), ["replay", id.as_str(), "--json"], &other);
    json.expect_code(1);
    assert_eq!(json.json()["verdict"], "diverged", "{json}");
    assert_eq!(
        json.json()["env_differs"],
        serde_json::json!(["WL_TEST_A (another value)"]),
        "{json}"
    );
    let text = worldline_at(dir.path(), ["replay", id.as_str()], &other);
    text.expect_code(1);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert!(
        lines[0].contains("diverged at event") && lines[0].contains("(mismatch"),
        "the kind as documented, not Rust's Debug name:\n{text}"
    );
    let diff = lines.iter().position(|l| l.contains("$."));
    let expected = lines
        .iter()
        .position(|l| l.trim_start().starts_with("expected:"));
    assert!(
        diff.is_some() && expected.is_some() && diff < expected,
        "the path diff comes before the JSON:\n{text}"
    );
    assert!(
        text.stdout.contains(
            "passed-through variables differ from the recording: WL_TEST_A (another value)"
        ),
        "{text}"
    );
}

/// A native agent that now exits badly after writing the same output
/// replays `diverged` on its status, with the replay's error: it was said
/// as `output → null` (an exited process has no output taken), and why
/// the process ended was not shown.
#[test]
fn a_replay_whose_process_now_exits_badly_names_the_status_and_why() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run_python(
        dir.path(),
        &store,
        "ends",
        "print('{\"cause\": \"D-42\"}')\n",
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    std::fs::write(
        dir.path().join("ends.py"),
        "import sys\nprint('{\"cause\": \"D-42\"}', flush=True)\nsys.exit('the budget ran out')\n",
    )
    .unwrap();
    let replay = worldline(&store, ["replay", id.as_str(), "--json"]);
    replay.expect_code(1);
    let r = replay.json();
    assert_eq!(r["divergence"]["field"], "status", "{replay}");
    assert_eq!(r["divergence"]["actual"], "exited", "{replay}");
    assert!(
        r["diff"].as_array().unwrap().iter().any(|l| l
            .as_str()
            .unwrap()
            .contains("its stderr ends: the budget ran out")),
        "{replay}"
    );
    let text = worldline(&store, ["replay", id.as_str()]);
    assert!(
        text.stdout.contains("field `status`") && text.stdout.contains("the budget ran out"),
        "{text}"
    );
}

/// A function tool the agent runs itself (the Agents SDK's
/// `@function_tool`): the world never sees the call, and its result, which
/// the next model request carries, is the observation of the ATIF step
/// that asked for it, as the trajectories export shows it (ATIF had the
/// call without a result).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn atif_shows_the_result_of_a_tool_the_agent_ran_itself() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = dir.path().join("local.py");
    std::fs::write(
        &agent,
        r#"
import json, os, urllib.request
def ask(messages):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "m", "messages": messages}).encode(),
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())["choices"][0]["message"]
messages = [{"role": "user", "content": "find the runbook"}]
said = ask(messages)
call = said["tool_calls"][0]
messages += [said, {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"runbook": "rb-1"})}]
print(ask(messages)["content"])
"#,
    )
    .unwrap();
    let case = write_case(
        dir.path(),
        "local",
        &format!(
            "{CASE_HEAD}exec = [\"python3\", \"{}\"]\n\n[model]\n[[model.rules]]\npath = \"$.role\"\nequals = \"user\"\nreply = {{ tool_calls = [{{ name = \"lookup_runbook\", arguments = {{ service = \"checkout\" }} }}] }}\n\n[[model.rules]]\npath = \"$.content.runbook\"\nequals = \"rb-1\"\nreply = '{{\"runbook\": \"rb-1\"}}'\n",
            agent.display()
        ),
    );
    let worlds = workspace_root().join("worlds");
    let out = worldline(
        &store,
        [
            "run",
            case.to_str().unwrap(),
            "--worlds",
            worlds.to_str().unwrap(),
            "--json",
        ],
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let atif = worldline(
        &store,
        ["export", id.as_str(), "--format", "atif", "-o", "-"],
    );
    atif.expect_code(0);
    let doc: Value = serde_json::from_str(&atif.stdout).unwrap();
    let step = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["tool_calls"][0]["function_name"] == "lookup_runbook")
        .unwrap_or_else(|| panic!("a step asks for lookup_runbook: {doc}"));
    let result = &step["observation"]["results"][0];
    assert_eq!(
        result["source_call_id"], step["tool_calls"][0]["tool_call_id"],
        "{step}"
    );
    assert!(
        result["content"].as_str().unwrap().contains("rb-1"),
        "{step}"
    );
    // Its trace has a tool span for it, between the answer that asked
    // for it and the request that carried its result (it had none).
    let receiver = crate::otel::Receiver::start(dir.path());
    let endpoint = receiver.endpoint();
    worldline(
        &store,
        ["otel", id.as_str(), "--endpoint", &endpoint, "--content"],
    )
    .expect_code(0);
    let got = receiver.received();
    let spans = crate::otel::spans(&got[0]);
    let tool = (spans.iter())
        .find(|s| s["name"] == "execute_tool lookup_runbook")
        .unwrap_or_else(|| panic!("no span for the tool the agent ran: {spans:?}"));
    assert_eq!(
        crate::otel::attr(tool, "worldline.ran_by"),
        Some("agent".into()),
        "{tool}"
    );
    assert_eq!(
        crate::otel::attr(tool, "gen_ai.tool.call.id"),
        Some(step["tool_calls"][0]["tool_call_id"].clone()),
        "{tool}"
    );
    let result = crate::otel::attr(tool, "gen_ai.tool.call.result").unwrap();
    assert!(result.as_str().unwrap().contains("rb-1"), "{tool}");
}

/// A fork's `--respond` to a model call an agent made over Anthropic's
/// Messages API, whose tool call's arguments are no JSON object, is
/// refused naming them: Messages carries a call's input as an object, and
/// the agent got `{}` for it without a word.
#[test]
fn a_respond_anthropic_cannot_carry_is_refused() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run_python(
        dir.path(),
        &store,
        "messages",
        r#"
import json, os, urllib.request
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
    data=json.dumps({"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01", "content-type": "application/json"})
with urllib.request.urlopen(req, timeout=10) as r:
    print(json.dumps({"got": json.loads(r.read())["content"]}))
"#,
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let respond = |arguments: &str| {
        serde_json::json!({"ok": {"choices": [{"finish_reason": "tool_calls", "index": 0, "message": {
            "content": null, "role": "assistant",
            "tool_calls": [{"id": "call_x", "type": "function", "function": {"name": "list_deploys", "arguments": arguments}}]}}],
            "created": 1, "id": "x", "model": "scripted", "object": "chat.completion"}})
        .to_string()
    };
    let refused = worldline(
        &store,
        [
            "fork",
            id.as_str(),
            "--at",
            "0",
            "--respond",
            &respond("{service: checkout"),
        ],
    );
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("Anthropic's Messages API")
            && refused.stderr.contains("{service: checkout"),
        "{refused}"
    );
    let fine = worldline(
        &store,
        [
            "fork",
            id.as_str(),
            "--at",
            "0",
            "--respond",
            &respond("{\"service\": \"checkout\"}"),
        ],
    );
    fine.expect_code(0);
}

/// An agent on the standard library: an https request to a route's host,
/// the Agents SDK's trace export over plain http and under the base URL,
/// and a tunnel to LangSmith.
const HTTPS_PROBE: &str = r#"
import json, os, urllib.error, urllib.request

def ask(url, data=None, headers={}):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=10) as r:
            return {"status": r.status}
    except urllib.error.HTTPError as e:
        return {"status": e.code}
    except urllib.error.URLError as e:
        return {"error": str(e.reason)}

key = {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
print(json.dumps({
    "https_route": ask("https://tickets.internal/api/tickets/T-100"),
    "http_route": ask("http://tickets.internal/api/tickets/T-100"),
    "traces": ask("http://api.openai.com/v1/traces/ingest", b"{}"),
    "traces_base": ask(os.environ["OPENAI_BASE_URL"] + "/traces/ingest", b"{}", key),
    "langsmith": ask("https://api.smith.langchain.com/runs", b"{}"),
}))
"#;

#[test]
fn https_to_a_route_host_names_the_http_url_and_telemetry_is_answered_unrecorded() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = dir.path().join("https_probe.py");
    std::fs::write(&agent, HTTPS_PROBE).unwrap();
    let case = write_case(
        dir.path(),
        "routes",
        "world = \"incident@v5\"\nseed = 3\nclock = 2026-03-01T12:05:00Z\ntask = {}\n",
    );
    let worlds = workspace_root().join("worlds");
    let out = worldline_raw([
        "run".as_ref(),
        case.as_os_str(),
        "--json".as_ref(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        "python3".as_ref(),
        agent.as_os_str(),
    ]);
    out.expect_code(0);
    let got = out.output();
    let refused = got["https_route"]["error"].as_str().unwrap_or_default();
    assert!(
        refused.contains("http://tickets.internal/api/tickets/{id}"),
        "the refusal names the http URL to use: {got}"
    );
    assert_eq!(got["http_route"]["status"], 200, "{got}");
    assert_eq!(got["traces"]["status"], 204, "{got}");
    assert_eq!(got["traces_base"]["status"], 204, "{got}");
    let langsmith = got["langsmith"]["error"].as_str().unwrap_or_default();
    assert!(langsmith.contains("LANGSMITH_TRACING=false"), "{got}");
    let b = read_bundle(&out.bundle());
    let denied: Vec<&Value> = b
        .events
        .iter()
        .filter(|e| e["call"] == "native:loopback/denied")
        .collect();
    assert_eq!(denied.len(), 1, "only the https route's tunnel: {denied:?}");
    assert_eq!(denied[0]["request"]["url"], "tickets.internal:443");
    for e in &b.events {
        let request = e["request"].to_string();
        assert!(
            !request.contains("traces/ingest") && !request.contains("smith"),
            "telemetry is not recorded: {request}"
        );
    }
}

/// A process that dies of an exception, then prints more (as an SDK's
/// tracing does at exit).
const DIES: &str = r#"
import atexit, sys
print("working", flush=True)
atexit.register(lambda: print("[non-fatal] Tracing: request failed: 403", file=sys.stderr))
def call_model():
    raise RuntimeError("the provider answered 500")
call_model()
"#;

/// `run --json` of the incident case with `python3 NAME.py` (its source
/// written in `dir`) as the native agent.
fn run_python(dir: &Path, store: &Path, name: &str, source: &str) -> common::CliOutput {
    let agent = dir.join(format!("{name}.py"));
    std::fs::write(&agent, source).unwrap();
    let case = write_case(dir, name, CASE_HEAD);
    let worlds = workspace_root().join("worlds");
    worldline_raw([
        "run".as_ref(),
        case.as_os_str(),
        "--json".as_ref(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        "python3".as_ref(),
        agent.as_os_str(),
    ])
}

#[test]
fn the_error_shows_the_agent_s_exception_and_history_prints_its_streams() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run_python(dir.path(), &store, "dies", DIES);
    // A process that dies is an agent fault: exit 3 (docs/cli.md).
    out.expect_code(3);
    let error = out.json()["error"].as_str().unwrap();
    assert!(
        error.contains("RuntimeError: the provider answered 500"),
        "the exception, not stderr's last line: {error}"
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let history = worldline(&store, ["history", id.as_str(), "--json"]);
    let agent_error = &history.json()["agent_error"];
    // What stderr ends with (the SDK's noise at exit here) is said too,
    // as in the run's error: which one ended the process does not show.
    assert_eq!(
        agent_error["message"],
        "its stderr ends: [non-fatal] Tracing: request failed: 403 (after an exception it printed: RuntimeError: the provider answered 500)",
        "{history}"
    );
    assert!(
        agent_error["at"]
            .as_str()
            .unwrap()
            .contains("in call_model"),
        "{history}"
    );
    let stderr = worldline(&store, ["history", id.as_str(), "--stderr"]);
    stderr.expect_code(0);
    assert!(
        stderr.stdout.contains("Traceback (most recent call last):")
            && stderr.stdout.contains("[non-fatal] Tracing"),
        "{stderr}"
    );
    let stdout = worldline(&store, ["history", id.as_str(), "--stdout"]);
    assert_eq!(stdout.stdout, "working\n", "{stdout}");
}

/// An agent that dies as an asyncio task group does (what the official
/// MCP client and LangGraph die of): its error is the group and what it
/// holds, raised where its task raised, not the frame's last line
/// (`+------------------------------------`) it was.
#[test]
fn an_exception_group_is_the_agent_s_error_by_what_it_holds() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run_python(
        dir.path(),
        &store,
        "group",
        "import asyncio\nasync def task():\n    raise ValueError('the real cause')\n\
         async def main():\n    async with asyncio.TaskGroup() as tg:\n        tg.create_task(task())\n\
         asyncio.run(main())\n",
    );
    out.expect_code(3);
    let said = "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception): ValueError: the real cause";
    assert!(
        out.json()["error"].as_str().unwrap().ends_with(said),
        "{out}"
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let history = worldline(&store, ["history", id.as_str(), "--json"]);
    let agent_error = &history.json()["agent_error"];
    assert_eq!(agent_error["message"], said, "{history}");
    assert!(
        agent_error["at"]
            .as_str()
            .unwrap()
            .ends_with("line 3, in task"),
        "{history}"
    );
}

/// A model call whose message no rule of the case matches.
const ASKS: &str = r#"
import json, os, urllib.request
body = json.dumps({"model": "m", "messages": [
    {"role": "user", "content": "something the script never heard of"}]}).encode()
req = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
             "Content-Type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=10)
except Exception as e:
    raise SystemExit("the model failed: %s" % e)
"#;

#[test]
fn a_script_that_runs_out_is_its_own_outcome_in_run_test_and_fuzz() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = dir.path().join("asks.py");
    std::fs::write(&agent, ASKS).unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let case = write_case(
        &cases,
        "unscripted",
        &format!(
            "{CASE_HEAD}\n[[model.rules]]\ncontains = \"hello\"\nreply = \"hi\"\n\n[fuzz]\nclock_skew_s = [-5, 5]\n"
        ),
    );
    let worlds = workspace_root().join("worlds");
    let exec = |command: &str, target: &Path, extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![command.as_ref(), target.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend([
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--store".as_ref(),
            store.as_os_str(),
            "--exec".as_ref(),
            "--".as_ref(),
            "python3".as_ref(),
            agent.as_os_str(),
        ]);
        worldline_raw(args)
    };
    let out = exec("run", &case, &["--json"]);
    out.expect_code(1);
    assert_eq!(out.json()["run_status"], "unscripted", "{out}");
    assert_eq!(out.json()["status"], "unscripted", "{out}");
    let error = out.json()["error"].as_str().unwrap();
    assert!(
        error.starts_with("scripted model: no reply for the last message (no [[model.rules]] matched and the case has no [[model.responses]])")
            && error.contains("something the script never heard of"),
        "{error}"
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let ui = crate::ui_support::Server::start(&store, &[]);
    let page = ui.get(&format!("/run/{id}"));
    assert!(
        page.body.contains("badge script\">unscripted"),
        "its own badge, not an agent fault's: {}",
        page.body
    );
    assert!(
        page.body.contains("not the agent")
            && page.body.contains("something the script never heard of"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("agent-error"), "{}", page.body);
    drop(ui);

    let suite = exec("test", &cases, &[]);
    suite.expect_code(1);
    assert!(
        suite
            .stdout
            .contains("unscripted — scripted model: no reply for the last message"),
        "{suite}"
    );

    let fuzz = exec("fuzz", &case, &["--runs", "2", "--json"]);
    fuzz.expect_code(1);
    let groups = fuzz.json()["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{fuzz}");
    assert_eq!(groups[0]["signature"], "unscripted", "{fuzz}");
    assert!(
        groups[0]["unscripted"]
            .as_str()
            .unwrap_or_default()
            .contains("something the script never heard of"),
        "{fuzz}"
    );
}

#[test]
fn run_without_an_agent_says_what_to_pass() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "plain", CASE_HEAD);
    let worlds = workspace_root().join("worlds");
    let out = worldline_at(
        dir.path(),
        [
            "run".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ],
        &[],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains("pass --agent FILE or --exec -- CMD"),
        "{out}"
    );
    assert!(!out.stderr.contains("Usage:"), "{out}");
}

#[test]
fn fuzz_prints_a_slow_rate_as_it_is() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "slow",
        &format!("{CASE_HEAD}\n[fuzz]\nclock_skew_s = [-5, 5]\n"),
    );
    let worlds = workspace_root().join("worlds");
    let out = worldline_raw([
        "fuzz".as_ref(),
        case.as_os_str(),
        "--runs".as_ref(),
        "1".as_ref(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        "python3".as_ref(),
        "-c".as_ref(),
        "import time; time.sleep(2.3)".as_ref(),
    ]);
    out.expect_code(0);
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("runs/s"))
        .unwrap_or_else(|| panic!("no rate:\n{out}"));
    let rate = line.trim().rsplit(", ").next().unwrap();
    assert!(
        rate.starts_with("0.") && !rate.starts_with("0 "),
        "below 1/s as such: {line}"
    );
}

#[test]
fn check_notes_a_scripted_call_to_a_tool_the_world_lacks() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "typo",
        &format!(
            "{CASE_HEAD}\n[model]\nresponses = [{{ tool_calls = [{{ name = \"rollback_deplyo\", arguments = {{ id = \"D-42\" }} }}] }}]\n"
        ),
    );
    let worlds = workspace_root().join("worlds");
    let out = worldline_raw([
        "check".as_ref(),
        case.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
    ]);
    assert!(
        out.stdout
            .contains("calls tool `rollback_deplyo`, which world incident@v4 does not have"),
        "{out}"
    );
    assert!(out.stdout.contains("typo.toml:"), "{out}");
    // The same name in two replies: each note at its own reply (the second
    // was placed at the first's line and column).
    let twice = write_case(
        dir.path(),
        "twice",
        &format!(
            "{CASE_HEAD}\n[[model.responses]]\ntool_calls = [{{ name = \"nope_one\", arguments = {{}} }}]\n\n[[model.responses]]\ncontent = \"x\"\n\n[[model.responses]]\ntool_calls = [{{ name = \"nope_one\", arguments = {{}} }}]\n"
        ),
    );
    let out = worldline_raw([
        "check".as_ref(),
        twice.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
    ]);
    let head = CASE_HEAD.lines().count();
    for (line, entry) in [(head + 3, "#1"), (head + 9, "#3")] {
        assert!(
            out.stdout
                .contains(&format!("twice.toml:{line}:24: [model] responses {entry}:")),
            "{out}"
        );
    }
}

/// A process that logs past `limits.stdout_bytes` on stderr, then dies:
/// its exception is still its error, from the last of what it printed
/// (kept past the flood), and `history --stderr` says how much was
/// dropped before it. The traceback was dropped with the flood, and the
/// error was the process's exit status alone.
#[test]
fn an_exception_after_a_flood_of_logs_is_still_the_error() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run_python(
        dir.path(),
        &store,
        "chatty",
        "import sys\nfor i in range(3000):\n    print(f'{i:>6} ' + 'z' * 92, file=sys.stderr)\n\
         def call_model():\n    raise RuntimeError('the provider answered 500')\ncall_model()\n",
    );
    out.expect_code(3);
    assert!(
        out.json()["error"]
            .as_str()
            .unwrap()
            .ends_with("RuntimeError: the provider answered 500"),
        "{out}"
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let stderr = worldline(&store, ["history", id.as_str(), "--stderr"]);
    stderr.expect_code(0);
    assert!(
        stderr
            .stdout
            .contains("bytes past limits.stdout_bytes were dropped; the last 16384 follow]")
            && stderr
                .stdout
                .trim_end()
                .ends_with("RuntimeError: the provider answered 500"),
        "{stderr}"
    );
}

/// `case from-run -o x.toml` (a bare name) writes an `exec` file argument
/// relative to the new case's folder, its `..` parts resolved: both stayed
/// absolute (`/…/cases/probe.py`, `/…/cases/../agent/ag.py`), so a clone
/// of the repository could not start the case's agent.
#[test]
fn a_case_from_a_native_run_names_its_files_relative_to_where_it_is_written() {
    let dir = temp_dir();
    let (_, own) = project(dir.path());
    let out = worldline_at(dir.path(), [os("run"), own.as_os_str(), os("--json")], &[]);
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let made = worldline_at(
        dir.path(),
        [
            os("case"),
            os("from-run"),
            os(&id),
            os("-o"),
            os("again.toml"),
        ],
        &[],
    );
    made.expect_code(0);
    let case: toml::Table =
        toml::from_str(&std::fs::read_to_string(dir.path().join("again.toml")).unwrap()).unwrap();
    assert_eq!(
        case["exec"].as_array().unwrap()[1].as_str(),
        Some("cases/probe.py"),
        "{case}"
    );
}

/// `--pass-env` is checked as `pass_env` in a file is: `FOO=bar` and an
/// empty name were taken without a word and nothing passed; now exit 2
/// naming the flag, before anything runs.
#[test]
fn a_pass_env_that_is_no_variable_s_name_is_refused_naming_the_flag() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "plain", CASE_HEAD);
    let worlds = workspace_root().join("worlds");
    for name in ["FOO=bar", ""] {
        let out = worldline_at(
            dir.path(),
            [
                "run".as_ref(),
                case.as_os_str(),
                "--worlds".as_ref(),
                worlds.as_os_str(),
                "--pass-env".as_ref(),
                name.as_ref(),
                "--exec".as_ref(),
                "--".as_ref(),
                "true".as_ref(),
            ],
            &[],
        );
        out.expect_code(2);
        assert!(
            out.stderr.contains("--pass-env") && out.stderr.contains("is not a variable's name"),
            "{name:?}: {out}"
        );
    }
}

/// An agent that cannot start unless `WL_TEST_A` is `a`.
const NEEDS_A: &str = r#"
import json, os, sys
if os.environ.get("WL_TEST_A") != "a":
    sys.exit("WL_TEST_A is not a: cannot start")
print(json.dumps({"ok": 1}))
"#;

/// `repro` of a native run from a shell whose passed-through variable
/// has another value: each way the repetitions ended otherwise comes with
/// why the first so ended (the agent's error, as `replay` words it), and
/// the variables that differ are named as `replay` names them, in the
/// text and in `--json` (it said only `0/2 … 2 exited`).
#[test]
fn a_repro_that_ends_otherwise_says_why_and_which_variables_differ() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = dir.path().join("needs_a.py");
    std::fs::write(&agent, NEEDS_A).unwrap();
    let case = write_case(
        dir.path(),
        "needs_a",
        &format!("{CASE_HEAD}[expect]\nunchanged = [\"alerts\"]\n"),
    );
    let worlds = workspace_root().join("worlds");
    let (case, worlds, agent) = (
        case.to_str().unwrap(),
        worlds.to_str().unwrap(),
        agent.to_str().unwrap(),
    );
    let store = store.to_str().unwrap();
    let out = worldline_at(
        dir.path(),
        [
            "run",
            case,
            "--json",
            "--worlds",
            worlds,
            "--store",
            store,
            "--pass-env",
            "WL_TEST_A",
            "--exec",
            "--",
            "python3",
            agent,
        ],
        &[("WL_TEST_A", "a")],
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let repro = |value: &str, json: bool| {
        let mut args = vec!["repro", id.as_str(), "--store", store, "--times", "2"];
        if json {
            args.push("--json");
        }
        let out = worldline_at(dir.path(), args, &[("WL_TEST_A", value)]);
        out.expect_code(0);
        out
    };
    let why = "the process exited with status 1; its stderr ends: WL_TEST_A is not a: cannot start";
    let other = repro("b", true);
    assert_eq!(other.json()["outcomes"], json!({"exited": 2}), "{other}");
    assert_eq!(other.json()["errors"], json!({"exited": why}), "{other}");
    assert_eq!(
        other.json()["env_differs"],
        json!(["WL_TEST_A (another value)"]),
        "{other}"
    );
    let text = repro("b", false);
    assert!(
        text.stdout
            .contains(&format!("       2  exited\n          first: {why}\n")),
        "{text}"
    );
    assert!(
        text.stdout.contains(
            "\n  passed-through variables differ from the recording: WL_TEST_A (another value)\n"
        ),
        "{text}"
    );
    // In the recorded environment: reproduced, nothing to say.
    let same = repro("a", true);
    assert_eq!(same.json()["reproduced"], 2, "{same}");
    assert_eq!(same.json()["errors"], json!({}), "{same}");
    assert!(same.json().get("env_differs").is_none(), "{same}");
}
