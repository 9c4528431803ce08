//! End-to-end tests of the store over time: the run index (kept by every
//! command that writes a run, shared by parallel writers, rebuilt when
//! deleted or corrupted), `runs` filters, and retention (`gc`, `pin`).
//! The real binary on the `caller-agent` guest and the demo world. The
//! tests named in `on_both_stores!` run twice: on a folder store and on a
//! PostgreSQL store (a throwaway cluster, see `common/pg.rs`).

use crate::common;
use crate::ui_support;

use common::{
    OWN_COMPILE_CACHE, StoreKind, age, fresh_store, guest, store_folder, temp_dir, worldline,
    worldline_with, worlds_dir, write_case,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A case that passes (it only reads ticket T-1).
const GOOD: &str = common::DEMO_PASSES;

/// A case that fails (the agent closes T-1, which should stay open).
const BAD: &str = r#"world = "demo@v1"
seed = 3
clock = 2026-03-01T12:00:00Z
task = { calls = [{ tool = "close_ticket", args = { id = "T-1" } }] }
[[expect.state]]
table = "tickets"
key = "T-1"
field = "status"
equals = "open"
"#;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `run CASE --json` by the caller agent, compiled into the store's own
/// cache (which `gc` sweeps).
fn run(store: &Path, case: &Path) -> Value {
    let agent = guest("caller-agent");
    let out = worldline_with(
        store,
        [
            "run",
            s(case),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds_dir()),
            "--json",
        ],
        &[OWN_COMPILE_CACHE],
    );
    assert!(out.code == 0 || out.code == 1, "{out}");
    out.json().clone()
}

fn runs(store: &Path, filters: &[&str]) -> Vec<Value> {
    let mut args = vec!["runs", "--json"];
    args.extend_from_slice(filters);
    let out = worldline(store, &args);
    out.expect_code(0);
    out.json().as_array().unwrap().clone()
}

