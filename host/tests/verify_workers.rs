//! `verify`'s jobs in processes of their own (decision 0406, as a fuzz
//! campaign's): on two jobs and two cores its runs are replayed in two
//! processes and the report is what one job reports, for native runs,
//! component runs, a bundle cut off before its header and a damaged one;
//! a worker answers every kind of check; a worker that dies fails the
//! `verify` naming it; a `verify` killed takes its worker with it.

use crate::common;

use common::workers::*;
use common::*;
use serde_json::Value;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// A component run of the naive agent in `store`: its bundle.
fn component_run(store: &Path) -> PathBuf {
    let case = workspace_root().join("cases/incident/baseline.toml");
    let out = run_json(store, &case, &guest("naive-agent"));
    assert!(out.code == 0 || out.code == 1, "{out}");
    out.bundle()
}

/// `bundle` copied into its store under `n` more run ids: the runs of a
/// long `verify`.
fn copies(bundle: &Path, n: usize) {
    let text = std::fs::read(bundle).unwrap();
    for i in 0..n {
        let id = format!("20261130-050000-{i:08x}");
        std::fs::write(bundle.with_file_name(format!("{id}.jsonl")), &text).unwrap();
    }
}

/// A run cut off before its header, and a run whose event was changed
/// after it was recorded (its hash chain broken), beside `bundle`.
fn headless_and_damaged(bundle: &Path) -> (String, String) {
    let headless = "20261130-040000-0000dead";
    std::fs::write(
        bundle.with_file_name(format!("{headless}.jsonl")),
        "{\"header\":{\"agent",
    )
    .unwrap();
    let damaged = "20261130-040000-0000beef";
    let text = std::fs::read_to_string(bundle).unwrap();
    let mut lines: Vec<String> = text.split('\n').map(String::from).collect();
    let event = (lines.iter_mut())
        .find(|l| l.contains("\"seq\":1,"))
        .expect("the bundle has an event 1");
    // One digit of its chain hash changed.
    let at = event.find("\"hash\":\"").unwrap() + 8;
    let digit = if event[at..].starts_with('0') {
        "1"
    } else {
        "0"
    };
    event.replace_range(at..at + 1, digit);
    std::fs::write(
        bundle.with_file_name(format!("{damaged}.jsonl")),
        lines.join("\n"),
    )
    .unwrap();
    (headless.into(), damaged.into())
}

#[test]
fn verify_on_two_jobs_replays_in_two_processes_and_reports_what_one_job_reports() {
    if one_core() {
        return;
    }
    let dir = temp_dir();
    let store = dir.path().join("store");
    // Eight native runs kept by a campaign, component runs, a headless
    // bundle and a damaged one.
    let agent = RunnerAgent::new(dir.path());
    agent
        .campaign(&store, "8", "1", &["--keep-all"])
        .expect_code(0);
    let bundle = component_run(&store);
    copies(&bundle, 6);
    headless_and_damaged(&bundle);
    let verify = |jobs: &str| {
        agent.forget();
        let out = worldline(&store, ["verify", "--jobs", jobs, "--json"]);
        out.expect_code(1);
        let (ran, runners) = agent.runners();
        assert_eq!(ran, 8, "{out}");
        (runners, out.json().clone())
    };
    let (one, alone) = verify("1");
    let (two, shared) = verify("2");
    assert_eq!(
        (one, two),
        (1, 2),
        "processes that replayed the native runs"
    );
    assert_eq!(alone, shared);
    assert_eq!(shared["boundary_replay"], 8, "{shared}");
    assert_eq!(shared["identical"], 7, "{shared}");
    assert_eq!(shared["incomplete"], 1, "{shared}");
    assert_eq!(shared["unreadable"], 1, "{shared}");
}

