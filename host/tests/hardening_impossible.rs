//! Hardening: what a case or a fault profile asks for that no run can
//! meet is refused where it loads, by `check` as by `run` and `fuzz`,
//! with the file, the line and what to do (exit 2): bounds no count or sum
//! meets, an `[[inject]]` `when` on an argument the tool does not take, a
//! stale answer's `field` on a tool that answers no rows (which a case
//! made from a run leaves out), a duration past ten years; and `verify
//! --sample 0`, which replayed nothing and passed (decision 0412). The
//! real binary on the caller-agent guest.

use crate::common;

use common::{guest, passing_demo_case as demo_case, prompt, temp_dir, worlds_dir, write_case};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `worldline run CASE` on the caller-agent guest and the tests' worlds,
/// with `extra` arguments, in `store`.
fn run_caller(store: &Path, case: &Path, extra: &[&str]) -> common::CliOutput {
    let (agent, worlds) = (guest("caller-agent"), worlds_dir());
    let mut args = vec!["run", s(case), "--agent", s(&agent), "--worlds", s(&worlds)];
    args.extend_from_slice(extra);
    prompt(store, &args)
}

/// The demo case (nine lines) with `rest` after it, as `DIR/NAME.toml`:
/// `check` and `run` of it both exit 2 saying `said` (which starts with
/// the line, `10:1: ...`), placed in the case file.
#[track_caller]
fn refused(dir: &Path, name: &str, rest: &str, said: &str) {
    let case = write_case(dir, name, &format!("{}{rest}", demo_case(1)));
    let store = dir.join("store");
    let worlds = worlds_dir();
    let at = format!("{name}.toml:{said}");
    let out = prompt(&store, &["check", s(&case), "--worlds", s(&worlds)]);
    out.expect_code(2);
    assert!(out.stdout.contains(&at), "check: {at}: {out}");
    let out = run_caller(&store, &case, &[]);
    out.expect_code(2);
    assert!(out.stderr.contains(&at), "run: {at}: {out}");
}

/// `fuzz` of the passing demo case with the faults file `faults`: exit 2
/// saying `said`, before any run.
#[track_caller]
fn fuzz_refused(dir: &Path, faults: &str, said: &str) {
    let case = write_case(dir, "fuzzed", &demo_case(1));
    let file = dir.join("faults.toml");
    std::fs::write(&file, faults).unwrap();
    let store = dir.join("store");
    let out = prompt(
        &store,
        &[
            "fuzz",
            s(&case),
            "--agent",
            s(&guest("caller-agent")),
            "--worlds",
            s(&worlds_dir()),
            "--faults",
            s(&file),
            "--runs",
            "2",
        ],
    );
    out.expect_code(2);
    assert!(out.stderr.contains(said), "{said}: {out}");
    assert!(
        !store.join("runs").exists() || std::fs::read_dir(store.join("runs")).unwrap().count() == 0,
        "{out}"
    );
}

#[test]
fn bounds_no_count_or_sum_meets_are_refused_at_their_check() {
    let dir = temp_dir();
    // Once checked, run and failed for ever (`[2, 5]` written backwards).
    refused(
        dir.path(),
        "backwards",
        "[[expect.state]]\ntable = \"tickets\"\nmin = 5\nmax = 2\n",
        "10:1: [[expect.state]] #2: min = 5 is above max = 2, so no row count is within them; swap them or fix the typo",
    );
    refused(
        dir.path(),
        "calls",
        "[[expect.calls]]\ntool = \"get_ticket\"\nmin = 2\nmax = 1\n",
        "10:1: [[expect.calls]] #1: min = 2 is above max = 1",
    );
    // A weight in an unweighted reward, at its own entry (it was placed
    // at the first `[[expect.state]]`, which had none).
    refused(
        dir.path(),
        "weighed",
        "[[expect.state]]\ntable = \"tickets\"\nkey = \"T-1\"\nweight = 2\nexists = true\n",
        "10:1: [[expect.state]] #2: `weight` counts in a weighted reward: add `reward = \"weighted\"` to [expect]",
    );
    // `tickets/` names the row keyed "": a check that always held.
    refused(
        dir.path(),
        "unchanged",
        "[expect]\nunchanged = [\"tickets/\"]\n",
        "10:1: [expect]: unchanged: `tickets/` names no row; write `tickets` for the whole table or `tickets/KEY` for one row",
    );
}

