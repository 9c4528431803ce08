//! Agents written with the vendors' own npm packages, unchanged: the
//! examples `examples/js-openai-agent` (the official `openai` package and
//! the MCP TypeScript SDK's client), `examples/js-vercel-agent` (the
//! Vercel AI SDK, `ai` + `@ai-sdk/openai`) and
//! `examples/js-anthropic-agent` (`@anthropic-ai/sdk` tool use), built
//! with `worldline build-js` from the pinned packages tests/run installs
//! into build-js's cache (tests/js-packages.sh) and run by the real
//! binary. The sandbox answers their HTTP requests: model APIs, the world's
//! tools over MCP, the world's own REST routes.

use crate::common;

use common::{
    CliOutput, js_guest, read_bundle, run_json, shared_store, temp_dir, workspace_root, worldline,
    write_case,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const MODEL_CALL: &str = "worldline:agent/model.complete";
const TOOL_CALL: &str = "worldline:agent/tools.call";

/// One of the SDK examples, built and loaded once into the shared store
/// (its first run compiles the engine, tens of seconds).
struct Example {
    name: &'static str,
    /// The model API the example speaks by default.
    api: &'static str,
}

const OPENAI: Example = Example {
    name: "js-openai-agent",
    api: "openai.chat",
};
const VERCEL: Example = Example {
    name: "js-vercel-agent",
    api: "openai.chat",
};
const ANTHROPIC: Example = Example {
    name: "js-anthropic-agent",
    api: "anthropic.messages",
};
const EXAMPLES: [&Example; 3] = [&OPENAI, &VERCEL, &ANTHROPIC];
/// The OpenAI Agents SDK (`@openai/agents`): the largest bundle.
const AGENTS_SDK: Example = Example {
    name: "js-agents-sdk-agent",
    api: "openai.chat",
};

impl Example {
    fn wasm(&self) -> PathBuf {
        static BUILT: OnceLock<std::sync::Mutex<BTreeMap<&'static str, PathBuf>>> = OnceLock::new();
        let agent = format!("examples/{}/agent.ts", self.name);
        let wasm = js_guest(&agent);
        let mut primed = BUILT.get_or_init(Default::default).lock().unwrap();
        primed
            .entry(self.name)
            .or_insert_with(|| {
                // Compile once into the shared store's cache, before the
                // tests that use it at the same time.
                let first = run_json(shared_store(), &model_case("rollback"), &wasm);
                first.expect_code(0);
                wasm
            })
            .clone()
    }

    /// `run CASE --json` in the shared store.
    fn run(&self, case: &Path) -> CliOutput {
        run_json(shared_store(), case, &self.wasm())
    }

    /// A run of `case` that must pass.
    fn passes(&self, case: &Path) -> CliOutput {
        let out = self.run(case);
        assert_eq!(out.code, 0, "{} on {}:\n{out}", self.name, case.display());
        out
    }

    /// A run of `case` (written outside the tree) with the workspace's worlds.
    fn run_in_worlds(&self, case: &Path) -> CliOutput {
        common::run_in(
            shared_store(),
            case,
            &self.wasm(),
            &workspace_root().join("worlds"),
        )
    }
}

fn model_case(name: &str) -> PathBuf {
    workspace_root().join(format!("cases/model/{name}.toml"))
}

fn http_case(name: &str) -> PathBuf {
    workspace_root().join(format!("cases/http/{name}.toml"))
}

fn output(out: &CliOutput) -> Value {
    serde_json::from_str(out.json()["output"].as_str().unwrap_or("null"))
        .unwrap_or_else(|e| panic!("output is not JSON ({e}):\n{out}"))
}

fn events(out: &CliOutput) -> Vec<Value> {
    read_bundle(&out.bundle()).events
}

fn calls(out: &CliOutput, call: &str) -> Vec<Value> {
    events(out)
        .into_iter()
        .filter(|e| e["call"] == call)
        .collect()
}

fn replays(out: &CliOutput) {
    common::replays_identical(shared_store(), out.json()["run_id"].as_str().unwrap());
}

/// The OpenAI Agents SDK, built as written (no `--minify`: its bundle's
/// source map once ran the engine out of memory at build time), runs the
/// rollback within a case's default fuel and memory, and replays.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn the_agents_sdk_builds_as_written_and_fits_the_default_limits() {
    let case = model_case("rollback");
    let text = std::fs::read_to_string(&case).unwrap();
    assert!(!text.contains("[limits]"), "{} sets limits", case.display());
    let out = AGENTS_SDK.passes(&case);
    assert_eq!(output(&out)["cause_deploy"], "D-42", "{out}");
    assert_eq!(calls(&out, MODEL_CALL).len(), 6, "{out}");
    replays(&out);
}

