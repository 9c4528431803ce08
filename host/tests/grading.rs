//! End-to-end tests of worlds, cases, injections and the grader: the real
//! binary on the `caller-agent` guest, which makes the tool calls its task
//! lists and returns every answer.

use crate::common;

use common::{
    guest, load_error, make_world, temp_dir, toml_inline, worldline, worlds_dir, write_case,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn caller() -> PathBuf {
    guest("caller-agent")
}

/// A demo-world case whose task is the given calls, plus extra TOML.
fn case_text(calls: Value, extra: &str) -> String {
    format!(
        "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = {}\n{extra}\n",
        toml_inline(&json!({ "calls": calls }))
    )
}

/// Write a demo-world case (see [`case_text`]) into `dir`.
fn demo_case(dir: &Path, name: &str, calls: Value, extra: &str) -> PathBuf {
    write_case(dir, name, &case_text(calls, extra))
}

fn run_case(store: &Path, case: &Path, agent: &Path) -> common::CliOutput {
    common::run_in(store, case, agent, &worlds_dir())
}

/// `run --json` of a case against the worlds in `worlds`.
fn answers(out: &common::CliOutput) -> Vec<Value> {
    serde_json::from_str(out.json()["output"].as_str().expect("an output")).unwrap()
}

#[test]
fn injections_change_what_the_agent_sees_and_are_marked_in_the_log() {
    let dir = temp_dir();
    let calls = json!([
        {"tool": "list_deploys", "args": {"service": "checkout"}},
        {"tool": "list_deploys", "args": {"service": "checkout"}},
        {"tool": "get_ticket", "args": {"id": "T-1"}},
        {"tool": "get_ticket", "args": {"id": "T-2"}},
        {"tool": "list_deploys", "args": {"service": "search"}},
        {"tool": "status_page", "args": {}},
    ]);
    let extra = r#"
[[inject]]
tool = "list_deploys"
when = { service = "checkout" }
nth = 1
stale = { age_s = 900, field = "at" }

[[inject]]
tool = "get_ticket"
when = { id = "T-1" }
error = "timeout"
latency_ms = 30000

[[inject]]
tool = "get_ticket"
when = { id = "T-2" }
response = { id = "T-2", status = "imaginary" }

[[inject]]
tool = "list_deploys"
when = { service = "search" }
empty = true
"#;
    let case = demo_case(dir.path(), "inject", calls, extra);
    let out = run_case(dir.path(), &case, &caller());
    out.expect_code(0);
    let a = answers(&out);
    // stale: the deploy ten minutes before now is hidden and as_of is 15 minutes old
    assert_eq!(a[0]["ok"]["deploys"].as_array().unwrap().len(), 1, "{a:?}");
    assert!(
        a[0]["ok"]["as_of"]
            .as_str()
            .unwrap()
            .starts_with("2026-03-01T11:45:00")
    );
    // the second call is fresh
    assert_eq!(a[1]["ok"]["deploys"][0]["id"], "D-2");
    assert_eq!(a[2]["error"]["kind"], "timeout");
    assert_eq!(a[3]["ok"]["status"], "imaginary");
    assert_eq!(a[4]["ok"]["deploys"], json!([]));
    assert_eq!(a[5]["ok"]["status"], "degraded");

    let bundle = common::read_bundle(&out.bundle());
    let tool_events: Vec<&Value> = bundle
        .events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .collect();
    let marks: Vec<Value> = tool_events
        .iter()
        .map(|e| e["injected"]["action"].clone())
        .collect();
    assert_eq!(
        marks,
        vec![
            json!("stale"),
            Value::Null,
            json!("error"),
            json!("response"),
            json!("empty"),
            Value::Null
        ]
    );
    // latency advances the virtual clock: the timeout call took 30 s of virtual time
    let t_before = tool_events[1]["vtime_ns"].as_u64().unwrap();
    let t_after = tool_events[2]["vtime_ns"].as_u64().unwrap();
    assert!(
        t_after - t_before >= 30_000_000_000,
        "{t_before} -> {t_after}"
    );
}

#[test]
fn denied_and_failed_writes_change_nothing_and_partial_writes_leave_exactly_the_part() {
    let dir = temp_dir();
    let calls = json!([
        {"tool": "close_ticket", "args": {"id": "T-1"}},
        {"tool": "close_ticket", "args": {"id": "T-2"}},
        {"tool": "add_note", "args": {"ticket": "T-1", "text": "rolled back D-2", "author": "bot"}},
    ]);
    let extra = r#"
[permissions]
deny = ["close_ticket"]

[[inject]]
tool = "add_note"
partial = { fields = ["ticket"], error = "timeout" }

[expect]
unchanged = ["tickets", "deploys"]

[[expect.state]]
table = "notes"
count = 1

[[expect.state]]
table = "notes"
key = "notes-1"
field = "text"
absent = true

[[expect.calls]]
tool = "close_ticket"
denied = true
count = 2
"#;
    let case = demo_case(dir.path(), "writes", calls, extra);
    let out = run_case(dir.path(), &case, &caller());
    out.expect_code(0);
    let doc = out.json();
    assert_eq!(doc["status"], "passed", "{out}");
    let added = &doc["grade"]["diff"]["tables"]["notes"]["added"];
    assert_eq!(
        added,
        &json!({"notes-1": {"id": "notes-1", "ticket": "T-1"}})
    );
    assert!(doc["grade"]["diff"]["tables"].get("tickets").is_none());
    let a = answers(&out);
    assert_eq!(a[0]["error"]["kind"], "denied");
    assert_eq!(a[2]["error"]["kind"], "timeout");
    let bundle = common::read_bundle(&out.bundle());
    let effects: Vec<&Value> = bundle
        .events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/tools.call")
        .map(|e| &e["effect"])
        .collect();
    assert_eq!(effects, vec!["denied", "denied", "failed"]);
}

const CLOSES_T1: &str = r#"
[expect]
unchanged = ["deploys"]

[[expect.state]]
table = "tickets"
key = "T-1"
field = "status"
equals = "open"
"#;

#[test]
fn a_failing_grade_names_the_assertion_expected_actual_and_the_diff() {
    let dir = temp_dir();
    let case = demo_case(
        dir.path(),
        "closes",
        json!([{"tool": "close_ticket", "args": {"id": "T-1"}}]),
        CLOSES_T1,
    );
    let agent = caller();
    let text = worldline(
        dir.path(),
        [
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
        ],
    );
    text.expect_code(1);
    assert!(
        text.stdout
            .contains("FAIL tickets/T-1.status equals: expected \"open\", got \"closed\""),
        "{text}"
    );
    assert!(
        text.stdout
            .contains("~ tickets/T-1.status: \"open\" -> \"closed\""),
        "{text}"
    );
    assert!(text.stdout.contains("ok   unchanged deploys"), "{text}");
    let out = run_case(dir.path(), &case, &agent);
    out.expect_code(1);
    assert_eq!(out.json()["status"], "failed");
    assert_eq!(out.json()["run_status"], "completed");
}

#[test]
fn regrading_against_a_changed_case_changes_the_verdict_without_rerunning() {
    let dir = temp_dir();
    let calls = json!([{"tool": "close_ticket", "args": {"id": "T-1"}}]);
    let case = demo_case(dir.path(), "closes", calls.clone(), CLOSES_T1);
    let out = run_case(dir.path(), &case, &caller());
    out.expect_code(1);
    let bundle = out.bundle();
    let before = std::fs::read(&bundle).unwrap();
    let runs_before = common::files_with_suffix(&dir.path().join("runs"), ".jsonl").len();

    let newer = demo_case(
        dir.path(),
        "closes-v2",
        calls,
        &CLOSES_T1.replace("equals = \"open\"", "equals = \"closed\""),
    );
    let regrade = worldline(
        dir.path(),
        [
            "grade".as_ref(),
            bundle.as_os_str(),
            "--case".as_ref(),
            newer.as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
            "--json".as_ref(),
        ],
    );
    regrade.expect_code(0);
    assert_eq!(regrade.json()["status"], "passed");
    assert_eq!(regrade.json()["recorded_grade"], "failed");
    // same case again: the recorded verdict
    let same = worldline(
        dir.path(),
        [
            "grade".as_ref(),
            bundle.as_os_str(),
            "--case".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
        ],
    );
    same.expect_code(1);
    // A case of another world is no case of this run: refused, naming both
    // worlds (it graded the run on the other world's tables, exit 1).
    let elsewhere_dir = temp_dir();
    let other_worlds = make_world(
        elsewhere_dir.path(),
        SMALL_WORLD,
        &[("data/t.jsonl", "{\"id\": \"a\"}\n")],
    );
    let other = write_case(
        elsewhere_dir.path(),
        "other-world",
        &format!("{SMALL_CASE}[expect]\nunchanged = [\"t\"]\n"),
    );
    let elsewhere = worldline(
        dir.path(),
        [
            "grade".as_ref(),
            bundle.as_os_str(),
            "--case".as_ref(),
            other.as_os_str(),
            "--worlds".as_ref(),
            other_worlds.as_os_str(),
        ],
    );
    elsewhere.expect_code(2);
    assert!(
        elsewhere.stderr.contains("`w@v1`") && elsewhere.stderr.contains("demo@v1"),
        "{elsewhere}"
    );
    assert_eq!(
        std::fs::read(&bundle).unwrap(),
        before,
        "grading never changes the bundle"
    );
    assert_eq!(
        common::files_with_suffix(&dir.path().join("runs"), ".jsonl").len(),
        runs_before,
        "no new run"
    );
}

#[test]
fn test_command_prints_a_line_per_case_and_writes_junit() {
    let dir = temp_dir();
    let good = demo_case(
        dir.path(),
        "good",
        json!([{"tool": "get_ticket", "args": {"id": "T-1"}}]),
        CLOSES_T1,
    );
    let bad = demo_case(
        dir.path(),
        "bad",
        json!([{"tool": "close_ticket", "args": {"id": "T-1"}}]),
        CLOSES_T1,
    );
    let junit = dir.path().join("report.xml");
    let agent = caller();
    let out = worldline(
        dir.path(),
        [
            "test".as_ref(),
            good.as_os_str(),
            bad.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
            "--jobs".as_ref(),
            "2".as_ref(),
            "--junit".as_ref(),
            junit.as_os_str(),
        ],
    );
    out.expect_code(1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("PASS  good"), "{out}");
    assert!(lines[1].starts_with("FAIL  bad"), "{out}");
    assert!(lines[1].contains("tickets/T-1.status equals"), "{out}");
    assert_eq!(lines[2], "1 passed, 1 failed");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let suite = xml
        .lines()
        .find(|l| l.trim_start().starts_with("<testsuite "))
        .unwrap_or_else(|| panic!("no <testsuite> in {xml}"));
    for attr in [
        "name=\"worldline\"",
        "tests=\"2\"",
        "failures=\"1\"",
        "errors=\"0\"",
    ] {
        assert!(suite.contains(attr), "{attr} in {suite}");
    }
    assert!(
        xml.contains("<testcase name=\"bad\" classname=\"demo@v1\""),
        "{xml}"
    );
    assert!(xml.contains("<failure message=\"tickets/T-1.status equals: expected &quot;open&quot;, got &quot;closed&quot;\""), "{xml}");

    // A report that cannot be written is refused before the suite runs
    // (it ran the whole suite, then printed only the error), and `--limit
    // 0`, which runs nothing, is no suite that passed.
    let good_with = |flag: &str, value: &std::ffi::OsStr| {
        worldline(
            dir.path(),
            [
                "test".as_ref(),
                good.as_os_str(),
                "--agent".as_ref(),
                agent.as_os_str(),
                "--worlds".as_ref(),
                worlds_dir().as_os_str(),
                flag.as_ref(),
                value,
            ],
        )
    };
    let runs = || std::fs::read_dir(dir.path().join("runs")).unwrap().count();
    let before = runs();
    std::fs::write(dir.path().join("afile"), "").unwrap();
    for (junit, said) in [
        (
            dir.path().join("afile/report.xml"),
            "is a file, not a folder",
        ),
        (dir.path().to_path_buf(), "is a folder"),
    ] {
        let out = good_with("--junit", junit.as_os_str());
        out.expect_code(2);
        assert!(out.stderr.contains(said), "{out}");
        assert_eq!(runs(), before, "{out}");
    }
    let none = good_with("--limit", "0".as_ref());
    none.expect_code(2);
    assert!(none.stderr.contains("--limit"), "{none}");
}

const SMALL_WORLD: &str =
    "name = \"w\"\nversion = 1\n[tables.t]\nkey = \"id\"\nrows = \"data/t.jsonl\"\n";
const SMALL_CASE: &str = "world = \"w@v1\"\nclock = 2026-03-01T12:00:00Z\ntask = {}\n";

#[test]
fn worlds_cannot_read_outside_their_folder() {
    let outside = temp_dir();
    std::fs::write(outside.path().join("secret.jsonl"), "{\"id\": \"s\"}\n").unwrap();

    let root = temp_dir();
    make_world(
        root.path(),
        &SMALL_WORLD.replace("data/t.jsonl", "../../../secret.jsonl"),
        &[],
    );
    let out = load_error(root.path(), SMALL_CASE);
    assert!(out.stderr.contains("leaves the folder"), "{out}");

    let root = temp_dir();
    let abs = outside.path().join("secret.jsonl");
    make_world(
        root.path(),
        &SMALL_WORLD.replace("data/t.jsonl", abs.to_str().unwrap()),
        &[],
    );
    let out = load_error(root.path(), SMALL_CASE);
    assert!(out.stderr.contains("is absolute"), "{out}");

    let root = temp_dir();
    make_world(root.path(), SMALL_WORLD, &[]);
    std::fs::create_dir_all(root.path().join("worlds/w/v1/data")).unwrap();
    std::os::unix::fs::symlink(&abs, root.path().join("worlds/w/v1/data/t.jsonl")).unwrap();
    let out = load_error(root.path(), SMALL_CASE);
    assert!(
        out.stderr.contains("data/t.jsonl") && out.stderr.contains("cannot read"),
        "{out}"
    );

    let root = temp_dir();
    make_world(
        root.path(),
        &format!("{SMALL_WORLD}[files]\ndir = \"files\"\n"),
        &[("data/t.jsonl", "{\"id\": 1}\n"), ("files/ok.md", "x")],
    );
    std::os::unix::fs::symlink(&abs, root.path().join("worlds/w/v1/files/escape.md")).unwrap();
    let out = load_error(root.path(), SMALL_CASE);
    assert!(out.stderr.contains("symlink"), "{out}");
}

#[test]
fn malformed_worlds_and_cases_name_the_file_line_and_column() {
    let ok_rows = [("data/t.jsonl", "{\"id\": \"a\"}\n{\"id\": \"b\"}\n")];
    let check = |world: &str, rows: &[(&str, &str)], case: &str, want: &[&str]| {
        let root = temp_dir();
        make_world(root.path(), world, rows);
        let out = load_error(root.path(), case);
        for w in want {
            assert!(out.stderr.contains(w), "expected `{w}` in:\n{out}");
        }
    };
    // TOML syntax in the case
    check(
        SMALL_WORLD,
        &ok_rows,
        "world = \"w@v1\"\nclock = 2026-03-01T12:00:00Z\ntask = {\n",
        &["case.toml:3:"],
    );
    // duplicate TOML keys
    check(
        SMALL_WORLD,
        &ok_rows,
        &format!("{SMALL_CASE}seed = 1\nseed = 2\n"),
        &["case.toml:5:", "duplicate key"],
    );
    // unknown table in the case
    check(
        SMALL_WORLD,
        &ok_rows,
        &format!("{SMALL_CASE}[nonsense]\nx = 1\n"),
        &["case.toml:4:2", "unknown field `nonsense`"],
    );
    // a world version that does not exist
    check(
        SMALL_WORLD,
        &ok_rows,
        &SMALL_CASE.replace("w@v1", "w@v9"),
        &["case.toml:1:9", "w@v9", "versions that exist: w@v1"],
    );
    // an injection naming an unknown tool
    check(
        SMALL_WORLD,
        &ok_rows,
        &format!("{SMALL_CASE}[[inject]]\ntool = \"nope\"\ndeny = true\n"),
        &["case.toml:4:", "`nope` names no tool"],
    );
    // a tool over an unknown table
    check(
        &format!("{SMALL_WORLD}\n[[tools]]\nname = \"g\"\nop = \"get\"\ntable = \"zz\"\n"),
        &ok_rows,
        SMALL_CASE,
        &["world.toml:7:", "unknown table `zz`"],
    );
    // a params schema that is not JSON Schema
    check(
        &format!(
            "{SMALL_WORLD}\n[[tools]]\nname = \"g\"\nop = \"get\"\ntable = \"t\"\nparams = {{ type = \"objekt\" }}\n"
        ),
        &ok_rows,
        SMALL_CASE,
        &[
            "world.toml:7:",
            "not a supported JSON Schema",
            "unknown type",
        ],
    );
    // duplicate row keys in a data file
    check(
        SMALL_WORLD,
        &[("data/t.jsonl", "{\"id\": \"a\"}\n{\"id\": \"a\"}\n")],
        SMALL_CASE,
        &["t.jsonl:2:1", "duplicate key `a`"],
    );
    // a data line that is not JSON
    check(
        SMALL_WORLD,
        &[("data/t.jsonl", "{\"id\": \"a\"}\n{\"id\": \n")],
        SMALL_CASE,
        &["t.jsonl:2:"],
    );
}

/// A payments world with integer ids, an optional parameter written as
/// Python tooling writes it (`anyOf` with null; TOML tasks cannot hold a
/// null, so the unit tests of `world::schema` pass one), and amounts written
/// as integers and decimals.
const PAYMENTS_WORLD: &str = r#"name = "w"
version = 1

[tables.accounts]
key = "id"
rows = "data/accounts.json"

[tables.transfers]
key = "id"
ids = "max+1"

[[tools]]
name = "pay"
op = "insert"
table = "transfers"
params = { type = "object", properties = { to = { type = "string" }, amount = { type = "number" }, note = { anyOf = [{ type = "string" }, { type = "null" }] } }, required = ["to", "amount"], additionalProperties = false }

[[tools]]
name = "recent"
op = "query"
table = "transfers"
filters = [{ field = "to", eq = "$to", ignore_case = true }]
"#;

const ACCOUNTS: &str = r#"[
  {"id": 7, "iban": "DE89370400440532013000", "balance": 1100},
  {"id": 8, "iban": "GB33BUKB20201555555555", "balance": 20.5}
]
"#;