#[test]
fn a_when_on_an_argument_the_tool_does_not_take_is_refused() {
    let dir = temp_dir();
    // `servce`: once a rule that never matched, and a run that passed
    // without the fault it was written to inject.
    refused(
        dir.path(),
        "typo",
        "[[inject]]\ntool = \"list_deploys\"\nwhen = { servce = \"checkout\" }\ndeny = true\n",
        "10:1: [[inject]]: when.servce: `list_deploys` takes no argument `servce` (its parameters: service)",
    );
}

#[test]
fn a_stale_field_on_a_tool_that_answers_no_rows_is_refused() {
    let dir = temp_dir();
    refused(
        dir.path(),
        "respond",
        "[[inject]]\ntool = \"status_page\"\nstale = { age_s = 60, field = \"checked_at\" }\n",
        "10:1: [[inject]]: stale.field = \"checked_at\" hides rows newer than the stale time, but `status_page`: op = \"respond\" answers no rows of a table",
    );
    fuzz_refused(
        dir.path(),
        "[[tools]]\ntool = \"close_ticket\"\nstale = { p = 0.5, age_s = [1, 60], field = \"at\" }\n",
        "faults.toml:3:1: faults file: `close_ticket`: stale.field = \"at\"",
    );
    // A case given as the faults file is said to be one (it was "unknown
    // field `clock`").
    fuzz_refused(
        dir.path(),
        &demo_case(1),
        "faults.toml: is a case (it names a `world`), not a faults file",
    );
}

