//! The Ray recipe (`contrib/ray/worldline_ray.py`) on a local three-node
//! Ray cluster (Ray's own `ray.cluster_utils.Cluster`, on loopback,
//! `tests/training/ray_cluster.py`) with the pinned `ray` package
//! (tests/ray-python.sh): a 200-rollout suite into one PostgreSQL store,
//! every rollout seen by `runs` and `merge --suite`, and every process the
//! cluster started gone afterwards, also when the test fails; the
//! driver's relative paths good in a cluster started elsewhere, its
//! `PGPASSWORD` and TLS settings good in a cluster started without them; a folder store
//! refused before any cluster is reached, an address no cluster answers
//! at said at once, `--cpus-per-shard` more than a node has refused.

use crate::common::*;
use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Cases and rollouts per case: 200 rollouts, 40 of them failing.
const CASES: usize = 20;
const FAILING: usize = 4;
const ROLLOUTS: usize = 10;

/// The Ray tests' Python: a venv with the pinned `ray`.
fn ray_python() -> PathBuf {
    let python = std::env::var_os("WORLDLINE_RAY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/ray-python/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: the Ray recipe's test runs the pinned ray package.\n\
         Run `. tests/ray-python.sh && ensure_ray_python target` (tests/run does) and test again.",
        python.display()
    );
    python
}

/// The processes of session `sid` (the cluster's harness and everything it
/// started, Ray's raylets, GCS and workers among them): their ids.
fn session_members(sid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // Fields after the command's closing parenthesis: state, ppid,
        // pgrp, session.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() != Some(&"Z") && fields.get(3) == Some(&sid.to_string().as_str()) {
            pids.push(pid);
        }
    }
    pids
}

/// The cluster's harness, started in a session of its own; dropping it
/// kills whatever of that session is left (a failed test leaves nothing).
struct Harness {
    child: Child,
}

impl Harness {
    fn sid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for pid in session_members(self.sid()) {
            // SAFETY: kill(2) on a process of the session this test started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

/// `n` cases in `dir/cases`, the first `failing` of them graded failed.
fn suite(dir: &Path, n: usize, failing: usize) {
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for i in 0..n {
        let mut text = DEMO_PASSES.replace("seed = 3", &format!("seed = {i}"));
        if i < failing {
            text = text.replace(r#"equals = "open""#, r#"equals = "closed""#);
        }
        write_case(&cases, &format!("c{i:03}"), &text);
    }
}

/// What the recipe did on a local cluster.
struct Ran {
    status: ExitStatus,
    stdout: String,
    /// Its exit, stdout and stderr, for a failing assertion.
    said: String,
    // Dropped in this order: the cluster's processes, then Ray's folder.
    harness: Harness,
    _temp: tempfile::TempDir,
}

/// Run the recipe (`python -m worldline_ray` with `recipe`, `{address}`
/// the cluster's) in `project` with `driver_env` set for the driver only,
/// on a local cluster of `nodes` one-CPU nodes started in `elsewhere`
/// without `PGPASSWORD`, `PGSSLMODE` and `PGSSLROOTCERT` (a shard has the
/// environment of `ray start`, not the driver's); it must end within
/// `limit`.
fn on_cluster(
    nodes: usize,
    project: &Path,
    elsewhere: &Path,
    recipe: &[&OsStr],
    driver_env: &[(&str, &str)],
    limit: Duration,
) -> Ran {
    let python = ray_python();
    // Ray's session folder: a short path (its sockets live there).
    let temp = tempfile::Builder::new()
        .prefix("wlray-")
        .tempdir_in("/tmp")
        .unwrap();
    let mut harness = Command::new(&python);
    harness
        .arg(tests_dir().join("training/ray_cluster.py"))
        .arg(nodes.to_string())
        .arg(temp.path())
        .args(["env".as_ref(), "-C".as_ref(), project.as_os_str()])
        .args(driver_env.iter().map(|(k, v)| format!("{k}={v}")))
        .arg(&python)
        .args(["-m", "worldline_ray"])
        .args(recipe)
        .env("PYTHONPATH", workspace_root().join("contrib/ray"))
        .env_remove("PGPASSWORD")
        .env_remove("PGSSLMODE")
        .env_remove("PGSSLROOTCERT")
        .current_dir(elsewhere)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setsid(2) only, between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        harness.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let started = Instant::now();
    let mut harness = Harness {
        child: harness.spawn().expect("starting the Ray cluster's harness"),
    };
    let (stdout, stderr) = (harness.child.stdout.take(), harness.child.stderr.take());
    let out = std::thread::spawn(move || std::io::read_to_string(stdout.unwrap()).unwrap());
    let err = std::thread::spawn(move || std::io::read_to_string(stderr.unwrap()).unwrap());
    let status = loop {
        if let Some(status) = harness.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < limit,
            "the Ray recipe did not finish in {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    let said = format!("exit {status}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    eprintln!(
        "the Ray recipe, cluster start and stop included: {:?}",
        started.elapsed()
    );
    Ran {
        status,
        stdout,
        said,
        harness,
        _temp: temp,
    }
}

/// The files under `dir` (not following links) that hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let (path, kind) = (entry.path(), entry.file_type().unwrap());
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file()
                && std::fs::read(&path)
                    .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                found.push(path);
            }
        }
    }
    found
}