fn ids(rows: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn id_of(doc: &Value) -> String {
    doc["run_id"].as_str().unwrap().to_string()
}

fn check(store: &Path) -> Value {
    let out = worldline(store, ["index", "--check", "--json"]);
    out.expect_code(0);
    out.json().clone()
}

on_both_stores!(
    runs_filters_by_grade_case_status_time_and_parent_newest_first,
    parallel_test_processes_lose_no_index_rows,
    gc_keeps_pins_parents_of_kept_forks_and_shared_objects,
    every_command_writes_and_reads_the_store,
);

fn runs_filters_by_grade_case_status_time_and_parent_newest_first(kind: StoreKind) {
    let dir = temp_dir();
    let store = fresh_store(kind, dir.path());
    let good = write_case(dir.path(), "good", GOOD);
    let bad = write_case(dir.path(), "bad", BAD);
    let g1 = id_of(&run(&store, &good));
    let b1 = id_of(&run(&store, &bad));
    let g2 = id_of(&run(&store, &good));
    let fork = worldline(
        &store,
        [
            "fork",
            b1.as_str(),
            "--at",
            "0",
            "--deny",
            "close_ticket",
            "--json",
        ],
    );
    let f1 = id_of(fork.json());

    let all = runs(&store, &[]);
    assert_eq!(
        ids(&all),
        sorted(vec![g1.clone(), b1.clone(), g2.clone(), f1.clone()])
    );
    let created: Vec<&str> = all.iter().map(|r| r["created"].as_str().unwrap()).collect();
    assert!(
        created.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {created:?}"
    );

    assert_eq!(
        ids(&runs(&store, &["--grade", "failed", "--case", "bad"])),
        vec![b1.clone()]
    );
    assert_eq!(
        ids(&runs(&store, &["--case", "goo*"])),
        sorted(vec![g1.clone(), g2.clone()])
    );
    assert_eq!(
        ids(&runs(&store, &["--parent", b1.as_str()])),
        vec![f1.clone()]
    );
    let failed = &runs(&store, &["--case", "bad", "--status", "failed"]);
    assert_eq!(failed[0]["signature"], "failed: tickets/T-1.status equals");
    // The table shows it too, as the docs say (it was in `--json` only).
    let table = worldline(&store, ["runs", "--case", "bad", "--status", "failed"]);
    assert!(
        table
            .stdout
            .contains("  [failed: tickets/T-1.status equals]"),
        "{table}"
    );
    assert_eq!(
        ids(&runs(&store, &["--signature", "T-1.status"])).len(),
        failed.len()
    );
    assert_eq!(runs(&store, &["--limit", "1"]).len(), 1);
    assert_eq!(
        runs(&store, &["--since", "1h", "--world", "demo@*"]).len(),
        4
    );
    // A world named without its version: every version (it listed none).
    assert_eq!(runs(&store, &["--world", "demo"]).len(), 4);
    assert!(runs(&store, &["--until", "2000-01-01"]).is_empty());
    let agent = all[0]["agent"].as_str().unwrap()[..10].to_string();
    assert_eq!(runs(&store, &["--agent", agent.as_str()]).len(), 4);

    let bad_time = worldline(&store, ["runs", "--since", "yesterday"]);
    bad_time.expect_code(2);
    assert!(bad_time.stderr.contains("--since"), "{bad_time}");
    assert_eq!(check(&store)["missing"], serde_json::json!([]));
}

fn parallel_test_processes_lose_no_index_rows(kind: StoreKind) {
    let dir = temp_dir();
    let store = fresh_store(kind, dir.path());
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for i in 0..6 {
        write_case(&cases, &format!("good-{i}"), GOOD);
        write_case(&cases, &format!("bad-{i}"), BAD);
    }
    let agent = guest("caller-agent");
    // Compile once, so the parallel processes spend their time writing.
    run(&store, &cases.join("good-0.toml"));
    // Four machines: a working folder, a host name and a Kubernetes job
    // index of their own.
    let children: Vec<_> = (0..4)
        .map(|i| {
            crate::common::cli()
                .args(["test", s(&cases), "--agent", s(&agent), "--worlds"])
                .arg(worlds_dir())
                .args(["--jobs", "3", "--store"])
                .arg(&store)
                .env(
                    "WORLDLINE_STORE_CACHE",
                    dir.path().join(format!("machine-{i}")),
                )
                .env("HOSTNAME", format!("machine-{i}"))
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1), "half the cases fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("warning"), "{err}");
    }
    // Listing brings a database store's working folder and index here up
    // to date with what the four machines stored.
    assert_eq!(runs(&store, &[]).len(), 1 + 4 * 12);
    let c = check(&store);
    assert_eq!(c["bundles"], 1 + 4 * 12, "{c}");
    assert_eq!(c["indexed"], c["bundles"], "{c}");
    assert_eq!(runs(&store, &["--grade", "failed"]).len(), 4 * 6);
    match kind {
        StoreKind::Postgres => {
            let mine = runs(&store, &["--writer", "machine-2"]);
            assert_eq!(mine.len(), 12);
            for r in &mine {
                assert_eq!(r["writer"]["host"], "machine-2", "{r}");
                assert_eq!(r["writer"]["job_index"], "2", "{r}");
            }
            let newest = runs(
                &store,
                &["--writer", "machine-2", "--limit", "5", "--grade", "failed"],
            );
            assert_eq!(newest.len(), 5);
        }
        StoreKind::Folder => {
            let out = worldline(&store, ["runs", "--writer", "machine-2"]);
            out.expect_code(2);
            assert!(out.stderr.contains("--writer"), "{out}");
        }
    }
}

/// A command that makes a run and whose reader stops reading (`| head`)
/// is ended by SIGPIPE at its report; the run is in the index all the
/// same. The row was committed at the command's end, after the report, so
/// the index lacked the run until a `runs` found it.
#[test]
fn a_run_whose_report_is_not_read_is_in_the_index() {
    use std::os::unix::process::ExitStatusExt;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let good = write_case(dir.path(), "good", GOOD);
    let id = run(&store, &good)["run_id"].as_str().unwrap().to_string();
    let agent = guest("caller-agent");
    let unread = |args: &[&str]| {
        let mut child = common::worldline_spawn(&store, args);
        // No reader: the first line written ends the process.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    unread(&["fork", &id, "--at", "1"]);
    unread(&[
        "run",
        s(&good),
        "--agent",
        s(&agent),
        "--worlds",
        s(&worlds_dir()),
    ]);
    let bundles = std::fs::read_dir(store.join("runs")).unwrap().count();
    assert_eq!(bundles, 3, "the runs were written");
    let folder = worldline_store::store::StoreDir::open(&store).unwrap();
    let indexed = worldline_store::index::Index::connect(&folder)
        .unwrap()
        .all()
        .unwrap();
    assert_eq!(
        indexed.len(),
        3,
        "rows: {:?}",
        indexed.iter().map(|r| &r.run_id).collect::<Vec<_>>()
    );
}

#[test]
fn a_deleted_corrupt_or_stale_index_is_rebuilt_from_the_bundles() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let good = write_case(dir.path(), "good", GOOD);
    let first = run(&store, &good);
    let mark = store.join("index.checked");
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let mark_before = inode(&mark);
    let second = run(&store, &good);
    // The mark of a sound index is rewritten in place after each run's
    // row, not replaced by a rename (decision 0322).
    assert_eq!(inode(&mark), mark_before, "{} was replaced", mark.display());
    let index = store.join("index.sqlite");
    assert!(index.is_file());
    // The log the next process reads back is short: commits checkpoint it
    // past LOG_PAGES, and no close does (decisions 0321, 0388).
    let wal = PathBuf::from(format!("{}-wal", index.display()));
    let left = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert!(
        left <= worldline_store::index::LOG_BYTES,
        "{} was left with {left} bytes",
        wal.display()
    );

    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
    }
    assert_eq!(runs(&store, &[]).len(), 2, "a deleted index is rebuilt");

    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
    }
    std::fs::write(
        &index,
        b"this is not an SQLite database, it was overwritten",
    )
    .unwrap();
    let out = worldline(&store, ["runs", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json().as_array().unwrap().len(), 2, "{out}");
    assert!(out.stderr.contains("rebuilt"), "{out}");

    // A bundle removed by hand leaves the list; one copied in joins it.
    std::fs::remove_file(first["bundle"].as_str().unwrap()).unwrap();
    assert_eq!(ids(&runs(&store, &[])), [id_of(&second)]);
    let other = dir.path().join("other");
    let third = run(&other, &good);
    let copied = common::bundle_in(&store, &id_of(&third));
    std::fs::copy(third["bundle"].as_str().unwrap(), &copied).unwrap();
    assert_eq!(
        ids(&runs(&store, &[])),
        sorted(vec![id_of(&second), id_of(&third)])
    );

    let rebuilt = worldline(&store, ["index", "--rebuild", "--json"]);
    rebuilt.expect_code(0);
    assert_eq!(rebuilt.json()["rows"], 2, "{rebuilt}");
    assert_eq!(check(&store)["stale"], serde_json::json!([]));
}

