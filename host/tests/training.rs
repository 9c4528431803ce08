//! What trainers read: `export --format atif` on runs of every kind of
//! agent path (a Rust component asking a model, a native `--exec` process,
//! an outside MCP client on `worldline mcp`), each document validated by
//! the pinned `atif` package's models (tests/train-python.sh).

use crate::common::*;
use crate::conformance::{CALLS, mcp_stdio, scenario, script};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The training tests' Python: a venv with the pinned atif package.
fn train_python() -> PathBuf {
    let python = std::env::var_os("WORLDLINE_TRAIN_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/train-python/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: the training tests validate with the pinned atif package.\n\
         Run `. tests/train-python.sh && ensure_train_python target` (tests/run does) and test again.",
        python.display()
    );
    python
}

/// A run of the incident scenario by `agent` (the arguments after the
/// store): its id.
fn run(store: &Path, agent: Vec<OsString>) -> String {
    let mut args: Vec<OsString> = vec!["run".into(), scenario().into()];
    args.extend([
        "--worlds".into(),
        workspace_root().join("worlds").into(),
        "--json".into(),
        "--store".into(),
        store.into(),
    ]);
    args.extend(agent);
    let out = worldline_raw(&args);
    assert_eq!(out.code, 0, "the run must pass:\n{out}");
    out.json()["run_id"].as_str().unwrap().to_string()
}

/// `export --format atif` of `runs`, validated by the atif models: what
/// the checker read of each document.
fn atif(store: &Path, runs: &[&str]) -> Vec<Value> {
    let dir = temp_dir();
    let file = dir.path().join("atif.jsonl");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"export"];
    for r in runs {
        args.push(r);
    }
    args.extend([
        &"--format" as &dyn AsRef<std::ffi::OsStr>,
        &"atif",
        &"-o",
        &file,
        &"--json",
    ]);
    let out = wl(store, &args);
    out.expect_code(0);
    assert_eq!(out.json()["format"], "atif", "{out}");
    let check = Command::new(train_python())
        .arg(tests_dir().join("training/atif_check.py"))
        .arg(&file)
        .output()
        .expect("the atif checker runs");
    assert!(
        check.status.success(),
        "the atif models rejected the export: {}\n{}",
        String::from_utf8_lossy(&check.stderr),
        std::fs::read_to_string(&file).unwrap()
    );
    serde_json::from_slice(&check.stdout).expect("the checker prints a JSON list")
}

#[test]
fn atif_export_validates_on_every_agent_path() {
    let store = temp_dir();
    let store = store.path();
    let component = run(store, vec!["--agent".into(), guest("model-agent").into()]);
    let native = run(
        store,
        vec![
            "--exec".into(),
            "--".into(),
            native_python().into(),
            script("rest_agent.py").into(),
        ],
    );
    let mcp = mcp_stdio(store);
    let docs = atif(store, &[&component, &native, &mcp]);
    assert_eq!(docs.len(), 3, "{docs:?}");
    for (doc, (path, models)) in docs.iter().zip([
        ("rust component", 7),
        ("native --exec", 7),
        ("worldline mcp", 0),
    ]) {
        assert_eq!(doc["schema_version"], "ATIF-v1.8", "{path}: {doc}");
        let calls: Vec<&str> = doc["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(calls, CALLS, "{path}: the tool calls, in order: {doc}");
        assert_eq!(
            doc["results"],
            CALLS.len(),
            "{path}: every call answered: {doc}"
        );
        assert_eq!(doc["model_steps"], models, "{path}: the model calls: {doc}");
        assert_eq!(doc["reward"], 1.0, "{path}: {doc}");
        assert_eq!(doc["verdict"], "passed", "{path}: {doc}");
    }
}
