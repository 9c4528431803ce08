//! `worldline test` collecting cases as pytest and nextest do, and the
//! agent's own error shown wherever a run is reported, on the real binary
//! and real guests: a `-k` that selects nothing is a usage error naming
//! near names; a malformed case is a collection error reported at the end
//! (exit 2) while the other cases run, and `--fail-fast` stops on it; an
//! agent's `err` reason and a panic's message appear under the failing
//! case, in `history`, `grade`, JUnit and every `--json`; `history` and
//! `diff` cut values to the terminal's width, and `--full` cuts nothing.

use crate::common;

use common::*;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// A probe case: look up ticket `ticket` in the demo world, expecting T-1
/// to be `status` afterwards.
fn probe_case(dir: &Path, name: &str, ticket: &str, status: &str) -> PathBuf {
    write_case(
        dir,
        name,
        &format!(
            r#"world = "demo@v1"
seed = 7
clock = 2026-03-01T12:00:00Z
task = {{ ticket = "{ticket}" }}

[[expect.state]]
table = "tickets"
key = "T-1"
field = "status"
equals = "{status}"
"#
        ),
    )
}

/// One case at a time, so that the text report's lines are in case order.
fn test_cmd(store: &Path, cases: &Path, extra: &[&str]) -> CliOutput {
    let mut extra = extra.to_vec();
    extra.extend(["--jobs", "1"]);
    test_suite(store, cases, &guest("probe-agent"), &extra)
}

#[test]
fn a_filter_that_selects_nothing_exits_2_naming_near_names() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    probe_case(&cases, "stale-deploys", "T-1", "open");
    probe_case(&cases, "fresh-tickets", "T-1", "open");
    let store = dir.path().join("store");

    let out = test_cmd(&store, &cases, &["-k", "stlae"]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("`stlae` selects none of the 2 case(s); near names: stale-deploys"),
        "{out}"
    );
    assert!(
        !store.join("runs").exists() || std::fs::read_dir(store.join("runs")).unwrap().count() == 0,
        "nothing ran"
    );

    let out = test_cmd(&store, &cases, &["-k", "zzzzzzzz", "--json"]);
    out.expect_code(2);
    let message = out.json()["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("nothing is near it; the cases include fresh-tickets, stale-deploys"),
        "{out}"
    );

    // A filter that selects something still runs it.
    test_cmd(&store, &cases, &["-k", "stale"]).expect_code(0);
}

#[test]
fn a_malformed_case_is_a_collection_error_while_the_others_run() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    probe_case(&cases, "a-good", "T-1", "open");
    let broken = write_case(
        &cases,
        "b-broken",
        "world = \"demo@v1\"\nseed = 7\ntask = { ticket = \n",
    );
    probe_case(&cases, "c-good", "T-1", "open");
    let store = dir.path().join("store");
    let junit = dir.path().join("junit.xml");

    let out = test_cmd(&store, &cases, &["--junit", junit.to_str().unwrap()]);
    out.expect_code(2);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("PASS  a-good"), "{out}");
    assert!(lines[1].starts_with("PASS  c-good"), "{out}");
    let collecting = format!("ERROR collecting {}:3:", broken.display());
    assert!(lines[2].starts_with(&collecting), "{out}");
    assert_eq!(
        lines.last().copied(),
        Some("2 passed, 0 failed, 1 error(s) collecting cases"),
        "{out}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("name=\"b-broken\"") && xml.contains("type=\"collection error\""),
        "{xml}"
    );

    let out = test_cmd(&store, &cases, &["--json"]);
    out.expect_code(2);
    let doc = out.json();
    assert_eq!(doc["passed"], 2, "{out}");
    let errors = doc["collection_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{out}");
    assert_eq!(errors[0]["file"], broken.display().to_string());
    assert_eq!(errors[0]["line"], 3, "{out}");
    assert!(errors[0]["column"].as_u64().is_some(), "{out}");

    // --fail-fast: the collection error stops the suite before any case.
    let out = test_cmd(&store, &cases, &["--json", "--fail-fast"]);
    out.expect_code(2);
    assert_eq!(out.json()["skipped"], 2, "{out}");
    assert_eq!(out.json()["passed"], 0, "{out}");

    // --list lists what it could load, and says what it could not.
    let out = test_cmd(&store, &cases, &["--list"]);
    out.expect_code(2);
    assert!(out.stdout.contains("2 case(s)"), "{out}");
    assert!(out.stderr.contains("b-broken.toml:3:"), "{out}");
}

