//! The official `openai` and `mcp` Python packages inside the sandbox:
//! examples/python-openai-agent built with `build-python --requirements
//! --no-deps --wasi-wheels` from the pinned packages and the WASI builds of
//! `jiter`, `pydantic-core` and `rpds-py` that tests/python-wasi-wheels.sh
//! makes (tests/run builds them once, and exports their folder as
//! `PYTHON_WASI_WHEELS`).
//! Run by the real binary; every run replays bit for bit.

use crate::common;

use common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const MODEL_CALL: &str = "worldline:agent/model.complete";
const TOOL_CALL: &str = "worldline:agent/tools.call";
const AGENT: &str = "python-openai-agent";

/// The folder of WASI wheels; a missing one fails saying how to build it:
/// these tests never pass without running.
fn wasi_wheels() -> PathBuf {
    let dir = std::env::var_os("PYTHON_WASI_WHEELS").map(PathBuf::from);
    match dir {
        Some(d) if d.is_dir() => d,
        _ => panic!(
            "PYTHON_WASI_WHEELS does not name the folder of WASI wheels these tests build the \
             openai agent with. Build them (once; kept under the target folder) and test again:\n  \
             . tests/python-wasi-wheels.sh && ensure_python_wasi_wheels \"$CARGO_TARGET_DIR\""
        ),
    }
}

/// `examples/NAME` built once per test process into `cell`: its agent.py
/// with its pinned requirements (`--no-deps`) and the WASI wheels.
fn built(cell: &'static OnceLock<PathBuf>, name: &str) -> PathBuf {
    cell.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-guests");
        std::fs::create_dir_all(&dir).unwrap();
        let wasm = dir.join(format!("{name}.wasm"));
        let src = workspace_root().join("examples").join(name);
        let requirements = src.join("requirements.txt");
        let wheels = wasi_wheels();
        let out = worldline_raw([
            OsStr::new("build-python"),
            src.join("agent.py").as_os_str(),
            OsStr::new("-o"),
            wasm.as_os_str(),
            OsStr::new("--requirements"),
            requirements.as_os_str(),
            OsStr::new("--no-deps"),
            OsStr::new("--wasi-wheels"),
            wheels.as_os_str(),
        ]);
        out.expect_code(0);
        wasm
    })
    .clone()
}

/// examples/python-openai-agent (`openai` + `mcp`).
fn openai_agent() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    built(&BUILT, AGENT)
}

/// examples/python-anthropic-agent (`anthropic` + `mcp`).
fn anthropic_agent() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    built(&BUILT, "python-anthropic-agent")
}

/// examples/python-agents-sdk-agent (`openai-agents`).
fn agents_sdk_agent() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    built(&BUILT, "python-agents-sdk-agent")
}

