//! A database store as the user named it: a schema that holds no store is
//! refused by the commands that report on one (nothing made in it); an
//! address the project file or `import`'s FROM gave is blamed there, not on
//! `--store`; a run the store does not hold is said to be missing from the
//! store named, not from its working folder. The real binary on the test
//! cluster (`common/pg.rs`).

use crate::common;

use common::pg::{PASSWORD, cluster, fresh_schema};
use common::{temp_dir, worldline, worldline_at};
use std::path::{Path, PathBuf};

/// The address as worldline shows it (no password).
fn shown(store: &str) -> String {
    store.replace(&format!(":{PASSWORD}@"), "@")
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_report_on_a_schema_that_holds_no_store_is_refused_and_makes_nothing() {
    let pg = cluster();
    let schema = fresh_schema();
    let store = pg.store_in(&schema);
    for args in [
        vec!["verify", "--json"],
        vec!["index", "--check", "--json"],
        vec!["runs", "--json"],
        vec!["history", "somerun", "--json"],
        // These made the store (its schema and roles): the UI served it
        // empty, the audit had no reads, the policy was the default.
        vec!["audit", "--json"],
        vec!["merge", "--suite", "s", "--json"],
        vec!["redaction", "--json"],
    ] {
        let limit = std::time::Duration::from_secs(60);
        let out = common::worldline_within(limit, Path::new(&store), &args)
            .unwrap_or_else(|| panic!("{args:?} ran on (a UI served the schema)"));
        out.expect_code(2);
        let e = &out.json()["error"];
        assert_eq!(e["file"], shown(&store), "{args:?}: {out}");
        let m = e["message"].as_str().unwrap();
        assert!(
            m.contains(&format!("no worldline store in schema `{schema}`"))
                && m.contains("check `schema=` in --store")
                && m.contains(
                    "the first `run`, `test` or `fuzz` makes a store, and so does `worldline migrate`"
                ),
            "{args:?}: {out}"
        );
        assert!(!out.stdout.contains(PASSWORD), "{out}");
    }
    let limit = std::time::Duration::from_secs(60);
    let ui = common::worldline_within(limit, Path::new(&store), ["ui", "--port", "0"])
        .expect("the UI served a schema that holds no store");
    ui.expect_code(2);
    assert!(
        ui.stderr
            .contains(&format!("no worldline store in schema `{schema}`")),
        "{ui}"
    );
    let made = pg.psql(&format!(
        "SELECT count(*) FROM pg_namespace WHERE nspname = '{schema}'"
    ));
    assert_eq!(made, "0", "the schema was made");
    let roles = pg.psql(&format!(
        "SELECT count(*) FROM pg_roles WHERE rolname LIKE '{schema}\\_%'"
    ));
    assert_eq!(roles, "0", "roles were made");
}

/// A project folder whose worldline.toml names `store` on its line 2.
fn project(store: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = temp_dir();
    let file = dir.path().join("worldline.toml");
    std::fs::write(&file, format!("# the team's store\nstore = \"{store}\"\n")).unwrap();
    (dir, file)
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn an_address_the_project_file_or_import_gave_is_blamed_there_not_on_store() {
    let pg = cluster();
    let no_db = format!(
        "postgres://worldline:{PASSWORD}@127.0.0.1:{}/nosuchdb",
        pg.port
    );
    let bad_schema = format!("{}?schema=Evals", no_db.replace("/nosuchdb", "/postgres"));
    // The address as the project file gives it.
    let (dir, file) = project(&bad_schema);
    let out = worldline_at(dir.path(), ["runs", "--json"], &[]);
    out.expect_code(2);
    let e = &out.json()["error"];
    assert_eq!(e["file"], file.display().to_string(), "{out}");
    assert_eq!(e["line"], 2, "{out}");
    assert!(
        e["message"].as_str().unwrap().contains("schema `Evals`"),
        "{out}"
    );
    let (dir, file) = project(&no_db);
    let out = worldline_at(dir.path(), ["runs"], &[]);
    out.expect_code(2);
    let said = format!(
        "name a database that exists in `store` in {} (line 2)",
        file.display()
    );
    assert!(
        out.stderr.contains(&said) && !out.stderr.contains("--store"),
        "{out}"
    );
    // `--store` given overrides the file, and is what is blamed.
    let out = worldline_at(dir.path(), ["runs", "--store", &no_db], &[]);
    out.expect_code(2);
    assert!(out.stderr.contains("exists in --store"), "{out}");
    // `import`'s FROM.
    let into = temp_dir();
    let out = worldline(&into.path().join("s"), ["import", &no_db, "--json"]);
    out.expect_code(2);
    let m = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        m.contains("exists in the FROM argument") && !m.contains("--store"),
        "{out}"
    );
    let out = worldline(&into.path().join("s"), ["import", &bad_schema, "--json"]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["file"], "FROM", "{out}");
    assert!(!out.stdout.contains(PASSWORD), "{out}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_run_the_store_does_not_hold_is_missing_from_the_store_named() {
    let pg = cluster();
    let store = pg.store_in(&fresh_schema());
    let dir = temp_dir();
    let case = common::write_case(dir.path(), "c", common::DEMO_PASSES);
    let worlds = common::worlds_dir();
    let agent = common::guest("caller-agent");
    common::run_in(Path::new(&store), &case, &agent, &worlds).expect_code(0);
    for args in [
        vec!["replay", "nosuchrun"],
        vec!["otel", "nosuchrun", "-o", "nosuch.pb"],
        vec!["pin", "nosuchrun"],
        vec!["show", "nosuchrun", "--at", "0"],
        vec!["history", "nosuchrun"],
        vec!["fork", "nosuchrun", "--at", "0"],
    ] {
        let mut args = args.clone();
        args.push("--json");
        let limit = std::time::Duration::from_secs(60);
        let out = common::worldline_within(limit, Path::new(&store), &args)
            .unwrap_or_else(|| panic!("{args:?} ran on (a UI served the schema)"));
        out.expect_code(2);
        let e = &out.json()["error"];
        assert_eq!(e["file"], shown(&store), "{args:?}: {out}");
        assert!(
            (e["message"].as_str().unwrap()).contains("no run `nosuchrun` in this store"),
            "{args:?}: {out}"
        );
    }
}
