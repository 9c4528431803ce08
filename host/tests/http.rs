//! Agents that speak HTTP: examples/http-agent asks its model through
//! OpenAI Chat Completions and reaches its tools over MCP, with a plain
//! `wasi:http` client and no worldline interface. The mediator answers
//! both: the same model and tool call events as `model.complete` and
//! `tools.call` (with their transport), replayed bit for bit.

use crate::common;

use common::*;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

const MODEL_CALL: &str = "worldline:agent/model.complete";
const TOOL_CALL: &str = "worldline:agent/tools.call";
const HANDLE: &str = "wasi:http/outgoing-handler.handle";

fn agent() -> PathBuf {
    guest("http-agent")
}

fn http_case(name: &str) -> PathBuf {
    workspace_root()
        .join("cases/http")
        .join(format!("{name}.toml"))
}

fn output(out: &CliOutput) -> Value {
    serde_json::from_str(out.json()["output"].as_str().unwrap_or("null"))
        .unwrap_or_else(|e| panic!("output is not JSON ({e}):\n{out}"))
}

fn calls(bundle: &Path, call: &str) -> Vec<Value> {
    read_bundle(bundle)
        .events
        .into_iter()
        .filter(|e| e["call"] == call)
        .collect()
}

/// `run CASE --agent http-agent --json` in `store`, which must pass.
fn passes(store: &Path, case: &Path) -> CliOutput {
    let out = run_json(store, case, &agent());
    out.expect_code(0);
    out
}

/// The run of `out` replays identical.
#[track_caller]
fn replays(store: &Path, out: &CliOutput) {
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
}

/// A run's events without what differs between two runs of one case
/// (nothing should: the check is that they are equal).
fn events(out: &CliOutput) -> Vec<Value> {
    read_bundle(&out.bundle()).events
}

#[test]
fn the_http_agent_passes_the_model_cases_through_chat_completions_and_mcp() {
    let dir = temp_dir();
    let cases = workspace_root().join("cases/model");
    let out = worldline(
        dir.path(),
        [
            OsStr::new("test"),
            cases.as_os_str(),
            OsStr::new("--agent"),
            agent().as_os_str(),
            OsStr::new("--json"),
        ],
    );
    out.expect_code(0);
    assert_eq!(out.json()["passed"], 3, "{out}");
    for case in out.json()["cases"].as_array().unwrap() {
        replays_identical(dir.path(), case["run_id"].as_str().unwrap());
    }
}

#[test]
fn model_and_tool_calls_over_http_are_the_same_events_with_their_transport() {
    let store = temp_dir();
    let case = workspace_root().join("cases/model/rollback.toml");
    let first = passes(store.path(), &case);
    let bundle = first.bundle();
    let model = calls(&bundle, MODEL_CALL);
    assert_eq!(model.len(), 6, "one model call per turn");
    let http = &model[0]["request"]["transport"]["http"];
    assert_eq!(http["api"], "openai.chat");
    assert_eq!(http["url"], "https://api.openai.com/v1/chat/completions");
    assert_eq!(http["stream"], false);
    // The agent's body, as sent: the model, its tools, its temperature.
    let request = &model[0]["request"]["request"];
    assert_eq!(request["model"], "gpt-4o-mini");
    assert_eq!(request["temperature"], 0);
    assert!(request["tools"].as_array().unwrap().len() >= 5, "{request}");
    let tools = calls(&bundle, TOOL_CALL);
    let names: Vec<&str> = tools
        .iter()
        .map(|e| e["request"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "get_alert",
            "list_deploys",
            "rollback_deploy",
            "add_incident_note",
            "close_ticket"
        ]
    );
    assert_eq!(tools[0]["request"]["transport"]["http"]["api"], "mcp");
    assert_eq!(tools[0]["request"]["args"]["id"], "ALERT-7");
    // The agent's Authorization header value is never recorded.
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(
        !text.contains("sk-agent-secret"),
        "the guest's key is in the bundle"
    );
    // Two runs are the same run, and it replays identical.
    let second = passes(store.path(), &case);
    assert_eq!(events(&first), events(&second));
    replays(store.path(), &first);
}

