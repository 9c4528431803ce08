//! Hardening: the store's integrity. `gc` beside a live writer removes
//! nothing the writer uses and never fails on its temporary files; a
//! damaged run index is rebuilt from the bundles; a service the world
//! refuses leaves no header-only bundle; `verify` tells a run the watchdog
//! stopped from drift. The real binary on the caller-agent and hostile
//! guests.

use crate::common;

use common::{
    age, counters_case, guest, passing_demo_case as demo_case, temp_dir, workspace_root,
    world_with_service, worldline, worldline_spawn, worlds_dir, write_case,
};
use serde_json::json;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
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

/// The id of one run of the store (its first bundle as the folder lists it).
fn a_run_of(store: &Path) -> String {
    std::fs::read_dir(store.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find_map(|n| n.strip_suffix(".jsonl").map(String::from))
        .unwrap()
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

/// `verify` fixes its list of runs as it starts and holds them all: a gc
/// pass beside it removed the runs not yet replayed, which it then counted
/// unreadable, as drift, and it exited 1.
#[test]
fn gc_beside_verify_removes_none_of_the_runs_it_checks() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "20");
    let runs = bundles(&store);
    let mut verify = worldline_spawn(&store, ["verify", "--jobs", "1", "--json"]);
    // Its lease is written once it holds a run.
    let leases = store.join("leases");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !std::fs::read_dir(&leases).is_ok_and(|rd| {
        rd.filter_map(Result::ok)
            .any(|e| e.metadata().is_ok_and(|m| m.len() > 0))
    }) {
        assert!(std::time::Instant::now() < deadline, "verify held no run");
        std::thread::sleep(Duration::from_millis(5));
    }
    let gc = worldline(&store, ["gc", "--keep-passed", "0", "--json"]);
    gc.expect_code(0);
    assert!(
        verify.try_wait().unwrap().is_none(),
        "verify was still checking when gc ended (more runs would make it so)"
    );
    assert_eq!(gc.json()["runs"]["count"], 0, "{gc}");
    let verify = common::CliOutput::of(verify.wait_with_output().unwrap());
    assert_eq!(verify.json()["unreadable"], 0, "{verify}");
    assert_eq!(verify.json()["replayed"], runs, "{verify}");
    verify.expect_code(0);
}

/// A store holding one passing run of the demo case, and that run
/// exported: (the folder, the store, the run id, the export file).
fn exported_run() -> (
    tempfile::TempDir,
    std::path::PathBuf,
    String,
    std::path::PathBuf,
) {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "c1", &demo_case(1));
    let (agent, worlds) = (guest("caller-agent"), worlds_dir());
    let args = [
        "run",
        s(&case),
        "--agent",
        s(&agent),
        "--worlds",
        s(&worlds),
        "--json",
    ];
    let out = worldline(&store, args);
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let file = dir.path().join("r.json");
    worldline(&store, ["export", &run, "-o", s(&file)]).expect_code(0);
    (dir, store, run, file)
}

/// An import of a store into one it cannot write stops at the first
/// write, exit 2 naming the store: each run was skipped in turn as if it
/// were damaged (a full disk: every run "skipped", exit 1).
#[test]
fn an_import_into_a_store_it_cannot_write_stops_naming_the_store() {
    let (dir, from, _, _) = exported_run();
    let into = dir.path().join("into");
    std::fs::create_dir_all(&into).unwrap();
    // Where its leases go is a folder not even root can make files in:
    // no write of the import's can start. (A file there is refused as
    // the store opens.)
    std::os::unix::fs::symlink("/proc/self/fdinfo", into.join("leases")).unwrap();
    let out = worldline(&into, ["import", s(&from)]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("the import stopped: it could not write into the store")
            && out.stderr.contains("leases")
            && !out.stderr.contains("skipped"),
        "{out}"
    );
}

/// The store's `worlds/` is a cache of its objects: a world there changed
/// by hand (or by a disk) is made again from them, and the run replays
/// `identical` (every reader refused it, "the stored world does not hash
/// to the recorded world hash", and `verify` counted it unreadable).
#[test]
fn a_changed_copy_of_a_world_in_the_store_is_made_again_from_its_objects() {
    let (_dir, store, run, _) = exported_run();
    worldline(&store, ["replay", &run]).expect_code(0);
    let worlds: Vec<_> = std::fs::read_dir(store.join("worlds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(worlds.len(), 1, "{worlds:?}");
    let toml = worlds[0].join("world.toml");
    let before = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{before}\n# changed\n")).unwrap();
    let replay = worldline(&store, ["replay", &run]);
    replay.expect_code(0);
    assert!(replay.stdout.contains("identical"), "{replay}");
    assert_eq!(std::fs::read_to_string(&toml).unwrap(), before);
    std::fs::write(&toml, "name = 5\n").unwrap();
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["identical"], 1, "{verify}");
}

/// A folder where the run index goes is said to be one, an input error
/// with what to do (it was SQLite's "Error code 14: unable to open
/// database file", exit 4); moved away, the index is made again.
#[test]
fn a_folder_where_the_run_index_goes_is_named_with_what_to_do() {
    let (_dir, store, run, _) = exported_run();
    let index = store.join("index.sqlite");
    for f in [
        "index.sqlite",
        "index.sqlite-wal",
        "index.sqlite-shm",
        "index.checked",
    ] {
        let _ = std::fs::remove_file(store.join(f));
    }
    std::fs::create_dir(&index).unwrap();
    for args in [vec!["runs"], vec!["index", "--rebuild"]] {
        let out = worldline(&store, &args);
        out.expect_code(2);
        assert!(
            out.stderr.contains("index.sqlite: is not a file"),
            "{args:?}: {out}"
        );
        assert!(out.stderr.contains("move this away"), "{args:?}: {out}");
    }
    std::fs::remove_dir(&index).unwrap();
    let out = worldline(&store, ["runs"]);
    out.expect_code(0);
    assert!(out.stdout.contains(&run), "{out}");
}

/// Export files named together: one refused is skipped and named by its
/// path and line, the others imported and reported (it stopped at the bad
/// file, exit 2 with its error alone, though the file before it had been
/// imported; `--json` printed only the error).
#[test]
fn an_import_of_several_files_skips_a_refused_one_and_reports_the_rest() {
    let (dir, _, run, file) = exported_run();
    let bad = dir.path().join("bad.json");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &bad,
        text.replacen("worldline-export/", "worldline-export/9", 1),
    )
    .unwrap();
    let missing = dir.path().join("gone.json");
    let into = dir.path().join("into");
    let out = worldline(&into, ["import", s(&bad), s(&file), "--json"]);
    out.expect_code(1);
    let doc = out.json();
    assert_eq!(doc["imported"][0]["run_id"], run.as_str(), "{out}");
    assert_eq!(doc["skipped"][0]["run_id"], s(&bad), "{out}");
    let reason = doc["skipped"][0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("line 1, column "), "{out}");
    assert!(reason.contains("export format"), "{out}");
    let text = worldline(&into, ["import", s(&file), s(&bad)]);
    text.expect_code(1);
    assert!(
        text.stdout.contains(&format!("{run} was already in")),
        "{text}"
    );
    assert!(
        text.stdout.contains("1 run(s) imported (0 new), 1 skipped"),
        "{text}"
    );
    assert!(
        text.stderr
            .contains(&format!("skipped {}: line 1", bad.display())),
        "{text}"
    );
    // One file alone is refused as before, and a missing one is named
    // before anything is imported.
    worldline(&into, ["import", s(&bad)]).expect_code(2);
    let gone = worldline(&into, ["import", s(&file), s(&missing)]);
    gone.expect_code(2);
    assert!(gone.stderr.contains("no such file or folder"), "{gone}");
}

/// A file in `runs/` past the bundles' cap is refused before it is read,
/// and one whose first line runs past a header's cap without ending (a
/// file of zeros a crash left) is damaged, read no further: `history`
/// read the first to its 1 GiB cap and the second whole, and `verify`
/// called the second a run cut off before its header.
#[test]
fn a_bundle_past_its_cap_or_without_a_header_s_end_is_not_read_whole() {
    let (_dir, store, _, _) = exported_run();
    let runs = store.join("runs");
    let (huge, zeros) = ("20261205-000000-00000003", "20261205-000000-00000004");
    for (id, len) in [(huge, 2u64 << 30), (zeros, 100 << 20)] {
        let f = std::fs::File::create(runs.join(format!("{id}.jsonl"))).unwrap();
        f.set_len(len).unwrap();
    }
    let history = worldline(&store, ["history", huge]);
    history.expect_code(2);
    assert!(
        history.stderr.contains("larger than its cap of 1024 MiB"),
        "{history}"
    );
    let history = worldline(&store, ["history", zeros]);
    history.expect_code(2);
    assert!(
        history.stderr.contains("first line runs past 64 MiB"),
        "{history}"
    );
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(1);
    let v = verify.json();
    assert_eq!(
        (
            v["identical"].as_u64(),
            v["unreadable"].as_u64(),
            v["incomplete"].as_u64()
        ),
        (Some(1), Some(2), Some(0)),
        "{verify}"
    );
}

/// A bundle cut off before its header (empty, or its first line torn) is
/// an incomplete run with nothing recorded wherever it is read, as
/// docs/formats.md says: `runs` listed it `broken` (and `--status
/// incomplete` left it out) while `verify` called it incomplete.
#[test]
fn a_bundle_cut_off_before_its_header_is_incomplete_in_runs_as_in_verify() {
    let (_dir, store, run, _) = exported_run();
    let runs = store.join("runs");
    let (empty, torn) = ("20261205-000000-00000005", "20261205-000000-00000006");
    std::fs::write(runs.join(format!("{empty}.jsonl")), "").unwrap();
    std::fs::write(
        runs.join(format!("{torn}.jsonl")),
        "{\"header\":{\"agent_sha",
    )
    .unwrap();
    let listed = worldline(&store, ["runs", "--status", "incomplete", "--json"]);
    listed.expect_code(0);
    let rows = listed.json();
    let rows = rows.as_array().unwrap_or_else(|| panic!("{listed}"));
    let mut ids: Vec<&str> = rows.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, [empty, torn], "{listed}");
    for r in rows {
        assert_eq!(r["outcome"], "incomplete", "{listed}");
        assert_eq!(r["status"], "incomplete", "{listed}");
    }
    let all = worldline(&store, ["runs", "--json"]);
    let rows = all.json();
    let outcomes: Vec<&str> = (rows.as_array().unwrap().iter())
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert!(!outcomes.contains(&"broken"), "{all}");
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    let v = verify.json();
    assert_eq!(
        (v["identical"].as_u64(), v["incomplete"].as_u64()),
        (Some(1), Some(2)),
        "{verify} ({run})"
    );
}