#[test]
fn checks_compare_numbers_by_value_take_operators_integer_keys_and_sums() {
    let root = temp_dir();
    let worlds = make_world(
        root.path(),
        PAYMENTS_WORLD,
        &[("data/accounts.json", ACCOUNTS)],
    );
    let mut calls: Vec<Value> = (1..=10)
        .map(|i| json!({"tool": "pay", "args": {"to": "de89", "amount": i, "note": "x"}}))
        .collect();
    calls.push(json!({"tool": "pay", "args": {"to": "gb33", "amount": 0.5, "note": "rent"}}));
    calls.push(json!({"tool": "pay", "args": {"to": "x", "amount": "5"}}));
    calls.push(json!({"tool": "recent", "args": {"to": "DE89"}}));
    let expect = r#"
[[expect.state]]
table = "accounts"
key = 7
field = "balance"
equals = 1100.0

[[expect.state]]
table = "accounts"
key = 8
field = "iban"
equals = "gb33bukb20201555555555"
ignore_case = true

[[expect.state]]
table = "transfers"
where = { amount = { gt = 5 }, to = { eq = "DE89", ignore_case = true } }
count = 5

[[expect.state]]
table = "transfers"
where = { to = { ne = "gb33" } }
min = 10
max = 10

[[expect.state]]
table = "transfers"
sum = "amount"
equals = 55.5

[[expect.state]]
table = "transfers"
sum = "amount"
where = { note = "rent" }
max = 0.5

[[expect.state]]
table = "transfers"
key = 11
field = "note"
equals = "rent"

[[expect.calls]]
tool = "pay"
args = { amount = 3.0 }
count = 1
"#;
    // The calls above against a case with these expectations.
    let run_with = |name: &str, expect: &str| {
        let case = write_case(
            root.path(),
            name,
            &format!(
                "world = \"w@v1\"\nclock = 2026-03-01T12:00:00Z\ntask = {}\n{expect}",
                toml_inline(&json!({ "calls": calls }))
            ),
        );
        common::run_in(root.path(), &case, &caller(), &worlds)
    };
    let out = run_with("pay", expect);
    let j = out.json();
    let failures: Vec<&Value> = j["grade"]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["passed"] == false)
        .collect();
    assert!(failures.is_empty(), "{failures:#?}\n{out}");
    let got = answers(&out);
    // Integer ids from max+1, in insertion order when listed.
    assert_eq!(got[0]["ok"]["id"], 1, "{got:?}");
    assert_eq!(got[10]["ok"]["id"], 11);
    let listed: Vec<Value> = got[12]["ok"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    let want: Vec<Value> = (1..=10).map(Value::from).collect();
    assert_eq!(listed, want, "a query lists 9 before 10");
    // The schema still refuses what none of its options allow.
    assert_eq!(got[11]["error"]["kind"], "invalid-args", "{:?}", got[11]);

    // The same checks fail when the state says otherwise.
    let wrong = expect
        .replace("equals = 1100.0", "equals = 1100.5")
        .replace("count = 5", "count = 4")
        .replace("equals = 55.5", "equals = 56");
    let out = run_with("pay-wrong", &wrong);
    let failed: Vec<String> = out.json()["grade"]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["passed"] == false)
        .map(|a| a["what"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        failed,
        [
            "accounts/7.balance equals",
            "count transfers where {\"amount\":{\"gt\":5},\"to\":{\"eq\":\"DE89\",\"ignore_case\":true}}",
            "sum transfers.amount",
        ],
        "{out}"
    );
}

