//! `worldline test` as a runner people use every day, on the real binary
//! and real guests: selection by filter and tags, `--list`, `--limit`,
//! `--fail-fast`, `--rerun-failed`, run ids in the text report,
//! `--repeat` with pass rates, and partitions whose merged reports equal
//! the unpartitioned one.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn caller() -> PathBuf {
    guest("caller-agent")
}

/// A demo-world case: get (or close) ticket T-1, expecting it open, with
/// these tags.
fn case_in(dir: &Path, name: &str, close: bool, tags: &[&str]) -> PathBuf {
    let tool = if close { "close_ticket" } else { "get_ticket" };
    let tags: Vec<String> = tags.iter().map(|t| format!("\"{t}\"")).collect();
    write_case(
        dir,
        name,
        &format!(
            r#"world = "demo@v1"
seed = 3
clock = 2026-03-01T12:00:00Z
tags = [{}]
task = {{ calls = [{{ tool = "{tool}", args = {{ id = "T-1" }} }}] }}

[[expect.state]]
table = "tickets"
key = "T-1"
field = "status"
equals = "open"
"#,
            tags.join(", ")
        ),
    )
}

/// Four cases in `dir/cases`: a, b (slow), c (fails, slow), d (fails).
fn suite(dir: &Path) -> PathBuf {
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    case_in(&cases, "a", false, &[]);
    case_in(&cases, "b", false, &["slow"]);
    case_in(&cases, "c", true, &["slow", "closes"]);
    case_in(&cases, "d", true, &["closes"]);
    cases
}

fn test_cmd(store: &Path, cases: &Path, extra: &[&str]) -> CliOutput {
    test_suite(store, cases, &caller(), extra)
}

fn names(doc: &Value) -> Vec<String> {
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["case"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn filters_tags_list_and_limit_select_cases() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");

    let out = test_cmd(&store, &cases, &["--list", "-k", "tag:slow"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout.lines().collect::<Vec<_>>(),
        [
            "b  demo@v1  [slow]",
            "c  demo@v1  [slow, closes]",
            "2 case(s)"
        ],
        "{out}"
    );
    assert!(
        !store.join("runs").exists() || std::fs::read_dir(store.join("runs")).unwrap().count() == 0,
        "--list runs nothing"
    );

    let list = |filter: &str| {
        let out = test_cmd(&store, &cases, &["--list", "--json", "-k", filter]);
        out.expect_code(0);
        out.json()["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(list("tag:closes and not tag:slow"), ["d"]);
    assert_eq!(list("a or (tag:slow and not c)"), ["a", "b"]);
    assert_eq!(list("world:demo@* and name:?"), ["a", "b", "c", "d"]);

    let out = test_cmd(&store, &cases, &["--list", "--json", "--limit", "3"]);
    assert_eq!(out.json()["cases"].as_array().unwrap().len(), 3);

    let bad = test_cmd(&store, &cases, &["--list", "-k", "colour:red"]);
    bad.expect_code(2);
    assert!(
        bad.stderr.contains("`colour:` is not a filter field"),
        "{bad}"
    );
}

/// A last-session record that cannot be written (here a folder in its
/// place; a full disk does the same) is a warning after the suite: the
/// report and JUnit still come (the suite said only that error, exit 4).
#[test]
fn a_last_session_record_not_written_keeps_the_report_and_junit() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");
    test_cmd(&store, &cases, &[]).expect_code(1);
    let last = store.join("last-test.json");
    std::fs::remove_file(&last).unwrap();
    std::fs::create_dir(&last).unwrap();
    let junit = dir.path().join("junit.xml");
    let out = test_cmd(
        &store,
        &cases,
        &["--json", "--junit", junit.to_str().unwrap()],
    );
    out.expect_code(1);
    assert_eq!(names(out.json()), ["a", "b", "c", "d"]);
    assert!(junit.is_file(), "{out}");
    assert!(
        out.stderr.contains("last-test.json")
            && out
                .stderr
                .contains("`--rerun-failed` will not find this session's failures"),
        "{out}"
    );
}

#[test]
fn text_lines_name_run_ids_and_rerun_failed_runs_only_the_failures() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");

    let first = test_cmd(&store, &cases, &[]);
    first.expect_code(1);
    let lines: Vec<&str> = first.stdout.lines().collect();
    assert_eq!(lines.len(), 5, "{first}");
    for l in &lines[..4] {
        let id = l
            .split_whitespace()
            .find(|w| w.len() == 24 && w.as_bytes()[8] == b'-')
            .unwrap_or_else(|| panic!("no run id in `{l}`"));
        assert!(common::bundle_in(&store, id).is_file(), "{l}");
    }
    assert_eq!(lines[4], "2 passed, 2 failed");

    let again = test_cmd(&store, &cases, &["--rerun-failed", "--json"]);
    again.expect_code(1);
    assert_eq!(names(again.json()), ["c", "d"]);

    // A case that could not be loaded is run again once it loads: it was
    // forgotten, and a fixed suite said `0 passed, 0 failed`, exit 0.
    let a = cases.join("a.toml");
    let text = std::fs::read_to_string(&a).unwrap();
    std::fs::write(&a, "world = \n").unwrap();
    test_cmd(&store, &cases, &["-k", "a or b"]).expect_code(2);
    std::fs::write(&a, text).unwrap();
    let fixed = test_cmd(&store, &cases, &["--rerun-failed", "--json"]);
    fixed.expect_code(0);
    assert_eq!(names(fixed.json()), ["a"]);
    // The last session left nothing that did not pass: every case runs.
    let all = test_cmd(&store, &cases, &["--rerun-failed", "--json"]);
    all.expect_code(1);
    assert_eq!(names(all.json()), ["a", "b", "c", "d"]);
    assert!(all.stderr.contains("running every selected case"), "{all}");
    // Its failures (c, d) are not among the cases selected (a, b): those
    // run (it ran none, `0 passed, 0 failed`, exit 0).
    let (a, b) = (cases.join("a.toml"), cases.join("b.toml"));
    let picked = test_suite(
        &store,
        &a,
        &caller(),
        &["--rerun-failed", "--json", b.to_str().unwrap()],
    );
    picked.expect_code(0);
    assert_eq!(names(picked.json()), ["a", "b"]);
    assert!(
        picked.stderr.contains(
            "none of the cases the last test on this store left failing is among those selected"
        ),
        "{picked}"
    );

    let fresh = dir.path().join("fresh-store");
    let none = test_cmd(&fresh, &cases, &["--rerun-failed"]);
    none.expect_code(2);
    assert!(
        none.stderr.contains("no earlier `worldline test` session"),
        "{none}"
    );
}

/// With several jobs, `--fail-fast`'s skips are told after the failure
/// that made them, in `--events` as on the terminal: a worker that saw
/// the suite stopped told its skips while the failing case's own finish
/// was still being told (3 suites in 10 on a 2-core machine). Ten
/// suites, each checked.
#[test]
fn fail_fast_tells_the_failure_before_the_skips_it_makes() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    case_in(&cases, "a-fails", true, &[]);
    for n in 0..12 {
        case_in(&cases, &format!("b{n:02}"), false, &[]);
    }
    for round in 0..10 {
        let store = dir.path().join(format!("store{round}"));
        let events = dir.path().join(format!("events{round}.jsonl"));
        let out = test_cmd(
            &store,
            &cases,
            &[
                "--fail-fast",
                "--jobs",
                "3",
                "--events",
                events.to_str().unwrap(),
            ],
        );
        out.expect_code(1);
        let finished: Vec<(String, String)> = std::fs::read_to_string(&events)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"] == "case_finished")
            .map(|e| {
                let c = &e["case"];
                let name = c["case"].as_str().unwrap().to_string();
                (name, c["status"].as_str().unwrap_or("").to_string())
            })
            .collect();
        let failed = finished.iter().position(|(n, _)| n == "a-fails").unwrap();
        assert!(
            finished[..failed].iter().all(|(_, s)| s != "skipped"),
            "round {round}: a skip told before the failure that made it: {finished:?}"
        );
    }
}

#[test]
fn fail_fast_skips_what_it_never_started() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    case_in(&cases, "a-fails", true, &[]);
    for n in ["b", "c", "d"] {
        case_in(&cases, n, false, &[]);
    }
    let store = dir.path().join("store");
    let junit = dir.path().join("junit.xml");
    let events = dir.path().join("events.jsonl");
    let out = test_cmd(
        &store,
        &cases,
        &[
            "--fail-fast",
            "--jobs",
            "1",
            "--json",
            "--junit",
            junit.to_str().unwrap(),
            "--events",
            events.to_str().unwrap(),
        ],
    );
    out.expect_code(1);
    let doc = out.json();
    assert_eq!(doc["failed"], 1, "{out}");
    assert_eq!(doc["skipped"], 3, "{out}");
    assert_eq!(doc["cases"][1]["status"], "skipped");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<skipped").count(), 3, "{xml}");
    assert!(xml.contains("hostname=\""), "{xml}");
    assert!(xml.contains("<property name=\"seed\" value=\"3\""), "{xml}");
    // `--events`: a line per event, in the order one job ran them; the
    // last carries the `--json` document.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "started",
            "case_started",
            "case_finished",
            "case_finished",
            "case_finished",
            "case_finished",
            "finished"
        ]
    );
    assert_eq!(lines[0]["cases"], 4);
    assert_eq!(lines[2]["case"]["passed"], false);
    assert_eq!(lines[3]["case"]["status"], "skipped");
    assert_eq!(&lines[6]["summary"], doc);
}