/// A bundle its writer still holds (locked from its creation until it is
/// written whole and let go) is indexed unfinished, whatever it held when
/// read, and read again once let go. A reader took a run's footer with
/// the size its bundle had a moment before, the footer not yet written:
/// the finished run's row kept its size before the footer, which no
/// later `runs` read again (`index --check`: stale).
#[test]
fn a_bundle_still_being_written_is_indexed_unfinished_and_read_again_once_let_go() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let good = write_case(dir.path(), "good", GOOD);
    let bundle = PathBuf::from(run(&store, &good)["bundle"].as_str().unwrap());
    let size = std::fs::metadata(&bundle).unwrap().len();
    let index = store.join("index.sqlite");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index.display()));
    }
    // Its writer holds it: the footer is written, the file not let go.
    let writer = std::fs::OpenOptions::new()
        .append(true)
        .open(&bundle)
        .unwrap();
    writer.lock().unwrap();
    let row = runs(&store, &[]).remove(0);
    assert_eq!(row["status"], "incomplete", "{row}");
    assert!(row["size"].as_u64().unwrap() < size, "{row}");
    drop(writer);
    let row = runs(&store, &[]).remove(0);
    assert_eq!(
        (&row["status"], row["size"].as_u64()),
        (&Value::from("completed"), Some(size)),
        "{row}"
    );
    assert_eq!(check(&store)["stale"], serde_json::json!([]));
}