#[test]
fn a_where_with_an_unknown_operator_is_refused_when_the_case_loads() {
    let root = temp_dir();
    make_world(
        root.path(),
        PAYMENTS_WORLD,
        &[("data/accounts.json", ACCOUNTS)],
    );
    let out = load_error(
        root.path(),
        &format!(
            "{SMALL_CASE}[[expect.state]]\ntable = \"transfers\"\nwhere = {{ amount = {{ gt = 5, like = 3 }} }}\ncount = 1\n"
        ),
    );
    assert!(out.stderr.contains("unknown operator `like`"), "{out}");
}

/// Two user turns: close T-1, tell the user; close T-2, tell the user.
const TURNS: &str = r#"
[user]
rules = [{ turn = 1, reply = "Now close T-2, please." }]

[[expect.turn]]
turn = 1
calls = [{ tool = "close_ticket", args = { id = "T-1" }, result = { id = "T-1", status = "closed", title = "Checkout is slow" }, count = 1 }]

[[expect.turn.state]]
table = "tickets"
key = "T-2"
field = "status"
equals = "open"

[[expect.turn]]
turn = 2
state = [{ table = "tickets", key = "T-2", field = "status", equals = "closed" }]
said = [{ contains = "T-2", last = true }]
"#;

/// `[[expect.turn]]` judges the run as it stood when each user turn
/// ended: an agent that does turn 2's work in turn 1 leaves the same final
/// state and fails; the text grade shows the diff cut at the turns, the
/// JSON one lists them; a turn 0 is refused naming the file.
#[test]
fn turn_checks_judge_the_state_as_it_stood_at_the_end_of_each_user_turn() {
    let dir = temp_dir();
    let close = |id: &str| json!({"tool": "close_ticket", "args": {"id": id}});
    let say = |m: &str| json!({"tool": "user.say", "args": {"message": m}});
    let right = json!([
        close("T-1"),
        say("T-1 closed"),
        close("T-2"),
        say("T-2 closed")
    ]);
    let case = demo_case(dir.path(), "turns", right, TURNS);
    let out = run_case(dir.path(), &case, &caller());
    out.expect_code(0);
    let turns = &out.json()["grade"]["turns"];
    assert_eq!(turns.as_array().map(Vec::len), Some(2), "{out}");
    assert!(
        turns[0]["diff"]["tables"]["tickets"]["changed"]["T-1"].is_object(),
        "{out}"
    );
    assert!(
        turns[1]["diff"]["tables"]["tickets"]["changed"]["T-2"].is_object(),
        "{out}"
    );

    let early = json!([
        close("T-1"),
        close("T-2"),
        say("both closed"),
        say("T-2 closed")
    ]);
    let case = demo_case(dir.path(), "early", early, TURNS);
    let agent = caller();
    let text = worldline(
        dir.path(),
        [
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
        ],
    );
    text.expect_code(1);
    assert!(
        text.stdout
            .contains("FAIL turn 1: tickets/T-2.status equals: expected \"open\", got \"closed\""),
        "{text}"
    );
    assert!(
        text.stdout
            .contains("ok   turn 2: tickets/T-2.status equals"),
        "{text}"
    );
    assert!(
        text.stdout.contains("state diff by the user's turns:"),
        "{text}"
    );
    assert!(text.stdout.contains("turn 2 (ended at event"), "{text}");
    assert!(
        text.stdout.contains(", unchanged"),
        "turn 2 changed nothing: {text}"
    );

    let root = temp_dir();
    make_world(
        root.path(),
        SMALL_WORLD,
        &[("data/t.jsonl", "{\"id\": 1}\n")],
    );
    let zero = format!("{SMALL_CASE}[[expect.turn]]\nturn = 0\nsaid = [{{ contains = \"x\" }}]\n");
    let bad = load_error(root.path(), &zero);
    assert!(bad.stderr.contains("case.toml"), "{bad}");
    assert!(bad.stderr.contains("turns count from 1"), "{bad}");
}