/// `import` beside a gc pass: it holds the objects it brings and its run
/// in its lease before it looks at what the store has (decision 0121), so
/// a pass that planned before the run appeared, and deletes its objects
/// while the import waits, leaves the import to store them again. It took
/// no lease: an import that found the objects there wrote only the bundle,
/// the pass then removed them, and the imported run could not be read.
/// Here the test plays the pass: it holds `gc.lock` as a pass does,
/// deletes the objects, and lets go.
#[test]
fn an_import_beside_a_gc_pass_stores_again_the_objects_the_pass_removed() {
    let (_dir, store, run, file) = exported_run();
    // The store keeps the run's objects but not the run, as after a gc
    // that removed the run and not yet its objects.
    std::fs::remove_file(store.join(format!("runs/{run}.jsonl"))).unwrap();
    worldline(&store, ["index", "--rebuild"]).expect_code(0);

    let gate = std::fs::File::open(store.join("gc.lock")).unwrap();
    gate.lock().unwrap();
    let import = worldline_spawn(&store, ["import", s(&file)]);
    // Long enough for an import that does not wait to end.
    std::thread::sleep(Duration::from_millis(1500));
    for e in std::fs::read_dir(store.join("objects")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    gate.unlock().unwrap();
    let out = common::CliOutput::of(import.wait_with_output().unwrap());
    out.expect_code(0);
    let verify = worldline(&store, ["verify", "--json"]);
    assert_eq!(verify.json()["unreadable"], 0, "{verify}");
    assert_eq!(verify.json()["replayed"], 1, "{verify}");
    verify.expect_code(0);
}

/// A store copied while a run was being written holds the start of it;
/// the whole run imported later takes its place (it was refused for good
/// as "a different run"), and one that is not its continuation still is.
/// An export of a run's start, imported into a store that holds the run
/// whole, is the run already here: it was "a different run" (exit 2),
/// though the other order completes the run.
#[test]
fn an_import_of_the_start_of_a_run_the_store_holds_whole_leaves_it() {
    let (dir, _store, run, file) = exported_run();
    let (whole_store, part) = (dir.path().join("whole"), dir.path().join("part"));
    for store in [&whole_store, &part] {
        worldline(store, ["import", s(&file)]).expect_code(0);
    }
    let bundle = |store: &Path| store.join(format!("runs/{run}.jsonl"));
    let whole = std::fs::read(bundle(&whole_store)).unwrap();
    // The header and the first event.
    let cut: usize = whole
        .split_inclusive(|&b| b == b'\n')
        .take(2)
        .map(<[u8]>::len)
        .sum();
    std::fs::write(bundle(&part), &whole[..cut]).unwrap();
    worldline(&part, ["index", "--rebuild"]).expect_code(0);
    let start = dir.path().join("start.export");
    worldline(&part, ["export", &run, "-o", s(&start)]).expect_code(0);

    let out = worldline(&whole_store, ["import", s(&start), "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["new"], false, "{out}");
    assert!(out.stderr.contains("already holds run"), "{out}");
    assert_eq!(std::fs::read(bundle(&whole_store)).unwrap(), whole);
}

#[test]
fn an_import_of_a_run_whose_start_the_store_holds_completes_it() {
    let (dir, _store, run, file) = exported_run();
    let other = dir.path().join("other");
    worldline(&other, ["import", s(&file)]).expect_code(0);
    let bundle = other.join(format!("runs/{run}.jsonl"));
    let whole = std::fs::read(&bundle).unwrap();
    // The header, the first event, and half of the second line.
    let cut: usize = whole
        .split_inclusive(|&b| b == b'\n')
        .take(2)
        .map(<[u8]>::len)
        .sum::<usize>()
        + 20;
    std::fs::write(&bundle, &whole[..cut]).unwrap();
    worldline(&other, ["index", "--rebuild"]).expect_code(0);

    let out = worldline(&other, ["import", s(&file), "--json"]);
    out.expect_code(0);
    assert_eq!(std::fs::read(&bundle).unwrap(), whole, "{out}");
    // A run, not a redacted copy: `false`, as `export --json` says (null).
    assert_eq!(out.json()["redacted"], false, "{out}");
    let verify = worldline(&other, ["verify", "--json"]);
    assert_eq!(verify.json()["replayed"], 1, "{verify}");
    verify.expect_code(0);
    // Not a continuation: refused as before, the store's run untouched.
    let mut changed = whole.clone();
    changed.truncate(cut);
    changed[cut - 1] ^= 1;
    std::fs::write(&bundle, &changed).unwrap();
    let out = worldline(&other, ["import", s(&file)]);
    out.expect_code(2);
    assert!(out.stderr.contains("a different run"), "{out}");
    assert_eq!(std::fs::read(&bundle).unwrap(), changed);
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
        // Nor a store made for it, which `verify` would pass as empty.
        assert!(!store.exists(), "{out}");
    }
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

/// A world service's call the watchdog stops ends the run `timeout`, and
/// `verify` says so: the call's recorded fuel and backtrace are the wall
/// clock's, and its replay's differ (it was counted as drift).
#[test]
fn a_service_call_the_watchdog_stops_ends_the_run_as_a_timeout() {
    let dir = temp_dir();
    let worlds = common::counters_until_the_watchdog(dir.path());
    let calls = json!([{"tool": "spin", "args": {}}, {"tool": "bump", "args": {"id": "c"}}]);
    let case = counters_case(dir.path(), calls, "[limits]\ntimeout_ms = 600\n");
    let store = dir.path().join("store");
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds);
    assert_eq!(out.json()["run_status"], "timeout", "{out}");
    // It names the service call (it blamed a model call).
    let error = out.json()["error"].as_str().unwrap_or_default().to_string();
    assert!(
        error.starts_with(
            "the service call of `spin` (the watchdog stopped it) used the case's whole time budget"
        ),
        "{error}"
    );
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["runs"][0]["verdict"], "timeout", "{verify}");
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
    demo_suite(&demo_cases(dir.path()), &store, "24");
    let whole = worldline(&store, ["runs", "--json"]);
    whole.expect_code(0);
    let expected = listed(&whole);
    assert_eq!(expected.len(), 96);
    let index = store.join("index.sqlite");
    // Every row in the database file itself, so the damage below hits
    // rows and not pages the log holds newer copies of.
    checkpoint_from_outside(&index);
    worldline(&store, ["runs", "--json"]).expect_code(0);
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

/// An index file at version 0 holding a `runs` table of another shape (as
/// another program, or an old build, left it) is no index: rebuilt from
/// the bundles, by a reader as by `index --rebuild` (both were exit 4,
/// `no such column: case_name`).
#[test]
fn an_index_at_version_0_with_tables_of_another_shape_is_rebuilt() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let run = common::imported_fixture(&store, "before-rules", "dot-paths.json");
    for command in [&["runs", "--json"][..], &["index", "--rebuild", "--json"]] {
        for f in ["index.sqlite", "index.sqlite-wal", "index.sqlite-shm"] {
            let _ = std::fs::remove_file(store.join(f));
        }
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE runs (id TEXT PRIMARY KEY, created INTEGER)'); c.commit(); c.close()",
            ])
            .arg(store.join("index.sqlite"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        worldline(&store, command).expect_code(0);
        let out = worldline(&store, ["runs", "--json"]);
        out.expect_code(0);
        let runs: Vec<String> = listed(&out).into_iter().map(|r| r.0).collect();
        assert_eq!(runs, std::slice::from_ref(&run), "{command:?}: {out}");
    }
}

/// `test` of the demo cases in `cases` with the caller agent, `repeat`
/// times each, into `store`; every run passes.
fn demo_suite(cases: &Path, store: &Path, repeat: &str) {
    let (agent, worlds) = (guest("caller-agent"), worlds_dir());
    worldline(
        store,
        [
            "test",
            s(cases),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "--repeat",
            repeat,
            "--json",
        ],
    )
    .expect_code(0);
}

/// Whether `index --json` ran SQLite's integrity check.
/// Checkpoint the index's log into its database file and remove it, from
/// another program (Python's `sqlite3`), as a user's SQLite shell would.
fn checkpoint_from_outside(index: &Path) {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()",
        ])
        .arg(index)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!Path::new(&format!("{}-wal", index.display())).exists());
}

fn checked(store: &Path) -> bool {
    let out = worldline(store, ["index", "--json"]);
    out.expect_code(0);
    out.json()["sync"]["checked"]
        .as_bool()
        .unwrap_or_else(|| panic!("{out}"))
}

#[test]
fn only_a_change_from_outside_worldline_makes_a_reader_check_the_index() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    let test = |repeat: &str| demo_suite(&cases, &store, repeat);
    test("3");
    // Written, read and written again by worldline alone: never checked.
    assert!(!checked(&store), "a new index is sound");
    let whole = worldline(&store, ["runs", "--json"]);
    whole.expect_code(0);
    test("1");
    assert!(!checked(&store), "worldline's own writes keep it sound");
    let expected = listed(&worldline(&store, ["runs", "--json"]));
    assert_eq!(expected.len(), 16);

    // Another program checkpointing the log (as SQLite's shell would):
    // checked once. worldline's own closes leave the log (decision 0388).
    let index = store.join("index.sqlite");
    assert!(Path::new(&format!("{}-wal", index.display())).exists());
    checkpoint_from_outside(&index);
    assert!(checked(&store), "a checkpoint from outside is checked");
    // The same bytes written back by another program: checked once.
    let bytes = std::fs::read(&index).unwrap();
    std::fs::write(&index, &bytes).unwrap();
    assert!(checked(&store), "a change from outside is checked");
    assert!(!checked(&store), "and once it passed, not again");

    // Damage after those cheap opens is still found and repaired.
    let mut damaged = bytes.clone();
    let half = damaged.len() / 2;
    damaged[half..].fill(0xfe);
    std::fs::write(&index, &damaged).unwrap();
    let out = worldline(&store, ["runs", "--json"]);
    out.expect_code(0);
    assert_eq!(listed(&out), expected, "{}", out.stderr);
    assert!(out.stderr.contains("rebuil"), "{}", out.stderr);
    assert!(!checked(&store), "the rebuilt index is sound");
}

/// The compiled-code cache, imports, bundles cut off before their
/// header, full disks and stores that are not folders.
mod cache_imports_and_disks {
    use crate::common::*;
    use serde_json::{Value, json};
    use std::ffi::OsStr;
    use std::os::unix::process::CommandExt as _;
    use std::path::{Path, PathBuf};

