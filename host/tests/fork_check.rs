//! End-to-end tests of fork-edit checks: the real `worldline fork` refuses
//! edits that do not fit the run (exit 2, saying what was wrong) before
//! anything runs, says when a patch creates a row, and `history` shows a
//! fork's edits.

use crate::common;

use common::{guest, read_bundle, run_json, temp_dir, wl, workspace_root};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::Path;

/// A failed naive run of `incident/stale-deploys`: (id, events).
fn failed_run(store: &Path) -> (String, Vec<Value>) {
    let case = workspace_root().join("cases/incident/stale-deploys.toml");
    let out = run_json(store, &case, &guest("naive-agent"));
    out.expect_code(1);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    (id, read_bundle(&out.bundle()).events)
}

fn runs_in(store: &Path) -> usize {
    std::fs::read_dir(store.join("runs")).map_or(0, |d| d.count())
}

#[test]
fn edits_that_do_not_fit_the_run_are_refused_before_anything_runs() {
    let dir = temp_dir();
    let store = dir.path();
    let (id, events) = failed_run(store);
    let note = events
        .iter()
        .position(|e| e["call"] == "worldline:agent/trace.note")
        .expect("the run notes a decision");
    let tool = events
        .iter()
        .position(|e| e["request"]["name"] == "list_deploys")
        .unwrap();
    let before = runs_in(store);
    let deploys = r#"{"deploys": []}"#;
    let refused: [(Vec<String>, &[&str]); 8] = [
        // A key written twice: one of two answers was dropped unsaid.
        (
            vec![
                "--at".into(),
                tool.to_string(),
                "--respond".into(),
                r#"{"ok": {"deploys": []}, "ok": {"deploys": [1]}}"#.into(),
            ],
            &["--respond", "written twice"],
        ),
        // A deploy list is no answer to a trace note.
        (
            vec![
                "--at".into(),
                note.to_string(),
                "--respond".into(),
                deploys.into(),
            ],
            &["--respond", "trace.note", "recorded"],
        ),
        // A tool's `ok` keeps its JSON type; an error names a known kind.
        (
            vec![
                "--at".into(),
                tool.to_string(),
                "--respond".into(),
                "[1, 2]".into(),
            ],
            &["--respond", "an array", "an object"],
        ),
        (
            vec![
                "--at".into(),
                tool.to_string(),
                "--respond".into(),
                r#"{"error": {"kind": "late", "message": "x"}}"#.into(),
            ],
            &["--respond", "not-found"],
        ),
        (
            vec![
                "--at".into(),
                tool.to_string(),
                "--set".into(),
                r#"pagers/P-1.status="open""#.into(),
            ],
            &["--set", "no table `pagers`", "deploys"],
        ),
        (
            vec![
                "--at".into(),
                tool.to_string(),
                "--set".into(),
                r#"deploys/D-42.colour="red""#.into(),
            ],
            &["--set", "no such field", "status"],
        ),
        (
            vec![
                "--at".into(),
                tool.to_string(),
                "--set".into(),
                r#"deploys/D-99.status="live""#.into(),
            ],
            &["--set", "no row `D-99`", "whole row"],
        ),
        (
            vec![
                "--at".into(),
                tool.to_string(),
                "--deny".into(),
                "delete_everything".into(),
            ],
            &["--deny", "matches no tool", "list_deploys"],
        ),
    ];
    for (args, said) in refused {
        let mut full: Vec<&dyn AsRef<OsStr>> = vec![&"fork", &id];
        full.extend(args.iter().map(|a| a as &dyn AsRef<OsStr>));
        let out = wl(store, &full);
        out.expect_code(2);
        for s in said {
            assert!(
                out.stderr.contains(s),
                "`{s}` not said for {args:?}:\n{out}"
            );
        }
    }
    assert_eq!(runs_in(store), before, "a refused fork writes no run");
}