/// A model that fails every call: the Agents SDK retries each (its own
/// backoff, in virtual time) and then gives up with its own error, which
/// ends the run (trapped, the exception's text in the error), well inside
/// the default fuel: no silent `out_of_fuel`.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn the_agents_sdk_ends_with_its_own_error_when_the_model_keeps_failing() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "model-down",
        r#"world = "incident@v4"
seed = 7
clock = 2026-03-01T12:05:00Z
task = { alert = "ALERT-7", ticket = "T-100" }

[[model.rules]]
reply = { error = "unavailable" }
"#,
    );
    let out = AGENTS_SDK.run_in_worlds(&case);
    out.expect_code(3);
    let doc = out.json();
    assert_eq!(doc["run_status"], "trapped", "{out}");
    let error = doc["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(
            "uncaught JavaScript exception Error: 503 the scripted model answered `unavailable`"
        ),
        "{out}"
    );
    // The SDK's retries: more than one call, each answered 503.
    let model = calls(&out, MODEL_CALL);
    assert!(model.len() > 1, "{out}");
    assert!(doc["fuel"].as_u64().unwrap() < 2_000_000_000, "{out}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn each_example_passes_the_model_http_and_sdk_cases() {
    let cases = workspace_root().join("cases");
    for ex in EXAMPLES {
        let out = worldline(
            shared_store(),
            [
                OsStr::new("test"),
                cases.join("model").as_os_str(),
                cases.join("http").as_os_str(),
                cases.join("sdk").as_os_str(),
                OsStr::new("--agent"),
                ex.wasm().as_os_str(),
                OsStr::new("--json"),
            ],
        );
        assert_eq!(out.code, 0, "{}:\n{out}", ex.name);
        assert_eq!(out.json()["failed"], 0, "{}:\n{out}", ex.name);
        assert_eq!(out.json()["passed"], 10, "{}:\n{out}", ex.name);
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn two_runs_and_a_replay_of_each_example_are_identical() {
    for ex in EXAMPLES {
        let first = ex.passes(&model_case("rollback"));
        let second = ex.passes(&model_case("rollback"));
        assert_eq!(events(&first), events(&second), "{}", ex.name);
        assert_eq!(output(&first)["cause_deploy"], "D-42");
        let model = calls(&first, MODEL_CALL);
        assert_eq!(model.len(), 6, "{}", ex.name);
        assert_eq!(model[0]["request"]["transport"]["http"]["api"], ex.api);
        let tools = calls(&first, TOOL_CALL);
        assert_eq!(tools.len(), 5, "{}", ex.name);
        assert_eq!(tools[0]["request"]["transport"]["http"]["api"], "mcp");
        let text = std::fs::read_to_string(first.bundle()).unwrap();
        assert!(
            !text.contains("sk-example-key") && !text.contains("sk-ant-example-key"),
            "{}: the agent's API key is in the bundle",
            ex.name
        );
        replays(&first);
    }
}

/// `fork --respond` at a model call (the model's first answer names
/// another alert) and at a tool call (the alert the world answered is
/// edited): each edit reaches the SDK in its vendor's format, and the fork
/// replays identical.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn fork_respond_works_at_a_model_call_and_at_a_tool_call() {
    for ex in EXAMPLES {
        let run = ex.passes(&model_case("rollback"));
        let id = run.json()["run_id"].as_str().unwrap().to_string();
        let parent = events(&run);
        let fork = |at: usize, respond: Value| {
            let fork = worldline(
                shared_store(),
                [
                    "fork",
                    &id,
                    "--at",
                    &at.to_string(),
                    "--respond",
                    &respond.to_string(),
                    "--json",
                ],
            );
            let forked = read_bundle(&fork.bundle()).events;
            assert_eq!(forked[..at], parent[..at], "{}: the prefix", ex.name);
            assert_eq!(forked[at]["injected"]["action"], "fork-respond", "{fork}");
            replays(&fork);
            forked
        };

        let at = parent.iter().position(|e| e["call"] == MODEL_CALL).unwrap();
        let mut answer = serde_json::json!({"ok": parent[at]["response"]["ok"].clone()});
        let call = &mut answer["ok"]["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "get_alert");
        call["arguments"] = Value::String("{\"id\":\"ALERT-404\"}".into());
        let forked = fork(at, answer);
        let tool = forked[at..]
            .iter()
            .find(|e| e["call"] == TOOL_CALL)
            .expect("a tool call after the edited answer");
        assert_eq!(tool["request"]["args"]["id"], "ALERT-404", "{}", ex.name);

        let at = parent
            .iter()
            .position(|e| e["call"] == TOOL_CALL && e["request"]["name"] == "get_alert")
            .unwrap();
        let mut alert = parent[at]["response"].clone();
        alert["ok"]["summary"] = Value::String("EDITED BY THE FORK".into());
        let forked = fork(at, alert);
        let next = forked[at..]
            .iter()
            .find(|e| e["call"] == MODEL_CALL)
            .expect("a model call after the edited tool answer");
        assert!(
            next["request"].to_string().contains("EDITED BY THE FORK"),
            "{}: the edited tool answer reached the model request",
            ex.name
        );
    }
}

/// A 429 with `retry-after: 1`: the SDK's own retry logic waits (virtual
/// time) and asks again; each attempt is its own model call.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn a_429_is_retried_by_each_sdk_after_retry_after() {
    for ex in EXAMPLES {
        let out = ex.passes(&http_case("rate-limited"));
        let model = calls(&out, MODEL_CALL);
        assert_eq!(
            model[0]["response"]["error"]["kind"], "unavailable",
            "{}",
            ex.name
        );
        assert!(model[1]["response"].get("ok").is_some(), "{}", ex.name);
        let waited =
            model[1]["vtime_ns"].as_u64().unwrap() - model[0]["vtime_ns"].as_u64().unwrap();
        assert!(
            waited >= 1_000_000_000,
            "{}: retried after {waited} ns",
            ex.name
        );
        replays(&out);
    }
}

/// A model timeout stalls the request in virtual time until the SDK gives
/// up on it, then the SDK retries; the tool loop on the official packages
/// passes `cases/model/model-timeout.toml` (and `rollback.toml`, above).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn a_model_timeout_stalls_and_each_sdk_retries() {
    for ex in EXAMPLES {
        let out = ex.passes(&model_case("model-timeout"));
        let model = calls(&out, MODEL_CALL);
        assert_eq!(
            model[0]["response"]["error"]["kind"], "timeout",
            "{}",
            ex.name
        );
        let stalled =
            model[1]["vtime_ns"].as_u64().unwrap() - model[0]["vtime_ns"].as_u64().unwrap();
        assert!(
            stalled >= 60_000_000_000,
            "{}: stalled {stalled} ns",
            ex.name
        );
        replays(&out);
    }
}