#[test]
fn the_agents_own_error_is_shown_by_test_history_grade_and_junit() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    // The probe returns the tool's error for a ticket that does not exist;
    // the grade fails too, so the reason shown first is the grade's.
    let case = probe_case(&cases, "missing-ticket", "T-404", "closed");
    let store = dir.path().join("store");
    let junit = dir.path().join("junit.xml");

    let out = test_cmd(&store, &cases, &["--junit", junit.to_str().unwrap()]);
    out.expect_code(1);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("FAIL  missing-ticket"), "{out}");
    assert!(
        lines[1].starts_with("      agent errored: ") && lines[1].contains("T-404"),
        "the agent's reason is under the case: {out}"
    );
    let reason = lines[1].trim_start().trim_start_matches("agent errored: ");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("agent error (errored)"), "{xml}");

    let out = test_cmd(&store, &cases, &["--json"]);
    let c = &out.json()["cases"][0];
    assert_eq!(c["agent_error"]["status"], "errored", "{out}");
    assert_eq!(c["agent_error"]["message"], reason, "{out}");
    let run = c["run_id"].as_str().unwrap().to_string();

    let history = worldline(&store, ["history", &run]);
    history.expect_code(0);
    assert!(
        history.stdout.contains(&format!("agent errored: {reason}")),
        "{history}"
    );
    let history = worldline(&store, ["history", &run, "--json"]);
    assert_eq!(
        history.json()["agent_error"]["message"],
        reason,
        "{history}"
    );

    let case_arg = case.to_str().unwrap();
    let worlds = worlds_dir();
    let worlds_arg = worlds.to_str().unwrap();
    let grade = worldline(
        &store,
        ["grade", &run, "--case", case_arg, "--worlds", worlds_arg],
    );
    assert!(
        grade.stdout.contains(&format!("agent errored: {reason}")),
        "{grade}"
    );
    let grade = worldline(
        &store,
        [
            "grade", &run, "--case", case_arg, "--worlds", worlds_arg, "--json",
        ],
    );
    assert_eq!(grade.json()["agent_error"]["message"], reason, "{grade}");
}

#[test]
fn a_panic_is_shown_with_its_message_and_place() {
    let store = temp_dir();
    let agent = guest("hostile-agent");
    let case = case("hostile-panic");
    let out = worldline(
        store.path(),
        [
            "test".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
        ],
    );
    out.expect_code(1);
    assert!(
        out.stdout
            .contains("agent trapped: panic: hostile guest panics on purpose: boom-42"),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("\n        at tests/guests/hostile/src/lib.rs:"),
        "{out}"
    );
    let out = run_json(store.path(), &case, &agent);
    let e = &out.json()["agent_error"];
    assert_eq!(e["status"], "trapped", "{out}");
    assert!(
        e["traceback"].as_str().unwrap().contains("boom-42"),
        "{out}"
    );
}