    /// A small deterministic generator (xorshift), so the damage is the same
    /// on every run of the test.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn the_cache_entry(store: &Path) -> PathBuf {
        let cached = files_with_suffix(&store.join("cache"), ".cwasm");
        assert_eq!(cached.len(), 1, "{cached:?}");
        cached[0].clone()
    }

    #[test]
    fn damaged_compiled_code_is_detected_recompiled_and_replaced() {
        let store = temp_dir();
        let ok = case("hostile-ok");
        let first = run_json_with(store.path(), &ok, &hostile(), &[OWN_COMPILE_CACHE]);
        first.expect_code(0);
        let entry = the_cache_entry(store.path());
        let pristine = std::fs::read(&entry).unwrap();
        let mut rng = Rng(17);
        // Random 8-byte flips (which crashed runs), and one 64-byte flip
        // (which made every run end out_of_fuel).
        let mut damages: Vec<(usize, usize)> = (0..6)
            .map(|_| (rng.below(pristine.len() as u64 - 8) as usize, 8))
            .collect();
        damages.push((pristine.len() / 2, 64));
        for (at, len) in damages {
            let mut damaged = pristine.clone();
            for b in &mut damaged[at..at + len] {
                *b ^= 0xA5;
            }
            std::fs::write(&entry, &damaged).unwrap();
            let run = run_json_with(store.path(), &ok, &hostile(), &[OWN_COMPILE_CACHE]);
            run.expect_code(0);
            assert_eq!(run.json()["status"], "completed", "{run}");
            assert_eq!(
                run.json()["chain_hash"],
                first.json()["chain_hash"],
                "damage at {at}"
            );
            let warnings: Vec<&str> = run
                .stderr
                .lines()
                .filter(|l| l.contains("warning"))
                .collect();
            assert_eq!(warnings.len(), 1, "one warning line:\n{run}");
            assert!(warnings[0].contains("damaged"), "{run}");
            assert_eq!(
                std::fs::read(&entry).unwrap(),
                pristine,
                "the damaged entry is replaced by a fresh compile"
            );
            // And the next run trusts the repaired entry without a word.
            let next = run_json_with(store.path(), &ok, &hostile(), &[OWN_COMPILE_CACHE]);
            next.expect_code(0);
            assert!(!next.stderr.contains("warning"), "{next}");
        }
    }

    #[test]
    fn temporary_files_of_killed_cache_writes_are_swept() {
        let store = temp_dir();
        let run = || {
            let ok = case("hostile-ok");
            run_json_with(store.path(), &ok, &hostile(), &[OWN_COMPILE_CACHE]).expect_code(0);
        };
        run();
        let entry = the_cache_entry(store.path());
        let folder = entry.parent().unwrap();
        // What a killed writer leaves: its process id is long gone.
        let left = folder.join("0123.cwasm.tmp99999999-0");
        let older = folder.join("4567.tmp99999998");
        std::fs::write(&left, vec![0u8; 4096]).unwrap();
        std::fs::write(&older, vec![0u8; 4096]).unwrap();
        std::fs::remove_file(&entry).unwrap();
        run();
        assert!(entry.is_file(), "recompiled");
        assert!(!left.exists() && !older.exists(), "stale temporaries swept");
    }

    /// A recorded run of `hostile-ok` in a fresh store, exported; returns the
    /// store, the export's JSON and its run id.
    fn exported() -> (tempfile::TempDir, Value, String) {
        let store = temp_dir();
        let run = run_json(store.path(), &case("hostile-ok"), &hostile());
        run.expect_code(0);
        let id = run.json()["run_id"].as_str().unwrap().to_string();
        let file = store.path().join("run.json");
        worldline(
            store.path(),
            [os("export"), os(&id), os("-o"), file.as_os_str()],
        )
        .expect_code(0);
        let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        (store, doc, id)
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        worldline_case::canon::sha256_hex(bytes)
    }

    fn b64(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// `doc` with its bundle's header edited as a forger would: the
    /// footer sealed again for the new header (decision 0414), so that what
    /// is tested is what an import checks past the bundle's own hashes.
    fn with_header(doc: &Value, edit: impl FnOnce(&mut Value)) -> Value {
        let mut doc = doc.clone();
        let text = doc["bundle"].as_str().unwrap();
        doc["bundle"] = json!(crate::common::resealed(text, edit, |_| {}));
        doc
    }

    fn import(doc: &Value) -> (tempfile::TempDir, CliOutput) {
        let target = temp_dir();
        let file = target.path().join("in.json");
        std::fs::write(&file, serde_json::to_vec(doc).unwrap()).unwrap();
        let out = worldline(
            &target.path().join("store"),
            [os("import"), file.as_os_str()],
        );
        (target, out)
    }

    #[test]
    fn imports_that_could_not_be_replayed_are_refused() {
        let (_src, doc, _) = exported();
        let header: Value =
            serde_json::from_str(doc["bundle"].as_str().unwrap().lines().next().unwrap()).unwrap();
        let world_hash = header["header"]["world_hash"].as_str().unwrap().to_string();

        // Missing the world manifest.
        let mut missing = doc.clone();
        missing["objects"]
            .as_object_mut()
            .unwrap()
            .remove(&world_hash);
        let (_t, out) = import(&missing);
        out.expect_code(2);
        assert!(out.stderr.contains(&world_hash), "{out}");

        // A manifest naming a file outside the world.
        let evil =
            br#"{"../../outside":"0000000000000000000000000000000000000000000000000000000000000000"}"#;
        let evil_sha = sha256_hex(evil);
        let mut escaping = with_header(&doc, |h| h["world_hash"] = json!(evil_sha));
        escaping["objects"][&evil_sha] = json!(b64(evil));
        let (_t, out) = import(&escaping);
        out.expect_code(2);
        assert!(out.stderr.contains("outside"), "{out}");

        // Manifests no folder can hold: a file that is a folder too, a
        // name longer than a filesystem takes. They were imported, and
        // every reader then failed saying to free some space.
        let file = b"a file";
        let file_sha = sha256_hex(file);
        let long = "n".repeat(300);
        for (names, said) in [
            (
                ["files/readme.txt", "files/readme.txt/sub"],
                "`files/readme.txt` is a file, and `files/readme.txt/sub` makes it a folder too",
            ),
            (
                ["files/readme.txt", &format!("files/{long}")],
                "is a name of 300 bytes; a file's name is at most 255",
            ),
        ] {
            let manifest: std::collections::BTreeMap<&str, &str> =
                names.iter().map(|n| (*n, file_sha.as_str())).collect();
            let manifest = serde_json::to_vec(&manifest).unwrap();
            let manifest_sha = sha256_hex(&manifest);
            let mut odd = with_header(&doc, |h| h["world_hash"] = json!(manifest_sha));
            odd["objects"][&manifest_sha] = json!(b64(&manifest));
            odd["objects"][&file_sha] = json!(b64(file));
            let (t, out) = import(&odd);
            out.expect_code(2);
            assert!(out.stderr.contains(said), "{out}");
            assert!(
                files_with_suffix(&t.path().join("store").join("runs"), ".jsonl").is_empty(),
                "nothing was imported"
            );
        }

        // An agent that is not WebAssembly.
        let fake = b"#!/bin/sh\necho not an agent\n";
        let fake_sha = sha256_hex(fake);
        let mut not_wasm = with_header(&doc, |h| h["agent_sha256"] = json!(fake_sha));
        not_wasm["objects"][&fake_sha] = json!(b64(fake));
        let (t, out) = import(&not_wasm);
        out.expect_code(2);
        assert!(out.stderr.contains("WebAssembly"), "{out}");
        assert!(
            files_with_suffix(&t.path().join("store").join("runs"), ".jsonl").is_empty(),
            "nothing was imported"
        );
    }

    /// A run id dated after today is refused: gc reads a run's age from
    /// its id, and one re-dated to 2099 was never old enough to remove.
    #[test]
    fn a_run_id_dated_after_today_is_refused() {
        let (_src, mut doc, _) = exported();
        doc["run"] = json!("20991231-235959-deadbeef");
        let (t, out) = import(&doc);
        out.expect_code(2);
        assert!(
            out.stderr
                .contains("run id `20991231-235959-deadbeef` is dated after today"),
            "{out}"
        );
        assert!(
            !t.path()
                .join("store/runs/20991231-235959-deadbeef.jsonl")
                .exists()
        );
    }

    /// Objects an export carries that its run does not name are neither
    /// decoded nor stored: thousands of small frames that each decode to
    /// hundreds of MiB filled the memory, and the store kept them all.
    #[test]
    fn objects_the_run_does_not_name_are_neither_decoded_nor_stored() {
        let (_src, doc, _) = exported();
        let mut padded = doc.clone();
        let extra: Vec<String> = (0..3u8)
            .map(|i| {
                let bytes = vec![i; 64];
                let sha = sha256_hex(&bytes);
                padded["objects"][&sha] = json!(b64(&bytes));
                sha
            })
            .collect();
        // One that would not even decode to its name.
        padded["objects"]["ab".repeat(32)] = json!(b64(b"not what its name says"));
        let (target, out) = import(&padded);
        out.expect_code(0);
        let objects = target.path().join("store").join("objects");
        for sha in extra.iter().chain([&"ab".repeat(32)]) {
            assert!(!objects.join(sha).exists(), "{sha} was stored");
        }
        assert!(
            std::fs::read_dir(&objects).unwrap().count() > 0,
            "the run's were"
        );
    }

    #[test]
    fn re_importing_repairs_a_torn_object() {
        let (_src, doc, id) = exported();
        let (target, out) = import(&doc);
        out.expect_code(0);
        let store = target.path().join("store");
        let agent_sha = {
            let header: Value =
                serde_json::from_str(doc["bundle"].as_str().unwrap().lines().next().unwrap())
                    .unwrap();
            header["header"]["agent_sha256"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let object = store.join("objects").join(&agent_sha);
        let whole = std::fs::read(&object).unwrap();
        // What an import killed mid-write used to leave.
        std::fs::write(&object, &whole[..whole.len() * 3 / 4]).unwrap();
        let file = target.path().join("in.json");
        worldline(&store, [os("import"), file.as_os_str()]).expect_code(0);
        assert_eq!(std::fs::read(&object).unwrap(), whole, "repaired");
        worldline(&store, [os("replay"), os(&id)]).expect_code(0);
    }

    #[test]
    fn bundles_without_a_header_are_incomplete_runs_not_drift() {
        let store = temp_dir();
        run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
        let runs = store.path().join("runs");
        std::fs::write(runs.join("20260101-000000-empty000.jsonl"), b"").unwrap();
        std::fs::write(
            runs.join("20260101-000000-torn0000.jsonl"),
            br#"{"header":{"agent_sha256":"ab"#,
        )
        .unwrap();
        let verify = worldline(store.path(), [os("verify"), os("--json")]);
        verify.expect_code(0);
        let doc = verify.json();
        assert_eq!(doc["incomplete"], 2, "{verify}");
        assert_eq!(doc["unreadable"], 0, "{verify}");
        assert_eq!(doc["drift_rate"], 0.0, "{verify}");
        let text = worldline(store.path(), [os("verify")]);
        text.expect_code(0);
        assert!(text.stdout.contains("incomplete"), "{text}");
    }

    /// Run worldline with files limited to `max_bytes` (as on a full disk:
    /// writes past it fail with "File too large"; worldline ignores the
    /// SIGXFSZ that would end it, as a shell's `ulimit -f` leaves it).
    fn with_file_limit(max_bytes: u64, store: &Path, args: &[&OsStr]) -> CliOutput {
        let mut cmd = crate::common::cli();
        cmd.args(args).arg("--store").arg(store);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
                let limit = libc::rlimit {
                    rlim_cur: max_bytes,
                    rlim_max: max_bytes,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        CliOutput::of(cmd.output().expect("starting worldline"))
    }

    #[test]
    fn a_full_disk_is_an_error_naming_the_cause_not_a_failed_suite() {
        let store = temp_dir();
        // Agent, case, world and compiled code in place; then the disk fills.
        run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
        let suite = [case("hostile-ok"), case("hostile-flood")];
        let agent = hostile();
        let mut args = vec![os("test")];
        args.extend(suite.iter().map(|c| c.as_os_str()));
        args.extend([os("--agent"), agent.as_os_str()]);
        let full = with_file_limit(700, store.path(), &args);
        full.expect_code(2);
        assert!(!full.stdout.contains("FAIL"), "{full}");
        assert!(
            full.stderr.contains("cannot write into the store"),
            "{full}"
        );
        assert!(full.stderr.contains("File too large"), "{full}");
        // What the full disk left is readable: incomplete runs, no drift.
        let verify = worldline(store.path(), [os("verify"), os("--json")]);
        verify.expect_code(0);
    }

    /// `fuzz` on a full disk reports the runs it made, then the store's
    /// error naming the file, exit 2, its worker's error too (a worker
    /// that could not keep the agent ended unsaid, exit 4, "a fuzz worker
    /// ended before its runs were done"), and so does a report the store
    /// cannot keep (a bare "No space left on device", exit 4).
    #[test]
    fn fuzz_on_a_full_disk_reports_the_runs_it_made() {
        let store = temp_dir();
        let case = workspace_root().join("cases/incident/fuzz-stale-deploys.toml");
        let (agent, worlds) = (guest("naive-agent"), workspace_root().join("worlds"));
        let args = |runs: &'static str| {
            vec![
                os("fuzz"),
                case.as_os_str(),
                os("--agent"),
                agent.as_os_str(),
                os("--worlds"),
                worlds.as_os_str(),
                os("--runs"),
                os(runs),
                os("--jobs"),
                os("2"),
                os("--json"),
            ]
        };
        // Agent, case, world and compiled code in place; then the disk fills.
        let first = worldline(store.path(), args("2"));
        assert!([0, 1].contains(&first.code), "{first}");
        for limit in [1_500, 6_000] {
            let full = with_file_limit(limit, store.path(), &args("20"));
            full.expect_code(2);
            let doc = full.json();
            assert!(doc["summary"]["runs"].is_u64(), "{full}");
            assert_eq!(doc["store_failed"], true, "{full}");
            assert_eq!(doc["error"]["kind"], "input", "{full}");
            let file = doc["error"]["file"].as_str().unwrap_or_default();
            assert!(Path::new(file).starts_with(store.path()), "{full}");
        }
    }

    #[test]
    fn verify_reads_a_store_whose_worlds_folder_cannot_be_written() {
        let store = temp_dir();
        run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
        let worlds = store.path().join("worlds");
        let _ = std::fs::remove_dir_all(&worlds);
        // A folder not even root can create files in.
        std::os::unix::fs::symlink("/proc/self/fdinfo", &worlds).unwrap();
        let verify = worldline(store.path(), [os("verify"), os("--json")]);
        verify.expect_code(0);
        assert_eq!(verify.json()["identical"], 1, "{verify}");
    }

    /// One of the store's own folders made a file (or its `gc.lock` a
    /// folder) is named as the store opens, exit 2: `runs`, `gc` and
    /// `fuzz` met it as a bare "Not a directory" or "File exists", exit 4.
    #[test]
    fn a_part_of_the_store_of_the_wrong_type_is_named() {
        let store = temp_dir();
        run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
        for (part, folder) in [("pins", false), ("worlds", false), ("gc.lock", true)] {
            let path = store.path().join(part);
            let _ = std::fs::remove_dir_all(&path);
            let _ = std::fs::remove_file(&path);
            match folder {
                true => std::fs::create_dir(&path).unwrap(),
                false => std::fs::write(&path, b"x").unwrap(),
            }
            for command in ["runs", "gc"] {
                let out = worldline(store.path(), [os(command), os("--json")]);
                out.expect_code(2);
                assert_eq!(
                    out.json()["error"]["file"],
                    path.display().to_string(),
                    "{out}"
                );
            }
            let _ = std::fs::remove_dir_all(&path);
            let _ = std::fs::remove_file(&path);
        }
        worldline(store.path(), [os("gc")]).expect_code(0);
    }

    /// A store named through links that loop is said to be so: it was "a
    /// link to nothing" to a recording command, and to `runs` or `verify`
    /// a path that "does not exist".
    #[test]
    fn a_store_through_links_that_loop_is_said_to_be() {
        let dir = temp_dir();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        for store in [a.clone(), a.join("store")] {
            for command in ["runs", "gc"] {
                let out = worldline(&store, [os(command)]);
                out.expect_code(2);
                assert!(out.stderr.contains("lead back to themselves"), "{out}");
            }
            let run = run_json(&store, &case("hostile-ok"), &hostile());
            run.expect_code(2);
            assert!(run.stderr.contains("lead back to themselves"), "{run}");
        }
    }

    #[test]
    fn a_store_path_that_is_a_file_is_an_input_error() {
        let dir = temp_dir();
        let file = dir.path().join("not-a-store");
        std::fs::write(&file, b"x").unwrap();
        let out = worldline(&file, [os("runs")]);
        out.expect_code(2);
        assert!(out.stderr.contains("cannot be used as a store"), "{out}");
        let json = worldline(&file, [os("runs"), os("--json")]);
        json.expect_code(2);
        assert_eq!(json.json()["error"]["kind"], "input", "{json}");
    }

    #[test]
    fn test_of_a_folder_skips_the_store_inside_it() {
        let dir = temp_dir();
        let cases = dir.path().join("cases");
        std::fs::create_dir_all(&cases).unwrap();
        std::fs::copy(case("hostile-ok"), cases.join("ok.toml")).unwrap();
        let store = dir.path().join(".worldline");
        let (agent, worlds) = (hostile(), worlds_dir());
        let args = [
            os("test"),
            dir.path().as_os_str(),
            os("--agent"),
            agent.as_os_str(),
            os("--worlds"),
            worlds.as_os_str(),
            os("--json"),
        ];
        worldline(&store, args).expect_code(0);
        // The store now holds worlds/<hash>/world.toml; a second walk of the
        // same folder must not take it for a case.
        let again = worldline(&store, args);
        again.expect_code(0);
        assert_eq!(again.json()["total"], 1, "{again}");
    }
}

/// A command that reads or tends a store makes none where a mistyped
/// `--store` points (`gc` "removed 0 runs" from an empty store it made
/// there, and `runs` then listed it without complaint); a bundle named by
/// its path while `--store` names no store is read with the store it lies
/// in (it was an "object missing" error, and an empty `.worldline/` made
/// in the working folder); `pin` takes a run id, not a path.
#[test]
fn reading_a_store_makes_none_and_a_bundle_is_read_with_its_own_store() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "demo", &demo_case(3));
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds_dir());
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let bundle = common::bundle_in(&store, &id);
    let bundle = bundle.to_str().unwrap();
    let typo = dir.path().join("typo");
    let tending = [
        vec!["gc"],
        vec!["gc", "--dry-run"],
        vec!["pin", id.as_str()],
        vec!["unpin", id.as_str()],
        vec!["retention"],
    ];
    let reading = [
        vec!["history", id.as_str()],
        vec!["show", id.as_str(), "--at", "0"],
        vec!["replay", id.as_str()],
    ];
    for args in tending.iter().chain(&reading) {
        let out = worldline(&typo, args);
        out.expect_code(2);
        assert!(out.stderr.contains("no store is there"), "{args:?}: {out}");
        assert!(
            !typo.exists(),
            "{args:?} made a store at {}",
            typo.display()
        );
    }
    // A folder that is there but is no store is refused alike, and left
    // as it was (`gc --dry-run` and `retention` made a store in it).
    let folder = dir.path().join("notes");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("keep.txt"), "keep\n").unwrap();
    let before = common::bench::files(&folder);
    for args in &tending {
        let out = worldline(&folder, args);
        out.expect_code(2);
        assert!(out.stderr.contains("is not a store"), "{args:?}: {out}");
        assert_eq!(common::bench::files(&folder), before, "{args:?}: {out}");
        assert!(!folder.join("runs").exists(), "{args:?} made a store");
    }
    // `ui` too: it made the store's folders there and served an empty list.
    let mut ui = common::cli()
        .args(["ui", "--port", "0", "--store"])
        .arg(&folder)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = ui.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed().as_secs() > 10 {
            let _ = ui.kill();
            let _ = ui.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(2),
        "ui served a folder that is no store"
    );
    assert_eq!(common::bench::files(&folder), before);
    for args in [
        vec!["history", bundle],
        vec!["show", bundle, "--at", "0"],
        vec!["replay", bundle],
    ] {
        let out = worldline(&typo, &args);
        out.expect_code(0);
        assert!(
            !typo.exists(),
            "{args:?} made a store at {}",
            typo.display()
        );
    }
    // Without --store, from a folder with no store and from one with a
    // store of its own (`.worldline/`), a bundle's path is read with the
    // store it lies in: `export` made `.worldline/` in the first, and
    // both then failed on an "object missing".
    for own in [false, true] {
        let elsewhere = dir.path().join(format!("elsewhere-{own}"));
        std::fs::create_dir_all(&elsewhere).unwrap();
        if own {
            std::fs::create_dir_all(elsewhere.join(".worldline/runs")).unwrap();
            std::fs::create_dir_all(elsewhere.join(".worldline/objects")).unwrap();
        }
        for args in [
            vec!["export", bundle, "-o", "x.json"],
            vec!["diff", bundle, bundle],
            vec!["replay", bundle],
            vec!["case", "from-run", bundle, "-o", "c.toml"],
        ] {
            let out = common::worldline_at(&elsewhere, &args, &[]);
            out.expect_code(0);
            assert_eq!(
                elsewhere.join(".worldline").exists(),
                own,
                "{args:?} made a store in the working folder"
            );
        }
    }
    for command in ["pin", "unpin"] {
        let out = worldline(&store, [command, bundle]);
        out.expect_code(2);
        assert!(out.stderr.contains("not a path"), "{command}: {out}");
    }
    // `unpin` of any path said "passwd was not pinned", exit 0.
    let out = worldline(&store, ["unpin", "/etc/passwd"]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("unpin names a run of the store by its id"),
        "{out}"
    );
    // `verify` of a run the store does not hold is an input error, not a
    // run counted unreadable (100% drift, exit 1); a run named twice is
    // checked once.
    let out = worldline(&store, ["verify", "nope"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no run `nope`"), "{out}");
    let out = worldline(
        &store,
        ["verify", id.as_str(), id.as_str(), bundle, "--json"],
    );
    out.expect_code(0);
    assert_eq!(out.json()["replayed"], 1, "{out}");
    // Bundles of two stores: `diff` reads each with its own (it read the
    // second with the first's, "object missing"); `verify` of another
    // store's bundle uses it, and of two stores' bundles says so (it
    // counted the second unreadable, drift 50%).
    let other = dir.path().join("other");
    let case = write_case(dir.path(), "other", &demo_case(4));
    let ran = common::run_in(&other, &case, &guest("caller-agent"), &worlds_dir());
    let second = ran.json()["bundle"].as_str().unwrap().to_string();
    let out = worldline(&store, ["diff", bundle, &second, "--json"]);
    assert!(out.code == 0 || out.code == 1, "{out}");
    assert!(!out.stderr.contains("missing"), "{out}");
    worldline(&store, ["verify", &second]).expect_code(0);
    let out = worldline(&store, ["verify", bundle, &second]);
    out.expect_code(2);
    assert!(out.stderr.contains("of 2 stores"), "{out}");
}

/// `dir` made read-only for this process while the guard lives: a
/// read-only bind mount for root (whom permissions do not stop), the
/// write bits taken away for anyone else.
struct ReadOnly(std::path::PathBuf, bool);

impl ReadOnly {
    fn make(dir: &Path) -> ReadOnly {
        use std::os::unix::fs::PermissionsExt as _;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
            return ReadOnly(dir.to_path_buf(), false);
        }
        let mount = |args: &[&str]| {
            let ok = std::process::Command::new("mount")
                .args(args)
                .arg(dir)
                .arg(dir)
                .status()
                .is_ok_and(|s| s.success());
            assert!(
                ok,
                "mount {args:?} {}: root needs it to make a read-only store",
                dir.display()
            );
        };
        mount(&["--bind"]);
        let guard = ReadOnly(dir.to_path_buf(), true);
        mount(&["-o", "remount,bind,ro"]);
        guard
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt as _;
        if self.1 {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        } else {
            let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
        }
    }
}