/// Streaming on each model route: Chat Completions (openai), Anthropic
/// Messages (anthropic), OpenAI Responses (the Vercel AI SDK's Responses
/// model): the answer arrives as the vendor's server-sent events.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn streaming_works_on_each_model_route() {
    let dir = temp_dir();
    let responses = std::fs::read_to_string(http_case("responses"))
        .unwrap()
        .replace(
            r#"api = "responses" }"#,
            r#"api = "responses", stream = true }"#,
        );
    assert!(responses.contains("stream = true"));
    let responses = write_case(dir.path(), "streamed-responses", &responses);
    for (ex, case, api) in [
        (&OPENAI, http_case("streamed"), "openai.chat"),
        (&ANTHROPIC, http_case("streamed"), "anthropic.messages"),
        (&VERCEL, responses.clone(), "openai.responses"),
    ] {
        let out = ex.run_in_worlds(&case);
        assert_eq!(out.code, 0, "{}:\n{out}", ex.name);
        let model = calls(&out, MODEL_CALL);
        assert_eq!(model.len(), 6, "{}", ex.name);
        let http = &model[0]["request"]["transport"]["http"];
        assert_eq!(http["api"], api, "{}", ex.name);
        assert_eq!(http["stream"], true, "{}", ex.name);
        replays(&out);
    }
}

