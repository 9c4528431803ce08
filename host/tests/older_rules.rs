//! Runs recorded under older rules (decision 0423), and one under a later
//! worldline's, read and run again by today's commands: `repro` repeats a
//! run under its rules; `rerun`, `case from-run` and `fork` say when they
//! run under other rules than the run's; a case the run recorded that a
//! rule added since refuses is an input error; a later worldline's run is
//! refused naming what the command does, and `verify` counts it apart.
//! The real binary, the recorded bundles of `tests/bundles`, the
//! caller-agent guest.

use crate::common;
use crate::ui_support;

use common::{guest, temp_dir, wl};
use serde_json::Value;
use std::path::Path;
use worldline_log::log::rules::CURRENT;

/// Rules a later worldline records under.
const LATER: u32 = CURRENT + 1;

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

/// `rerun` of a run graded under rules 7 finds its checks by their old
/// names: the same failing check was `changed: output cause_deploy equals:
/// null -> false`. The rerun runs under this worldline's rules and says
/// so.
#[test]
fn rerun_of_a_run_graded_before_rules_8_matches_a_renamed_check() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let run = import(&store, NO_OUTPUT);
    let agent = guest("caller-agent");
    let out = wl(&store, &[&"rerun", &run, &"--agent", &agent, &"--json"]);
    out.expect_code(1);
    let doc = out.json();
    assert_eq!(doc["changed_assertions"], serde_json::json!([]), "{out}");
    assert_eq!(doc["original"]["rules"], 7, "{out}");
    assert_eq!(doc["rules"], CURRENT, "{out}");
    assert!(
        out.stderr.contains(&format!(
            "was recorded under rules 7; this rerun is a new run, under rules {CURRENT}"
        )),
        "{out}"
    );
}

/// `rerun` and `case from-run` of a rules-0 run say that what they make
/// runs under this worldline's rules (the rerun passed where the run
/// failed, and the case made from the failing run passed, without a word).
#[test]
fn rerun_and_case_from_run_of_an_older_run_say_its_rules() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let run = import(&store, DOT_PATHS);
    let agent = guest("caller-agent");
    let out = wl(&store, &[&"rerun", &run, &"--agent", &agent, &"--json"]);
    let doc = out.json();
    let notes = doc["notes"].as_array().unwrap();
    assert!(
        notes.len() == 1
            && notes[0]
                .as_str()
                .unwrap()
                .contains("recorded under rules 0"),
        "{out}"
    );
    assert_eq!(
        (&doc["original"]["rules"], &doc["rules"]),
        (&0.into(), &CURRENT.into())
    );
    assert!(out.stderr.contains("note: run "), "{out}");
    let case = dir.path().join("regress.toml");
    let out = wl(
        &store,
        &[&"case", &"from-run", &run, &"-o", &case, &"--json"],
    );
    out.expect_code(0);
    let said = out.json()["not_carried"].to_string();
    assert!(
        said.contains("the rules the run ran under (rules 0)"),
        "{out}"
    );
    let text = wl(
        &store,
        &[
            &"case",
            &"from-run",
            &run,
            &"-o",
            &dir.path().join("again.toml"),
        ],
    );
    assert!(
        text.stdout
            .contains("not carried: the rules the run ran under (rules 0)"),
        "{text}"
    );
}

/// A run whose recorded case (or world) a rule added since refuses makes
/// no case: exit 2, an input error naming the run, the problem and the
/// recorded case to copy; no file named that was not written (it was exit
/// 4, "internal", placed in the case never written or in the store's
/// cache of the world).
#[test]
fn case_from_run_of_a_case_refused_since_is_an_input_error() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    for ((folder, file), said) in [
        (
            ("before-0412", "run.json"),
            "[[expect.state]] #1: min = 2 is above max = 1",
        ),
        (("before-late-clock", "late-clock.json"), "(clock: is after"),
        (
            ("before-wide-integers", "wide-row.json"),
            "(its world's data/tickets.jsonl:1:74: the integer 18446744073709551616",
        ),
    ] {
        let run = import(&store, (folder, file));
        let case = dir.path().join(format!("{folder}.toml"));
        let out = wl(
            &store,
            &[&"case", &"from-run", &run, &"-o", &case, &"--json"],
        );
        out.expect_code(2);
        let error = &out.json()["error"];
        assert_eq!(error["kind"], "input", "{out}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains("its case is refused by a rule added after the run was recorded")
                && message.contains(said)
                && message.contains("copy the case it recorded"),
            "{out}"
        );
        assert!(
            !message.contains(&format!("{folder}.toml")) && !message.contains("worlds/"),
            "{out}"
        );
        assert!(!case.exists());
    }
}

/// `fork --json` says the rules the fork ran under and its notes, which
/// `fork --samples` now says too (its branches run under rules 0).
#[test]
fn a_fork_of_an_older_run_says_its_rules_in_every_form() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let run = import(&store, DOT_PATHS);
    let out = wl(&store, &[&"fork", &run, &"--at", &"3", &"--json"]);
    let doc = out.json();
    assert_eq!(doc["rules"], 0, "{out}");
    assert!(
        doc["notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("recorded under rules 0, and its fork runs under them too")),
        "{out}"
    );
    let out = wl(&store, &[&"fork", &run, &"--at", &"3", &"--samples", &"2"]);
    assert!(
        out.stderr
            .contains("recorded under rules 0, and its fork runs under them too"),
        "{out}"
    );
}