/// A case that cannot be collected is in every shard's report (each
/// machine collects the whole suite): merged, it is one error, as on one
/// machine (it was one a shard).
#[test]
fn a_collection_error_merges_as_one() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    std::fs::write(
        cases.join("broken.toml"),
        "world = \"demo@v1\"\nseed = 1\nbogus_key = 3\n",
    )
    .unwrap();
    let store = dir.path().join("store");
    let junit = dir.path().join("junit.xml");
    let whole = test_cmd(
        &store,
        &cases,
        &["--json", "--junit", junit.to_str().unwrap()],
    );
    assert_eq!(
        whole.json()["collection_errors"].as_array().map(Vec::len),
        Some(1),
        "{whole}"
    );
    // Its JUnit test case has the classname and time the schema CI
    // validators read requires, as the others do (it had neither).
    let xml = std::fs::read_to_string(&junit).unwrap();
    let broken = (xml.lines())
        .find(|l| l.contains("<testcase name=\"broken\""))
        .unwrap_or_else(|| panic!("{xml}"));
    assert!(
        broken.contains("classname=\"") && broken.contains("time=\""),
        "{broken}"
    );
    let mut files = Vec::new();
    for shard in 1..=3 {
        let p = format!("count:{shard}/3");
        let out = test_cmd(&store, &cases, &["--json", "--partition", &p]);
        let f = dir.path().join(format!("s{shard}.json"));
        std::fs::write(&f, &out.stdout).unwrap();
        files.push(f);
    }
    let mut args: Vec<&std::ffi::OsStr> = vec!["merge".as_ref(), "--json".as_ref()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    let merged = worldline(&store, args);
    assert_eq!(merged.code, whole.code, "{merged}");
    assert_eq!(
        suite_without_run_specifics(merged.json().clone()),
        suite_without_run_specifics(whole.json().clone()),
    );
}

#[test]
fn merged_partitions_equal_the_whole_suite() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");
    let whole = test_cmd(&store, &cases, &["--json"]);
    whole.expect_code(1);
    for kind in ["count", "hash"] {
        let mut files = Vec::new();
        let mut seen = 0;
        for shard in 1..=3 {
            let p = format!("{kind}:{shard}/3");
            let out = test_cmd(&store, &cases, &["--json", "--partition", &p]);
            seen += out.json()["total"].as_u64().unwrap();
            let f = dir.path().join(format!("{kind}-{shard}.json"));
            std::fs::write(&f, &out.stdout).unwrap();
            files.push(f);
        }
        assert_eq!(seen, 4, "{kind}: every case in exactly one shard");
        let mut args: Vec<&std::ffi::OsStr> = vec!["merge".as_ref(), "--json".as_ref()];
        args.extend(files.iter().map(|f| f.as_os_str()));
        let merged = worldline(&store, args);
        merged.expect_code(1);
        assert_eq!(
            suite_without_run_specifics(merged.json().clone()),
            suite_without_run_specifics(whole.json().clone()),
            "{kind}"
        );
    }
    let twice = worldline(
        &store,
        [
            "merge".as_ref(),
            dir.path().join("count-1.json").as_os_str(),
            dir.path().join("count-1.json").as_os_str(),
        ],
    );
    twice.expect_code(2);
    assert!(
        twice.stderr.contains("shard count:1/3 is in two reports"),
        "{twice}"
    );
    // Shards of one suite run by two agent builds are no one suite's
    // report (they merged as one).
    let other = test_suite(
        &store,
        &cases,
        &guest("naive-agent"),
        &["--json", "--partition", "count:3/3"],
    );
    let shard = &other.json()["shard"];
    assert!(shard["agent"].is_string(), "{other}");
    let f = dir.path().join("naive-3.json");
    std::fs::write(&f, &other.stdout).unwrap();
    let files = [1, 2].map(|i| dir.path().join(format!("count-{i}.json")));
    let mut args: Vec<&std::ffi::OsStr> = vec!["merge".as_ref()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    args.push(f.as_os_str());
    let mixed = worldline(&store, args);
    mixed.expect_code(2);
    assert!(
        mixed.stderr.contains("and shard count:3/3 agent")
            && mixed.stderr.contains("merge the shards of one agent build"),
        "{mixed}"
    );
}