#[test]
fn a_case_from_a_run_leaves_out_a_stale_field_its_tool_never_used() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    // A glob's stale rule with a field, met by a query (whose rows hold
    // it), a respond tool (which answers no rows) and a get whose rows do
    // not hold it: the case made from the run once kept the field on the
    // others' rules, and the new case did not load.
    let case = write_case(
        dir.path(),
        "glob",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\n\
         task = { calls = [{ tool = \"status_page\" }, { tool = \"list_deploys\", args = { service = \"checkout\" } }, { tool = \"get_ticket\", args = { id = \"T-1\" } }] }\n\
         [[inject]]\ntool = \"*\"\nstale = { age_s = 60, field = \"at\" }\n",
    );
    let out = run_caller(&store, &case, &["--json"]);
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let made = dir.path().join("made.toml");
    let out = prompt(&store, &["case", "from-run", &run, "-o", s(&made)]);
    out.expect_code(0);
    // Written where no `worlds/` is above it, it says `test` and `run`
    // need `--worlds` to find its world (they said "no `worlds/` folder
    // found", and it had said nothing).
    assert!(
        out.stderr
            .contains("will not find its world `demo@v1` there")
            && out.stderr.contains("--worlds DIR"),
        "{out}"
    );
    let doc: toml::Table = toml::from_str(&std::fs::read_to_string(&made).unwrap()).unwrap();
    let rules = doc["inject"].as_array().unwrap();
    assert_eq!(rules.len(), 3, "{doc}");
    assert_eq!(rules[0]["tool"].as_str(), Some("status_page"), "{doc}");
    assert!(rules[0]["stale"].get("field").is_none(), "{doc}");
    assert_eq!(rules[1]["tool"].as_str(), Some("list_deploys"), "{doc}");
    assert_eq!(rules[1]["stale"]["field"].as_str(), Some("at"), "{doc}");
    assert_eq!(rules[2]["tool"].as_str(), Some("get_ticket"), "{doc}");
    assert!(rules[2]["stale"].get("field").is_none(), "{doc}");
    prompt(&store, &["check", s(&made), "--worlds", s(&worlds_dir())]).expect_code(0);
}

#[test]
fn a_duration_past_ten_years_is_refused() {
    let dir = temp_dir();
    // 2^63 - 1 ms: once an overflow of the simulated clock.
    refused(
        dir.path(),
        "latency",
        "[[inject]]\ntool = \"get_ticket\"\nlatency_ms = 9223372036854775807\n",
        "10:1: [[inject]]: latency_ms = 9223372036854775807 is longer than ten years (316224000000 ms)",
    );
    refused(
        dir.path(),
        "age",
        "[[inject]]\ntool = \"list_deploys\"\nstale = { age_s = 9223372036854775807 }\n",
        "10:1: [[inject]]: stale.age_s = 9223372036854775807 is longer than ten years (316224000 s)",
    );
    fuzz_refused(
        dir.path(),
        "[[tools]]\ntool = \"get_ticket\"\nlatency_ms = { p = 0.5, ms = [1, 9223372036854775807] }\n",
        "faults.toml:3:1: faults file: `get_ticket`: the high end of latency_ms.ms = 9223372036854775807 is longer than ten years",
    );
    // A model latency set on the command line is checked as the case's.
    let case = write_case(dir.path(), "model", &demo_case(1));
    let out = run_caller(
        &dir.path().join("store"),
        &case,
        &["--model-set", "latency_ms=400000000000"],
    );
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("[model] latency_ms = 400000000000 is longer than ten years"),
        "{out}"
    );
}

/// A `--model-set` or `--user-model-set` value of the wrong type is the
/// flag's mistake, said in words before any case is read: it was said
/// against the case file, in Rust's names (`expected u32`), and a `nan`
/// as `invalid type: null`.
#[test]
fn a_model_set_of_the_wrong_type_is_the_flag_s_usage_error_in_words() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "model", &demo_case(1));
    let store = dir.path().join("store");
    for (flag, set, said) in [
        (
            "--model-set",
            "retries=-1",
            "invalid value 'retries=-1' for '--model-set <KEY=VALUE>': retries: invalid value: integer `-1`, expected a whole number from 0 to 4294967295",
        ),
        (
            "--user-model-set",
            "timeout_ms=nan",
            "invalid value 'timeout_ms=nan' for '--user-model-set <KEY=VALUE>': timeout_ms: invalid value: `nan` is not a finite number",
        ),
    ] {
        let out = run_caller(&store, &case, &[flag, set]);
        out.expect_code(2);
        assert!(out.stderr.contains(said), "{out}");
        let out = run_caller(&store, &case, &[flag, set, "--json"]);
        out.expect_code(2);
        let error = &out.json()["error"];
        assert!(error["message"].as_str().unwrap().contains(said), "{out}");
        // The flag is what the error is about (it was null), in one line
        // (clap's usage and `--help` advice followed).
        assert_eq!(error["file"], flag, "{out}");
        assert_eq!(
            error["message"].as_str().unwrap().lines().count(),
            1,
            "{out}"
        );
    }
    assert!(!store.join("runs").exists(), "nothing ran");
}

/// A missing argument's `--json` error names it in its one line: the
/// message ended at "the following required arguments were not
/// provided:", the argument being on clap's next line.
#[test]
fn a_missing_argument_s_json_error_names_it() {
    let dir = temp_dir();
    let out = prompt(&dir.path().join("store"), &["diff", "A", "--json"]);
    out.expect_code(2);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.ends_with("the following required arguments were not provided: <RUN_B>"),
        "{out}"
    );
    assert_eq!(message.lines().count(), 1, "{out}");
}

/// A `--model-set base_url=` refused for the credentials it carries does
/// not print them: clap quoted the refused value whole ("invalid value
/// 'base_url=https://user:secret@host…'"), in text and in `--json`, and a
/// base URL that was not HTTP was quoted by the refusal too.
#[test]
fn a_model_set_base_url_refused_for_its_credentials_does_not_print_them() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "model", &demo_case(1));
    let store = dir.path().join("store");
    for (flag, set) in [
        (
            "--model-set",
            "base_url=https://ana:PWSECRET42@models.example/v1",
        ),
        (
            "--user-model-set",
            "base_url=ftp://ana:PWSECRET42@models.example",
        ),
    ] {
        for json in [false, true] {
            let mut args = vec![flag, set];
            args.extend(json.then_some("--json"));
            let out = run_caller(&store, &case, &args);
            out.expect_code(2);
            assert!(out.stderr.contains("carries credentials"), "{out}");
            assert!(
                out.stderr
                    .contains("base_url=https://***@models.example/v1")
                    || out.stderr.contains("base_url=ftp://***@models.example"),
                "the value is shown without its credentials: {out}"
            );
            assert!(
                !out.stderr.contains("PWSECRET42") && !out.stdout.contains("PWSECRET42"),
                "{out}"
            );
        }
    }
}

