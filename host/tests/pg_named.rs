//! A database store as the user named it: a run the store does not hold
//! is said to be missing from the store named, not from its working
//! folder. The real binary on the test cluster (`common/pg.rs`).

use crate::common;

use common::pg::{PASSWORD, cluster, fresh_schema};
use common::{temp_dir, worldline};
use std::path::Path;

/// The address as worldline shows it (no password).
fn shown(store: &str) -> String {
    store.replace(&format!(":{PASSWORD}@"), "@")
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
        let out = worldline(Path::new(&store), &args);
        out.expect_code(2);
        let e = &out.json()["error"];
        assert_eq!(e["file"], shown(&store), "{args:?}: {out}");
        assert!(
            (e["message"].as_str().unwrap()).contains("no run `nosuchrun` in this store"),
            "{args:?}: {out}"
        );
    }
}