#[test]
fn history_and_diff_fit_the_terminal_and_full_cuts_nothing() {
    let store = temp_dir();
    let store = store.path();
    let agent = guest("probe-agent");
    let a = run_json(store, &case("probe"), &agent);
    let a = a.json()["run_id"].as_str().unwrap().to_string();
    let dir = temp_dir();
    let other = write_case(
        dir.path(),
        "probe-t2",
        "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = { ticket = \"T-2\" }\n",
    );
    let b = run_in(store, &other, &agent, &worlds_dir());
    let b = b.json()["run_id"].as_str().unwrap().to_string();
    let with = |columns: &str, args: &[&str]| {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--store", store.to_str().unwrap()]);
        let out = worldline_env(all, &[("COLUMNS", columns)]);
        out.expect_code(if args[0] == "diff" { 1 } else { 0 });
        out
    };
    let tool_line = |out: &CliOutput| -> String {
        out.stdout
            .lines()
            .find(|l| l.contains("get_ticket("))
            .unwrap_or_else(|| panic!("no tool call line:\n{out}"))
            .to_string()
    };
    let narrow = tool_line(&with("80", &["history", &a]));
    let wide = tool_line(&with("400", &["history", &a]));
    let full = tool_line(&with("80", &["history", &a, "--full"]));
    assert!(
        narrow.contains('…') && wide.len() > narrow.len(),
        "{narrow}\n{wide}"
    );
    assert!(!full.contains('…'), "{full}");
    assert!(full.len() >= wide.len(), "{full}\n{wide}");
    let json = worldline(store, ["history", &a, "--json", "--full"]);
    let summaries: Vec<&str> = json.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert!(summaries.iter().all(|s| !s.contains('…')), "{json}");

    let diff_line = |out: &CliOutput| -> String {
        out.stdout
            .lines()
            .find(|l| l.starts_with("  a: "))
            .unwrap_or_else(|| panic!("no first difference:\n{out}"))
            .to_string()
    };
    let cut = diff_line(&with("60", &["diff", &a, &b]));
    let whole = diff_line(&with("60", &["diff", &a, &b, "--full"]));
    assert!(cut.contains('…') && !whole.contains('…'), "{cut}\n{whole}");
}

/// Shards that each compiled the agent merge into what one machine would
/// have printed: the agent once, at its longer compile (it was listed once
/// a shard, and the times summed).
#[test]
fn merged_shards_list_each_compile_once_at_its_longest() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    probe_case(&cases, "one", "T-1", "open");
    probe_case(&cases, "two", "T-1", "open");
    let agent = guest("probe-agent");
    let mut shards = Vec::new();
    let mut ms = Vec::new();
    for part in ["1/2", "2/2"] {
        // A store of each shard's own, as on two machines: both compile.
        let store = dir.path().join(format!("store-{}", &part[..1]));
        let extra = ["--partition", part, "--jobs", "1", "--json"];
        let out = test_suite_with(&store, &cases, &agent, &extra, &[OWN_COMPILE_CACHE]);
        out.expect_code(0);
        ms.push(out.json()["compiles"][0]["ms"].as_f64().unwrap());
        let file = dir.path().join(format!("shard-{}.json", &part[..1]));
        std::fs::write(&file, &out.stdout).unwrap();
        shards.push(file);
    }
    let merged = worldline_raw([
        OsStr::new("merge"),
        shards[0].as_os_str(),
        shards[1].as_os_str(),
        OsStr::new("--json"),
    ]);
    merged.expect_code(0);
    let compiles = merged.json()["compiles"].as_array().unwrap();
    assert_eq!(compiles.len(), 1, "{merged}");
    assert_eq!(
        compiles[0]["ms"].as_f64().unwrap(),
        ms[0].max(ms[1]),
        "{merged}"
    );
    let text = worldline_raw([
        OsStr::new("merge"),
        shards[0].as_os_str(),
        shards[1].as_os_str(),
    ]);
    text.expect_code(0);
    let line = (text.stderr.lines())
        .find(|l| l.starts_with("compiled before the first case"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        line.matches(&agent.display().to_string()).count(),
        1,
        "{line}"
    );
}

#[test]
fn compiles_happen_before_the_first_case_and_are_reported_once() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    probe_case(&cases, "one", "T-1", "open");
    // A store of its own: nothing compiled yet.
    let store = dir.path().join("store");
    let agent = guest("probe-agent");
    let test_cmd = |store: &Path, cases: &Path, extra: &[&str]| {
        let mut extra = extra.to_vec();
        extra.extend(["--jobs", "1"]);
        test_suite_with(store, cases, &agent, &extra, &[OWN_COMPILE_CACHE])
    };
    let out = test_cmd(&store, &cases, &["--json"]);
    out.expect_code(0);
    let compiles = out.json()["compiles"].as_array().unwrap();
    assert_eq!(compiles.len(), 1, "{out}");
    assert_eq!(compiles[0]["component"], agent.display().to_string());
    assert!(compiles[0]["ms"].as_f64().unwrap() > 0.0, "{out}");
    let text = test_cmd(&store, &cases, &[]);
    text.expect_code(0);
    assert!(
        !text.stderr.contains("compiled before the first case"),
        "the cache holds it now: {text}"
    );
    let again = test_cmd(&store, &cases, &["--json"]);
    assert!(again.json().get("compiles").is_none(), "{again}");

    let fresh = dir.path().join("fresh-store");
    let text = test_cmd(&fresh, &cases, &[]);
    assert!(
        text.stderr.contains("compiled before the first case in ")
            && text.stderr.contains("not in the case times")
            && text.stdout.lines().last() == Some("1 passed, 0 failed"),
        "{text}"
    );
}