#[test]
fn a_patch_that_creates_a_row_says_so_and_history_shows_the_edits() {
    let dir = temp_dir();
    let store = dir.path();
    let (id, events) = failed_run(store);
    let at = events
        .iter()
        .position(|e| e["request"]["name"] == "list_deploys")
        .unwrap();
    let row = r#"deploys/D-50={"id": "D-50", "service": "search", "version": "1.0.0", "at": "2026-03-01T11:00:00Z", "author": "ann", "change": "x", "status": "live"}"#;
    let out = wl(
        store,
        &[
            &"fork",
            &id,
            &"--at",
            &at.to_string(),
            &"--set",
            &row,
            &"--deny",
            &"rollback_*",
            &"--json",
        ],
    );
    assert!(out.code == 0 || out.code == 1, "{out}");
    assert!(
        out.stderr.contains("creates row `D-50` in table `deploys`"),
        "{out}"
    );
    let fork = out.json()["run_id"].as_str().unwrap().to_string();
    let forked = read_bundle(&out.bundle()).events;
    assert_eq!(
        forked[at]["writes"][0]["key"], "D-50",
        "the patch is event {at}'s first write"
    );

    let h = wl(store, &[&"history", &fork]);
    h.expect_code(0);
    assert!(
        h.stdout
            .contains(&format!("edit at event {at}: --set deploys/D-50=")),
        "{h}"
    );
    assert!(
        h.stdout
            .contains(&format!("edit at event {at}: --deny rollback_*")),
        "{h}"
    );
    assert!(h.stdout.contains("[fork point: edits above]"), "{h}");

    // A key field that contradicts the key is refused.
    let bad = r#"deploys/D-51={"id": "D-52"}"#;
    let out = wl(
        store,
        &[&"fork", &id, &"--at", &at.to_string(), &"--set", &bad],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("key field `id`"), "{out}");
}

/// A fork with another agent that departs from the recording before the
/// fork point, or ends before it, is exit 2 naming the event, and no run
/// is kept: one that ended early was taken as a fork with no event, one
/// that departed was exit 4 with a debug word (`Mismatch`).
#[test]
fn another_agent_that_does_not_reach_the_fork_point_makes_no_fork() {
    let dir = temp_dir();
    let store = dir.path();
    let (id, _) = failed_run(store);
    let before = runs_in(store);
    for (agent, said) in [
        ("hostile-agent", "departed from the recording at event 0"),
        ("careful-agent", "departed from the recording at event"),
    ] {
        let agent = guest(agent);
        let out = wl(store, &[&"fork", &id, &"--at", &"3", &"--agent", &agent]);
        out.expect_code(2);
        assert!(out.stderr.contains(said), "{out}");
        assert!(!out.stderr.contains("Mismatch"), "{out}");
        assert_eq!(runs_in(store), before, "{out}");
    }
}

/// Another build that makes the recorded calls up to the fork point
/// forks there: its fuel is its own, not compared (every fork with another
/// build departed at event 0, its fuel differing). The fork replays
/// `identical`, its prefix recording the new build's fuel.
#[test]
fn another_build_making_the_recorded_calls_forks_with_its_own_fuel() {
    let dir = temp_dir();
    let store = dir.path();
    let (id, events) = failed_run(store);
    let careful = guest("careful-agent");
    let out = wl(
        store,
        &[&"fork", &id, &"--at", &"2", &"--agent", &careful, &"--json"],
    );
    out.expect_code(0);
    let forked = read_bundle(&out.bundle()).events;
    assert_eq!(forked[..2].len(), 2);
    for i in 0..2 {
        assert_eq!(forked[i]["request"], events[i]["request"], "event {i}");
        assert_eq!(forked[i]["response"], events[i]["response"], "event {i}");
    }
    assert_ne!(forked[1]["fuel"], events[1]["fuel"], "the build's own fuel");
    let fork = out.json()["run_id"].as_str().unwrap().to_string();
    let replay = wl(store, &[&"replay", &fork, &"--json"]);
    replay.expect_code(0);
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
    // Branches too, the process copied at the fork point or not.
    for copy in ["0", "1"] {
        let args = [
            "fork",
            &id,
            "--at",
            "2",
            "--agent",
            careful.to_str().unwrap(),
            "--samples",
            "2",
        ];
        let out = common::worldline_with(store, args, &[("WORLDLINE_BRANCH_REEXECUTE", copy)]);
        assert!(!out.stderr.contains("departed"), "{copy}: {out}");
        assert!(out.code == 0 || out.code == 1, "{copy}: {out}");
    }
}