#[test]
fn a_verify_worker_answers_every_kind_of_check_and_refuses_a_run_it_was_not_sent() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let bundle = component_run(&store);
    let good = bundle.file_stem().unwrap().to_str().unwrap().to_string();
    let (headless, damaged) = headless_and_damaged(&bundle);
    let mut worker = cli()
        .args(["verify", "--verify-worker", "1", "--store"])
        .arg(&store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let hello =
        serde_json::json!({ "runs": [good, headless, damaged, "20261130-030000-00000000"] });
    worker
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{hello}\n[0,1]\n[2,3]\n[4]\n").as_bytes())
        .unwrap();
    let out = child_within(Duration::from_secs(60), worker).expect("the worker ended");
    assert_ne!(out.code, 0, "run 4 was not sent: {out}");
    let replies: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replies.len(), 5, "{out}");
    let answer = |i: usize| &replies[i]["answer"]["checked"];
    assert_eq!(replies[0]["answer"]["index"], 0, "{out}");
    assert_eq!(answer(0)["replayed"]["verdict"], "identical", "{out}");
    assert_eq!(answer(0)["replayed"]["run"], good.as_str(), "{out}");
    assert_eq!(answer(1), "headless", "{out}");
    assert!(
        answer(2)["unreadable"]
            .as_str()
            .unwrap()
            .contains("hash chain"),
        "{out}"
    );
    assert!(
        answer(3)["unreadable"]
            .as_str()
            .unwrap()
            .contains("20261130-030000-00000000"),
        "{out}"
    );
    assert_eq!(
        replies[4]["error"]["message"], "verify sent run 4 of 4",
        "{out}"
    );
}

/// A `verify` of 4,000 runs started in the background (seconds of work),
/// in a store of `dir`.
fn long_verify(dir: &Path) -> std::process::Child {
    let store = dir.join("store");
    copies(&component_run(&store), 4000);
    worldline_spawn(&store, ["verify", "--jobs", "2"])
}

#[test]
fn a_verify_whose_worker_dies_fails_naming_it() {
    if one_core() {
        return;
    }
    let dir = temp_dir();
    let out = kill_its_worker(long_verify(dir.path()), "--verify-worker", "verify");
    assert_ne!(out.code, 0, "{out}");
}

#[test]
fn a_verify_killed_takes_its_worker_with_it() {
    if one_core() {
        return;
    }
    let dir = temp_dir();
    killed_takes_its_worker(long_verify(dir.path()), "--verify-worker");
}

/// A first SIGINT stops a `verify`: it begins no more replays (its worker
/// neither, when a Ctrl-C reaches it too), says so on stderr, writes its
/// report of the runs it checked (`interrupted`, `not_checked`; one JSON
/// document), then the signal ends it. It was ended mid-report: `--json`
/// cut off in its `runs`, the text without its totals, nothing said, and
/// on two jobs its worker ended by the Ctrl-C.
#[test]
fn a_signal_stops_a_verify_which_reports_the_runs_it_checked() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    copies(&component_run(&store), 4000);
    // Jobs, whether the signal reaches its process group (a terminal's
    // Ctrl-C) or it alone, and `--json`.
    for (jobs, group, json) in [("1", false, true), ("2", true, true), ("1", true, false)] {
        if jobs == "2" && one_core() {
            continue;
        }
        let mut command = cli();
        command
            .args(["verify", "--jobs", jobs])
            .arg("--store")
            .arg(&store);
        if json {
            command.arg("--json");
        }
        let said = if json { "\"verdict\"" } else { "identical" };
        let (signal, out) = signalled_once_said(command, said, libc::SIGINT, group);
        let what = format!("jobs {jobs}, group {group}: {out}");
        assert_eq!(signal, Some(libc::SIGINT), "{what}");
        assert!(
            out.stderr
                .contains("SIGINT: starting no more replays; the report follows"),
            "{what}"
        );
        assert!(!out.stderr.contains("worker"), "{what}");
        if !json {
            assert!(out.stdout.contains(" diverged, "), "{what}");
            assert!(out.stdout.contains("interrupted by SIGINT: "), "{what}");
            continue;
        }
        let doc = out.json();
        assert_eq!(doc["interrupted"], "SIGINT", "{what}");
        let replayed = doc["replayed"].as_u64().unwrap();
        assert_eq!(doc["runs"].as_array().unwrap().len() as u64, replayed);
        let not_checked = doc["not_checked"].as_u64().unwrap();
        assert!(not_checked > 0, "{what}");
        assert_eq!(replayed + not_checked, 4001, "{what}");
        assert_eq!(doc["diverged"], 0, "{what}");
    }
}