/// Text a run recorded that holds a line break (here a tool's error
/// carrying the agent's argument, and so the agent's own error) is one
/// field of a report's line, its break written `\n`: it began a line of
/// its own in `test`, `run` and `history`, where it could forge a `PASS`
/// line of another case.
#[test]
fn a_line_break_an_agent_wrote_begins_no_line_of_a_report() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let forged = "PASS  forged  1 events";
    let case = probe_case(&cases, "broken", &format!("T-9\\n{forged}"), "open");
    let store = dir.path().join("store");
    let suite = test_cmd(&store, &cases, &[]);
    suite.expect_code(1);
    let (agent, worlds) = (guest("probe-agent"), worlds_dir());
    let run = worldline(
        &store,
        [
            OsStr::new("run"),
            case.as_os_str(),
            OsStr::new("--agent"),
            agent.as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
        ],
    );
    run.expect_code(1);
    let id = run_in(&store, &case, &agent, &worlds).json()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let history = worldline(&store, ["history", id.as_str()]);
    for out in [&suite, &run, &history] {
        assert!(
            out.stdout.contains(&format!("T-9\\n{forged}")),
            "the error is shown, its break escaped:\n{out}"
        );
        assert!(
            !out.stdout
                .lines()
                .any(|l| l.trim_start().starts_with(forged)),
            "{out}"
        );
    }
}

/// Two runs alike but for a latency injected into one call differ at that
/// call, in `diff`'s text and `--json` (exit 1): it said "same events",
/// exit 0, as it compared only what each call asked, got and wrote.
#[test]
fn diff_finds_a_latency_injected_into_one_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let text = std::fs::read_to_string(case("probe")).unwrap();
    let plain = write_case(dir.path(), "plain", &text);
    let slow = write_case(
        dir.path(),
        "slow",
        &format!("{text}\n[[inject]]\ntool = \"get_ticket\"\nlatency_ms = 5000\n"),
    );
    let agent = guest("probe-agent");
    let id = |c: &Path| {
        run_in(&store, c, &agent, &worlds_dir()).json()["run_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (a, b) = (id(&plain), id(&slow));
    let text = worldline(&store, ["diff", a.as_str(), b.as_str()]);
    text.expect_code(1);
    assert!(text.stdout.contains("first difference at event"), "{text}");
    assert!(text.stdout.contains("[injected: latency]"), "{text}");
    let json = worldline(&store, ["diff", a.as_str(), b.as_str(), "--json"]);
    json.expect_code(1);
    let first = &json.json()["first_divergence"];
    assert_eq!(first["b"]["injected"]["action"], "latency", "{json}");
    assert_eq!(first["a"]["injected"], serde_json::Value::Null, "{json}");
}

/// A bundle's path that is not there is said to be missing, by its path
/// (it was read as a run id: "no run `PATH` in this store ... or pass a
/// bundle's path"); `pin`, which takes no path, does not suggest one.
#[test]
fn a_missing_bundle_path_is_named_and_pin_suggests_no_path() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = case("probe");
    run_in(&store, &case, &guest("probe-agent"), &worlds_dir()).expect_code(0);
    let missing = dir.path().join("nothere.jsonl");
    let out = worldline(
        &store,
        [
            OsStr::new("history"),
            missing.as_os_str(),
            OsStr::new("--json"),
        ],
    );
    out.expect_code(2);
    assert_eq!(
        out.json()["error"]["file"],
        missing.display().to_string(),
        "{out}"
    );
    assert!(out.stderr.contains("no such bundle"), "{out}");
    let pin = worldline(&store, ["pin", "nope"]);
    pin.expect_code(2);
    assert!(!pin.stderr.contains("bundle's path"), "{pin}");
}
