//! From an incident to a regression case, on the real binary and the real
//! example agents: a shrunk fuzz reproducer made a case with `case
//! from-run` fails with the reproducer's signature for the naive agent and
//! passes for the careful one, twice identically; the case names its
//! origin, which `history` shows and `check` and `run` hold it to.

use crate::common;
use crate::ui_support;

use common::{
    ONE_FAULT_MATTERS, guest, read_bundle, suite_without_run_specifics, temp_dir, workspace_root,
    worldline, write_case,
};
use serde_json::Value;
use std::path::Path;

/// The first failed assertion of a run, as fuzz groups failures.
fn signature(bundle: &Path) -> Option<String> {
    let b = read_bundle(bundle);
    let footer = b.footer?;
    let a = footer["grade"]["assertions"]
        .as_array()?
        .iter()
        .find(|a| a["passed"] == false)?
        .clone();
    Some(format!("failed: {}", a["what"].as_str()?))
}

/// `worldline test CASES --agent AGENT --json` with the repository's worlds.
fn test_json(store: &Path, cases: &Path, agent: &str) -> common::CliOutput {
    let worlds = workspace_root().join("worlds");
    worldline(
        store,
        [
            "test".as_ref(),
            cases.as_os_str(),
            "--agent".as_ref(),
            guest(agent).as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--json".as_ref(),
        ],
    )
}

#[test]
fn a_shrunk_reproducer_becomes_a_case_that_fails_the_old_agent_and_passes_the_fixed_one() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "one-fault", ONE_FAULT_MATTERS);
    let worlds = workspace_root().join("worlds");
    let naive = guest("naive-agent");
    let fuzz = worldline(
        &store,
        [
            "fuzz".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            naive.as_os_str(),
            "--runs".as_ref(),
            "2".as_ref(),
            "--shrink".as_ref(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--json".as_ref(),
        ],
    );
    fuzz.expect_code(1);
    let group = &fuzz.json()["groups"][0];
    let want = group["signature"].as_str().unwrap().to_string();
    assert_eq!(want, "failed: deploys/D-42.status equals", "{fuzz}");
    assert_eq!(group["shrunk"]["faults_after"], 1, "{fuzz}");
    let run = group["reproducer"]["run_id"].as_str().unwrap();

    let cases = dir.path().join("cases/regress");
    std::fs::create_dir_all(&cases).unwrap();
    let out_case = cases.join("stale-deploy-list.toml");
    let made = worldline(
        &store,
        [
            "case".as_ref(),
            "from-run".as_ref(),
            run.as_ref(),
            "-o".as_ref(),
            out_case.as_os_str(),
            "--json".as_ref(),
        ],
    );
    made.expect_code(0);
    assert_eq!(made.json()["injects"], 1, "{made}");
    let text = std::fs::read_to_string(&out_case).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    assert!(doc.get("fuzz").is_none(), "{text}");
    let rule = &doc["inject"].as_array().unwrap()[0];
    assert_eq!(rule["tool"].as_str(), Some("list_deploys"), "{text}");
    assert_eq!(rule["nth"].as_integer(), Some(1), "{text}");
    assert_eq!(rule["stale"]["age_s"].as_integer(), Some(901), "{text}");
    assert_eq!(doc["origin"]["run"].as_str(), Some(run), "{text}");
    assert_eq!(doc["origin"]["created_from"].as_str(), Some("run"));
    assert!(cases.join("stale-deploy-list.run.jsonl").is_file());

    // The old agent fails with the reproducer's signature, the fixed one
    // passes, each twice with the same report.
    let mut first: Option<(Value, Value)> = None;
    let mut old_run = String::new();
    for _ in 0..2 {
        let old = test_json(&store, &cases, "naive-agent");
        old.expect_code(1);
        old_run = old.json()["cases"][0]["run_id"]
            .as_str()
            .unwrap()
            .to_string();
        let bundle = old.json()["cases"][0]["bundle"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            signature(Path::new(&bundle)).as_deref(),
            Some(want.as_str())
        );
        let b = read_bundle(Path::new(&bundle));
        assert_eq!(b.header["origin"]["run"].as_str(), Some(run));
        // The run's own seed, even past TOML's largest integer.
        assert_eq!(b.header["seed"], group["reproducer"]["seed"]);
        let fixed = test_json(&store, &cases, "careful-agent");
        fixed.expect_code(0);
        let pair = (
            suite_without_run_specifics(old.json().clone()),
            suite_without_run_specifics(fixed.json().clone()),
        );
        match &first {
            None => first = Some(pair),
            Some(f) => assert_eq!(*f, pair, "a second test of the case differs"),
        }
    }

    // history shows where the case came from.
    let history = worldline(&store, ["history", &old_run]);
    assert!(
        history
            .stdout
            .contains(&format!("case made from run {run}")),
        "{history}"
    );

    // So does the UI's run page.
    let ui = ui_support::Server::start(&store, &[]);
    let page = ui.get(&format!("/run/{old_run}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains(&format!("case made from run {run}")),
        "{}",
        page.body
    );
    drop(ui);

    // check holds the case to its origin.
    let fine = worldline(
        &store,
        [
            "check".as_ref(),
            out_case.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ],
    );
    fine.expect_code(0);
    assert!(!fine.stdout.contains("[origin]"), "{fine}");
    std::fs::remove_file(cases.join("stale-deploy-list.run.jsonl")).unwrap();
    let gone = worldline(
        &store,
        [
            "check".as_ref(),
            out_case.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ],
    );
    assert!(
        gone.stdout.contains("[origin] bundle") && gone.stdout.contains("is gone"),
        "{gone}"
    );
}

#[test]
fn from_run_of_a_missing_run_is_exit_2_and_writes_nothing() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = dir.path().join("x.toml");
    std::fs::write(&out, "keep").unwrap();
    // A store without that run (a store that is not there is named so).
    std::fs::create_dir_all(store.join("runs")).unwrap();
    let missing = worldline(
        &store,
        [
            "case".as_ref(),
            "from-run".as_ref(),
            "nope".as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
        ],
    );
    missing.expect_code(2);
    assert!(missing.stderr.contains("nope"), "{missing}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
}

/// `-o DIR/x.toml` under a file is refused before the run is read (a
/// 1,000-call run was read whole, 13 GB, then refused): a run whose
/// bundle no longer reads is refused for the path, not for its bundle.
/// Into folders that are not there, the refused run makes none of them.
#[test]
fn from_run_under_a_file_is_refused_before_the_run_is_read() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (worlds, case) = common::long::write(dir.path(), 4);
    let run = common::run_in(&store, &case, &guest("looper-agent"), &worlds);
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    // A middle line changed: its bundle's hash chain is broken.
    let bundle = run.bundle();
    let text = std::fs::read_to_string(&bundle).unwrap();
    std::fs::write(&bundle, text.replacen("d1w1 ", "d1wX ", 1)).unwrap();
    let from_run = |out: &Path| {
        worldline(
            &store,
            [
                "case".as_ref(),
                "from-run".as_ref(),
                id.as_ref(),
                "-o".as_ref(),
                out.as_os_str(),
            ],
        )
    };
    std::fs::write(dir.path().join("afile"), "").unwrap();
    let refused = from_run(&dir.path().join("afile/x.toml"));
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("is a file, not a folder"),
        "{refused}"
    );
    assert!(!refused.stderr.contains("chain"), "{refused}");
    let broken = from_run(&dir.path().join("missing/deeper/x.toml"));
    broken.expect_code(2);
    assert!(broken.stderr.contains("chain"), "{broken}");
    assert!(!dir.path().join("missing").exists());
}