/// A store this process cannot write (a read-only mount, another user's
/// folder) is read: `runs` lists every bundle, the one its index on disk
/// lacks included, from an index made in memory; `history` and `verify`
/// work. A command that writes into it is exit 2 naming the store, and
/// nothing in it changes. Before, `runs` was exit 4 with SQLite's "attempt
/// to write a readonly database", and `gc` and `pin` exit 4 with the
/// system's words.
#[test]
fn a_read_only_store_is_read_and_a_command_that_writes_is_refused() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    // A bundle the index on disk does not have (copied in from outside).
    let ids: Vec<String> = common::files_with_suffix(&store.join("runs"), ".jsonl")
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ids.len(), 4);
    let (stem, last) = ids[0].split_at(ids[0].len() - 1);
    let copy = format!("{stem}{}", if last == "0" { '1' } else { '0' });
    std::fs::copy(
        common::bundle_in(&store, &ids[0]),
        common::bundle_in(&store, &copy),
    )
    .unwrap();
    let before = tree_of(&store);
    let _ro = ReadOnly::make(&store);
    let runs = worldline(&store, ["runs", "--json"]);
    runs.expect_code(0);
    let listed = runs.json().as_array().unwrap().len();
    assert_eq!(listed, 5, "{runs}");
    assert!(runs.stderr.contains("read-only"), "{runs}");
    worldline(&store, ["history", &ids[1]]).expect_code(0);
    worldline(&store, ["verify"]).expect_code(0);
    let other = dir.path().join("other");
    let other_bundle = {
        demo_suite(&demo_cases(&dir.path().join("more")), &other, "1");
        other.to_str().unwrap().to_string()
    };
    for args in [
        vec!["gc"],
        vec!["gc", "--dry-run"],
        vec!["pin", ids[1].as_str()],
        vec!["unpin", ids[1].as_str()],
        vec!["index"],
        vec!["import", other_bundle.as_str()],
    ] {
        let out = worldline(&store, &args);
        out.expect_code(2);
        assert!(
            out.stderr.contains("cannot be written here") && out.stderr.contains(s(&store)),
            "{args:?}: {out}"
        );
    }
    drop(_ro);
    assert_eq!(tree_of(&store), before, "the read-only store changed");
}

