//! `worldline serve`: the conformance scenario served as an OpenEnv
//! environment and driven by OpenEnv's own client (`openenv-core` 0.3.0's
//! GenericEnvClient, over its WebSocket protocol) on loopback, several
//! episodes at once: each a run of its own world, graded as `worldline
//! test` grades the same calls.

use crate::common::*;
use crate::conformance::scenario;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The venv with the pinned openenv-core (tests/openenv-python.sh).
fn openenv_python() -> PathBuf {
    let python = std::env::var_os("WORLDLINE_OPENENV_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/openenv-python/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: the serve tests drive worldline with the pinned openenv-core client.\n\
         Run `. tests/openenv-python.sh && ensure_openenv_python target` (tests/run does) and test again.",
        python.display()
    );
    python
}

/// `worldline serve CASE [more]` on a free loopback port: the process
/// and its base URL.
fn serve(store: &Path, case: &Path, more: &[&str]) -> (Served, String) {
    serve_in(store, case, &workspace_root().join("worlds"), more)
}

/// [`serve`] with the worlds of `worlds`.
fn serve_in(store: &Path, case: &Path, worlds: &Path, more: &[&str]) -> (Served, String) {
    serve_with(store, case, worlds, more, &[])
}

/// [`serve_in`] with more environment.
fn serve_with(
    store: &Path,
    case: &Path,
    worlds: &Path,
    more: &[&str],
    env: &[(&str, &str)],
) -> (Served, String) {
    let mut server = crate::common::cli()
        .envs(env.iter().copied())
        .args(["serve".as_ref(), case.as_os_str()])
        .args(["--addr", "127.0.0.1:0", "--json"])
        .args(more)
        .args(["--worlds".as_ref(), worlds.as_os_str()])
        .args(["--store".as_ref(), store.as_os_str()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting worldline serve");
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a first line").expect("stdout");
    let said: Value = serde_json::from_str(&first).expect("serve --json says where it listens");
    std::thread::spawn(move || lines.for_each(drop));
    let addr = said["addr"].as_str().unwrap().to_string();
    (Served(server), format!("http://{addr}"))
}

/// A `worldline serve` process, ended when the test is, whether it
/// passed or failed (a failing test left its server running).
struct Served(std::process::Child);

impl std::ops::Deref for Served {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Served {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `script` (Python, with the `websockets` client openenv-core depends
/// on) run with the served URL as its argument: the JSON it prints.
fn run_client(url: &str, script: &str) -> Value {
    let out = Command::new(openenv_python())
        .args(["-c", script, url])
        .output()
        .expect("the client runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// The conformance scenario's calls (tests/conformance/mcp_client.py's).
fn calls() -> Vec<Value> {
    vec![
        json!(["get_alert", {"id": "ALERT-7"}]),
        json!(["list_deploys", {"service": "checkout"}]),
        json!(["list_deploys", {"service": "checkout"}]),
        json!(["rollback_deploy", {"id": "D-42", "reason": "ALERT-7: checkout p99 after D-42"}]),
        json!(["add_incident_note", {"incident": "T-100", "text": "Rolled back D-42.", "author": "conformance"}]),
        json!(["close_ticket", {"id": "T-100"}]),
    ]
}

/// The reward and checks `export --format trajectories` gives a run.
fn graded(store: &Path, run_id: &str) -> (Value, Value) {
    let dir = temp_dir();
    let file = dir.path().join("t.jsonl");
    let out = wl(
        store,
        &[
            &"export",
            &run_id,
            &"--format",
            &"trajectories",
            &"-o",
            &file,
        ],
    );
    out.expect_code(0);
    let line: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (line["reward"].clone(), line["checks"].clone())
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn openenv_episodes_are_isolated_runs_graded_as_test_grades_the_same_calls() {
    let store = temp_dir();
    let store = store.path();
    let (mut server, url) = serve(store, &scenario(), &[]);
    let health = Command::new("curl")
        .args(["-s", &format!("{url}/health")])
        .output()
        .expect("curl runs");
    assert_eq!(
        String::from_utf8_lossy(&health.stdout),
        r#"{"status":"healthy"}"#
    );

    // Two episodes make every call (each rolls D-42 back: in a shared
    // world the second would find it rolled back already); one stops
    // after reading the alert.
    let plan = json!([
        {"steps": calls()},
        {"seed": 39, "steps": calls()[..1]},
        {"steps": calls()},
    ]);
    let dir = temp_dir();
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).unwrap();
    let out = Command::new(openenv_python())
        .arg(tests_dir().join("openenv/client.py"))
        .arg(&url)
        .arg(&plan_file)
        .output()
        .expect("the OpenEnv client runs");
    assert!(
        out.status.success(),
        "the OpenEnv client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let episodes: Value = serde_json::from_slice(&out.stdout).unwrap();
    let episodes = episodes.as_array().unwrap();
    assert_eq!(episodes.len(), 3);
    for e in episodes {
        assert_eq!(e["done"], true, "{e}");
        assert_eq!(e["task"], json!({"alert": "ALERT-7", "ticket": "T-100"}));
        assert!(
            e["tools"]
                .as_array()
                .unwrap()
                .contains(&json!("rollback_deploy")),
            "{e}"
        );
        assert_eq!(e["state"]["done"], true, "{e}");
        assert_eq!(e["state"]["run_id"], e["last"]["run_id"], "{e}");
    }
    for full in [&episodes[0], &episodes[2]] {
        assert_eq!(full["reward"], 1.0, "{full}");
        assert_eq!(full["last"]["verdict"], "passed", "{full}");
        // OpenEnv counts the client's steps: none at the reset (its
        // listing of the tools is not one; it was counted), then each
        // `step`, the last `end` included.
        assert_eq!(
            full["state_at_reset"]["step_count"].as_u64(),
            Some(0),
            "{full}"
        );
        assert_eq!(full["state"]["step_count"].as_u64(), Some(7), "{full}");
        let rollback = &full["steps"][3]["observation"];
        assert_eq!(rollback["tool_name"], "rollback_deploy");
        assert!(rollback["error"].is_null(), "{rollback}");
        assert!(
            rollback["result"].to_string().contains("rolled_back"),
            "{rollback}"
        );
    }
    assert_eq!(episodes[1]["reward"], 0.0, "{}", episodes[1]);
    assert_eq!(episodes[1]["last"]["verdict"], "failed");
    let run_ids: Vec<&str> = episodes
        .iter()
        .map(|e| e["last"]["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        run_ids
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        3,
        "every episode is a run of its own"
    );

    // The same calls made by an agent under `worldline test` get the
    // same reward and the same checks.
    let tested = wl(
        store,
        &[
            &"test",
            &scenario(),
            &"--agent",
            &guest("model-agent"),
            &"--worlds",
            &workspace_root().join("worlds"),
            &"--json",
        ],
    );
    tested.expect_code(0);
    let test_run = tested.json()["cases"][0]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run id in {tested}"))
        .to_string();
    let (reward, checks) = graded(store, &test_run);
    assert_eq!(reward, json!(1.0));
    assert_eq!(graded(store, run_ids[0]), (reward.clone(), checks.clone()));
    assert_eq!(graded(store, run_ids[2]), (reward, checks));

    // An episode is a run the store lists, and replays identical: its
    // steps derived again from its events through the same mediation.
    let runs = wl(store, &[&"runs", &"--json"]);
    runs.expect_code(0);
    for id in &run_ids {
        assert!(runs.stdout.contains(id), "{id} is not listed:\n{runs}");
        let replay = wl(store, &[&"replay", id]);
        replay.expect_code(0);
        assert!(replay.stdout.contains("identical"), "{replay}");
    }
    // It has no process to run again: `repro` says what it was (it said
    // "an MCP session").
    let repro = wl(store, &[&"repro", &run_ids[0]]);
    repro.expect_code(2);
    assert!(
        repro
            .stderr
            .contains("was a served episode (`worldline serve`): there is no process to run again"),
        "{repro}"
    );

    // An episode forks (decision 0354). A trainer branches it: a `reset`
    // with `fork_of` begins a session from the episode's first N events
    // (its world as they left it), and the client's steps go on live.
    // From event 5 (after the rollback) two more steps pass; from event 4
    // the same two steps, with no rollback, fail.
    let forks = json!([
        {"fork_of": {"run": run_ids[0], "at": 5}, "steps": calls()[4..]},
        {"fork_of": {"run": run_ids[0], "at": 4}, "steps": calls()[4..]},
    ]);
    std::fs::write(&plan_file, forks.to_string()).unwrap();
    let out = Command::new(openenv_python())
        .arg(tests_dir().join("openenv/client.py"))
        .arg(&url)
        .arg(&plan_file)
        .output()
        .expect("the OpenEnv client runs");
    assert!(
        out.status.success(),
        "the OpenEnv client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let forked: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (after, before) = (&forked[0], &forked[1]);
    assert_eq!(
        after["fork_of"],
        json!({"run": run_ids[0], "at": 5, "steps": 5}),
        "{after}"
    );
    assert_eq!(before["fork_of"]["at"], 4, "{before}");
    assert!(
        after["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("close_ticket")),
        "{after}"
    );
    assert_eq!(after["reward"], 1.0, "{after}");
    assert_eq!(after["last"]["verdict"], "passed", "{after}");
    // The episode's four steps before event 5 count (the five messages
    // sent again include its reset's listing), then two more and `end`.
    assert_eq!(
        after["state_at_reset"]["step_count"].as_u64(),
        Some(4),
        "{after}"
    );
    assert_eq!(after["state"]["step_count"].as_u64(), Some(7), "{after}");
    assert_eq!(before["reward"], 0.0, "{before}");
    assert_eq!(before["last"]["verdict"], "failed", "{before}");
    // A reset naming another case than the episode's is refused (the
    // recorded case ran without a word).
    let other = format!(
        "import json, sys\nfrom websockets.sync.client import connect\nwith connect(sys.argv[1].replace('http', 'ws') + '/ws') as ws:\n    ws.send(json.dumps({{'type': 'reset', 'data': {{'case': 'nosuch', 'fork_of': {{'run': '{}', 'at': 4}}}}}}))\n    print(ws.recv())\n",
        run_ids[0]
    );
    let out = Command::new(openenv_python())
        .args(["-c", &other, &url])
        .output()
        .expect("the websocket client runs");
    let said: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(said["data"]["code"], "VALIDATION_ERROR", "{said}");
    assert!(
        said["data"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is an episode of case `incident`, not `nosuch`")),
        "{said}"
    );

    // `worldline fork` of an episode sends its recorded steps again with
    // the edit: denied the rollback at event 4, they fail.
    let denied = wl(
        store,
        &[
            &"fork",
            &run_ids[0],
            &"--at",
            &"4",
            &"--deny",
            &"rollback_deploy",
            &"--json",
        ],
    );
    denied.expect_code(1);
    let denied = denied.json();
    assert_eq!(denied["parent"]["run"], run_ids[0], "{denied}");
    // Its seven calls and the approval the host asks before the note.
    assert_eq!(denied["events"], 8, "{denied}");
    // Each fork is a run of the store with its parent, replayed identical.
    let fork_ids = [
        after["last"]["run_id"].as_str().unwrap(),
        before["last"]["run_id"].as_str().unwrap(),
        denied["run_id"].as_str().unwrap(),
    ];
    let children = wl(store, &[&"runs", &"--parent", &run_ids[0], &"--json"]);
    children.expect_code(0);
    for id in fork_ids {
        assert!(
            children.stdout.contains(id),
            "{id} is not a fork of {}:\n{children}",
            run_ids[0]
        );
        let replay = wl(store, &[&"replay", &id]);
        replay.expect_code(0);
        assert!(replay.stdout.contains("identical"), "{replay}");
    }

    // SIGTERM ends the server; it exits cleanly.
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = server.wait().unwrap();
    assert!(status.success(), "serve ended {status:?}");
}

/// The client `openenv/held.py` on `url`, once it has begun an episode it
/// holds open: the process, and the rest of what it prints.
fn held_episode(
    url: &str,
) -> (
    std::process::Child,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let mut held = Command::new(openenv_python())
        .arg(tests_dir().join("openenv/held.py"))
        .arg(url)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the held client runs");
    let mut lines = BufReader::new(held.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "begun");
    (held, lines)
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn bad_messages_are_answered_with_openenv_errors_and_sessions_are_bounded() {
    let store = temp_dir();
    let (mut server, url) = serve(
        store.path(),
        &scenario(),
        &["--max-sessions", "1", "--idle-timeout", "2"],
    );
    let out = Command::new(openenv_python())
        .arg(tests_dir().join("openenv/hostile.py"))
        .arg(&url)
        .output()
        .expect("the hostile client runs");
    assert!(
        out.status.success(),
        "the hostile client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said: Value = serde_json::from_slice(&out.stdout).unwrap();
    for (key, code) in [
        ("not_json", "INVALID_JSON"),
        ("unknown_type", "UNKNOWN_TYPE"),
        ("number_type", "UNKNOWN_TYPE"),
        ("list_data", "VALIDATION_ERROR"),
        ("typo_key", "VALIDATION_ERROR"),
        ("step_first", "SESSION_ERROR"),
        ("unknown_case", "VALIDATION_ERROR"),
        ("bad_action", "VALIDATION_ERROR"),
        ("bad_seed", "VALIDATION_ERROR"),
        ("text_seed", "VALIDATION_ERROR"),
        ("wide_seed", "VALIDATION_ERROR"),
        ("fork_path", "VALIDATION_ERROR"),
        ("misspelt_arguments", "VALIDATION_ERROR"),
        ("null_arguments", "VALIDATION_ERROR"),
        ("number_tool_name", "VALIDATION_ERROR"),
        ("end_extra", "VALIDATION_ERROR"),
        ("fork_extra", "VALIDATION_ERROR"),
        ("fork_seed", "VALIDATION_ERROR"),
        ("binary", "INVALID_JSON"),
        ("second", "CAPACITY_REACHED"),
    ] {
        assert_eq!(said[key]["type"], "error", "{key}: {said}");
        assert_eq!(said[key]["data"]["code"], code, "{key}: {said}");
    }
    let unknown = &said["unknown_tool"]["data"]["observation"];
    assert_eq!(unknown["error"]["error_type"], "tool_not_found", "{said}");
    assert_eq!(unknown["result"]["isError"], true, "{said}");
    assert!(
        said["second"]["data"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-sessions"),
        "{said}"
    );
    let said_of = |key: &str| said[key]["data"]["message"].as_str().unwrap().to_string();
    assert!(
        said_of("misspelt_arguments").contains("no key `args`"),
        "{said}"
    );
    assert!(
        said_of("end_extra").contains("an end action takes no key `please`"),
        "{said}"
    );
    assert!(
        said_of("number_tool_name").contains("tool_name must be a string, not 5"),
        "{said}"
    );
    assert!(said_of("fork_extra").contains("no key `evnt`"), "{said}");
    assert!(said_of("fork_seed").contains("leave `seed` out"), "{said}");
    assert_eq!(said["with_metadata"]["type"], "observation", "{said}");
    assert!(said_of("number_type").contains("type `5`"), "{said}");
    assert!(said_of("typo_key").contains("no key `sed`"), "{said}");
    let post = said["post_reset"].as_str().unwrap();
    assert!(
        post.starts_with("HTTP/1.1 404") && post.contains("at /ws"),
        "{post}"
    );
    // 2^64 is said as a seed past the range, not as the float it reads
    // as, nor with the general advice to write it as a string (which
    // `reset` refuses, `text_seed`).
    let wide = said["wide_seed"]["data"]["message"].as_str().unwrap();
    assert!(
        wide.contains(
            "seed must be a whole number from 0 to 18446744073709551615, not 18446744073709551616"
        ) && !wide.contains("string"),
        "{said}"
    );
    // A file is not read as a run: it is refused before anything opens it.
    let fork_path = said["fork_path"]["data"]["message"].as_str().unwrap();
    assert!(fork_path.contains("not a path"), "{said}");
    // A web page of another origin, or a request naming another host, is
    // refused before the upgrade; a page of this machine is let in.
    assert_eq!(said["foreign_host"], "HTTP/1.1 403 Forbidden", "{said}");
    assert_eq!(said["foreign_origin"], "HTTP/1.1 403 Forbidden", "{said}");
    assert_eq!(
        said["local_origin"], "HTTP/1.1 101 Switching Protocols",
        "{said}"
    );
    assert_eq!(said["second"]["data"]["max_sessions"], 1, "{said}");
    assert_eq!(
        said["state_after_refused"]["data"]["case"], "incident",
        "{said}"
    );
    // Each connection the server ends, it ends with a close frame saying
    // why (RFC 6455's codes), so a client is told rather than cut off.
    let frame = |key: &str| (said[key][0].as_u64(), said[key][1].as_str().unwrap_or(""));
    assert_eq!(frame("second_closed").0, Some(1013), "{said}");
    assert_eq!(frame("eager_closed"), frame("second_closed"), "{said}");
    assert!(frame("eager_closed").1.contains("--max-sessions"), "{said}");
    assert_eq!(frame("oversize").0, Some(1009), "{said}");
    assert_eq!(frame("close"), (Some(1000), "closed"), "{said}");
    assert_eq!(frame("idle").0, Some(1000), "{said}");
    assert!(frame("idle").1.contains("--idle-timeout"), "{said}");
    assert_eq!(said["third"]["type"], "state", "{said}");
    // Before a reset, state has every key docs/cli.md lists.
    assert_eq!(
        said["third"]["data"],
        serde_json::json!({"episode_id": null, "step_count": 0, "case": null, "seed": null, "done": false}),
        "{said}"
    );
    assert_eq!(frame("idle_pinging"), frame("idle"), "{said}");
    // Stopped with an episode open, the server closes its connection
    // (1001) at once and grades the episode before it ends.
    let (mut held, mut lines) = held_episode(&url);
    let stopped = std::time::Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    assert!(server.wait().unwrap().success());
    assert!(
        stopped.elapsed() < std::time::Duration::from_secs(10),
        "serve took {:?} to stop with an episode open",
        stopped.elapsed()
    );
    let got: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(got[0], 1001, "{got}");
    assert!(held.wait().unwrap().success());
    let runs = crate::common::cli()
        .args(["runs", "--json", "--store"])
        .arg(store.path())
        .output()
        .unwrap();
    let runs: Value = serde_json::from_slice(&runs.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(
        runs.len(),
        2,
        "the first connection's episode and the held one: {runs:?}"
    );
    for run in runs {
        assert_ne!(run["status"], "incomplete", "every episode is ended: {run}");
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_killed_server_keeps_the_reads_an_episode_s_client_got() {
    let store = temp_dir();
    let (mut server, url) = serve(store.path(), &scenario(), &[]);
    let mut held = Command::new(openenv_python())
        .arg(tests_dir().join("openenv/held.py"))
        .arg(&url)
        .arg(json!(["get_alert", {"id": "ALERT-7"}]).to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the held client runs");
    let mut lines = BufReader::new(held.stdout.take().unwrap()).lines();
    // The client has the read's observation, then the server is killed.
    assert_eq!(lines.next().unwrap().unwrap(), "begun");
    server.kill().unwrap();
    server.wait().unwrap();
    let got: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(got, Value::Null, "no close frame from a killed server");
    assert!(held.wait().unwrap().success());
    let bundles = files_with_suffix(&store.path().join("runs"), ".jsonl");
    assert_eq!(bundles.len(), 1, "{bundles:?}");
    let b = read_bundle(&bundles[0]);
    assert!(b.footer.is_none(), "killed: no footer");
    assert!(
        b.events.iter().any(|e| e["request"]["name"] == "get_alert"),
        "the read the client got is in the bundle: {:?}",
        b.events
    );
}

/// A case whose gold calls fail cannot begin an episode: its reset is a
/// `FACTORY_ERROR` saying why (it answered `tools: []`, and the first
/// step ended the episode with no reward and no run), as `run` refuses
/// the case.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_case_whose_gold_fails_is_refused_at_reset() {
    let dir = temp_dir();
    let case = dir.path().join("badgold.toml");
    std::fs::write(
        &case,
        "world = \"incident@v4\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
         task = { message = \"close the ticket\" }\n\n[expect]\n\
         [[expect.gold]]\ntool = \"close_ticket\"\nargs = { id = \"T-NOPE\" }\n",
    )
    .unwrap();
    let (mut server, url) = serve(&dir.path().join("store"), &case, &[]);
    let client = "import json, sys\n\
        from websockets.sync.client import connect\n\
        with connect(sys.argv[1].replace('http://', 'ws://') + '/ws') as ws:\n\
        \x20   ws.send(json.dumps({'type': 'reset', 'data': {}}))\n\
        \x20   print(ws.recv(timeout=60))\n";
    let said = run_client(&url, client);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(said["type"], "error", "{said}");
    assert_eq!(said["data"]["code"], "FACTORY_ERROR", "{said}");
    let message = said["data"]["message"].as_str().unwrap();
    assert!(
        message.contains("gold call 1") && message.contains("T-NOPE"),
        "{said}"
    );
}

/// A step the world works on for a while (a service tool that spins
/// until the watchdog stops it) keeps the connection: its pings are
/// answered meanwhile, and the episode ends `timeout` there. openenv-core's client (websockets' keepalive) closed
/// it with 1011 when a reset or step outlasted its ping timeout.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn pings_are_answered_while_a_step_is_worked_on() {
    let dir = temp_dir();
    let worlds = counters_until_the_watchdog(dir.path());
    let case = counters_case(dir.path(), json!([]), "[limits]\ntimeout_ms = 1500\n");
    let (mut server, url) = serve_in(&dir.path().join("store"), &case, &worlds, &[]);
    let client = "import json, sys, time\n\
        from websockets.sync.client import connect\n\
        url = sys.argv[1].replace('http://', 'ws://') + '/ws'\n\
        with connect(url, ping_interval=0.2, ping_timeout=0.4) as ws:\n\
        \x20   ws.send(json.dumps({'type': 'reset', 'data': {}}))\n\
        \x20   ws.recv(timeout=60)\n\
        \x20   began = time.monotonic()\n\
        \x20   ws.send(json.dumps({'type': 'step', 'data': {'type': 'call_tool', 'tool_name': 'spin', 'arguments': {}}}))\n\
        \x20   said = json.loads(ws.recv(timeout=60))\n\
        \x20   print(json.dumps({'said': said, 'took': time.monotonic() - began}))\n";
    let got = run_client(&url, client);
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        got["took"].as_f64().unwrap() > 1.0,
        "the step took its time: {got}"
    );
    assert_eq!(got["said"]["type"], "observation", "{got}");
    // The watchdog stopped the service's call: its answer is the wall
    // clock's, so the episode ends `timeout` there, as a component's run
    // does, and `verify` says so (it went on `completed`, claimed to
    // replay, and replayed `diverged`).
    let ended = &got["said"]["data"]["observation"];
    assert_eq!(ended["status"], "timeout", "{got}");
    let verify = worldline(&dir.path().join("store"), ["verify", "--json"]);
    verify.expect_code(0);
    assert_eq!(verify.json()["runs"][0]["verdict"], "timeout", "{verify}");
}

/// An episode `[limits] max_steps` ended replays `identical` and forks to
/// the same end: the step the limit refused was not recorded, and the
/// replay, sending only the recorded ones, ended `completed` (drift 100%).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn an_episode_ended_at_its_step_limit_replays_and_forks_to_that_end() {
    let dir = temp_dir();
    let case = dir.path().join("steplimit.toml");
    std::fs::write(
        &case,
        "world = \"incident@v4\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
         task = { message = \"look around\" }\n\n[limits]\nmax_steps = 2\n",
    )
    .unwrap();
    let store = dir.path().join("store");
    let (mut server, url) = serve(&store, &case, &[]);
    let client = "import json, sys\n\
        from websockets.sync.client import connect\n\
        with connect(sys.argv[1].replace('http://', 'ws://') + '/ws') as ws:\n\
        \x20   ws.send(json.dumps({'type': 'reset', 'data': {}}))\n\
        \x20   ws.recv(timeout=60)\n\
        \x20   for _ in range(3):\n\
        \x20       ws.send(json.dumps({'type': 'step', 'data': {'type': 'call_tool', 'tool_name': 'list_deploys', 'arguments': {}}}))\n\
        \x20       said = json.loads(ws.recv(timeout=60))\n\
        \x20   print(json.dumps(said))\n";
    let said = run_client(&url, client);
    let _ = server.kill();
    let _ = server.wait();
    let ended = &said["data"]["observation"];
    assert_eq!(ended["status"], "step_limit", "{said}");
    let run = ended["run_id"].as_str().unwrap();
    worldline(&store, ["verify", run]).expect_code(0);
    let fork = worldline(&store, ["fork", run, "--at", "2", "--json"]);
    assert_eq!(fork.json()["run_status"], "step_limit", "{fork}");
}

/// An episode `[limits] max_events` ended (`trapped`: the step past the
/// limit was refused before it was recorded) replays `identical` and
/// forks to the same end; the replay, sending only the recorded steps,
/// ended `completed` (`diverged at event 3 (mismatch, field status)`).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn an_episode_ended_at_its_event_limit_replays_and_forks_to_that_end() {
    let dir = temp_dir();
    let case = dir.path().join("eventlimit.toml");
    std::fs::write(
        &case,
        "world = \"incident@v4\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
         task = { message = \"look around\" }\n\n[limits]\nmax_events = 3\n",
    )
    .unwrap();
    let store = dir.path().join("store");
    let (mut server, url) = serve(&store, &case, &[]);
    let client = "import json, sys\n\
        from websockets.sync.client import connect\n\
        with connect(sys.argv[1].replace('http://', 'ws://') + '/ws') as ws:\n\
        \x20   ws.send(json.dumps({'type': 'reset', 'data': {}}))\n\
        \x20   ws.recv(timeout=60)\n\
        \x20   for _ in range(4):\n\
        \x20       ws.send(json.dumps({'type': 'step', 'data': {'type': 'call_tool', 'tool_name': 'get_alert', 'arguments': {'id': 'ALERT-7'}}}))\n\
        \x20       said = json.loads(ws.recv(timeout=60))\n\
        \x20   print(json.dumps(said))\n";
    let said = run_client(&url, client);
    let _ = server.kill();
    let _ = server.wait();
    let ended = &said["data"]["observation"];
    assert_eq!(ended["status"], "trapped", "{said}");
    let run = ended["run_id"].as_str().unwrap();
    let replay = worldline(&store, ["replay", run, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    worldline(&store, ["verify", run]).expect_code(0);
    let fork = worldline(&store, ["fork", run, "--at", "2", "--json"]);
    assert_eq!(fork.json()["run_status"], "trapped", "{fork}");
}

/// `serve --addr localhost:0 cases/` serves the folder's cases at
/// 127.0.0.1 (said `invalid socket address syntax` and `cannot read
/// case: is a folder`); a fork of an episode lists none of a process's
/// caveats (an episode has no process), and `fork --agent` of it is
/// refused before the agent is read (it was compiled first, for nothing).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_folder_served_at_localhost_forks_its_episode_as_an_episode() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::write(
        cases.join("look.toml"),
        "world = \"incident@v4\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
         task = { message = \"look around\" }\n",
    )
    .unwrap();
    let store = dir.path().join("store");
    let mut server = Served(
        crate::common::cli()
            .args(["serve".as_ref(), cases.as_os_str()])
            .args(["--addr", "localhost:0", "--json"])
            .args([
                "--worlds".as_ref(),
                workspace_root().join("worlds").as_os_str(),
            ])
            .args(["--store".as_ref(), store.as_os_str()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting worldline serve"),
    );
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = lines.next().expect("a first line").expect("stdout");
    let said: Value = serde_json::from_str(&first).unwrap_or_else(|e| {
        let _ = server.kill();
        let err = std::io::read_to_string(server.stderr.take().unwrap()).unwrap();
        panic!("serve said no address ({e}): {first}\n{err}")
    });
    std::thread::spawn(move || lines.for_each(drop));
    assert_eq!(said["cases"], json!(["look"]), "{said}");
    let addr = said["addr"].as_str().unwrap();
    assert!(addr.starts_with("127.0.0.1:"), "{said}");
    let client = "import json, sys\n\
        from websockets.sync.client import connect\n\
        with connect(sys.argv[1].replace('http://', 'ws://') + '/ws') as ws:\n\
        \x20   ws.send(json.dumps({'type': 'reset', 'data': {}}))\n\
        \x20   ws.recv(timeout=60)\n\
        \x20   for action in [{'type': 'call_tool', 'tool_name': 'list_deploys', 'arguments': {}}, {'type': 'end'}]:\n\
        \x20       ws.send(json.dumps({'type': 'step', 'data': action}))\n\
        \x20       said = json.loads(ws.recv(timeout=60))\n\
        \x20   print(json.dumps(said))\n";
    let ended = run_client(&format!("http://{addr}"), client);
    let _ = server.kill();
    let _ = server.wait();
    let run = ended["data"]["observation"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{ended}"));

    let fork = worldline(&store, ["fork", run, "--at", "1"]);
    assert!(
        fork.stdout.contains("isolation: native") && !fork.stdout.contains("not guaranteed"),
        "{fork}"
    );
    let other = worldline(
        &store,
        ["fork", run, "--at", "1", "--agent", "no-such-agent.wasm"],
    );
    other.expect_code(2);
    assert!(
        other.stderr.contains(
            "--agent: a served episode or an MCP session forks with its client's own recorded steps"
        ),
        "{other}"
    );
}

/// `tool_not_found` is a tool the world lacks, not a tool of the world
/// that answered `not-found` (here by an `[[inject]]` rule whose words
/// are the mediator's own for a missing tool): that answer is the tool's
/// result, its error in it. Told apart by the words before, the tool's
/// answer was called a missing tool.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_tool_that_finds_nothing_is_no_missing_tool() {
    let dir = temp_dir();
    let case = dir.path().join("finds-nothing.toml");
    std::fs::write(
        &case,
        "world = \"incident@v4\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
         task = { message = \"look at the ticket\" }\n\n\
         [[inject]]\ntool = \"get_ticket\"\nerror = \"not-found\"\n\
         message = \"no tool `get_ticket` answers for T-100 today\"\n",
    )
    .unwrap();
    let (mut server, url) = serve(&dir.path().join("store"), &case, &[]);
    let client = "import json, sys\n\
        from websockets.sync.client import connect\n\
        def step(ws, action):\n\
        \x20   ws.send(json.dumps({'type': 'step', 'data': action}))\n\
        \x20   return json.loads(ws.recv(timeout=60))['data']['observation']\n\
        with connect(sys.argv[1].replace('http://', 'ws://') + '/ws') as ws:\n\
        \x20   ws.send(json.dumps({'type': 'reset', 'data': {}}))\n\
        \x20   ws.recv(timeout=60)\n\
        \x20   found = step(ws, {'type': 'call_tool', 'tool_name': 'get_ticket', 'arguments': {'id': 'T-100'}})\n\
        \x20   lacked = step(ws, {'type': 'call_tool', 'tool_name': 'nope', 'arguments': {}})\n\
        \x20   print(json.dumps({'found': found, 'lacked': lacked}))\n";
    let said = run_client(&url, client);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(said["found"]["error"], Value::Null, "{said}");
    assert_eq!(said["found"]["result"]["isError"], true, "{said}");
    assert_eq!(
        said["lacked"]["error"]["error_type"], "tool_not_found",
        "{said}"
    );
}

/// A connection that never finishes a request's headers is closed (it was
/// held for good: a few thousand of them took every descriptor).
#[test]
fn a_connection_that_never_sends_its_headers_is_closed() {
    use std::io::{Read as _, Write as _};
    let store = temp_dir();
    let (mut server, url) = serve(store.path(), &scenario(), &[]);
    let addr = url.strip_prefix("http://").unwrap();
    let mut silent = std::net::TcpStream::connect(addr).unwrap();
    let mut partial = std::net::TcpStream::connect(addr).unwrap();
    partial
        .write_all(format!("GET /ws HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
        .unwrap();
    let began = std::time::Instant::now();
    for s in [&mut silent, &mut partial] {
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let mut rest = Vec::new();
        let read = s.read_to_end(&mut rest);
        assert!(read.is_ok(), "still open after 30 s: {read:?}");
    }
    assert!(
        began.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    // And the server still serves.
    let health = std::net::TcpStream::connect(addr).and_then(|mut h| {
        h.write_all(
            format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )?;
        let mut said = String::new();
        h.read_to_string(&mut said)?;
        Ok(said)
    });
    assert!(health.unwrap().starts_with("HTTP/1.1 200"));
    let _ = server.kill();
    let _ = server.wait();
}

/// An upgrade whose `Host` is loopback without the port is refused naming
/// the Host it sent and those accepted, as `mcp --http` words it (it said
/// "… or naming another host, is refused" of `127.0.0.1`).
#[test]
fn a_host_without_the_port_is_named_with_those_accepted() {
    use std::io::{Read as _, Write as _};
    let store = temp_dir();
    let (mut server, url) = serve(store.path(), &scenario(), &[]);
    let addr = url.strip_prefix("http://").unwrap();
    let port = addr.rsplit(':').next().unwrap();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade, close\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut said = String::new();
    let _ = conn.read_to_string(&mut said);
    assert!(said.starts_with("HTTP/1.1 403"), "{said}");
    assert!(
        said.ends_with(&format!(
            "Host `127.0.0.1` does not name this server: use `127.0.0.1:{port}`, `localhost:{port}` or `[::1]:{port}`"
        )),
        "{said}"
    );
    let _ = server.kill();
    let _ = server.wait();
}

/// An `--idle-timeout` of 0, or past a year, is refused, by `serve` and
/// `mcp --http` alike: 0 was taken as 1 s without a word, and a value
/// near 2^64 seconds was taken, then overflowed the clock at the first
/// connection (a panic that ended the server, exit 134).
#[test]
fn an_idle_timeout_of_0_or_past_a_year_is_refused() {
    let store = temp_dir();
    let (case, worlds) = (scenario(), workspace_root().join("worlds"));
    for (seconds, said) in [
        ("0", "--idle-timeout: 0 would close every connection"),
        (
            "9223372036854775000",
            "--idle-timeout: 9223372036854775000 is out of range: give 1 to 31536000 seconds (a year)",
        ),
        (
            "31536001",
            "--idle-timeout: 31536001 is out of range: give 1 to 31536000 seconds",
        ),
    ] {
        let args: [&std::ffi::OsStr; 10] = [
            "serve".as_ref(),
            case.as_os_str(),
            "--addr".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--idle-timeout".as_ref(),
            seconds.as_ref(),
            "--store".as_ref(),
            store.path().as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ];
        let out = crate::common::worldline_raw_within(std::time::Duration::from_secs(30), args)
            .unwrap_or_else(|| panic!("serve --idle-timeout {seconds} served"));
        out.expect_code(2);
        assert!(out.stderr.contains(said), "{out}");
        let args: [&std::ffi::OsStr; 10] = [
            "mcp".as_ref(),
            case.as_os_str(),
            "--http".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--idle-timeout".as_ref(),
            seconds.as_ref(),
            "--store".as_ref(),
            store.path().as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ];
        let out = crate::common::worldline_raw_within(std::time::Duration::from_secs(30), args)
            .unwrap_or_else(|| panic!("mcp --http --idle-timeout {seconds} served"));
        out.expect_code(2);
        assert!(out.stderr.contains("--idle-timeout: "), "{out}");
    }
}

/// The longest `--idle-timeout` taken (a year) is one the clock adds: a
/// connection is upgraded and served, and the server goes on.
#[test]
fn the_longest_idle_timeout_serves_a_connection() {
    use std::io::{Read as _, Write as _};
    let store = temp_dir();
    let (mut server, url) = serve(store.path(), &scenario(), &["--idle-timeout", "31536000"]);
    let addr = url.strip_prefix("http://").unwrap();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(
        format!("GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").as_bytes(),
    )
    .unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut said = [0u8; 12];
    conn.read_exact(&mut said).unwrap();
    assert_eq!(&said, b"HTTP/1.1 101");
    // The upgraded connection is served (an idle deadline a year away),
    // and so is the next client.
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(conn);
    let health = std::net::TcpStream::connect(addr).and_then(|mut h| {
        h.write_all(
            format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )?;
        let mut said = String::new();
        h.read_to_string(&mut said)?;
        Ok(said)
    });
    assert!(health.unwrap().starts_with("HTTP/1.1 200"));
    assert!(server.try_wait().unwrap().is_none(), "the server ended");
    let _ = server.kill();
    let _ = server.wait();
}

/// A case graded on its output or its conversation is refused: an
/// episode's actions are tool calls and `end`, so every episode of it
/// scored 0, however right its calls.
#[test]
fn a_case_no_episode_can_pass_is_refused() {
    let store = temp_dir();
    let worlds = workspace_root().join("worlds");
    for (case, said) in [
        (
            "cases/model/rollback.toml",
            "[expect.output]: an episode gives no output",
        ),
        (
            "cases/support/refund-confirmed.toml",
            "[expect.conversation]: an episode says nothing to the user",
        ),
    ] {
        let case = workspace_root().join(case);
        let args: [&std::ffi::OsStr; 8] = [
            "serve".as_ref(),
            case.as_os_str(),
            "--addr".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--store".as_ref(),
            store.path().as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
        ];
        let out = crate::common::worldline_raw_within(std::time::Duration::from_secs(30), args)
            .expect("serve served a case no episode can pass");
        out.expect_code(2);
        assert!(
            out.stderr.contains(said) && out.stderr.contains("so no episode of"),
            "{out}"
        );
    }
}

/// While one session's reset compiles its world's service (a Python
/// service: seconds on a fresh store), the server answers everyone else:
/// `/health`, another client's handshake and `state`, and the resetting
/// client's own keepalive pings. The compile ran on the runtime's
/// threads: nothing was answered until it ended, and OpenEnv's client
/// closed with 1011 "keepalive ping timeout".
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn a_reset_that_compiles_its_world_blocks_no_one_else() {
    let dir = temp_dir();
    let service = python_service("tests/guests/python-service/counters.py");
    let worlds = world_with_service(
        dir.path(),
        &workspace_root().join("tests/worlds/counters/v1"),
        "counters",
        &service,
    );
    let case = counters_case(dir.path(), json!([]), "");
    let store = dir.path().join("store");
    // The store's own compile cache: the tests' shared one has compiled
    // the service already.
    let (mut server, url) = serve_with(&store, &case, &worlds, &[], &[OWN_COMPILE_CACHE]);
    // Once the compile's lock is in the compile cache (the compile has
    // begun, and holds it until it ends), the others are tried: /health
    // answered with the lock still there, each answer before the reset's.
    let client = "import glob, json, sys, threading, time, urllib.request\n\
        from websockets.sync.client import connect\n\
        url, cache = sys.argv[1], sys.argv[2]\n\
        ws_url = url.replace('http://', 'ws://') + '/ws'\n\
        got = {}\n\
        def resetting():\n\
        \x20   try:\n\
        \x20       with connect(ws_url, ping_interval=0.2, ping_timeout=1) as ws:\n\
        \x20           ws.send(json.dumps({'type': 'reset', 'data': {}}))\n\
        \x20           got['reset'] = json.loads(ws.recv(timeout=300))['type']\n\
        \x20           got['reset_at'] = time.monotonic()\n\
        \x20   except Exception as e:\n\
        \x20       got['reset'] = repr(e)\n\
        \x20       got['reset_at'] = time.monotonic()\n\
        a = threading.Thread(target=resetting)\n\
        a.start()\n\
        deadline = time.monotonic() + 120\n\
        while not glob.glob(cache + '/*/*.lock') and 'reset' not in got and time.monotonic() < deadline:\n\
        \x20   time.sleep(0.005)\n\
        got['compiling'] = bool(glob.glob(cache + '/*/*.lock'))\n\
        got['health'] = urllib.request.urlopen(url + '/health', timeout=300).read().decode()\n\
        got['health_at'] = time.monotonic()\n\
        got['still_compiling'] = bool(glob.glob(cache + '/*/*.lock'))\n\
        with connect(ws_url, open_timeout=300) as ws:\n\
        \x20   ws.send(json.dumps({'type': 'state'}))\n\
        \x20   got['state'] = json.loads(ws.recv(timeout=300))['type']\n\
        \x20   got['state_at'] = time.monotonic()\n\
        a.join()\n\
        print(json.dumps(got))\n";
    let out = Command::new(openenv_python())
        .args(["-c", client, &url])
        .arg(store.join("cache"))
        .output()
        .expect("the client runs");
    let got: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(got["compiling"], true, "the reset compiled: {got}");
    assert_eq!(got["health"], r#"{"status":"healthy"}"#, "{got}");
    assert_eq!(
        got["still_compiling"], true,
        "/health was answered while the reset compiled: {got}"
    );
    assert_eq!(got["state"], "state", "{got}");
    assert_eq!(
        got["reset"], "observation",
        "the resetting client's pings were answered: {got}"
    );
    let at = |k: &str| got[k].as_f64().unwrap();
    assert!(
        at("health_at") < at("reset_at") && at("state_at") < at("reset_at"),
        "/health and another client were answered while the reset compiled: {got}"
    );
}

/// SIGTERM while a reset compiles its world's service (a fresh store's
/// Python service: many seconds) refuses the reset and ends the server
/// with the compile still under way: the server waited it out, then
/// began the episode and answered the reset after it was told to stop.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn a_signal_during_a_reset_s_compile_refuses_it_and_ends_the_server() {
    let dir = temp_dir();
    let service = python_service("tests/guests/python-service/counters.py");
    let worlds = world_with_service(
        dir.path(),
        &workspace_root().join("tests/worlds/counters/v1"),
        "counters",
        &service,
    );
    let case = counters_case(dir.path(), json!([]), "");
    let store = dir.path().join("store");
    let (mut server, url) = serve_with(&store, &case, &worlds, &[], &[OWN_COMPILE_CACHE]);
    // The client says when the compile has begun (its lock is in the
    // compile cache), then what the reset was answered, or how the
    // connection closed.
    let client = "import glob, json, sys, time\n\
        from websockets.sync.client import connect\n\
        from websockets.exceptions import ConnectionClosed\n\
        url, cache = sys.argv[1], sys.argv[2]\n\
        got = {}\n\
        with connect(url.replace('http://', 'ws://') + '/ws') as ws:\n\
        \x20   ws.send(json.dumps({'type': 'reset', 'data': {}}))\n\
        \x20   deadline = time.monotonic() + 120\n\
        \x20   while not glob.glob(cache + '/*/*.lock') and time.monotonic() < deadline:\n\
        \x20       time.sleep(0.005)\n\
        \x20   print('compiling', flush=True)\n\
        \x20   try:\n\
        \x20       while True:\n\
        \x20           got.setdefault('said', []).append(json.loads(ws.recv(timeout=120)))\n\
        \x20   except ConnectionClosed as e:\n\
        \x20       got['closed'] = e.rcvd.code if e.rcvd else None\n\
        print(json.dumps(got))\n";
    let mut client = Command::new(openenv_python())
        .args(["-c", client, &url])
        .arg(store.join("cache"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("the client runs");
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "compiling");
    let locks = || glob_count(&store.join("cache"), "lock");
    assert!(locks() > 0, "the reset compiles");
    let signalled = std::time::Instant::now();
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < std::time::Duration::from_secs(120),
            "the server did not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let compiling_still = locks() > 0;
    let said: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let _ = client.wait();
    assert!(status.success(), "{status:?}");
    assert!(
        compiling_still,
        "the server ended before the compile did (it waited {:?} for it)",
        signalled.elapsed()
    );
    // The reset refused, and the connection closed as the server stops.
    let refused = &said["said"][0];
    assert_eq!(refused["type"], "error", "{said}");
    assert!(
        refused["data"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the server is stopping")),
        "{said}"
    );
    assert_eq!(said["said"].as_array().map(Vec::len), Some(1), "{said}");
    assert_eq!(said["closed"], 1001, "{said}");
    // No episode began.
    let runs = wl(&store, &[&"runs", &"--json"]);
    runs.expect_code(0);
    assert_eq!(
        serde_json::from_str::<Value>(&runs.stdout).unwrap(),
        json!([]),
        "{runs}"
    );
}

/// The files of folder `dir`'s subfolders whose names end `.ext`.
fn glob_count(dir: &Path, ext: &str) -> usize {
    let Ok(top) = std::fs::read_dir(dir) else {
        return 0;
    };
    top.flatten()
        .filter_map(|d| std::fs::read_dir(d.path()).ok())
        .flat_map(|d| d.flatten())
        .filter(|f| f.path().extension().is_some_and(|e| e == ext))
        .count()
}

/// A second SIGTERM (past the first sent twice) ends the server at once,
/// by the signal: the first closes the connections and waits for them
/// (here one that never answers the close frame: 2 s), and a second was
/// noted and ignored.
#[test]
fn a_second_signal_ends_the_server_at_once() {
    use std::io::{Read as _, Write as _};
    use std::os::unix::process::ExitStatusExt as _;
    let store = temp_dir();
    let (mut server, url) = serve(store.path(), &scenario(), &[]);
    let addr = url.strip_prefix("http://").unwrap();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(
        format!("GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").as_bytes(),
    )
    .unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut said = [0u8; 12];
    conn.read_exact(&mut said).unwrap();
    assert_eq!(&said, b"HTTP/1.1 101");
    let pid = server.id().to_string();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    std::thread::sleep(std::time::Duration::from_millis(600));
    assert!(
        server.try_wait().unwrap().is_none(),
        "the server waits for its connection"
    );
    let again = std::time::Instant::now();
    let _ = Command::new("kill").args(["-TERM", &pid]).status();
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            again.elapsed() < std::time::Duration::from_secs(30),
            "the server did not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(
        status.signal(),
        Some(15),
        "{status:?} after {:?}",
        again.elapsed()
    );
    assert!(
        again.elapsed() < std::time::Duration::from_millis(1000),
        "{:?}",
        again.elapsed()
    );
    drop(conn);
}

/// Each of `messages` (raw text) sent to the server at `url` in one
/// connection: the answers, in order.
fn said_to(url: &str, messages: &[&str]) -> Vec<Value> {
    let client = format!(
        "import json, sys\n\
         from websockets.sync.client import connect\n\
         said = []\n\
         with connect(sys.argv[1].replace('http://', 'ws://') + '/ws') as ws:\n\
         \x20   for m in json.loads({:?}):\n\
         \x20       ws.send(m)\n\
         \x20       said.append(json.loads(ws.recv(timeout=60)))\n\
         print(json.dumps(said))\n",
        serde_json::to_string(messages).unwrap()
    );
    run_client(url, &client).as_array().unwrap().clone()
}

/// `serve` names its cases as `test` does: two of one file name in
/// different folders are both served (`incident/look`, `accounts/look`;
/// the second was refused as "served already"), a reset names either,
/// and a bare name still names a case it alone has.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn cases_of_one_file_name_are_served_by_the_names_test_gives_them() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    for (folder, name, seed) in [
        ("incident", "look", 3),
        ("accounts", "look", 4),
        ("accounts", "peek", 5),
    ] {
        std::fs::create_dir_all(cases.join(folder)).unwrap();
        std::fs::write(
            cases.join(folder).join(format!("{name}.toml")),
            format!(
                "world = \"incident@v4\"\nseed = {seed}\nclock = 2026-03-01T12:00:00Z\n\
                 task = {{ message = \"look around\" }}\n"
            ),
        )
        .unwrap();
    }
    let store = dir.path().join("store");
    let (_server, url) = serve(&store, &cases, &[]);
    let said = said_to(
        &url,
        &[
            r#"{"type": "reset", "data": {"case": "incident/look"}}"#,
            r#"{"type": "reset", "data": {"case": "accounts/look"}}"#,
            r#"{"type": "reset", "data": {"case": "peek"}}"#,
            r#"{"type": "reset", "data": {"case": "look"}}"#,
        ],
    );
    let seed = |i: usize| said[i]["data"]["observation"]["seed"].clone();
    assert_eq!(seed(0), 3, "{said:?}");
    assert_eq!(seed(1), 4, "{said:?}");
    assert_eq!(seed(2), 5, "{said:?}");
    assert_eq!(said[1]["data"]["observation"]["case"], "accounts/look");
    assert_eq!(said[3]["data"]["code"], "VALIDATION_ERROR", "{said:?}");
    let message = said[3]["data"]["message"].as_str().unwrap();
    assert!(
        message.contains("accounts/look") && message.contains("incident/look"),
        "{message}"
    );
}

/// Cases of one file name (`incident/look`, `accounts/look`) served, an
/// episode of one and a client's resets with `fork_of`.
fn served_look_cases(dir: &Path) -> PathBuf {
    let cases = dir.join("cases");
    for (folder, name, seed) in [("incident", "look", 3), ("accounts", "look", 4)] {
        std::fs::create_dir_all(cases.join(folder)).unwrap();
        std::fs::write(
            cases.join(folder).join(format!("{name}.toml")),
            format!(
                "world = \"incident@v4\"\nseed = {seed}\nclock = 2026-03-01T12:00:00Z\n\
                 task = {{ message = \"look around\" }}\n"
            ),
        )
        .unwrap();
    }
    cases
}

/// A client (Python, argv[1] the URL) that records an episode of
/// `accounts/look` (reset with `episode_id` `parent-ep`, one call, `end`)
/// and then sends each reset of `forks` (JSON, `RUN` standing for that
/// episode's run id), each answered and followed by `state`, a fork
/// begun given one call and `end`: `{parent, forks: [{reset, state,
/// end}]}`.
const FORKING_CLIENT: &str = "import json, sys\n\
    from websockets.sync.client import connect\n\
    def ask(ws, m):\n\
    \x20   ws.send(json.dumps(m))\n\
    \x20   return json.loads(ws.recv(timeout=60))\n\
    out = {'forks': []}\n\
    with connect(sys.argv[1].replace('http://', 'ws://') + '/ws') as ws:\n\
    \x20   ask(ws, {'type': 'reset', 'data': {'case': 'accounts/look', 'episode_id': 'parent-ep'}})\n\
    \x20   ask(ws, {'type': 'step', 'data': {'type': 'call_tool', 'tool_name': 'list_deploys', 'arguments': {}}})\n\
    \x20   out['parent'] = ask(ws, {'type': 'step', 'data': {'type': 'end'}})['data']['observation']['run_id']\n\
    \x20   for reset in json.loads(sys.argv[2]):\n\
    \x20       reset['fork_of']['run'] = out['parent']\n\
    \x20       said = {'reset': ask(ws, {'type': 'reset', 'data': reset})}\n\
    \x20       said['state'] = ask(ws, {'type': 'state'})\n\
    \x20       if said['reset']['type'] == 'observation':\n\
    \x20           ask(ws, {'type': 'step', 'data': {'type': 'call_tool', 'tool_name': 'get_alert', 'arguments': {'id': 'ALERT-7'}}})\n\
    \x20           said['end'] = ask(ws, {'type': 'step', 'data': {'type': 'end'}})\n\
    \x20       out['forks'].append(said)\n\
    print(json.dumps(out))\n";

/// [`FORKING_CLIENT`] against the served look cases: what it printed.
fn forked_look(dir: &Path, store: &Path, forks: Value) -> Value {
    let cases = served_look_cases(dir);
    let (mut server, url) = serve(store, &cases, &[]);
    let out = Command::new(openenv_python())
        .args(["-c", FORKING_CLIENT, &url, &forks.to_string()])
        .output()
        .expect("the client runs");
    let _ = server.kill();
    let _ = server.wait();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// A reset with `fork_of` names the case as this server serves it, as a
/// fresh reset does (`accounts/look`; its observation and `state` said
/// `look`), and one also naming a file name two served cases share is
/// told which to name (it was told "an episode of case `look`, not
/// `look`").
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_fork_of_reset_names_the_served_case() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let said = forked_look(
        dir.path(),
        &store,
        json!([
            {"fork_of": {"run": "RUN", "at": 1}},
            {"fork_of": {"run": "RUN", "at": 1}, "case": "look"},
            {"fork_of": {"run": "RUN", "at": 1}, "case": "incident/look"},
            {"fork_of": {"run": "RUN", "at": 1}, "case": "accounts/look"},
        ]),
    );
    let forks = said["forks"].as_array().unwrap();
    let first = &forks[0];
    assert_eq!(
        first["reset"]["data"]["observation"]["case"], "accounts/look",
        "{said}"
    );
    assert_eq!(first["state"]["data"]["case"], "accounts/look", "{said}");
    assert_eq!(
        forks[1]["reset"]["data"]["code"], "VALIDATION_ERROR",
        "{said}"
    );
    assert_eq!(
        forks[1]["reset"]["data"]["message"],
        "`look` names 2 served cases: pass one of accounts/look, incident/look",
        "{said}"
    );
    assert_eq!(
        forks[2]["reset"]["data"]["message"],
        "fork_of.run is an episode of case `accounts/look`, not `incident/look`: leave `case` out of a reset with fork_of, or name `accounts/look`",
        "{said}"
    );
    assert_eq!(
        forks[3]["reset"]["data"]["observation"]["case"], "accounts/look",
        "{said}"
    );
}

/// The `export --format FORMAT` of `run`: its one document.
fn exported(store: &Path, run: &str, format: &str) -> (Value, PathBuf, tempfile::TempDir) {
    let dir = temp_dir();
    let file = dir.path().join("out.jsonl");
    let out = wl(
        store,
        &[&"export", &run, &"--format", &format, &"-o", &file],
    );
    out.expect_code(0);
    let text = std::fs::read_to_string(&file).unwrap();
    let doc = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    (doc, file, dir)
}

/// The header `history --json` gives `run`.
fn header_of(store: &Path, run: &str) -> Value {
    let out = worldline(store, ["history", run, "--json"]);
    out.expect_code(0);
    out.json()["header"].clone()
}

/// A reset's `episode_id` is recorded with its run (the header's
/// `episode_id`): `history` (text and `--json`) and both exports show it,
/// a fork with `fork_of` records its own reset's, and a run whose reset
/// gave none, or forked by `worldline fork`, has none. One past 256 bytes
/// or with a control character is refused. It was recorded nowhere, and
/// one of 100 KB was taken.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_reset_s_episode_id_is_recorded_with_its_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let long = "e".repeat(257);
    let said = forked_look(
        dir.path(),
        &store,
        json!([
            {"fork_of": {"run": "RUN", "at": 1}, "episode_id": "child-ep"},
            {"fork_of": {"run": "RUN", "at": 1}},
            {"fork_of": {"run": "RUN", "at": 1}, "episode_id": long},
            {"fork_of": {"run": "RUN", "at": 1}, "episode_id": "a\nb"},
        ]),
    );
    let parent = said["parent"].as_str().unwrap();
    let forks = said["forks"].as_array().unwrap();
    let run_of = |i: usize| {
        forks[i]["end"]["data"]["observation"]["run_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{said}"))
            .to_string()
    };
    assert_eq!(header_of(&store, parent)["episode_id"], "parent-ep");
    assert_eq!(header_of(&store, &run_of(0))["episode_id"], "child-ep");
    let none = header_of(&store, &run_of(1));
    assert!(none.get("episode_id").is_none(), "{none}");
    assert_eq!(
        forks[2]["reset"]["data"]["code"], "VALIDATION_ERROR",
        "{said}"
    );
    assert_eq!(
        forks[2]["reset"]["data"]["message"],
        "episode_id is at most 256 bytes (it is recorded with the episode's run), not 257",
        "{said}"
    );
    assert!(
        forks[3]["reset"]["data"]["message"].as_str().is_some_and(
            |m| m.starts_with("episode_id holds a control character (U+000A at byte 1)")
        ),
        "{said}"
    );
    let history = worldline(&store, ["history", parent]);
    assert!(
        history
            .stdout
            .contains("episode_id (its client's reset): parent-ep"),
        "{history}"
    );
    let (trajectory, _, _d1) = exported(&store, parent, "trajectories");
    assert_eq!(trajectory["episode_id"], "parent-ep", "{trajectory}");
    let (atif, _, _d2) = exported(&store, parent, "atif");
    assert_eq!(atif["extra"]["episode_id"], "parent-ep", "{atif}");
    let (trajectory, _, _d3) = exported(&store, &run_of(1), "trajectories");
    assert!(trajectory.get("episode_id").is_none(), "{trajectory}");
    // A fork by the command line is no client's episode, and the
    // episode replays as it ran.
    let fork = worldline(&store, ["fork", parent, "--at", "1", "--json"]);
    fork.expect_code(0);
    let forked = fork.json()["run_id"].as_str().unwrap().to_string();
    assert!(header_of(&store, &forked).get("episode_id").is_none());
    let replay = worldline(&store, ["replay", parent, "--json"]);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

/// An episode begun with `fork_of` exports as a fork: `branch: {parent,
/// event}` as a `fork --samples` branch's `group.branch` has them, with
/// how many of its first messages (trajectories) or which steps (ATIF,
/// `extra.replayed`) are the parent's, sent again, not its client's; and
/// the ATIF document stays valid. They read as the client's own calls,
/// and nothing said it was a fork.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_fork_of_episode_exports_as_a_fork_its_prefix_the_parent_s() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    // The parent: the reset's listing (event 0), list_deploys (1), end;
    // the fork goes live at 2 and calls get_alert.
    let said = forked_look(
        dir.path(),
        &store,
        json!([{"fork_of": {"run": "RUN", "at": 2}}]),
    );
    let parent = said["parent"].as_str().unwrap();
    let child = said["forks"][0]["end"]["data"]["observation"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{said}"));
    let (line, _, _d1) = exported(&store, child, "trajectories");
    assert_eq!(
        line["branch"],
        json!({"parent": parent, "event": 2, "replayed_messages": 2}),
        "{line}"
    );
    let called: Vec<&str> = (line["messages"].as_array().unwrap().iter())
        .filter_map(|m| m["tool_calls"][0]["function"]["name"].as_str())
        .collect();
    assert_eq!(called, ["list_deploys", "get_alert"], "{line}");
    assert_eq!(
        line["messages"][2]["tool_calls"][0]["function"]["name"],
        "get_alert"
    );
    let (doc, file, _d2) = exported(&store, child, "atif");
    assert_eq!(
        doc["extra"]["branch"],
        json!({"parent": parent, "event": 2, "replayed_steps": 1}),
        "{doc}"
    );
    let replayed: Vec<(&str, bool)> = (doc["steps"].as_array().unwrap().iter())
        .filter_map(|s| {
            let name = s["tool_calls"][0]["function_name"].as_str()?;
            Some((name, s["extra"]["replayed"] == true))
        })
        .collect();
    assert_eq!(
        replayed,
        [("list_deploys", true), ("get_alert", false)],
        "{doc}"
    );
    // The parent itself is no fork.
    let (line, _, _d3) = exported(&store, parent, "trajectories");
    assert!(line.get("branch").is_none(), "{line}");
    let python = std::env::var_os("WORLDLINE_TRAIN_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/train-python/bin/python"));
    let check = Command::new(python)
        .arg(tests_dir().join("training/atif_check.py"))
        .arg(&file)
        .output()
        .expect("the atif checker runs");
    assert!(
        check.status.success(),
        "the atif models rejected the export: {}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// A reset's `fork_of` naming no run of the store is told what to name
/// (it was told to "pass a bundle's path", which serve refuses), and an
/// empty one is told it is empty (it was told it was "not a path").
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_fork_of_naming_no_run_is_told_what_to_name() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (_server, url) = serve(&store, &scenario(), &[]);
    let said = said_to(
        &url,
        &[
            r#"{"type": "reset", "data": {"fork_of": {"run": "20990101-000000-deadbeef", "at": 2}}}"#,
            r#"{"type": "reset", "data": {"fork_of": {"run": "", "at": 2}}}"#,
        ],
    );
    let message = |i: usize| said[i]["data"]["message"].as_str().unwrap().to_string();
    assert_eq!(said[0]["data"]["code"], "VALIDATION_ERROR", "{said:?}");
    assert!(
        message(0).contains("no run `20990101-000000-deadbeef`"),
        "{said:?}"
    );
    assert!(!message(0).contains("path"), "{said:?}");
    assert!(message(0).contains("run_id"), "{said:?}");
    assert_eq!(said[1]["data"]["code"], "VALIDATION_ERROR", "{said:?}");
    assert!(message(1).contains("empty"), "{said:?}");
    assert!(!message(1).contains("path"), "{said:?}");
}

/// A message that is JSON but no object (an array, a number) is told a
/// message is a JSON object, and an object without `type` to name one
/// (each was told `unknown message type ```).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_message_that_is_no_object_is_told_it_must_be_one() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (_server, url) = serve(&store, &scenario(), &[]);
    let said = said_to(&url, &["[1,2]", "7", "{}"]);
    for s in &said[..2] {
        assert_eq!(s["data"]["code"], "VALIDATION_ERROR", "{said:?}");
        let message = s["data"]["message"].as_str().unwrap();
        assert!(message.contains("a JSON object"), "{said:?}");
        assert!(!message.contains("unknown message type"), "{said:?}");
    }
    // An object without `type` is told to name one.
    let message = said[2]["data"]["message"].as_str().unwrap();
    assert!(message.contains("names its `type`"), "{said:?}");
}

/// An episode its client left without `end` says so, and why (decision
/// 0429): another `reset`, a `close`, its connection closed or gone idle,
/// the server stopping. Its footer's `truncated` holds why, `history`
/// (text and `--json`), `export --format trajectories` and `--format
/// atif` say it, a replay is `identical` and a fork keeps it; an episode
/// ended by `end` has none. Each was recorded as one the client ended: a
/// trainer read a cut episode's grade as where its agent meant to stop.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn an_episode_its_client_left_says_why_and_one_it_ended_does_not() {
    let store = temp_dir();
    let (mut server, url) = serve(store.path(), &scenario(), &["--idle-timeout", "2"]);
    let client = "import json, sys, time\n\
        from websockets.exceptions import ConnectionClosed\n\
        from websockets.sync.client import connect\n\
        url = sys.argv[1].replace('http://', 'ws://') + '/ws'\n\
        def send(ws, m):\n\
        \x20   ws.send(json.dumps(m))\n\
        \x20   return json.loads(ws.recv(timeout=60))\n\
        reset = {'type': 'reset', 'data': {}}\n\
        step = {'type': 'step', 'data': {'type': 'call_tool', 'tool_name': 'get_alert', 'arguments': {'id': 'ALERT-7'}}}\n\
        with connect(url) as ws:\n\
        \x20   send(ws, reset); send(ws, step)\n\
        \x20   ended = send(ws, {'type': 'step', 'data': {'type': 'end'}})['data']['observation']\n\
        \x20   send(ws, reset); send(ws, step)\n\
        \x20   send(ws, reset); send(ws, step)\n\
        \x20   ws.send(json.dumps({'type': 'close'}))\n\
        \x20   try:\n\
        \x20       ws.recv(timeout=60)\n\
        \x20   except ConnectionClosed:\n\
        \x20       pass\n\
        with connect(url) as ws:\n\
        \x20   send(ws, reset); send(ws, step)\n\
        with connect(url) as ws:\n\
        \x20   send(ws, reset); send(ws, step)\n\
        \x20   try:\n\
        \x20       ws.recv(timeout=60)\n\
        \x20   except ConnectionClosed:\n\
        \x20       pass\n\
        print(json.dumps(ended))\n";
    let ended = run_client(&url, client);
    assert!(ended["truncated"].is_null(), "{ended}");
    let ended_run = ended["run_id"].as_str().unwrap().to_string();
    // Stopped with an episode open, the server ends it.
    let (mut held, _lines) = held_episode(&url);
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    assert!(server.wait().unwrap().success());
    assert!(held.wait().unwrap().success());

    let mut why_of = std::collections::BTreeMap::new();
    for bundle in files_with_suffix(&store.path().join("runs"), ".jsonl") {
        let b = read_bundle(&bundle);
        let footer = b.footer.expect("every episode is ended");
        let run = bundle.file_stem().unwrap().to_str().unwrap().to_string();
        why_of.insert(run, footer["truncated"].as_str().map(str::to_string));
    }
    assert_eq!(why_of.get(&ended_run), Some(&None), "{why_of:?}");
    let mut left: Vec<&str> = why_of.values().flatten().map(String::as_str).collect();
    left.sort();
    assert_eq!(
        left,
        [
            "its client began another episode (`reset`) before `end`",
            "its client sent `close`",
            "its client's connection closed",
            "the connection was closed: idle for 2 s (worldline serve --idle-timeout)",
            "the connection was closed: the server is stopping",
        ],
        "{why_of:?}"
    );
    for (run, why) in &why_of {
        let history = worldline(store.path(), ["history", run.as_str(), "--json"]);
        assert_eq!(
            history.json()["truncated"].as_str(),
            why.as_deref(),
            "{history}"
        );
        let text = worldline(store.path(), ["history", run.as_str()]);
        let said = why
            .as_ref()
            .map(|w| format!("an episode its client left without `end`: {w}"));
        assert_eq!(
            said.as_ref()
                .is_some_and(|s| text.stdout.contains(s.as_str())),
            why.is_some(),
            "{text}"
        );
        let dir = temp_dir();
        for format in ["trajectories", "atif"] {
            let file = dir.path().join(format!("{format}.jsonl"));
            let out = wl(
                store.path(),
                &[&"export", run, &"--format", &format, &"-o", &file],
            );
            out.expect_code(0);
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            let got = match format {
                "atif" => &doc["extra"]["truncated"],
                _ => &doc["truncated"],
            };
            assert_eq!(got.as_str(), why.as_deref(), "{format}: {doc}");
        }
        let replay = worldline(store.path(), ["replay", run.as_str(), "--json"]);
        assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    }
    // A fork of a cut episode is its client's messages sent again: it is
    // left as the episode was.
    let (cut, why) = why_of.iter().find(|(_, w)| w.is_some()).unwrap();
    let fork = worldline(store.path(), ["fork", cut.as_str(), "--at", "0", "--json"]);
    assert_eq!(fork.json()["truncated"].as_str(), why.as_deref(), "{fork}");
}

/// A message that writes a key twice in one object, or holds an integer
/// no 64 bits hold, is a `VALIDATION_ERROR` naming it, and starts or
/// steps nothing: serde_json kept the last (`"seed": 5, "seed": 6`
/// started seed 6, `"type": "reset", "type": "step"` was a step) and
/// read such an integer as the nearest float.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_key_written_twice_or_an_integer_past_64_bits_is_refused() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let (_server, url) = serve(&store, &scenario(), &[]);
    let said = said_to(
        &url,
        &[
            r#"{"type":"reset","data":{"seed":5,"seed":6}}"#,
            r#"{"type":"reset","type":"step","data":{}}"#,
            r#"{"type":"reset","data":{"seed":123456789012345678901234}}"#,
            r#"{"type":"step","data":{"tool_name":"t","arguments":{"n":123456789012345678901234}}}"#,
            r#"{"type":"state"}"#,
        ],
    );
    for (s, named) in said[..4].iter().zip([
        "the field `seed` is written twice in one object",
        "the field `type` is written twice in one object",
        // A seed is told a seed's range (a string, the general advice,
        // is no seed either).
        "line 1, column 32: seed must be a whole number from 0 to 18446744073709551615, not 123456789012345678901234",
        "line 1, column 57: the integer 123456789012345678901234 is past 64 bits",
    ]) {
        assert_eq!(s["data"]["code"], "VALIDATION_ERROR", "{said:?}");
        let message = s["data"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{said:?}");
    }
    assert_eq!(said[4]["data"]["episode_id"], Value::Null, "{said:?}");
}