#[test]
fn a_429_reaches_the_agent_with_retry_after_and_the_retry_is_its_own_call() {
    let store = temp_dir();
    let out = passes(store.path(), &http_case("rate-limited"));
    assert_eq!(output(&out)["model_retries"], 1, "{out}");
    let model = calls(&out.bundle(), MODEL_CALL);
    assert_eq!(model[0]["response"]["error"]["status"], 429);
    assert_eq!(
        model[0]["request"], model[1]["request"],
        "the retry asks the same"
    );
    // The agent waited the second `retry-after` asked for, in virtual time.
    let waited = model[1]["vtime_ns"].as_u64().unwrap() - model[0]["vtime_ns"].as_u64().unwrap();
    assert!(waited >= 1_000_000_000, "{waited}");
    replays(store.path(), &out);
}

#[test]
fn a_model_timeout_stalls_the_request_in_virtual_time_until_the_agent_gives_up_on_it() {
    let store = temp_dir();
    let case = workspace_root().join("cases/model/model-timeout.toml");
    let out = passes(store.path(), &case);
    let events = events(&out);
    let timed_out = events
        .iter()
        .position(|e| e["call"] == MODEL_CALL && e["response"]["error"]["kind"] == "timeout")
        .expect("the first model call times out");
    // The agent's future stays pending until its first-byte timeout (60 s
    // of virtual time), then reads a connection timeout and asks again.
    let gave_up = events[timed_out + 1..]
        .iter()
        .find(|e| e["call"] == MODEL_CALL)
        .expect("the agent asks again");
    let stalled =
        gave_up["vtime_ns"].as_u64().unwrap() - events[timed_out]["vtime_ns"].as_u64().unwrap();
    assert!(stalled >= 60_000_000_000, "{stalled}");
    assert_eq!(output(&out)["model_retries"], 1, "{out}");
    replays(store.path(), &out);
}

#[test]
fn an_mcp_tool_error_is_an_is_error_result_carrying_the_kind() {
    let store = temp_dir();
    let out = passes(store.path(), &http_case("tool-error"));
    let bundle = out.bundle();
    let tools = calls(&bundle, TOOL_CALL);
    assert_eq!(tools[1]["request"]["name"], "list_deploys");
    assert_eq!(tools[1]["response"]["error"]["kind"], "unavailable");
    assert_eq!(
        tools[2]["request"]["name"], "list_deploys",
        "the model asked again"
    );
    // What the model saw next is the MCP result's text: the error kind.
    let model = calls(&bundle, MODEL_CALL);
    let messages = model[2]["request"]["request"]["messages"]
        .as_array()
        .unwrap();
    let seen: Value =
        serde_json::from_str(messages.last().unwrap()["content"].as_str().unwrap()).unwrap();
    assert_eq!(seen["error"]["kind"], "unavailable");
    replays(store.path(), &out);
}

#[test]
fn an_unknown_url_is_denied_recorded_and_the_run_carries_on() {
    let store = temp_dir();
    let out = passes(store.path(), &http_case("denied-url"));
    assert_eq!(output(&out)["probe"]["error"], "HttpRequestDenied", "{out}");
    let handles = calls(&out.bundle(), HANDLE);
    let denied: Vec<&Value> = handles.iter().filter(|e| e["effect"] == "denied").collect();
    assert_eq!(denied.len(), 1, "{handles:?}");
    assert_eq!(denied[0]["request"]["url"], "https://example.com/status");
    assert_eq!(denied[0]["request"]["method"], "GET");
    // Recorded with what the world does answer (rules 4), as the agent is
    // told: it said HTTP was no part of a world, to use
    // worldline:agent/model.
    let why = denied[0]["response"].to_string();
    assert!(
        why.contains("only the model APIs") && why.contains("http://world/mcp"),
        "{why}"
    );
    // Routed requests are recorded once, as the call they are (with their
    // transport), not as a handle event.
    assert_eq!(handles.len(), 1, "{handles:?}");
    let model = calls(&out.bundle(), MODEL_CALL);
    assert_eq!(
        model[0]["request"]["transport"]["http"]["api"],
        "openai.chat"
    );
}

