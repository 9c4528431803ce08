//! What only a PostgreSQL store has to get right (the commands themselves
//! run on both kinds of store in `store.rs`): the server going away in the
//! middle of a suite, schema versions, and credentials, which never reach
//! an output, a bundle or an export; what a folder store keeps as files
//! beside its runs (the retention policy, re-grades) is read by every
//! machine from the database. Each test uses a schema of its own on
//! a throwaway cluster (`common/pg.rs`), or a cluster of its own when it
//! stops the server.

use crate::common;

use common::pg::{PASSWORD, cluster, fresh_schema, own_cluster};
use common::{guest, store_folder, temp_dir, worldline, worlds_dir, write_case};
use std::path::{Path, PathBuf};

const GOOD: &str = common::DEMO_PASSES;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn suite(store: &Path, cases: &Path) -> common::CliOutput {
    let agent = guest("caller-agent");
    common::test_suite(store, cases, &agent, &["--jobs", "1", "--json"])
}

/// `n` passing cases in `dir/cases`.
fn cases(dir: &Path, n: usize) -> PathBuf {
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for i in 0..n {
        write_case(
            &cases,
            &format!("c{i:03}"),
            &GOOD.replace("seed = 3", &format!("seed = {i}")),
        );
    }
    cases
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_suite_that_loses_its_database_stops_naming_it_and_a_rerun_continues() {
    let pg = own_cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    let cases = cases(dir.path(), 60);
    // Compiled once, so the suite's runs are quick and steady.
    suite(&store, &cases.join("c000.toml")).expect_code(0);

    let agent = guest("caller-agent");
    let child = common::worldline_spawn(
        &store,
        [
            "test",
            s(&cases),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds_dir()),
            "--jobs",
            "1",
            "--json",
        ],
    );
    let stored = || {
        pg.psql(&format!("SELECT count(*) FROM {schema}.runs"))
            .parse::<u32>()
            .unwrap()
    };
    let t0 = std::time::Instant::now();
    while stored() < 4 {
        assert!(t0.elapsed().as_secs() < 60, "the suite stored no runs");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    pg.stop();
    let out = common::CliOutput::of(child.wait_with_output().unwrap());
    out.expect_code(2);
    let server = format!("127.0.0.1:{}", pg.port);
    // Once (the message named the store's address twice), and as the
    // store's failure, not an input's.
    assert_eq!(
        out.stderr.matches(&server).count(),
        1,
        "names the server: {out}"
    );
    assert_eq!(out.json()["error"]["kind"], "store", "{out}");
    assert_eq!(out.json()["error"]["exit_code"], 2, "{out}");
    assert!(
        out.stderr.contains("run it again"),
        "says what to do: {out}"
    );
    assert!(
        !out.stderr.contains(PASSWORD) && !out.stdout.contains(PASSWORD),
        "{out}"
    );

    // Back up: every stored run is whole (its row's frame count, a footer
    // last), and the suite run again stores every case.
    pg.start();
    let before = stored();
    assert!(before < 61, "the suite was stopped: {before}");
    let torn = pg.psql(&format!(
        "SELECT count(*) FROM {schema}.runs r WHERE r.frames <> (SELECT count(*) FROM {schema}.frames f WHERE f.run_id = r.id)
            OR NOT EXISTS (SELECT 1 FROM {schema}.frames f WHERE f.run_id = r.id AND f.n = r.frames - 1 AND f.line LIKE '{{\"footer\"%')"
    ));
    assert_eq!(torn, "0");
    suite(&store, &cases).expect_code(0);
    assert_eq!(stored(), before + 60);
    let listed = worldline(&store, ["runs", "--json"]);
    listed.expect_code(0);
    assert_eq!(listed.json().as_array().unwrap().len() as u32, before + 60);
}

/// A suite on two jobs whose server goes away: like a signal, it starts
/// no more cases, reports the runs it made (their PASS lines and the
/// summary; under `--json` the report with the error) and names every run
/// set aside, those of both jobs (stdout was empty, `--json` only the
/// error, and one of the two bundles in `unstored/` was named nowhere).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_suite_that_loses_its_database_reports_the_runs_it_made_and_names_every_one_set_aside() {
    let pg = own_cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    let cases = cases(dir.path(), 200);
    suite(&store, &cases.join("c000.toml")).expect_code(0);
    let agent = guest("caller-agent");
    let stored = || {
        pg.psql(&format!("SELECT count(*) FROM {schema}.runs"))
            .parse::<u32>()
            .unwrap()
    };
    let unstored = store_folder(&store).join("unstored");
    let worlds = worlds_dir();
    for json in [false, true] {
        let before = stored();
        let mut args = vec![
            "test",
            s(&cases),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "--jobs",
            "2",
        ];
        if json {
            args.push("--json");
        }
        let child = common::worldline_spawn(&store, args);
        let t0 = std::time::Instant::now();
        while stored() < before + 6 {
            assert!(t0.elapsed().as_secs() < 120, "the suite stored no runs");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        pg.stop();
        let out = common::CliOutput::of(child.wait_with_output().unwrap());
        out.expect_code(2);
        pg.start();
        let made = stored() - before;
        let aside: Vec<PathBuf> = std::fs::read_dir(&unstored)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        assert!(!aside.is_empty(), "{out}");
        let passed = if json {
            let doc = out.json();
            assert_eq!(doc["error"]["kind"], "store", "{out}");
            assert_eq!(doc["error"]["exit_code"], 2, "{out}");
            let named: Vec<PathBuf> = (doc["set_aside"].as_array().unwrap().iter())
                .map(|p| PathBuf::from(p.as_str().unwrap()))
                .collect();
            for path in &aside {
                assert!(named.contains(path), "{} named in {out}", path.display());
            }
            assert_eq!(doc["cases"].as_array().unwrap().len(), 200, "{out}");
            doc["passed"].as_u64().unwrap() as u32
        } else {
            assert!(out.stdout.contains(" passed, "), "the summary: {out}");
            out.stdout.lines().filter(|l| l.starts_with("PASS")).count() as u32
        };
        for path in &aside {
            assert!(
                out.stderr.contains(&path.display().to_string()),
                "{} named in {out}",
                path.display()
            );
        }
        // Every case reported passing was stored (a commit the connection
        // lost may be stored too, and not reported).
        assert!(passed >= 6 && passed <= made, "{passed} of {made}: {out}");
        assert!(!out.stdout.contains(PASSWORD) && !out.stderr.contains(PASSWORD));
        // The next command that reads the store takes back what it holds.
        worldline(&store, ["runs", "--json"]).expect_code(0);
        for path in aside {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A case whose every fuzzed run fails (its one call denied), each run a
/// little work so that a campaign of 400 takes a while.
const FAILING: &str = "world = \"demo@v1\"\nseed = 11\nclock = 2026-03-01T12:00:00Z\n\
     task = { work = 20_000_000, calls = [{ tool = \"get_ticket\", args = { id = \"T-1\" } }] }\n\
     [limits]\nfuel = 100_000_000_000\n\
     [[expect.calls]]\ntool = \"get_ticket\"\ndenied = false\ncount = 1\n\
     [fuzz]\n[[fuzz.tools]]\ntool = \"get_ticket\"\ndeny = 1.0\n";

/// A fuzz campaign whose server goes away: as `test` does, it prints its
/// report of the runs it made (text and `--json`, with the error and
/// every run set aside), says its report and the reproducers it did not
/// keep were not stored, and exits 2, whether the server went while it
/// stored every run (`--keep-all`, on two jobs: a worker's runs too) or
/// before its reproducer was kept (the campaign ended with exit 2 and an
/// empty stdout, the report of 400 runs lost).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_fuzz_campaign_that_loses_its_database_reports_the_runs_it_made() {
    let pg = own_cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    let case = write_case(dir.path(), "failing", FAILING);
    let agent = guest("caller-agent");
    let worlds = worlds_dir();
    let stored = || {
        pg.psql(&format!("SELECT count(*) FROM {schema}.runs"))
            .parse::<u32>()
            .unwrap()
    };
    // Compiled once, so that the campaigns' runs are quick and steady
    // (without its faults, the case passes).
    suite(&store, &case).expect_code(0);
    let unstored = store_folder(&store).join("unstored");
    for keep_all in [true, false] {
        let before = stored();
        let events = dir.path().join(format!("events-{keep_all}.jsonl"));
        let mut args = vec![
            "fuzz",
            s(&case),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "--runs",
            "400",
            "--events",
            s(&events),
        ];
        if keep_all {
            args.extend(["--keep-all", "--jobs", "2", "--json"]);
        } else {
            args.extend(["--jobs", "1"]);
        }
        let child = common::worldline_spawn(&store, args);
        let t0 = std::time::Instant::now();
        let going = || match keep_all {
            true => stored() >= before + 6,
            false => {
                (std::fs::read_to_string(&events).unwrap_or_default())
                    .matches("run_finished")
                    .count()
                    >= 3
            }
        };
        while !going() {
            assert!(t0.elapsed().as_secs() < 120, "the campaign made no runs");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        pg.stop();
        let out = common::CliOutput::of(child.wait_with_output().unwrap());
        out.expect_code(2);
        pg.start();
        let aside: Vec<PathBuf> = std::fs::read_dir(&unstored)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        assert!(!aside.is_empty(), "{out}");
        for path in &aside {
            assert!(
                out.stderr.contains(&path.display().to_string()),
                "{} named in {out}",
                path.display()
            );
        }
        assert!(
            out.stderr
                .contains("the campaign's report was not kept in the store"),
            "{out}"
        );
        if keep_all {
            let doc = out.json();
            assert_eq!(doc["error"]["kind"], "store", "{out}");
            assert_eq!(doc["error"]["exit_code"], 2, "{out}");
            assert_eq!(doc["store_failed"], true, "{out}");
            let named: Vec<PathBuf> = (doc["set_aside"].as_array().unwrap().iter())
                .map(|p| PathBuf::from(p.as_str().unwrap()))
                .collect();
            for path in &aside {
                assert!(named.contains(path), "{} named in {out}", path.display());
            }
            // The runs made are counted, and every one failed: the runs
            // stored before the server went are among them.
            let runs = doc["summary"]["runs"].as_u64().unwrap();
            assert!((6..400).contains(&runs), "{out}");
            assert_eq!(doc["summary"]["failed"], runs, "{out}");
            let group = &doc["groups"][0];
            assert_eq!(group["count"], runs, "{out}");
            assert_eq!(group["unstored"], true, "{out}");
            assert!(group["reproducer"]["run_id"].is_null(), "{out}");
            assert!(doc.get("campaign").is_none(), "{out}");
        } else {
            // Every run was made (in memory); the reproducer was not kept.
            assert!(
                out.stdout.starts_with("fuzz failing on demo@v1: 400 runs"),
                "{out}"
            );
            assert!(out.stdout.contains("  passed 0/400"), "{out}");
            assert!(out.stdout.contains("400 runs (100.0%)"), "{out}");
            assert!(out.stdout.contains("reproducer not kept (seed "), "{out}");
        }
        assert!(!out.stdout.contains(PASSWORD) && !out.stderr.contains(PASSWORD));
        // The next command that reads the store takes back what it holds.
        worldline(&store, ["runs", "--json"]).expect_code(0);
        for path in aside {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A long-lived UI whose server restarts: while it is down each page is
/// the store's 503 saying so (it was 400, the user's fault), and once it
/// is back the next page is served (the one connection was kept, lost,
/// for good: every page was 400 until the UI was restarted).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_ui_whose_database_restarts_is_unavailable_then_serves_again() {
    let pg = own_cluster();
    let store = PathBuf::from(pg.store_in(&fresh_schema()));
    let dir = temp_dir();
    suite(&store, &cases(dir.path(), 1)).expect_code(0);
    let id = worldline(&store, ["runs", "--json"]).json()[0]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let ui = crate::ui_support::Server::start(&store, &[]);
    let page = |path: &str| ui.get(path);
    assert_eq!(page("/").status, 200);
    assert_eq!(page(&format!("/run/{id}")).status, 200);
    pg.stop();
    // The UI asks the database at most once a second.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let down = page("/");
    assert_eq!(down.status, 503, "{}", down.body);
    assert!(
        down.body.contains(&format!("127.0.0.1:{}", pg.port)),
        "{}",
        down.body
    );
    assert!(!down.body.contains(PASSWORD));
    // A run's pages too: they were 404, "not found", as for a run gone.
    for path in [format!("/run/{id}"), format!("/run/{id}/event/1")] {
        let down = page(&path);
        assert_eq!(down.status, 503, "{path}: {}", down.body);
    }
    pg.start();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let back = page("/");
    assert_eq!(back.status, 200, "{}", back.body);
    assert!(back.body.contains(&id[..8]), "{}", back.body);
    let run = page(&format!("/run/{id}"));
    assert_eq!(run.status, 200, "{}", run.body);
    // A run stored after the restart is seen too.
    suite(&store, &cases(dir.path(), 2).join("c001.toml")).expect_code(0);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let listed = worldline(&store, ["runs", "--json"]);
    let newest = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .find(|r| *r != id)
        .unwrap();
    assert_eq!(page(&format!("/run/{newest}")).status, 200);
}

/// A server that is not running when a command starts is the store's
/// failure (`"kind": "store"`, exit 2), as one that goes away midway is;
/// a database that is not there, a malformed address stay the user's
/// (`"kind": "input"`). It was `input` for all of them.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_server_that_is_down_is_the_stores_failure_and_a_wrong_address_the_users() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let down = format!("postgres://worldline:{PASSWORD}@127.0.0.1:{port}/postgres");
    let out = worldline(Path::new(&down), ["runs", "--json"]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["kind"], "store", "{out}");
    assert_eq!(out.json()["error"]["exit_code"], 2, "{out}");
    let pg = cluster();
    let wrong_db = format!(
        "postgres://worldline:{PASSWORD}@127.0.0.1:{}/nosuchdb",
        pg.port
    );
    let malformed = format!(
        "postgres://worldline:{PASSWORD}@127.0.0.1:{}/postgres?foo=bar",
        pg.port
    );
    let no_such_user = format!(
        "postgres://nobody:{PASSWORD}@127.0.0.1:{}/postgres",
        pg.port
    );
    for store in [wrong_db, malformed, no_such_user] {
        let out = worldline(Path::new(&store), ["runs", "--json"]);
        out.expect_code(2);
        assert_eq!(out.json()["error"]["kind"], "input", "{out}");
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_newer_schema_is_refused_with_what_to_do() {
    let pg = cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    worldline(&store, ["migrate", "--json"]).expect_code(0);
    pg.psql(&format!(
        "INSERT INTO {schema}.schema_version (version) VALUES (99)"
    ));
    let out = worldline(&store, ["runs", "--json"]);
    out.expect_code(2);
    assert!(out.stderr.contains("version 99"), "{out}");
    assert!(out.stderr.contains("upgrade worldline"), "{out}");
    assert!(
        out.stdout.contains("postgres://worldline@"),
        "the --json error names the server: {out}"
    );
    assert!(
        !out.stdout.contains(PASSWORD) && !out.stderr.contains(PASSWORD),
        "{out}"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn an_unreachable_server_is_named_without_its_password() {
    let dir = temp_dir();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let store = PathBuf::from(format!(
        "postgres://worldline:{PASSWORD}@127.0.0.1:{port}/postgres"
    ));
    let case = write_case(dir.path(), "good", GOOD);
    let agent = guest("caller-agent");
    let out = common::run_in(&store, &case, &agent, &worlds_dir());
    out.expect_code(2);
    assert!(
        out.stderr
            .contains(&format!("postgres://worldline@127.0.0.1:{port}/postgres")),
        "{out}"
    );
    assert!(out.stderr.contains("cannot connect"), "{out}");
    assert!(
        !out.stdout.contains(PASSWORD) && !out.stderr.contains(PASSWORD),
        "{out}"
    );
    let bad = worldline(Path::new("postgres://u:pw@h/db?schema=Bad-Name"), ["runs"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("schema `Bad-Name`"), "{bad}");
    // A password holding `/` or `?` is not shown either (the address was
    // cut there, and the rest of the password shown as its path).
    for password in ["pa/ssSECRET", "hunter2?SECRET"] {
        let store = format!("postgres://ci:{password}@127.0.0.1:{port}/postgres");
        let out = worldline(Path::new(&store), ["runs", "--json"]);
        out.expect_code(2);
        assert!(
            !out.stdout.contains("SECRET") && !out.stderr.contains("SECRET"),
            "{out}"
        );
        assert!(out.stderr.contains("postgres://ci@127.0.0.1:"), "{out}");
    }
    // A server that takes the connection and never answers is given the
    // address's connect_timeout for all of connecting (every command
    // waited for good).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let kept: Vec<_> = silent.incoming().take(1).collect();
        std::thread::sleep(std::time::Duration::from_secs(5));
        drop(kept);
    });
    let store = format!("postgres://ci:pw@127.0.0.1:{port}/postgres?connect_timeout=1");
    let started = std::time::Instant::now();
    let out = worldline(Path::new(&store), ["runs"]);
    out.expect_code(2);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("did not answer within 1 s (connect_timeout)"),
        "{out}"
    );
    held.join().unwrap();
}

/// What a server that answered said decides what to do: a database that
/// is not there is named so, not "start the server" (which runs); a key
/// the client refuses is named.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_connection_refused_by_a_running_server_says_what_to_fix() {
    let pg = cluster();
    let store = format!(
        "postgres://worldline:{PASSWORD}@127.0.0.1:{}/nosuchdb",
        pg.port
    );
    let out = worldline(Path::new(&store), ["runs"]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("name a database that exists")
            && !out.stderr.contains("start the server"),
        "{out}"
    );
    let store = format!(
        "postgres://worldline:{PASSWORD}@127.0.0.1:{}/postgres?foo=bar",
        pg.port
    );
    let out = worldline(Path::new(&store), ["runs"]);
    out.expect_code(2);
    assert!(out.stderr.contains("unknown option `foo`"), "{out}");
    assert!(!out.stderr.contains(PASSWORD), "{out}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn credentials_reach_no_bundle_export_or_report() {
    let pg = cluster();
    let store = pg.fresh_store();
    let dir = temp_dir();
    let cases = cases(dir.path(), 2);
    let out = suite(&store, &cases);
    out.expect_code(0);
    let listed = worldline(&store, ["runs", "--json"]);
    let id = listed.json()[0]["run_id"].as_str().unwrap().to_string();
    let file = dir.path().join("run.json");
    worldline(&store, ["export", &id, "-o", s(&file)]).expect_code(0);
    let mut texts = vec![out.stdout.clone(), out.stderr.clone()];
    texts.push(std::fs::read_to_string(&file).unwrap());
    for f in common::files_with_suffix(&store_folder(&store).join("runs"), ".jsonl") {
        texts.push(std::fs::read_to_string(f).unwrap());
    }
    assert!(texts.len() >= 5);
    for t in texts {
        assert!(!t.contains(PASSWORD), "a password in {t}");
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn an_older_schema_is_refused_until_migrate_upgrades_it() {
    let pg = cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    let case = write_case(dir.path(), "good", GOOD);
    common::run_in(&store, &case, &guest("caller-agent"), &worlds_dir()).expect_code(0);
    // The schema as the first version left it (with a run stored then).
    pg.psql(&format!(
        "DROP VIEW {schema}.run_index;
         DROP FUNCTION {schema}.run_created;
         DROP TABLE {schema}.campaigns, {schema}.retention, {schema}.regrades;
         DROP VIEW {schema}.agents;
         DROP TABLE {schema}.redacted_frames, {schema}.redaction, {schema}.audit, {schema}.shard_reports;
         DROP SEQUENCE {schema}.copy_seq;
         ALTER TABLE {schema}.runs DROP COLUMN copy_policy, DROP COLUMN copy_seq;
         ALTER TABLE {schema}.runs DROP COLUMN writer_user, DROP COLUMN writer_host, DROP COLUMN ci_job, DROP COLUMN job_index;
         DROP TABLE {schema}.run_objects, {schema}.leases;
         DROP SEQUENCE {schema}.lease_holders;
         DROP INDEX {schema}.removed_by_run_id;
         ALTER TABLE {schema}.runs DROP COLUMN parent;
         DELETE FROM {schema}.schema_version WHERE version >= 2"
    ));
    let out = worldline(&store, ["runs", "--json"]);
    out.expect_code(2);
    assert!(out.stderr.contains("version 1, older"), "{out}");
    assert!(out.stderr.contains("worldline migrate"), "{out}");
    let migrated = worldline(&store, ["migrate", "--json"]);
    migrated.expect_code(0);
    assert_eq!(
        migrated.json()["schema_version"],
        worldline_pgstore::VERSION,
        "{migrated}"
    );
    // The run stored before copies were kept gets its redacted copy.
    assert_eq!(migrated.json()["copies_made"], 1, "{migrated}");
    let copy = pg.psql(&format!(
        "SELECT count(*) FROM {schema}.redacted_frames f JOIN {schema}.runs r ON r.id = f.run_id
         WHERE f.n = 0 AND f.line LIKE '%\"redacted\"%' AND r.copy_seq IS NOT NULL"
    ));
    assert_eq!(copy, "1");
    // And what it needs is listed, read from its world's manifest: its
    // agent, case, world manifest and the world's files.
    let needs = pg.psql(&format!("SELECT count(*) FROM {schema}.run_objects"));
    assert!(needs.parse::<u32>().unwrap() > 3, "{needs}");
    assert!(!migrated.stdout.contains(PASSWORD), "{migrated}");
    worldline(&store, ["runs", "--json"]).expect_code(0);
    let folder = worldline(Path::new("/tmp/not-a-database"), ["migrate"]);
    folder.expect_code(2);
    assert!(
        folder.stderr.contains("not a postgres:// store"),
        "{folder}"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_retention_policy_set_on_one_machine_is_what_gc_follows_on_another() {
    let pg = cluster();
    let store = pg.fresh_store();
    let dir = temp_dir();
    let machine = |n: &str| dir.path().join(n);
    let on = |m: &str, args: &[&str]| common::on_machine(&store, &machine(m), args);
    on("a", &["migrate", "--json"]).expect_code(0);
    let shown = on("a", &["retention", "--json"]);
    shown.expect_code(0);
    assert_eq!(shown.json()["from"], "the defaults", "{shown}");
    let file = dir.path().join("keep.toml");
    std::fs::write(&file, "[keep]\npassed = 3\nfailed = 40\n").unwrap();
    on("a", &["retention", "--set", s(&file)]).expect_code(0);
    // Nothing of it in machine A's working folder: machine B reads it.
    let folder = common::store_folder(&store)
        .file_name()
        .map(|n| machine("a").join(n))
        .unwrap();
    assert!(!folder.join("policy.toml").exists());
    let gc = on("b", &["gc", "--dry-run", "--json", "--keep-faulted", "5"]);
    gc.expect_code(0);
    let keep = &gc.json()["policy"]["keep"];
    assert_eq!(
        (&keep["passed"], &keep["failed"], &keep["faulted"]),
        (&3.into(), &40.into(), &5.into()),
        "{gc}"
    );
    let shown = on("b", &["retention"]);
    shown.expect_code(0);
    assert!(shown.stdout.contains("from the database"), "{shown}");
    assert!(shown.stdout.contains("passed = 3"), "{shown}");
    // A bad policy is refused naming its file and line; the stored one stays.
    std::fs::write(&file, "[keep]\npassed = 1\nfialed = 3\n").unwrap();
    let bad = on("b", &["retention", "--set", s(&file)]);
    bad.expect_code(2);
    assert!(
        bad.stderr.contains(&format!("{}:3", file.display())),
        "{bad}"
    );
    assert!(bad.stderr.contains("fialed"), "{bad}");
    assert!(!bad.stderr.contains(PASSWORD), "{bad}");
    let gc = on("a", &["gc", "--dry-run", "--json"]);
    assert_eq!(gc.json()["policy"]["keep"]["passed"], 3, "{gc}");

    // A folder store keeps its policy.toml, as before.
    let folder_store = dir.path().join("folder");
    std::fs::write(&file, "[keep]\npassed = 2\n").unwrap();
    worldline(&folder_store, ["retention", "--set", s(&file)]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(folder_store.join("policy.toml")).unwrap(),
        "[keep]\npassed = 2\n"
    );
    let gc = worldline(&folder_store, ["gc", "--dry-run", "--json"]);
    assert_eq!(gc.json()["policy"]["keep"]["passed"], 2, "{gc}");
}

/// A demo case with a judged check whose scripted judge answers `verdict`.
fn judged_case(verdict: &str) -> String {
    format!(
        "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
         task = {{ calls = [{{ tool = \"get_ticket\", args = {{ id = \"T-1\" }} }}] }}\n\
         [expect]\njudge_seed = 11\n[expect.judge_model]\nprovider = \"scripted\"\n\
         responses = ['{{\"verdict\": \"{verdict}\", \"reason\": \"the judge said {verdict}\"}}']\n\
         [[expect.judge]]\nname = \"read\"\nrubric = \"The agent read ticket T-1.\"\nsees = [\"calls\"]\n"
    )
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_regrade_made_on_one_machine_is_the_recorded_one_on_another() {
    let pg = cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    let machine = |n: &str| dir.path().join(n);
    let on = |m: &str, args: &[&str]| common::on_machine(&store, &machine(m), args);
    let case = write_case(dir.path(), "judged", &judged_case("pass"));
    let agent = guest("caller-agent");
    let worlds = worlds_dir();
    let run = on(
        "a",
        &[
            "run",
            s(&case),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "--json",
        ],
    );
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let grade = |m: &str, extra: &[&str]| {
        let mut args = vec![
            "grade",
            &id,
            "--case",
            s(&case),
            "--worlds",
            s(&worlds),
            "--json",
        ];
        args.extend(extra);
        on(m, &args)
    };
    // The judge now answers `fail`: machine A re-judges; machine B's
    // re-grade reads A's as the recorded answer.
    std::fs::write(&case, judged_case("fail")).unwrap();
    grade("b", &[]).expect_code(0);
    let rejudged = grade("a", &["--rejudge"]);
    rejudged.expect_code(1);
    assert!(
        rejudged.stdout.contains("the judge said fail"),
        "{rejudged}"
    );
    let kept = pg.psql(&format!(
        "SELECT n, writer_user <> '' FROM {schema}.regrades WHERE run_id = '{id}'"
    ));
    assert_eq!(kept, "1|t");
    let folder_a = machine("a").join(common::store_folder(&store).file_name().unwrap());
    assert!(!folder_a.join("grades").exists());
    let elsewhere = grade("b", &[]);
    elsewhere.expect_code(1);
    assert!(
        elsewhere.stdout.contains("the judge said fail"),
        "{elsewhere}"
    );
    // Machine B re-judges (`pass` again): machine A reads B's, the newest.
    std::fs::write(&case, judged_case("pass")).unwrap();
    grade("b", &["--rejudge"]).expect_code(0);
    std::fs::write(&case, judged_case("fail")).unwrap();
    let back = grade("a", &[]);
    back.expect_code(0);
    assert!(back.stdout.contains("the judge said pass"), "{back}");
    // A re-judge against an edited rubric keeps the answers to the rubric
    // as it was: back to it, a re-grade reads B's, now not the newest.
    let edited = judged_case("fail").replace("read ticket", "opened ticket");
    std::fs::write(&case, &edited).unwrap();
    grade("a", &["--rejudge"]).expect_code(1);
    std::fs::write(&case, judged_case("fail")).unwrap();
    let earlier = grade("b", &[]);
    earlier.expect_code(0);
    assert!(earlier.stdout.contains("the judge said pass"), "{earlier}");
    // Removing the run removes its re-grades.
    pg.psql(&format!("DELETE FROM {schema}.runs WHERE id = '{id}'"));
    assert_eq!(
        pg.psql(&format!("SELECT count(*) FROM {schema}.regrades")),
        "0"
    );
}

/// A run set aside as not stored (`unstored/`) that the database does
/// hold (the connection ended after the server took it) has its copy
/// removed, with a note, by the next command that reads the store: the
/// user was told to run it again, and stored it twice.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_run_set_aside_that_the_database_holds_loses_its_copy() {
    let pg = cluster();
    let store = pg.fresh_store();
    let dir = temp_dir();
    suite(&store, &cases(dir.path(), 1)).expect_code(0);
    let listed = worldline(&store, ["runs", "--json"]);
    let id = listed.json()[0]["run_id"].as_str().unwrap().to_string();
    // As a store that lost its connection inside the commit leaves it:
    // the bundle moved aside, the folder not yet told of the run.
    let folder = store_folder(&store);
    let aside = folder.join("unstored").join(format!("{id}.jsonl"));
    std::fs::create_dir_all(aside.parent().unwrap()).unwrap();
    std::fs::rename(common::bundle_in(&folder, &id), &aside).unwrap();
    std::fs::remove_file(folder.join("pulled.json")).unwrap();
    let out = worldline(&store, ["runs", "--json"]);
    out.expect_code(0);
    assert!(
        out.stderr
            .contains(&format!("run {id} was stored after all")),
        "{out}"
    );
    assert!(!aside.exists());
    assert_eq!(out.json().as_array().unwrap().len(), 1, "{out}");
}

/// A run the database did not take can be stored as it was made (a
/// native or a model's run made again is another run): exported from
/// where it was set aside, then imported; the next command that reads the
/// store removes the copy set aside (it stayed, though the database held
/// the run).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_run_set_aside_is_stored_as_made_by_export_and_import_and_its_copy_goes() {
    let pg = cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    suite(&store, &cases(dir.path(), 1)).expect_code(0);
    let listed = worldline(&store, ["runs", "--json"]);
    let id = listed.json()[0]["run_id"].as_str().unwrap().to_string();
    // As a run the server never took leaves it: set aside, not in the
    // database.
    let folder = store_folder(&store);
    let aside = folder.join("unstored").join(format!("{id}.jsonl"));
    std::fs::create_dir_all(aside.parent().unwrap()).unwrap();
    std::fs::rename(common::bundle_in(&folder, &id), &aside).unwrap();
    pg.psql(&format!("DELETE FROM {schema}.runs WHERE id = '{id}'"));
    let file = dir.path().join("run.json");
    worldline(&store, ["export", s(&aside), "-o", s(&file)]).expect_code(0);
    let imported = worldline(&store, ["import", s(&file), "--json"]);
    imported.expect_code(0);
    assert_eq!(imported.json()["new"], true, "{imported}");
    assert_eq!(
        pg.psql(&format!(
            "SELECT count(*) FROM {schema}.runs WHERE id = '{id}'"
        )),
        "1"
    );
    let out = worldline(&store, ["runs", "--json"]);
    out.expect_code(0);
    assert!(!aside.exists(), "the copy set aside stays: {out}");
    assert_eq!(out.json().as_array().unwrap().len(), 1, "{out}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn an_import_into_a_database_store_skips_a_killed_run_and_imports_the_runs_after_it() {
    let dir = temp_dir();
    let folder = dir.path().join("folder");
    let cases = cases(dir.path(), 2);
    let agent = guest("caller-agent");
    let run = |case: &str| {
        let out = common::run_in(&folder, &cases.join(case), &agent, &worlds_dir());
        out.expect_code(0);
        out.json()["run_id"].as_str().unwrap().to_string()
    };
    let first = run("c000.toml");
    // A run killed with SIGKILL once it has written events: no footer.
    let endless = write_case(
        dir.path(),
        "endless",
        r#"world = "demo@v1"
seed = 11
clock = 2026-03-01T12:00:00Z
task = { mode = "calls", n = 1_000_000_000_000 }

[limits]
fuel = 1_000_000_000_000_000_000
max_events = 5_000_000
timeout_ms = 86_400_000
"#,
    );
    let hostile = guest("hostile-agent");
    let mut child = common::worldline_spawn(
        &folder,
        [
            "run",
            s(&endless),
            "--agent",
            s(&hostile),
            "--worlds",
            s(&worlds_dir()),
        ],
    );
    let t0 = std::time::Instant::now();
    let killed = loop {
        let found = common::files_with_suffix(&folder.join("runs"), ".jsonl")
            .into_iter()
            .find(|p| {
                std::fs::read(p).is_ok_and(|b| b.iter().filter(|&&c| c == b'\n').count() > 10)
            });
        if let Some(p) = found.filter(|p| !p.ends_with(format!("{first}.jsonl"))) {
            break p;
        }
        assert!(
            t0.elapsed().as_secs() < 60,
            "the endless run wrote no events"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    let killed = killed.file_stem().unwrap().to_str().unwrap().to_string();
    assert!(
        !std::fs::read_to_string(folder.join("runs").join(format!("{killed}.jsonl")))
            .unwrap()
            .contains("{\"footer\""),
        "killed: no footer"
    );
    // A run after it (run ids are in time order; import takes them so).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let last = run("c001.toml");
    assert!(first < killed && killed < last, "{first} {killed} {last}");

    let store = cluster().fresh_store();
    let out = worldline(&store, ["import", s(&folder), "--json"]);
    out.expect_code(1);
    let imported: Vec<&str> = out.json()["imported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(imported, [first.as_str(), last.as_str()], "{out}");
    let skipped = &out.json()["skipped"];
    assert_eq!(skipped.as_array().unwrap().len(), 1, "{out}");
    assert_eq!(skipped[0]["run_id"], killed.as_str(), "{out}");
    let reason = skipped[0]["reason"].as_str().unwrap();
    assert!(reason.contains("no footer"), "{out}");
    assert!(!reason.contains("server"), "{out}");
    let text = worldline(&store, ["import", s(&folder)]);
    text.expect_code(1);
    assert!(text.stderr.contains(&killed), "{text}");
    assert!(!text.stderr.contains("server"), "{text}");
    // Nothing set aside as unstored; the database holds the two.
    let aside = store_folder(&store).join("unstored");
    assert!(
        std::fs::read_dir(&aside).map_or(true, |mut d| d.next().is_none()),
        "{}",
        aside.display()
    );
    let listed = worldline(&store, ["runs", "--json"]);
    listed.expect_code(0);
    assert_eq!(listed.json().as_array().unwrap().len(), 2, "{listed}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_store_in_a_system_schema_is_refused_and_nothing_is_made_there() {
    let pg = cluster();
    for schema in ["information_schema", "pg_evals"] {
        let out = worldline(Path::new(&pg.store_in(schema)), ["migrate"]);
        out.expect_code(2);
        assert!(out.stderr.contains("PostgreSQL's own"), "{out}");
        assert!(out.stderr.contains("?schema="), "{out}");
    }
    let made = pg.psql(
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'information_schema' AND tablename = 'runs'",
    );
    assert_eq!(made, "0");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn of_imports_of_one_run_at_once_only_one_says_it_was_new() {
    let dir = temp_dir();
    let folder = dir.path().join("folder");
    let cases = cases(dir.path(), 1);
    let out = common::run_in(
        &folder,
        &cases.join("c000.toml"),
        &guest("caller-agent"),
        &worlds_dir(),
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let file = dir.path().join("run.wl");
    worldline(&folder, ["export", &id, "-o", s(&file)]).expect_code(0);
    let store = cluster().fresh_store();
    // The schema made first, so the importers race on the run only.
    worldline(&store, ["migrate"]).expect_code(0);
    // Each on a machine of its own: each finds the run new in its
    // working folder, and only the database knows who stored it first.
    let importers: Vec<_> = (0..4)
        .map(|i| {
            common::cli()
                .args(["import", s(&file), "--json", "--store", s(&store)])
                .env(
                    "WORLDLINE_STORE_CACHE",
                    dir.path().join(format!("machine-{i}")),
                )
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let news: Vec<bool> = importers
        .into_iter()
        .map(|c| {
            let out = common::CliOutput::of(c.wait_with_output().unwrap());
            out.expect_code(0);
            out.json()["new"].as_bool().unwrap()
        })
        .collect();
    assert_eq!(news.iter().filter(|n| **n).count(), 1, "{news:?}");
}

/// A campaign on two processes given `--store` with a password starts
/// its worker with the address without it (the password in the worker's
/// environment, which only its owner reads): it was on the worker's
/// command line, which any user of the machine reads in `/proc`.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_campaigns_worker_has_no_password_on_its_command_line() {
    if common::workers::one_core() {
        return;
    }
    let pg = cluster();
    let store = pg.fresh_store();
    let case = common::workspace_root().join("cases/incident/fuzz-stale-deploys.toml");
    let naive = guest("naive-agent");
    let campaign = |runs: &str| {
        let args = [
            s(&case),
            "--agent",
            s(&naive),
            "--runs",
            runs,
            "--jobs",
            "2",
        ];
        std::iter::once("fuzz")
            .chain(args)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // The worker connects with it: the campaign's runs are counted whole.
    let mut short = campaign("8");
    short.push("--json".into());
    let out = worldline(&store, &short);
    assert!(out.code == 0 || out.code == 1, "{out}");
    assert_eq!(out.json()["summary"]["runs"], 8, "{out}");
    let mut parent = common::worldline_spawn(&store, campaign("1000000"));
    let worker = common::workers::worker_of(parent.id(), "--fuzz-worker");
    let cmdline =
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{worker}/cmdline")).unwrap())
            .replace('\0', " ");
    let environ = std::fs::read(format!("/proc/{worker}/environ")).unwrap();
    parent.kill().unwrap();
    parent.wait().unwrap();
    assert!(!cmdline.contains(PASSWORD), "{cmdline}");
    assert!(
        cmdline.contains(&format!("postgres://worldline@127.0.0.1:{}/", pg.port)),
        "{cmdline}"
    );
    assert!(
        environ
            .split(|b| *b == 0)
            .any(|v| v == format!("PGPASSWORD={PASSWORD}").as_bytes()),
        "the worker is given the password in its environment"
    );
}

/// A killed run resumed on a database store: the database never holds the
/// killed run (finished runs only), so `resume` says so, and the resumed
/// run's page on another machine shows its parent unlinked, not in the
/// store and why (it linked to a page saying there was no such run).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_run_resumed_on_a_database_store_names_a_parent_the_store_does_not_hold() {
    let pg = cluster();
    let store = pg.fresh_store();
    let dir = temp_dir();
    let machine = dir.path().join("a");
    let on_a = |args: &[&str]| common::on_machine(&store, &machine, args);
    // Ends at its event limit, once resumed; killed well before.
    let case = write_case(
        dir.path(),
        "long",
        r#"world = "demo@v1"
seed = 11
clock = 2026-03-01T12:00:00Z
task = { mode = "calls", n = 1_000_000_000_000 }

[limits]
fuel = 1_000_000_000_000_000_000
max_events = 5_000
timeout_ms = 86_400_000
"#,
    );
    let hostile = guest("hostile-agent");
    let worlds = worlds_dir();
    let mut child = common::cli()
        .args([
            "run",
            s(&case),
            "--agent",
            s(&hostile),
            "--worlds",
            s(&worlds),
            "--store",
        ])
        .arg(&store)
        .env("WORLDLINE_STORE_CACHE", &machine)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let folder = machine.join(common::store_folder(&store).file_name().unwrap());
    let t0 = std::time::Instant::now();
    let killed = loop {
        let found = common::files_with_suffix(&folder.join("runs"), ".jsonl")
            .into_iter()
            .find(|p| {
                std::fs::read(p).is_ok_and(|b| b.iter().filter(|&&c| c == b'\n').count() > 10)
            });
        if let Some(p) = found {
            break p;
        }
        assert!(t0.elapsed().as_secs() < 60, "the run wrote no events");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    assert!(
        !std::fs::read_to_string(&killed)
            .unwrap()
            .contains("{\"footer\""),
        "killed before its event limit: no footer"
    );
    let killed = killed.file_stem().unwrap().to_str().unwrap().to_string();
    let resumed = on_a(&["resume", &killed, "--json"]);
    assert!(
        resumed
            .stderr
            .contains("a database store keeps finished runs only"),
        "{resumed}"
    );
    let id = resumed.json()["run_id"].as_str().unwrap().to_string();
    // Another machine reads the resumed run; its parent is nowhere.
    let ui = crate::ui_support::Server::start(&store, &[]);
    let page = ui.get(&format!("/run/{id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("parent-absent"), "{}", page.body);
    assert!(
        page.body.contains("keeps finished runs only"),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains(&format!("href=\"/run/{killed}\"")),
        "no link to a run the store does not hold: {}",
        page.body
    );
}

/// `runs --json`, `diff --json` and the database's `run_index` give the
/// rules each run ran under (none of them did); a schema from before
/// `rules` (version 7), upgraded by `migrate`, gives the runs stored
/// before it theirs, read from their headers.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn each_run_s_rules_are_listed_and_an_upgraded_schema_gives_them() {
    let pg = cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    let seven = common::imported_fixture(&store, "before-rules-8", "no-output.json");
    let zero = common::imported_fixture(&store, "before-rules", "dot-paths.json");
    let mut want = vec![format!("{seven} 7"), format!("{zero} 0")];
    want.sort();
    // The schema as version 7 left it.
    pg.psql(&format!(
        "SET search_path TO {schema}; DROP VIEW run_index; {} DELETE FROM schema_version WHERE version >= 8",
        include_str!("../../crates/pgstore/src/migrations/0007-run-index-footer.sql")
    ));
    worldline(&store, ["runs", "--json"]).expect_code(2);
    worldline(&store, ["migrate", "--json"]).expect_code(0);
    let view = pg.psql(&format!(
        "SELECT run_id || ' ' || rules FROM {schema}.run_index ORDER BY run_id"
    ));
    assert_eq!(view.lines().collect::<Vec<_>>(), want);
    let listed = worldline(&store, ["runs", "--json"]);
    listed.expect_code(0);
    let mut got: Vec<String> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{} {}", r["run_id"].as_str().unwrap(), r["rules"]))
        .collect();
    got.sort();
    assert_eq!(got, want, "{listed}");
    let diff = worldline(&store, ["diff", &seven, &zero, "--json"]);
    diff.expect_code(1);
    assert_eq!(diff.json()["rules"], serde_json::json!([7, 0]), "{diff}");
}

/// A fork whose agent departs from the recording before the fork point
/// is exit 2 and kept nowhere, on a database store as on a folder: it
/// was stored in the database all the same (`[trapped]`), and `verify`
/// of the store then reported it diverged.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_fork_that_departed_from_its_parent_is_not_stored() {
    let pg = cluster();
    let store = pg.fresh_store();
    let dir = temp_dir();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let case = common::workspace_root().join("cases/incident/close-denied.toml");
    let (naive, careful) = (guest("naive-agent"), guest("careful-agent"));
    let worlds = common::workspace_root().join("worlds");
    let ran = common::on_machine(
        &store,
        &a,
        &[
            "run",
            s(&case),
            "--agent",
            s(&naive),
            "--worlds",
            s(&worlds),
            "--json",
        ],
    );
    let id = ran.json()["run_id"].as_str().unwrap().to_string();
    let fork = common::on_machine(
        &store,
        &a,
        &["fork", &id, "--at", "4", "--agent", s(&careful)],
    );
    fork.expect_code(2);
    assert!(
        fork.stderr.contains("departed from the recording"),
        "{fork}"
    );
    for machine in [&a, &b] {
        let runs = common::on_machine(&store, machine, &["runs", "--json"]);
        assert_eq!(runs.json().as_array().map(Vec::len), Some(1), "{runs}");
        common::on_machine(&store, machine, &["verify", "--json"]).expect_code(0);
    }
}

/// `redaction --set` whose connection the server ends midway is the
/// store's failure (`"kind": "store"`, exit 2, naming it), the old policy
/// kept: it was exit 4, `"kind": "internal"`, naming nothing. Its
/// transaction is made to wait on a row another session holds, then its
/// connection ended (as a server shutting down ends it).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_policy_set_as_the_server_ends_its_connection_is_the_stores_failure() {
    let pg = cluster();
    let schema = fresh_schema();
    let store = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    suite(&store, &cases(dir.path(), 1)).expect_code(0);
    let policy = dir.path().join("redact.toml");
    std::fs::write(&policy, "detectors = [\"email\"]\n").unwrap();
    let mut holder = pg.psql_spawn(&format!(
        "BEGIN; SELECT 1 FROM {schema}.redaction WHERE id = 1 FOR UPDATE; SELECT pg_sleep(60); COMMIT;"
    ));
    // The row held before the policy is set (the holder is in its sleep).
    let t0 = std::time::Instant::now();
    let sleeping = format!(
        "SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE '%{schema}.redaction%'"
    );
    let holds = loop {
        let pid = pg.psql(&sleeping);
        if !pid.is_empty() {
            break pid;
        }
        assert!(t0.elapsed().as_secs() < 60, "the holder never held the row");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let set = common::worldline_spawn(&store, ["redaction", "--set", s(&policy), "--json"]);
    let waiting =
        format!("SELECT pid FROM pg_stat_activity WHERE {holds} = ANY(pg_blocking_pids(pid))");
    let t0 = std::time::Instant::now();
    let pid = loop {
        let pid = pg.psql(&waiting);
        if !pid.is_empty() {
            break pid;
        }
        assert!(t0.elapsed().as_secs() < 60, "redaction --set never waited");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    pg.psql(&format!("SELECT pg_terminate_backend({pid})"));
    let out = common::CliOutput::of(set.wait_with_output().unwrap());
    let _ = holder.kill();
    let _ = holder.wait();
    out.expect_code(2);
    let e = &out.json()["error"];
    assert_eq!(e["kind"], "store", "{out}");
    assert_eq!(
        e["file"],
        s(&store).replace(&format!(":{PASSWORD}@"), "@"),
        "{out}"
    );
    let kept = worldline(&store, ["redaction", "--json"]);
    assert_eq!(kept.json()["policy"], "", "{kept}");
}