/// `--allow` at a call the case's `[permissions]` deny answers it, when it
/// names the rule; a glob that does not name it is refused (the deny rule
/// still won, and the fork ran as its parent did, unsaid). At a call an
/// `[[inject]]` rule denies, the rule still denies it, and the fork says so.
#[test]
fn allow_lifts_a_permission_and_says_when_a_denial_stays() {
    let dir = temp_dir();
    let store = dir.path();
    let close_of = |events: &[Value]| {
        (events.iter())
            .position(|e| e["request"]["name"] == "close_ticket")
            .expect("a close")
    };
    let cases = [
        ("cases/incident/close-denied.toml", "careful-agent", false),
        ("tests/conformance/incident.toml", "model-agent", true),
    ];
    for (case, agent, injected) in cases {
        let (case, agent) = (workspace_root().join(case), guest(agent));
        let worlds = workspace_root().join("worlds");
        let out = wl(
            store,
            &[
                &"run",
                &case,
                &"--agent",
                &agent,
                &"--worlds",
                &worlds,
                &"--json",
            ],
        );
        let id = out.json()["run_id"].as_str().unwrap().to_string();
        let at = close_of(&read_bundle(&out.bundle()).events).to_string();
        let fork = |allow: &str| {
            wl(
                store,
                &[&"fork", &id, &"--at", &at, &"--allow", &allow, &"--json"],
            )
        };
        if !injected {
            let before = runs_in(store);
            let glob = fork("close_*");
            glob.expect_code(2);
            let said = "the deny rule `close_ticket` still matches it";
            assert!(glob.stderr.contains(said), "{glob}");
            assert!(glob.stderr.contains("--allow close_ticket"), "{glob}");
            assert_eq!(runs_in(store), before, "a refused fork writes no run");
        }
        let forked = fork("close_ticket");
        let events = read_bundle(&forked.bundle()).events;
        let answer = &events[close_of(&events)]["response"];
        let still = "the case's [[inject]] rule for `close_ticket` (deny = true) still denies";
        let case = case.display();
        assert_eq!(forked.stderr.contains(still), injected, "{case}: {forked}");
        let denied = answer["error"]["kind"] == "denied";
        assert_eq!(denied, injected, "{case}: {answer}");
    }
}

/// A patch of a row the event at the fork point wrote says that the
/// event, made again, may undo it (documented, and said nowhere).
#[test]
fn a_patch_of_a_row_the_fork_point_writes_says_it_may_be_undone() {
    let dir = temp_dir();
    let store = dir.path();
    let (id, events) = failed_run(store);
    let at = events
        .iter()
        .position(|e| e["writes"].as_array().is_some_and(|w| !w.is_empty()))
        .expect("the naive run writes");
    let w = &events[at]["writes"][0];
    let row = format!(
        "{}/{}",
        w["table"].as_str().unwrap(),
        w["key"].as_str().unwrap()
    );
    let set = format!("{row}.status=\"patched\"");
    let out = wl(
        store,
        &[&"fork", &id, &"--at", &at.to_string(), &"--set", &set],
    );
    assert!(out.code == 0 || out.code == 1, "{out}");
    assert!(
        out.stderr.contains(&format!("note: event {at} (`"))
            && out
                .stderr
                .contains(&format!("wrote {row} in the recording")),
        "{out}"
    );
}