#[test]
fn a_run_forks_at_a_tool_call_that_came_over_mcp() {
    let store = temp_dir();
    let case = workspace_root().join("cases/model/rollback.toml");
    let run = passes(store.path(), &case);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let events = events(&run);
    let at = events
        .iter()
        .position(|e| e["call"] == TOOL_CALL && e["request"]["name"] == "close_ticket")
        .unwrap();
    let fork = worldline(
        store.path(),
        [
            "fork",
            &id,
            "--at",
            &at.to_string(),
            "--deny",
            "close_ticket",
            "--json",
        ],
    );
    fork.expect_code(1); // the case expects the ticket closed
    let forked = read_bundle(&fork.bundle()).events;
    assert_eq!(forked[..at], events[..at], "the prefix is the parent's");
    assert_eq!(forked[at]["response"]["error"]["kind"], "denied");
    assert_eq!(forked[at]["request"]["transport"]["http"]["api"], "mcp");
    replays(store.path(), &fork);
}

#[test]
fn a_streamed_completion_arrives_as_server_sent_events_and_replays() {
    let store = temp_dir();
    let out = passes(store.path(), &http_case("streamed"));
    let bundle = out.bundle();
    let model = calls(&bundle, MODEL_CALL);
    assert_eq!(model.len(), 6);
    assert_eq!(model[0]["request"]["transport"]["http"]["stream"], true);
    // `stream` and `stream_options` travel with the transport, not to the provider.
    assert!(model[0]["request"]["request"].get("stream").is_none());
    assert!(
        model[0]["request"]["request"]
            .get("stream_options")
            .is_none()
    );
    // The answers (in 16-character pieces) were put together from the
    // stream; reading it is plumbing, not recorded call by call.
    let reads = calls(&bundle, "wasi:io/streams.input-stream.blocking-read");
    assert!(reads.iter().all(|e| e["request"]["stream"] != "http-body"));
    assert_eq!(output(&out)["cause_deploy"], "D-42");
    replays(store.path(), &out);
}

#[test]
fn anthropic_messages_are_the_same_model_calls_and_replay() {
    let store = temp_dir();
    let out = passes(store.path(), &http_case("anthropic"));
    assert_eq!(output(&out)["stop_reason"], "end_turn", "{out}");
    let bundle = out.bundle();
    let model = calls(&bundle, MODEL_CALL);
    assert_eq!(model.len(), 6);
    let http = &model[0]["request"]["transport"]["http"];
    assert_eq!(http["api"], "anthropic.messages");
    assert_eq!(http["url"], "https://api.anthropic.com/v1/messages");
    // The provider saw chat completions: the system prompt first, and the
    // tool results as tool messages the scripted rules read.
    let messages = model[1]["request"]["request"]["messages"]
        .as_array()
        .unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages.last().unwrap()["role"], "tool");
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(
        !text.contains("sk-ant-agent-secret"),
        "the guest's key is in the bundle"
    );
    replays(store.path(), &out);
}

