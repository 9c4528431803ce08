//! `resume` of a native agent's run, refused where it would make a run
//! that is no resume: an agent that no longer makes the recorded calls
//! (it stored a `trapped` run that stood for a resume, so `test --resume`
//! skipped the real one from then on, and said so as an internal error),
//! and a run whose process is still recording it (a second agent ran
//! beside the first, and the run got a "resumed" child once it finished).

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A native agent that asks the scripted model three times with
/// `PREFIX`, waiting before its second call until the file the task's
/// `wait` names exists, when it names one.
const AGENT: &str = r#"
import json, os, time, urllib.request
PREFIX = "step"
wait = json.loads(os.environ["WORLDLINE_TASK"])["wait"]
for i in range(3):
    if wait and i == 1:
        for _ in range(1200):
            if os.path.exists(wait):
                break
            time.sleep(0.05)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": f"{PREFIX} {i}"}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body,
        headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).read()
print(json.dumps({"steps": 3}))
"#;

/// The incident world's case in `dir`, the agent as `exec`, `limits`
/// appended; with `wait`, the agent waits for `dir/go`.
fn case(dir: &Path, wait: bool, limits: &str) -> PathBuf {
    let agent = dir.join("agent.py");
    std::fs::write(&agent, AGENT).unwrap();
    let go = match wait {
        true => dir.join("go").display().to_string(),
        false => String::new(),
    };
    write_case(
        dir,
        "steps",
        &format!(
            "world = \"incident@v4\"\nseed = 7\nclock = 2026-03-01T12:05:00Z\ntask = {{ wait = \"{go}\" }}\nexec = [\"python3\", \"{}\"]\n\n[model]\n[[model.rules]]\nreply = \"ok\"\n{limits}",
            agent.display()
        ),
    )
}

/// `worldline ARGS` on the store in `dir` (with the project's worlds
/// for a `run`).
fn wl(dir: &Path, args: &[&str]) -> common::CliOutput {
    let worlds = workspace_root().join("worlds");
    let mut all: Vec<&str> = args.to_vec();
    if args[0] == "run" {
        all.extend(["--worlds", worlds.to_str().unwrap()]);
    }
    worldline(&dir.join("store"), all)
}

fn run_count(dir: &Path) -> usize {
    let runs = wl(dir, &["runs", "--json"]);
    runs.expect_code(0);
    runs.json().as_array().unwrap().len()
}

#[test]
fn a_resume_whose_agent_departs_is_the_input_s_mistake_and_keeps_no_run() {
    let dir = temp_dir();
    let case = case(dir.path(), false, "\n[limits]\nmax_steps = 2\n");
    let stopped = wl(dir.path(), &["run", case.to_str().unwrap(), "--json"]);
    assert_eq!(stopped.json()["run_status"], "step_limit", "{stopped}");
    let id = stopped.json()["run_id"].as_str().unwrap().to_string();
    // The agent changed since: its first call is another.
    let agent = dir.path().join("agent.py");
    let source = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        source.replace("PREFIX = \"step\"", "PREFIX = \"STEP\""),
    )
    .unwrap();
    for json in [false, true] {
        let mut args = vec!["resume", id.as_str(), "--max-steps", "10"];
        args.extend(json.then_some("--json"));
        let refused = wl(dir.path(), &args);
        refused.expect_code(2);
        let said = match json {
            true => {
                let e: &Value = &refused.json()["error"];
                assert_eq!(e["kind"], "input", "{refused}");
                assert!(e["file"].as_str().unwrap().contains(&id), "{refused}");
                e["message"].as_str().unwrap().to_string()
            }
            false => refused.stderr.clone(),
        };
        assert!(
            said.contains("departed from the recording at event 0")
                && said.contains("it made another call there")
                && said.contains("STEP 0"),
            "{refused}"
        );
        // The command it suggests names the store it was given (it read
        // the default `.worldline`, no store there).
        assert!(
            said.contains(&format!("`worldline fork {id} --at 0 --store ")),
            "{refused}"
        );
    }
    assert_eq!(run_count(dir.path()), 1, "no run was kept for the refusals");
    std::fs::write(&agent, source).unwrap();
    let resumed = wl(
        dir.path(),
        &["resume", id.as_str(), "--max-steps", "10", "--json"],
    );
    resumed.expect_code(0);
    assert_eq!(resumed.json()["run_status"], "completed", "{resumed}");
}

/// A native agent that now fails before its first call (an SDK it can no
/// longer import, a missing setting): `replay` and `fork` say how its
/// process ended (they said `missing` with `actual: null`, and the fork
/// that it had stopped, so a broken environment read as drift).
#[test]
fn a_native_agent_that_now_fails_early_is_said_to_have_ended_so() {
    let dir = temp_dir();
    let case = case(dir.path(), false, "");
    let ran = wl(dir.path(), &["run", case.to_str().unwrap(), "--json"]);
    assert_eq!(ran.json()["run_status"], "completed", "{ran}");
    let id = ran.json()["run_id"].as_str().unwrap().to_string();
    let agent = dir.path().join("agent.py");
    let source = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        format!("raise SystemExit(\"agent broke: config missing\")\n{source}"),
    )
    .unwrap();
    let replay = wl(dir.path(), &["replay", id.as_str(), "--json"]);
    replay.expect_code(1);
    let diff = replay.json()["diff"].to_string();
    assert!(
        diff.contains("$.error: null") && diff.contains("agent broke: config missing"),
        "{replay}"
    );
    let fork = wl(dir.path(), &["fork", id.as_str(), "--at", "2"]);
    fork.expect_code(2);
    assert!(
        fork.stderr
            .contains("(it ended there: the process exited with status 1")
            && fork.stderr.contains("agent broke: config missing"),
        "{fork}"
    );
}

#[test]
fn a_run_still_being_recorded_is_not_resumed() {
    let dir = temp_dir();
    let case = case(dir.path(), true, "");
    let worlds = workspace_root().join("worlds");
    let store = dir.path().join("store");
    let live = cli()
        .args(["run", case.to_str().unwrap(), "--json", "--store"])
        .arg(&store)
        .arg("--worlds")
        .arg(&worlds)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its bundle made, it waits for `go` before its second call.
    let runs = store.join("runs");
    let deadline = Instant::now() + Duration::from_secs(120);
    let bundle = loop {
        let found = std::fs::read_dir(&runs).ok().and_then(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .find(|p| std::fs::read_to_string(p).is_ok_and(|t| !t.is_empty()))
        });
        if let Some(b) = found {
            break b;
        }
        assert!(Instant::now() < deadline, "the run never recorded a call");
        std::thread::sleep(Duration::from_millis(50));
    };
    let id = bundle.file_stem().unwrap().to_str().unwrap().to_string();
    let refused = wl(dir.path(), &["resume", id.as_str()]);
    // `history` says so too (it said the run stopped).
    let history = wl(dir.path(), &["history", id.as_str()]);
    let json = wl(dir.path(), &["history", id.as_str(), "--json"]);
    std::fs::write(dir.path().join("go"), "").unwrap();
    assert!(
        history.stdout.contains("still being recorded") && !history.stdout.contains("stopped"),
        "{history}"
    );
    assert_eq!(json.json()["being_recorded"], true, "{json}");
    let finished = live.wait_with_output().unwrap();
    assert_eq!(finished.status.code(), Some(0), "{refused}\n{finished:?}");
    refused.expect_code(2);
    assert!(
        refused.stderr.contains("is still being recorded"),
        "{refused}"
    );
    assert_eq!(run_count(dir.path()), 1, "no second run beside the first");
}