/// `--samples` takes `--respond` in the shapes a lone fork takes: a user
/// turn's text and an approval's word. Branches recorded the text as
/// typed, refused it as a store that cannot be written, and left an
/// incomplete run behind each time.
#[test]
fn branches_take_a_user_turn_s_text_and_an_approval_s_word() {
    let dir = temp_dir();
    let store = dir.path();
    let case = workspace_root().join("cases/support/approval-granted.toml");
    let out = run_json(store, &case, &guest("careful-agent"));
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = read_bundle(&out.bundle()).events;
    let at = |call: &str| {
        (events.iter().position(|e| e["call"] == call))
            .unwrap_or_else(|| panic!("no {call}"))
            .to_string()
    };
    for (at, respond) in [
        (at("worldline:agent/user.say"), r#""No, keep it""#),
        (at("worldline:agent/approval.request"), r#""denied""#),
    ] {
        let before = runs_in(store);
        let out = wl(
            store,
            &[
                &"fork",
                &id,
                &"--at",
                &at,
                &"--samples",
                &"2",
                &"--respond",
                &respond,
                &"--json",
            ],
        );
        assert!(out.code == 0 || out.code == 1, "{out}");
        assert_eq!(runs_in(store), before + 2, "{out}");
    }
}

/// A model call a fork's `--respond` answers takes its scripted reply's
/// turn as in the parent (rules 5): answered with its own recorded
/// answer, the fork runs as the parent did. The edited call took no turn,
/// and every later call got the reply meant for the one before it (a
/// fourth turn, `get_alert` twice).
#[test]
fn a_model_call_a_fork_answers_takes_its_scripted_turn() {
    let dir = temp_dir();
    let store = dir.path();
    let case = common::write_case(
        dir.path(),
        "responses",
        "world = \"incident@v4\"\nseed = 1\nclock = 2026-03-01T12:05:00Z\n\
         task = { alert = \"ALERT-7\", ticket = \"T-100\" }\n\
         [[model.responses]]\ntool_calls = [{ name = \"get_alert\", arguments = { id = \"ALERT-7\" } }]\n\
         [[model.responses]]\ntool_calls = [{ name = \"get_ticket\", arguments = { id = \"T-100\" } }]\n\
         [[model.responses]]\ncontent = \"done\"\n",
    );
    let worlds = workspace_root().join("worlds");
    let agent = guest("model-agent");
    let out = wl(
        store,
        &[
            &"run",
            &case,
            &"--agent",
            &agent,
            &"--worlds",
            &worlds,
            &"--json",
        ],
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = read_bundle(&out.bundle()).events;
    let first = (events.iter())
        .position(|e| e["call"] == "worldline:agent/model.complete")
        .unwrap();
    let ok = serde_json::json!({"ok": events[first]["response"]["ok"]}).to_string();
    let fork = wl(
        store,
        &[
            &"fork",
            &id,
            &"--at",
            &first.to_string(),
            &"--respond",
            &ok,
            &"--json",
        ],
    );
    assert_eq!(fork.json()["output"], out.json()["output"], "{fork}");
    assert_eq!(fork.json()["events"], out.json()["events"], "{fork}");
    let replay = wl(
        store,
        &[
            &"replay",
            &fork.json()["run_id"].as_str().unwrap(),
            &"--json",
        ],
    );
    assert_eq!(replay.json()["verdict"], "identical", "{replay}");
}

/// A fork with no edits has its parent's chain hash wherever it forks:
/// forked before the run's first compact model call, it read no marked
/// line, hashed the calls it made whole, and had another chain.
#[test]
fn a_fork_without_edits_has_its_parent_s_chain_at_every_point() {
    let dir = temp_dir();
    let store = dir.path();
    let case = workspace_root().join("cases/model/rollback-weighted.toml");
    let out = run_json(store, &case, &guest("model-agent"));
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let chain = out.json()["chain_hash"].as_str().unwrap().to_string();
    for at in ["0", "1", "3"] {
        let fork = wl(store, &[&"fork", &id, &"--at", &at, &"--json"]);
        assert_eq!(fork.json()["chain_hash"], chain.as_str(), "at {at}: {fork}");
    }
}

/// `fork --samples 1` says pass@1 once (it said `pass@1 0.0%, pass@1
/// 0.0%`), then pass^1; two samples say pass@1 and pass@2.
#[test]
fn one_sample_says_pass_at_1_once() {
    let dir = temp_dir();
    let store = dir.path();
    let (id, _) = failed_run(store);
    for (samples, said) in [
        ("1", "0/1 passed, pass@1 0.0%, pass^1 0.0% ("),
        ("2", "0/2 passed, pass@1 0.0%, pass@2 0.0%, pass^2 0.0% ("),
    ] {
        let out = wl(
            store,
            &[&"fork", &id, &"--at", &"3", &"--samples", &samples],
        );
        out.expect_code(1);
        assert!(out.stdout.contains(said), "{out}");
    }
}

/// A first SIGINT to `fork --samples K --json` begins no more branches:
/// those under way are written whole, the document is closed with
/// `interrupted` after the members written (one per branch kept), it is
/// said on stderr, then the signal ends the command; the process copied
/// at the fork point or not. It was ended mid-document, saying nothing,
/// and left a branch without a footer (one in a tool call that wrote was
/// then refused by `test --resume`).
#[test]
fn a_signal_stops_branching_and_the_document_closes_with_the_branches_made() {
    let dir = temp_dir();
    let store = dir.path();
    let (id, _) = failed_run(store);
    let bundles = || common::files_with_suffix(&store.join("runs"), ".jsonl");
    for copy in ["0", "1"] {
        let before = bundles().len();
        let mut command = common::cli();
        command
            .args(["fork", &id, "--at", "3", "--samples", "5000", "--json"])
            .arg("--store")
            .arg(store)
            .env("WORLDLINE_BRANCH_REEXECUTE", copy);
        let (signal, out) = common::signalled_once_said(command, "\"member\"", libc::SIGINT, true);
        assert_eq!(signal, Some(libc::SIGINT), "{copy}: {out}");
        let doc = out.json();
        assert_eq!(doc["interrupted"], "SIGINT", "{copy}: {out}");
        let members = doc["members"].as_array().unwrap().len();
        assert!((1..5000).contains(&members), "{copy}: {out}");
        assert_eq!(bundles().len() - before, members, "{copy}: {out}");
        for b in bundles() {
            let text = std::fs::read_to_string(&b).unwrap();
            let last = text.trim_end().lines().last().unwrap_or_default();
            assert!(
                last.starts_with("{\"footer\""),
                "{}: no footer",
                b.display()
            );
        }
        assert!(
            out.stderr
                .contains("SIGINT: starting no more branches; the report follows"),
            "{copy}: {out}"
        );
        // Every branch made is in the run index (the last ones were left
        // out: their rows were queued when the signal ended the process).
        let check = common::worldline(store, ["index", "--check", "--json"]);
        check.expect_code(0);
        assert_eq!(
            check.json()["missing"],
            serde_json::json!([]),
            "{copy}: {check}"
        );
    }
}