#[test]
fn a_fork_responds_at_a_model_call_that_came_over_http() {
    let store = temp_dir();
    let case = workspace_root().join("cases/model/rollback.toml");
    let run = passes(store.path(), &case);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let events = events(&run);
    let at = events.iter().position(|e| e["call"] == MODEL_CALL).unwrap();
    // The model's first answer, edited: another alert to look at (in the
    // one shape `--respond` takes everywhere: `{"ok": …}`).
    let mut respond = serde_json::json!({"ok": events[at]["response"]["ok"].clone()});
    let call = &mut respond["ok"]["choices"][0]["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "get_alert");
    call["arguments"] = Value::String("{\"id\":\"ALERT-404\"}".into());
    let respond = respond.to_string();
    let fork = worldline(
        store.path(),
        [
            "fork",
            &id,
            "--at",
            &at.to_string(),
            "--respond",
            &respond,
            "--json",
        ],
    );
    let forked = read_bundle(&fork.bundle()).events;
    assert_eq!(forked[..at], events[..at], "the prefix is the parent's");
    assert_eq!(forked[at]["injected"]["action"], "fork-respond", "{fork}");
    // The edited answer reached the agent as OpenAI's bytes: it asked the
    // world (over MCP) for the alert the fork named.
    let tool = forked[at..]
        .iter()
        .find(|e| e["call"] == TOOL_CALL)
        .expect("the agent calls a tool after the edited answer");
    assert_eq!(tool["request"]["args"]["id"], "ALERT-404", "{fork}");
    assert_eq!(tool["request"]["transport"]["http"]["api"], "mcp");
    replays(store.path(), &fork);
}

/// A fork that answers a model call with the answer it had takes the
/// virtual time the call took (the case's `latency_ms = 800`), so the
/// events after it happen when they did and the fork is the parent (rules
/// 13): every later event was 800 ms earlier, and so were the times the
/// world recorded (its final state another).
#[test]
fn a_fork_that_answers_a_model_call_as_recorded_is_its_parent() {
    let store = temp_dir();
    let case = workspace_root().join("cases/model/rollback.toml");
    let run = passes(store.path(), &case);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let events = events(&run);
    let at = events.iter().position(|e| e["call"] == MODEL_CALL).unwrap();
    let respond = serde_json::json!({"ok": events[at]["response"]["ok"].clone()}).to_string();
    let fork = worldline(
        store.path(),
        [
            "fork",
            &id,
            "--at",
            &at.to_string(),
            "--respond",
            &respond,
            "--json",
        ],
    );
    fork.expect_code(0);
    let forked = read_bundle(&fork.bundle()).events;
    assert_eq!(forked.len(), events.len(), "{fork}");
    for (f, e) in forked.iter().zip(&events).skip(at) {
        assert_eq!(f["vtime_ns"], e["vtime_ns"], "event {}: {fork}", e["seq"]);
    }
    assert_eq!(
        fork.json()["final_state_hash"],
        run.json()["final_state_hash"],
        "{fork}"
    );
    replays(store.path(), &fork);
}

#[test]
fn openai_responses_are_the_same_model_calls_and_replay() {
    let store = temp_dir();
    let out = passes(store.path(), &http_case("responses"));
    assert_eq!(output(&out)["response_status"], "completed", "{out}");
    let model = calls(&out.bundle(), MODEL_CALL);
    assert_eq!(model.len(), 6);
    let http = &model[0]["request"]["transport"]["http"];
    assert_eq!(http["api"], "openai.responses");
    assert_eq!(http["url"], "https://api.openai.com/v1/responses");
    // The provider saw chat completions: instructions as the system
    // message, function_call_output items as tool messages.
    let messages = model[1]["request"]["request"]["messages"]
        .as_array()
        .unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[2]["tool_calls"][0]["function"]["name"],
        "get_alert"
    );
    assert_eq!(messages.last().unwrap()["role"], "tool");
    replays(store.path(), &out);
}