/// `case from-run RUN -o cases/regress/x.toml` on a checkout without
/// `cases/regress` (the README's own step) makes the folder and writes
/// the case and its bundle copy there, as cargo and git make an output's
/// folders; it was refused ("its folder ... is not there: make it
/// first").
#[test]
fn from_run_makes_the_folders_of_its_output() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "one-fault", ONE_FAULT_MATTERS);
    let worlds = workspace_root().join("worlds");
    let agent = guest("careful-agent");
    let run = common::run_in(&store, &case, &agent, &worlds);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let out = dir.path().join("cases/regress/stale-deploy-list.toml");
    let made = worldline(
        &store,
        [
            "case".as_ref(),
            "from-run".as_ref(),
            id.as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
        ],
    );
    made.expect_code(0);
    assert!(out.is_file(), "{made}");
    assert!(out.with_extension("run.jsonl").is_file(), "{made}");
    let suite = test_json(&store, &dir.path().join("cases/regress"), "careful-agent");
    suite.expect_code(0);
}

/// A case whose seed is past 2^63 − 1, given as a bare integer (`run`
/// takes it), becomes a case with `case from-run`: its seed written as its
/// digits, which runs the same seed again. `from-run` read the source as a
/// TOML table and refused it ("u64 value was too large", naming the
/// store's object file).
#[test]
fn from_run_of_a_case_with_a_seed_past_toml_integers() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "big-seed",
        &common::DEMO_PASSES.replace("seed = 3", "seed = 18446744073709551615"),
    );
    let agent = guest("caller-agent");
    let worlds = common::worlds_dir();
    let run = |case: &Path| {
        let out = common::run_in(&store, case, &agent, &worlds);
        out.expect_code(0);
        out.json().clone()
    };
    let first = run(&case);
    let id = first["run_id"].as_str().unwrap();
    // Its trajectory carries the case's task (it was null: the case was
    // read whole as a TOML table).
    let lines = dir.path().join("t.jsonl");
    worldline(
        &store,
        [
            "export".as_ref(),
            id.as_ref(),
            "--format".as_ref(),
            "trajectories".as_ref(),
            "-o".as_ref(),
            lines.as_os_str(),
        ],
    )
    .expect_code(0);
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&lines)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["task"]["calls"][0]["tool"], "get_ticket", "{line}");
    let made = dir.path().join("made.toml");
    let out = worldline(
        &store,
        [
            "case".as_ref(),
            "from-run".as_ref(),
            id.as_ref(),
            "-o".as_ref(),
            made.as_os_str(),
        ],
    );
    out.expect_code(0);
    let text = std::fs::read_to_string(&made).unwrap();
    assert!(text.contains("seed = \"18446744073709551615\""), "{text}");
    let again = run(&made);
    assert_eq!(again["seed"], first["seed"], "{again}");
    assert_eq!(again["chain_hash"], first["chain_hash"], "{again}");
}