/// The UI's fork form shows the fork's notes (it sent the browser to the
/// fork's page, every note dropped).
#[test]
fn the_ui_s_fork_of_an_older_run_shows_its_notes() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let run = import(&store, DOT_PATHS);
    let s = ui_support::Server::start(&store, &[]);
    let event = s.get(&format!("/run/{run}/event/3"));
    assert_eq!(event.status, 200, "{event:?}");
    let csrf = ui_support::input_value(&event.body, "csrf").unwrap();
    let r = ui_support::request(
        s.port,
        "POST",
        &format!("/run/{run}/event/3/fork?token={}", s.token),
        &[
            ("Host", &s.host()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &ui_support::form(&[("csrf", &csrf)]),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body.contains("fork-notes")
            && r.body
                .contains("recorded under rules 0, and its fork runs under them too")
            && r.body.contains("id=\"parent\""),
        "{}",
        r.body
    );
}

/// A run recorded under a later worldline's rules: a reader says to read
/// it with that worldline, a replay to replay it there (every reader said
/// "replay, fork or resume"); `verify` counts it apart, not as drift (it
/// was `unreadable`, drift 100%, exit 1).
#[test]
fn a_later_worldline_s_run_is_refused_naming_the_command_and_verify_counts_it_apart() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let fixture = common::workspace_root().join("tests/bundles/before-rules");
    let (agent, worlds) = (guest("caller-agent"), fixture.join("worlds"));
    let case = fixture.join("dot-paths.toml");
    let out = wl(
        &store,
        &[
            &"run",
            &case,
            &"--agent",
            &agent,
            &"--worlds",
            &worlds,
            &"--json",
        ],
    );
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let bundle = common::bundle_in(&store, &run);
    let later = dir.path().join("later.jsonl");
    common::under_rules(&bundle, LATER, &later);
    std::fs::rename(&later, &bundle).unwrap();
    let refused = |args: &[&dyn AsRef<std::ffi::OsStr>], does: &str| {
        let out = wl(&store, args);
        out.expect_code(2);
        assert!(
            out.stderr.contains(&format!(
                "recorded under rules {LATER} by a later worldline; this one runs rules up to {CURRENT}: {does} it with that worldline or a later one"
            )),
            "{out}"
        );
    };
    refused(&[&"show", &run, &"--at", &"1"], "read");
    refused(&[&"diff", &run, &run], "read");
    refused(&[&"replay", &run], "replay, fork or resume");
    let out = wl(&store, &[&"verify", &"--json"]);
    out.expect_code(0);
    let doc: &Value = out.json();
    assert_eq!(doc["unreadable"], 0, "{out}");
    assert_eq!(doc["drift_rate"], 0.0, "{out}");
    assert_eq!(doc["later_rules"], 1, "{out}");
    assert_eq!(doc["later_rules_runs"][0]["run"], run.as_str(), "{out}");
    assert_eq!(doc["later_rules_runs"][0]["rules"], LATER, "{out}");
    let out = wl(&store, &[&"verify"]);
    out.expect_code(0);
    assert!(
        out.stdout
            .contains("1 from a later worldline not replayed; drift rate 0.0%"),
        "{out}"
    );
}

/// Each run's rules in `runs --json`, by id.
fn listed_rules(store: &Path) -> Vec<(String, Value)> {
    let out = wl(store, &[&"runs", &"--json"]);
    out.expect_code(0);
    let mut rows: Vec<(String, Value)> = out
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run_id"].as_str().unwrap().to_string(),
                r["rules"].clone(),
            )
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

/// `runs --json` gives each run's rules and `diff --json` each side's
/// (neither said them: a store's runs under older rules could not be
/// listed as such); a run index written before `rules` was a column
/// (version 1) opens, its rows' rules read from their bundles.
#[test]
fn runs_and_diff_say_each_run_s_rules_and_an_older_index_learns_them() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (seven, zero) = (import(&store, NO_OUTPUT), import(&store, DOT_PATHS));
    let mut want = vec![(seven.clone(), Value::from(7)), (zero.clone(), 0.into())];
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(listed_rules(&store), want);
    let diff = wl(&store, &[&"diff", &seven, &zero, &"--json"]);
    diff.expect_code(1);
    assert_eq!(diff.json()["rules"], serde_json::json!([7, 0]), "{diff}");
    // The index as a worldline before `rules` wrote it.
    let index = store.join("index.sqlite");
    let sql = |script: &str| {
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); {script}; c.commit(); c.close()"
            ))
            .arg(&index)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    sql("c.execute('ALTER TABLE runs DROP COLUMN rules'); c.execute('PRAGMA user_version=1')");
    assert_eq!(listed_rules(&store), want);
    let version = "print(c.execute('PRAGMA user_version').fetchone()[0])";
    assert_eq!(sql(version).trim(), "2");
}