/// Shards given other case files, or other model flags, are no one
/// suite's report: a case edited between two shards' runs, or a
/// `--model-seed` on one shard only, merged as one suite.
#[test]
fn shards_of_other_case_files_or_model_flags_are_refused() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");
    let shard = |name: &str, p: &str, extra: &[&str]| {
        let mut args = vec!["--json", "--partition", p];
        args.extend(extra);
        let out = test_cmd(&store, &cases, &args);
        let f = dir.path().join(name);
        std::fs::write(&f, &out.stdout).unwrap();
        f
    };
    let merge = |files: &[&PathBuf]| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["merge".as_ref()];
        args.extend(files.iter().map(|f| f.as_os_str()));
        worldline(&store, args)
    };
    let one = shard("1.json", "count:1/2", &[]);
    let two = shard("2.json", "count:2/2", &[]);
    merge(&[&one, &two]).expect_code(1);
    let seeded = shard("2-seeded.json", "count:2/2", &["--model-seed", "9"]);
    let out = merge(&[&one, &seeded]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("shard count:1/2 ran other case files, worlds or model flags")
            && out.stderr.contains("--model-seed"),
        "{out}"
    );
    // Case a (shard 1's) edited before shard 2 ran: its seed moved.
    let a = cases.join("a.toml");
    let text = std::fs::read_to_string(&a).unwrap();
    std::fs::write(&a, text.replacen("seed = ", "seed = 1", 1)).unwrap();
    let edited = shard("2-edited.json", "count:2/2", &[]);
    let out = merge(&[&one, &edited]);
    out.expect_code(2);
    assert!(out.stderr.contains("ran other case files"), "{out}");
    std::fs::write(&a, text).unwrap();
    // Shard 2 run on a world of other contents (a ticket already closed).
    let worlds = dir.path().join("worlds");
    copy_dir(&worlds_dir().join("demo"), &worlds.join("demo"));
    let rows = worlds.join("demo/v1/data/tickets.jsonl");
    let closed = std::fs::read_to_string(&rows)
        .unwrap()
        .replacen("\"open\"", "\"closed\"", 1);
    std::fs::write(&rows, closed).unwrap();
    let other = worldline(
        &store,
        [
            "test".as_ref(),
            cases.as_os_str(),
            "--agent".as_ref(),
            caller().as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--json".as_ref(),
            "--partition".as_ref(),
            "count:2/2".as_ref(),
        ],
    );
    let other_world = dir.path().join("2-other-world.json");
    std::fs::write(&other_world, &other.stdout).unwrap();
    let out = merge(&[&one, &two]);
    out.expect_code(1);
    let out = merge(&[&one, &other_world]);
    out.expect_code(2);
    assert!(out.stderr.contains("ran other case files, worlds"), "{out}");
}

#[test]
fn repeats_report_each_cases_pass_rate_and_pass_k() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = guest("model-agent");
    let case = workspace_root().join("cases/model/rollback-weighted.toml");
    let junit = dir.path().join("junit.xml");
    let out = worldline(
        &store,
        [
            "test".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--repeat".as_ref(),
            "8".as_ref(),
            "--json".as_ref(),
            "--junit".as_ref(),
            junit.as_os_str(),
        ],
    );
    let doc = out.json();
    let c = &doc["cases"][0];
    assert_eq!(c["runs"], 8, "{out}");
    assert_eq!(c["run_ids"].as_array().unwrap().len(), 8);
    let passes = c["passes"].as_u64().unwrap();
    assert!(
        0 < passes && passes < 8,
        "weighted alternatives give both: {out}"
    );
    let [lo, hi] = [
        c["interval"][0].as_f64().unwrap(),
        c["interval"][1].as_f64().unwrap(),
    ];
    let rate = passes as f64 / 8.0;
    assert!(lo < rate && rate < hi, "{out}");
    assert_eq!(doc["pass_k"].as_array().unwrap().len(), 8);
    assert_eq!(doc["pass_k"][0]["value"].as_f64(), Some(rate));
    // Every run asks the scripted model several times; the totals count
    // each call and the tokens its completions reported.
    let model = &doc["model"];
    assert!(model["calls"].as_u64().unwrap() >= 16, "{out}");
    assert!(model["total_tokens"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(
        model["total_tokens"].as_u64().unwrap(),
        model["prompt_tokens"].as_u64().unwrap() + model["completion_tokens"].as_u64().unwrap()
    );
    out.expect_code(1);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&format!("<property name=\"passes\" value=\"{passes}\"")),
        "{xml}"
    );
    // The same repeats give the same runs: repetition seeds are derived.
    let again = worldline(
        &store,
        [
            "test".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--repeat".as_ref(),
            "8".as_ref(),
            "--json".as_ref(),
        ],
    );
    assert_eq!(again.json()["cases"][0]["passes"], passes);
}

#[test]
fn import_gathers_the_runs_of_shard_stores_into_one_that_replays_them() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let mut ids = Vec::new();
    let mut shards = Vec::new();
    for shard in 1..=2 {
        let store = dir.path().join(format!("shard-{shard}"));
        let p = format!("{shard}/2");
        let out = test_cmd(&store, &cases, &["--json", "--partition", &p]);
        for c in out.json()["cases"].as_array().unwrap() {
            if let Some(id) = c["run_id"].as_str() {
                ids.push(id.to_string());
            }
        }
        shards.push(store);
    }
    assert_eq!(ids.len(), 4, "every case ran in one shard");

    let gathered = dir.path().join("gathered");
    let mut args: Vec<&std::ffi::OsStr> = vec!["import".as_ref(), "--json".as_ref()];
    args.extend(shards.iter().map(|s| s.as_os_str()));
    let out = worldline(&gathered, args.clone());
    out.expect_code(0);
    let mut got: Vec<String> = out.json()["imported"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["run_id"].as_str().unwrap().to_string())
        .collect();
    got.sort();
    ids.sort();
    assert_eq!(got, ids);
    for id in &ids {
        let replay = worldline(&gathered, ["replay", id.as_str(), "--json"]);
        assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    }
    // Again: nothing new, nothing lost.
    let again = worldline(&gathered, args);
    again.expect_code(0);
    assert!(
        again.json()["imported"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["new"] == false)
    );

    // A damaged run of a source store is named and skipped, never copied.
    let victim = common::bundle_in(&shards[0], &first_run(&shards[0]));
    let text = std::fs::read_to_string(&victim).unwrap();
    std::fs::write(&victim, text.replacen("\"seq\":1", "\"seq\":7", 1)).unwrap();
    let third = dir.path().join("third");
    let out = worldline(&third, ["import".as_ref(), shards[0].as_os_str()]);
    out.expect_code(1);
    assert!(out.stderr.contains("skipped"), "{out}");
    assert!(
        !third
            .join("runs")
            .join(victim.file_name().unwrap())
            .exists()
    );
}

/// The oldest run id in a store.
fn first_run(store: &Path) -> String {
    worldline_store::store::StoreDir::open(store)
        .unwrap()
        .run_ids()
        .unwrap()
        .remove(0)
}

