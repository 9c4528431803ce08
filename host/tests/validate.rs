//! `worldline validate` on the real binary: a sound case validates; a
//! deliberately broken one (its oracle fails, doing nothing passes, its
//! expected answer is in the task, a gold call that cannot succeed) is
//! flagged with the reason, in the table and in `--json`.

use crate::common;

use common::{temp_dir, worldline, worlds_dir, write_case};
use serde_json::Value;
use std::path::Path;

const HEAD: &str = "world = \"demo@v1\"\nseed = 5\nclock = 2026-03-01T12:00:00Z\n";

fn validate(store: &Path, cases: &Path, json: bool) -> common::CliOutput {
    let worlds = worlds_dir();
    let mut args = vec![
        "validate".to_string(),
        cases.display().to_string(),
        "--worlds".into(),
        worlds.display().to_string(),
    ];
    if json {
        args.push("--json".into());
    }
    worldline(store, &args)
}

/// The result of case `name` in a `--json` report.
fn result<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["case"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("no result for {name} in {report:#}"))
}

#[test]
fn a_sound_case_validates_and_its_oracle_passes_while_doing_nothing_fails() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    write_case(
        &cases,
        "close",
        &format!(
            "{HEAD}task = {{ ticket = \"T-1\" }}\n\n[expect]\n\
             [[expect.gold]]\ntool = \"close_ticket\"\nargs = {{ id = \"T-1\" }}\n\n\
             [expect.output]\ncontains = \"closed as asked\"\n"
        ),
    );
    let out = validate(&dir.path().join("store"), &cases, true);
    out.expect_code(0);
    let r = result(out.json(), "close");
    assert_eq!(r["verdict"], "ok", "{out}");
    assert_eq!(r["oracle"]["passed"], true);
    assert_eq!(r["do_nothing"]["passed"], false);
    assert_eq!(r["empty_answer"]["passed"], false);
    assert_eq!(r["deterministic"], true);
    assert_eq!(r["leaks"], serde_json::json!([]));
    let text = validate(&dir.path().join("store"), &cases, false);
    text.expect_code(0);
    assert!(
        text.stdout
            .contains("validate: 1 cases, 1 ok, 0 failing, 0 broken"),
        "{text}"
    );
}

