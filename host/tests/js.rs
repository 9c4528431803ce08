//! End-to-end tests of JavaScript and TypeScript agents: real components
//! built from `examples/ts-agent/agent.ts` and
//! `tests/guests/js-probe/agent.ts` with `worldline build-js` (esbuild, then
//! ComponentizeJS with the StarlingMonkey engine inside), run by the real
//! `worldline` binary. They fail, saying how to install them, when Node.js
//! or the pinned npm packages are missing.

use crate::common;

use common::{
    CliOutput, case, files_with_suffix, guest, js_guest, read_bundle, run_json, run_json_with,
    shared_store, temp_dir, wl, workspace_root, worldline, worldline_raw,
};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const TOOL_CALL: &str = "worldline:agent/tools.call";

fn example() -> PathBuf {
    static PRIMED: OnceLock<PathBuf> = OnceLock::new();
    PRIMED
        .get_or_init(|| primed(js_guest("examples/ts-agent/agent.ts")))
        .clone()
}

fn probe() -> PathBuf {
    static PRIMED: OnceLock<PathBuf> = OnceLock::new();
    PRIMED
        .get_or_init(|| primed(js_guest("tests/guests/js-probe/agent.ts")))
        .clone()
}

/// Load the agent once, so the tests' compile cache holds it before tests
/// that run at the same time ask for it (compiling the JS engine takes
/// seconds; each test would otherwise compile it again).
fn primed(wasm: PathBuf) -> PathBuf {
    // The case ends the run errored (exit 1), whichever way it loads.
    run_json(shared_store(), &case("js-error"), &wasm).expect_code(1);
    wasm
}