/// A read-only copy of a store's `runs/` and `objects/` alone, without
/// the `cache/` a store's first command makes, is read as the whole store
/// is: every reader refused it ("cannot be used as a store (…/cache:
/// Permission denied)").
#[test]
fn a_read_only_store_without_its_cache_folder_is_read() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "1");
    let id = a_run_of(&store);
    std::fs::remove_dir_all(store.join("cache")).unwrap();
    let before = tree_of(&store);
    let _ro = ReadOnly::make(&store);
    let runs = worldline(&store, ["runs", "--json"]);
    runs.expect_code(0);
    assert_eq!(runs.json().as_array().unwrap().len(), 4, "{runs}");
    for args in [
        vec!["history", id.as_str()],
        vec!["show", id.as_str(), "--at", "1"],
        vec!["verify"],
    ] {
        worldline(&store, &args).expect_code(0);
    }
    drop(_ro);
    assert_eq!(tree_of(&store), before, "the read-only store changed");
}

/// Every file under `dir` with its size and modification time.
fn tree_of(dir: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    let mut all = Vec::new();
    let mut next = vec![dir.to_path_buf()];
    while let Some(d) = next.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                next.push(e.path());
            } else {
                all.push((
                    e.path().display().to_string(),
                    meta.len(),
                    meta.modified().unwrap(),
                ));
            }
        }
    }
    all.sort();
    all
}

#[test]
fn a_store_is_never_made_inside_another_s_folders_and_gc_keeps_what_it_did_not_write() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    // Once a second store made there: `runs` listed a broken run, an
    // export into the outer runs/ was let through, and the outer store's
    // gc removed one made in objects/, its runs with it.
    for inner in ["runs", "objects", "cache"] {
        let inner = store.join(inner);
        let out = worldline(
            &inner,
            ["test", s(&cases), "--agent", s(&guest("caller-agent"))],
        );
        out.expect_code(2);
        assert!(
            out.stderr.contains("which worldline keeps for itself")
                && out
                    .stderr
                    .contains(&format!("pass --store {}", store.display())),
            "{out}"
        );
        assert!(!inner.join("runs").exists() && !inner.join("objects").exists());
    }
    assert_eq!(bundles(&store), 4);
    // What gc did not write in objects/ and worlds/ it leaves, however old.
    let stray = [store.join("objects/notes"), store.join("worlds/mine")];
    for d in &stray {
        std::fs::create_dir_all(d.join("runs")).unwrap();
        std::fs::write(d.join("runs/kept.jsonl"), "mine").unwrap();
    }
    std::fs::write(store.join("objects/README"), "mine").unwrap();
    for d in ["objects", "worlds"] {
        age(&store.join(d), Duration::from_secs(2 * 3600));
    }
    let out = worldline(&store, ["gc", "--keep-passed", "0", "--json"]);
    out.expect_code(0);
    assert!(
        out.json()["objects"]["bytes"].as_u64().unwrap() > 0,
        "{out}"
    );
    for d in &stray {
        assert!(
            d.join("runs/kept.jsonl").is_file(),
            "{}: {out}",
            d.display()
        );
    }
    assert!(store.join("objects/README").is_file());
}

/// A `--store` that is an address of another scheme than PostgreSQL's (a
/// typo: `postgress://`, `pg://`) is refused naming the scheme only: it
/// was a folder named after the address, password and all, which every
/// run's `bundle:` line then printed, and nothing reached the shared store.
#[test]
fn a_mistyped_store_address_is_refused_without_its_password() {
    let dir = temp_dir();
    let case = demo_cases(dir.path()).join("c1.toml");
    let (agent, worlds) = (guest("caller-agent"), worlds_dir());
    for address in [
        "postgress://ana:s3cret-pw@db.internal/evals",
        "pg://ana:s3cret-pw@db/x",
    ] {
        for args in [
            vec!["runs", "--store", address],
            vec![
                "run",
                s(&case),
                "--agent",
                s(&agent),
                "--worlds",
                s(&worlds),
                "--store",
                address,
            ],
        ] {
            let out = common::CliOutput::of(
                common::cli()
                    .args(&args)
                    .current_dir(dir.path())
                    .output()
                    .unwrap(),
            );
            out.expect_code(2);
            assert!(
                out.stderr.contains("is no store address") && !out.stderr.contains("s3cret"),
                "{args:?}: {out}"
            );
        }
    }
    let made: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("pg"))
        .collect();
    assert!(made.is_empty(), "{made:?}");
}

/// `gc --cache-days 0` leaves a compile's lock file that a compile holds
/// (removed, the next process to miss the same entry locked a new file and
/// compiled beside it); an old lock no one holds goes as before.
#[test]
fn gc_keeps_a_compile_lock_while_it_is_held() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let engine = store.join("cache").join("engine");
    std::fs::create_dir_all(&engine).unwrap();
    std::fs::create_dir_all(store.join("runs")).unwrap();
    let (held, free) = (engine.join("a1.lock"), engine.join("b2.lock"));
    for f in [&held, &free] {
        std::fs::write(f, "").unwrap();
    }
    age(&engine, Duration::from_secs(3 * 86_400));
    let lock = std::fs::File::open(&held).unwrap();
    lock.lock().unwrap();
    let gc = worldline(&store, ["gc", "--cache-days", "0", "--json"]);
    gc.expect_code(0);
    assert!(held.exists(), "the held lock was removed: {gc}");
    assert!(!free.exists(), "the old lock no one holds stayed: {gc}");
    let removed = gc.json()["cache"]["items"].to_string();
    assert!(
        removed.contains("b2.lock") && !removed.contains("a1.lock"),
        "{gc}"
    );
    drop(lock);
    // The cache's own `objects/` entries are listed by their path in the
    // store, as its other entries are (one was listed by its bare hash, as
    // if the store's agent object went).
    std::fs::remove_file(&held).unwrap();
    let objects = store.join("cache").join("objects");
    std::fs::create_dir_all(&objects).unwrap();
    std::fs::write(objects.join("ab12"), "x").unwrap();
    age(&objects, Duration::from_secs(3 * 86_400));
    let gc = worldline(&store, ["gc", "--cache-days", "0", "--json"]);
    gc.expect_code(0);
    assert_eq!(
        gc.json()["cache"]["items"],
        serde_json::json!(["cache/objects/ab12"]),
        "{gc}"
    );
}

/// A `--store` that is a link is the folder it leads to: a link to a
/// folder without `runs/` is no store to report on (it made an empty one
/// there and verified it), a link into another store's folders is that
/// store's own (a whole store was made inside its `runs/`), and a link to
/// nothing is said to be one.
#[test]
fn a_store_named_through_a_link_is_held_to_the_folder_it_leads_to() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    let link = |name: &str, to: &Path| {
        let l = dir.path().join(name);
        std::os::unix::fs::symlink(to, &l).unwrap();
        l
    };
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let to_data = link("to-data", &data);
    let verify = worldline(&to_data, ["verify"]);
    verify.expect_code(2);
    assert!(verify.stderr.contains("has no runs/ folder"), "{verify}");
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0, "{verify}");

    let to_runs = link("to-runs", &store.join("runs"));
    let into = worldline(
        &to_runs,
        ["test", s(&cases), "--agent", s(&guest("caller-agent"))],
    );
    into.expect_code(2);
    assert!(
        into.stderr.contains("which worldline keeps for itself"),
        "{into}"
    );
    let id = a_run_of(&store);
    let export = worldline(&store, ["export", &id, "-o", s(&to_runs.join("x.jsonl"))]);
    export.expect_code(2);
    assert_eq!(bundles(&store), 4, "{into}{export}");
    assert!(!store.join("runs/runs").exists() && !store.join("runs/x.jsonl").exists());

    let nowhere = link("nowhere", &dir.path().join("gone"));
    let runs = worldline(&nowhere, ["runs"]);
    runs.expect_code(2);
    assert!(runs.stderr.contains("is a link to nothing"), "{runs}");
    let run = worldline(
        &nowhere,
        ["test", s(&cases), "--agent", s(&guest("caller-agent"))],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("is a link to nothing"), "{run}");
}

