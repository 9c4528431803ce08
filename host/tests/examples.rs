//! The example suites: the careful agent passes every example case, the
//! naive agent fails the cases built to catch it, each for the reason the
//! case is about, and a rerun of a naive failure with the careful agent
//! turns it into a pass. `examples/run` and `tests/run` install
//! componentize-py into a virtual environment under the build folder when
//! it is not on PATH.

use crate::common;

use common::{guest, temp_dir, workspace_root, worldline};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsStr;

fn suite(store: &std::path::Path, agent: &str) -> (common::CliOutput, BTreeMap<String, Value>) {
    let wasm = guest(agent);
    // The tool-driven suites (cases/model is the model agent's, in model.rs).
    let incident = workspace_root().join("cases/incident");
    let accounts = workspace_root().join("cases/accounts");
    let out = worldline(
        store,
        [
            OsStr::new("test"),
            incident.as_os_str(),
            accounts.as_os_str(),
            OsStr::new("--agent"),
            wasm.as_os_str(),
            OsStr::new("--json"),
        ],
    );
    let by_case = out.json()["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| (c["case"].as_str().unwrap().to_string(), c.clone()))
        .collect();
    (out, by_case)
}

#[test]
fn the_careful_agent_passes_every_example_case() {
    let store = temp_dir();
    let (out, cases) = suite(store.path(), "careful-agent");
    out.expect_code(0);
    assert!(
        cases.len() >= 12,
        "at least six cases per world: {}",
        cases.len()
    );
    assert!(cases.keys().filter(|c| c.starts_with("incident/")).count() >= 6);
    assert!(cases.keys().filter(|c| c.starts_with("accounts/")).count() >= 6);
    for (name, c) in &cases {
        assert_eq!(c["status"], "passed", "{name}: {c}");
    }
}

#[test]
fn the_naive_agent_fails_for_the_reasons_the_cases_are_about() {
    let store = temp_dir();
    let (out, cases) = suite(store.path(), "naive-agent");
    out.expect_code(1);
    let reason = |name: &str| cases[name]["reason"].as_str().unwrap_or("").to_string();
    let passed = |name: &str| cases[name]["passed"].as_bool().unwrap();
    // It believes the stale deploy list and rolls back the wrong deploy.
    assert!(
        reason("incident/stale-deploys").contains("deploys/D-42.status equals"),
        "{}",
        reason("incident/stale-deploys")
    );
    // It tries the denied close again.
    assert!(
        reason("incident/close-denied").contains("calls close_ticket count"),
        "{}",
        reason("incident/close-denied")
    );
    // It writes the half-written note a second time.
    assert!(
        reason("incident/note-partial").contains("count incident_notes"),
        "{}",
        reason("incident/note-partial")
    );
    // It gives up on a timed-out read.
    assert!(
        reason("incident/alert-timeout")
            .contains("status: expected \"completed\", got \"errored\"")
    );
    // It closes an account that deserved a grace period.
    assert!(
        reason("accounts/grace-reliable-payer").contains("grace_days equals"),
        "{}",
        reason("accounts/grace-reliable-payer")
    );
    // Stale payments hide the successful retry, so it closes a paying customer.
    assert!(reason("accounts/paid-stale-hides-success").contains("unchanged customers"));
    // And where nothing tricky happens, it passes.
    assert!(passed("incident/baseline"));
    assert!(passed("accounts/close-requested"));
}

#[test]
fn rerunning_a_naive_failure_with_the_careful_agent_turns_it_into_a_pass() {
    let store = temp_dir();
    let naive = guest("naive-agent");
    let careful = guest("careful-agent");
    let case = workspace_root().join("cases/incident/stale-deploys.toml");
    let first = common::run_json(store.path(), &case, &naive);
    first.expect_code(1);
    let run_id = first.json()["run_id"].as_str().unwrap().to_string();
    let rerun = worldline(
        store.path(),
        [
            OsStr::new("rerun"),
            OsStr::new(&run_id),
            OsStr::new("--agent"),
            careful.as_os_str(),
            OsStr::new("--json"),
        ],
    );
    rerun.expect_code(0);
    let doc = rerun.json();
    assert_eq!(doc["status"], "passed");
    assert_eq!(doc["original"]["status"], "failed");
    let changed: Vec<&str> = doc["changed_assertions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["what"].as_str().unwrap())
        .collect();
    assert!(
        changed.contains(&"deploys/D-42.status equals"),
        "{changed:?}"
    );
    assert_ne!(
        doc["run_id"],
        first.json()["run_id"],
        "the rerun is a new run"
    );
}

/// The install `examples/run` and `tests/run` share: with no
/// componentize-py on PATH, it goes into a virtual environment under the
/// build folder (not the system's Python, which Debian refuses), and a
/// second run finds it there without installing again.
#[test]
fn componentize_py_goes_into_a_virtual_environment_when_missing() {
    let build = temp_dir();
    // PATH with python3 and the system's tools, without componentize-py.
    let bin = temp_dir();
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    let python = String::from_utf8_lossy(&python.stdout).trim().to_string();
    std::os::unix::fs::symlink(&python, bin.path().join("python3")).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let script = format!(
        ". '{}' && ensure_componentize_py '{}' && command -v componentize-py && componentize-py --version",
        workspace_root().join("tests/componentize-py.sh").display(),
        build.path().display()
    );
    let run = || {
        std::process::Command::new("bash")
            .args(["-c", &script])
            .env("PATH", &path)
            .output()
            .expect("bash runs")
    };
    let first = run();
    let said = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(first.status.success(), "{}", said(&first));
    let venv = build.path().join("componentize-py-0.25.1");
    assert!(
        said(&first).contains(&format!("{}/bin/componentize-py", venv.display()))
            && said(&first).contains("componentize-py 0.25.1"),
        "{}",
        said(&first)
    );
    let second = run();
    assert!(second.status.success(), "{}", said(&second));
    assert!(
        !said(&second).contains("installing"),
        "cached: {}",
        said(&second)
    );
}