#[test]
fn a_link_to_a_folder_above_is_not_followed() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    case_in(&cases, "a", false, &[]);
    std::os::unix::fs::symlink(&cases, cases.join("loop")).unwrap();
    std::os::unix::fs::symlink(dir.path(), cases.join("up")).unwrap();
    let store = dir.path().join("store");
    let (worlds, agent) = (worlds_dir(), caller());
    let args: [&std::ffi::OsStr; 8] = [
        "test".as_ref(),
        cases.as_os_str(),
        "--agent".as_ref(),
        agent.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--list".as_ref(),
        "--json".as_ref(),
    ];
    let out = worldline_within(std::time::Duration::from_secs(60), &store, args)
        .expect("case discovery never ended under a link loop");
    out.expect_code(0);
    let listed: Vec<&str> = out.json()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["a"], "{out}");
}

/// Cases of one world share one loaded copy of it (issue 29), and with
/// `--jobs 2` each still sees only its own writes: the bumpers' service
/// writes and the closers' declarative ones never reach the readers,
/// whichever ran first.
#[test]
fn cases_sharing_a_world_never_see_each_others_writes() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for i in 0..4 {
        let write = |name: &str, tool: &str, n: u32| {
            let text = format!(
                "world = \"counters@v1\"\nseed = {i}\nclock = 2026-03-02T12:00:00Z\n\
                 task = {{ calls = [{{ tool = \"{tool}\", args = {{ id = \"c\" }} }}] }}\n\n\
                 [[expect.state]]\ntable = \"counters\"\nkey = \"c\"\nfield = \"n\"\nequals = {n}\n"
            );
            write_case(&cases, &format!("{i}-{name}"), &text);
        };
        write("bump", "bump", 1);
        write("read", "get_counter", 0);
    }
    let store = dir.path().join("store");
    let out = worldline(
        &store,
        [
            "test".as_ref(),
            cases.as_os_str(),
            "--agent".as_ref(),
            caller().as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--jobs".as_ref(),
            "2".as_ref(),
            "--json".as_ref(),
        ],
    );
    out.expect_code(0);
    let doc = out.json();
    let statuses: Vec<&str> = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["passed"; 8], "{out}");
}

/// `--list` reads the case files and each world's `world.toml` only: it
/// needs no agent, and lists cases whose world's rows and service are not
/// even there; a case naming a world that is not there is a collection
/// error (exit 2).
#[test]
fn list_needs_no_agent_and_reads_no_rows() {
    let dir = temp_dir();
    let worlds = counters(dir.path());
    let world = worlds.join("counters/v1");
    std::fs::remove_file(world.join("counters.jsonl")).unwrap();
    std::fs::remove_file(world.join("service.wasm")).unwrap();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let case = |name: &str, world: &str| {
        let text = format!(
            "world = \"{world}\"\nseed = 1\nclock = 2026-03-02T12:00:00Z\ntags = [\"t\"]\ntask = {{ calls = [] }}\n"
        );
        write_case(&cases, name, &text);
    };
    case("one", "counters@v1");
    case("two", "counters@v1");
    let list = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "test".as_ref(),
            cases.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--list".as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        worldline(&dir.path().join("store"), args)
    };
    let out = list(&[]);
    out.expect_code(0);
    assert_eq!(
        out.stdout.lines().collect::<Vec<_>>(),
        [
            "one  counters@v1  [t]",
            "two  counters@v1  [t]",
            "2 case(s)"
        ],
        "{out}"
    );
    case("three", "counters@v9");
    let out = list(&["--json"]);
    out.expect_code(2);
    assert_eq!(out.json()["cases"].as_array().unwrap().len(), 2, "{out}");
    assert_eq!(
        out.json()["collection_errors"].as_array().unwrap().len(),
        1,
        "{out}"
    );
    assert!(
        out.stderr.contains("three.toml") && out.stderr.contains("world `counters@v9` not found"),
        "{out}"
    );
    let run = worldline(
        &dir.path().join("store"),
        [
            "test".as_ref(),
            cases.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("pass --agent"), "{run}");
}

/// A suite keeps of each run what its report needs, not its events: its
/// peak memory over 120 runs of 60 calls is under 1.5x that over 20
/// (1.24x here; what still grows is the cases, loaded before the first
/// run, and each outcome's footer). When every run's events and final
/// state were held until the report, it was 1.79x (57 → 103 MB).
#[test]
fn a_suites_memory_does_not_grow_with_its_runs() {
    let dir = temp_dir();
    let calls =
        vec![r#"{ tool = "list_deploys", args = { service = "checkout" } }"#; 60].join(", ");
    let suite_of = |n: usize| {
        let cases = dir.path().join(format!("cases{n}"));
        std::fs::create_dir_all(&cases).unwrap();
        for i in 0..n {
            write_case(
                &cases,
                &format!("c{i:03}"),
                &format!(
                    "world = \"demo@v1\"\nseed = {i}\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{calls}] }}\n"
                ),
            );
        }
        cases
    };
    let (few, many) = (suite_of(20), suite_of(120));
    let worlds = worlds_dir();
    let caller = caller();
    let peak = |cases: &Path| {
        let store = cases.with_extension("store");
        let args = [
            "test",
            cases.to_str().unwrap(),
            "--agent",
            caller.to_str().unwrap(),
            "--worlds",
            worlds.to_str().unwrap(),
            "--jobs",
            "1",
        ];
        // Once to compile the agent into the store's cache, once measured.
        common::long::measured(&store, &args);
        common::long::measured(&store, &args).1
    };
    let (small, large) = (peak(&few), peak(&many));
    eprintln!("suite peak RSS: 20 runs {small} KiB, 120 runs {large} KiB");
    assert!(
        large <= small + small / 2,
        "a suite of 120 runs peaked at {large} KiB, over 1.5x the 20-run suite's {small} KiB: it holds its runs"
    );
}

/// `--repeat 300`: pass@k and pass^k listed at every k up to 16, the
/// powers of two, then the runs, not at all 300 (the text report printed
/// each on one line; its work grew with the cube of the runs: 22 s for
/// 2,400), and each a number (`fuzz`'s test below shows the nulls a float
/// C(n, k) gave past ~1,030 runs).
#[test]
fn many_repeats_report_a_number_at_each_k_they_list() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "passes", DEMO_PASSES);
    let store = dir.path().join("store");
    let out = test_cmd(&store, &case, &["--repeat", "300", "--json"]);
    out.expect_code(0);
    let doc = out.json();
    let mut ks: Vec<u64> = (1..=16).collect();
    ks.extend([32, 64, 128, 256, 300]);
    let c = &doc["cases"][0];
    assert_eq!(c["runs"], 300, "{out}");
    for figures in [
        &doc["pass_k"],
        &doc["pass_at_k"],
        &c["pass_at_k"],
        &c["pass_hat_k"],
    ] {
        let got: Vec<u64> = figures
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["k"].as_u64().unwrap())
            .collect();
        assert_eq!(got, ks, "{figures}");
        // Every run passes: 1 at every k.
        for p in figures.as_array().unwrap() {
            assert_eq!(p["value"].as_f64(), Some(1.0), "{figures}");
        }
    }
}