/// A clock so late that the run's virtual time could pass the year 9999
/// is refused where the case loads: such a run once passed and wrote a
/// tool's `$now` as `10000-01-01T…`. One at the last clock allowed runs.
#[test]
fn a_clock_whose_run_could_pass_the_year_9999_is_refused() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = worlds_dir();
    let late = |clock: &str| {
        format!(
            "world = \"demo@v1\"\nseed = 1\nclock = {clock}\ntask = {{ calls = [{{ tool = \"list_deploys\", args = {{ service = \"checkout\" }} }}] }}\n"
        )
    };
    let case = write_case(dir.path(), "late", &late("9999-12-31T23:00:00Z"));
    for command in ["check", "run"] {
        let out = if command == "check" {
            prompt(&store, &["check", s(&case), "--worlds", s(&worlds)])
        } else {
            run_caller(&store, &case, &[])
        };
        out.expect_code(2);
        let said = format!("{out}");
        assert!(
            said.contains("late.toml:3:9: clock: is after 9415-06-13T00:25:26.290448384Z")
                && said.contains("give an earlier clock"),
            "{command}: {out}"
        );
    }
    let case = write_case(dir.path(), "last", &late("9415-06-13T00:25:26.290448384Z"));
    let out = run_caller(&store, &case, &["--json"]);
    out.expect_code(0);
    let output = out.json()["output"].as_str().unwrap().to_string();
    assert!(
        output.contains("\"as_of\":\"9415-06-13T00:25:26.29"),
        "{out}"
    );
}

/// A run recorded with such a clock before it was refused replays
/// `identical`, its answers' `10000-…` times as it wrote them; its case
/// given anew is refused.
#[test]
fn a_run_recorded_with_a_late_clock_replays_as_it_ran() {
    let fixture = common::workspace_root().join("tests/bundles/before-late-clock");
    let dir = temp_dir();
    let store = dir.path().join("store");
    let run = common::imported_fixture(&store, "before-late-clock", "late-clock.json");
    prompt(&store, &["verify", &run]).expect_code(0);
    let out = prompt(&store, &["show", &run, "--at", "1", "--json"]);
    out.expect_code(0);
    assert!(out.stdout.contains("10000-01-01T01:00:00Z"), "{out}");
    let case = fixture.join("late-clock.toml");
    let out = prompt(&store, &["check", s(&case), "--worlds", s(&worlds_dir())]);
    out.expect_code(2);
    assert!(
        out.stdout.contains("late-clock.toml:3:9: clock: is after"),
        "{out}"
    );
}

/// A count of 0 is refused naming its flag (`fuzz` named the case file
/// and both flags, `repro` the run).
#[test]
fn a_count_of_no_runs_is_refused_naming_its_flag() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "c1", &demo_case(1));
    let done = run_caller(&store, &case, &["--json"]);
    done.expect_code(0);
    let id = done.json()["run_id"].as_str().unwrap().to_string();
    let (agent, worlds) = (guest("caller-agent"), worlds_dir());
    let fuzz = [
        "fuzz",
        s(&case),
        "--agent",
        s(&agent),
        "--worlds",
        s(&worlds),
    ];
    for (args, flag) in [
        ([&fuzz[..], &["--runs", "0", "--json"]].concat(), "--runs"),
        (
            [&fuzz[..], &["--repeat", "0", "--json"]].concat(),
            "--repeat",
        ),
        (vec!["repro", &id, "--times", "0", "--json"], "--times"),
    ] {
        let out = prompt(&store, &args);
        out.expect_code(2);
        assert_eq!(out.json()["error"]["file"], flag, "{out}");
        assert!(
            out.stderr.contains(&format!("{flag}: must be at least 1")),
            "{out}"
        );
    }
}