/// A password in the recipe's `--store` is left out of every command it
/// shows (a failed shard's, `merge`'s), however it is written: after the
/// user, percent-encoded or not (worldline takes a `/` in it as it is),
/// or as libpq's `password=` key. The last two were shown whole.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn the_ray_recipe_shows_no_password_of_an_address() {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, worldline_ray as w\n\
             for a in sys.argv[1:]: print(w.shown(['worldline', '--store', a]), w.split_password(a)[1])",
            "postgres://ci:Sl/ash_pw_55@db:5432/evals?schema=e",
            "postgres://ci@db/evals?schema=e&password=Sl%2Fash_pw_55",
            "postgres://ci:Sl%2Fash_pw_55@db/evals",
        ])
        .env("PYTHONPATH", workspace_root().join("contrib/ray"))
        .output()
        .expect("running python3");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines,
        [
            "worldline --store postgres://ci@db:5432/evals?schema=e Sl/ash_pw_55",
            "worldline --store postgres://ci@db/evals?schema=e Sl/ash_pw_55",
            "worldline --store postgres://ci@db/evals Sl/ash_pw_55",
        ]
    );
}

/// A shard's worldline that exits 2 is said with why: its `--json`
/// report's error, or the cases it could not read, with file and line
/// (the recipe said only the command, the reason being on the stdout it
/// dropped).
#[test]
fn the_ray_recipe_says_why_a_shard_could_not_run() {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, json, worldline_ray as w\n\
             report = {'collection_errors': [{'file': 'cases/b.toml', 'line': 1, 'message': 'world `nosuch@v1` not found'}]}\n\
             try:\n\
             \x20   w.run_command([sys.executable, '-c', 'import sys; print(sys.argv[1]); sys.exit(2)', json.dumps(report)], 'shard 1/2', {})\n\
             except w.RecipeError as e:\n\
             \x20   print(e)",
        ])
        .env("PYTHONPATH", workspace_root().join("contrib/ray"))
        .output()
        .expect("running python3");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.starts_with("shard 1/2 exited 2: "), "{said}");
    assert!(
        said.contains("cases/b.toml:1: world `nosuch@v1` not found"),
        "{said}"
    );
}