/// On a full disk (a tmpfs in a mount namespace of the test's own) the
/// commands that read a store still do, reading its index in memory, and
/// `gc`, which frees its space, collects; what must write the index is
/// exit 2 naming the store and what to do. All were exit 4 with SQLite's
/// "database or disk is full" alone, so the only way out was `rm`.
#[test]
fn a_store_on_a_full_disk_is_read_and_collected() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    let (out, said) = in_a_small_tmpfs(
        dir.path(),
        &store,
        &[],
        r#"rm -f "$M"/st/index.sqlite*
dd if=/dev/zero of="$M/fill" bs=4096 2>/dev/null
for c in "runs" "index --rebuild" "index --check" "gc --keep-passed 0" "runs"; do
  echo "=== $c"; "$W" $c --store "$M/st" --json; echo "=== exit $?"
done"#,
    );
    let codes: Vec<(&str, i32)> = said
        .iter()
        .map(|(c, code, _)| (c.as_str(), *code))
        .collect();
    assert_eq!(
        codes,
        [
            ("runs", 0),
            ("index --rebuild", 2),
            ("index --check", 2),
            ("gc --keep-passed 0", 0),
            ("runs", 0)
        ],
        "{out}"
    );
    let listed = |text: &str| -> usize {
        serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.as_array().map(Vec::len))
            .unwrap_or(usize::MAX)
    };
    assert_eq!(listed(&said[0].2), 4, "{out}");
    assert!(said[1].2.contains("cannot write into the store"), "{out}");
    assert!(said[1].2.contains("free some space"), "{out}");
    assert_eq!(listed(&said[4].2), 0, "{out}");
}

/// `script` (sh) run with a copy of `store` at `$M/st` on a 4 MB tmpfs
/// mounted at `$M` (in a mount namespace of its own, gone with it),
/// `worldline` as `$W` and `env` set, in `dir`; its output, and each
/// command it marks (`=== NAME` before, `=== exit $?` after) with its
/// exit code and output.
#[allow(clippy::type_complexity)]
fn in_a_small_tmpfs(
    dir: &Path,
    store: &Path,
    env: &[(&str, &str)],
    script: &str,
) -> (common::CliOutput, Vec<(String, i32, String)>) {
    let mnt = dir.join("small");
    std::fs::create_dir(&mnt).unwrap();
    let base = common::cli();
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "sh", "-c"]);
    cmd.arg(format!(
        "mount -t tmpfs -o size=4M tmpfs \"$M\" || exit 90\n\
         cp -r \"$SRC\" \"$M/st\" || exit 91\n\
         echo '=== mounted'\n{script}"
    ));
    for (k, v) in base.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.env("W", base.get_program())
        .env("M", &mnt)
        .env("SRC", store)
        .envs(env.iter().copied())
        .current_dir(dir);
    let out = common::CliOutput::of(cmd.output().expect("starting unshare"));
    assert!(
        out.stdout.contains("=== mounted"),
        "the test mounts a tmpfs, which needs root (tests/run runs as root): {out}"
    );
    let mut said: Vec<(String, i32, String)> = Vec::new();
    for line in out
        .stdout
        .lines()
        .skip_while(|l| *l != "=== mounted")
        .skip(1)
    {
        match (line.strip_prefix("=== exit "), line.strip_prefix("=== ")) {
            (Some(code), _) => said.last_mut().unwrap().1 = code.parse().unwrap(),
            (None, Some(cmd)) => said.push((cmd.to_string(), -1, String::new())),
            (None, None) => {
                let text = &mut said.last_mut().unwrap().2;
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    (out, said)
}

/// `pin` on a full disk is exit 2 saying to free some space, and a pinned
/// run keeps its note: the pin was truncated and written in place (its
/// old note lost to a cut-off new one) and the error exit 4.
#[test]
fn a_pin_on_a_full_disk_keeps_the_note_it_had() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "1");
    let id = a_run_of(&store);
    let long = "y".repeat(6000);
    let (out, said) = in_a_small_tmpfs(
        dir.path(),
        &store,
        &[("ID", id.as_str()), ("LONG", long.as_str())],
        r#"echo "=== pin"; "$W" pin "$ID" --note first --store "$M/st"; echo "=== exit $?"
dd if=/dev/zero of="$M/fill" bs=4096 2>/dev/null
echo "=== pin again"; "$W" pin "$ID" --note "$LONG" --store "$M/st" 2>&1; echo "=== exit $?"
echo "=== note"; cat "$M/st/pins/$ID"; echo; echo "=== exit $?""#,
    );
    let codes: Vec<(&str, i32)> = said
        .iter()
        .map(|(c, code, _)| (c.as_str(), *code))
        .collect();
    assert_eq!(codes, [("pin", 0), ("pin again", 2), ("note", 0)], "{out}");
    assert!(said[1].2.contains("free some space"), "{out}");
    assert_eq!(said[2].2.trim(), "first", "{out}");
}

/// A folder named like a bundle in `runs/` is left in place, named, and
/// the pass goes on to remove the rest: it stopped every pass with exit 4
/// ("removing …: Is a directory"), and objects were never swept. What
/// killed writers left in `objects/` and `worlds/` is swept (a half
/// world stayed there for ever), and a removed run's re-grades go with it.
#[test]
fn gc_leaves_a_folder_named_like_a_bundle_and_goes_on() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "1");
    // A re-grade (`grade --rejudge`) of a run the pass removes.
    let grades = store.join("grades").join(a_run_of(&store));
    std::fs::create_dir_all(&grades).unwrap();
    std::fs::write(grades.join("1.json"), "{}").unwrap();
    let folder = store.join("runs").join("notes.jsonl");
    std::fs::create_dir(&folder).unwrap();
    // What writers killed long ago left (their process ids are gone).
    let half_world = store
        .join("worlds")
        .join(format!("{}.tmp99999999-0", "ab".repeat(32)));
    std::fs::create_dir_all(half_world.join("files")).unwrap();
    let object = store
        .join("objects")
        .join(format!("{}.tmp99999998", "cd".repeat(32)));
    std::fs::write(&object, b"torn").unwrap();
    let all_runs = ["--keep-passed", "0", "--keep-incomplete", "0", "--json"];
    for pass in 0..2 {
        let mut args = vec!["gc"];
        args.extend(all_runs);
        let gc = worldline(&store, &args);
        gc.expect_code(0);
        assert!(
            gc.stderr
                .contains("notes.jsonl is a folder, not a run's bundle"),
            "pass {pass}: {gc}"
        );
        let removed = gc.json()["runs"]["count"].as_u64().unwrap();
        assert_eq!(removed, if pass == 0 { 4 } else { 0 }, "pass {pass}: {gc}");
    }
    assert!(folder.is_dir());
    assert_eq!(bundles(&store), 1, "the folder alone is left");
    assert!(
        !half_world.exists() && !object.exists(),
        "left by killed writers"
    );
    assert!(!grades.exists(), "the re-grades of a removed run");
}

/// `gc --dry-run` plans what `gc` does: a folder named like a bundle was
/// counted as a run the dry run would remove, with no warning, while the
/// pass itself left it in place.
#[test]
fn gc_dry_run_leaves_a_folder_named_like_a_bundle_as_gc_does() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "1");
    let folder = store.join("runs").join("20261207-120000-00000000.jsonl");
    std::fs::create_dir(&folder).unwrap();
    let all_runs = ["--keep-passed", "0", "--keep-incomplete", "0", "--json"];
    let plans: Vec<_> = [true, false]
        .into_iter()
        .map(|dry| {
            let mut args = vec!["gc"];
            args.extend(dry.then_some("--dry-run"));
            args.extend(all_runs);
            let gc = worldline(&store, &args);
            gc.expect_code(0);
            assert!(
                gc.stderr
                    .contains("20261207-120000-00000000.jsonl is a folder, not a run's bundle"),
                "dry run {dry}: {gc}"
            );
            gc.json()["runs"].clone()
        })
        .collect();
    assert_eq!(plans[0], plans[1], "the dry run's plan is the pass's");
    assert_eq!(plans[1]["count"], json!(4));
    assert!(folder.is_dir());
}

/// A file in `runs/` whose name is no run id is no run for any command:
/// `.hidden.jsonl`, a copy of a bundle, was listed by `runs` as a passing
/// run made now and removed by `gc`, while `replay` said worldline did not
/// write it.
#[test]
fn a_file_in_runs_named_as_no_run_id_is_neither_listed_nor_removed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "1");
    let copy = store.join("runs").join(".hidden.jsonl");
    std::fs::copy(
        store
            .join("runs")
            .join(format!("{}.jsonl", a_run_of(&store))),
        &copy,
    )
    .unwrap();
    let runs = worldline(&store, ["runs", "--json"]);
    runs.expect_code(0);
    assert_eq!(listed(&runs).len(), 4, "{runs}");
    assert!(!runs.stdout.contains(".hidden"), "{runs}");
    let replay = worldline(&store, ["replay", ".hidden"]);
    assert!(replay.stderr.contains("not a run's bundle"), "{replay}");
    for dry in [true, false] {
        let mut args = vec!["gc", "--keep-passed", "0", "--json"];
        args.extend(dry.then_some("--dry-run"));
        let gc = worldline(&store, &args);
        gc.expect_code(0);
        assert_eq!(gc.json()["runs"]["count"], json!(4), "{gc}");
        assert!(
            gc.stderr.contains(".hidden.jsonl is not a run's bundle"),
            "dry run {dry}: {gc}"
        );
    }
    assert!(copy.is_file(), "left in place");
    let check = worldline(&store, ["index", "--check", "--json"]);
    check.expect_code(0);
    assert_eq!(check.json()["bundles"], json!(0), "{check}");
}

