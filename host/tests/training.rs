//! What trainers read: `export --format atif` on runs of every kind of
//! agent path (a Rust component asking a model, a native `--exec` process,
//! an outside MCP client on `worldline mcp`), each document validated by
//! the pinned `atif` package's models (tests/train-python.sh); groups of
//! rollouts (`test --group`) and branches (`fork --samples`) exported with
//! pass@k and pass^k.

use crate::common::*;
use crate::conformance::{CALLS, mcp_stdio, scenario, script};
use serde_json::Value;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The training tests' Python: a venv with the pinned atif package.
fn train_python() -> PathBuf {
    let python = std::env::var_os("WORLDLINE_TRAIN_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/train-python/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: the training tests validate with the pinned atif package.\n\
         Run `. tests/train-python.sh && ensure_train_python target` (tests/run does) and test again.",
        python.display()
    );
    python
}

/// A run of the incident scenario by `agent` (the arguments after the
/// store): its id.
fn run(store: &Path, agent: Vec<OsString>) -> String {
    let mut args: Vec<OsString> = vec!["run".into(), scenario().into()];
    args.extend([
        "--worlds".into(),
        workspace_root().join("worlds").into(),
        "--json".into(),
        "--store".into(),
        store.into(),
    ]);
    args.extend(agent);
    let out = worldline_raw(&args);
    assert_eq!(out.code, 0, "the run must pass:\n{out}");
    out.json()["run_id"].as_str().unwrap().to_string()
}

/// `export --format atif` of `runs`, validated by the atif models: what
/// the checker read of each document.
fn atif(store: &Path, runs: &[&str]) -> Vec<Value> {
    let dir = temp_dir();
    let file = dir.path().join("atif.jsonl");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"export"];
    for r in runs {
        args.push(r);
    }
    args.extend([
        &"--format" as &dyn AsRef<std::ffi::OsStr>,
        &"atif",
        &"-o",
        &file,
        &"--json",
    ]);
    let out = wl(store, &args);
    out.expect_code(0);
    assert_eq!(out.json()["format"], "atif", "{out}");
    let check = Command::new(train_python())
        .arg(tests_dir().join("training/atif_check.py"))
        .arg(&file)
        .output()
        .expect("the atif checker runs");
    assert!(
        check.status.success(),
        "the atif models rejected the export: {}\n{}",
        String::from_utf8_lossy(&check.stderr),
        std::fs::read_to_string(&file).unwrap()
    );
    serde_json::from_slice(&check.stdout).expect("the checker prints a JSON list")
}

