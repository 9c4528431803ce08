//! Hardening: the store's integrity. `gc` beside a live writer removes
//! nothing the writer uses and never fails on its temporary files; a
//! damaged run index is rebuilt from the bundles; a service the world
//! refuses leaves no header-only bundle; `verify` tells a run the watchdog
//! stopped from drift. The real binary on the caller-agent and hostile
//! guests.

mod common;

use common::{
    age, counters_case, guest, temp_dir, workspace_root, world_with_service, worldline,
    worldline_spawn, worlds_dir, write_case,
};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A passing demo case with `seed`.
fn demo_case(seed: u32) -> String {
    format!(
        r#"world = "demo@v1"
seed = {seed}
clock = 2026-03-01T12:00:00Z
task = {{ calls = [{{ tool = "get_ticket", args = {{ id = "T-1" }} }}] }}
[[expect.state]]
table = "tickets"
key = "T-1"
field = "status"
equals = "open"
"#
    )
}

/// `<dir>/cases/` holding four passing demo cases.
fn demo_cases(dir: &Path) -> std::path::PathBuf {
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for seed in 1..=4 {
        write_case(&cases, &format!("c{seed}"), &demo_case(seed));
    }
    cases
}

/// The bundles in the store.
fn bundles(store: &Path) -> usize {
    std::fs::read_dir(store.join("runs"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn gc_beside_a_running_suite_removes_nothing_it_uses_and_never_fails() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    let agent = guest("caller-agent");
    let worlds = worlds_dir();
    let suite = [
        "test",
        s(&cases),
        "--agent",
        s(&agent),
        "--worlds",
        s(&worlds),
        "--json",
    ];
    // A first suite stores the agent, cases and world; then they look old.
    worldline(&store, suite).expect_code(0);
    age(&store.join("objects"), Duration::from_secs(2 * 3600));

    let mut args: Vec<&str> = suite.to_vec();
    args.extend(["--repeat", "40", "--jobs", "2"]);
    let child = worldline_spawn(&store, &args);
    let done = AtomicBool::new(false);
    let (suite_out, passes) = std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let out = common::CliOutput::of(child.wait_with_output().unwrap());
            done.store(true, Ordering::SeqCst);
            out
        });
        let mut passes = Vec::new();
        while !done.load(Ordering::SeqCst) {
            passes.push(worldline(
                &store,
                [
                    "gc",
                    "--keep-passed",
                    "0",
                    "--keep-failed",
                    "0",
                    "--keep-faulted",
                    "0",
                    "--keep-incomplete",
                    "0",
                    "--cache-days",
                    "0",
                    "--json",
                ],
            ));
        }
        (waiter.join().unwrap(), passes)
    });
    suite_out.expect_code(0);
    let written: std::collections::BTreeSet<&str> = suite_out.json()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["run_ids"].as_array().unwrap())
        .map(|id| id.as_str().unwrap())
        .collect();
    assert_eq!(written.len(), 160);
    assert!(passes.len() > 1, "gc ran beside the suite");
    for (i, pass) in passes.iter().enumerate() {
        // Never exit 4 on a writer's temporary file or a vanished entry.
        pass.expect_code(0);
        // Only the last pass may have started once the suite had ended.
        if i + 1 < passes.len() {
            let removed = pass.json()["runs"]["items"].as_array().unwrap();
            assert!(
                !removed
                    .iter()
                    .any(|r| written.contains(r.as_str().unwrap())),
                "pass {i} removed a run of the live suite: {pass}"
            );
        }
    }
    let left = bundles(&store);
    let verify = worldline(&store, ["verify", "--json"]);
    assert_eq!(verify.json()["unreadable"], 0, "{verify}");
    assert_eq!(verify.json()["diverged"], 0, "{verify}");
    assert_eq!(verify.json()["replayed"], left, "{verify}");
    verify.expect_code(0);
    // gc did remove what no live process used: the first suite's runs.
    assert!(passes[0].json()["runs"]["count"].as_u64().unwrap() >= 4);
}