#[test]
fn broken_cases_are_flagged_with_their_reasons_and_exit_1() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    // The gold calls close T-1, but the checks want it open: the oracle fails.
    write_case(
        &cases,
        "oracle-fails",
        &format!(
            "{HEAD}task = {{ ticket = \"T-1\" }}\n\n[expect]\n\
             [[expect.gold]]\ntool = \"close_ticket\"\nargs = {{ id = \"T-1\" }}\n\n\
             [[expect.state]]\ntable = \"tickets\"\nkey = \"T-1\"\nfield = \"status\"\nequals = \"open\"\n"
        ),
    );
    // Checks only what is already true: doing nothing passes.
    write_case(
        &cases,
        "nothing-passes",
        &format!(
            "{HEAD}task = {{ ticket = \"T-2\" }}\n\n\
             [[expect.state]]\ntable = \"tickets\"\nkey = \"T-2\"\nfield = \"status\"\nequals = \"open\"\n"
        ),
    );
    // The expected answer is written in the task.
    write_case(
        &cases,
        "leaked",
        &format!(
            "{HEAD}task = {{ ticket = \"T-1\", hint = \"say: Checkout fixed by rollback\" }}\n\n[expect]\n\
             [[expect.gold]]\ntool = \"close_ticket\"\nargs = {{ id = \"T-1\" }}\n\n\
             [expect.output]\ncontains = \"fixed by rollback\"\n"
        ),
    );
    // A gold call that cannot succeed on the world.
    write_case(
        &cases,
        "gold-errors",
        &format!(
            "{HEAD}task = {{ ticket = \"T-9\" }}\n\n[expect]\n\
             [[expect.gold]]\ntool = \"close_ticket\"\nargs = {{ id = \"T-9\" }}\n"
        ),
    );
    let store = dir.path().join("store");
    let out = validate(&store, &cases, true);
    out.expect_code(1);
    let report = out.json();
    assert_eq!(report["cases"], 4, "{out}");
    assert_eq!(report["failing"], 3, "{out}");
    assert_eq!(report["broken"], 1, "{out}");

    let r = result(report, "oracle-fails");
    assert_eq!(r["verdict"], "failing");
    assert_eq!(r["oracle"]["passed"], false);
    assert_eq!(
        r["oracle"]["failed"],
        serde_json::json!(["tickets/T-1.status equals"]),
        "{out}"
    );

    let r = result(report, "nothing-passes");
    assert_eq!(r["verdict"], "failing");
    assert_eq!(r["oracle"], Value::Null);
    assert_eq!(r["do_nothing"]["passed"], true);
    assert_eq!(r["empty_answer"]["passed"], true);
    assert!(
        r["notes"][0]
            .as_str()
            .unwrap()
            .contains("no [[expect.gold]] calls"),
        "{out}"
    );

    let r = result(report, "leaked");
    assert_eq!(r["verdict"], "failing");
    assert_eq!(r["oracle"]["passed"], true, "{out}");
    assert_eq!(r["leaks"][0]["check"], "output.contains");
    assert_eq!(r["leaks"][0]["value"], "fixed by rollback");
    assert_eq!(r["leaks"][0]["seen_in"], "task");

    let r = result(report, "gold-errors");
    assert_eq!(r["verdict"], "broken");
    let why = r["error"].as_str().unwrap();
    assert!(
        why.contains("gold-errors.toml") && why.contains("gold call 1 (close_ticket"),
        "{out}"
    );

    // The table names each failing case with its reason.
    let text = validate(&store, &cases, false);
    text.expect_code(1);
    for needle in [
        "the oracle (the gold calls) fails: tickets/T-1.status equals",
        "the do-nothing agent passes",
        "the empty-answer agent passes",
        "output.contains expects \"fixed by rollback\", which the agent is shown in task",
        "validate: 4 cases, 0 ok, 3 failing, 1 broken",
    ] {
        assert!(text.stdout.contains(needle), "missing {needle:?}:\n{text}");
    }
}

/// Gold calls in their user turns: the oracle ends each turn with a
/// message before the first gold call of the next, so `[[expect.turn]]`
/// checks see each turn's work in its turn; the same calls all in turn 1
/// fail turn 1's check.
#[test]
fn the_oracle_makes_each_gold_call_in_its_user_turn() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let case = |turn2: &str| {
        format!(
            "{HEAD}task = {{ ticket = \"T-1\" }}\n\n\
             [user]\nrules = [{{ turn = 1, reply = \"Now T-2.\" }}]\n\n[expect]\n\
             [[expect.gold]]\ntool = \"close_ticket\"\nargs = {{ id = \"T-1\" }}\n\
             [[expect.gold]]\ntool = \"close_ticket\"\nargs = {{ id = \"T-2\" }}\n{turn2}\n\
             [[expect.turn]]\nturn = 1\n\
             state = [{{ table = \"tickets\", key = \"T-2\", field = \"status\", equals = \"open\" }}]\n\
             said = [{{ contains = \"T-1 is closed\", last = true }}]\n\
             [[expect.turn]]\nturn = 2\n\
             state = [{{ table = \"tickets\", key = \"T-2\", field = \"status\", equals = \"closed\" }}]\n"
        )
    };
    write_case(&cases, "turns", &case("turn = 2"));
    write_case(&cases, "one-turn", &case(""));
    let out = validate(&dir.path().join("store"), &cases, true);
    out.expect_code(1);
    let r = result(out.json(), "turns");
    assert_eq!(r["verdict"], "ok", "{out}");
    assert_eq!(r["oracle"]["passed"], true, "{out}");
    assert_eq!(r["do_nothing"]["passed"], false, "{out}");
    let r = result(out.json(), "one-turn");
    assert_eq!(r["oracle"]["passed"], false, "{out}");
    assert!(
        r["oracle"]["failed"]
            .to_string()
            .contains("turn 1: tickets/T-2.status equals"),
        "{out}"
    );
}