/// `grade --case` with a case naming another version of the run's world
/// says so, naming both versions (it said the named version "changed since
/// the run"); the same version changed since is said as before.
#[test]
fn regrading_on_another_version_of_the_world_names_both_versions() {
    let dir = temp_dir();
    let root = dir.path();
    let worlds = make_world(root, SMALL_WORLD, &[("data/t.jsonl", "{\"id\": \"a\"}\n")]);
    let v2 = worlds.join("w/v2");
    std::fs::create_dir_all(v2.join("data")).unwrap();
    std::fs::write(
        v2.join("world.toml"),
        SMALL_WORLD.replace("version = 1", "version = 2"),
    )
    .unwrap();
    std::fs::write(v2.join("data/t.jsonl"), "{\"id\": \"a\"}\n").unwrap();
    let expect = "[expect]\nunchanged = [\"t\"]\n";
    let case = write_case(root, "v1", &format!("{SMALL_CASE}{expect}"));
    let newer = write_case(
        root,
        "v2",
        &format!("{}{expect}", SMALL_CASE.replace("w@v1", "w@v2")),
    );
    let out = common::run_in(root, &case, &caller(), &worlds);
    out.expect_code(0);
    let bundle = out.bundle();
    let grade = |case: &Path| {
        worldline(
            root,
            [
                "grade".as_ref(),
                bundle.as_os_str(),
                "--case".as_ref(),
                case.as_os_str(),
                "--worlds".as_ref(),
                worlds.as_os_str(),
            ],
        )
    };
    let other = grade(&newer);
    other.expect_code(0);
    let said = "the run was recorded against world w@v1, the case names w@v2";
    assert!(other.stdout.contains(said), "{other}");
    assert!(!other.stdout.contains("the world w@v"), "{other}");
    // The same case, unchanged: no word of the case.
    let same = grade(&case);
    assert!(!same.stdout.contains("changed since the run"), "{same}");
    // An overlay the case adds is said as the case's, not the world's (the
    // world's files are as they were); a case edited otherwise (its task)
    // is said too (it was graded without a word).
    let overlaid = write_case(
        root,
        "v1-overlay",
        &format!("{SMALL_CASE}{expect}[[overlay]]\ntable = \"t\"\nrows = [{{ id = \"z\" }}]\n"),
    );
    let out = grade(&overlaid);
    assert!(
        out.stdout
            .contains("the case's [[overlay]] changed the world w@v1 since the run"),
        "{out}"
    );
    // Another case file is named, with the run's (it read as the run's
    // own case, changed).
    assert!(
        out.stdout.contains(
            "the case changed since the run (the run's case is `v1`, this one `v1-overlay`)"
        ),
        "{out}"
    );
    std::fs::write(worlds.join("w/v1/data/t.jsonl"), "{\"id\": \"b\"}\n").unwrap();
    let changed = grade(&case);
    assert!(
        changed
            .stdout
            .contains("the world w@v1 as the case gives it (its files, or the case's [[overlay]]) changed since the run"),
        "{changed}"
    );
}

