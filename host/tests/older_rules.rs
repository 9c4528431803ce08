//! Runs recorded under older rules (decision 0423), and one under a later
//! worldline's, read and run again by today's commands: `repro` repeats a
//! run under its rules; `rerun`, `case from-run` and `fork` say when they
//! run under other rules than the run's; a case the run recorded that a
//! rule added since refuses is an input error; a later worldline's run is
//! refused naming what the command does, and `verify` counts it apart.
//! The real binary, the recorded bundles of `tests/bundles`, the
//! caller-agent guest.

use crate::common;

use common::{temp_dir, wl};
use std::path::Path;

/// `tests/bundles/before-rules-8/no-output.json`: a native `/bin/true` run
/// graded under rules 7, its failed check named `output cause_deploy`.
const NO_OUTPUT: (&str, &str) = ("before-rules-8", "no-output.json");

/// `tests/bundles/before-rules/dot-paths.json`: a rules-0 run whose agent
/// wrote `./notes/report.md`, another file than `notes/report.md` then.
const DOT_PATHS: (&str, &str) = ("before-rules", "dot-paths.json");

fn import(store: &Path, (folder, file): (&str, &str)) -> String {
    common::imported_fixture(store, folder, file)
}

/// A repetition of a run recorded under older rules runs under them, as a
/// fork does: a rules-7 run's failure keeps its name (it was "not
/// reproduced", the same failure renamed by rules 8), a rules-0 run fails
/// as it did (it passed under rules 8, `0/3`); the report says which.
#[test]
fn repro_repeats_a_run_under_the_rules_it_ran_under() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    for (fixture, rules) in [(NO_OUTPUT, 7), (DOT_PATHS, 0)] {
        let run = import(&store, fixture);
        let out = wl(&store, &[&"repro", &run, &"--times", &"2", &"--json"]);
        out.expect_code(0);
        let doc = out.json();
        assert_eq!(doc["reproduced"], 2, "{out}");
        assert_eq!(doc["rules"], rules, "{out}");
        let text = wl(&store, &[&"repro", &run, &"--times", &"1"]);
        assert!(
            text.stdout
                .contains(&format!("under rules {rules}, the run's (decision 0423)")),
            "{text}"
        );
    }
}