/// A state check on a field no row of its table holds (`statuss`) is
/// said, at the field's line, by `check` (a note: a tool may add the
/// field, and the world declares no columns) and by `validate` beside
/// the failing case. `check` said "no problems", and `validate` listed
/// the case failing with no word of why.
#[test]
fn a_state_check_on_a_field_no_row_holds_is_said_at_its_line() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let case = write_case(
        &cases,
        "typo",
        &format!(
            "{HEAD}task = {{ ticket = \"T-1\" }}\n\n[expect]\n\
             [[expect.gold]]\ntool = \"close_ticket\"\nargs = {{ id = \"T-1\" }}\n\n\
             [[expect.state]]\ntable = \"tickets\"\n\
             where = {{ \"statuss\" = {{ \"eq\" = \"closed\" }} }}\nmin = 1\n"
        ),
    );
    let said = format!(
        "{}:13:11: [[expect.state]] #1: where `statuss`: no row of `tickets` holds `statuss` (their fields: id, status, title); unless a tool adds it to a row, the check reads nothing there: name one of them",
        case.display()
    );
    let store = dir.path().join("store");
    let check = worldline(
        &store,
        [
            "check".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
        ],
    );
    check.expect_code(0);
    assert!(check.stdout.contains(&format!("note: {said}")), "{check}");
    let out = validate(&store, &cases, false);
    out.expect_code(1);
    assert!(out.stderr.contains(&format!("note: {said}")), "{out}");
}

/// `validate --jobs 2` of two cases on a world whose service has not been
/// compiled on this machine compiles the service once, before the cases
/// run: each job compiled it for itself (a BFCL world's 28 MB service,
/// 54 s, twice), as `test` does not.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn validate_compiles_a_world_s_service_once_for_all_its_jobs() {
    let dir = temp_dir();
    let worlds = common::world_with_service(
        dir.path(),
        &common::workspace_root().join("tests/worlds/counters/v1"),
        "counters",
        &common::python_service("tests/guests/python-service/counters.py"),
    );
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    // Two cases bumping the world's one counter, `c`.
    for (name, seed) in [("one", 7), ("two", 8)] {
        let text = format!(
            "world = \"counters@v1\"\nseed = {seed}\nclock = 2026-03-02T12:00:00Z\ntask = {{ id = \"c\" }}\n\
             [[expect.gold]]\ntool = \"bump\"\nargs = {{ id = \"c\" }}\n"
        );
        write_case(&cases, name, &text);
    }
    // A store of its own with its own compile cache, empty.
    let store = dir.path().join("store");
    let out = common::worldline_with(
        &store,
        [
            "validate".as_ref(),
            cases.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--jobs".as_ref(),
            "2".as_ref(),
        ] as [&std::ffi::OsStr; 6],
        &[common::OWN_COMPILE_CACHE],
    );
    assert_eq!(
        out.stderr.matches("compiling ").count(),
        1,
        "the service compiled once:\n{out}"
    );
    assert!(out.stdout.contains("validate: 2 cases"), "{out}");
}

/// `validate -k` validates only the cases the expression selects, as
/// `test -k` reads it (a 600-case import was validated by listing files),
/// and one that selects none is a usage error naming near names.
#[test]
fn a_filter_validates_only_the_cases_it_selects() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for name in ["close-a", "close-b", "other"] {
        write_case(
            &cases,
            name,
            &format!(
                "{HEAD}task = {{ ticket = \"T-1\" }}\n\n[expect]\n\
                 [[expect.gold]]\ntool = \"close_ticket\"\nargs = {{ id = \"T-1\" }}\n"
            ),
        );
    }
    let store = dir.path().join("store");
    let worlds = worlds_dir();
    let run = |filter: &str| {
        worldline(
            &store,
            [
                "validate",
                cases.to_str().unwrap(),
                "--worlds",
                worlds.to_str().unwrap(),
                "-k",
                filter,
                "--json",
            ],
        )
    };
    let out = run("close and not b");
    out.expect_code(0);
    let names: Vec<&str> = (out.json()["results"].as_array().unwrap().iter())
        .map(|r| r["case"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["close-a"], "{out}");
    let none = run("clsoe-c");
    none.expect_code(2);
    assert!(
        none.stderr
            .contains("selects none of the 3 case(s); near names"),
        "{none}"
    );
}