/// A world of one event stamped `2026-03-01T12:00:00Z`, a query tool
/// whose `eq` filter takes a time, and a tool that stamps it anew.
const STAMPED: &str = r#"name = "t"
version = 1

[tables.events]
key = "id"
rows = "events.jsonl"

[[tools]]
name = "at"
params = { type = "object", properties = { when = { type = "string" } }, required = ["when"] }
op = "query"
table = "events"
filters = [{ field = "at", eq = "$when" }]

[[tools]]
name = "restamp"
params = { type = "object", properties = { id = { type = "string" }, at = { type = "string" } }, required = ["id", "at"] }
op = "update"
table = "events"
set = { at = "$at" }
"#;

/// The same time written three ways is equal from rules 5 wherever
/// values are told equal, as `gte` and `lte` already said: a query's `eq`
/// filter finds the row, a state check's `where` `eq` and `equals` pass,
/// and a row stamped anew with the same time is `unchanged` and no change
/// in the grade's diff (docs/formats.md: "timestamps as times"). A run
/// recorded under rules 4 keeps text equality: its fork answers `[]` and
/// `grade` fails the same checks, as before.
#[test]
fn timestamps_written_two_ways_are_equal_in_filters_and_checks_from_rules_5() {
    let dir = temp_dir();
    let worlds = common::write_world(
        dir.path(),
        "t",
        STAMPED,
        &[(
            "events.jsonl",
            "{\"id\": \"E-1\", \"at\": \"2026-03-01T12:00:00Z\"}\n",
        )],
    );
    let calls = json!([
        {"tool": "at", "args": {"when": "2026-03-01T12:00:00.000Z"}},
        {"tool": "at", "args": {"when": "2026-03-01T14:00:00+02:00"}},
        {"tool": "restamp", "args": {"id": "E-1", "at": "2026-03-01T14:00:00+02:00"}},
    ]);
    let checks = r#"
[expect]
unchanged = ["events"]

[[expect.state]]
table = "events"
where = { at = { eq = "2026-03-01T12:00:00.000Z" } }
count = 1

[[expect.state]]
table = "events"
key = "E-1"
field = "at"
equals = "2026-03-01T12:00:00Z"
"#;
    let text = case_text(calls, checks).replace("demo@v1", "t@v1");
    let case = write_case(dir.path(), "stamped", &text);
    let store = dir.path().join("store");
    let out = common::run_in(&store, &case, &caller(), &worlds);
    out.expect_code(0);
    let a = answers(&out);
    for i in 0..2 {
        assert_eq!(a[i]["ok"][0]["id"], "E-1", "call {i}: {a:?}");
    }
    let grade = &out.json()["grade"];
    assert_eq!(grade["passed"], true, "{grade}");
    assert!(grade["diff"]["tables"].get("events").is_none(), "{grade}");
    common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());

    let old = dir.path().join("rules-4.jsonl");
    common::under_rules(&out.bundle(), 4, &old);
    let fork = common::wl(&store, &[&"fork", &old, &"--at", &"0", &"--json"]);
    let forked = fork.output();
    assert_eq!(forked[0]["ok"], json!([]), "{fork}");
    assert_eq!(forked[1]["ok"], json!([]), "{fork}");
    let graded = common::wl(
        &store,
        &[
            &"grade",
            &old,
            &"--case",
            &case,
            &"--worlds",
            &worlds,
            &"--json",
        ],
    );
    graded.expect_code(1);
    let failed: Vec<&str> = (graded.json()["grade"]["assertions"]
        .as_array()
        .unwrap()
        .iter())
    .filter(|a| a["passed"] == false)
    .map(|a| a["what"].as_str().unwrap())
    .collect();
    assert_eq!(
        failed,
        [
            "count events where {\"at\":{\"eq\":\"2026-03-01T12:00:00.000Z\"}}",
            "events/E-1.at equals",
            "unchanged events",
        ],
        "{graded}"
    );
}