fn model_case(name: &str) -> PathBuf {
    workspace_root().join(format!("cases/{name}.toml"))
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn the_openai_package_runs_in_the_sandbox_passes_rollback_replays_and_forks() {
    let store = shared_store();
    let agent = openai_agent();
    let out = run_json(store, &model_case("model/rollback"), &agent);
    out.expect_code(0);
    let o = out.output();
    assert_eq!(o["cause_deploy"], "D-42", "{out}");
    assert_eq!(
        o["openai"], "3.57.0",
        "the pinned openai is the one bundled"
    );
    let model = calls_of(&out.bundle(), MODEL_CALL);
    assert_eq!(model.len(), 6, "{out}");
    assert_eq!(
        model[0]["request"]["transport"]["http"]["api"],
        "openai.chat"
    );
    assert!(
        !std::fs::read_to_string(out.bundle())
            .unwrap()
            .contains("sk-agent-secret")
    );
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
    forks_at_a_model_call_and_at_a_tool_call(store, &out);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn the_openai_packages_own_retry_meets_an_injected_model_timeout_and_replays() {
    let store = shared_store();
    let out = run_json(store, &model_case("model/model-timeout"), &openai_agent());
    out.expect_code(0);
    assert_eq!(out.output()["cause_deploy"], "D-42", "{out}");
    // The first model call times out; the SDK sends it again.
    let model = calls_of(&out.bundle(), MODEL_CALL);
    assert_eq!(model.len(), 7, "{out}");
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
}

/// `fork --respond` at a model call (the last answer edited) and at a tool
/// call (the alert the world answered edited) of `run`: each edit reaches
/// the SDK (the final answer changes; the edited alert goes to the model in
/// the next request), each fork keeps the parent's prefix and replays
/// identical. The model answers are recorded in the Chat Completions shape
/// whatever API the SDK spoke, so one edit serves the three agents.
fn forks_at_a_model_call_and_at_a_tool_call(store: &Path, run: &CliOutput) {
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let parent = read_bundle(&run.bundle()).events;
    let fork = |at: usize, respond: serde_json::Value| {
        let fork = wl(
            store,
            &[
                &"fork",
                &id,
                &"--at",
                &at.to_string(),
                &"--respond",
                &respond.to_string(),
                &"--json",
            ],
        );
        fork.expect_code(0);
        let forked = read_bundle(&fork.bundle()).events;
        assert_eq!(forked[..at], parent[..at], "the prefix");
        replays_identical(store, fork.json()["run_id"].as_str().unwrap());
        (fork, forked)
    };
    let at = parent
        .iter()
        .rposition(|e| e["call"] == MODEL_CALL)
        .unwrap();
    let mut answer = serde_json::json!({"ok": parent[at]["response"]["ok"].clone()});
    answer["ok"]["choices"][0]["message"]["content"] =
        "{\"cause_deploy\": \"D-42\", \"action\": \"forked\"}".into();
    let (forked, _) = fork(at, answer);
    assert_eq!(forked.output()["action"], "forked", "{forked}");
    let at = parent
        .iter()
        .position(|e| e["call"] == TOOL_CALL && e["request"]["name"] == "get_alert")
        .unwrap();
    let mut alert = parent[at]["response"].clone();
    alert["ok"]["summary"] = "EDITED BY THE FORK".into();
    let (forked, events) = fork(at, alert);
    let next = events[at + 1..]
        .iter()
        .find(|e| e["call"] == MODEL_CALL)
        .expect("a model call after the edited tool call");
    assert!(
        next["request"].to_string().contains("EDITED BY THE FORK"),
        "the edited alert reaches the model: {forked}"
    );
}

/// The world's tools reached through the official `mcp` client: its
/// `initialize`, `tools/list` and `tools/call` over streamable HTTP are
/// the recorded tool calls.
fn tool_names(bundle: &Path) -> Vec<String> {
    calls_of(bundle, TOOL_CALL)
        .iter()
        .map(|c| {
            c["request"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn the_anthropic_package_with_the_mcp_client_passes_rollback_replays_and_forks() {
    let store = shared_store();
    let out = run_json(store, &model_case("model/rollback"), &anthropic_agent());
    out.expect_code(0);
    let o = out.output();
    assert_eq!(o["cause_deploy"], "D-42", "{out}");
    assert_eq!(
        o["anthropic"], "2.14.0",
        "the pinned anthropic is the one bundled"
    );
    let model = calls_of(&out.bundle(), MODEL_CALL);
    assert_eq!(
        model[0]["request"]["transport"]["http"]["api"],
        "anthropic.messages"
    );
    assert!(tool_names(&out.bundle()).contains(&"rollback_deploy".to_string()));
    assert!(
        !std::fs::read_to_string(out.bundle())
            .unwrap()
            .contains("sk-ant-agent-secret")
    );
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
    forks_at_a_model_call_and_at_a_tool_call(store, &out);
}

/// cases/model/model-timeout.toml: the first model call times out, the
/// `anthropic` package's own retry sends the same request again, and the
/// agent passes.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn the_anthropic_packages_own_retry_meets_an_injected_model_timeout_and_replays() {
    let store = shared_store();
    let out = run_json(
        store,
        &model_case("model/model-timeout"),
        &anthropic_agent(),
    );
    out.expect_code(0);
    assert_eq!(out.json()["status"], "passed", "{out}");
    assert_eq!(out.output()["cause_deploy"], "D-42", "{out}");
    let model = calls_of(&out.bundle(), MODEL_CALL);
    assert_eq!(model.len(), 7, "{out}");
    assert_eq!(model[0]["response"]["error"]["kind"], "timeout", "{out}");
    assert_eq!(
        model[0]["request"], model[1]["request"],
        "the retry is the same request: {out}"
    );
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn the_openai_agents_sdk_runs_its_agent_in_the_sandbox_replays_and_forks() {
    let store = shared_store();
    let out = run_json(store, &model_case("model/rollback"), &agents_sdk_agent());
    out.expect_code(0);
    let o = out.output();
    assert_eq!(o["cause_deploy"], "D-42", "{out}");
    assert_eq!(
        o["agents"], "0.24.0",
        "the pinned openai-agents is the one bundled"
    );
    assert_eq!(o["agent"], "triage", "no handoff: the triage agent answers");
    assert!(tool_names(&out.bundle()).contains(&"close_ticket".to_string()));
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
    forks_at_a_model_call_and_at_a_tool_call(store, &out);
}

/// The Agents SDK's own example (`examples/python-agents-sdk-agent/
/// handoff.toml`): the triage agent's first answer is the SDK's handoff
/// tool, the SDK's loop runs the responder (its instructions, the same
/// conversation) and the responder passes the case.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn the_openai_agents_sdk_hands_off_to_its_responder_and_replays() {
    let store = shared_store();
    let case = workspace_root().join("examples/python-agents-sdk-agent/handoff.toml");
    let out = run_json(store, &case, &agents_sdk_agent());
    out.expect_code(0);
    assert_eq!(out.json()["status"], "passed", "{out}");
    assert_eq!(out.output()["agent"], "responder", "{out}");
    let model = calls_of(&out.bundle(), MODEL_CALL);
    assert_eq!(
        model[0]["response"]["ok"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "transfer_to_responder",
        "{out}"
    );
    let system = &model[1]["request"]["request"]["messages"][0];
    assert_eq!(system["role"], "system", "{out}");
    assert!(
        system["content"]
            .as_str()
            .unwrap()
            .starts_with("You are the on-call engineer"),
        "the responder's instructions after the handoff: {out}"
    );
    assert!(tool_names(&out.bundle()).contains(&"rollback_deploy".to_string()));
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
}

/// A campaign's group of the agent's own faults says the agent's error:
/// the SDK gave up on the model's 429s after its retries, and the group
/// was a bare `trapped`, with neither a reason nor a fault (the 429s are
/// the case's own alternatives).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn a_campaign_s_group_of_agent_faults_says_the_agent_s_error() {
    let dir = temp_dir();
    let retries =
        std::fs::read_to_string(workspace_root().join("cases/sdk/fuzz-retries.toml")).unwrap();
    // The model's first answer a 429 one time in two: three in a row, one
    // run in eight, exhaust the SDK's two retries.
    let case = dir.path().join("fuzz-retries.toml");
    std::fs::write(&case, retries.replacen("weight = 3", "weight = 1", 1)).unwrap();
    let (worlds, agent) = (workspace_root().join("worlds"), openai_agent());
    let fuzz = |json: bool| {
        let mut args: Vec<&dyn AsRef<OsStr>> = vec![
            &"fuzz",
            &case,
            &"--worlds",
            &worlds,
            &"--agent",
            &agent,
            &"--runs",
            &"40",
            &"--seed",
            &"11",
        ];
        if json {
            args.push(&"--json");
        }
        wl(dir.path(), &args)
    };
    let out = fuzz(true);
    let doc = out.json();
    let trapped = (doc["groups"].as_array().unwrap().iter())
        .find(|g| g["signature"] == "trapped")
        .unwrap_or_else(|| panic!("no trapped group: {out}"));
    let error = trapped["agent_error"].as_str().unwrap_or_default();
    assert!(
        error.contains("openai.RateLimitError: Error code: 429"),
        "{out}"
    );
    let text = fuzz(false);
    assert!(
        text.stdout.contains("\n      the agent's error: ")
            && text.stdout.contains("RateLimitError"),
        "{text}"
    );
    // The UI's campaign page says it too.
    let ui = crate::ui_support::Server::start(dir.path(), &[]);
    let page = ui.get(&format!("/campaign/{}", doc["campaign"].as_str().unwrap()));
    assert!(
        page.body.contains("the agent&#39;s error: ") || page.body.contains("the agent's error: "),
        "{}",
        page.body
    );
    assert!(page.body.contains("RateLimitError"), "{}", page.body);
}

/// A fuzz campaign over the openai + mcp agent with model faults (429s
/// and 503s drawn from the model seed) and tool faults (`cases/sdk/
/// fuzz-retries.toml`): the SDK retries each failed model call, the
/// agent lists again after a failed tool call, every run passes, and the
/// kept runs replay identical.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn a_fuzz_campaign_with_model_and_tool_faults_over_the_openai_agent() {
    let store = shared_store();
    let case = workspace_root().join("cases/sdk/fuzz-retries.toml");
    let out = wl(
        store,
        &[
            &"fuzz",
            &case,
            &"--agent",
            &openai_agent(),
            &"--runs",
            &"6",
            &"--keep-all",
            &"--json",
        ],
    );
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["summary"]["passed"], 6, "{out}");
    let (mut retried, mut tool_faults) = (0, 0);
    for bundle in files_with_suffix(&store.join("runs"), ".jsonl") {
        let b = read_bundle(&bundle);
        if !b.header["case"].to_string().contains("fuzz-retries") {
            continue; // another test's run in the store
        }
        tool_faults += b
            .events
            .iter()
            .filter(|e| e["call"] == TOOL_CALL && e["injected"]["fuzz"].is_object())
            .count();
        let model: Vec<&serde_json::Value> = b
            .events
            .iter()
            .filter(|e| e["call"] == MODEL_CALL)
            .collect();
        if let Some(i) = model
            .iter()
            .position(|e| e["response"].get("error").is_some())
        {
            retried += 1;
            // The SDK's retry is the same request, asked again.
            assert_eq!(model[i]["request"], model[i + 1]["request"]);
            replays_identical(store, bundle.file_stem().unwrap().to_str().unwrap());
        }
    }
    assert!(retried > 0, "no run met a model fault");
    assert!(tool_faults > 0, "no run met a tool fault");
}
