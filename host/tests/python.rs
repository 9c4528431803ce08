//! End-to-end tests of Python agents: real components built from
//! `examples/python-agent/agent.py` and `tests/guests/python-probe/agent.py`
//! with `worldline build-python` (CPython inside, via componentize-py), run
//! by the real `worldline` binary. They fail, saying how to install it,
//! when componentize-py is missing.

use crate::common;

use common::{
    CliOutput, case, python_guest, read_bundle, run_json, shared_store, temp_dir, wl,
    workspace_root, worldline, worldline_raw,
};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const TOOL_CALL: &str = "worldline:agent/tools.call";

fn example() -> PathBuf {
    static PRIMED: OnceLock<PathBuf> = OnceLock::new();
    PRIMED
        .get_or_init(|| primed(python_guest("examples/python-agent/agent.py")))
        .clone()
}

fn probe() -> PathBuf {
    static PRIMED: OnceLock<PathBuf> = OnceLock::new();
    PRIMED
        .get_or_init(|| primed(python_guest("tests/guests/python-probe/agent.py")))
        .clone()
}

/// Load the agent once into the shared store, so its compile cache holds
/// it before tests that run at the same time ask for it (compiling CPython
/// takes seconds; each test would otherwise compile it again).
fn primed(wasm: PathBuf) -> PathBuf {
    run_json(shared_store(), &case("probe"), &wasm);
    wasm
}

