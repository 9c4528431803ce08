//! A campaign's jobs in processes of their own (decision 0406): on two
//! jobs and two cores a campaign runs its variations in two processes and
//! reports what one job reports, for a native agent as for a component; a
//! worker that dies fails the campaign saying so; the campaign's death
//! ends its workers; a worker refuses a campaign that is not its own; a
//! store whose compile cache cannot be written keeps the jobs in one
//! process, which alone compiles the agent.

use crate::common;

use common::workers::*;
use common::*;
use serde_json::Value;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// `fuzz` of the stale-deploys case by the naive agent, then `extra`.
fn stale_deploys(extra: &[&str]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "fuzz".into(),
        workspace_root()
            .join("cases/incident/fuzz-stale-deploys.toml")
            .into(),
        "--agent".into(),
        guest("naive-agent").into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    args
}

/// A long campaign of the naive agent, started in the background.
fn long_campaign(store: &Path) -> std::process::Child {
    worldline_spawn(store, stale_deploys(&["--runs", "1000000", "--jobs", "2"]))
}

#[test]
fn a_native_agent_s_campaign_on_two_jobs_runs_in_two_processes_and_reports_as_one_job() {
    if one_core() {
        return;
    }
    let dir = temp_dir();
    let agent = RunnerAgent::new(dir.path());
    let campaign = |jobs: &str| {
        let store = dir.path().join(format!("store-{jobs}"));
        agent.forget();
        let out = agent.campaign(&store, "8", jobs, &["--json"]);
        out.expect_code(0);
        let (ran, runners) = agent.runners();
        assert_eq!(ran, 8, "{out}");
        let mut report: Value = out.json().clone();
        report.as_object_mut().unwrap().remove("timing");
        report.as_object_mut().unwrap().remove("campaign");
        (runners, report)
    };
    let (one, alone) = campaign("1");
    let (two, shared) = campaign("2");
    assert_eq!((one, two), (1, 2), "processes that ran the variations");
    assert_eq!(alone, shared);
    assert_eq!(shared["summary"]["runs"], 8);
}

#[test]
fn a_worker_that_dies_fails_its_campaign_naming_it() {
    if one_core() {
        return;
    }
    let dir = temp_dir();
    let out = kill_its_worker(long_campaign(dir.path()), "--fuzz-worker", "fuzz");
    out.expect_code(4);
}

#[test]
fn a_campaign_killed_takes_its_workers_with_it() {
    if one_core() {
        return;
    }
    let dir = temp_dir();
    killed_takes_its_worker(long_campaign(dir.path()), "--fuzz-worker");
}

#[test]
fn a_worker_refuses_a_campaign_that_is_not_its_own() {
    let dir = temp_dir();
    let mut worker = cli()
        .args(stale_deploys(&["--fuzz-worker", "1", "--store"]))
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    worker
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"campaign\":\"another\"}\n[0,1]\n")
        .unwrap();
    let out = child_within(Duration::from_secs(30), worker).expect("the worker ended");
    assert_ne!(out.code, 0, "{out}");
    let reply: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("differ from its campaign's"),
        "{out}"
    );
    assert!(!out.stdout.contains("\"answer\""), "{out}");
}

#[test]
fn a_store_whose_compile_cache_cannot_be_written_keeps_its_campaign_in_one_process() {
    if one_core() {
        return;
    }
    let dir = temp_dir();
    let campaign = |runs: &str| {
        let out = worldline_with(
            dir.path(),
            stale_deploys(&["--runs", runs, "--jobs", "2", "--json"]),
            &[OWN_COMPILE_CACHE],
        );
        assert!(out.code == 0 || out.code == 1, "{out}");
        out
    };
    // A first campaign makes the cache's folder for this build's engine;
    // a file then takes its place, so nothing can be compiled into it.
    campaign("20");
    for entry in std::fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .flatten()
    {
        if entry.file_name() != "agent-files" && entry.path().is_dir() {
            std::fs::remove_dir_all(entry.path()).unwrap();
            std::fs::write(entry.path(), "").unwrap();
        }
    }
    let out = campaign("200");
    // Said once, by the campaign: no worker compiled the agent again.
    assert_eq!(
        out.stderr.matches("cannot write the compile cache").count(),
        1,
        "{out}"
    );
    assert_eq!(out.json()["summary"]["runs"], 200, "{out}");
}