#[test]
fn a_worlds_own_routes_answer_with_its_tools_and_their_statuses() {
    let store = temp_dir();
    // The case drives the agent by a list of requests, so it lives with
    // the tests' cases rather than in the example suites.
    let worlds = workspace_root().join("worlds");
    let out = run_in(store.path(), &case("http-rest-api"), &agent(), &worlds);
    out.expect_code(0);
    let responses = output(&out)["responses"].clone();
    // Stale is an ordinary 200: the list as of 15 minutes ago, without D-42.
    let ids: Vec<&str> = responses[0]["body"]["deploys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert!(!ids.is_empty() && !ids.contains(&"D-42"), "{ids:?}");
    assert_eq!(responses[1]["body"]["error"]["kind"], "denied");
    assert_eq!(responses[2]["body"]["error"]["kind"], "not-found");
    assert_eq!(responses[4]["body"]["status"], "rolled_back");
    let tools = calls(&out.bundle(), TOOL_CALL);
    let names: Vec<&str> = tools
        .iter()
        .map(|e| e["request"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "list_deploys",
            "close_ticket",
            "get_ticket",
            "get_alert",
            "rollback_deploy"
        ]
    );
    assert_eq!(tools[0]["injected"]["action"], "stale");
    assert_eq!(
        tools[0]["request"]["args"],
        serde_json::json!({"service": "checkout"})
    );
    assert_eq!(
        tools[4]["request"]["args"],
        serde_json::json!({"id": "D-42", "reason": "ALERT-7"})
    );
    assert_eq!(tools[4]["request"]["transport"]["http"]["api"], "rest");
    replays(store.path(), &out);
}

/// Every event of a run over HTTP, by call: the plumbing of `wasi:http`
/// (fields, requests, bodies, futures, responses, the streams of their
/// bodies) is folded into the call events (decision 0276).
#[test]
fn the_http_plumbing_is_folded_into_the_call_events() {
    let store = temp_dir();
    let case = workspace_root().join("cases/model/rollback.toml");
    let out = passes(store.path(), &case);
    let events = events(&out);
    let plumbing: Vec<&Value> = events
        .iter()
        .filter(|e| {
            let call = e["call"].as_str().unwrap_or("");
            call.starts_with("wasi:http/")
                && call != "wasi:http/protocol.answer"
                && e["effect"] != "denied"
                || e["request"]["stream"] == "http-body"
        })
        .collect();
    assert!(plumbing.is_empty(), "{plumbing:?}");
    // 6 model calls and 5 tool calls, each one event, plus MCP's
    // initialize and notification (protocol answers) and tools/list.
    assert_eq!(calls(&out.bundle(), MODEL_CALL).len(), 6);
    assert_eq!(calls(&out.bundle(), TOOL_CALL).len(), 5);
    assert_eq!(calls(&out.bundle(), "wasi:http/protocol.answer").len(), 2);
    assert!(events.len() < 60, "{} events", events.len());
}

/// Runs recorded before the fold (tests/bundles/http-plumbing: a store made
/// by worldline at a311351, the plumbing an event per call) replay
/// `identical`, and a fork of one keeps recording the plumbing.
#[test]
fn runs_recorded_with_the_http_plumbing_replay_identical() {
    let store = temp_dir();
    let old = workspace_root().join("tests/bundles/http-plumbing");
    worldline(store.path(), [OsStr::new("import"), old.as_os_str()]).expect_code(0);
    // A store only read from gets no note of what was read from it.
    assert!(
        !old.join("cache/objects").exists(),
        "import wrote into {}",
        old.display()
    );
    let mut runs: Vec<String> = std::fs::read_dir(old.join("runs"))
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.trim_end_matches(".jsonl").to_string()
        })
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 3);
    for run in &runs {
        replays_identical(store.path(), run);
    }
    // A fork at the last model call keeps the parent's plumbing events
    // before it, and records them after it the same way.
    let run = &runs[0];
    let bundle = common::bundle_in(store.path(), run);
    let parent = read_bundle(&bundle).events;
    let at = parent
        .iter()
        .rposition(|e| e["call"] == MODEL_CALL)
        .expect("the denied-url run asks its model");
    let fork = worldline(
        store.path(),
        ["fork", run, "--at", &at.to_string(), "--json"],
    );
    let forked = read_bundle(&fork.bundle()).events;
    assert_eq!(forked[..at], parent[..at]);
    assert!(
        forked[at..].iter().any(|e| e["call"]
            .as_str()
            .unwrap_or("")
            .starts_with("wasi:http/types.")),
        "the fork records the plumbing as its parent did"
    );
    replays(store.path(), &fork);
}

/// A request body past its cap (16 MiB) traps the run with an error naming
/// the cap, and the run still leaves its bundle.
#[test]
fn a_request_body_past_its_cap_ends_the_run_naming_the_cap() {
    let dir = temp_dir();
    let big = "x".repeat((16 << 20) + 1);
    let case = format!(
        r#"world = "incident@v5"
seed = 1
clock = 2026-03-01T12:05:00Z

[task]
requests = [{{ method = "POST", url = "https://deploys.internal/api/deploys/D-42/rollback", body = {{ reason = "{big}" }} }}]
"#
    );
    let path = write_case(dir.path(), "big-body", &case);
    let store = temp_dir();
    let out = run_in(
        store.path(),
        &path,
        &agent(),
        &workspace_root().join("worlds"),
    );
    assert_eq!(out.json()["run_status"], "trapped", "{out}");
    let text = out.json().to_string();
    assert!(
        text.contains("passed 16 MiB, the cap on one request body"),
        "{out}"
    );
    assert!(out.bundle().exists());
}