/// `runs` writes each row as the index yields it, as a line of its table
/// or an element of its `--json` array, so a long listing holds one row at
/// a time: 5,000 runs listed peak within 3 MiB of 30 (SQLite's page cache
/// is 2 MiB of it). Before, the rows were gathered first: 3,001 rows
/// peaked 3.4 MiB above 30 as a table and more as JSON (a debug build;
/// 10,000 rows 12 MB above 30 in a release build), and a JSON tree of them
/// before that: 10,000 at 76 MB. The document is the same byte for byte.
#[test]
fn a_long_listing_holds_one_row_at_a_time() {
    let (_dir, store) = copies_of_a_run(5000);
    let listed = |json: bool, limit: &str| {
        let mut args = vec!["runs", "--limit", limit];
        if json {
            args.push("--json");
        }
        let (_, kib, stdout) = common::long::measured(&store, &args);
        let rows = match json {
            true => serde_json::from_str::<Value>(&stdout)
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            false => stdout.lines().count() - 1,
        };
        (kib, rows)
    };
    for json in [false, true] {
        let ((few, thirty), (many, all)) = (listed(json, "30"), listed(json, "9000"));
        assert_eq!((thirty, all), (30, 5001));
        assert!(
            many < few + 3 * 1024,
            "5,001 rows peaked at {many} KiB, 30 at {few} KiB (--json: {json}): the listing holds its rows"
        );
    }
}

/// A store of one run and `n` copies of its bundle, indexed.
fn copies_of_a_run(n: usize) -> (tempfile::TempDir, PathBuf) {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let good = write_case(dir.path(), "good", GOOD);
    let first = run(&store, &good);
    let bundle = PathBuf::from(first["bundle"].as_str().unwrap());
    let text = std::fs::read(&bundle).unwrap();
    for i in 0..n {
        let copy = bundle.with_file_name(format!("20261203-080000-{i:08x}.jsonl"));
        std::fs::write(copy, &text).unwrap();
    }
    worldline(&store, ["index", "--rebuild"]).expect_code(0);
    (dir, store)
}

/// `verify` writes each replay's report as it comes (in the order of the
/// runs), counting it and keeping nothing of it, so checking a store
/// costs the memory of its list of runs: 4,001 runs peak within 1 MiB of
/// a sample of 30, as text and as JSON, whose document reads the same
/// (its `runs` first). Before, every report was held to the end: 4,001
/// runs peaked 2.4 MiB above 30 as text, and more as JSON (a debug build;
/// 10,000 runs in a release build 33 and 46 MB, 24 now). Each peak is the
/// least of three: one process's peak moves by a few hundred KiB with
/// the timing of its threads and worker (4,001 runs 0.5–1.1 MiB above a
/// single sample of 30 while the list of runs was copied for the
/// worker; 0.5–0.8 since it is lent).
#[test]
fn a_store_s_check_holds_no_report_of_a_run_once_written() {
    let (_dir, store) = copies_of_a_run(4000);
    for json in [false, true] {
        let mut args = vec!["verify"];
        if json {
            args.push("--json");
        }
        let sample = [&args[..], &["--sample", "30", "--seed", "1"]].concat();
        let (mut few, mut many) = (u64::MAX, u64::MAX);
        for _ in 0..3 {
            few = few.min(common::long::measured(&store, &sample).1);
            let (_, kib, stdout) = common::long::measured(&store, &args);
            many = many.min(kib);
            let replayed = match json {
                true => serde_json::from_str::<Value>(&stdout).unwrap()["replayed"].as_u64(),
                false => stdout
                    .lines()
                    .filter(|l| l.contains("  identical  "))
                    .count()
                    .try_into()
                    .ok(),
            };
            assert_eq!(replayed, Some(4001), "{stdout}");
        }
        assert!(
            many < few + 1024,
            "4,001 runs verified peaked at {many} KiB, 30 at {few} KiB (--json: {json}; the least of three each): the check holds its reports"
        );
    }
}