/// A query tool with both `limit_arg` and `limit`: from rules 5 `limit` is
/// how many rows a call that leaves the argument out gets, and a limit
/// argument that is no count (`-1`, `2.5`) is `invalid-args`. Under rules
/// 4 (a fork of a run recorded then) both answered every row.
#[test]
fn a_query_s_limit_is_the_default_of_its_limit_arg_and_a_negative_one_is_refused() {
    let dir = temp_dir();
    let rows: String = (1..=8)
        .map(|i| format!("{{\"id\": \"I-{i}\", \"price\": {i}}}\n"))
        .collect();
    let worlds = common::write_world(
        dir.path(),
        "f",
        r#"name = "f"
version = 1

[tables.items]
key = "id"
rows = "items.jsonl"

[[tools]]
name = "both_limits"
params = { type = "object", properties = { limit = { type = "number" } } }
op = "query"
table = "items"
limit_arg = "limit"
limit = 1
"#,
        &[("items.jsonl", &rows)],
    );
    let calls = json!([
        {"tool": "both_limits", "args": {}},
        {"tool": "both_limits", "args": {"limit": 3}},
        {"tool": "both_limits", "args": {"limit": -1}},
        {"tool": "both_limits", "args": {"limit": 2.5}},
        {"tool": "both_limits", "args": {"limit": 0}},
    ]);
    let text = case_text(calls, "").replace("demo@v1", "f@v1");
    let case = write_case(dir.path(), "limits", &text);
    let store = dir.path().join("store");
    let out = common::run_in(&store, &case, &caller(), &worlds);
    out.expect_code(0);
    let a = answers(&out);
    let rows = |v: &Value| v["ok"].as_array().map(Vec::len);
    assert_eq!(rows(&a[0]), Some(1), "{a:?}");
    assert_eq!(rows(&a[1]), Some(3), "{a:?}");
    for i in [2, 3] {
        assert_eq!(a[i]["error"]["kind"], "invalid-args", "{:?}", a[i]);
        assert!(
            a[i]["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("`limit` is how many rows at most: a whole number, 0 or more, not "),
            "{:?}",
            a[i]
        );
    }
    assert_eq!(rows(&a[4]), Some(0), "{a:?}");
    common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());

    let old = dir.path().join("rules-4.jsonl");
    common::under_rules(&out.bundle(), 4, &old);
    let fork = common::wl(&store, &[&"fork", &old, &"--at", &"0", &"--json"]);
    let forked = fork.output();
    let counts: Vec<Option<usize>> = forked.as_array().unwrap().iter().map(rows).collect();
    assert_eq!(
        counts,
        [Some(8), Some(3), Some(8), Some(8), Some(0)],
        "{fork}"
    );
}