/// Tool calls as (request, response), and the model's answers (content and
/// tool calls), of a run.
fn answers(bundle: &Path) -> (Vec<Value>, Vec<Value>) {
    let b = read_bundle(bundle);
    let tools = b
        .events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .map(|e| serde_json::json!([e["request"], e["response"]]))
        .collect();
    let model = b
        .events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/model.complete")
        .map(|e| answer_shape(&e["response"]["ok"]["choices"][0]["message"]))
        .collect();
    (tools, model)
}

fn from_trace(store: &Path, args: &[&std::ffi::OsStr]) -> common::CliOutput {
    let mut all: Vec<&std::ffi::OsStr> = vec!["case".as_ref(), "from-trace".as_ref()];
    all.extend(args);
    worldline(store, all)
}

#[test]
fn an_exported_trace_of_a_model_agent_run_becomes_a_case_with_the_same_answers() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = guest("model-agent");
    let case = workspace_root().join("cases/model/rollback.toml");
    let run = worldline(
        &store,
        [
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--json".as_ref(),
        ],
    );
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let trace = dir.path().join("traces/trace.pb");
    worldline(
        &store,
        [
            "otel".as_ref(),
            id.as_ref(),
            "--content".as_ref(),
            "-o".as_ref(),
            trace.as_os_str(),
        ],
    )
    .expect_code(0);

    let listed = from_trace(
        &store,
        &[trace.as_os_str(), "--list".as_ref(), "--json".as_ref()],
    );
    listed.expect_code(0);
    assert_eq!(listed.json().as_array().unwrap().len(), 1, "{listed}");

    // `-o` into folders that are not there makes them.
    let out = dir.path().join("made/regress");
    let id = listed.json()[0]["trace_id"].as_str().unwrap().to_string();
    let made = from_trace(
        &store,
        &[
            trace.as_os_str(),
            "--trace-id".as_ref(),
            id[..8].as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
            "--json".as_ref(),
        ],
    );
    made.expect_code(0);
    assert_eq!(made.json()["trace_id"].as_str(), Some(id.as_str()));
    let case_file = made.json()["case"].as_str().unwrap().to_string();
    assert!(out.join("README.md").is_file());
    let text = std::fs::read_to_string(&case_file).unwrap();
    assert!(text.contains("created_from = \"trace\""), "{text}");

    let cases = out.join("cases");
    let test = worldline(
        &store,
        [
            "test".as_ref(),
            cases.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--json".as_ref(),
        ],
    );
    test.expect_code(0);
    let again = test.json()["cases"][0]["bundle"]
        .as_str()
        .unwrap()
        .to_string();
    let (tools_a, model_a) = answers(&run.bundle());
    let (tools_b, model_b) = answers(Path::new(&again));
    assert!(!tools_a.is_empty() && !model_a.is_empty());
    let strip = |v: &Vec<Value>| -> Vec<Value> {
        v.iter().map(|t| serde_json::json!([t[0], t[1]])).collect()
    };
    assert_eq!(strip(&tools_a), strip(&tools_b), "the same tool answers");
    assert_eq!(model_a, model_b, "the same model answers");

    // A second conversion into a folder that exists is refused.
    let twice = from_trace(&store, &[trace.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    twice.expect_code(2);
}

#[test]
fn bad_trace_files_are_exit_2_and_write_nothing() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let check = |name: &str, bytes: &[u8], says: &str| {
        let trace = dir.path().join(name);
        std::fs::write(&trace, bytes).unwrap();
        let out = dir.path().join(format!("out-{name}"));
        let r = from_trace(&store, &[trace.as_os_str(), "-o".as_ref(), out.as_os_str()]);
        r.expect_code(2);
        assert!(r.stderr.contains(name) && r.stderr.contains(says), "{r}");
        assert!(!out.exists(), "{name}: wrote {}", out.display());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".from-trace"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    };
    check(
        "garbage.pb",
        b"\xff\xff\xff\xff not a trace",
        "neither OTLP JSON nor",
    );
    check(
        "cut.json",
        b"{\"resourceSpans\": [{\"scopeSpans\": [",
        "not OTLP JSON",
    );
    let no_content = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
        "name": "chat gpt-4o", "startTimeUnixNano": "1772366400000000000",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]
    }]}]}]});
    check(
        "no-content.json",
        no_content.to_string().as_bytes(),
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    );
    // Past the bound (1 GiB: a long run's batches fit), refused by its
    // size before it is read (a sparse file: nothing is written).
    let huge = dir.path().join("huge.json");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len((1 << 30) + 1)
        .unwrap();
    let out = dir.path().join("out-huge");
    let r = from_trace(&store, &[huge.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    r.expect_code(2);
    assert!(
        r.stderr.contains("huge.json") && r.stderr.contains("1024 MiB"),
        "{r}"
    );
    assert!(!out.exists());
}

/// An OpenInference model call that asked for two choices (`n = 2`, as
/// the openai instrumentor records each choice as output message N) is
/// scripted by its first choice and the README says so: the choices were
/// merged into one answer, "Yes.\nNo.".
#[test]
fn an_openinference_call_of_two_choices_is_scripted_by_its_first() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let kv = |k: &str, v: &str| serde_json::json!({"key": k, "value": {"stringValue": v}});
    let doc = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
        "name": "ChatCompletion", "startTimeUnixNano": "1772366400000000000",
        "attributes": [
            kv("openinference.span.kind", "LLM"),
            kv("llm.invocation_parameters", "{\"model\": \"gpt-4o\", \"n\": 2}"),
            kv("llm.input_messages.0.message.role", "user"),
            kv("llm.input_messages.0.message.content", "Shall I?"),
            kv("llm.output_messages.0.message.role", "assistant"),
            kv("llm.output_messages.0.message.content", "Yes."),
            kv("llm.output_messages.1.message.role", "assistant"),
            kv("llm.output_messages.1.message.content", "No."),
        ]
    }]}]}]});
    let trace = dir.path().join("two.json");
    std::fs::write(&trace, doc.to_string()).unwrap();
    let out = dir.path().join("made");
    let made = from_trace(
        &store,
        &[
            trace.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
            "--json".as_ref(),
        ],
    );
    made.expect_code(0);
    let text = std::fs::read_to_string(made.json()["case"].as_str().unwrap()).unwrap();
    let case: toml::Table = toml::from_str(&text).unwrap();
    let responses = case["model"]["responses"].as_array().unwrap();
    assert_eq!(responses.len(), 1, "{text}");
    assert_eq!(responses[0]["content"].as_str(), Some("Yes."), "{text}");
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(readme.contains("call 1 (2 choices)"), "{readme}");
}

