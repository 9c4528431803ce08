//! gc on a database store shared by several machines (docs/decisions/0255):
//! it never removes what another machine is using. Each machine is a
//! connection of its own (`Database`, as each process has one) or a
//! `worldline` process with a working folder of its own; the races are
//! played out step by step, so each test is deterministic.

use crate::common;

use common::pg::{cluster, fresh_schema};
use common::{guest, temp_dir, worlds_dir, write_case};
use serde_json::Value;
use std::path::Path;
use worldline_pgstore::writer::Writer;
use worldline_pgstore::{Copy, Database, RunRow, Stored};

fn connect(address: &str) -> Database {
    let how = worldline_pgstore::Opening {
        upgrade: false,
        make: true,
        given_in: "--store",
    };
    Database::connect(&worldline_pgstore::url::parse(address).unwrap(), &how).unwrap()
}

fn writer() -> Writer {
    Writer {
        user: "tester".into(),
        host: "machine".into(),
        ci_job: None,
        job_index: None,
    }
}

/// Store the run `id` (forked from `parent`) needing `needs`, sending
/// `objects` with it.
fn put(
    db: &Database,
    policy: &str,
    id: &str,
    parent: Option<&str>,
    needs: &[String],
    objects: &[(String, Vec<u8>)],
) -> Stored {
    let w = writer();
    let row = RunRow {
        id,
        agent_sha256: &needs[0],
        case_hash: &needs[0],
        world_hash: &needs[0],
        chain_hash: "chain",
        writer: &w,
        parent,
        objects: needs,
    };
    let line = format!("{{\"header\":{{\"run\":\"{id}\"}}}}");
    let copy = Copy {
        policy_sha256: policy,
        lines: vec![&line],
    };
    db.put_run(&row, &[&line], objects, &copy).unwrap()
}

/// An object's hash and bytes.
fn object(text: &str) -> (String, Vec<u8>) {
    (
        worldline_case::canon::sha256_hex(text.as_bytes()),
        text.as_bytes().to_vec(),
    )
}

fn nothing() -> Vec<String> {
    Vec::new()
}

/// Two machines (`a` runs gc, `b` writes) on a fresh schema, the store's
/// policy hash, and the one object `b`'s runs need.
struct TwoMachines {
    pg: &'static common::pg::Cluster,
    schema: String,
    a: Database,
    b: Database,
    policy: String,
    needs: Vec<String>,
    sent: [(String, Vec<u8>); 1],
}