/// The sum over no rows (an empty table, a `where` that matches none) is
/// reported as 0: `Sum for f64` starts from -0.0, and the check said
/// `expected 1, got -0.0`.
#[test]
fn a_sum_over_no_rows_is_reported_as_0() {
    let dir = temp_dir();
    let checks = r#"
[[expect.state]]
table = "notes"
sum = "n"
equals = 1

[[expect.state]]
table = "notes"
where = { author = "nobody" }
sum = "n"
equals = 1
"#;
    let case = demo_case(dir.path(), "sum", json!([]), checks);
    let out = run_case(dir.path(), &case, &caller());
    out.expect_code(1);
    let sums: Vec<String> = (out.json()["grade"]["assertions"].as_array().unwrap().iter())
        .filter(|a| a["what"].as_str().unwrap().starts_with("sum notes.n"))
        .map(|a| a["actual"].to_string())
        .collect();
    assert_eq!(sums, ["0.0", "0.0"], "{out}");
}

/// A world with a `count`-keyed table (the default scheme) and a table of
/// nanosecond times past 2^53.
const RULES_6_WORLD: &str = r#"name = "six"
version = 1

[tables.notes]
key = "id"

[tables.events]
key = "id"
rows = "data/events.jsonl"

[permissions]
default = "allow"

[[tools]]
name = "add_note"
params = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }
op = "insert"
table = "notes"
row = { text = "$text" }

[[tools]]
name = "delete_note"
params = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
op = "delete"
table = "notes"
key_arg = "id"

[[tools]]
name = "events_after"
params = { type = "object", properties = { after = { type = "integer" } }, required = ["after"] }
op = "query"
table = "events"
filters = [{ field = "ts_ns", gt = "$after" }]
"#;

/// Under rules 6 an insert after a delete takes a key no row holds (a
/// `conflict` answered every insert without a key after a delete), and
/// integers past 2^53 order exactly in a query's filter and a check's
/// `where` (ordered as floats, the later time was not after the earlier):
/// both fail under rules 5's code.
#[test]
fn count_keys_pass_over_taken_ones_and_big_integers_order_exactly() {
    let root = temp_dir();
    let events = "{\"id\": \"E-1\", \"ts_ns\": 1772355600000000000}\n{\"id\": \"E-2\", \"ts_ns\": 1772355600000000001}\n";
    let worlds = common::write_world(
        root.path(),
        "six",
        RULES_6_WORLD,
        &[("data/events.jsonl", events)],
    );
    let calls = json!([
        {"tool": "add_note", "args": {"text": "a"}},
        {"tool": "add_note", "args": {"text": "b"}},
        {"tool": "delete_note", "args": {"id": "notes-1"}},
        {"tool": "add_note", "args": {"text": "c"}},
        {"tool": "events_after", "args": {"after": 1772355600000000000u64}},
    ]);
    let case = write_case(
        root.path(),
        "six",
        &format!(
            "world = \"six@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = {}\n{}",
            toml_inline(&json!({ "calls": calls })),
            r#"
[[expect.state]]
table = "notes"
count = 2

[[expect.state]]
table = "events"
where = { ts_ns = { gt = 1772355600000000000 } }
count = 1

[[expect.state]]
table = "events"
where = { ts_ns = { lte = 1772355600000000000 } }
count = 1
"#
        ),
    );
    let store = root.path().join("store");
    let out = common::run_in(&store, &case, &caller(), &worlds);
    out.expect_code(0);
    let got = answers(&out);
    assert_eq!(got[3]["ok"]["id"], "notes-3", "{got:?}");
    let after = got[4]["ok"].as_array().expect("rows");
    assert_eq!(after.len(), 1, "{got:?}");
    assert_eq!(after[0]["id"], "E-2");
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let replay = worldline(&store, ["replay", id.as_str()]);
    replay.expect_code(0);
}

/// `check`'s note of a state check on a field no row holds is at that
/// key's line: `order_by = "zz"` and `field = "zz"` were both placed at
/// the first `"zz"`, and a `where = { yy = 2 }` at the `sum = "yy"` above.
#[test]
fn a_note_on_a_field_no_row_holds_is_at_its_key_s_line() {
    let dir = temp_dir();
    let case = write_case(
        dir.path(),
        "notes",
        "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T09:00:00Z\ntask = {}\n\n\
         [[expect.state]]\ntable = \"tickets\"\norder_by = \"zz\"\nrow = \"last\"\nfield = \"zz\"\nequals = 1\n\n\
         [[expect.state]]\ntable = \"tickets\"\nsum = \"yy\"\nwhere = { yy = 2 }\nequals = 1\n",
    );
    let out = worldline(
        &dir.path().join("store"),
        [
            "check".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
        ],
    );
    out.expect_code(0);
    for (place, what) in [
        ("8:12", "#1: order_by `zz`"),
        ("10:9", "#1: field `zz`"),
        ("15:7", "#2: sum `yy`"),
        ("16:11", "#2: where `yy`"),
    ] {
        let said = format!("note: {}:{place}: [[expect.state]] {what}:", case.display());
        assert!(out.stdout.contains(&said), "no `{said}` in:\n{out}");
    }
}

