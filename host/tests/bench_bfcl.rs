//! `worldline bench import bfcl/multi_turn_base` with the pinned package
//! (`bfcl-eval==2026.3.23` in `$WORLDLINE_BFCL_PYTHON`, installed by
//! tests/bfcl.sh): the conversion is deterministic, the service built as
//! the import says runs BFCL's own classes, every task's oracle passes
//! `validate` (the tasks at a stride, all with `WORLDLINE_BENCH_FULL`), and
//! worldline grades the oracle and perturbed trajectories as BFCL's own
//! `multi_turn_checker` does (tests/bench/bfcl_agree.py grades them there;
//! the `caller` guest plays them here).

use crate::common;

use common::bench::same_imports;
use common::{temp_dir, workspace_root, worldline, worldline_raw};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The Python with bfcl-eval (tests/bfcl.sh).
fn bfcl_python() -> Option<PathBuf> {
    common::bench::pinned_python(
        "WORLDLINE_BFCL_PYTHON",
        "WORLDLINE_SKIP_BFCL",
        "bfcl-eval",
        "bfcl",
    )
}

/// `bench import bfcl/multi_turn_base -o DIR --json`: its `build` command.
fn import(python: &Path, store: &Path, dir: &Path) -> String {
    import_with(python.as_os_str(), store, dir, &[])
}

/// [`import`] with `--python` as given and these variables.
fn import_with(python: &std::ffi::OsStr, store: &Path, dir: &Path, env: &[(&str, &str)]) -> String {
    let out = common::worldline_with(
        store,
        [
            "bench".as_ref(),
            "import".as_ref(),
            "bfcl/multi_turn_base".as_ref(),
            "-o".as_ref(),
            dir.as_os_str(),
            "--python".as_ref(),
            python,
            "--json".as_ref(),
        ],
        env,
    );
    let report = out.json();
    assert_eq!(report["tasks"], 200, "{out}");
    report["build"].as_str().unwrap().to_string()
}

/// The README says what BFCL does with a task's `excluded_function`:
/// nothing (no code of the pinned package reads it, which this test
/// checks there), so its tools are offered from the start in both. It
/// said they were offered from a later turn in BFCL (that is
/// `missed_function`'s).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn the_readme_says_bfcl_reads_no_excluded_function() {
    let Some(python) = bfcl_python() else { return };
    let package = std::process::Command::new(&python)
        .args([
            "-c",
            "import bfcl_eval, os; print(os.path.dirname(bfcl_eval.__file__))",
        ])
        .output()
        .unwrap();
    let package = PathBuf::from(String::from_utf8(package.stdout).unwrap().trim());
    let mut todo = vec![package.clone()];
    let mut read = 0;
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|x| x == "py") {
                let code = std::fs::read_to_string(&path).unwrap();
                assert!(
                    !code.contains("excluded_function"),
                    "{} reads it",
                    path.display()
                );
                read += code.contains("missed_function") as usize;
            }
        }
    }
    assert!(
        read > 0,
        "no code of {} reads missed_function",
        package.display()
    );

    let tmp = temp_dir();
    let dir = tmp.path().join("a");
    import(&python, &tmp.path().join("store"), &dir);
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(
        !readme.contains("offered from a later turn in BFCL"),
        "{readme}"
    );
    assert!(
        readme.contains(
            "- multi_turn_base_0: `excluded_function` cp: no code of bfcl-eval==2026.3.23 reads it, so BFCL offers it from the start, as here"
        ),
        "{readme}"
    );
}

/// One test, so the 26 MB service is built and compiled once: the import
/// twice (same bytes), the build it prints, `validate` on tasks at a
/// stride, then the agreement with BFCL's checker on the same tasks.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn multi_turn_base_imports_validates_and_grades_as_bfcl_does() {
    let Some(python) = bfcl_python() else { return };
    let tmp = temp_dir();
    let store = tmp.path().join("store");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let build = import(&python, &store, &a);
    // The second by a bare name on PATH, as an activated environment
    // runs it: the build names that environment (it said `--venv VENV`).
    let bin = python.parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let bare = python.file_name().unwrap();
    let other = import_with(bare, &store, &b, &[("PATH", &path)]);
    let venv = bin.parent().unwrap().display().to_string();
    assert!(other.contains(&format!(" --venv {venv} ")), "{other}");
    let fa = same_imports(&a, &b);
    assert_eq!(
        fa.keys().filter(|p| p.starts_with("cases")).count(),
        200,
        "a case per task"
    );
    let readme = String::from_utf8(fa[Path::new("README.md")].clone()).unwrap();
    assert!(readme.contains("bfcl-eval==2026.3.23") && readme.contains("| SHA-256 |"));

    // The service, built as the import says (the build cache makes a
    // second build of the same sources free).
    let words: Vec<&str> = build.split(' ').collect();
    assert_eq!(
        words[..3],
        ["worldline", "build-python", "--service"],
        "{build}"
    );
    let built = worldline_raw(&words[1..]);
    assert_eq!(built.code, 0, "{built}");

    // validate, on every 8th task: each oracle passes, doing nothing fails.
    let step = common::bench::stride(8);
    let few = tmp.path().join("few");
    std::fs::create_dir(&few).unwrap();
    for i in (0..200).step_by(step) {
        let name = format!("multi_turn_base_{i}.toml");
        std::fs::copy(a.join("cases").join(&name), few.join(&name)).unwrap();
    }
    let out = worldline(
        &store,
        [
            "validate".as_ref(),
            few.as_os_str(),
            "--worlds".as_ref(),
            a.join("worlds").as_os_str(),
            "--json".as_ref(),
        ],
    );
    let report = out.json();
    assert_eq!(report["broken"], 0, "{out}");
    assert_eq!(report["failing"], 0, "{out}");
    assert_eq!(report["ok"], 200usize.div_ceil(step), "{out}");

    // The agreement, on every 4th task.
    let step = common::bench::stride(4);
    let agree = tmp.path().join("agree");
    let script = workspace_root().join("tests/bench/bfcl_agree.py");
    let out = std::process::Command::new(&python)
        .env("TZ", "UTC")
        .arg(&script)
        .args(["multi_turn_base".as_ref(), a.as_os_str(), agree.as_os_str()])
        .arg(step.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bfcl_agree.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bfcl: BTreeMap<String, bool> = serde_json::from_slice(&out.stdout).unwrap();
    common::agree::agreement(
        &format!("bfcl/multi_turn_base, tasks at stride {step}"),
        "BFCL",
        &store,
        &a,
        &agree,
        &bfcl,
    );
}