/// The pinned third-party packages the instrumented Python agent runs on.
const TRACE_REQUIREMENTS: &[&str] = &[
    "openai==3.51.0",
    "httpx==0.28.1",
    "opentelemetry-api==1.45.2",
    "opentelemetry-sdk==1.45.2",
    "opentelemetry-proto==1.45.2",
    "opentelemetry-exporter-otlp-proto-common==1.45.2",
    "opentelemetry-instrumentation==0.66b2",
    "opentelemetry-semantic-conventions==0.66b2",
    "opentelemetry-instrumentation-openai-v2==2.4b0",
    "opentelemetry-util-genai==0.4b0",
    "openinference-instrumentation==0.1.72",
    "openinference-instrumentation-openai==0.1.66",
    "openinference-semantic-conventions==0.1.42",
    "openai-agents==0.24.0",
    "openinference-instrumentation-openai-agents==2.6.0",
];

/// A virtual environment under the target folder with the pinned packages,
/// made once and kept while the pins are the same (by one test at a time:
/// the tests that use it run side by side).
fn trace_venv() -> std::path::PathBuf {
    static VENV: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    VENV.get_or_init(make_trace_venv).clone()
}

fn make_trace_venv() -> std::path::PathBuf {
    use std::process::Command;
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("trace-venv");
    let stamp = venv.join("worldline-pins.txt");
    let pins = TRACE_REQUIREMENTS.join("\n");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(pins.as_str()) {
        return venv.join("bin/python");
    }
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .expect("python3 is needed for the instrumentation test");
    assert!(made.success(), "python3 -m venv failed");
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "--no-deps"])
        .args(TRACE_REQUIREMENTS)
        .output()
        .expect("running pip");
    // The pinned packages' own dependencies (pydantic, typing-extensions,
    // ...) at versions pip chooses; the pins above are kept.
    let deps = Command::new(venv.join("bin/pip"))
        .args(["install", "-q"])
        .args(TRACE_REQUIREMENTS)
        .output()
        .expect("running pip");
    assert!(
        pip.status.success() && deps.status.success(),
        "installing the pinned instrumentations failed:\n{}{}",
        String::from_utf8_lossy(&pip.stderr),
        String::from_utf8_lossy(&deps.stderr)
    );
    std::fs::write(&stamp, pins).unwrap();
    venv.join("bin/python")
}

/// A model answer as its text and `[name, arguments]` of each tool call,
/// from an OpenAI message or a scripted reply.
fn answer_shape(m: &Value) -> Value {
    let calls: Vec<Value> = m["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let f = if c.get("function").is_some() {
                &c["function"]
            } else {
                c
            };
            let args: Value = serde_json::from_str(f["arguments"].as_str().unwrap()).unwrap();
            serde_json::json!([f["name"], args])
        })
        .collect();
    serde_json::json!({"content": m["content"], "calls": calls})
}