#[test]
fn verify_of_a_sample_of_no_runs_is_refused() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(dir.path(), "c1", &demo_case(1));
    run_caller(&store, &case, &[]).expect_code(0);
    // Once exit 0, having replayed nothing: a nightly check that passed.
    let out = prompt(&store, &["verify", "--sample", "0"]);
    out.expect_code(2);
    assert!(out.stderr.contains("--sample: must be at least 1"), "{out}");
    let out = prompt(&store, &["verify", "--sample", "1"]);
    out.expect_code(0);
    assert!(out.stdout.contains("1 identical or verified"), "{out}");
}

/// The run `file` of `tests/bundles/before-0412/` imported into a store
/// under `dir`, and replayed `identical`: the store and the run's id.
fn replayed_fixture(dir: &Path, file: &str) -> (PathBuf, String) {
    let store = dir.join("store");
    let run = common::imported_fixture(&store, "before-0412", file);
    (store, run)
}

/// A run recorded before these rules, whose case breaks four of them,
/// replays `identical` and verifies as it ran; the same case given anew is
/// refused.
#[test]
fn a_run_recorded_before_the_rules_replays_as_it_ran() {
    let fixture = common::workspace_root().join("tests/bundles/before-0412");
    let dir = temp_dir();
    let (store, run) = replayed_fixture(dir.path(), "run.json");
    prompt(&store, &["verify", &run]).expect_code(0);
    let case = fixture.join("old-rules.toml");
    let worlds = worlds_dir();
    let out = prompt(&store, &["check", s(&case), "--worlds", s(&worlds)]);
    out.expect_code(2);
    assert!(out.stdout.contains("old-rules.toml:13:1"), "{out}");
}

/// A run recorded before decision 0412 with a latency whose nanoseconds
/// are past 2^64 (40 trillion milliseconds) replays `identical` in every
/// build: the release build that recorded it wrapped the product, and a
/// debug build's overflow check panicked on it.
#[test]
fn a_run_whose_latency_overflowed_replays_as_it_ran() {
    let dir = temp_dir();
    let (store, run) = replayed_fixture(dir.path(), "overflow.json");
    prompt(&store, &["verify", &run]).expect_code(0);
}

/// A run recorded before integers past 2^63 − 1 were refused anywhere but
/// the seed (its fuel limit is one) replays `identical`; `case from-run`
/// of it says, naming the run, that no TOML case can hold that integer.
#[test]
fn a_run_whose_case_holds_an_integer_past_toml_replays_and_says_why_no_case() {
    let fixture = common::workspace_root().join("tests/bundles/before-0412");
    let dir = temp_dir();
    let (store, run) = replayed_fixture(dir.path(), "big-fuel.json");
    let out = prompt(
        &store,
        &[
            "case",
            "from-run",
            &run,
            "-o",
            s(&dir.path().join("c.toml")),
        ],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains(&format!(
            "{run}.jsonl: its case holds an integer past 9223372036854775807"
        )),
        "{out}"
    );
    let worlds = worlds_dir();
    let case = fixture.join("big-fuel.toml");
    let out = prompt(&store, &["check", s(&case), "--worlds", s(&worlds)]);
    out.expect_code(2);
    assert!(
        out.stdout
            .contains("big-fuel.toml:10:8: this integer is past"),
        "{out}"
    );
}

/// A user table of faults that can never inject anything is refused at
/// its line, as a `[[tools]]` entry of none is: `[user]` alone or with
/// every probability 0 in a faults file (`check` said no problems and a
/// campaign passed every run, untouched), and an empty `[fuzz]` is said
/// at its line as every other `[fuzz]` problem is.
#[test]
fn a_user_fault_table_that_injects_nothing_is_refused_at_its_line() {
    let dir = temp_dir();
    let said = "faults.toml:1:1: faults file: [user] injects nothing; give one of silent, reply, latency_ms, deny_approvals or tool_errors a probability above 0";
    for faults in ["[user]\n", "[user]\nsilent = 0\ndeny_approvals = 0\n"] {
        fuzz_refused(dir.path(), faults, said);
        let out = prompt(
            &dir.path().join("store"),
            &["check", s(&dir.path().join("faults.toml"))],
        );
        out.expect_code(2);
        assert!(out.stdout.contains(said), "{faults}: {out}");
    }
    refused(
        dir.path(),
        "no-user-faults",
        "[fuzz.user]\nsilent = 0\n",
        "10:1: [fuzz.user] injects nothing",
    );
    refused(
        dir.path(),
        "empty-fuzz",
        "[fuzz]\n",
        "10:1: [fuzz] injects nothing",
    );
}