/// A `pin` beside a gc pass that removes its run says it pinned nothing:
/// it said "pinned" (exit 0) of a run the pass removed, its pin file left
/// naming no run. Here the test is the pass: it holds the store's gate as
/// a pass does, the pin waits for it, and the run is removed meanwhile.
#[test]
fn a_pin_beside_a_gc_pass_that_removes_its_run_pins_nothing() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let good = write_case(dir.path(), "good", GOOD);
    let first = run(&store, &good);
    let id = id_of(&first);
    let gate = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(store.join("gc.lock"))
        .unwrap();
    gate.lock().unwrap();
    let pin = common::cli()
        .args(["pin", id.as_str(), "--store"])
        .arg(&store)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    std::fs::remove_file(first["bundle"].as_str().unwrap()).unwrap();
    gate.unlock().unwrap();
    let out = common::CliOutput::of(pin.wait_with_output().unwrap());
    out.expect_code(2);
    assert!(
        out.stderr.contains("was removed by a `worldline gc` pass"),
        "{out}"
    );
    assert!(!store.join("pins").join(&id).exists(), "{out}");
}

fn gc(store: &Path, flags: &[&str]) -> Value {
    let mut args = vec!["gc", "--json"];
    args.extend_from_slice(flags);
    let out = worldline(store, &args);
    out.expect_code(0);
    out.json().clone()
}

fn items(v: &Value) -> Vec<String> {
    sorted(
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_str().unwrap().to_string())
            .collect(),
    )
}

fn case_hash(bundle: &Value) -> String {
    let text = std::fs::read_to_string(bundle["bundle"].as_str().unwrap()).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header["header"]["case_hash"].as_str().unwrap().to_string()
}