/// The address of `store` without its password.
fn without_password(store: &str) -> String {
    let shown = store.replace(&format!(":{}@", pg::PASSWORD), "@");
    assert_ne!(shown, store, "{store} holds no password");
    shown
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL, the pinned Python environments: run tests/run, which installs it"
)]
fn the_ray_recipe_runs_200_rollouts_on_three_nodes_into_one_store() {
    // A server that checks the password, over TLS only.
    let pg = pg::own_tls_cluster(pg::Tls::Only);
    let ca = pg.ca.clone().unwrap();
    let address = pg.store_in(&pg::fresh_schema());
    let store = PathBuf::from(format!(
        "{address}&sslmode=verify-full&sslrootcert={}",
        ca.display()
    ));
    let dir = temp_dir();
    // The driver runs in the project's folder, with the paths relative
    // to it as a user types them; the cluster in another (a shard runs in
    // its Ray worker's folder, where `cases/` was no such folder).
    let project = dir.path().join("project");
    let elsewhere = dir.path().join("cluster");
    std::fs::create_dir_all(&elsewhere).unwrap();
    suite(&project, CASES, FAILING);
    std::fs::copy(guest("caller-agent"), project.join("agent.wasm")).unwrap();
    std::os::unix::fs::symlink(worlds_dir(), project.join("worlds")).unwrap();
    std::fs::copy(&ca, project.join("ca.pem")).unwrap();

    // The password and the TLS settings only in the driver's environment
    // (the root certificate's path relative to its folder), as docs/cli.md
    // shows: the shards had the cluster's, without them.
    let rollouts = ROLLOUTS.to_string();
    let address = without_password(&address);
    let recipe: Vec<&OsStr> = [
        "--cases",
        "cases/",
        "--rollouts",
        &rollouts,
        "--address",
        "{address}",
        "--store",
        &address,
        "--agent",
        "agent.wasm",
        "--worlds",
        "worlds",
        "--worldline",
        env!("CARGO_BIN_EXE_worldline"),
        "--json",
    ]
    .map(OsStr::new)
    .to_vec();
    let ran = on_cluster(
        3,
        &project,
        &elsewhere,
        &recipe,
        &[
            ("PGPASSWORD", pg::PASSWORD),
            ("PGSSLMODE", "verify-full"),
            ("PGSSLROOTCERT", "ca.pem"),
        ],
        Duration::from_secs(180),
    );
    let (status, stdout, said, harness) = (ran.status, &ran.stdout, &ran.said, &ran.harness);

    // Every process the cluster started has ended (raylets, GCS, workers).
    let gone = Instant::now();
    while !session_members(harness.sid()).is_empty() {
        assert!(
            gone.elapsed() < Duration::from_secs(20),
            "Ray processes outlived their cluster: {:?}\n{said}",
            session_members(harness.sid())
                .iter()
                .map(
                    |pid| std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                        .unwrap_or_default()
                        .replace('\0', " ")
                )
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Exit 1: some rollouts failed, as four cases must.
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(
        !said.contains(pg::PASSWORD),
        "the password was printed: {said}"
    );
    // Nor written into the nodes' logs (Ray's `runtime_env` agent logs the
    // variables it is given: the password was sent so).
    let logged = files_holding(ran._temp.path(), pg::PASSWORD);
    assert!(logged.is_empty(), "the password is in {logged:?}");
    // The recipe's summary is the last line (Ray may print before it).
    let last = stdout.lines().last().unwrap_or_default();
    let summary: Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("the summary is not JSON ({e}): {said}"));
    let total = CASES * ROLLOUTS;
    let failed = FAILING * ROLLOUTS;
    assert_eq!(summary["rollouts"], total, "{said}");
    assert_eq!(summary["passed"], total - failed, "{said}");
    assert_eq!(summary["failed"], failed, "{said}");
    assert_eq!(summary["cases"], CASES, "{said}");
    assert_eq!(summary["shards"], 3, "{said}");
    // Three tasks of one CPU on three nodes of one CPU run one a node,
    // unless a shard ends before a slow node's worker starts (under load):
    // more than one node is what the test needs to show.
    let nodes = summary["nodes"].as_u64().unwrap();
    assert!(
        (2..=3).contains(&nodes),
        "the shards ran on {nodes} node(s): {said}"
    );
    assert!(summary["rollouts_per_s"].as_f64().unwrap() > 0.0, "{said}");
    eprintln!("the Ray recipe's summary: {summary}");

    // The store saw every rollout, with its verdict.
    let runs = worldline(&store, ["runs", "--limit", "1000", "--json"]);
    runs.expect_code(0);
    let runs = runs.json().as_array().unwrap().clone();
    assert_eq!(runs.len(), total, "every rollout is a run in the store");
    let outcome = |o: &str| runs.iter().filter(|r| r["outcome"] == o).count();
    assert_eq!(outcome("failed"), failed);
    assert_eq!(outcome("passed"), total - failed);
    for r in &runs {
        let case = r["case"].as_str().unwrap();
        let index: usize = case.trim_start_matches('c').parse().unwrap();
        let want = if index < FAILING { "failed" } else { "passed" };
        assert_eq!(r["outcome"], want, "the verdict of {case}: {r}");
    }

    // `merge --suite` combines the three shards the store kept.
    let suite_id = summary["suite_id"].as_str().unwrap();
    // Redacted, as any reader sees it: a run id's date and time (about one
    // in ten passes the Luhn check) must not be taken for a card number.
    let merged = worldline(&store, ["merge", "--suite", suite_id, "--json"]);
    merged.expect_code(1);
    let merged = merged.json();
    assert_eq!(merged["passed"], CASES - FAILING, "{merged}");
    assert_eq!(merged["failed"], FAILING, "{merged}");
    let cases = merged["cases"].as_array().unwrap();
    let rollouts: u64 = cases.iter().map(|c| c["runs"].as_u64().unwrap()).sum();
    assert_eq!(rollouts as usize, total, "{merged}");
    let ids: std::collections::BTreeSet<&str> = cases
        .iter()
        .flat_map(|c| c["run_ids"].as_array().unwrap())
        .map(|id| id.as_str().unwrap())
        .collect();
    let stored: std::collections::BTreeSet<&str> =
        runs.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, stored, "the merged report names every stored run");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL, the pinned Python environments: run tests/run, which installs it"
)]
fn the_ray_recipe_refuses_a_folder_store_before_reaching_a_cluster() {
    let dir = temp_dir();
    let out = Command::new(ray_python())
        .args(["-m", "worldline_ray", "--cases"])
        .arg(dir.path())
        .args(["--rollouts", "2", "--address", "127.0.0.1:1", "--store"])
        .arg(dir.path().join("store"))
        .env("PYTHONPATH", workspace_root().join("contrib/ray"))
        .stdin(Stdio::null())
        .output()
        .expect("running the recipe");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--store must be a PostgreSQL store (postgres://...)"),
        "{err}"
    );
}