/// A repeated case keeps whole only the runs its report speaks of (the
/// first, and the first that did not pass): the others' state diffs,
/// assertions and outputs are let go as they finish. 200 runs of an agent
/// that adds 200 notes held ~300 KB each before (60 MB).
#[test]
fn many_repeats_hold_the_memory_of_one_run() {
    let dir = temp_dir();
    let calls: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"{{ tool = "add_note", args = {{ ticket = "T-1", text = "note {i}", author = "bench" }} }}"#
            )
        })
        .collect();
    let case = write_case(
        dir.path(),
        "notes",
        &format!(
            r#"world = "demo@v1"
seed = 1
clock = 2026-03-01T12:00:00Z
task = {{ calls = [{}] }}

[expect]
status = "completed"
[[expect.state]]
table = "notes"
where = {{ author = "bench" }}
count = 200
"#,
            calls.join(", ")
        ),
    );
    let store = dir.path().join("store");
    let (worlds, caller) = (worlds_dir(), caller());
    let peak = |repeat: &str| {
        let args = [
            "test",
            case.to_str().unwrap(),
            "--agent",
            caller.to_str().unwrap(),
            "--worlds",
            worlds.to_str().unwrap(),
            "--repeat",
            repeat,
        ];
        common::long::measured(&store, &args).1
    };
    // The first compiles the agent into the store's cache.
    let one = peak("1").min(peak("1"));
    let many = peak("200");
    assert!(
        many < one + 20 * 1024,
        "200 runs peaked at {many} KiB, one at {one} KiB: the case holds its runs"
    );
}