#[test]
fn traces_of_the_official_and_openinference_instrumentations_become_cases() {
    let python = trace_venv();
    let agent = common::workspace_root().join("host/tests/trace_support/agent.py");
    let dir = temp_dir();
    let store = dir.path().join("store");
    for flavour in ["openai-v2", "openinference"] {
        let trace = dir.path().join(format!("{flavour}.pb"));
        let log = dir.path().join(format!("{flavour}.stub.json"));
        let ran = std::process::Command::new(&python)
            .arg(&agent)
            .args([flavour.as_ref(), trace.as_os_str(), log.as_os_str()])
            .env(
                "OTEL_SEMCONV_STABILITY_OPT_IN",
                "gen_ai_latest_experimental",
            )
            .env(
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                "SPAN_ONLY",
            )
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{flavour}: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        let out = dir.path().join(flavour);
        let made = from_trace(
            &store,
            &[
                trace.as_os_str(),
                "-o".as_ref(),
                out.as_os_str(),
                "--json".as_ref(),
            ],
        );
        made.expect_code(0);

        // The model's answers are exactly the ones the stub gave, in order.
        let case: toml::Table = toml::from_str(
            &std::fs::read_to_string(made.json()["case"].as_str().unwrap()).unwrap(),
        )
        .unwrap();
        let responses: Vec<Value> = case["model"]["responses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| answer_shape(&serde_json::to_value(r).unwrap()))
            .collect();
        let stub: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
        let answered: Vec<Value> = stub.iter().map(|a| answer_shape(&a["answer"])).collect();
        assert_eq!(responses, answered, "{flavour}");
        assert_eq!(case["task"]["alert"].as_str(), Some("ALERT-7"), "{flavour}");

        // The world's tools are the ones the agent declared.
        let world: toml::Table = toml::from_str(
            &std::fs::read_to_string(out.join("worlds/traced/v1/world.toml")).unwrap(),
        )
        .unwrap();
        let tools = world["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1, "{flavour}");
        assert_eq!(tools[0]["name"].as_str(), Some("get_alert"));
        // OpenInference records the definitions (llm.tools); the official
        // instrumentation (2.4b0) does not record gen_ai.tool.definitions,
        // so the tool is known by name and its schema is left to write.
        let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
        if flavour == "openinference" {
            assert_eq!(
                tools[0]["description"].as_str(),
                Some("Fetch one alert by id")
            );
            assert_eq!(
                tools[0]["params"]["properties"]["id"]["type"].as_str(),
                Some("string")
            );
            assert!(!readme.contains("no definition in the trace"), "{readme}");
        } else {
            assert!(
                readme.contains("no definition in the trace: get_alert"),
                "{readme}"
            );
        }
        // The tool result the agent sent back is pinned at its call.
        let pinned = &case["inject"].as_array().unwrap()[0];
        assert_eq!(pinned["nth"].as_integer(), Some(1));
        assert_eq!(
            pinned["response"]["kind"].as_str(),
            Some("latency"),
            "{flavour}"
        );
    }
}

/// The OpenAI Agents SDK (Chat Completions and Responses models, two
/// tool calls at once, a tool answering worldline's error shape, tools
/// answering a text content part as MCP tools do) traced by both
/// OpenInference instrumentors at once, by OpenInference's `openai`
/// instrumentor alone, and by the official one: each case scripts every
/// answer the stub gave once, in order, and pins every tool's result as it
/// returned it. Before, a call both instrumentors recorded was scripted
/// twice, the Responses API's parallel calls (one output message each) lost
/// all but the first, its final text (`message.contents`) was "", tool
/// messages in that form pinned nothing, and a result in its text part was
/// pinned wrapped (the error as a success).
#[test]
fn traces_of_the_agents_sdk_become_cases_with_every_answer_and_result() {
    let python = trace_venv();
    let agent = common::workspace_root().join("host/tests/trace_support/agent.py");
    let dir = temp_dir();
    let store = dir.path().join("store");
    let pinned = serde_json::json!([
        {"tool": "get_ticket", "nth": 1, "response": {"alert": "ALERT-7", "id": "T-100", "status": "open"}},
        {"tool": "get_alert", "nth": 1, "response": {"id": "ALERT-7", "kind": "latency", "service": "checkout"}},
        {"tool": "get_deploy", "nth": 1, "error": "not-found", "message": "no deploys row D-999"},
        {"tool": "list_deploys", "nth": 1, "response": {"deploys": [{"id": "D-42", "service": "checkout", "status": "live"}]}},
    ]);
    for flavour in [
        "agents-chat",
        "agents-responses",
        "agents-client",
        "agents-genai",
    ] {
        let trace = dir.path().join(format!("{flavour}.pb"));
        let log = dir.path().join(format!("{flavour}.stub.json"));
        let ran = std::process::Command::new(&python)
            .arg(&agent)
            .args([flavour.as_ref(), trace.as_os_str(), log.as_os_str()])
            .env(
                "OTEL_SEMCONV_STABILITY_OPT_IN",
                "gen_ai_latest_experimental",
            )
            .env(
                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
                "SPAN_ONLY",
            )
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{flavour}: {}",
            String::from_utf8_lossy(&ran.stderr)
        );
        let out = dir.path().join(flavour);
        let made = from_trace(
            &store,
            &[
                trace.as_os_str(),
                "-o".as_ref(),
                out.as_os_str(),
                "--json".as_ref(),
            ],
        );
        made.expect_code(0);
        let case: toml::Table = toml::from_str(
            &std::fs::read_to_string(made.json()["case"].as_str().unwrap()).unwrap(),
        )
        .unwrap();
        let responses: Vec<Value> = case["model"]["responses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| answer_shape(&serde_json::to_value(r).unwrap()))
            .collect();
        let stub: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
        let answered: Vec<Value> = stub.iter().map(|a| answer_shape(&a["answer"])).collect();
        assert_eq!(answered.len(), 3, "{flavour}");
        assert_eq!(responses, answered, "{flavour}");
        let inject = serde_json::to_value(&case["inject"]).unwrap();
        assert_eq!(
            inject.as_array().unwrap()[..4],
            pinned.as_array().unwrap()[..],
            "{flavour}"
        );
        assert_eq!(made.json()["pinned"], 4, "{flavour}: {made}");
    }
}

/// `--list --trace-id ID` lists the runs whose trace id starts with ID; an
/// ID naming none is exit 2 as it is with `-o` (every run was listed, exit 0).
#[test]
fn list_with_a_trace_id_lists_only_the_runs_it_names() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let run = |id: &str| {
        serde_json::json!({"scopeSpans": [{"spans": [{
            "traceId": id, "spanId": "b7ad6b7169203331", "name": "chat",
            "startTimeUnixNano": "1772366400000000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.input.messages", "value": {"stringValue": r#"[{"role":"user","content":"hi"}]"#}},
                {"key": "gen_ai.output.messages", "value": {"stringValue": r#"[{"role":"assistant","content":"done"}]"#}}
            ]
        }]}]})
    };
    let trace = dir.path().join("runs.json");
    let doc = serde_json::json!({"resourceSpans": [
        run("0af7651916cd43dd8448eb211c80319c"),
        run("0af7000016cd43dd8448eb211c80319c"),
        run("5b8efff798038103d269b633813fc60c"),
    ]});
    std::fs::write(&trace, doc.to_string()).unwrap();
    let list = |id: &str| {
        from_trace(
            &store,
            &[
                trace.as_os_str(),
                "--list".as_ref(),
                "--trace-id".as_ref(),
                id.as_ref(),
                "--json".as_ref(),
            ],
        )
    };
    let ids = |r: &common::CliOutput| -> Vec<String> {
        (r.json().as_array().unwrap().iter())
            .map(|l| l["trace_id"].as_str().unwrap().to_string())
            .collect()
    };
    let two = list("0AF7");
    two.expect_code(0);
    assert_eq!(
        ids(&two),
        [
            "0af7000016cd43dd8448eb211c80319c",
            "0af7651916cd43dd8448eb211c80319c"
        ]
    );
    let one = list("5b8e");
    one.expect_code(0);
    assert_eq!(ids(&one), ["5b8efff798038103d269b633813fc60c"]);
    let none = list("ffff");
    none.expect_code(2);
    assert!(
        none.stderr.contains("runs.json")
            && none
                .stderr
                .contains("has 0 agent run(s) whose trace id starts with ffff"),
        "{none}"
    );
}

/// A fork made a case: its `--respond` at a tool call becomes the
/// `[[inject]]` rule that gives the same answer, so the case's run ends as
/// the fork did; a `--set` or `--deny` part way, which no case key holds,
/// is named under `not_carried`. `repro` of such a fork, which would run
/// the case without its edits, is refused. Before, the edits were dropped
/// silently: the case passed where the fork failed, and `repro` gave the
/// rate of another run.
#[test]
fn a_fork_s_edits_are_carried_into_its_case_or_named_and_repro_refuses_them() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "rollback",
        r#"world = "incident@v4"
seed = 9
clock = 2026-03-01T12:05:00Z
task = { alert = "ALERT-7", ticket = "T-100" }

[[expect.state]]
table = "deploys"
key = "D-42"
field = "status"
equals = "rolled_back"
"#,
    );
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::rename(&case, cases.join("rollback.toml")).unwrap();
    let first = test_json(&store, &cases, "naive-agent");
    first.expect_code(0);
    let run = first.json()["cases"][0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Event 1 is the deploy list: answer it without D-42, so the agent
    // rolls back D-41 and D-42 stays live.
    let stale = r#"{"ok": {"as_of": "2026-03-01T12:05:00Z", "deploys": [{"at": "2026-03-01T09:15:00Z", "author": "lee", "change": "Copy fix", "id": "D-41", "service": "checkout", "status": "live", "version": "2.14.1"}]}}"#;
    let naive = guest("naive-agent");
    let fork = |of: &str, edits: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["fork".as_ref(), of.as_ref()];
        args.extend(edits.iter().map(std::ffi::OsStr::new));
        args.extend(["--agent".as_ref(), naive.as_os_str(), "--json".as_ref()]);
        let out = worldline(&store, args);
        out.json()["run_id"].as_str().unwrap().to_string()
    };
    let answered = fork(&run, &["--at", "1", "--respond", stale]);
    let patched = fork(
        &answered,
        &[
            "--at",
            "3",
            "--deny",
            "close_ticket",
            "--set",
            r#"deploys/D-41.status="x""#,
        ],
    );
    let from_run = |of: &str, name: &str| {
        let out = worldline(
            &store,
            [
                "case".as_ref(),
                "from-run".as_ref(),
                of.as_ref(),
                "-o".as_ref(),
                cases.join(name).as_os_str(),
                "--json".as_ref(),
            ],
        );
        out.expect_code(0);
        out.json().clone()
    };
    let made = from_run(&answered, "answered.toml");
    assert_eq!(made["injects"], 1, "{made}");
    assert_eq!(made["not_carried"], serde_json::json!([]), "{made}");
    let text = std::fs::read_to_string(cases.join("answered.toml")).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let rule = &doc["inject"].as_array().unwrap()[0];
    assert_eq!(rule["tool"].as_str(), Some("list_deploys"), "{text}");
    assert_eq!(rule["nth"].as_integer(), Some(1), "{text}");
    assert_eq!(
        rule["response"]["deploys"][0]["id"].as_str(),
        Some("D-41"),
        "{text}"
    );
    // The case's run ends as the fork did.
    std::fs::remove_file(cases.join("rollback.toml")).unwrap();
    let again = test_json(&store, &cases, "naive-agent");
    again.expect_code(1);
    assert!(
        again.stdout.contains("deploys/D-42.status equals"),
        "{again}"
    );
    let made = from_run(&patched, "patched.toml");
    let left: Vec<&str> = made["not_carried"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(left.len(), 2, "{made}");
    assert!(
        left[0].contains("--deny close_ticket from event 3"),
        "{made}"
    );
    assert!(
        left[1].contains("--set deploys/D-41.status at event 3"),
        "{made}"
    );
    // repro would run the case without the edits: refused, naming them.
    let repro = worldline(&store, ["repro", &patched, "--times", "2"]);
    repro.expect_code(2);
    assert!(
        repro.stderr.contains("--respond at event 1")
            && repro.stderr.contains("--deny close_ticket at event 3")
            && repro.stderr.contains("case from-run"),
        "{repro}"
    );
    // So would rerun, compared with the run as though it were the case's.
    let careful = guest("careful-agent");
    let rerun = worldline(
        &store,
        [
            "rerun".as_ref(),
            patched.as_ref(),
            "--agent".as_ref(),
            careful.as_os_str(),
        ],
    );
    rerun.expect_code(2);
    assert!(
        rerun.stderr.contains("--deny close_ticket at event 3"),
        "{rerun}"
    );
    // A run that is no fork is reproduced as before.
    worldline(&store, ["repro", &run, "--times", "2"]).expect_code(0);
}

/// What a run was run with beside its case goes into the case made of
/// it: a resumed run's raised limit, and `--model-set` keys of a case
/// whose own scripted model answers; a model seed of its own, which no
/// case key holds, is named with the flag that draws the same answers.
/// All three were dropped silently, and the cases did not reproduce.
#[test]
fn a_run_s_raised_limits_and_model_settings_go_into_its_case() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let source =
        std::fs::read_to_string(workspace_root().join("cases/model/rollback.toml")).unwrap();
    let short = source.replacen("[model]", "[limits]\nmax_steps = 3\n\n[model]", 1);
    let case = write_case(dir.path(), "short", &short);
    let agent = guest("model-agent");
    let worlds = workspace_root().join("worlds");
    let run = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--json".as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        worldline(&store, args).json()["run_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let from_run = |run: &str, name: &str| {
        let out = dir.path().join(name);
        let made = worldline(
            &store,
            [
                "case".as_ref(),
                "from-run".as_ref(),
                run.as_ref(),
                "-o".as_ref(),
                out.as_os_str(),
                "--json".as_ref(),
            ],
        );
        made.expect_code(0);
        let doc: toml::Table = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        (doc, made.json()["not_carried"].clone())
    };
    let stopped = run(&[]);
    let resumed = worldline(&store, ["resume", &stopped, "--max-steps", "100", "--json"]);
    let resumed = resumed.json()["run_id"].as_str().unwrap().to_string();
    let (doc, _) = from_run(&resumed, "resumed.toml");
    assert_eq!(doc["limits"]["max_steps"].as_integer(), Some(100), "{doc}");

    let set = run(&["--model-set", "latency_ms=5", "--model-seed", "7"]);
    let (doc, left) = from_run(&set, "set.toml");
    assert_eq!(doc["model"]["latency_ms"].as_integer(), Some(5), "{doc}");
    assert!(left.to_string().contains("--model-seed 7"), "{left}");
}

/// A fork's `--respond` at a call the case's permissions deny has no rule
/// in its case (a denied call is refused before any `[[inject]]` rule):
/// it is named under `not_carried`. The case carried a rule that never
/// answered, and said nothing.
#[test]
fn a_fork_s_answer_to_a_denied_call_is_named_not_carried() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (run, events) = careful_run(&store, "cases/incident/close-denied.toml");
    let at = (events.iter())
        .position(|e| e["request"]["name"] == "close_ticket")
        .unwrap()
        .to_string();
    let answer = r#"{"ok": {"id": "T-100", "status": "closed"}}"#;
    let made = dir.path().join("made.toml");
    let (_, out) = fork_made_a_case(&store, &run, &at, answer, &made);
    out.expect_code(0);
    assert_eq!(out.json()["injects"], 0, "{out}");
    let left = out.json()["not_carried"].to_string();
    assert!(
        left.contains(&format!("--respond at event {at} answered `close_ticket`"))
            && left.contains("the case's permissions deny"),
        "{out}"
    );
}