/// An agent that runs its model's two calls of one tool in the reverse
/// order: each ATIF result names the call it answers (they were paired by
/// name in the order they ran, so each call held the other's result).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn exports_pair_each_result_with_the_call_it_answers_in_any_order() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = dir.path().join("case.toml");
    std::fs::write(
        &case,
        r#"world = "incident@v4"
seed = 14
clock = 2026-03-01T12:05:00Z
task = { alert = "ALERT-7" }

[[model.responses]]
tool_calls = [{ name = "get_alert", arguments = { id = "ALERT-7" } }, { name = "get_alert", arguments = { id = "NOPE" } }]

[[model.responses]]
content = "done"
"#,
    )
    .unwrap();
    let worlds = workspace_root().join("worlds");
    let (agent, python) = (
        tests_dir().join("training/reverse_agent.py"),
        native_python(),
    );
    let run_with = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "run".as_ref(),
            case.as_os_str(),
            "--worlds".as_ref(),
            worlds.as_os_str(),
            "--store".as_ref(),
            store.as_os_str(),
            "--json".as_ref(),
            "--exec".as_ref(),
            "--".as_ref(),
            python.as_os_str(),
            agent.as_os_str(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let out = worldline_raw(args);
        assert_eq!(out.code, 0, "{out}");
        out.json()["run_id"].as_str().unwrap().to_string()
    };
    let run = run_with(&[]);
    let file = dir.path().join("atif.jsonl");
    wl(
        &store,
        &[&"export", &run, &"--format", &"atif", &"-o", &file],
    )
    .expect_code(0);
    let doc: Value = serde_json::from_str(
        std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let step = (doc["steps"].as_array().unwrap().iter())
        .find(|s| s.get("tool_calls").is_some())
        .expect("the model step asking for the calls");
    let asked: Vec<(&str, &Value)> = (step["tool_calls"].as_array().unwrap().iter())
        .map(|c| (c["tool_call_id"].as_str().unwrap(), &c["arguments"]["id"]))
        .collect();
    let results = step["observation"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{step}");
    for r in results {
        let id = r["source_call_id"].as_str().unwrap();
        let (_, alert) = asked.iter().find(|(c, _)| *c == id).unwrap();
        let content = r["content"].as_str().unwrap();
        match alert.as_str().unwrap() {
            "ALERT-7" => assert!(content.contains("\"id\":\"ALERT-7\""), "{id}: {content}"),
            _ => assert!(content.contains("not-found"), "{id}: {content}"),
        }
    }
    // The agent ends once it made the calls: the trajectory's messages end
    // with their results, each to its call (they ended at the model's
    // answer asking for them, the results nowhere).
    let ended = run_with(&["--end-after-tools"]);
    let file = dir.path().join("trajectories.jsonl");
    wl(
        &store,
        &[
            &"export",
            &ended,
            &"--format",
            &"trajectories",
            &"-o",
            &file,
        ],
    )
    .expect_code(0);
    let doc: Value = serde_json::from_str(
        std::fs::read_to_string(&file)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let messages = doc["messages"].as_array().unwrap();
    let (asked, results) = (
        &messages[messages.len() - 3],
        &messages[messages.len() - 2..],
    );
    assert_eq!(asked["role"], "assistant", "{doc}");
    for result in results {
        assert_eq!(result["role"], "tool", "{doc}");
        let call = (asked["tool_calls"].as_array().unwrap().iter())
            .find(|c| c["id"] == result["tool_call_id"])
            .unwrap_or_else(|| panic!("a result to no call: {doc}"));
        let alert = match result["content"].as_str().unwrap().contains("not-found") {
            true => "NOPE",
            false => "ALERT-7",
        };
        assert!(
            call["function"]["arguments"]
                .as_str()
                .unwrap()
                .contains(alert),
            "{doc}"
        );
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn atif_export_validates_on_every_agent_path() {
    let store = temp_dir();
    let store = store.path();
    let component = run(store, vec!["--agent".into(), guest("model-agent").into()]);
    let native = run(
        store,
        vec![
            "--exec".into(),
            "--".into(),
            native_python().into(),
            script("rest_agent.py").into(),
        ],
    );
    let mcp = mcp_stdio(store);
    let docs = atif(store, &[&component, &native, &mcp]);
    assert_eq!(docs.len(), 3, "{docs:?}");
    for (doc, (path, models)) in docs.iter().zip([
        ("rust component", 7),
        ("native --exec", 7),
        ("worldline mcp", 0),
    ]) {
        assert_eq!(doc["schema_version"], "ATIF-v1.8", "{path}: {doc}");
        let calls: Vec<&str> = doc["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        assert_eq!(calls, CALLS, "{path}: the tool calls, in order: {doc}");
        assert_eq!(
            doc["results"],
            CALLS.len(),
            "{path}: every call answered: {doc}"
        );
        assert_eq!(doc["model_steps"], models, "{path}: the model calls: {doc}");
        // The approval the host asked before the note: a step of its own.
        assert_eq!(
            doc["approvals"],
            serde_json::json!(["approved"]),
            "{path}: the approval: {doc}"
        );
        // Every step but the opening messages says its event, in order: a
        // step of a tool call no model asked for said none.
        let seqs = doc["seqs"].as_array().unwrap();
        let opening = seqs.iter().take_while(|s| s.is_null()).count();
        let after: Vec<u64> = seqs[opening..]
            .iter()
            .map(|s| {
                s.as_u64()
                    .unwrap_or_else(|| panic!("{path}: a step without its seq: {doc}"))
            })
            .collect();
        assert!(!after.is_empty() && after.is_sorted(), "{path}: {doc}");
        assert_eq!(doc["reward"], 1.0, "{path}: {doc}");
        assert_eq!(doc["verdict"], "passed", "{path}: {doc}");
        // The world's tools, whether or not the agent listed them.
        assert_eq!(doc["tools"], docs[0]["tools"], "{path}: {doc}");
        assert!(
            doc["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| *t == CALLS[0]),
            "{path}: {doc}"
        );
    }
}

/// Approvals, the agent's (a scripted agent's `approval.request`) and the
/// host's (before `ask` tools, in a run whose agent asks a model), keep
/// the ATIF export valid under the pinned models: the agent's a step
/// calling `approval_request`, the host's a `system` step, each with the
/// approval in its `extra`.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn approvals_export_as_valid_atif() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = workspace_root().join("worlds");
    let case = workspace_root().join("cases/support/approval-denied.toml");
    let asked = run_in(&store, &case, &guest("careful-agent"), &worlds);
    asked.expect_code(0);
    let scenario = crate::conversation::host_asked_scenario(dir.path());
    let host = run_in(&store, &scenario, &guest("model-agent"), &worlds);
    host.expect_code(0);
    let ids = [
        asked.json()["run_id"].as_str().unwrap(),
        host.json()["run_id"].as_str().unwrap(),
    ];
    let docs = atif(&store, &ids);
    assert_eq!(docs.len(), 2, "{docs:?}");
    assert_eq!(
        docs[0]["tool_calls"],
        serde_json::json!(["get_order", "approval_request"]),
        "{docs:?}"
    );
    assert_eq!(docs[1]["tool_calls"], serde_json::json!(CALLS), "{docs:?}");
    assert_eq!(docs[1]["results"], CALLS.len(), "{docs:?}");
}

/// The trajectories export of `runs`: one JSON value a line.
fn trajectories(store: &Path, runs: &[String]) -> Vec<Value> {
    let dir = temp_dir();
    let file = dir.path().join("trajectories.jsonl");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"export"];
    for r in runs {
        args.push(r);
    }
    args.extend([
        &"--format" as &dyn AsRef<std::ffi::OsStr>,
        &"trajectories",
        &"-o",
        &file,
    ]);
    wl(store, &args).expect_code(0);
    std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// C(n, k) for the small n of a group (0 when k > n).
fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Each line's `group` against the group of `n` members that passed `c`
/// times: one id, members 0..n in order, pass@k by Chen et al.'s unbiased
/// estimator and pass^k by τ-bench's, for every k.
fn assert_group(lines: &[Value], id: &str, n: u64, c: u64) {
    assert_eq!(lines.len() as u64, n);
    for (i, line) in lines.iter().enumerate() {
        let g = &line["group"];
        assert_eq!(g["id"], id, "{line}");
        assert_eq!(g["member"], i as u64, "{g}");
        assert_eq!(
            (g["size"].as_u64(), g["members"].as_u64()),
            (Some(n), Some(n)),
            "{g}"
        );
        assert_eq!(g["passes"], c, "{g}");
        for k in 1..=n {
            let at = 1.0 - choose(n - c, k) / choose(n, k);
            let hat = choose(c, k) / choose(n, k);
            let got = |key: &str| g[key][(k - 1) as usize]["value"].as_f64().unwrap();
            assert!((got("pass_at_k") - at).abs() < 1e-9, "pass@{k}: {g}");
            assert!((got("pass_hat_k") - hat).abs() < 1e-9, "pass^{k}: {g}");
        }
    }
    let passed = lines.iter().filter(|l| l["reward"] == 1.0).count() as u64;
    assert_eq!(passed, c, "the rewards: {lines:?}");
}

/// `test --group 8` on a case whose scripted model draws its key reply
/// from the model seed: eight members with eight recorded seeds, some
/// passing and some not, exported (trajectories and ATIF) as one group;
/// then `fork --samples 8` branches eight continuations from the parent's
/// model call at event 5, exported as a group with its branch point, each
/// branch replaying `identical`.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn a_group_and_a_branch_of_8_export_with_pass_at_k() {
    let dir = temp_dir();
    let store = dir.path();
    let case = workspace_root().join("cases/model/rollback-weighted.toml");
    let agent = guest("model-agent");
    let out = wl(
        store,
        &[
            &"test", &case, &"--agent", &agent, &"--group", &"8", &"--json",
        ],
    );
    out.expect_code(1);
    let c = &out.json()["cases"][0];
    let group = &c["group"];
    let members = group["members"].as_array().unwrap();
    assert_eq!(
        (group["size"].as_u64(), members.len()),
        (Some(8), 8),
        "{out}"
    );
    let mut seeds: Vec<u64> = members
        .iter()
        .map(|m| m["model_seed"].as_u64().unwrap())
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(
        seeds.len(),
        8,
        "every member its own recorded seed: {group}"
    );
    let passes = c["passes"].as_u64().unwrap();
    assert!(
        0 < passes && passes < 8,
        "the seeds give both outcomes: {out}"
    );
    let ids: Vec<String> = members
        .iter()
        .map(|m| m["run_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(group["id"], ids[0].as_str(), "{group}");
    assert_group(&trajectories(store, &ids), &ids[0], 8, passes);
    // A member named twice, by its id and a prefix of it, is one line:
    // the group counted it twice (9 members of 8).
    let twice = [&ids[..], &[ids[0][..20].to_string()]].concat();
    assert_group(&trajectories(store, &twice), &ids[0], 8, passes);
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    for (i, doc) in atif(store, &refs).iter().enumerate() {
        assert_eq!(doc["group"]["member"], i as u64, "{doc}");
        assert_eq!(doc["group"]["passes"], passes, "{doc}");
    }

    let parent = &ids[0];
    let out = wl(
        store,
        &[
            &"fork",
            parent,
            &"--at",
            &"5",
            &"--samples",
            &"8",
            &"--json",
        ],
    );
    let doc = out.json();
    let branches: Vec<String> = doc["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["run"]["run_id"].as_str().unwrap().to_string())
        .collect();
    let passes = doc["group"]["passes"].as_u64().unwrap();
    assert!(0 < passes && passes < 8, "the branches differ: {out}");
    let lines = trajectories(store, &branches);
    assert_group(&lines, &branches[0], 8, passes);
    for line in &lines {
        assert_eq!(line["group"]["branch"]["parent"], parent.as_str(), "{line}");
        assert_eq!(line["group"]["branch"]["event"], 5, "{line}");
    }
    for b in [&branches[0], &branches[7]] {
        let out = wl(store, &[&"replay", b]);
        out.expect_code(0);
        assert!(out.stdout.contains("identical"), "{out}");
    }
}

/// The CPU time (user + system) of `worldline` run with `args`,
/// `--store store` and the variables `env` ([`reaped_cpu`]).
fn cpu_of(store: &Path, args: &[&str], env: &[(&str, &str)]) -> std::time::Duration {
    let child = cli()
        .args(args)
        .arg("--store")
        .arg(store)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cannot start the worldline binary");
    reaped_cpu(child, &format!("worldline {args:?}"))
}

/// The reexecution switch of decision 0358 (docs/cli.md).
const REEXECUTE: (&str, &str) = ("WORLDLINE_BRANCH_REEXECUTE", "1");
/// The fork server even for a prefix cheap to follow again.
const COPY: (&str, &str) = ("WORLDLINE_BRANCH_REEXECUTE", "0");

/// A run of the caller agent on a demo-world case of `calls` tool calls
/// (the last one writes), computing `work` rounds before each (two events
/// a call: the agent's trace note, then the call): its id.
fn costly_run(store: &Path, calls: usize, work: u64) -> String {
    let mut list = vec![r#"{ tool = "list_deploys", args = { service = "checkout" } }"#; calls - 1];
    list.push(r#"{ tool = "add_note", args = { ticket = "T-1", text = "db saturation", author = "bench" } }"#);
    let case = write_case(
        store,
        "triage",
        &format!(
            "world = \"demo@v1\"\nseed = 1000\nclock = 2026-03-01T12:00:00Z\ntask = {{ work = {work}, calls = [{}] }}\n[limits]\nfuel = 100000000000\n",
            list.join(", ")
        ),
    );
    let out = wl(
        store,
        &[
            &"run",
            &case,
            &"--agent",
            &guest("caller-agent"),
            &"--worlds",
            &worlds_dir(),
            &"--json",
        ],
    );
    out.expect_code(0);
    assert_eq!(out.json()["events"], 2 * calls as u64, "{out}");
    out.json()["run_id"].as_str().unwrap().to_string()
}

/// `fork --at 200 --samples 8` of a 202-event run whose agent computes
/// between calls (the 200-event prefix costs ~100 x what the two events
/// after it do) follows the prefix once (decision 0358's fork server):
/// eight branches cost under twice the CPU of one, read per process with
/// `wait4`, and `--json` says `"replayed": 1`. Re-executing the prefix in
/// each branch (`WORLDLINE_BRANCH_REEXECUTE=1`, decision 0355) costs
/// about eight times one, which the same bound refuses.
#[test]
fn eight_branches_replay_their_prefix_once() {
    let dir = temp_dir();
    let store = dir.path();
    let id = costly_run(store, 101, 2_000_000);
    let cpu = |k: &str, env: &[(&str, &str)]| {
        (0..3)
            .map(|_| cpu_of(store, &["fork", &id, "--at", "200", "--samples", k], env))
            .min()
            .unwrap()
    };
    let (one, eight) = (cpu("1", &[]), cpu("8", &[]));
    assert!(
        eight < one * 2,
        "eight branches took {eight:?} of CPU, one {one:?}: the prefix was replayed in each"
    );
    let again = cpu_of(
        store,
        &["fork", &id, "--at", "200", "--samples", "8"],
        &[REEXECUTE],
    );
    assert!(
        again >= one * 2,
        "re-executing the prefix per branch took {again:?}, one branch {one:?}: the prefix costs too little for this test to tell"
    );
    let out = wl(
        store,
        &[&"fork", &id, &"--at", &"200", &"--samples", &"8", &"--json"],
    );
    out.expect_code(0);
    assert_eq!(
        out.json()["prefix"],
        serde_json::json!({"events": 200, "replayed": 1}),
        "{out}"
    );
}

/// The bundles of the branches `doc` (a `fork --samples --json`) lists,
/// each run id of `ids` written as `#i` (the group's id is its first
/// member's run id, which differs between stores by design).
fn branch_bundles(doc: &Value) -> Vec<String> {
    let members = doc["members"].as_array().unwrap();
    let ids: Vec<&str> = members
        .iter()
        .map(|m| m["run"]["run_id"].as_str().unwrap())
        .collect();
    members
        .iter()
        .map(|m| {
            let mut text = std::fs::read_to_string(m["run"]["bundle"].as_str().unwrap()).unwrap();
            for (i, id) in ids.iter().enumerate() {
                text = text.replace(id, &format!("#{i}"));
            }
            // The footer's hashes cover the header, whose group names the
            // first member's id: compared without them (every branch is
            // read, so checked, by the replays the tests make of them).
            let (body, last) = text.trim_end().rsplit_once('\n').unwrap();
            let mut footer: Value = serde_json::from_str(last).unwrap();
            let f = footer["footer"].as_object_mut().unwrap();
            f.remove("hash");
            f.remove("header_hash");
            format!("{body}\n{footer}\n")
        })
        .collect()
}

/// The same `fork --at N --samples 4` made by the fork server and by
/// re-executing the prefix per branch writes the same bundles byte for
/// byte (run ids aside: they are drawn per run), and every branch of
/// both replays `identical`: on a model agent's run (model calls written
/// compact, each branch reseeding the model at the fork point) and on
/// one that reads its clock between calls, forked inside a run of clock
/// reads held back to be folded into one line.
#[test]
fn the_fork_server_writes_what_reexecution_writes() {
    let dir = temp_dir();
    let store = dir.path();
    let out = wl(
        store,
        &[
            &"run",
            &workspace_root().join("cases/model/rollback-weighted.toml"),
            &"--agent",
            &guest("model-agent"),
            &"--json",
        ],
    );
    let model = out.json()["run_id"].as_str().unwrap().to_string();
    // Five monotonic reads (events 0 to 4, one fold line), two wall
    // reads, then a model call, a turn.
    let (worlds, case) = crate::common::long::write_task(store, 3, "clock_reads = 5");
    let out = run_in(store, &case, &guest("looper-agent"), &worlds);
    out.expect_code(0);
    let clocks = out.json()["run_id"].as_str().unwrap().to_string();
    for (run, at) in [(&model, "5"), (&clocks, "3"), (&clocks, "9")] {
        let fork = |env: &[(&str, &str)]| {
            let out = worldline_env(
                [
                    "fork",
                    run,
                    "--at",
                    at,
                    "--samples",
                    "4",
                    "--json",
                    "--store",
                    store.to_str().unwrap(),
                ],
                env,
            );
            assert!(out.code <= 1, "{out}");
            out.json().clone()
        };
        let (served, again) = (fork(&[COPY]), fork(&[REEXECUTE]));
        // Left to choose, a prefix this cheap is followed in each branch.
        assert_eq!(fork(&[])["prefix"]["replayed"], 4);
        assert_eq!(served["prefix"]["replayed"], 1, "{served}");
        assert_eq!(again["prefix"]["replayed"], 4, "{again}");
        assert_eq!(
            branch_bundles(&served),
            branch_bundles(&again),
            "the bundles of {run} forked at {at} both ways"
        );
        for doc in [&served, &again] {
            for m in doc["members"].as_array().unwrap() {
                let out = wl(store, &[&"replay", &m["run"]["run_id"].as_str().unwrap()]);
                out.expect_code(0);
                assert!(out.stdout.contains("identical"), "{out}");
            }
        }
    }
}

/// `fork --samples 70` on the fork server copies the process in chunks
/// of at most 32, following the prefix once per chunk (3 times), never 70
/// processes at once, and writes what re-execution writes, the group's id
/// and each member's index going on across chunks. Either way the command
/// does not hold each branch's run (its events and final state, in the
/// store by then): 100 branches of a 200-event run peaked at four times
/// what 10 did (137 against 34 MB in a release build).
#[test]
fn many_branches_come_in_chunks_and_hold_no_runs() {
    let dir = temp_dir();
    let store = dir.path();
    let id = costly_run(store, 100, 0);
    let fork = |samples: &str, env: &[(&str, &str)]| {
        let out = worldline_env(
            [
                "fork",
                &id,
                "--at",
                "100",
                "--samples",
                samples,
                "--json",
                "--store",
                store.to_str().unwrap(),
            ],
            env,
        );
        out.expect_code(0);
        out.json().clone()
    };
    let (served, again) = (fork("70", &[COPY]), fork("70", &[REEXECUTE]));
    assert_eq!(
        served["prefix"],
        serde_json::json!({"events": 100, "replayed": 3}),
        "{served}"
    );
    assert_eq!(again["prefix"]["replayed"], 70, "{again}");
    assert_eq!(served["members"].as_array().unwrap().len(), 70);
    assert_eq!(branch_bundles(&served), branch_bundles(&again));
    let peak = |samples: &str| {
        crate::common::long::measured(store, &["fork", &id, "--at", "100", "--samples", samples]).1
    };
    let (ten, hundred) = (peak("10"), peak("100"));
    assert!(
        hundred < ten + 20 * 1024,
        "100 branches peaked at {hundred} KiB, 10 at {ten} KiB: the command holds its branches' runs"
    );
}

/// `fork --samples K --json` writes each member as it is made, so K
/// branches cost the memory of one: 300 branches of a run whose output
/// (its 100 answers) is ~40 KB peak at what 10 do. Before, the command
/// held every member's summary and built its document whole at the end:
/// 300 branches peaked at 77 MB against 39 MB for 10 (a debug build; 37
/// MB now for both). The document is still one JSON value, every member
/// in order.
#[test]
fn many_branches_as_json_are_written_as_they_come() {
    let dir = temp_dir();
    let store = dir.path();
    let id = costly_run(store, 100, 0);
    let fork = |samples: &str| {
        let args = ["fork", &id, "--at", "198", "--samples", samples, "--json"];
        let (_, peak, stdout) = crate::common::long::measured(store, &args);
        let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        (peak, doc)
    };
    // The first also fills the compile cache, which costs memory of its own.
    fork("10");
    let ((ten, _), (many, doc)) = (fork("10"), fork("300"));
    let members = doc["members"].as_array().unwrap();
    assert_eq!(members.len(), 300);
    assert!(
        members.iter().enumerate().all(|(i, m)| m["member"] == i),
        "members in order"
    );
    assert_eq!(doc["group"]["passes"], 300, "{}", doc["group"]);
    assert_eq!(
        doc["prefix"],
        serde_json::json!({"events": 198, "replayed": 300})
    );
    assert!(
        many < ten + 8 * 1024,
        "300 branches peaked at {many} KiB, 10 at {ten} KiB: the command holds its members"
    );
}

/// The processes whose parent is `pid` (from /proc/*/stat).
fn children_of(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: the comm may hold spaces, not `)`.
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        let ppid = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            found.push(child);
        }
    }
    found.sort_unstable();
    found
}

/// `fork ID --at 2 ARGS` on the fork server, running, its stdout and
/// stderr read as they are written (a large group's members are more than
/// a pipe holds).
struct Forking {
    child: std::process::Child,
    read: [std::thread::JoinHandle<Vec<u8>>; 2],
}

impl Forking {
    fn start(store: &Path, id: &str, args: &[&str]) -> Forking {
        let mut child = cli()
            .args(["fork", id, "--at", "2"])
            .args(args)
            .arg("--store")
            .arg(store)
            .env(COPY.0, COPY.1)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("cannot start the worldline binary");
        fn drain(
            mut from: impl std::io::Read + Send + 'static,
        ) -> std::thread::JoinHandle<Vec<u8>> {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                from.read_to_end(&mut bytes).unwrap();
                bytes
            })
        }
        let read = [
            drain(child.stdout.take().unwrap()),
            drain(child.stderr.take().unwrap()),
        ];
        Forking { child, read }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
    }

    fn finish(mut self) -> CliOutput {
        let status = self.child.wait().unwrap();
        let [stdout, stderr] = self.read.map(|r| r.join().unwrap());
        CliOutput::of(std::process::Output {
            status,
            stdout,
            stderr,
        })
    }
}

/// A branch whose process is killed while it runs is an error naming
/// the branch, not a hang nor a partial group: the fork server kills and
/// reaps the others, writes no member, and leaves no process behind.
#[test]
fn a_killed_branch_is_an_error_naming_it_and_leaves_no_process() {
    let dir = temp_dir();
    let store = dir.path();
    // Forked at event 2: each branch has 100 calls of work to do live.
    let id = costly_run(store, 101, 1_000_000);
    let runs_before = std::fs::read_dir(store.join("runs")).unwrap().count();
    let mut child = Forking::start(store, &id, &["--samples", "4"]);
    let started = std::time::Instant::now();
    let branches = loop {
        let found = children_of(child.pid());
        if found.len() == 4 {
            break found;
        }
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill();
            panic!("the fork server did not fork its four branches: {found:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    // SAFETY: signals a process the fork server forked, still running.
    unsafe { libc::kill(branches[2] as i32, libc::SIGKILL) };
    let out = child.finish();
    assert_eq!(out.code, 4, "an internal error: {out}");
    assert!(
        out.stderr.contains("branch ") && out.stderr.contains("killed by signal 9"),
        "the error names the branch and how it ended: {out}"
    );
    for pid in branches {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "branch process {pid} was left behind"
        );
    }
    assert_eq!(
        std::fs::read_dir(store.join("runs")).unwrap().count(),
        runs_before,
        "no member of the failed group was written"
    );
}

/// `fork --samples 34 --json` whose second chunk's branch is killed:
/// stdout is still one JSON document, the 32 members of the first chunk
/// (written to the store before the second began) then the error, with
/// the exit code it names. Before, the members were held and the error
/// was the document, so the written members went unreported.
#[test]
fn a_branch_killed_in_a_later_chunk_ends_the_json_with_the_error() {
    let dir = temp_dir();
    let store = dir.path();
    let id = costly_run(store, 101, 1_000_000);
    let runs_before = std::fs::read_dir(store.join("runs")).unwrap().count();
    let mut child = Forking::start(store, &id, &["--samples", "34", "--json"]);
    let started = std::time::Instant::now();
    // The first chunk's 32 processes, then one of the second's.
    let mut first = std::collections::BTreeSet::new();
    let later = loop {
        let found = children_of(child.pid());
        if let Some(pid) = found
            .iter()
            .find(|p| first.len() == 32 && !first.contains(*p))
        {
            break *pid;
        }
        for pid in found {
            if first.len() < 32 {
                first.insert(pid);
            }
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            child.kill();
            panic!("the fork server did not start its second chunk: {first:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    // SAFETY: signals a process the fork server forked, still running.
    unsafe { libc::kill(later as i32, libc::SIGKILL) };
    let out = child.finish();
    assert_eq!(out.code, 4, "an internal error: {out}");
    let doc: Value = serde_json::from_str(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["members"].as_array().unwrap().len(), 32, "{doc}");
    assert_eq!(doc["error"]["exit_code"], 4, "{doc}");
    assert!(
        doc["error"]["message"].as_str().unwrap().contains("of 34"),
        "the error names the branch: {doc}"
    );
    assert!(out.stderr.contains("killed by signal 9"), "{out}");
    assert_eq!(
        std::fs::read_dir(store.join("runs")).unwrap().count(),
        runs_before + 32,
        "the first chunk's members were written, no member of the second"
    );
}

/// `export --format trajectories|atif` of many runs holds one run at a
/// time: each line is written as it is made, to a file named once whole.
/// Before, the whole file was built in memory and written at the end: 300
/// copies of a 200-call run (a 15.6 MB file) peaked at 48 MB against 23
/// MB for 10 of them (a debug build; 21 MB now).
#[test]
fn an_export_of_many_runs_holds_one_at_a_time() {
    let dir = temp_dir();
    let store = dir.path();
    let id = costly_run(store, 100, 0);
    let bundle = crate::common::bundle_in(store, &id);
    let text = std::fs::read(&bundle).unwrap();
    let ids: Vec<String> = (0..300)
        .map(|i| {
            let copy = format!("20261203-070000-{i:08x}");
            std::fs::write(bundle.with_file_name(format!("{copy}.jsonl")), &text).unwrap();
            copy
        })
        .collect();
    for format in ["trajectories", "atif"] {
        let file = dir.path().join(format!("{format}.jsonl"));
        let export = |ids: &[String]| {
            let mut args: Vec<&str> = vec!["export", "--format", format, "-o"];
            args.push(file.to_str().unwrap());
            args.extend(ids.iter().map(String::as_str));
            crate::common::long::measured(store, &args).1
        };
        let (ten, many) = (export(&ids[..10]), export(&ids));
        let lines = std::fs::read_to_string(&file).unwrap();
        assert_eq!(lines.lines().count(), 300);
        assert!(
            many < ten + 4 * 1024,
            "{format}: 300 runs peaked at {many} KiB, 10 at {ten} KiB: the export holds its lines"
        );
    }
}
