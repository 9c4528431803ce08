//! Python agents over HTTP, with no worldline import:
//! examples/python-http-agent (the standard library's `urllib`) and
//! tests/guests/python-httpx (`httpx` from PyPI at pinned versions, bundled
//! by `build-python --requirements` or `--venv`), built with the real
//! componentize-py and run by the real binary. The world answers the model
//! APIs and MCP; every run replays bit for bit. And what `build-python`
//! refuses: packages with native extensions, by name.

use crate::common;

use common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const MODEL_CALL: &str = "worldline:agent/model.complete";
const TOOL_CALL: &str = "worldline:agent/tools.call";
const HANDLE: &str = "wasi:http/outgoing-handler.handle";
const HTTPX: &str = "tests/guests/python-httpx";

/// examples/python-http-agent, built and loaded once into the shared
/// store, so its compile cache holds it before tests that run at the same
/// time ask for it (compiling CPython takes a minute on a busy machine).
fn example() -> PathBuf {
    static PRIMED: OnceLock<PathBuf> = OnceLock::new();
    PRIMED
        .get_or_init(|| primed(python_guest("examples/python-http-agent/agent.py")))
        .clone()
}

fn primed(wasm: PathBuf) -> PathBuf {
    run_json(shared_store(), &model_case("model/rollback"), &wasm).expect_code(0);
    wasm
}

fn model_case(name: &str) -> PathBuf {
    workspace_root().join(format!("cases/{name}.toml"))
}