/// A suite of many cases holds each case's task as text and no run's
/// output: 300 cases of 200 calls, each run answering the calls' results,
/// peak within 16 MB of 30 such cases. Before, each case held its task as
/// a parsed tree (~250 KB for 200 calls) and its first run's output (~50
/// KB): 2,000 such cases peaked at 736 MB in a release build, 132 MB now.
#[test]
fn many_cases_hold_their_tasks_as_text_and_no_output() {
    let dir = temp_dir();
    let calls = vec![r#"{ tool = "list_deploys", args = { service = "checkout" } }"#; 200];
    let cases: Vec<PathBuf> = (0..300)
        .map(|i| {
            write_case(
                dir.path(),
                &format!("c{i:03}"),
                &format!(
                    "world = \"demo@v1\"\nseed = {}\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{}] }}\n",
                    i + 1,
                    calls.join(", ")
                ),
            )
        })
        .collect();
    let store = dir.path().join("store");
    let (worlds, caller) = (worlds_dir(), caller());
    let peak = |count: usize| {
        let mut args = vec![
            "test",
            "--agent",
            caller.to_str().unwrap(),
            "--worlds",
            worlds.to_str().unwrap(),
        ];
        args.extend(cases[..count].iter().map(|c| c.to_str().unwrap()));
        common::long::measured(&store, &args).1
    };
    // The first compiles the agent into the store's cache.
    let few = peak(30).min(peak(30));
    let many = peak(300);
    assert!(
        many < few + 16 * 1024,
        "300 cases peaked at {many} KiB, 30 at {few} KiB: the suite holds more than its cases' texts"
    );
}

/// A report claiming more runs of a case than one command makes (edited:
/// `repeat` a trillion) is refused by `merge`, naming the key, instead of
/// computing pass^k and pass@k over a trillion runs (each k's figure a
/// product as long as the runs: hours).
#[test]
fn merge_refuses_a_report_of_more_runs_than_a_command_makes() {
    let dir = temp_dir();
    let case = write_case(dir.path(), "passes", DEMO_PASSES);
    let store = dir.path().join("store");
    let out = test_cmd(&store, &case, &["--repeat", "2", "--json"]);
    out.expect_code(0);
    let mut doc = out.json().clone();
    let trillion = 1_000_000_000_000u64;
    doc["repeat"] = trillion.into();
    doc["cases"][0]["runs"] = trillion.into();
    doc["cases"][0]["passes"] = (trillion - 1000).into();
    doc["cases"][0]["passed"] = false.into();
    doc["passed"] = 0.into();
    doc["failed"] = 1.into();
    let report = dir.path().join("edited.json");
    std::fs::write(&report, doc.to_string()).unwrap();
    let merged = worldline(&store, ["merge".as_ref(), report.as_os_str()]);
    merged.expect_code(2);
    assert!(
        merged.stderr.contains(
            "`repeat` is 1000000000000, more runs of a case than one command makes (10000000)"
        ),
        "{merged}"
    );
}

/// `test CASES` of the caller agent on one job into `store`, with these
/// arguments, `--json` to a piped stdout, `--junit` and `--events` files,
/// started for a test to signal.
fn spawn_suite(
    cases: &Path,
    store: &Path,
    junit: &Path,
    events: &Path,
    args: &[&str],
) -> std::process::Child {
    cli()
        .arg("test")
        .arg(cases)
        .arg("--agent")
        .arg(caller())
        .arg("--worlds")
        .arg(worlds_dir())
        .arg("--store")
        .arg(store)
        .args(["--jobs", "1", "--json", "--junit"])
        .arg(junit)
        .arg("--events")
        .arg(events)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Forty cases of 2,000 tool calls each in `dir`/cases: a suite long
/// enough to signal while it runs.
fn forty_cases_of_2000_calls(dir: &Path) -> PathBuf {
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let calls = vec![r#"{ tool = "get_ticket", args = { id = "T-1" } }"#; 2000].join(", ");
    for i in 0..40 {
        write_case(
            &cases,
            &format!("c{i:02}"),
            &format!(
                "world = \"demo@v1\"\nseed = {i}\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{calls}] }}\n"
            ),
        );
    }
    cases
}

/// Ctrl-C (SIGINT) during a suite of component runs: no case starts after
/// it, the run under way ends, and the report (`--json`), JUnit, the
/// events and the last session are written for the cases that ran, the
/// rest `skipped`; then the signal ends the process. The signal ended it
/// at once before, with no report and no last session.
#[test]
fn a_signal_stops_the_suite_starting_cases_and_it_reports_what_ran() {
    use std::io::Read as _;
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let cases = forty_cases_of_2000_calls(dir.path());
    let store = dir.path().join("store");
    let junit = dir.path().join("junit.xml");
    let events = dir.path().join("events.jsonl");
    let mut child = spawn_suite(&cases, &store, &junit, &events, &[]);
    let finished = || std::fs::read_to_string(&events).is_ok_and(|t| t.contains("case_finished"));
    let status = signal_when(&mut child, libc::SIGINT, finished, "the suite");
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let shown = format!("{status:?}\n{stdout}\n{stderr}");
    assert_eq!(status.signal(), Some(libc::SIGINT), "{shown}");
    // Said as `verify`, `fork --samples` and `fuzz` say it, of cases.
    assert!(
        stderr.contains(
            "SIGINT: starting no more cases; the report follows once the cases under way end (again to end at once)"
        ),
        "{shown}"
    );
    let doc: Value = serde_json::from_str(&stdout).expect("the report");
    assert_eq!(doc["interrupted"], "SIGINT", "{shown}");
    let (passed, skipped) = (
        doc["passed"].as_u64().unwrap(),
        doc["skipped"].as_u64().unwrap(),
    );
    assert!(passed >= 1 && skipped >= 1, "{shown}");
    assert_eq!(
        (passed + skipped, doc["failed"].as_u64()),
        (40, Some(0)),
        "{shown}"
    );
    // Every run it reported is on disk, whole.
    let bundles = files_with_suffix(&store.join("runs"), ".jsonl");
    assert_eq!(bundles.len() as u64, passed, "{shown}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<skipped").count() as u64, skipped, "{xml}");
    assert!(xml.contains("not run: SIGINT stopped the suite"), "{xml}");
    let lines = std::fs::read_to_string(&events).unwrap();
    assert_eq!(
        lines
            .matches(r#"{"event":"interrupted","signal":"SIGINT"}"#)
            .count(),
        1,
        "{lines}"
    );
    assert!(
        lines
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .contains(r#""event":"finished""#)
    );
    // Told as the signal came, before the case under way finished (it was
    // told only when a case ended).
    let kinds: Vec<&str> = lines
        .lines()
        .filter_map(|l| l.split(r#""event":""#).nth(1)?.split('"').next())
        .collect();
    let told = kinds.iter().position(|k| *k == "interrupted").unwrap();
    let second = (kinds.iter().enumerate())
        .filter(|(_, k)| **k == "case_finished")
        .nth(1)
        .unwrap()
        .0;
    assert!(told < second, "{kinds:?}");
    // The cases not run are the next `--rerun-failed`'s.
    let last: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("last-test.json")).unwrap())
            .unwrap();
    assert_eq!(last["failed"].as_array().unwrap().len() as u64, skipped);
}

/// The text report writes a case's line while the suite still runs, once
/// the case's run is on disk (as nextest and pytest say each test as it
/// ends): a CI log of a long suite stayed empty until its last case, and
/// the line came only with the totals. The lines and their order are
/// those of a report written at the end.
#[test]
fn a_case_s_line_is_written_while_the_suite_runs_once_its_run_is_on_disk() {
    use std::io::BufRead as _;
    let dir = temp_dir();
    let cases = forty_cases_of_2000_calls(dir.path());
    let store = dir.path().join("store");
    let events = dir.path().join("events.jsonl");
    let mut child = cli()
        .arg("test")
        .arg(&cases)
        .arg("--agent")
        .arg(caller())
        .arg("--worlds")
        .arg(worlds_dir())
        .arg("--store")
        .arg(&store)
        .args(["--jobs", "1", "--events"])
        .arg(&events)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a line").unwrap();
    // Read as it came: the suite had not finished, and the run it names
    // was in the store.
    let finished = std::fs::read_to_string(&events).unwrap_or_default();
    let running = child.try_wait().unwrap().is_none();
    assert!(first.starts_with("PASS  c00  "), "{first}");
    assert!(
        running && !finished.contains(r#""event":"finished""#),
        "the first line came with the suite's end: {first}"
    );
    let id = first.split_whitespace().last().unwrap();
    assert!(
        store.join("runs").join(format!("{id}.jsonl")).is_file(),
        "{first}"
    );
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success());
    let names: Vec<&str> = std::iter::once(&first)
        .chain(&rest)
        .take(40)
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    let expected: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
    assert_eq!(names, expected, "{rest:?}");
    assert_eq!(rest.last().unwrap(), "40 passed, 0 failed", "{rest:?}");
}

/// The same SIGINT sent twice a moment apart (GNU `timeout -s INT` sends
/// it to the command, then to its process group) stops the suite as one
/// does: the second ended it at once, with no report and no JUnit file,
/// one time in a few.
#[test]
fn a_signal_sent_twice_at_once_stops_the_suite_as_one_does() {
    use std::io::Read as _;
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let cases = forty_cases_of_2000_calls(dir.path());
    let store = dir.path().join("store");
    let junit = dir.path().join("junit.xml");
    let events = dir.path().join("events.jsonl");
    let mut child = spawn_suite(&cases, &store, &junit, &events, &[]);
    let finished = || std::fs::read_to_string(&events).is_ok_and(|t| t.contains("case_finished"));
    let pid = child.id() as libc::pid_t;
    let twice = || {
        if !finished() {
            return false;
        }
        // SAFETY: signalling a child the test started.
        unsafe { libc::kill(pid, libc::SIGINT) };
        std::thread::sleep(std::time::Duration::from_millis(3));
        true
    };
    let status = signal_when(&mut child, libc::SIGINT, twice, "the suite");
    let (mut stdout, mut stderr) = (String::new(), String::new());
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let shown = format!("{status:?}\n{stdout}\n{stderr}");
    assert_eq!(status.signal(), Some(libc::SIGINT), "{shown}");
    assert!(!stderr.contains("again: ending at once"), "{shown}");
    let doc: Value = serde_json::from_str(&stdout).expect("the report");
    assert_eq!(doc["interrupted"], "SIGINT", "{shown}");
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .contains("not run: SIGINT stopped the suite")
    );
}

/// Ctrl-C while a case runs `--repeat` times: the runs it made are kept,
/// but the case is not reported `passed` (it was, at the count it had
/// reached, and `--rerun-failed` left it out): it is `interrupted`, in
/// the report, JUnit, the last session and a merge of the report.
#[test]
fn a_signal_that_cuts_a_case_s_repeats_short_does_not_report_it_passed() {
    use std::io::Read as _;
    use std::os::unix::process::ExitStatusExt as _;
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    case_in(&cases, "again", false, &[]);
    let store = dir.path().join("store");
    let (junit, events) = (dir.path().join("junit.xml"), dir.path().join("e.jsonl"));
    let mut child = spawn_suite(&cases, &store, &junit, &events, &["--repeat", "100000"]);
    // Signalled once its runs are under way.
    let started = || {
        let under_way = std::fs::read_to_string(&events).is_ok_and(|t| t.contains("case_started"));
        if under_way {
            std::thread::sleep(std::time::Duration::from_millis(700));
        }
        under_way
    };
    let status = signal_when(&mut child, libc::SIGINT, started, "the suite");
    let mut stdout = String::new();
    (child.stdout.take().unwrap())
        .read_to_string(&mut stdout)
        .unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT), "{stdout}");
    let doc: Value = serde_json::from_str(&stdout).expect("the report");
    let case = &doc["cases"][0];
    let runs = case["runs"].as_u64().unwrap();
    assert!((1..100000).contains(&runs), "{stdout}");
    assert_eq!(case["passes"].as_u64(), Some(runs), "{stdout}");
    // Counted apart: neither passed nor failed (it was counted failed).
    assert_eq!(
        (
            &case["passed"],
            &case["status"],
            &doc["passed"],
            &doc["failed"],
            &doc["interrupted_cases"]
        ),
        (
            &false.into(),
            &"interrupted".into(),
            &0.into(),
            &0.into(),
            &1.into()
        ),
        "{stdout}"
    );
    let reason = case["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("SIGINT stopped its runs after {runs} of 100000")),
        "{reason}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"type="interrupted""#), "{xml}");
    let last: Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("last-test.json")).unwrap())
            .unwrap();
    assert_eq!(last["failed"].as_array().unwrap().len(), 1, "{last}");
    // A merge takes the report as it is, and says what stopped the case.
    let report = dir.path().join("report.json");
    std::fs::write(&report, &stdout).unwrap();
    let merged = worldline(&store, ["merge".as_ref(), report.as_os_str()]);
    merged.expect_code(1);
    assert!(merged.stdout.contains("STOP  again"), "{merged}");
    assert!(
        merged
            .stdout
            .contains("0 passed, 0 failed, 1 interrupted\n"),
        "{merged}"
    );
    assert!(
        merged.stdout.contains("interrupted — SIGINT stopped"),
        "{merged}"
    );
}