/// The Agents SDK runs a model turn's tool calls in parallel: each is
/// made and answered (they were answered "aborted" unmade: the sandbox's
/// `AbortSignal.any` was aborted from the start).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn the_agents_sdk_makes_a_turn_s_parallel_tool_calls() {
    let dir = temp_dir();
    let rollback = std::fs::read_to_string(model_case("rollback")).unwrap();
    let first =
        r#"reply = { tool_calls = [{ name = "get_alert", arguments = { id = "ALERT-7" } }] }"#;
    let both = r#"reply = { tool_calls = [{ name = "get_alert", arguments = { id = "ALERT-7" } }, { name = "list_deploys", arguments = { service = "checkout" } }] }"#;
    assert!(rollback.contains(first));
    let case = write_case(dir.path(), "parallel", &rollback.replace(first, both));
    let out = AGENTS_SDK.run_in_worlds(&case);
    assert_eq!(out.code, 0, "{out}");
    let tools: Vec<String> = calls(&out, TOOL_CALL)
        .iter()
        .map(|e| e["request"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(tools[..2], ["get_alert", "list_deploys"], "{out}");
    replays(&out);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn an_mcp_tool_error_reaches_the_sdk_agent_as_an_is_error_result() {
    for ex in EXAMPLES {
        let out = ex.passes(&http_case("tool-error"));
        let tools = calls(&out, TOOL_CALL);
        let failed = tools
            .iter()
            .position(|e| e["request"]["name"] == "list_deploys")
            .unwrap();
        assert_eq!(tools[failed]["response"]["error"]["kind"], "unavailable");
        assert_eq!(
            tools[failed + 1]["request"]["name"],
            "list_deploys",
            "{}",
            ex.name
        );
        replays(&out);
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn an_unknown_url_is_denied_and_fetch_fails_as_in_node() {
    for ex in EXAMPLES {
        let out = ex.passes(&http_case("denied-url"));
        assert_eq!(
            output(&out)["probe"]["error"],
            "TypeError: fetch failed",
            "{}",
            ex.name
        );
        let denied: Vec<Value> = events(&out)
            .into_iter()
            .filter(|e| e["effect"] == "denied")
            .collect();
        assert_eq!(denied.len(), 1, "{}", ex.name);
        assert_eq!(denied[0]["request"]["url"], "https://example.com/status");
    }
}

/// The world's own REST routes (incident@v5) called with `fetch`: the
/// deploy list answers 20 minutes stale (an ordinary 200 hiding D-42), the
/// denied close is a 403, and the calls are the world's tool calls.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn declared_rest_routes_answer_stale_and_denied() {
    let case = std::fs::read_to_string(workspace_root().join("tests/cases/http-rest-api.toml"))
        .unwrap()
        .replace(
            r#"{ path = "responses[3].error", equals = "ConnectionReadTimeout" }"#,
            r#"{ path = "responses[3].error", equals = "fetch failed" }"#,
        );
    let dir = temp_dir();
    let path = write_case(dir.path(), "http-rest-api-js", &case);
    let out = OPENAI.run_in_worlds(&path);
    assert_eq!(out.code, 0, "{out}");
    let answers = output(&out)["responses"].clone();
    assert_eq!(answers[0]["status"], 200);
    // 20 minutes before the run's clock (12:05 and the few milliseconds
    // of virtual time the run has taken).
    let as_of = answers[0]["body"]["as_of"].as_str().unwrap();
    assert!(as_of.starts_with("2026-03-01T11:45:00."), "{as_of}");
    let ids: Vec<&str> = answers[0]["body"]["deploys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&"D-42"), "stale: {ids:?}");
    assert_eq!(answers[1]["status"], 403);
    assert_eq!(answers[1]["body"]["error"]["kind"], "denied");
    let tools = calls(&out, TOOL_CALL);
    assert_eq!(tools[1]["request"]["name"], "close_ticket");
    assert_eq!(tools[1]["request"]["transport"]["http"]["api"], "rest");
    replays(&out);
}

/// A fuzz campaign with model faults (429s and 503s drawn from the model
/// seed) and tool faults: the SDK retries each failed model call, and
/// `history` shows the retries.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn a_fuzz_campaign_shows_the_sdks_retries_in_history() {
    let store = temp_dir();
    let case = workspace_root().join("cases/sdk/fuzz-retries.toml");
    let out = worldline(
        store.path(),
        [
            OsStr::new("fuzz"),
            case.as_os_str(),
            OsStr::new("--agent"),
            OPENAI.wasm().as_os_str(),
            OsStr::new("--runs"),
            OsStr::new("8"),
            OsStr::new("--keep-all"),
            OsStr::new("--json"),
        ],
    );
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["summary"]["passed"], 8, "{out}");
    let mut retried = 0;
    let mut tool_faults = 0;
    for entry in std::fs::read_dir(store.path().join("runs")).unwrap() {
        let bundle = entry.unwrap().path();
        let events = read_bundle(&bundle).events;
        let model: Vec<&Value> = events.iter().filter(|e| e["call"] == MODEL_CALL).collect();
        tool_faults += events
            .iter()
            .filter(|e| e["call"] == TOOL_CALL && e["injected"]["fuzz"].is_object())
            .count();
        if let Some(i) = model
            .iter()
            .position(|e| e["response"].get("error").is_some())
        {
            retried += 1;
            // The retry is the same request, asked again.
            assert_eq!(model[i]["request"], model[i + 1]["request"]);
            let run = bundle.file_stem().unwrap().to_string_lossy().into_owned();
            let history = worldline(store.path(), ["history", &run, "--only", "model.complete"]);
            history.expect_code(0);
            assert!(
                history.stdout.contains("failed  model.complete"),
                "the failed call is in history:\n{history}"
            );
        }
    }
    assert!(retried > 0, "no run met a model fault");
    assert!(tool_faults > 0, "no run met a tool fault");
}

/// An SDK pointed at a non-default base URL (a local server's) is answered
/// as a model API when the case declares the URL as `[model] base_url`.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn an_sdk_at_a_declared_base_url_is_answered_as_a_model_api() {
    let dir = temp_dir();
    let url = "http://127.0.0.1:11434/v1";
    let case = std::fs::read_to_string(model_case("rollback"))
        .unwrap()
        .replace(
            r#"task = { alert = "ALERT-7", ticket = "T-100" }"#,
            &format!(r#"task = {{ alert = "ALERT-7", ticket = "T-100", base_url = "{url}" }}"#),
        )
        .replace("[model]\n", &format!("[model]\nbase_url = \"{url}\"\n"));
    assert!(case.contains("base_url = \"http"));
    let case = write_case(dir.path(), "base-url", &case);
    let out = OPENAI.run_in_worlds(&case);
    assert_eq!(out.code, 0, "{out}");
    let model = calls(&out, MODEL_CALL);
    assert_eq!(model.len(), 6);
    assert_eq!(
        model[0]["request"]["transport"]["http"]["url"],
        format!("{url}/chat/completions")
    );
}