fn output(run: &CliOutput) -> Value {
    let text = run.json()["output"]
        .as_str()
        .unwrap_or_else(|| panic!("the run has no output:\n{run}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("output is not JSON ({e}): {text}"))
}

/// The tool calls of a run, as (name, arguments) in order.
fn tool_calls(bundle: &Path) -> Vec<(String, Value)> {
    read_bundle(bundle)
        .events
        .iter()
        .filter(|e| e["call"] == TOOL_CALL)
        .map(|e| {
            let args = e["request"]["args"].clone();
            let args = match args.as_str() {
                Some(text) => serde_json::from_str(text).unwrap_or(args),
                None => args,
            };
            (e["request"]["name"].as_str().unwrap().to_string(), args)
        })
        .collect()
}

fn incident_cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(workspace_root().join("cases/incident"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    cases.sort();
    cases
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn the_ts_example_passes_the_incident_cases_with_the_rust_agents_tool_calls() {
    let cases = workspace_root().join("cases").join("incident");
    let out = wl(
        shared_store(),
        &[&"test", &cases, &"--agent", &example(), &"--json"],
    );
    out.expect_code(0);
    let doc = out.json();
    assert_eq!(doc["failed"], 0, "{out}");
    assert!(incident_cases().len() >= 7);
    assert_eq!(
        doc["passed"],
        incident_cases().len(),
        "every incident case: {out}"
    );

    let rust = guest("careful-agent");
    for case in incident_cases() {
        let ts = run_json(shared_store(), &case, &example());
        let rs = run_json(shared_store(), &case, &rust);
        let calls = tool_calls(&ts.bundle());
        assert!(calls.len() >= 3, "{}: {calls:?}", case.display());
        assert_eq!(
            calls,
            tool_calls(&rs.bundle()),
            "{}: the TypeScript agent makes the Rust agent's tool calls",
            case.display()
        );
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn two_runs_are_byte_identical_and_another_seed_changes_only_the_draws() {
    let agent = probe();
    let first = run_json(shared_store(), &case("js-probe"), &agent);
    let second = run_json(shared_store(), &case("js-probe"), &agent);
    first.expect_code(0);
    second.expect_code(0);
    assert_ne!(first.bundle(), second.bundle());
    assert_eq!(
        std::fs::read(first.bundle()).unwrap(),
        std::fs::read(second.bundle()).unwrap(),
        "two runs of the same JS agent on the same case give the same bundle"
    );

    let out = output(&first);
    // 2026-03-01T12:00:00Z is the case clock; time starts there.
    let wall = out["wall_before"].as_f64().unwrap();
    assert!(
        (1_772_366_400_000.0..1_772_366_401_000.0).contains(&wall),
        "{out}"
    );
    // setTimeout(1500) jumps virtual time: 1.5 s plus a few host calls at
    // the case's tick (1 ms), never a real wait's jitter.
    let slept = out["slept"].as_f64().unwrap();
    assert!((1500.0..1600.0).contains(&slept), "{out}");
    assert!(out["perf_after"].as_f64().unwrap() - out["perf_before"].as_f64().unwrap() >= 1500.0);
    for r in out["random"].as_array().unwrap() {
        assert!((0.0..1.0).contains(&r.as_f64().unwrap()), "{out}");
    }
    assert_eq!(out["bytes"].as_str().unwrap().len(), 32, "{out}");
    assert_eq!(out["uuid"].as_str().unwrap().len(), 36, "{out}");
    // The language's orders: integer keys ascending, then insertion order.
    assert_eq!(
        out["object_keys"],
        serde_json::json!(["2", "10", "zeta", "alpha", "mid"])
    );
    assert_eq!(
        out["map_keys"],
        serde_json::json!(["zeta", "alpha", "mid", "beta"])
    );
    assert_eq!(out["set_values"], serde_json::json!(["c", "a", "b"]));
    // The rest of the SDK: tools, typed errors, world files, the scripted model.
    assert_eq!(out["ticket"]["id"], "T-1");
    // Its `message` the host's alone, as the Rust and Python SDKs' (the
    // kind went into it: a model handed `e.message` read `not-found: …`
    // on this path only); `String(e)` says the kind.
    let missing = out["missing"].as_str().unwrap();
    assert!(
        missing.contains("T-404") && !missing.starts_with("not-found"),
        "a host error reaches JS as NotFound: {out}"
    );
    assert_eq!(
        out["missing_said"].as_str().unwrap(),
        format!("not-found: {missing}"),
        "{out}"
    );
    assert_eq!(out["tools"][0], "get_ticket", "{out}");
    assert_eq!(out["runbooks"], serde_json::json!(["runbooks/db.md"]));
    assert!(
        out["runbook_text"]
            .as_str()
            .unwrap()
            .starts_with("# Database runbook")
    );
    assert_eq!(out["model"]["said"], "hi from the script", "{out}");
    assert_eq!(
        out["model"]["asked"],
        serde_json::json!([["get_ticket", {"id": "T-1"}]]),
        "the scripted model's tool call, parsed: {out}"
    );

    // Every source of nondeterminism crossed the host and was recorded.
    let bundle = read_bundle(&first.bundle());
    let calls: Vec<&str> = bundle
        .events
        .iter()
        .map(|e| e["call"].as_str().unwrap())
        .collect();
    for needed in [
        "wasi:clocks/wall-clock.now",
        "wasi:clocks/monotonic-clock.now",
        "wasi:io/poll.poll",
        TOOL_CALL,
    ] {
        assert!(calls.contains(&needed), "{needed} is recorded: {calls:?}");
    }
    assert!(
        calls.iter().any(|c| c.starts_with("wasi:random/")),
        "randomness is recorded: {calls:?}"
    );
    let footer = bundle.footer.unwrap();
    assert!(
        footer["stdout"]
            .as_str()
            .unwrap()
            .contains("js probe says hello"),
        "console.log goes to the captured stdout"
    );

    // Another seed changes the draws and nothing else.
    let dir = temp_dir();
    let reseeded = common::write_case(
        dir.path(),
        "reseeded",
        &std::fs::read_to_string(case("js-probe"))
            .unwrap()
            .replace("seed = 7", "seed = 8"),
    );
    let other = common::run_in(shared_store(), &reseeded, &agent, &common::worlds_dir());
    other.expect_code(0);
    let mut other = output(&other);
    let mut same = out.clone();
    for draw in ["random", "bytes", "uuid"] {
        assert_ne!(other[draw], out[draw], "the seed drives {draw}");
        other[draw] = Value::Null;
        same[draw] = Value::Null;
    }
    assert_eq!(other, same, "only the draws differ with another seed");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn fetch_is_denied_recorded_and_catchable() {
    let run = run_json(shared_store(), &case("js-probe"), &probe());
    run.expect_code(0);
    let out = output(&run);
    assert!(
        out["fetch"].as_str().unwrap().contains("Error"),
        "fetch rejects with an error the agent catches: {out}"
    );
    let events = read_bundle(&run.bundle()).events;
    let denied: Vec<&Value> = events
        .iter()
        .filter(|e| e["call"] == "wasi:http/outgoing-handler.handle")
        .collect();
    assert_eq!(denied.len(), 1, "one request, one event");
    assert_eq!(denied[0]["effect"], "denied");
    assert_eq!(denied[0]["request"]["method"], "POST");
    assert_eq!(
        denied[0]["request"]["url"],
        "https://api.example.com/v1/chat"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn js_runs_replay_identical_and_fork() {
    common::replays_and_forks_at_the_close(shared_store(), &example());
}

/// An output that holds itself is refused as `JSON.stringify` refuses it:
/// the SDK's key sorting walked round it until the run's fuel ran out
/// (`out_of_fuel`, 2,000,000,000 fuel, 1,295 events).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn an_output_that_holds_itself_is_refused_at_once() {
    let run = run_json(shared_store(), &case("js-cyclic"), &probe());
    let doc = run.json();
    assert_ne!(doc["run_status"], "out_of_fuel", "{run}");
    let said = format!("{} {}", doc["error"], doc["traceback"]);
    assert!(
        said.contains("Converting circular structure to JSON"),
        "{run}"
    );
    assert!(doc["fuel"].as_u64().unwrap() < 100_000_000, "{run}");
}

/// A `run` whose promise never settles says so (it was a bare `wasm
/// trap: wasm \`unreachable\` instruction executed`).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn a_run_whose_promise_never_settles_says_so() {
    let run = run_json(shared_store(), &case("js-never"), &probe());
    run.expect_code(3);
    let error = run.json()["error"].as_str().unwrap_or_default().to_string();
    assert!(
        error.contains("returned a promise that never settles"),
        "{run}"
    );
}

/// A `--minify` build's stack names the agent's functions and the lines
/// that threw, as a plain build's does (it named `P`, at the line before).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn a_minified_agent_s_stack_keeps_its_names_and_lines() {
    let dir = temp_dir();
    let wasm = dir.path().join("minified.wasm");
    let agent = workspace_root().join("tests/guests/js-probe/agent.ts");
    let built = worldline_raw([
        OsStr::new("build-js"),
        agent.as_os_str(),
        OsStr::new("-o"),
        wasm.as_os_str(),
        OsStr::new("--minify"),
    ]);
    built.expect_code(0);
    let run = run_json(shared_store(), &case("js-raise"), &wasm);
    run.expect_code(3);
    let stack = run.json()["traceback"]
        .as_str()
        .unwrap_or_else(|| panic!("{run}"))
        .to_string();
    let source = std::fs::read_to_string(&agent).unwrap();
    let line_of = |text: &str| 1 + source.lines().position(|l| l.contains(text)).unwrap();
    for needed in [
        format!("lookUp@agent.ts:{}:", line_of("throw new TypeError")),
        format!("run@agent.ts:{}:", line_of("lookUp(\"T-404\")")),
    ] {
        assert!(stack.contains(&needed), "`{needed}` in the stack:\n{stack}");
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn an_uncaught_exception_exits_3_with_the_javascript_stack() {
    let run = run_json(shared_store(), &case("js-raise"), &probe());
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["run_status"], "trapped", "{run}");
    let err = doc["error"].as_str().unwrap();
    assert!(
        err.contains("uncaught JavaScript exception TypeError: no ticket T-404"),
        "{err}"
    );
    let stack = doc["traceback"].as_str().unwrap_or_else(|| panic!("{run}"));
    assert!(stack.starts_with("TypeError: no ticket T-404"), "{stack}");
    // Frames name the agent's own file and lines (the bundle's source map
    // is carried into the component), not the bundle's.
    let source =
        std::fs::read_to_string(workspace_root().join("tests/guests/js-probe/agent.ts")).unwrap();
    let line_of = |text: &str| 1 + source.lines().position(|l| l.contains(text)).unwrap();
    for needed in [
        format!("lookUp@agent.ts:{}:", line_of("throw new TypeError")),
        format!("run@agent.ts:{}:", line_of("lookUp(\"T-404\")")),
    ] {
        assert!(stack.contains(&needed), "`{needed}` in the stack:\n{stack}");
    }

    let text = worldline(
        shared_store(),
        [
            OsStr::new("run"),
            case("js-raise").as_os_str(),
            OsStr::new("--agent"),
            probe().as_os_str(),
        ],
    );
    text.expect_code(3);
    assert!(
        text.stdout.contains("    TypeError: no ticket T-404"),
        "{text}"
    );
    assert!(!text.stdout.contains("guest backtrace"), "{text}");
}

/// An exception thrown in a timer's callback or a queued microtask fails
/// the run with the exception and where it was thrown in the agent's
/// source: a timer's trapped with no word of it, a microtask's was
/// dropped and the run passed.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn an_exception_no_caller_catches_fails_the_run_with_its_stack() {
    let source =
        std::fs::read_to_string(workspace_root().join("tests/guests/js-probe/agent.ts")).unwrap();
    for (mode, thrown) in [
        ("timer-throw", "thrown in a timer"),
        ("microtask-throw", "thrown in a microtask"),
    ] {
        let run = run_json(shared_store(), &case(&format!("js-{mode}")), &probe());
        run.expect_code(3);
        let doc = run.json();
        assert_eq!(doc["run_status"], "trapped", "{run}");
        let error = &doc["agent_error"];
        assert!(
            error["message"].as_str().unwrap().contains(thrown),
            "{mode}: {run}"
        );
        let line = 1 + source.lines().position(|l| l.contains(thrown)).unwrap();
        assert!(
            error["at"]
                .as_str()
                .unwrap_or_default()
                .contains(&format!("agent.ts:{line}:")),
            "{mode}: {run}"
        );
    }
}

/// A case's `[env] vars` are what `process.env` holds (wasi:cli/environment,
/// read once when the run first reads it, recorded), however a package
/// reads it: a property, `in`, `Object.keys`, a spread.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn the_cases_env_vars_are_process_env() {
    let run = run_json(shared_store(), &case("js-env"), &probe());
    run.expect_code(0);
    let out = output(&run);
    assert_eq!(out["key"], "sk-from-the-case", "{run}");
    assert_eq!(out["has"], true, "{run}");
    assert_eq!(out["absent"], Value::Null, "{run}");
    assert_eq!(
        out["keys"],
        serde_json::json!(["LANG", "OPENAI_API_KEY"]),
        "{run}"
    );
    assert_eq!(
        out["copy"],
        serde_json::json!({"LANG": "C", "OPENAI_API_KEY": "sk-from-the-case"}),
        "{run}"
    );
    let events = read_bundle(&run.bundle()).events;
    let reads = events
        .iter()
        .filter(|e| e["call"] == "wasi:cli/environment.get-environment")
        .count();
    assert_eq!(reads, 1, "one recorded read of the environment");
    common::replays_identical(shared_store(), run.json()["run_id"].as_str().unwrap());
}

/// `AbortSignal.any` is Node's: aborted once an input is, with its
/// reason, not before. The engine's was aborted from the start, and the
/// OpenAI Agents SDK answered parallel tool calls "aborted" unrun.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn abort_signal_any_is_aborted_when_an_input_is_and_not_before() {
    let run = run_json(shared_store(), &case("js-abort"), &probe());
    run.expect_code(0);
    assert_eq!(
        output(&run),
        serde_json::json!({"before": false, "after": true, "heard": true, "reason": "stop", "none": false, "gone": true}),
        "{run}"
    );
}

/// `for await` over a `ReadableStream` and a `fetch` aborted by its
/// signal behave as in Node: the engine's stream was not iterable (the
/// OpenAI Agents SDK's streamed run trapped), and its `fetch` ignored the
/// signal (a stalled request waited 10 virtual minutes, then failed as no
/// abort).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn streams_iterate_and_fetch_heeds_its_signal_as_in_node() {
    let run = run_json(shared_store(), &case("js-stream"), &probe());
    run.expect_code(0);
    assert_eq!(output(&run), serde_json::json!({"sizes": [3]}), "{run}");
    let run = run_json(shared_store(), &case("js-fetch-abort"), &probe());
    run.expect_code(0);
    let out = output(&run);
    assert_eq!(out["error"], "AbortError", "{run}");
    // At the timer (a few virtual milliseconds of calls after it), not
    // the stall's 10 minutes.
    let elapsed = out["elapsed_ms"].as_u64().unwrap();
    assert!((2000..2100).contains(&elapsed), "{run}");
}

/// A model's latency is when its answer is ready (rules 5, decision
/// 0426): a request to a 30 s model is aborted by its 2 s signal, and two
/// requests in flight together take one latency, not two. The clock
/// jumped by the latency when the request was answered: the signal never
/// fired first (200 after 30 s), and gathered requests took 2 s.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages, the pinned Python environments: run tests/run, which installs it"
)]
fn a_slow_model_is_aborted_by_a_sooner_signal_and_gathered_requests_wait_together() {
    let run = run_json(shared_store(), &case("js-latency-abort"), &probe());
    run.expect_code(0);
    let out = output(&run);
    assert_eq!(out["error"], "AbortError", "{run}");
    let elapsed = out["elapsed_ms"].as_u64().unwrap();
    assert!((2000..2100).contains(&elapsed), "{run}");
    // The model call was made and answered (ready at 30 s), as a
    // request the agent gave up on is.
    let bundle = read_bundle(Path::new(run.json()["bundle"].as_str().unwrap()));
    let calls: Vec<&Value> = (bundle.events.iter())
        .filter(|e| e["call"] == "worldline:agent/model.complete")
        .collect();
    assert_eq!(calls.len(), 1, "{run}");
    assert!(
        calls[0]["vtime_ns"].as_u64().unwrap() >= 30_000_000_000,
        "{run}"
    );

    let run = run_json(shared_store(), &case("js-latency-gather"), &probe());
    run.expect_code(0);
    let out = output(&run);
    assert_eq!(out["statuses"], serde_json::json!([200, 200]), "{run}");
    let elapsed = out["elapsed_ms"].as_u64().unwrap();
    assert!((1000..1100).contains(&elapsed), "{run}");
    // It replays as it ran.
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let replay = wl(shared_store(), &[&"replay", &id, &"--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    // Its trace shows the two model calls in flight together, within the
    // run's span (each began when it was sent, not when the one before
    // it was answered).
    let dir = temp_dir();
    let receiver = crate::otel::Receiver::start(dir.path());
    wl(
        shared_store(),
        &[&"otel", &id, &"--endpoint", &receiver.endpoint()],
    )
    .expect_code(0);
    let got = receiver.received();
    let spans = crate::otel::spans(&got[0]);
    let time = |s: &Value, k: &str| s[k].as_str().unwrap().parse::<u64>().unwrap();
    let chats: Vec<&Value> = spans.iter().filter(|s| s["name"] == "chat m").collect();
    assert_eq!(chats.len(), 2, "{spans:?}");
    let (a, b) = (chats[0], chats[1]);
    assert!(
        time(b, "startTimeUnixNano") < time(a, "endTimeUnixNano"),
        "{spans:?}"
    );
    assert!(time(b, "endTimeUnixNano") - time(b, "startTimeUnixNano") >= 1_000_000_000);
    let root = spans
        .iter()
        .find(|s| s.get("parentSpanId").is_none_or(|p| p == ""))
        .unwrap();
    assert!(
        time(root, "endTimeUnixNano") >= time(b, "endTimeUnixNano"),
        "{spans:?}"
    );
}

/// An answer the agent gave up on (a 30 s model, the request aborted at
/// 2 s; recorded, as a provider bills it) reads as never delivered: in
/// `history` (text and `--json`), `show`, the trace (its span and the
/// run's end where the agent went on, not at 30 s) and the UI; the
/// trajectory exports leave it out of the agent's turns. It read as a
/// reply the agent got: an ATIF agent step with its text, the trajectory's
/// last message, the run's span 28 s past the run. An answer waited for
/// (two gathered) is not marked.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages, the pinned Python environments: run tests/run, which installs it"
)]
fn an_answer_the_agent_gave_up_on_reads_as_never_delivered() {
    let store = shared_store();
    let run = run_json(store, &case("js-latency-abort"), &probe());
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let bundle = read_bundle(Path::new(run.json()["bundle"].as_str().unwrap()));
    let model = (bundle.events.iter())
        .find(|e| e["call"] == "worldline:agent/model.complete")
        .unwrap();
    let seq = model["seq"].as_u64().unwrap();
    assert!(
        model["vtime_ns"].as_u64().unwrap() >= 30_000_000_000,
        "{run}"
    );

    let text = wl(store, &[&"history", &id]);
    text.expect_code(0);
    let line = (text.stdout.lines())
        .find(|l| l.contains("model.complete"))
        .unwrap();
    assert!(
        line.contains("[never delivered: the agent went on without it at 2.0"),
        "{text}"
    );
    let doc = wl(store, &[&"history", &id, &"--json"]);
    let rows = doc.json()["events"].as_array().unwrap().clone();
    let marked: Vec<&Value> = rows
        .iter()
        .filter(|r| r.get("never_delivered").is_some())
        .collect();
    assert_eq!(marked.len(), 1, "{doc}");
    assert_eq!(marked[0]["seq"], seq);
    let went_on = marked[0]["never_delivered"]["agent_went_on_ns"]
        .as_u64()
        .unwrap();
    assert!((2_000_000_000..2_100_000_000).contains(&went_on), "{doc}");
    let at = seq.to_string();
    let show = wl(store, &[&"show", &id, &"--at", &at]);
    assert!(
        show.stdout.contains("never delivered: the agent went on"),
        "{show}"
    );
    let show = wl(store, &[&"show", &id, &"--at", &at, &"--json"]);
    assert_eq!(show.json()["never_delivered"]["agent_went_on_ns"], went_on);

    // No agent step, no message of the answer ("hello").
    let dir = temp_dir();
    let atif = dir.path().join("atif.json");
    wl(store, &[&"export", &id, &"--format", &"atif", &"-o", &atif]).expect_code(0);
    let atif = std::fs::read_to_string(&atif).unwrap();
    assert!(!atif.contains("hello"), "{atif}");
    let lines = dir.path().join("t.jsonl");
    wl(
        store,
        &[&"export", &id, &"--format", &"trajectories", &"-o", &lines],
    )
    .expect_code(0);
    let lines = std::fs::read_to_string(&lines).unwrap();
    assert!(!lines.contains("hello"), "{lines}");

    let receiver = crate::otel::Receiver::start(dir.path());
    wl(store, &[&"otel", &id, &"--endpoint", &receiver.endpoint()]).expect_code(0);
    let spans = crate::otel::spans(&receiver.received()[0]);
    let time = |s: &Value, k: &str| s[k].as_str().unwrap().parse::<u64>().unwrap();
    let root = (spans.iter())
        .find(|s| s.get("parentSpanId").is_none_or(|p| p == ""))
        .unwrap();
    let took = time(root, "endTimeUnixNano") - time(root, "startTimeUnixNano");
    assert!(took < 3_000_000_000, "{spans:?}");
    let chat = spans.iter().find(|s| s["name"] == "chat m").unwrap();
    assert!(
        time(chat, "endTimeUnixNano") <= time(root, "endTimeUnixNano"),
        "{spans:?}"
    );
    assert!(chat.to_string().contains("worldline.delivered"), "{chat}");

    let ui = crate::ui_support::Server::start(store, &[]);
    let page = ui.get(&format!("/run/{id}"));
    assert!(
        page.body.contains("never delivered"),
        "the run page marks it"
    );
    let page = ui.get(&format!("/run/{id}/event/{seq}"));
    assert!(
        page.body.contains("never delivered"),
        "the event page marks it"
    );

    // Answers waited for are not marked.
    let run = run_json(store, &case("js-latency-gather"), &probe());
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let doc = wl(store, &[&"history", &id, &"--json"]);
    assert!(!doc.stdout.contains("never_delivered"), "{doc}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn a_worldline_error_escaping_run_ends_the_run_errored() {
    let run = run_json(shared_store(), &case("js-error"), &probe());
    run.expect_code(1);
    let doc = run.json();
    assert_eq!(doc["run_status"], "errored", "{run}");
    assert_eq!(
        doc["error"], "denied: the probe was told to give up",
        "{run}"
    );

    // The example knows the incident world only.
    let run = run_json(shared_store(), &case("probe"), &example());
    run.expect_code(1);
    assert_eq!(run.json()["run_status"], "errored", "{run}");
    assert!(
        run.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("failed: task names no `alert`"),
        "{run}"
    );
}

fn build_js(agent: &Path, out: &Path, extra: &[&OsStr]) -> CliOutput {
    let mut args = vec![
        OsStr::new("build-js"),
        agent.as_os_str(),
        OsStr::new("-o"),
        out.as_os_str(),
    ];
    args.extend_from_slice(extra);
    worldline_raw(args)
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn build_js_names_what_to_install_and_what_to_fix() {
    let dir = temp_dir();
    let agent = workspace_root().join("tests/guests/js-probe/agent.ts");
    let out = dir.path().join("x.wasm");

    let no_node = build_js(
        &agent,
        &out,
        &[OsStr::new("--node"), dir.path().join("no-node").as_os_str()],
    );
    no_node.expect_code(2);
    assert!(no_node.stderr.contains("install it"), "{no_node}");
    let no_packages = build_js(
        &agent,
        &out,
        &[OsStr::new("--toolchain"), dir.path().as_os_str()],
    );
    no_packages.expect_code(2);
    assert!(
        no_packages
            .stderr
            .contains("@bytecodealliance/componentize-js@0.23.0 esbuild@0.28.2"),
        "{no_packages}"
    );

    probe(); // the packages are there (or this fails saying how to get them)
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let broken = write(
        "broken.ts",
        "import { tools } from \"worldline\";\n\nexport function run(task: any) {\n  return tools.call(\"x\", {);\n}\n",
    );
    let syntax = build_js(&broken, &out, &[]);
    syntax.expect_code(2);
    assert!(syntax.stderr.contains("broken.ts:4:"), "{syntax}");
    assert!(!out.exists(), "nothing is written for a broken agent");

    let missing = write(
        "missing.ts",
        "import { helper } from \"./helpers\";\nexport function run() { return helper(); }\n",
    );
    let unresolved = build_js(&missing, &out, &[]);
    unresolved.expect_code(2);
    assert!(unresolved.stderr.contains("missing.ts:1:"), "{unresolved}");
    assert!(unresolved.stderr.contains("./helpers"), "{unresolved}");
    // A package: what to do with build-js, not esbuild's advice to mark
    // it external, which build-js cannot.
    let package = write(
        "package.ts",
        "import pad from \"left-pad-nope\";\nexport function run() { return pad(\"x\", 3); }\n",
    );
    let unresolved = build_js(&package, &out, &[]);
    unresolved.expect_code(2);
    assert!(!unresolved.stderr.contains("external"), "{unresolved}");
    assert!(
        unresolved
            .stderr
            .contains("install the package in the agent's folder"),
        "{unresolved}"
    );

    // An exception at the module's top level (run while the component is
    // made) is placed in the agent's source, not the bundle it never sees.
    let top = write(
        "toplevel.ts",
        "import { tools } from \"worldline\";\n\nconst cfg = JSON.parse(\"{not json\");\n\nexport function run(task: any) { return [cfg, tools]; }\n",
    );
    let thrown = build_js(&top, &out, &[OsStr::new("--json")]);
    thrown.expect_code(2);
    assert_eq!(thrown.json()["error"]["line"], 3, "{thrown}");
    assert!(
        thrown.json()["error"]["file"]
            .as_str()
            .unwrap()
            .ends_with("toplevel.ts"),
        "{thrown}"
    );

    // A `run` that is no function is refused at the build, not when a
    // run calls it.
    let numeric = write("numeric.ts", "export const run = 5;\n");
    let refused = build_js(&numeric, &out, &[]);
    refused.expect_code(2);
    assert!(
        refused
            .stderr
            .contains("exports `run`, but it is no function"),
        "{refused}"
    );

    let no_run = write("no_run.js", "export function go() { return 1; }\n");
    let refused = build_js(&no_run, &out, &[]);
    refused.expect_code(2);
    assert!(refused.stderr.contains("exports no `run`"), "{refused}");
}

/// `build-js` leaves the `worldline` module's types in the agent's folder
/// (the SDK in `.worldline-sdk/`, a `tsconfig.json` mapping to it when
/// there is none), and `--typecheck` reports tsc's errors as
/// file:line:column before building anything.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn build_js_writes_types_for_editors_and_typecheck_reports_places() {
    probe(); // the toolchain is there (or this fails saying how to get it)
    let dir = temp_dir();
    // An agent on the pinned SDKs type-checks: tsc finds them where
    // build-js does (`openai` and the MCP SDK's subpaths were "Cannot find
    // module").
    let sdk = dir.path().join("sdk").join("agent.ts");
    std::fs::create_dir_all(sdk.parent().unwrap()).unwrap();
    std::fs::copy(
        workspace_root().join("examples/js-openai-agent/agent.ts"),
        &sdk,
    )
    .unwrap();
    let checked = build_js(
        &sdk,
        &dir.path().join("sdk.wasm"),
        &[OsStr::new("--typecheck")],
    );
    checked.expect_code(0);
    let agent = dir.path().join("typed.ts");
    std::fs::write(
        &agent,
        "import { tools } from \"worldline\";\n\nexport function run(task: { id: string }) {\n  const n: number = tools.call<string>(\"get_ticket\", { id: task.id });\n  return n;\n}\n",
    )
    .unwrap();
    let out = dir.path().join("typed.wasm");
    let checked = build_js(&agent, &out, &[OsStr::new("--typecheck")]);
    checked.expect_code(2);
    assert!(checked.stderr.contains("typed.ts:4:9"), "{checked}");
    assert!(checked.stderr.contains("TS2322"), "{checked}");
    assert!(
        !out.exists(),
        "nothing is built when it does not type-check"
    );
    assert!(dir.path().join(".worldline-sdk/index.ts").is_file());
    let config = std::fs::read_to_string(dir.path().join("tsconfig.json")).unwrap();
    assert!(config.contains("./.worldline-sdk/index.ts"), "{config}");

    // A folder with its own tsconfig.json keeps it.
    std::fs::write(
        dir.path().join("tsconfig.json"),
        "{\"compilerOptions\": {}}\n",
    )
    .unwrap();
    let _ = build_js(&agent, &out, &[OsStr::new("--typecheck")]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("tsconfig.json")).unwrap(),
        "{\"compilerOptions\": {}}\n"
    );

    // Fixed, it builds into a folder that does not exist yet.
    std::fs::write(
        &agent,
        "import { tools } from \"worldline\";\n\nexport function run(task: { id: string }) {\n  return tools.call<string>(\"get_ticket\", { id: task.id });\n}\n",
    )
    .unwrap();
    let nested = dir.path().join("build/nested/typed.wasm");
    build_js(&agent, &nested, &[]).expect_code(0);
    assert!(nested.is_file(), "the component is in the new folder");
}

/// The SDK, the example and the probe type-check against `wit.d.ts`
/// (which a unit test holds to `wit/`): a WIT change the SDK does not
/// follow fails here.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn the_sdk_and_the_agents_type_check_against_the_wit_types() {
    probe(); // the toolchain is there (or this fails saying how to get it)
    let toolchain = std::env::var_os("WORLDLINE_JS_TOOLCHAIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
            cache.join("worldline/js")
        });
    let tsc = toolchain.join("node_modules/typescript/bin/tsc");
    assert!(
        tsc.is_file(),
        "TypeScript is missing from {}: npm install --prefix {} typescript@7.0.2",
        toolchain.display(),
        toolchain.display()
    );
    let root = workspace_root();
    let dir = temp_dir();
    let config = serde_json::json!({
        "extends": root.join("guest-sdk/js/tsconfig.json"),
        "compilerOptions": {"paths": {"worldline": [root.join("guest-sdk/js/index.ts")]}},
        "files": [
            root.join("guest-sdk/js/wit.d.ts"),
            root.join("guest-sdk/js/index.ts"),
            root.join("guest-sdk/js/runtime.ts"),
            root.join("examples/ts-agent/agent.ts"),
            root.join("tests/guests/js-probe/agent.ts"),
        ],
    });
    let path = dir.path().join("tsconfig.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let out = std::process::Command::new("node")
        .arg(&tsc)
        .arg("-p")
        .arg(&path)
        .output()
        .expect("running tsc");
    assert!(
        out.status.success(),
        "tsc:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `WORLDLINE_COMPILE_CACHE` names one compile cache for every store: the
/// first run of a build compiles the engine into it, and says so; a run
/// in another store loads it from there without a word; neither store's
/// own `cache/` holds compiled code (`sandbox.rs`'s tests of the cache
/// run with it empty: each store compiles into its own).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn stores_share_the_compile_cache_the_environment_names() {
    let dir = temp_dir();
    let shared = dir.path().join("compiled");
    let env = [("WORLDLINE_COMPILE_CACHE", shared.to_str().unwrap())];
    let agent = js_guest("tests/guests/js-probe/agent.ts");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let first = run_json_with(&a, &case("js-error"), &agent, &env);
    first.expect_code(1);
    assert!(
        first.stderr.contains("compiling") && first.stderr.contains("compile cache"),
        "the first run of a build compiles the engine, and says so: {first}"
    );
    let second = run_json_with(&b, &case("js-error"), &agent, &env);
    second.expect_code(1);
    assert!(!second.stderr.contains("compiling"), "{second}");
    assert_eq!(first.json()["chain_hash"], second.json()["chain_hash"]);
    assert_eq!(files_with_suffix(&shared, ".cwasm").len(), 1);
    for store in [&a, &b] {
        assert!(files_with_suffix(&store.join("cache"), ".cwasm").is_empty());
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn later_runs_load_the_compiled_engine_quietly() {
    // `probe()` had it compiled; this run loads it.
    let run = run_json(shared_store(), &case("js-error"), &probe());
    assert!(!run.stderr.contains("compiling"), "{run}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn the_user_and_approval_channels_reach_a_js_agent_recorded_and_replayed() {
    let run = run_json(shared_store(), &case("js-talk"), &probe());
    run.expect_code(0);
    assert_eq!(
        output(&run),
        serde_json::json!({
            "first": {"kind": "reply", "text": "T-1 please"},
            "small": {"approved": true},
            "large": {"approved": false, "reason": "over the refund limit"},
            "bye": {"kind": "ended", "reason": "all sorted", "satisfied": true},
        }),
        "{run}"
    );
    let calls: Vec<String> = read_bundle(&run.bundle())
        .events
        .iter()
        .map(|e| e["call"].as_str().unwrap().to_string())
        .filter(|c| {
            c.starts_with("worldline:agent/user") || c.starts_with("worldline:agent/approval")
        })
        .collect();
    assert_eq!(
        calls,
        [
            "worldline:agent/user.say",
            "worldline:agent/approval.request",
            "worldline:agent/approval.request",
            "worldline:agent/user.say",
        ]
    );
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let replay = wl(shared_store(), &[&"replay", &id, &"--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

/// `build-js` stopped by Ctrl-C (SIGINT to its process group) ends by the
/// signal, its Node driver with it, and leaves no temporary folder, as
/// `build-python` does (both helpers ran on to their end before).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn a_js_build_stopped_by_ctrl_c_leaves_nothing_running_or_behind() {
    let dir = temp_dir();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let agent = src.join("agent.ts");
    std::fs::copy(
        workspace_root().join("tests/guests/js-probe/agent.ts"),
        &agent,
    )
    .unwrap();
    let out = dir.path().join("agent.wasm");
    common::stopped_build(
        &[
            OsStr::new("build-js"),
            agent.as_os_str(),
            OsStr::new("-o"),
            out.as_os_str(),
        ],
        &dir.path().join("tmp"),
        |arg| arg.ends_with(b"driver.mjs"),
    );
}