/// A row an older worldline indexed for a file in `runs/` whose name is
/// no run id is no run either: `gc` removed the file by it.
#[test]
fn gc_removes_no_file_an_older_index_held_as_a_run_under_no_run_id() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "1");
    let copy = store.join("runs").join(".hidden.jsonl");
    std::fs::copy(
        store
            .join("runs")
            .join(format!("{}.jsonl", a_run_of(&store))),
        &copy,
    )
    .unwrap();
    // A settled folder: the index records that it matched it.
    age(&store.join("runs"), Duration::from_secs(60));
    worldline(&store, ["runs"]).expect_code(0);
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
             c.execute('CREATE TEMP TABLE t AS SELECT * FROM runs LIMIT 1'); \
             c.execute(\"UPDATE t SET id = '.hidden'\"); \
             c.execute('INSERT INTO runs SELECT * FROM t'); c.commit(); c.close()",
        ])
        .arg(store.join("index.sqlite"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let gc = worldline(&store, ["gc", "--keep-passed", "0", "--json"]);
    gc.expect_code(0);
    assert_eq!(gc.json()["runs"]["count"], json!(4), "{gc}");
    assert!(copy.is_file(), "left in place: {gc}");
}

/// A store whose index path is longer than SQLite takes (512 bytes) is
/// used as any other: its runs were recorded, but `runs`, `index` and
/// `gc` failed for ever with SQLite's "unable to open database file"
/// (exit 4).
#[test]
fn a_store_at_a_path_longer_than_sqlite_takes_is_indexed() {
    let dir = temp_dir();
    let mut store = dir.path().join("deep");
    while store.as_os_str().len() < 530 {
        store.push("d".repeat(100));
    }
    let cases = demo_cases(dir.path());
    let (agent, worlds) = (guest("caller-agent"), worlds_dir());
    let test = worldline(
        &store,
        [
            "test",
            s(&cases),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
        ],
    );
    test.expect_code(0);
    assert!(!test.stderr.contains("run index was not updated"), "{test}");
    let runs = worldline(&store, ["runs", "--json"]);
    runs.expect_code(0);
    assert_eq!(listed(&runs).len(), 4, "{runs}");
    worldline(&store, ["index", "--rebuild"]).expect_code(0);
    let check = worldline(&store, ["index", "--check", "--json"]);
    check.expect_code(0);
    assert_eq!(check.json()["indexed"], json!(4), "{check}");
    // Named from the folder it is in: short, but SQLite makes it whole.
    let (above, name) = (store.parent().unwrap(), store.file_name().unwrap());
    std::fs::remove_file(store.join("index.sqlite")).unwrap();
    let here = common::worldline_at(above, ["runs", "--json", "--store", s(name.as_ref())], &[]);
    here.expect_code(0);
    assert_eq!(listed(&here).len(), 4, "{here}");
    let gc = worldline(&store, ["gc", "--keep-passed", "0", "--json"]);
    gc.expect_code(0);
    assert_eq!(gc.json()["runs"]["count"], json!(4), "{gc}");
    assert!(
        store.join("index.sqlite-wal").is_file(),
        "the log is beside the index"
    );
}

/// A run id names the store's run though the current folder holds a file
/// of that name (an export written with `-o ID`): it was read as that
/// file, an export `history` refused.
#[test]
fn a_run_id_names_the_store_s_run_beside_a_file_of_that_name() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "1");
    let id = a_run_of(&store);
    let here = dir.path().join("here");
    std::fs::create_dir(&here).unwrap();
    worldline(&store, ["export", &id, "-o", s(&here.join(&id))]).expect_code(0);
    let history = common::worldline_at(&here, ["history", &id, "--store", s(&store)], &[]);
    history.expect_code(0);
    assert!(history.stdout.contains(&format!("{id}.jsonl")), "{history}");
    // A path is the file it names.
    let file = common::worldline_at(
        &here,
        ["history", &format!("./{id}"), "--store", s(&store)],
        &[],
    );
    assert!(file.stderr.contains("worldline import"), "{file}");
}

/// A link to nothing in `runs/` is a broken run whose row matches it:
/// `index --check` called it stale for ever, even right after `index
/// --rebuild`, and exited 1.
#[test]
fn index_check_finds_a_dangling_link_in_runs_consistent_after_a_rebuild() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    demo_suite(&demo_cases(dir.path()), &store, "1");
    std::os::unix::fs::symlink(
        dir.path().join("nowhere"),
        store.join("runs").join("20261130-050000-dangling.jsonl"),
    )
    .unwrap();
    worldline(&store, ["index", "--rebuild"]).expect_code(0);
    let check = worldline(&store, ["index", "--check", "--json"]);
    assert_eq!(check.json()["stale"], json!([]), "{check}");
    check.expect_code(0);
}

/// `agent` with a custom section of `size` bytes of noise (which no
/// compression shrinks) that the component ignores: an agent as large as
/// a Python one.
fn padded(agent: &Path, size: usize, to: &Path) {
    let leb = |mut n: usize, out: &mut Vec<u8>| loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        out.push(if n == 0 { byte } else { byte | 0x80 });
        if n == 0 {
            break;
        }
    };
    let mut content = Vec::with_capacity(size + 16);
    leb(7, &mut content);
    content.extend(b"padding");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    content.extend((0..size).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    }));
    let mut bytes = std::fs::read(agent).unwrap();
    bytes.push(0);
    leb(content.len(), &mut bytes);
    bytes.extend(content);
    std::fs::write(to, bytes).unwrap();
}

/// An import of a store reads the agent its runs share once: each run
/// read it again from the store it was going into, decompressed and
/// hashed (a 22 MB agent cost some 50 ms a run, 20,000 runs an hour).
#[test]
fn an_import_of_a_store_reads_the_agent_its_runs_share_once() {
    let dir = temp_dir();
    let agent = dir.path().join("padded.wasm");
    padded(&guest("caller-agent"), 64 << 20, &agent);
    let cases = demo_cases(dir.path());
    let worlds = worlds_dir();
    let record = |store: &Path, cases: &Path, repeat: &str| {
        let args = [
            "test",
            s(cases),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
        ];
        let mut args = args.to_vec();
        args.extend(["--repeat", repeat]);
        worldline(store, &args).expect_code(0);
    };
    let (one, many) = (dir.path().join("one"), dir.path().join("many"));
    record(&one, &cases.join("c1.toml"), "1");
    record(&many, &cases, "5");
    assert_eq!((bundles(&one), bundles(&many)), (1, 20));
    let cpu = |from: &Path, into: &str| {
        let child = worldline_spawn(&dir.path().join(into), ["import", s(from), "--json"]);
        common::reaped_cpu(child, "import")
    };
    let (first, all) = (cpu(&one, "into-one"), cpu(&many, "into-many"));
    assert_eq!(bundles(&dir.path().join("into-many")), 20);
    // The first run brings the agent (read, compressed, checked, written);
    // the other 19 bring a bundle each.
    let rest = all.saturating_sub(first);
    assert!(
        rest < first / 2,
        "the 19 runs after the first took {rest:?} of CPU, the first {first:?}"
    );
}

/// `verify` of an export, or of a case, named as a run is exit 2 saying
/// what the file is (an export was "incomplete", exit 0; a case counted
/// as drift); a bundle cut off as it was created is still incomplete.
#[test]
fn verify_names_an_export_or_a_case_given_as_a_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    let id = a_run_of(&store);
    let exported = dir.path().join("run.wl");
    worldline(&store, ["export", &id, "-o", s(&exported)]).expect_code(0);
    let export = worldline(&store, ["verify", s(&exported), "--json"]);
    export.expect_code(2);
    assert!(
        export.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("worldline import"),
        "{export}"
    );
    let case = std::fs::read_dir(&cases)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let named_case = worldline(&store, ["verify", s(&case)]);
    named_case.expect_code(2);
    assert!(
        named_case.stderr.contains("is not a run's bundle"),
        "{named_case}"
    );
    let cut = store.join("runs").join(format!("{id}.jsonl"));
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..5]).unwrap();
    let torn = worldline(&store, ["verify", &id, "--json"]);
    torn.expect_code(0);
    assert_eq!(torn.json()["incomplete"], 1, "{torn}");
}

/// A stored object found damaged (emptied by hand) when a new run names
/// it is written again from the bytes the writer has: the new run and the
/// earlier ones replay. It was taken as there, the run passed, and no run
/// of it could be replayed or exported.
#[test]
fn a_damaged_object_a_new_run_names_is_written_again() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    let objects: Vec<std::path::PathBuf> = std::fs::read_dir(store.join("objects"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    assert!(objects.len() >= 3, "{objects:?}");
    for o in &objects {
        std::fs::write(o, b"").unwrap();
    }
    demo_suite(&cases, &store, "1");
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["identical"], 8, "{verify}");
    assert_eq!(verify.json()["unreadable"], 0, "{verify}");
}

/// `import` of what is no export (a run's bundle, an empty file, an
/// export cut short) says what the file is and what to do, and makes no
/// store at `--store` (each made an empty one and said only "not a
/// worldline export: missing field format").
#[test]
fn import_of_what_is_no_export_says_so_and_makes_no_store() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    let bundle = std::fs::read_dir(store.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let id = bundle.file_stem().unwrap().to_str().unwrap().to_string();
    let exported = dir.path().join("run.wl");
    worldline(&store, ["export", &id, "-o", s(&exported)]).expect_code(0);
    let cut = dir.path().join("cut.wl");
    let bytes = std::fs::read(&exported).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let empty = dir.path().join("empty.wl");
    std::fs::write(&empty, b"").unwrap();
    for (file, said) in [
        (&bundle, "is a run's bundle, not a worldline export"),
        (&cut, "is cut short"),
        (&empty, "is empty"),
    ] {
        let other = dir.path().join("new-store");
        let out = worldline(&other, ["import", s(file)]);
        out.expect_code(2);
        assert!(
            out.stderr.contains(said) && out.stderr.contains("export"),
            "{out}"
        );
        assert!(!other.exists(), "a refused import made a store: {out}");
    }
}

/// `import` of a large file that is no export is refused at its first
/// byte, without reading it: a 1 GiB sparse file was read whole (a 2 GB
/// one took 2 GB of memory and 10 s) before "not a worldline export:
/// expected value at line 1 column 1". An export with a UTF-8 byte-order
/// mark in front is told so ("expected value" named nothing).
#[test]
fn import_refuses_what_begins_as_no_export_before_reading_it() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    let id = worldline(&store, ["runs", "--json"]).json()[0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let exported = dir.path().join("run.wl");
    worldline(&store, ["export", &id, "-o", s(&exported)]).expect_code(0);
    let bom = dir.path().join("bom.wl");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(std::fs::read(&exported).unwrap());
    std::fs::write(&bom, bytes).unwrap();
    let sparse = dir.path().join("big.json");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let text = dir.path().join("notes.json");
    std::fs::write(&text, "\n  [1, 2]\n").unwrap();
    for (file, said) in [
        (
            &sparse,
            ":1:1: not a worldline export: an export is one JSON object, beginning with `{`, and this begins with the byte 0x00",
        ),
        (
            &text,
            ":2:3: not a worldline export: an export is one JSON object, beginning with `{`, and this begins with `[`",
        ),
        (&bom, ":1:1: begins with a UTF-8 byte-order mark"),
    ] {
        let other = dir.path().join("new-store");
        let out = worldline(&other, ["import", s(file)]);
        out.expect_code(2);
        assert!(out.stderr.contains(said), "{out}");
        assert!(!other.exists(), "a refused import made a store: {out}");
    }
}