/// A fork's `--respond` at a model-played user's turn is carried into its
/// case as that turn's scripted line, so the case's run ends as the fork
/// did. It was dropped (the fork's answer carries no turn number), with
/// nothing under `not_carried`, and the case's user had no line there.
#[test]
fn a_fork_s_answer_at_a_user_turn_is_carried_as_that_turn_s_line() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (run, events) = careful_run(&store, "cases/support/model-user.toml");
    let at = (events.iter())
        .filter(|e| e["call"] == "worldline:agent/user.say")
        .nth(1)
        .map(|e| e["seq"].to_string())
        .unwrap();
    let made = dir.path().join("made.toml");
    let (fork, out) = fork_made_a_case(&store, &run, &at, r#""No, keep it""#, &made);
    out.expect_code(0);
    assert_eq!(out.json()["not_carried"], serde_json::json!([]), "{out}");
    let worlds = workspace_root().join("worlds");
    let again = common::run_in(&store, &made, &guest("careful-agent"), &worlds);
    let replies: Vec<Value> = (read_bundle(&again.bundle()).events.iter())
        .filter(|e| e["call"] == "worldline:agent/user.say")
        .map(|e| e["response"]["reply"].clone())
        .collect();
    assert_eq!(replies[1], "No, keep it", "{again}");
    assert_eq!(again.json()["grade"], fork.json()["grade"], "{again}");
}