/// The Python componentize-py runs with (its virtual environment's, which
/// has pip and venv), as `build-python` finds it.
fn python() -> PathBuf {
    let exe = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("componentize-py"))
            .find(|p| p.is_file())
    });
    exe.and_then(|e| Some(e.parent()?.join("python3")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// Run `python args...`, which must succeed.
fn py(args: &[&OsStr]) {
    let out = Command::new(python())
        .args(args)
        .output()
        .expect("running Python");
    assert!(
        out.status.success(),
        "{:?} failed:\n{}{}",
        args,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A new virtual environment in `dir` with the pinned requirements
/// `files` installed; its path.
fn venv(dir: &Path, requirements: &[&Path]) -> PathBuf {
    let venv = dir.join("venv");
    py(&[OsStr::new("-m"), OsStr::new("venv"), venv.as_os_str()]);
    let pip = venv.join("bin/python3");
    for r in requirements {
        let out = Command::new(&pip)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(r)
            .output()
            .expect("running pip");
        assert!(
            out.status.success(),
            "pip install -r {}: {}",
            r.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    venv
}

/// `build-python AGENT -o OUT EXTRA...`.
fn build(agent: &Path, wasm: &Path, extra: &[&OsStr]) -> CliOutput {
    let mut args = vec![
        OsStr::new("build-python"),
        agent.as_os_str(),
        OsStr::new("-o"),
        wasm.as_os_str(),
    ];
    args.extend_from_slice(extra);
    worldline_raw(args)
}

/// tests/guests/python-httpx built with `--requirements` (its pinned
/// requirements.txt), once per test process.
fn httpx_agent() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-guests");
            std::fs::create_dir_all(&dir).unwrap();
            let wasm = dir.join("python-httpx-requirements.wasm");
            let src = workspace_root().join(HTTPX);
            let requirements = src.join("requirements.txt");
            let out = build(
                &src.join("agent.py"),
                &wasm,
                &[OsStr::new("--requirements"), requirements.as_os_str()],
            );
            out.expect_code(0);
            primed(wasm)
        })
        .clone()
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn the_urllib_agent_passes_the_model_and_http_cases_and_every_run_replays() {
    let store = shared_store();
    let out = wl(
        store,
        &[
            &"test",
            &workspace_root().join("cases/model"),
            &workspace_root().join("cases/http"),
            &"--agent",
            &example(),
            &"--json",
        ],
    );
    out.expect_code(0);
    let doc = out.json();
    assert_eq!(doc["failed"], 0, "{out}");
    assert_eq!(doc["passed"], 9, "3 model and 6 http cases: {out}");
    for case in doc["cases"].as_array().unwrap() {
        replays_identical(store, case["run_id"].as_str().unwrap());
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn urllib_calls_are_the_same_model_and_tool_events_and_the_key_is_not_recorded() {
    let store = shared_store();
    let out = run_json(store, &model_case("model/rollback"), &example());
    out.expect_code(0);
    assert_eq!(out.output()["cause_deploy"], "D-42");
    let bundle = out.bundle();
    let model = calls_of(&bundle, MODEL_CALL);
    assert_eq!(model.len(), 6, "one model call per turn");
    let http = &model[0]["request"]["transport"]["http"];
    assert_eq!(http["api"], "openai.chat");
    assert_eq!(http["url"], "https://api.openai.com/v1/chat/completions");
    assert_eq!(model[0]["request"]["request"]["model"], "gpt-4o-mini");
    let tools = calls_of(&bundle, TOOL_CALL);
    assert_eq!(tools.len(), 5);
    assert_eq!(tools[0]["request"]["transport"]["http"]["api"], "mcp");
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(
        !text.contains("sk-agent-secret"),
        "the guest's key is in the bundle"
    );
    // A second run of the case is the same run, event for event.
    let again = run_json(store, &model_case("model/rollback"), &example());
    assert_eq!(
        read_bundle(&again.bundle()).events,
        read_bundle(&bundle).events
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn urllib_meets_a_denied_url_a_429_and_a_timeout_as_python_network_code_does() {
    let store = shared_store();
    let denied = run_json(store, &model_case("http/denied-url"), &example());
    denied.expect_code(0);
    let probe = denied.output()["probe"]["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        probe.starts_with("URLError") && probe.contains("HTTP-request-denied"),
        "{probe}"
    );
    let handles = calls_of(&denied.bundle(), HANDLE);
    assert_eq!(handles[0]["request"]["url"], "https://example.com/status");
    assert!(
        handles[0]["response"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not part of the world: only the model APIs")),
        "{}",
        handles[0]
    );

    let limited = run_json(store, &model_case("http/rate-limited"), &example());
    limited.expect_code(0);
    assert_eq!(limited.output()["model_retries"], 1);
    assert_eq!(
        calls_of(&limited.bundle(), MODEL_CALL).len(),
        7,
        "the retry is its own call"
    );

    let timeout = run_json(store, &model_case("model/model-timeout"), &example());
    timeout.expect_code(0);
    assert_eq!(timeout.output()["model_retries"], 1);
    replays_identical(store, timeout.json()["run_id"].as_str().unwrap());
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn httpx_from_a_requirements_file_runs_unchanged_and_replays() {
    let store = shared_store();
    let agent = httpx_agent();
    let out = run_json(store, &model_case("model/rollback"), &agent);
    out.expect_code(0);
    let o = out.output();
    assert_eq!(o["cause_deploy"], "D-42", "{out}");
    assert_eq!(o["httpx"], "0.28.1", "the pinned httpx is the one bundled");
    let model = calls_of(&out.bundle(), MODEL_CALL);
    assert_eq!(model.len(), 6);
    assert_eq!(
        model[0]["request"]["transport"]["http"]["api"],
        "openai.chat"
    );
    assert!(
        !std::fs::read_to_string(out.bundle())
            .unwrap()
            .contains("sk-httpx-agent-secret")
    );
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
    // A denied URL is httpx's own ConnectError.
    let denied = run_json(store, &model_case("http/denied-url"), &agent);
    denied.expect_code(0);
    assert_eq!(denied.output()["probe"]["error"], "ConnectError");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_virtual_environment_is_bundled_and_one_with_native_extensions_is_refused_by_name() {
    let dir = temp_dir();
    let src = workspace_root().join(HTTPX);
    let venv = venv(dir.path(), &[&src.join("requirements.txt")]);
    let wasm = dir.path().join("agent.wasm");
    let built = build(
        &src.join("agent.py"),
        &wasm,
        &[OsStr::new("--venv"), venv.as_os_str()],
    );
    built.expect_code(0);
    let store = shared_store();
    let out = run_json(store, &model_case("model/rollback"), &wasm);
    out.expect_code(0);
    assert_eq!(out.output()["httpx"], "0.28.1", "{out}");

    // PyYAML's wheel for this platform carries a C extension.
    let native = dir.path().join("native.txt");
    std::fs::write(&native, "PyYAML==6.0.3\n").unwrap();
    let pip = Command::new(venv.join("bin/python3"))
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--only-binary=:all:",
            "-r",
        ])
        .arg(&native)
        .output()
        .unwrap();
    assert!(
        pip.status.success(),
        "{}",
        String::from_utf8_lossy(&pip.stderr)
    );
    let refused = build(
        &src.join("agent.py"),
        &dir.path().join("refused.wasm"),
        &[OsStr::new("--venv"), venv.as_os_str()],
    );
    refused.expect_code(2);
    // The distribution as its .dist-info names it (newer wheels lower-case it).
    let said = refused.stderr.to_lowercase();
    assert!(
        said.contains("pyyaml 6.0.3")
            && said.contains("yaml/_yaml.")
            && said.contains("pip uninstall pyyaml"),
        "{refused}"
    );
    assert!(!dir.path().join("refused.wasm").exists());
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_requirement_without_a_pure_python_wheel_is_refused_at_its_line() {
    let dir = temp_dir();
    let requirements = dir.path().join("requirements.txt");
    std::fs::write(
        &requirements,
        "# the agent's packages\nhttpx==0.28.1\npydantic==2.12.4\n",
    )
    .unwrap();
    let out = build(
        &workspace_root().join(HTTPX).join("agent.py"),
        &dir.path().join("agent.wasm"),
        &[OsStr::new("--requirements"), requirements.as_os_str()],
    );
    out.expect_code(2);
    let said = &out.stderr;
    assert!(
        said.contains(&format!("{}:3", requirements.display()))
            && said.contains("pydantic-core")
            && said.contains("(needed by pydantic)")
            && said.contains("native extensions"),
        "{out}"
    );
    // A line of a file the requirements take in with `-r` is named there
    // (the outer file was named, with no line), and a name no index has (a
    // typo, which pip answers as it answers a native package) is one of
    // the causes given.
    let nested = dir.path().join("more/nested.txt");
    std::fs::create_dir_all(nested.parent().unwrap()).unwrap();
    std::fs::write(&nested, "# typed in a hurry\nbogus-pkg-zzzz-404==1.0\n").unwrap();
    let outer = dir.path().join("outer.txt");
    std::fs::write(&outer, "httpx==0.28.1\n-r more/nested.txt\n").unwrap();
    let typo = build(
        &workspace_root().join(HTTPX).join("agent.py"),
        &dir.path().join("agent.wasm"),
        &[OsStr::new("--requirements"), outer.as_os_str()],
    );
    typo.expect_code(2);
    assert!(
        typo.stderr.contains(&format!("{}:2", nested.display()))
            && typo
                .stderr
                .contains("no such package or version is published"),
        "{typo}"
    );
    let missing = build(
        &workspace_root().join(HTTPX).join("agent.py"),
        &dir.path().join("agent.wasm"),
        &[OsStr::new("--venv"), dir.path().as_os_str()],
    );
    missing.expect_code(2);
    assert!(
        missing.stderr.contains("is not a virtual environment"),
        "{missing}"
    );

    // A module with neither `@worldline_guest.agent` nor a `run`.
    let nothing = dir.path().join("nothing.py");
    std::fs::write(&nothing, "def main(task):\n    return task\n").unwrap();
    let out = build(&nothing, &dir.path().join("nothing.wasm"), &[]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("defines no agent: define `def run(task)`"),
        "{out}"
    );
    // A module named as a standard one is said to be (the standard
    // module was imported, and "defines no agent" blamed right code).
    let stdlib = dir.path().join("std").join("calendar.py");
    std::fs::create_dir_all(stdlib.parent().unwrap()).unwrap();
    std::fs::write(&stdlib, "def run(task):\n    return task\n").unwrap();
    let out = build(&stdlib, &dir.path().join("calendar.wasm"), &[]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("calendar.py has the name of Python's standard module `calendar`"),
        "{out}"
    );
}

/// An `httpx.AsyncClient` request waits in the sandbox's asyncio loop
/// beside its timers, and a model's latency is when its answer is ready
/// (rules 5, decision 0426): `asyncio.timeout(2)` and a 2 s read timeout
/// end a request to a 30 s model at 2 s, and two requests gathered take
/// one latency. The async transport blocked the run and the clock jumped
/// by the latency as the request was answered: each got its answer after
/// 30 s, and the two gathered took 2 s.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn async_requests_to_a_slow_model_time_out_and_gathered_ones_wait_together() {
    let store = shared_store();
    let agent = httpx_agent();
    for (mode, error) in [("abort", "TimeoutError"), ("read-timeout", "ReadTimeout")] {
        let out = run_json(store, &case(&format!("python-latency-{mode}")), &agent);
        out.expect_code(0);
        assert_eq!(out.output()["error"], error, "{out}");
        let took = out.output()["elapsed_s"].as_f64().unwrap();
        assert!((2.0..2.1).contains(&took), "{out}");
        replays_identical(store, out.json()["run_id"].as_str().unwrap());
    }
    let out = run_json(store, &case("python-latency-gather"), &agent);
    out.expect_code(0);
    assert_eq!(
        out.output()["statuses"],
        serde_json::json!([200, 200]),
        "{out}"
    );
    let took = out.output()["elapsed_s"].as_f64().unwrap();
    assert!((1.0..1.1).contains(&took), "{out}");
    replays_identical(store, out.json()["run_id"].as_str().unwrap());
}