/// A world whose `[files]` folder is empty is copied into the store
/// without it (a copy holds files, not folders): its runs are shown,
/// replayed and verified. Each was unreadable ("No such file or
/// directory"), though `check` and `run` took the world.
#[test]
fn a_run_of_a_world_with_an_empty_files_folder_replays() {
    let dir = temp_dir();
    let worlds = common::write_world(
        dir.path(),
        "empty-files",
        "name = \"empty-files\"\nversion = 1\n[tables.t]\nkey = \"id\"\n[files]\ndir = \"files\"\n",
        &[],
    );
    std::fs::create_dir_all(worlds.join("empty-files/v1/files")).unwrap();
    let case = common::write_case(
        dir.path(),
        "c",
        "world = \"empty-files@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { calls = [] }\n",
    );
    let store = dir.path().join("store");
    let out = common::run_in(&store, &case, &guest("caller-agent"), &worlds);
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(&store, &id);
    let verify = worldline(&store, ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["unreadable"], 0, "{verify}");
}

/// A `run` or `test` refused for its input makes no store at `--store`
/// (a mistyped one was left as an empty store, which `verify` passed); a
/// store that was there stays.
#[test]
fn a_refused_run_or_test_leaves_no_store_behind() {
    let dir = temp_dir();
    let cases = demo_cases(dir.path());
    let fresh = dir.path().join("typo");
    let agent = guest("caller-agent");
    let worlds = worlds_dir();
    let none = worldline(
        &fresh,
        [
            "test",
            s(&cases),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "-k",
            "nomatchzzz",
        ],
    );
    none.expect_code(2);
    assert!(!fresh.exists(), "{none}");
    let case = std::fs::read_dir(&cases)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let no_agent = worldline(&fresh, ["run", s(&case)]);
    no_agent.expect_code(2);
    assert!(!fresh.exists(), "{no_agent}");
    let verify = worldline(&fresh, ["verify"]);
    verify.expect_code(2);

    let store = dir.path().join("store");
    demo_suite(&cases, &store, "1");
    worldline(&store, ["run", s(&case)]).expect_code(2);
    assert_eq!(bundles(&store), 4);
    // An event past the run's end is the flag's mistake (the bundle was
    // named), as `fork --at` says.
    let id = a_run_of(&store);
    let past = worldline(&store, ["show", &id, "--at", "99", "--json"]);
    past.expect_code(2);
    assert_eq!(past.json()["error"]["file"], "--at", "{past}");
    // So is a negative one: it was an unknown flag `-1`, with a tip to
    // write `-- -1` that failed the same way, and `--json` named `-1`.
    for command in ["show", "fork"] {
        let negative = worldline(&store, [command, &id, "--at", "-1", "--json"]);
        negative.expect_code(2);
        assert_eq!(negative.json()["error"]["file"], "--at", "{negative}");
        assert!(negative.stderr.contains("numbered from 0"), "{negative}");
    }
}

/// A bundle that is a link round in a loop, or to nothing, is a broken
/// run of the listing: the loop stopped `runs`, `gc` and `index` with exit
/// 4 ("Too many levels of symbolic links", no file named), and a link to
/// nothing was left out of `runs` without a word.
#[test]
fn a_bundle_that_is_a_looping_or_dangling_link_is_a_broken_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    let runs = store.join("runs");
    let looping = runs.join("20261205-183952-000000f1.jsonl");
    std::os::unix::fs::symlink(&looping, &looping).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("nowhere"),
        runs.join("20261205-183952-000000f3.jsonl"),
    )
    .unwrap();
    let listed = worldline(&store, ["runs", "--json"]);
    listed.expect_code(0);
    let broken: Vec<&str> = (listed.json().as_array().unwrap().iter())
        .filter(|r| r["status"] == "broken")
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        broken,
        ["20261205-183952-000000f3", "20261205-183952-000000f1"],
        "{listed}"
    );
    worldline(&store, ["gc", "--dry-run"]).expect_code(0);
    worldline(&store, ["index", "--rebuild"]).expect_code(0);
}

/// A world file this user may not read is said to be one ("Permission
/// denied"), not "a symlink out?": cap-std's refusal of a path out of the
/// folder has the same kind, and both were read as that.
#[test]
fn a_world_file_this_user_may_not_read_is_said_so() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = temp_dir();
    let worlds = common::write_world(
        dir.path(),
        "locked",
        "name = \"locked\"\nversion = 1\n[tables.t]\nkey = \"id\"\nrows = \"t.jsonl\"\n",
        &[("t.jsonl", "{\"id\": \"a\"}\n")],
    );
    for d in [
        dir.path(),
        &worlds,
        &worlds.join("locked"),
        &worlds.join("locked/v1"),
    ] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let rows = worlds.join("locked/v1/t.jsonl");
    std::fs::set_permissions(&rows, std::fs::Permissions::from_mode(0o000)).unwrap();
    let world = worlds.join("locked/v1/world.toml");
    let binary = env!("CARGO_BIN_EXE_worldline");
    // SAFETY: geteuid has no preconditions.
    let mut cmd = match unsafe { libc::geteuid() } {
        // Root reads any file: as nobody, who may not.
        0 => {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", binary]);
            c
        }
        _ => std::process::Command::new(binary),
    };
    cmd.args(["check", s(&world)]).current_dir(dir.path());
    let out = common::CliOutput::of(cmd.output().expect("starting worldline"));
    out.expect_code(2);
    assert!(out.stdout.contains("Permission denied"), "{out}");
    assert!(!out.stdout.contains("symlink out"), "{out}");
}

/// A bundle path that is a FIFO or a folder is refused saying what it is
/// (it was "no run … in this store (… or pass a bundle's path)", or that
/// the store was not there).
#[test]
fn a_bundle_path_that_is_a_fifo_or_a_folder_is_said_to_be_one() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    demo_suite(&cases, &store, "1");
    let fifo = store.join("runs/20261205-183952-000000f1.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let folder = store.join("runs/20261205-183952-000000f2.jsonl");
    std::fs::create_dir(&folder).unwrap();
    for (path, what) in [(&fifo, "FIFO"), (&folder, "folder")] {
        for cmd in ["replay", "history"] {
            let out = worldline(&store, [cmd, s(path)]);
            out.expect_code(2);
            assert!(
                out.stderr.contains(s(path))
                    && out
                        .stderr
                        .to_lowercase()
                        .contains(what.to_lowercase().as_str()),
                "{cmd}: {out}"
            );
        }
    }
}

/// `worldline ARGS --store STORE` under `umask`, and as user and group
/// `as_user` when given (root drops to it, as another user of a shared
/// store), its home and working folder `home`. Another user runs a copy
/// of the binary in `home`, with its caches there: the target folder may
/// lie where only root can reach (CI's is under `/root`, mode 0700, and
/// exec failed with EACCES).
fn worldline_as(
    store: &Path,
    args: &[&str],
    umask: libc::mode_t,
    as_user: Option<libc::uid_t>,
    home: &Path,
) -> common::CliOutput {
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    let mut command = match as_user {
        None => common::cli(),
        Some(_) => {
            let bin = home.join("bin");
            let copy = bin.join("worldline");
            if !copy.exists() {
                std::fs::create_dir_all(&bin).unwrap();
                std::fs::copy(env!("CARGO_BIN_EXE_worldline"), &copy).unwrap();
                for path in [&bin, &copy] {
                    let mode = std::fs::Permissions::from_mode(0o755);
                    std::fs::set_permissions(path, mode).unwrap();
                }
            }
            let mut c = std::process::Command::new(copy);
            for (var, folder) in [
                ("WORLDLINE_STORE_CACHE", "store-cache"),
                ("WORLDLINE_BUILD_CACHE", "build-cache"),
                ("WORLDLINE_COMPILE_CACHE", "compile-cache"),
            ] {
                c.env(var, home.join(folder));
            }
            c
        }
    };
    command
        .args(args)
        .arg("--store")
        .arg(store)
        .env("HOME", home)
        .current_dir(home);
    // SAFETY: async-signal-safe calls only between fork and exec.
    unsafe {
        command.pre_exec(move || {
            libc::umask(umask);
            if let Some(id) = as_user
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(id) != 0
                    || libc::setuid(id) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    common::CliOutput::of(command.output().expect("cannot start the worldline binary"))
}

/// A store shared by a group (umask 002): the run index's files follow
/// the umask as the store's other files do (SQLite made them 0644
/// whatever the umask, so another user of the group could not update the
/// index). An index another user still cannot write (a store made
/// before) is named with its mode and owner and what to do, not called a
/// read-only store, and `index` on it is exit 2 before anything is tried
/// (it said `index: N runs`, exit 0, writing nothing).
#[test]
fn a_group_shared_store_s_index_follows_the_umask_and_one_it_cannot_write_is_named() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = temp_dir();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let store = dir.path().join("store");
    let cases = demo_cases(dir.path());
    let (agent, worlds) = (guest("caller-agent"), worlds_dir());
    let args = [
        "test",
        s(&cases),
        "--agent",
        s(&agent),
        "--worlds",
        s(&worlds),
    ];
    worldline_as(&store, &args, 0o002, None, dir.path()).expect_code(0);
    let index = store.join("index.sqlite");
    // The log and shared memory beside the index are there only while a
    // connection keeps them: looked up once, not checked and then read.
    for suffix in ["", "-wal", "-shm"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", index.display()));
        match std::fs::metadata(&file) {
            Ok(m) => assert_eq!(m.permissions().mode() & 0o7777, 0o664, "{}", file.display()),
            Err(e) if !suffix.is_empty() && e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("{}: {e}", file.display()),
        }
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    // Another user, who may write the store's folder but not its index
    // (made 0644 by an earlier worldline).
    let nobody = 65534;
    for entry in walk(&store) {
        let mode = if entry.is_dir() { 0o777 } else { 0o666 };
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    for suffix in ["", "-wal", "-shm"] {
        let file = std::path::PathBuf::from(format!("{}{suffix}", index.display()));
        match std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)) {
            Err(e) if !suffix.is_empty() && e.kind() == std::io::ErrorKind::NotFound => {}
            done => done.unwrap(),
        }
    }
    let out = worldline_as(&store, &["index"], 0o002, Some(nobody), dir.path());
    out.expect_code(2);
    assert!(
        out.stderr
            .contains(&format!("{} (mode 0644, owner uid 0", index.display()))
            && out.stderr.contains("chmod g+w"),
        "{out}"
    );
    // A bundle the index lacks (copied in), which a reader must add.
    let id = a_run_of(&store);
    let (stem, last) = id.split_at(id.len() - 1);
    let copy = format!("{stem}{}", if last == "0" { '1' } else { '0' });
    let copied = common::bundle_in(&store, &copy);
    std::fs::copy(common::bundle_in(&store, &id), &copied).unwrap();
    std::fs::set_permissions(&copied, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = worldline_as(&store, &["runs", "--json"], 0o002, Some(nobody), dir.path());
    out.expect_code(0);
    assert_eq!(out.json().as_array().unwrap().len(), 5, "{out}");
    assert!(
        out.stderr
            .contains("cannot be written by this user, though the store's folder can")
            && !out.stderr.contains("(read-only)"),
        "{out}"
    );
}

/// Every file and folder under `dir`, `dir` too.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut all = vec![dir.to_path_buf()];
    if dir.is_dir() {
        for e in std::fs::read_dir(dir).unwrap() {
            all.extend(walk(&e.unwrap().path()));
        }
    }
    all
}