/// A fork's `--respond` at a clock read is named under `not_carried`
/// with the call and why (it was named with neither).
#[test]
fn a_fork_s_answer_to_a_clock_read_is_named_with_its_call() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (run, events) = careful_run(&store, "cases/incident/stale-deploys.toml");
    let at = (events.iter())
        .position(|e| e["call"] == "wasi:clocks/wall-clock.now")
        .unwrap()
        .to_string();
    let now = r#"{"seconds": 1772366800, "nanoseconds": 0}"#;
    let made = dir.path().join("made.toml");
    let (_, out) = fork_made_a_case(&store, &run, &at, now, &made);
    out.expect_code(0);
    let left = out.json()["not_carried"].to_string();
    let said =
        format!("--respond at event {at} (`wasi:clocks/wall-clock.now`): no case key answers it");
    assert!(left.contains(&said), "{out}");
}

/// `fork RUN --at AT --respond ANSWER`, then `case from-run` of the fork
/// into `made`: the fork's `--json` and the case's.
fn fork_made_a_case(
    store: &Path,
    run: &str,
    at: &str,
    answer: &str,
    made: &Path,
) -> (common::CliOutput, common::CliOutput) {
    let fork = worldline(
        store,
        ["fork", run, "--at", at, "--respond", answer, "--json"],
    );
    let forked = fork.json()["run_id"].as_str().unwrap().to_string();
    let args = [
        "case",
        "from-run",
        &forked,
        "-o",
        made.to_str().unwrap(),
        "--json",
    ];
    (fork, worldline(store, args))
}