/// `--cpus-per-shard` of none or fewer is refused before a cluster is
/// reached (exit 2): Ray's `ValueError` was a traceback, exit 1, which
/// reads as a rollout that failed.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL, the pinned Python environments: run tests/run, which installs it"
)]
fn the_ray_recipe_refuses_no_cpus_per_shard() {
    let dir = temp_dir();
    for cpus in ["0", "-1"] {
        let out = Command::new(ray_python())
            .args(["-m", "worldline_ray", "--cases"])
            .arg(dir.path())
            .args([
                "--rollouts",
                "1",
                "--address",
                "127.0.0.1:1",
                "--cpus-per-shard",
                cpus,
            ])
            .args(["--store", "postgres://ci@127.0.0.1:1/evals"])
            .env("PYTHONPATH", workspace_root().join("contrib/ray"))
            .stdin(Stdio::null())
            .output()
            .expect("running the recipe");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cpus}: {err}");
        assert!(
            err.contains("--cpus-per-shard must be more than 0"),
            "{err}"
        );
    }
}

/// An address no cluster answers at is said at once (exit 2): Ray's own
/// client retried it for many minutes without a word to the user.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL, the pinned Python environments: run tests/run, which installs it"
)]
fn the_ray_recipe_says_at_once_that_no_cluster_answers_at_its_address() {
    let dir = temp_dir();
    let mut recipe = Command::new(ray_python())
        .args(["-m", "worldline_ray", "--cases"])
        .arg(dir.path())
        .args(["--rollouts", "2", "--address", "127.0.0.1:1"])
        .args(["--store", "postgres://ci@127.0.0.1:1/evals"])
        .env("PYTHONPATH", workspace_root().join("contrib/ray"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running the recipe");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = recipe.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = recipe.kill();
            let _ = recipe.wait();
            panic!("the recipe still waited for 127.0.0.1:1 after 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let err = std::io::read_to_string(recipe.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot reach the Ray cluster at 127.0.0.1:1 (")
            && err.contains("start one (`ray start --head`) or pass its address"),
        "{err}"
    );
}

/// `--cpus-per-shard` more than any node has is refused before a shard is
/// submitted, naming the largest node's CPUs: Ray held such tasks for
/// good, its warning hidden from the driver.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL, the pinned Python environments: run tests/run, which installs it"
)]
fn the_ray_recipe_refuses_more_cpus_per_shard_than_a_node_has() {
    let dir = temp_dir();
    let project = dir.path().join("project");
    suite(&project, 1, 0);
    let recipe = [
        "--cases",
        "cases/",
        "--rollouts",
        "1",
        "--cpus-per-shard",
        "2",
        "--address",
        "{address}",
        "--store",
        "postgres://ci@127.0.0.1:1/evals",
    ]
    .map(OsStr::new);
    let ran = on_cluster(
        2,
        &project,
        dir.path(),
        &recipe,
        &[],
        Duration::from_secs(120),
    );
    let said = &ran.said;
    assert_eq!(ran.status.code(), Some(2), "{said}");
    assert!(
        said.contains(
            "worldline_ray: --cpus-per-shard 2 is more than the largest node of the cluster has (1 CPU), so no shard could start: give at most 1"
        ),
        "{said}"
    );
}