fn gc_keeps_pins_parents_of_kept_forks_and_shared_objects(kind: StoreKind) {
    let dir = temp_dir();
    let store = fresh_store(kind, dir.path());
    let folder = store_folder(&store);
    let good = write_case(dir.path(), "good", GOOD);
    let bad = write_case(dir.path(), "bad", BAD);
    let other = write_case(dir.path(), "other", &GOOD.replace("seed = 3", "seed = 4"));
    let parent = run(&store, &good);
    let failed = run(&store, &bad);
    let lone = run(&store, &other);
    let again = run(&store, &good);
    let fork = worldline(
        &store,
        [
            "fork",
            id_of(&parent).as_str(),
            "--at",
            "0",
            "--deny",
            "get_ticket",
            "--json",
        ],
    );
    let fork = fork.json().clone();
    let pin = worldline(
        &store,
        ["pin", id_of(&fork).as_str(), "--note", "investigating"],
    );
    pin.expect_code(0);
    // What the runs stored, and what they compiled, is old now.
    age(&folder.join("objects"), Duration::from_secs(2 * 3600));
    age(&folder.join("worlds"), Duration::from_secs(2 * 3600));
    age(&folder.join("cache"), Duration::from_secs(40 * 86_400));

    let lone_case = case_hash(&lone);
    let bundles = |folder: &Path| common::files_with_suffix(&folder.join("runs"), ".jsonl").len();
    let dry = gc(&store, &["--dry-run", "--keep-passed", "0"]);
    assert_eq!(bundles(&folder), 5, "a dry run removes nothing");
    let real = gc(&store, &["--keep-passed", "0"]);
    for r in [&dry, &real] {
        // The fork is pinned, its parent kept for it; the failed run is young.
        assert_eq!(
            items(&r["runs"]),
            sorted(vec![id_of(&lone), id_of(&again)]),
            "{r}"
        );
        assert_eq!(
            r["kept_as_parents"],
            serde_json::json!([id_of(&parent)]),
            "{r}"
        );
        // Pinned is what keeps the fork only when its own age would not.
        let by_pin: Vec<String> = if fork["status"] == "passed" {
            vec![id_of(&fork)]
        } else {
            vec![]
        };
        assert_eq!(r["kept_pinned"], serde_json::json!(by_pin), "{r}");
        // Only the lone run's case is unreferenced: the agent and the world are shared.
        assert_eq!(items(&r["objects"]), vec![lone_case.clone()], "{r}");
        assert!(
            items(&r["cache"]).iter().any(|i| i.ends_with(".cwasm")),
            "the compiled agent: {r}"
        );
        let total: u64 = ["runs", "objects", "worlds", "cache"]
            .iter()
            .map(|k| r[k]["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(r["bytes_freed"], total);
    }
    assert!(real["runs"]["bytes"].as_u64().unwrap() > 0);
    assert_eq!(dry["bytes_freed"], real["bytes_freed"]);
    assert_eq!(bundles(&folder), 3);
    assert_eq!(
        ids(&runs(&store, &[])),
        sorted(vec![id_of(&parent), id_of(&failed), id_of(&fork)])
    );
    assert_eq!(check(&store)["indexed"], 3);
    // The kept runs still replay: nothing they need was removed.
    for kept in [&parent, &fork] {
        let out = worldline(&store, ["replay", id_of(kept).as_str(), "--json"]);
        out.expect_code(0);
    }

    // Unpinned and past every limit, everything goes, objects included.
    worldline(&store, ["unpin", id_of(&fork).as_str()]).expect_code(0);
    age(&folder.join("objects"), Duration::from_secs(2 * 3600));
    age(&folder.join("worlds"), Duration::from_secs(2 * 3600));
    // The store's policy (a database store's in its database).
    let policy = dir.path().join("keep-nothing.toml");
    std::fs::write(
        &policy,
        "[keep]\npassed = 0\nfailed = 0\nfaulted = 0\nincomplete = 0\n",
    )
    .unwrap();
    worldline(&store, ["retention", "--set", s(&policy)]).expect_code(0);
    let all = gc(&store, &[]);
    assert_eq!(all["runs"]["count"], 3, "{all}");
    assert_eq!(bundles(&folder), 0);
    assert_eq!(
        std::fs::read_dir(folder.join("objects")).unwrap().count(),
        0
    );
    assert!(runs(&store, &[]).is_empty());
}

#[test]
fn a_bad_policy_file_is_named_with_its_line() {
    let dir = temp_dir();
    let store: PathBuf = dir.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("policy.toml"), "[keep]\npased = 3\n").unwrap();
    let out = worldline(&store, ["gc"]);
    out.expect_code(2);
    assert!(out.stderr.contains("policy.toml:2"), "{out}");
    let out = worldline(&store, ["pin", "../escape"]);
    out.expect_code(2);
}

/// `worldline ARGS --store STORE` as a reader on another machine: with a
/// working folder of its own (a database store's reader then has only the
/// database to read from; a folder store is the same folder).
fn elsewhere(store: &Path, cache: &Path, args: &[&str]) -> common::CliOutput {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--store", s(store)]);
    common::worldline_env(&all, &[("WORLDLINE_STORE_CACHE", s(cache))])
}

fn every_command_writes_and_reads_the_store(kind: StoreKind) {
    let dir = temp_dir();
    let store = fresh_store(kind, dir.path());
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let good = write_case(&cases, "good", GOOD);
    let bad = write_case(&cases, "bad", BAD);
    let agent = guest("caller-agent");
    let worlds = worlds_dir();

    // Writers: run, test, fuzz (keeping every run), repro.
    let g = id_of(&run(&store, &good));
    let b = id_of(&run(&store, &bad));
    common::test_suite(&store, &cases, &agent, &["--json"]).expect_code(1);
    let fuzzed = write_case(
        dir.path(),
        "fuzzed",
        &format!("{GOOD}[fuzz]\n[[fuzz.tools]]\ntool = \"get_*\"\ndeny = 0.5\n"),
    );
    let fuzz = worldline(
        &store,
        [
            "fuzz",
            s(&fuzzed),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "--runs",
            "3",
            "--keep-all",
            "--json",
        ],
    );
    assert!(fuzz.code == 0 || fuzz.code == 1, "{fuzz}");
    let repro = worldline(&store, ["repro", g.as_str(), "--times", "2", "--json"]);
    assert!(repro.code == 0 || repro.code == 1, "{repro}");
    let written = runs(&store, &[]).len();
    assert!(written >= 2 + 2 + 3, "{written} runs");

    // Readers, each with a working folder of its own.
    let cache = dir.path().join("reader-cache");
    let read = |args: &[&str], codes: &[i32]| {
        let out = elsewhere(&store, &cache, args);
        assert!(codes.contains(&out.code), "{args:?}: {out}");
        assert!(!out.stdout.contains(common::pg::PASSWORD), "{out}");
        assert!(!out.stderr.contains(common::pg::PASSWORD), "{out}");
        out
    };
    let listed = read(&["runs", "--json"], &[0]);
    assert_eq!(listed.json().as_array().unwrap().len(), written, "{listed}");
    read(&["show", &g, "--at", "0", "--json"], &[0]);
    read(&["history", &b, "--json"], &[0]);
    read(&["diff", &g, &b, "--json"], &[0, 1]);
    assert_eq!(
        read(&["replay", &g, "--json"], &[0]).json()["verdict"],
        "identical"
    );
    read(&["rerun", &b, "--agent", s(&agent), "--json"], &[0, 1]);
    let fork = read(
        &["fork", &b, "--at", "0", "--deny", "close_ticket", "--json"],
        &[0, 1],
    );
    let f = id_of(fork.json());
    read(
        &[
            "grade",
            &f,
            "--case",
            s(&bad),
            "--worlds",
            s(&worlds),
            "--json",
        ],
        &[0, 1],
    );
    read(&["verify", &g, &b, "--json"], &[0]);
    let trace = dir.path().join("trace.json");
    read(&["otel", &g, "-o", s(&trace), "--json"], &[0]);
    assert!(trace.is_file());
    read(&["pin", &b, "--note", "kept"], &[0]);
    let dry = read(
        &[
            "gc",
            "--dry-run",
            "--keep-passed",
            "0",
            "--keep-failed",
            "0",
            "--json",
        ],
        &[0],
    );
    assert!(
        !common::pg::PASSWORD.is_empty() && dry.json()["kept_pinned"].to_string().contains(&b),
        "{dry}"
    );
    read(&["unpin", &b], &[0]);

    // The writer sees what the reader wrote (its fork).
    assert!(ids(&runs(&store, &[])).contains(&f));

    // export, and import into a folder store and back into a fresh store
    // of this kind, where the run replays.
    let file = dir.path().join("g.json");
    read(&["export", &g, "-o", s(&file)], &[0]);
    let folder = dir.path().join("copied");
    worldline(&folder, ["import", s(&file)]).expect_code(0);
    let again = fresh_store(kind, &dir.path().join("again"));
    worldline(&again, ["import", s(&folder), "--json"]).expect_code(0);
    let back = dir.path().join("back");
    let gathered = elsewhere(&back, &cache, &["import", s(&again), "--json"]);
    gathered.expect_code(0);
    assert_eq!(ids(&runs(&back, &[])), vec![g.clone()], "{gathered}");
    common::replays_identical(&again, &g);

    // The UI lists the runs and shows one.
    let server = ui_support::Server::start(&store, &[]);
    let page = server.get("/");
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.body.contains(&g), "the run list names {g}");
    assert_eq!(server.get(&format!("/run/{b}")).status, 200);
}

/// `runs --parent ID` lists the forks of a parent the store does not hold
/// (a fork imported alone names it): it was exit 2, "no run in this
/// store", though the fork's row showed the parent.
#[test]
fn runs_finds_the_forks_of_a_parent_the_store_does_not_hold() {
    let dir = temp_dir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let case = write_case(dir.path(), "bad", BAD);
    let parent = id_of(&run(&a, &case));
    let fork = worldline(&a, ["fork", parent.as_str(), "--at", "1", "--json"]);
    let fork = fork.json()["run_id"].as_str().unwrap().to_string();
    let file = dir.path().join("fork.wl");
    worldline(&a, ["export", fork.as_str(), "-o", s(&file)]).expect_code(0);
    worldline(&b, ["import", s(&file)]).expect_code(0);
    assert_eq!(ids(&runs(&b, &["--parent", parent.as_str()])), [fork]);
    // A name that is no whole id and matches no run is still no run.
    worldline(&b, ["runs", "--parent", "nope"]).expect_code(2);
}