#[test]
fn a_service_the_world_refuses_leaves_no_bundle() {
    let dir = temp_dir();
    let agent = guest("caller-agent");
    let store = dir.path().join("store");
    let counters = workspace_root().join("tests/worlds/counters/v1");
    let case = counters_case(
        dir.path(),
        json!([{"tool": "bump", "args": {"id": "c"}}]),
        "",
    );
    // An agent component, not WebAssembly, and an empty file.
    let worlds = world_with_service(dir.path(), &counters, "counters", &agent);
    let service = worlds.join("counters/v1/service.wasm");
    let refusals: [(&str, Option<&[u8]>); 3] = [
        ("is not a worldline service", None),
        ("no \\0asm header", Some(b"not wasm")),
        ("service.wasm", Some(b"")),
    ];
    for (said, bytes) in refusals {
        if let Some(bytes) = bytes {
            std::fs::write(&service, bytes).unwrap();
        }
        let out = common::run_in(&store, &case, &agent, &worlds);
        out.expect_code(2);
        assert!(out.stderr.contains(said), "{out}");
        assert_eq!(bundles(&store), 0, "a refused service leaves no run: {out}");
    }
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    let doc: &Value = verify.json();
    assert_eq!(
        (&doc["replayed"], &doc["unreadable"], &doc["incomplete"]),
        (&json!(0), &json!(0), &json!(0)),
        "{verify}"
    );
}

#[test]
fn verify_reports_a_run_the_watchdog_stopped_as_a_timeout_not_as_drift() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    // Calls without end, stopped by the wall clock after some thousands.
    let case = write_case(
        dir.path(),
        "timeout",
        "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 1_000_000_000 }\n\n[limits]\nfuel = 1_000_000_000_000_000\ntimeout_ms = 600\nmax_events = 5_000_000\n",
    );
    let out = common::run_in(&store, &case, &guest("hostile-agent"), &worlds_dir());
    assert_eq!(out.json()["run_status"], "timeout", "{out}");
    let recorded = common::read_bundle(&out.bundle()).events.len();
    assert!(recorded > 10, "{recorded} events");

    // The replay's own watchdog fires sooner on a busy machine: keep the
    // cores busy so it surely stops before the end of the recording.
    let stop = AtomicBool::new(false);
    let verify = std::thread::scope(|scope| {
        for _ in 0..3 {
            scope.spawn(|| {
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            });
        }
        let verify = worldline(&store, ["verify", "--json"]);
        stop.store(true, Ordering::Relaxed);
        verify
    });
    verify.expect_code(0);
    let doc = verify.json();
    assert_eq!(
        (&doc["timeout"], &doc["diverged"], &doc["drift_rate"]),
        (&json!(1), &json!(0), &json!(0.0)),
        "{verify}"
    );
    let run = &doc["runs"][0];
    assert_eq!(run["verdict"], "timeout", "{verify}");
    assert_eq!(run["recorded"], recorded, "{verify}");
    assert!(
        run["matched"].as_u64().unwrap() <= recorded as u64,
        "{verify}"
    );

    let text = worldline(&store, ["verify"]);
    text.expect_code(0);
    assert!(
        text.stdout
            .contains("timeout  (stopped by the watchdog, so not replayable;"),
        "{text}"
    );
}

/// `runs --json` as (run id, case, status, outcome), sorted by id.
fn listed(out: &common::CliOutput) -> Vec<(String, String, String, String)> {
    let mut rows: Vec<_> = out
        .json()
        .as_array()
        .unwrap_or_else(|| panic!("{out}"))
        .iter()
        .map(|r| {
            let f = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (f("run_id"), f("case"), f("status"), f("outcome"))
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn a_damaged_index_is_rebuilt_from_the_bundles_and_lists_every_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    let (agent, worlds) = (guest("caller-agent"), worlds_dir());
    worldline(
        &store,
        [
            "test",
            s(&cases),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "--repeat",
            "24",
            "--json",
        ],
    )
    .expect_code(0);
    let whole = worldline(&store, ["runs", "--json"]);
    whole.expect_code(0);
    let expected = listed(&whole);
    assert_eq!(expected.len(), 96);
    let index = store.join("index.sqlite");
    assert!(
        !Path::new(&format!("{}-wal", index.display())).exists(),
        "the last reader checkpointed the log"
    );
    let pristine = std::fs::read(&index).unwrap();
    let size = pristine.len();
    let mut offsets: Vec<usize> = vec![20, 28, 100, 108, 1000];
    offsets.extend((1..24).map(|k| k * size / 24 + 37 * k));
    let mut rebuilt = 0;
    for at in offsets.into_iter().filter(|at| at + 4 <= size) {
        let mut damaged = pristine.clone();
        damaged[at..at + 4].copy_from_slice(&[0xff, 0xfe, 0xff, 0xfe]);
        std::fs::write(&index, &damaged).unwrap();
        let out = worldline(&store, ["runs", "--json"]);
        out.expect_code(0);
        assert_eq!(
            listed(&out),
            expected,
            "damage at byte {at}:\n{}",
            out.stderr
        );
        rebuilt += usize::from(out.stderr.contains("rebuil"));
    }
    assert!(rebuilt > 0, "some damage was found and repaired");
}