/// A query's `limit_arg` naming a parameter declared as no number is a
/// problem at the tool: `check` took it, and every call giving the count
/// was then refused `invalid-args`.
#[test]
fn a_limit_arg_declared_as_no_number_is_a_problem_at_its_tool() {
    let root = temp_dir();
    let world = |limit: &str| {
        make_world(
            root.path(),
            &format!(
                "{SMALL_WORLD}\n[[tools]]\nname = \"q\"\nop = \"query\"\ntable = \"t\"\nlimit_arg = \"limit\"\n\
                 params = {{ type = \"object\", properties = {{ limit = {{ type = {limit} }} }} }}\n"
            ),
            &[("data/t.jsonl", "{\"id\": \"a\"}\n")],
        )
        .join("w/v1/world.toml")
    };
    let store = root.path().join("store");
    let file = world("\"string\"");
    let out = worldline(&store, ["check".as_ref(), file.as_os_str()]);
    out.expect_code(2);
    assert!(
        out.stdout.contains(&format!(
            "{}:7:1: tool `q`: `limit_arg` names `limit`, whose params declare type \"string\"",
            file.display()
        )),
        "{out}"
    );
    for fine in ["\"integer\"", "[\"integer\", \"null\"]", "\"number\""] {
        let file = world(fine);
        worldline(&store, ["check".as_ref(), file.as_os_str()]).expect_code(0);
    }
}

/// A world whose `lax` tool takes a flag and a count, as an AgentDojo
/// tool does (`recurring: bool | None`, `id: int`).
const LAX_WORLD: &str = r#"name = "lax"
version = 1

[tables.payments]
key = "id"

[permissions]
default = "allow"

[[tools]]
name = "schedule"
params = { type = "object", properties = { recurring = { anyOf = [{ type = "boolean" }, { type = "null" }] }, times = { type = "integer" } }, required = ["recurring", "times"] }
validate = "lax"
op = "insert"
table = "payments"
row = { recurring = "$recurring", times = "$times" }
"#;

/// From rules 7 a `lax` tool takes `1`/`0` for a boolean and a whole
/// float for an integer, as pydantic's lax mode does (AgentDojo's tools
/// take `recurring = 1`, and an injection that sent it reached its goal):
/// under rules 6 the flag was `invalid-args` and `7.0` went on as a float.
/// A fork of the run recorded under rules 6 answers as rules 6 did.
#[test]
fn a_lax_tool_takes_numbers_for_booleans_and_integers_from_rules_7() {
    let root = temp_dir();
    let worlds = common::write_world(root.path(), "lax", LAX_WORLD, &[]);
    let calls = json!([
        {"tool": "schedule", "args": {"recurring": 1, "times": 7.0}},
        {"tool": "schedule", "args": {"recurring": 0.0, "times": 2}},
        {"tool": "schedule", "args": {"recurring": 2, "times": 1}},
        {"tool": "schedule", "args": {"recurring": true, "times": 7.5}},
    ]);
    let case = write_case(
        root.path(),
        "lax",
        &format!(
            "world = \"lax@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = {}\n{}",
            toml_inline(&json!({ "calls": calls })),
            r#"
[[expect.state]]
table = "payments"
where = { recurring = true, times = 7 }
count = 1
"#
        ),
    );
    let store = root.path().join("store");
    let out = common::run_in(&store, &case, &caller(), &worlds);
    out.expect_code(0);
    let got = answers(&out);
    assert_eq!(got[0]["ok"]["recurring"], true, "{got:?}");
    assert!(got[0]["ok"]["times"].is_i64(), "{got:?}");
    assert_eq!(got[1]["ok"]["recurring"], false, "{got:?}");
    // What pydantic refuses is refused.
    for i in [2, 3] {
        assert_eq!(got[i]["error"]["kind"], "invalid-args", "call {i}: {got:?}");
    }
    common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());

    let old = root.path().join("rules-6.jsonl");
    common::under_rules(&out.bundle(), 6, &old);
    let fork = common::wl(&store, &[&"fork", &old, &"--at", &"0", &"--json"]);
    let forked = fork.output();
    assert_eq!(forked[0]["error"]["kind"], "invalid-args", "{fork}");
    assert!(
        forked[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("boolean"),
        "{fork}"
    );
}

/// One `[expect.output] json` check has one name, output or none (rules
/// 8, decision 0423): a run that wrote nothing failed it as `output
/// cause_deploy`, one that wrote other JSON as `output cause_deploy
/// equals`, so `runs` showed two signatures and `rerun` compared the check
/// with nothing. The run graded under rules 7
/// (`tests/bundles/before-rules-8`) replays `identical` with its old name.
#[test]
fn an_output_json_check_has_one_name_whether_or_not_there_is_output() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let old = common::imported_fixture(&store, "before-rules-8", "no-output.json");
    let recorded = common::read_bundle(&common::bundle_in(&store, &old));
    let name = |grade: &Value| -> Vec<String> {
        let all = grade["assertions"].as_array().unwrap();
        (all.iter())
            .filter(|a| a["passed"] == false)
            .map(|a| a["what"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        name(&recorded.footer.unwrap()["grade"]),
        ["output cause_deploy"]
    );
    let case = common::workspace_root().join("tests/bundles/before-rules-8/no-output.toml");
    let worlds = worlds_dir();
    let run = |command: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "run".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--json".as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
            "--exec".as_ref(),
            "--".as_ref(),
        ];
        args.extend(command.iter().map(std::ffi::OsStr::new));
        let out = common::worldline_raw(args);
        out.expect_code(1);
        name(&out.json()["grade"])
    };
    let none = run(&["/bin/true"]);
    let wrong = run(&["/bin/echo", r#"{"cause_deploy": "D-1"}"#]);
    assert_eq!(none, ["output cause_deploy equals"]);
    assert_eq!(wrong, none);
}