fn two_machines(object_text: &str) -> TwoMachines {
    let pg = cluster();
    let schema = fresh_schema();
    let address = pg.store_in(&schema);
    // Connecting makes the schema.
    let (a, b) = (connect(&address), connect(&address));
    let policy = pg.psql(&format!("SELECT policy_sha256 FROM {schema}.redaction"));
    let (x, bytes) = object(object_text);
    TwoMachines {
        a,
        b,
        policy,
        needs: vec![x.clone()],
        sent: [(x, bytes)],
        pg,
        schema,
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn an_object_gc_removes_after_a_writer_asked_for_it_is_sent_with_the_run() {
    let TwoMachines {
        pg,
        schema,
        a,
        b,
        policy,
        needs,
        sent,
    } = two_machines("the agent both runs use");

    // Machine B stores a run needing X; gc on A removes that run.
    assert_eq!(b.missing_objects(&needs).unwrap(), needs);
    assert_eq!(put(&b, &policy, "run-1", None, &needs, &sent), Stored::New);
    assert_eq!(
        a.collect(&["run-1".into()], &[], 0).unwrap().runs,
        ["run-1"]
    );

    // B starts another run: X is stored (B's own cache says so without
    // asking). Then gc on A, whose index does not have B's new run, finds
    // X needed by no run and removes it.
    assert_eq!(b.missing_objects(&needs).unwrap(), nothing());
    assert_eq!(a.collect(&[], &needs, 0).unwrap().objects, needs);

    // B's run, sent without X, is refused whole; X is asked about again
    // and sent with it.
    assert_eq!(
        put(&b, &policy, "run-2", None, &needs, &[]),
        Stored::Missing(needs.clone())
    );
    assert_eq!(pg.psql(&format!("SELECT count(*) FROM {schema}.runs")), "0");
    assert_eq!(b.missing_objects(&needs).unwrap(), needs);
    assert_eq!(put(&b, &policy, "run-2", None, &needs, &sent), Stored::New);
    let stored = pg.psql(&format!(
        "SELECT r.id FROM {schema}.runs r JOIN {schema}.run_objects ro ON ro.run_id = r.id
         JOIN {schema}.objects o ON o.sha256 = ro.sha256"
    ));
    assert_eq!(stored, "run-2", "the run is stored with its object");

    // Now a run needs X, gc leaves it.
    assert_eq!(a.collect(&[], &needs, 0).unwrap().objects, nothing());
    assert_eq!(
        pg.psql(&format!("SELECT count(*) FROM {schema}.objects")),
        "1"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_gc_pass_that_meets_a_run_stored_meanwhile_is_made_again_and_keeps_its_object() {
    let TwoMachines {
        pg,
        schema,
        a,
        b,
        policy,
        needs,
        sent,
    } = two_machines("an agent one run needs");
    // X is stored with a run gc then removes: X is a candidate.
    assert_eq!(put(&b, &policy, "run-1", None, &needs, &sent), Stored::New);
    assert_eq!(
        a.collect(&["run-1".into()], &[], 0).unwrap().runs,
        ["run-1"]
    );
    // Another machine's transaction stores a run needing X and commits a
    // moment later (a writer in the middle of its statement).
    let x = &needs[0];
    let mut writer = pg.psql_spawn(&format!(
        "BEGIN;
         INSERT INTO {schema}.runs (id, agent_sha256, case_hash, world_hash, chain_hash, frames)
             VALUES ('run-2', '{x}', '{x}', '{x}', 'c', 1);
         INSERT INTO {schema}.run_objects (run_id, sha256) VALUES ('run-2', '{x}');
         SELECT pg_sleep(1.5);
         COMMIT;"
    ));
    let t0 = std::time::Instant::now();
    while pg.psql(&format!(
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
         WHERE c.relname = 'run_objects' AND c.relnamespace = '{schema}'::regnamespace
           AND l.pid <> pg_backend_pid()"
    )) == "0"
    {
        assert!(t0.elapsed().as_secs() < 30, "the writer never inserted");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // gc's removal of X waits for that transaction; once it commits the
    // server refuses the removal, and the pass made again keeps X.
    assert_eq!(a.collect(&[], &needs, 0).unwrap().objects, nothing());
    assert!(writer.wait().unwrap().success());
    assert_eq!(
        pg.psql(&format!(
            "SELECT count(*) FROM {schema}.objects o JOIN {schema}.run_objects r USING (sha256)"
        )),
        "1"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn gc_keeps_runs_held_or_forked_from_elsewhere_and_a_holder_learns_what_went() {
    let TwoMachines {
        pg,
        schema,
        a,
        b,
        policy,
        needs,
        sent,
    } = two_machines("a world manifest");
    for id in ["old", "read", "parent"] {
        assert_eq!(put(&b, &policy, id, None, &needs, &sent), Stored::New);
    }
    // B reads `read` (replaying it) and stores a fork of `parent`, which
    // A's index does not have yet.
    assert_eq!(b.hold(&["read"]).unwrap(), nothing());
    assert_eq!(
        put(&b, &policy, "fork", Some("parent"), &needs, &[]),
        Stored::New
    );
    let asked: Vec<String> = ["old", "read", "parent"].map(String::from).to_vec();
    let done = a.collect(&asked, &[], 0).unwrap();
    assert_eq!(done.runs, ["old"]);
    assert_eq!(done.runs_kept, ["parent", "read"]);
    // A run gc removed is named as gone to a process holding it late.
    assert_eq!(b.hold(&["old", "fresh-name"]).unwrap(), ["old"]);
    // With the fork going too, its parent goes.
    let done = a
        .collect(&["parent".into(), "fork".into()], &[], 0)
        .unwrap();
    assert_eq!(done.runs, ["fork", "parent"]);
    let removed = pg.psql(&format!(
        "SELECT string_agg(run_id, ',' ORDER BY seq) FROM {schema}.removed"
    ));
    assert_eq!(removed, "old,fork,parent");
}

/// `worldline gc --json --keep-passed 0` (and `extra`) on a machine of
/// its own.
fn gc_elsewhere(store: &Path, cache: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "gc",
        "--json",
        "--keep-passed",
        "0",
        "--store",
        store.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = common::worldline_env(args, &[("WORLDLINE_STORE_CACHE", cache.to_str().unwrap())]);
    out.expect_code(0);
    out.json().clone()
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn gc_on_another_machine_keeps_a_run_a_live_process_holds_until_it_ends() {
    let pg = cluster();
    let schema = fresh_schema();
    let address = pg.store_in(&schema);
    let store = Path::new(&address);
    let dir = temp_dir();
    let case = write_case(dir.path(), "good", common::DEMO_PASSES);
    let out = common::run_in(store, &case, &guest("caller-agent"), &worlds_dir());
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();

    // A live process (another machine's) reads the run.
    let reader = connect(&address);
    assert_eq!(reader.hold(&[&id]).unwrap(), nothing());
    let cache = dir.path().join("gc-machine");
    // A dry run says so too (the database's removals, rolled back).
    let dry = gc_elsewhere(store, &cache, &["--dry-run"]);
    assert_eq!(dry["runs"]["count"], 0, "{dry}");
    assert_eq!(dry["kept_in_use"], serde_json::json!([id]), "{dry}");
    let kept = gc_elsewhere(store, &cache, &[]);
    assert_eq!(kept["runs"]["count"], 0, "{kept}");
    assert_eq!(kept["kept_in_use"], serde_json::json!([id]), "{kept}");
    let count = || pg.psql(&format!("SELECT count(*) FROM {schema}.runs"));
    assert_eq!(count(), "1");

    // Once its process has ended (its connection and session lock gone),
    // the next pass removes the run and its lease.
    let holder = pg.psql(&format!("SELECT holder FROM {schema}.leases"));
    drop(reader);
    let t0 = std::time::Instant::now();
    while pg.psql(&format!(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND objid = {holder}
           AND classid = ((hashtext('{schema}')::bigint + 4294967296) % 4294967296)::oid"
    )) != "0"
    {
        assert!(t0.elapsed().as_secs() < 30, "the holder's lock stays");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let dry = gc_elsewhere(store, &cache, &["--dry-run"]);
    assert_eq!(dry["runs"]["items"], serde_json::json!([id]), "{dry}");
    assert_eq!(
        pg.psql(&format!("SELECT count(*) FROM {schema}.leases")),
        "1",
        "a dry run changes nothing"
    );
    let removed = gc_elsewhere(store, &cache, &[]);
    assert_eq!(
        removed["runs"]["items"],
        serde_json::json!([id]),
        "{removed}"
    );
    assert_eq!(count(), "0");
    assert_eq!(
        pg.psql(&format!("SELECT count(*) FROM {schema}.leases")),
        "0"
    );
}

/// `verify` of a whole database store holds every run it lists as it
/// starts, in the database too: a gc pass on another machine while it
/// checks removes none of them. It held them in its own folder only, the
/// database's one at a time as it replayed them, so a pass beside it
/// removed the rest and `verify` counted them unreadable, as drift.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn verify_on_one_machine_keeps_its_runs_from_gc_on_another() {
    let pg = cluster();
    let schema = fresh_schema();
    let address = pg.store_in(&schema);
    let store = Path::new(&address);
    let dir = temp_dir();
    let case = write_case(dir.path(), "good", common::DEMO_PASSES);
    let (caller, worlds) = (guest("caller-agent"), worlds_dir());
    let ran = common::on_machine(
        store,
        &dir.path().join("a"),
        &[
            "test",
            case.to_str().unwrap(),
            "--agent",
            caller.to_str().unwrap(),
            "--worlds",
            worlds.to_str().unwrap(),
            "--repeat",
            "12",
        ],
    );
    ran.expect_code(0);
    let verify = common::cli()
        .args(["verify", "--jobs", "1", "--json", "--store", &address])
        .env("WORLDLINE_STORE_CACHE", dir.path().join("b"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped as soon as it holds anything, so gc meets it checking.
    let leases = || pg.psql(&format!("SELECT count(*) FROM {schema}.leases"));
    let t0 = std::time::Instant::now();
    while leases() == "0" {
        assert!(t0.elapsed().as_secs() < 60, "verify held nothing");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let pid = verify.id().to_string();
    let signal = |s: &str| {
        let ok = std::process::Command::new("kill")
            .args([s, &pid])
            .status()
            .unwrap();
        assert!(ok.success());
    };
    signal("-STOP");
    let gc = gc_elsewhere(store, &dir.path().join("c"), &[]);
    signal("-CONT");
    let out = common::CliOutput::of(verify.wait_with_output().unwrap());
    assert_eq!(gc["runs"]["count"], 0, "{gc}");
    assert_eq!(gc["kept_in_use"].as_array().map(Vec::len), Some(12), "{gc}");
    out.expect_code(0);
    assert_eq!(out.json()["identical"], 12, "{out}");
}