/// A case's `[fuzz.user]` faults of the user's turns and tools, in a case
/// with no `[user]`, never strike (no simulated user answers the agent):
/// refused at their line; an approver's denial, which the agent may ask
/// for without a user, is not.
#[test]
fn user_turn_faults_in_a_case_without_a_user_are_refused() {
    let dir = temp_dir();
    refused(
        dir.path(),
        "no-user",
        "[fuzz.user]\nsilent = 0.5\ndeny_approvals = 0.5\nreply = { p = 0.2, with = [\"no\"] }\n",
        "10:1: [fuzz.user] silent, reply: the case has no [user], so no simulated user answers the agent",
    );
    let case = write_case(
        dir.path(),
        "approvals",
        &format!("{}[fuzz.user]\ndeny_approvals = 0.5\n", demo_case(1)),
    );
    let out = prompt(
        &dir.path().join("store"),
        &["check", s(&case), "--worlds", s(&worlds_dir())],
    );
    out.expect_code(0);
}

/// The same faults given as a faults file's `[user]` to `fuzz --faults`
/// of a case with no `[user]` are refused at their line: they were taken,
/// never struck, and the campaign reported its pass rate under them.
#[test]
fn a_faults_file_s_user_faults_for_a_case_without_a_user_are_refused() {
    let dir = temp_dir();
    fuzz_refused(
        dir.path(),
        "[user]\nsilent = 0.5\nreply = { p = 0.5, with = [\"No.\"] }\n",
        "faults.toml:1:1: faults file [user] silent, reply: the case has no [user], so no simulated user answers the agent",
    );
}

/// Ten-year latencies, each allowed, add up past the virtual clock's end
/// (`u64::MAX` ns, ~584 years after the case's clock): from rules 5 the
/// run ends `trapped` after the call whose latency passes it (the 59th),
/// that event recorded at the end, saying so, and replays `identical`.
/// Under rules 4 (a fork of a run recorded then) the clock stood still at
/// its end from the 59th call on and the run passed.
#[test]
fn a_run_whose_time_would_pass_the_clock_s_end_stops_there() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let calls = vec!["{ tool = \"get_ticket\", args = { id = \"T-1\" } }"; 70].join(", ");
    let text = format!(
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{calls}] }}\n\n[[inject]]\ntool = \"get_ticket\"\nlatency_ms = 316224000000\n"
    );
    let case = write_case(dir.path(), "centuries", &text);
    let out = run_caller(&store, &case, &["--json"]);
    let doc = out.json();
    assert_eq!(doc["status"], "trapped", "{out}");
    let error = doc["error"].as_str().unwrap();
    assert!(
        error.starts_with("clock limit: event ")
            && error
                .contains("(`worldline:agent/tools.call`) took the run's virtual time past 2610-")
            && error.ends_with("the event is recorded at that time, and the run ended after it"),
        "{out}"
    );
    let tools = common::calls_of(&out.bundle(), "worldline:agent/tools.call");
    assert_eq!(tools.len(), 59, "{out}");
    assert_eq!(
        tools[57]["vtime_ns"].as_u64().map(|t| t < u64::MAX),
        Some(true)
    );
    assert_eq!(tools[58]["vtime_ns"].as_u64(), Some(u64::MAX), "{out}");
    common::replays_identical(&store, doc["run_id"].as_str().unwrap());

    let old = dir.path().join("rules-4.jsonl");
    common::under_rules(&out.bundle(), 4, &old);
    let fork = prompt(&store, &["fork", s(&old), "--at", "0", "--json"]);
    assert_eq!(fork.json()["status"], "completed", "{fork}");
    let tools = common::calls_of(&fork.bundle(), "worldline:agent/tools.call");
    assert_eq!(tools.len(), 70, "{fork}");
    assert_eq!(tools[69]["vtime_ns"].as_u64(), Some(u64::MAX), "{fork}");
}