fn output(run: &CliOutput) -> Value {
    let text = run.json()["output"]
        .as_str()
        .unwrap_or_else(|| panic!("the run has no output:\n{run}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("output is not JSON ({e}): {text}"))
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn the_python_example_passes_the_incident_cases() {
    let cases = workspace_root().join("cases").join("incident");
    let out = wl(
        shared_store(),
        &[&"test", &cases, &"--agent", &example(), &"--json"],
    );
    out.expect_code(0);
    let doc = out.json();
    assert_eq!(doc["failed"], 0, "{out}");
    let cases_in_folder = std::fs::read_dir(&cases)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    assert!(cases_in_folder >= 7);
    assert_eq!(doc["passed"], cases_in_folder, "every incident case: {out}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn the_python_example_holds_the_support_conversations_and_they_replay() {
    let cases = workspace_root().join("cases").join("support");
    let out = wl(
        shared_store(),
        &[&"test", &cases, &"--agent", &example(), &"--json"],
    );
    out.expect_code(0);
    let doc = out.json();
    assert_eq!(doc["failed"], 0, "{out}");
    assert!(doc["passed"].as_u64().unwrap() >= 9, "{out}");
    // It asked the supervisor before the large refund, through user.say and
    // approval.request like the Rust agent.
    let granted = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["case"] == "support/approval-granted")
        .unwrap();
    let run = granted["run_id"].as_str().unwrap();
    let replay = wl(shared_store(), &[&"replay", &run, &"--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    let history = wl(shared_store(), &[&"history", &run]);
    assert!(history.stdout.contains("approval refund"), "{history}");
    assert!(history.stdout.contains("-> user: Yes."), "{history}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn two_runs_are_byte_identical_though_the_agent_reads_time_random_uuid_and_a_set() {
    let agent = probe();
    let first = run_json(shared_store(), &case("python-probe"), &agent);
    let second = run_json(shared_store(), &case("python-probe"), &agent);
    assert_ne!(first.bundle(), second.bundle());
    first.expect_code(0);
    second.expect_code(0);
    assert_eq!(
        std::fs::read(first.bundle()).unwrap(),
        std::fs::read(second.bundle()).unwrap(),
        "two runs of the same Python agent on the same case give the same bundle"
    );

    let out = output(&first);
    // 2026-03-01T12:00:00Z is the case clock; time starts there.
    let wall = out["wall_before"].as_f64().unwrap();
    assert!((1_772_366_400.0..1_772_366_401.0).contains(&wall), "{out}");
    // Exactly the virtual 0.25 s plus three host calls at the case's tick
    // (1 ms): a real sleep would never land on this value.
    assert_eq!(
        out["slept"].as_f64(),
        Some(0.253),
        "sleep is virtual: {out}"
    );
    let r = out["random"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&r), "{out}");
    assert_eq!(out["uuid"].as_str().unwrap().len(), 36, "{out}");
    assert_eq!(out["set_order"].as_array().unwrap().len(), 8, "{out}");
    assert_eq!(out["calls"], 3);
    assert_eq!(out["ticket"]["id"], "T-1");
    assert!(
        out["missing"].as_str().unwrap().starts_with("not-found:"),
        "a host error reaches Python as wl.NotFound: {out}"
    );
    // The rest of the SDK: tool specs, world files, the scripted model.
    assert_eq!(out["tools"][0], "get_ticket", "{out}");
    assert_eq!(out["runbooks"], serde_json::json!(["runbooks/db.md"]));
    assert!(
        out["runbook_text"]
            .as_str()
            .unwrap()
            .starts_with("# Database runbook"),
        "{out}"
    );
    assert_eq!(out["model"]["said"], "hi from the script", "{out}");
    assert_eq!(
        out["model"]["asked"],
        serde_json::json!([["get_ticket", {"id": "T-1"}]]),
        "the scripted model's tool call, parsed: {out}"
    );
    assert_eq!(out["model"]["answer"], serde_json::json!(["T-1"]), "{out}");

    // The store remembers the agent file's hash, so later runs neither
    // read nor hash the 18 MB (see agent_file.rs).
    let sha = first.json()["agent_sha256"].as_str().unwrap().to_string();
    let records = common::files_with_suffix(&shared_store().join("cache/agent-files"), "");
    assert!(
        records
            .iter()
            .any(|r| std::fs::read_to_string(r).is_ok_and(|t| t == sha)),
        "a record of {sha} in {records:?}"
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
        "wasi:random/random.get-random-bytes",
        TOOL_CALL,
    ] {
        assert!(calls.contains(&needed), "{needed} is recorded: {calls:?}");
    }
    let footer = bundle.footer.unwrap();
    assert!(
        footer["stdout"]
            .as_str()
            .unwrap()
            .contains("python probe says hello"),
        "print() goes to the captured stdout"
    );

    // Another seed draws other random numbers and another uuid.
    let dir = temp_dir();
    let reseeded = common::write_case(
        dir.path(),
        "reseeded",
        &std::fs::read_to_string(case("python-probe"))
            .unwrap()
            .replace("seed = 7", "seed = 8"),
    );
    let other = common::run_in(shared_store(), &reseeded, &agent, &common::worlds_dir());
    other.expect_code(0);
    let other = output(&other);
    assert_ne!(other["random"], out["random"], "the seed drives random()");
    assert_ne!(other["uuid"], out["uuid"], "the seed drives uuid4()");
}

/// A fork's `--respond` at a random draw takes its draw from the stream
/// as in the parent (rules 12): the draws after it get the bytes they got
/// there. It took none, and each later draw got the bytes of the draw
/// before it (the parent's draw N came back at N + 1).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_random_draw_a_fork_answers_takes_its_draw() {
    let store = shared_store();
    let parent = run_json(store, &case("python-probe"), &probe());
    parent.expect_code(0);
    let events = read_bundle(&parent.bundle()).events;
    let draws: Vec<&Value> = (events.iter())
        .filter(|e| e["call"] == "wasi:random/random.get-random-bytes")
        .collect();
    assert!(draws.len() >= 2, "{parent}");
    let at = draws[0]["seq"].as_u64().unwrap();
    let zeros = "0".repeat(draws[0]["response"].as_str().unwrap().len());
    let id = parent.json()["run_id"].as_str().unwrap().to_string();
    let at_text = at.to_string();
    let respond = serde_json::to_string(&zeros).unwrap();
    let fork = wl(
        store,
        &[
            &"fork",
            &id,
            &"--at",
            &at_text,
            &"--respond",
            &respond,
            &"--json",
        ],
    );
    let forked = read_bundle(Path::new(fork.json()["bundle"].as_str().unwrap())).events;
    let fork_draws: Vec<&Value> = (forked.iter())
        .filter(|e| e["call"] == "wasi:random/random.get-random-bytes")
        .collect();
    assert_eq!(fork_draws[0]["response"], zeros.as_str(), "{fork}");
    assert_eq!(fork_draws[1]["response"], draws[1]["response"], "{fork}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn python_runs_replay_identical_and_fork() {
    common::replays_and_forks_at_the_close(shared_store(), &example());
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn an_uncaught_exception_exits_3_with_the_python_traceback() {
    let run = run_json(shared_store(), &case("python-raise"), &probe());
    run.expect_code(3);
    let doc = run.json();
    assert_eq!(doc["run_status"], "trapped", "{run}");
    let err = doc["error"].as_str().unwrap();
    assert!(err.contains("KeyError: 'T-404'"), "{err}");
    let tb = doc["traceback"].as_str().unwrap_or_else(|| panic!("{run}"));
    assert!(tb.starts_with("Traceback (most recent call last):"), "{tb}");
    for needed in ["agent.py", "in look_up", "KeyError: 'T-404'"] {
        assert!(tb.contains(needed), "`{needed}` in the traceback:\n{tb}");
    }
    // The bundle is kept, complete, with the traceback in its stderr.
    let bundle = read_bundle(&run.bundle());
    let footer = bundle.footer.expect("the bundle is complete");
    assert_eq!(footer["status"], "trapped");
    assert!(footer["stderr"].as_str().unwrap().contains(tb));

    // The human report shows it too.
    let text = worldline(
        shared_store(),
        [
            OsStr::new("run"),
            case("python-raise").as_os_str(),
            OsStr::new("--agent"),
            probe().as_os_str(),
        ],
    );
    text.expect_code(3);
    assert!(text.stdout.contains("traceback"), "{text}");
    assert!(text.stdout.contains("    KeyError: 'T-404'"), "{text}");
    assert!(!text.stdout.contains("guest backtrace"), "{text}");

    // `test` names the exception as the reason the case failed.
    let suite = wl(
        shared_store(),
        &[&"test", &case("python-raise"), &"--agent", &probe()],
    );
    suite.expect_code(1);
    assert!(suite.stdout.contains("KeyError: 'T-404'"), "{suite}");
}

/// A case's `[env] vars` are what `os.environ` holds when `run` reads it.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn the_cases_env_vars_are_os_environ() {
    let run = run_json(shared_store(), &case("python-env"), &probe());
    run.expect_code(0);
    let out: Value = serde_json::from_str(run.json()["output"].as_str().unwrap()).unwrap();
    assert_eq!(out["key"], "sk-from-the-case", "{run}");
    assert_eq!(out["env"]["LANG"], "C", "{run}");
    common::replays_identical(shared_store(), run.json()["run_id"].as_str().unwrap());
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn an_error_escaping_run_ends_the_run_errored() {
    // The example knows the incident world only; the demo task has no alert.
    let run = run_json(shared_store(), &case("probe"), &example());
    run.expect_code(1);
    let doc = run.json();
    assert_eq!(doc["run_status"], "errored", "{run}");
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .starts_with("failed: task names no `alert`"),
        "{run}"
    );

    // An output json.dumps refuses is the agent's error too, not a trap.
    let dir = temp_dir();
    let bad = common::write_case(
        dir.path(),
        "bad-output",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { ticket = \"T-1\", bad_output = true }\n",
    );
    let run = common::run_in(shared_store(), &bad, &probe(), &common::worlds_dir());
    run.expect_code(1);
    assert_eq!(run.json()["run_status"], "errored", "{run}");
    assert!(
        run.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("bad output:"),
        "{run}"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn build_python_names_what_to_install_and_what_to_fix() {
    let dir = temp_dir();
    let agent = workspace_root().join("tests/guests/python-probe/agent.py");
    let missing = worldline_raw([
        OsStr::new("build-python"),
        agent.as_os_str(),
        OsStr::new("-o"),
        dir.path().join("x.wasm").as_os_str(),
        OsStr::new("--componentize-py"),
        dir.path().join("no-such-tool").as_os_str(),
    ]);
    missing.expect_code(2);
    assert!(
        missing
            .stderr
            .contains("pip install componentize-py==0.25.1"),
        "{missing}"
    );

    // A Python error in the agent is reported with the agent's file.
    probe(); // componentize-py is there (or this fails saying how to get it)
    let broken = dir.path().join("broken.py");
    std::fs::write(
        &broken,
        "import worldline_guest\n\ndef run(task):\n    return (\n",
    )
    .unwrap();
    let out = worldline_raw([
        OsStr::new("build-python"),
        broken.as_os_str(),
        OsStr::new("-o"),
        dir.path().join("broken.wasm").as_os_str(),
    ]);
    out.expect_code(2);
    // Placed at its line, the Python traceback alone (not componentize-py's
    // own frames, its `Caused by:`, nor a Rust backtrace).
    let at = format!("{}:4:12: ", broken.display()); // at the `(` never closed (column 1 before)
    assert!(out.stderr.contains(&at), "{out}");
    assert!(
        out.stderr.contains("SyntaxError") || out.stderr.contains("never closed"),
        "{out}"
    );
    assert!(
        !out.stderr.contains("Caused by") && !out.stderr.contains("bin/componentize-py"),
        "{out}"
    );

    // The agent's source as the output: it was replaced by the
    // component, exit 0.
    let source = dir.path().join("agent.py");
    std::fs::copy(&agent, &source).unwrap();
    let over = worldline_raw([
        OsStr::new("build-python"),
        source.as_os_str(),
        OsStr::new("-o"),
        source.as_os_str(),
    ]);
    over.expect_code(2);
    assert!(
        over.stderr
            .contains("(the agent's source), which this command reads"),
        "{over}"
    );
    assert_eq!(
        std::fs::read(&source).unwrap(),
        std::fs::read(&agent).unwrap()
    );

    // A service that marks no tool is told to mark one: it was an
    // ImportError of `WitWorld`, a name the user never wrote.
    let untooled = dir.path().join("untooled.py");
    std::fs::write(
        &untooled,
        "import worldline_service as ws\n\ndef f(x):\n    return x\n",
    )
    .unwrap();
    let out = worldline_raw([
        OsStr::new("build-python"),
        OsStr::new("--service"),
        untooled.as_os_str(),
        OsStr::new("-o"),
        dir.path().join("untooled.wasm").as_os_str(),
    ]);
    out.expect_code(2);
    assert!(out.stderr.contains("marks no tool"), "{out}");
    assert!(!out.stderr.contains("WitWorld"), "{out}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn build_python_gives_the_same_bytes_for_the_same_sources() {
    // componentize-py's snapshot differs from build to build (CPython's
    // hash seed is drawn while it starts): the second build of the same
    // sources must give the first one's bytes, so a rebuilt, unchanged
    // agent or service keeps its hash and is not compiled again.
    let dir = temp_dir();
    let cache = dir.path().join("cache");
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("agent.py"),
        "def run(task):\n    return \"same\"\n",
    )
    .unwrap();
    let agent = src.join("agent.py");
    let build = |out: &str| {
        let wasm = dir.path().join(out);
        let built = common::worldline_env(
            [
                OsStr::new("build-python"),
                agent.as_os_str(),
                OsStr::new("-o"),
                wasm.as_os_str(),
                OsStr::new("--json"),
            ],
            &[("WORLDLINE_BUILD_CACHE", cache.to_str().unwrap())],
        );
        built.expect_code(0);
        (
            std::fs::read(&wasm).unwrap(),
            built.json()["reused"].clone(),
        )
    };
    let (first, first_reused) = build("first.wasm");
    // The output beside the sources is not one of them.
    std::fs::write(src.join("agent.wasm"), &first).unwrap();
    let (second, second_reused) = build("second.wasm");
    assert!(first == second, "two builds of the same sources differ");
    assert_eq!(
        (first_reused, second_reused),
        (Value::Bool(false), Value::Bool(true))
    );
}

/// A build writes its output and nothing else: the source folder is as
/// it was (a first build wrote CPython's bytecode of each module it
/// imported into `__pycache__/` beside the source, package folders
/// included).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn build_python_writes_nothing_into_the_source_folder() {
    let dir = temp_dir();
    let src = dir.path().join("service");
    std::fs::create_dir_all(src.join("helpers")).unwrap();
    std::fs::write(src.join("helpers/__init__.py"), "").unwrap();
    std::fs::write(src.join("helpers/names.py"), "NAME = \"counters\"\n").unwrap();
    std::fs::write(
        src.join("svc.py"),
        "import worldline_service as ws\nfrom helpers.names import NAME\n\n\
         COUNTERS = ws.Table(NAME)\n\n\n@ws.tool\ndef keys():\n    return [c[\"id\"] for c in COUNTERS.query()]\n",
    )
    .unwrap();
    let listing = |root: &std::path::Path| {
        let mut all = Vec::new();
        let mut todo = vec![root.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    todo.push(p.clone());
                }
                all.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
        all.sort();
        all
    };
    let before = listing(&src);
    let wasm = dir.path().join("out/svc.wasm");
    let built = common::worldline_env(
        [
            OsStr::new("build-python"),
            OsStr::new("--service"),
            src.join("svc.py").as_os_str(),
            OsStr::new("-o"),
            wasm.as_os_str(),
            OsStr::new("--json"),
        ],
        // A build cache of its own: a first build, not one kept.
        &[(
            "WORLDLINE_BUILD_CACHE",
            dir.path().join("cache").to_str().unwrap(),
        )],
    );
    built.expect_code(0);
    assert_eq!(built.json()["reused"], false, "{built}");
    assert!(wasm.is_file(), "{built}");
    assert_eq!(
        listing(&src),
        before,
        "the build wrote into the source folder"
    );
}

/// An `async def run` is awaited on the sandbox's loop (its coroutine was
/// refused as the output: "bad output: Object of type coroutine is not
/// JSON serializable"), replays `identical`, and an output of NaN is no
/// JSON: refused as the output (it was written `NaN`, which a grader read
/// as null).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn an_async_run_is_awaited_and_nan_is_no_output() {
    let agent = python_guest("tests/guests/python-probe/async_agent.py");
    let dir = temp_dir();
    let case = |task: &str| {
        common::write_case(
            dir.path(),
            "c",
            &format!(
                "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {task}\n"
            ),
        )
    };
    let store = dir.path().join("store");
    let worlds = workspace_root().join("tests/worlds");
    let ran = common::run_in(&store, &case("{ ticket = \"T-1\" }"), &agent, &worlds);
    ran.expect_code(0);
    assert_eq!(ran.json()["output"], "{\"ticket\":\"T-1\"}", "{ran}");
    common::replays_identical(&store, ran.json()["run_id"].as_str().unwrap());
    let nan = common::run_in(
        &store,
        &case("{ ticket = \"T-1\", nan = true }"),
        &agent,
        &worlds,
    );
    assert_eq!(nan.json()["run_status"], "errored", "{nan}");
    assert!(
        nan.stdout
            .contains("bad output: Out of range float values are not JSON compliant"),
        "{nan}"
    );
    // The CPU-time clocks start at 0 with the run and follow its virtual
    // clock (they were the build's start less it: negative); a raw socket
    // is refused with an OSError (it was `LookupError: unknown encoding:
    // idna`, which no `except OSError` catches).
    let clocks = common::run_in(&store, &case("{ clocks = true }"), &agent, &worlds);
    clocks.expect_code(0);
    let out: serde_json::Value =
        serde_json::from_str(clocks.json()["output"].as_str().unwrap()).unwrap();
    let (before, after) = (&out["before"], &out["after"]);
    assert!(
        (0.0..0.5).contains(&before[0].as_f64().unwrap()),
        "{clocks}"
    );
    let slept = after[0].as_f64().unwrap() - before[0].as_f64().unwrap();
    assert!((2.0..2.5).contains(&slept), "{clocks}");
    let slept_ns = after[1].as_i64().unwrap() - before[1].as_i64().unwrap();
    assert!(
        (2_000_000_000..2_500_000_000).contains(&slept_ns),
        "{clocks}"
    );
    assert_ne!(out["lookup"], "allowed", "{clocks}");
    assert_ne!(out["connect"], "allowed", "{clocks}");
    common::replays_identical(&store, clocks.json()["run_id"].as_str().unwrap());
}

/// A `print` past 64 KiB is kept whole up to the case's
/// `limits.stdout_bytes`, and what passes it is dropped and counted
/// (rules 1, decision 0423). stdout offered 64 KiB per `check-write`, and
/// CPython wrote that much of the line and lost the rest: 100,000 bytes
/// printed under a 1 MiB limit kept 65,536, and under the default limit
/// `truncated_bytes` said 0. A Rust agent's run recorded before
/// (`tests/bundles/before-rules/println.json`, its `check-write` answered
/// 64 KiB) replays as it ran.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_print_past_64_kib_is_kept_whole_to_the_limit_and_counted_past_it() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    common::imported_fixture(&store, "before-rules", "println.json");
    for (limit, kept, dropped) in [(1 << 20, 100_001, 0), (65_536, 65_536, 34_465)] {
        let text = format!(
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\n\
             task = {{ print_bytes = 100000 }}\n[limits]\nstdout_bytes = {limit}\n"
        );
        let case = common::write_case(dir.path(), &format!("print{limit}"), &text);
        let out = common::run_in(&store, &case, &probe(), &common::worlds_dir());
        out.expect_code(0);
        assert_eq!(out.json()["truncated_bytes"], dropped, "{out}");
        let footer = read_bundle(&out.bundle()).footer.unwrap();
        let stdout = footer["stdout"].as_str().unwrap();
        assert_eq!(stdout.len(), kept, "limit {limit}");
        common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());
    }
}

/// `DIR/agent.py`, an agent no build made before (it returns its own
/// folder's path, after `imports`): nothing is taken from the build cache.
fn fresh_agent(dir: &Path, imports: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let agent = dir.join("agent.py");
    let unique = dir.display().to_string();
    std::fs::write(
        &agent,
        format!("import worldline_guest\n{imports}\n\n@worldline_guest.agent\ndef run(task):\n    return {unique:?}\n"),
    )
    .unwrap();
    agent
}

/// `build-python` stopped by Ctrl-C (SIGINT to its process group, as a
/// terminal sends it) ends by the signal, componentize-py with it, and
/// leaves no temporary folder: componentize-py ignored SIGINT and ran on
/// to its end, writing its output into a folder no one removed.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_python_build_stopped_by_ctrl_c_leaves_nothing_running_or_behind() {
    let dir = common::temp_dir();
    let agent = fresh_agent(dir.path(), "");
    let out = dir.path().join("agent.wasm");
    // The build itself (`componentize-py ... componentize MAIN`), not its
    // `--version` asked before.
    common::stopped_build(
        &[
            OsStr::new("build-python"),
            agent.as_os_str(),
            OsStr::new("-o"),
            out.as_os_str(),
        ],
        &dir.path().join("tmp"),
        |arg| arg == b"componentize",
    );
}

/// Two builds of the same sources at once give the same bytes: the
/// second to end takes the first's kept build (the last to end replaced
/// the first's in the cache, and the first's output matched no build
/// again).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn two_builds_of_the_same_sources_at_once_give_the_same_bytes() {
    let dir = common::temp_dir();
    // The agent's folder holds its sources only (the cache is outside).
    let agent = fresh_agent(&dir.path().join("src"), "");
    let build = |n: u32| {
        common::cli()
            .arg("build-python")
            .arg(&agent)
            .arg("-o")
            .arg(dir.path().join(format!("agent{n}.wasm")))
            .env("WORLDLINE_BUILD_CACHE", dir.path().join("cache"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (build(1), build(2));
    for child in [a, b] {
        common::CliOutput::of(child.wait_with_output().unwrap()).expect_code(0);
    }
    let bytes = |n: u32| std::fs::read(dir.path().join(format!("agent{n}.wasm"))).unwrap();
    assert!(
        bytes(1) == bytes(2),
        "two builds of the same sources differ"
    );
    // And a third, later, gives them too (from the cache).
    common::CliOutput::of(build(3).wait_with_output().unwrap()).expect_code(0);
    assert!(bytes(3) == bytes(1));
}

/// The agent's folder as Python reads it: a package reached through a
/// folder link is built in (it was left out, the build failing with
/// `ModuleNotFoundError` as if it were not there), and a file that cannot
/// be read is exit 2 naming it and what to do (it was exit 4, "reading
/// ...: Input/output error").
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_linked_package_is_built_in_and_an_unreadable_file_is_named() {
    let dir = common::temp_dir();
    let (src, shared) = (dir.path().join("src"), dir.path().join("shared/helpers"));
    std::fs::create_dir_all(&src).unwrap();
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("__init__.py"), "").unwrap();
    std::fs::write(shared.join("words.py"), "WORD = 'linked'\n").unwrap();
    std::os::unix::fs::symlink(&shared, src.join("helpers")).unwrap();
    let agent = fresh_agent(&src, "from helpers.words import WORD\n");
    let build = || {
        common::worldline_env(
            [
                OsStr::new("build-python"),
                agent.as_os_str(),
                OsStr::new("-o"),
                dir.path().join("agent.wasm").as_os_str(),
                OsStr::new("--json"),
            ],
            &[(
                "WORLDLINE_BUILD_CACHE",
                &dir.path().join("cache").to_string_lossy(),
            )],
        )
    };
    build().expect_code(0);
    // A file whose every read fails (as a root-only file does for a user).
    std::os::unix::fs::symlink("/proc/self/mem", src.join("data.bin")).unwrap();
    let out = build();
    out.expect_code(2);
    assert_eq!(
        out.json()["error"]["file"],
        src.join("data.bin").to_str().unwrap(),
        "{out}"
    );
    assert!(out.stderr.contains("move it out of the folder"), "{out}");
}