/// The careful agent's run of the project's `case`: its id and events.
fn careful_run(store: &Path, case: &str) -> (String, Vec<Value>) {
    let out = common::run_json(store, &workspace_root().join(case), &guest("careful-agent"));
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    (run, read_bundle(&out.bundle()).events)
}

/// A scripted model's run made a case: the model stays scripted, so the
/// case says nothing is answered from the bundle's copy and counts no
/// recorded model call (it said all of them were).
#[test]
fn a_scripted_model_s_run_makes_a_case_that_answers_nothing_from_its_copy() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let root = workspace_root();
    let ran = worldline(
        &store,
        [
            "run".as_ref(),
            root.join("cases/model/rollback.toml").as_os_str(),
            "--agent".as_ref(),
            guest("model-agent").as_os_str(),
            "--json".as_ref(),
        ],
    );
    ran.expect_code(0);
    let run = ran.json()["run_id"].as_str().unwrap().to_string();
    let out = dir.path().join("made.toml");
    let made = worldline(
        &store,
        [
            "case".as_ref(),
            "from-run".as_ref(),
            run.as_ref(),
            "-o".as_ref(),
            out.as_os_str(),
            "--json".as_ref(),
        ],
    );
    made.expect_code(0);
    assert_eq!(made.json()["model_calls"], 0, "{made}");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("model answers from the copy"), "{text}");
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let provider = doc["model"].get("provider").and_then(|p| p.as_str());
    assert!(provider.is_none_or(|p| p == "scripted"), "{text}");
}

/// `--expect-from` takes `[expect]` from another case: a problem in it is
/// exit 2 naming that case at its own line (it was exit 4, "internal",
/// placed in the case that was never written), and nothing is written; a
/// sound one is the written case's `[expect]`.
#[test]
fn expect_from_names_its_own_file_and_line() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "demo", common::DEMO_PASSES);
    let agent = guest("caller-agent");
    let out = common::run_in(&store, &case, &agent, &common::worlds_dir());
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let from_run = |expect: &Path, made: &Path| {
        worldline(
            &store,
            [
                "case".as_ref(),
                "from-run".as_ref(),
                id.as_ref(),
                "-o".as_ref(),
                made.as_os_str(),
                "--expect-from".as_ref(),
                expect.as_os_str(),
                "--json".as_ref(),
            ],
        )
    };
    let header = common::DEMO_PASSES
        .split("[[expect.state]]")
        .next()
        .unwrap();
    let wrong = write_case(
        dir.path(),
        "wrong",
        &format!("{header}\n[[expect.calls]]\ntool = \"get_tikcet\"\nattempted = true\n"),
    );
    let made = dir.path().join("made.toml");
    let refused = from_run(&wrong, &made);
    refused.expect_code(2);
    let error = &refused.json()["error"];
    assert_eq!(error["kind"], "input", "{refused}");
    assert_eq!(error["file"], wrong.display().to_string(), "{refused}");
    assert_eq!(error["line"], 6, "{refused}");
    assert!(
        error["message"].as_str().unwrap().contains("get_tikcet"),
        "{refused}"
    );
    assert!(!made.exists() && !dir.path().join("made.run.jsonl").exists());

    let sound = write_case(
        dir.path(),
        "sound",
        &format!("{header}\n[[expect.calls]]\ntool = \"get_ticket\"\nattempted = true\n"),
    );
    from_run(&sound, &made).expect_code(0);
    let text = std::fs::read_to_string(&made).unwrap();
    assert!(
        text.contains("tool = \"get_ticket\"") && !text.contains("equals = \"open\""),
        "{text}"
    );
}