/// A hash shard keeps its cases when a case is added, one of the same
/// name in another folder included: its name became `x/t`, and the hash
/// of the new name moved it to another shard.
#[test]
fn a_hash_shard_keeps_a_case_when_one_of_its_name_is_added() {
    let dir = temp_dir();
    let suite = dir.path().join("suite");
    for (folder, name) in [
        ("o1", "c1"),
        ("o2", "c2"),
        ("o3", "c3"),
        ("o4", "c4"),
        ("x", "t"),
    ] {
        let at = suite.join(folder);
        std::fs::create_dir_all(&at).unwrap();
        case_in(&at, name, false, &[]);
    }
    let store = dir.path().join("store");
    let shard_of = |wanted: &str| -> usize {
        (1..=2)
            .find(|i| {
                let p = format!("hash:{i}/2");
                let out = test_cmd(&store, &suite, &["--list", "--partition", &p]);
                out.expect_code(0);
                out.stdout
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(wanted))
            })
            .unwrap_or_else(|| panic!("{wanted} is in no shard"))
    };
    let before = shard_of("t");
    std::fs::create_dir_all(suite.join("y")).unwrap();
    case_in(&suite.join("y"), "t", false, &[]);
    assert_eq!(shard_of("x/t"), before);
}

/// A case's name is its path under the nearest `cases/` folder whatever
/// the working folder and however the path is spelt: from inside
/// `cases/` the names lost `sub/`, and `cases/sub/../sub` named them
/// `sub/../sub/a`, so `-k name:`, JUnit names and `hash:` shards changed
/// with where `test` was started.
#[test]
fn a_case_s_name_does_not_depend_on_the_working_folder_or_the_path_s_spelling() {
    let dir = temp_dir();
    let sub = dir.path().join("cases/sub");
    std::fs::create_dir_all(&sub).unwrap();
    case_in(&sub, "a", false, &[]);
    case_in(&sub, "b", false, &[]);
    let list = |cwd: &Path, path: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_worldline"))
            .args(["test", path, "--list", "--json", "--worlds"])
            .arg(worlds_dir())
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        (doc["cases"].as_array().unwrap().iter())
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let names = ["sub/a", "sub/b"];
    assert_eq!(list(dir.path(), "cases/sub"), names);
    assert_eq!(list(dir.path(), "cases/sub/../sub"), names);
    assert_eq!(list(&dir.path().join("cases"), "sub"), names);
    assert_eq!(list(&sub, "."), names);
}

/// A case whose own `exec` cannot start is that case's error, at its
/// `exec` line; the other cases run and the suite writes its whole
/// report (JUnit, events, the last session). It ended the suite with
/// that one error: no report, no JUnit, no last session, though the other
/// cases had run.
#[test]
fn a_case_whose_exec_cannot_start_is_its_own_error_and_the_suite_reports() {
    let dir = temp_dir();
    let p = dir.path();
    let cases = p.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    case_in(&cases, "a", false, &[]);
    write_case(
        &cases,
        "zz",
        &format!(
            "# its own agent, which is not there\nexec = [\"/nonexistent/agent-bin\"]\n{}",
            passing_demo_case(7)
        ),
    );
    std::fs::write(
        p.join("worldline.toml"),
        format!(
            "agent = \"{}\"\nworlds = \"{}\"\nstore = \"st\"\ncases = [\"cases\"]\n",
            caller().display(),
            worlds_dir().display()
        ),
    )
    .unwrap();
    let out = worldline_at(
        p,
        ["test", "--json", "--junit", "j.xml", "--events", "e.jsonl"],
        &[],
    );
    out.expect_code(1);
    let doc = out.json();
    assert_eq!(names(doc), ["a", "zz"], "{out}");
    assert_eq!(doc["cases"][0]["status"], "passed", "{out}");
    let zz = &doc["cases"][1];
    assert_eq!(zz["status"], "error", "{out}");
    let reason = zz["reason"].as_str().unwrap();
    assert!(
        reason.contains("zz.toml:2:1: cannot start `/nonexistent/agent-bin`"),
        "{out}"
    );
    let xml = std::fs::read_to_string(p.join("j.xml")).unwrap();
    assert_eq!(xml.matches("<error").count(), 1, "{xml}");
    let events = std::fs::read_to_string(p.join("e.jsonl")).unwrap();
    assert!(events.contains(r#""event":"finished""#), "{events}");
    let last: Value =
        serde_json::from_str(&std::fs::read_to_string(p.join("st/last-test.json")).unwrap())
            .unwrap();
    assert_eq!(last["failed"].as_array().unwrap().len(), 1, "{last}");
}

/// A `--junit` or `--events` path that cannot be written (under a file;
/// a missing folder is made) is refused before the agent is loaded:
/// nothing is compiled into the store's cache (the refusal came after the
/// agent and the services compiled, minutes for a Python one).
#[test]
fn a_report_path_that_cannot_be_written_is_refused_before_the_agent_loads() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");
    // A store with its own compile cache, holding the caller agent.
    test_suite_with(&store, &cases, &caller(), &[], &[OWN_COMPILE_CACHE]).expect_code(1);
    let compiled = || files_with_suffix(&store.join("cache"), ".cwasm");
    let before = compiled();
    assert_eq!(before.len(), 1, "{before:?}");
    for flag in ["--junit", "--events"] {
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        let bad = file.join("x.xml");
        let out = test_suite_with(
            &store,
            &cases,
            &guest("naive-agent"),
            &[flag, bad.to_str().unwrap()],
            &[OWN_COMPILE_CACHE],
        );
        out.expect_code(2);
        assert!(out.stderr.contains("is a file, not a folder"), "{out}");
        assert_eq!(
            compiled(),
            before,
            "{flag}: the agent was compiled before the refusal"
        );
    }
}

/// Ctrl-C while the agent and the world's Python service compile (before
/// any case runs) ends `test` at once, by the signal, as docs/cli.md
/// says: it was only noted, and the process waited out the compile
/// (100 s for this service) to report 0 passed and every case skipped.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_signal_while_the_agent_and_services_compile_ends_the_suite_at_once() {
    use std::io::Read as _;
    use std::os::unix::process::ExitStatusExt as _;
    use std::time::{Duration, Instant};
    let dir = temp_dir();
    let worlds = world_with_service(
        dir.path(),
        &workspace_root().join("worlds/booking/v1"),
        "booking",
        &python_service("examples/booking-service/booking.py"),
    );
    let store = dir.path().join("store");
    // The project's agent (one `--agent` names is loaded while the cases
    // are read, which no signal was caught in), and the store's own
    // compile cache, empty: the agent and the service compile.
    std::fs::write(
        dir.path().join("worldline.toml"),
        format!(
            "agent = \"{}\"\nworlds = \"{}\"\nstore = \"store\"\ncases = [\"{}\"]\n",
            guest("naive-agent").display(),
            worlds.display(),
            workspace_root().join("cases/booking").display()
        ),
    )
    .unwrap();
    let mut suite = cli();
    suite
        .arg("test")
        .current_dir(dir.path())
        .env(OWN_COMPILE_CACHE.0, OWN_COMPILE_CACHE.1)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SIGINT's default action, which the suite keeps while it compiles: a
    // test binary started in the background by a shell without job
    // control ignores SIGINT, and its children inherit that.
    // SAFETY: only `signal`, which is async-signal-safe, between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut suite, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = suite.spawn().unwrap();
    // Once the agent is compiled: the service compiles then (50 s here).
    let signalled = std::cell::Cell::new(None);
    let ready = || {
        let compiled = !files_with_suffix(&store.join("cache"), ".cwasm").is_empty();
        if compiled {
            signalled.set(Some(Instant::now()));
        }
        compiled
    };
    let status = signal_when(&mut child, libc::SIGINT, ready, "the suite");
    let took = signalled.get().unwrap().elapsed();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}\n{stderr}");
    assert!(!stderr.contains("starting no more cases"), "{stderr}");
    assert!(took < Duration::from_secs(20), "{took:?}\n{stderr}");
    assert!(
        files_with_suffix(&store.join("runs"), ".jsonl").is_empty(),
        "no case ran"
    );
}

/// `--list --json` with a case file that cannot be read gives its error
/// beside the cases it could read (it gave a bare list of those, exit 2,
/// the error on stderr only).
#[test]
fn list_json_names_its_collection_errors() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    write_case(&cases, "broken", "world = \"demo@v1\"\nseed = \n");
    let out = test_cmd(&dir.path().join("store"), &cases, &["--list", "--json"]);
    out.expect_code(2);
    let doc = out.json();
    let listed: Vec<&str> = (doc["cases"].as_array().unwrap().iter())
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["a", "b", "c", "d"], "{out}");
    let errors = doc["collection_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{out}");
    assert!(
        errors[0]["file"].as_str().unwrap().ends_with("broken.toml"),
        "{out}"
    );
    assert_eq!(errors[0]["line"], 2, "{out}");
}

/// `cases = []` in worldline.toml is said to be empty, at its line (the
/// error said to set `cases`, which was set).
#[test]
fn an_empty_cases_list_in_the_project_file_is_named_at_its_line() {
    let dir = temp_dir();
    let p = dir.path();
    std::fs::write(p.join("worldline.toml"), "store = \"st\"\ncases = []\n").unwrap();
    for command in ["test", "validate"] {
        let out = worldline_at(p, [command], &[]);
        out.expect_code(2);
        assert!(
            out.stderr.contains(
                "worldline.toml:2:1: cases: the list is empty: name case files or folders in it"
            ),
            "{out}"
        );
    }
}

/// A shard number past 2^64 − 1 is said to be too large, with the range
/// (it was "not a whole number").
#[test]
fn an_oversized_partition_is_too_large_not_a_non_number() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let out = test_cmd(
        &dir.path().join("store"),
        &cases,
        &["--list", "--partition", "18446744073709551616/3"],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains(
            "`18446744073709551616` in `18446744073709551616/3` is too large: give a whole number from 1 to 18446744073709551615"
        ),
        "{out}"
    );
}

/// A report cut short is placed once, at the line and column the JSON
/// reader stopped (it said `trunc.json:36:1: ... at line 36 column 4`).
#[test]
fn merge_of_a_cut_off_report_names_one_place() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");
    let out = test_cmd(&store, &cases, &["--json", "--partition", "1/2"]);
    out.expect_code(1);
    let cut = dir.path().join("trunc.json");
    std::fs::write(&cut, &out.stdout.as_bytes()[..out.stdout.len() / 2]).unwrap();
    let merged = worldline(&store, [os("merge"), cut.as_os_str()]);
    merged.expect_code(2);
    let line = merged
        .stderr
        .lines()
        .find(|l| l.contains("trunc.json"))
        .unwrap();
    assert!(!line.contains(" at line "), "{merged}");
    let (_, place) = line.split_once("trunc.json:").unwrap();
    let mut at = place.splitn(3, ':');
    let (l, c) = (at.next().unwrap(), at.next().unwrap());
    assert!(l.parse::<usize>().unwrap() > 1, "{merged}");
    assert!(c.parse::<usize>().unwrap() >= 1, "{merged}");
    assert!(
        at.next()
            .unwrap()
            .trim()
            .starts_with("is not a JSON report: EOF while parsing"),
        "{merged}"
    );
}

/// A report saved behind a UTF-8 byte-order mark (by an editor) merges as
/// it would without it: it was "is not a JSON report: expected value" at
/// line 1, column 1.
#[test]
fn merge_passes_over_a_byte_order_mark() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");
    let out = test_cmd(&store, &cases, &["--json", "--partition", "1/2"]);
    out.expect_code(1);
    let marked = dir.path().join("marked.json");
    std::fs::write(&marked, format!("\u{feff}{}", out.stdout)).unwrap();
    let merged = worldline(&store, [os("merge"), marked.as_os_str()]);
    assert!(!merged.stderr.contains("is not a JSON report"), "{merged}");
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, &out.stdout).unwrap();
    let unmarked = worldline(&store, [os("merge"), plain.as_os_str()]);
    assert_eq!(merged.code, unmarked.code, "{merged}\n{unmarked}");
    assert_eq!(
        merged.stdout.replace("marked.json", "plain.json"),
        unmarked.stdout,
        "{merged}"
    );
}

/// `-k`'s bare words match the case name without regard to case, as
/// pytest's `-k` does (`-k A` selected nothing, and offered `a`); a
/// term's glob is matched as written.
#[test]
fn a_filter_word_matches_without_regard_to_case() {
    let dir = temp_dir();
    let cases = suite(dir.path());
    let store = dir.path().join("store");
    let out = test_cmd(&store, &cases, &["--list", "--json", "-k", "A or D"]);
    out.expect_code(0);
    let listed: Vec<&str> = (out.json()["cases"].as_array().unwrap().iter())
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["a", "d"], "{out}");
    test_cmd(&store, &cases, &["--list", "-k", "tag:SLOW"]).expect_code(2);
}
