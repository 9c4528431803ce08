//! Hardening: results that can be trusted. `merge` takes only every shard
//! of one suite or campaign, once, each adding up, and names what is wrong
//! otherwise (exit 2); `fork --respond` answers every kind of call with one
//! shape. The real binary on the caller-agent and hostile guests.

use crate::common;

use common::{guest, temp_dir, worldline, worlds_dir, write_case};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A passing demo case with `seed`.
fn demo_case(seed: u32) -> String {
    format!(
        "world = \"demo@v1\"\nseed = {seed}\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{{ tool = \"get_ticket\", args = {{ id = \"T-1\" }} }}] }}\n"
    )
}

/// `n` demo cases in `dir`.
fn suite(dir: &Path, n: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    for seed in 1..=n {
        write_case(dir, &format!("c{seed}"), &demo_case(seed));
    }
    dir.to_path_buf()
}

/// Write `doc` to `<dir>/<name>.json`.
fn report(dir: &Path, name: &str, doc: &Value) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string(doc).unwrap()).unwrap();
    path.display().to_string()
}

/// `merge FILES...` exits 2 saying `said`.
#[track_caller]
fn refused(store: &Path, files: &[&str], said: &str) {
    let mut args = vec!["merge"];
    args.extend_from_slice(files);
    let out = worldline(store, &args);
    out.expect_code(2);
    assert!(out.stderr.contains(said), "expected `{said}`:\n{out}");
}

#[test]
fn merge_refuses_test_shards_that_are_not_one_whole_suite_or_do_not_add_up() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = guest("caller-agent");
    let shard = |cases: &Path, p: &str| {
        let out = worldline(
            &store,
            [
                "test",
                s(cases),
                "--agent",
                s(&agent),
                "--worlds",
                s(&worlds_dir()),
                "--partition",
                p,
                "--json",
            ],
        );
        out.expect_code(0);
        out.json().clone()
    };
    let cases = suite(&dir.path().join("cases"), 4);
    let t1 = shard(&cases, "count:1/2");
    let t2 = shard(&cases, "count:2/2");
    assert_eq!(t1["shard"]["partition"], "count:1/2");
    assert_eq!(t1["shard"]["selected"], 4);
    assert_eq!(t1["shard"]["selection"], t2["shard"]["selection"]);
    let (f1, f2) = (report(dir.path(), "t1", &t1), report(dir.path(), "t2", &t2));
    let merged = worldline(&store, ["merge", &f1, &f2, "--json"]);
    merged.expect_code(0);
    assert_eq!(merged.json()["total"], 4, "{merged}");
    assert_eq!(merged.json()["passed"], 4, "{merged}");

    refused(&store, &[&f1], "shard count:2/2 is missing");
    refused(&store, &[&f1, &f1], "shard count:1/2 is in two reports");
    // A shard of another suite (three cases), with the right partition.
    let other = shard(&suite(&dir.path().join("other"), 3), "count:2/2");
    let fo = report(dir.path(), "other", &other);
    refused(&store, &[&f1, &fo], "shard count:2/2 is of another suite");

    // Partitions that cannot be, or of different partitionings.
    for (partition, said) in [
        ("hash:3/2", "`hash:3/2`: the shard must be between 1 and 2"),
        ("hash:0/2", "`hash:0/2`: the shard must be between 1 and 2"),
        ("x:y/z", "`y` in `x:y/z` is not a whole number"),
        (
            "count:2/3",
            "shards of different partitionings (count:1/2 and count:2/3)",
        ),
        (
            "hash:2/2",
            "shards of different partitionings (count:1/2 and hash:2/2)",
        ),
    ] {
        let mut forged = t2.clone();
        forged["shard"]["partition"] = partition.into();
        let f = report(dir.path(), "forged", &forged);
        refused(&store, &[&f1, &f], said);
    }
    // Forged tallies: more passes than runs, counts that are not the cases'.
    let mut forged = t2.clone();
    forged["cases"][0]["passes"] = 1028.into();
    let f = report(dir.path(), "forged", &forged);
    refused(&store, &[&f1, &f], "does not add up: 1028 passes of 1 runs");
    let mut forged = t2.clone();
    forged["passed"] = 1028.into();
    let f = report(dir.path(), "forged", &forged);
    refused(
        &store,
        &[&f1, &f],
        "shard count:2/2: `passed` is 1028, but its cases count 2",
    );
    let mut forged = t2.clone();
    forged["cases"].as_array_mut().unwrap().pop();
    forged["total"] = 1.into();
    forged["passed"] = 1.into();
    let f = report(dir.path(), "forged", &forged);
    refused(
        &store,
        &[&f1, &f],
        "the shards hold 3 of the suite's 4 cases",
    );
    // A report without its shard is not a shard, and is the one named.
    let mut bare = t2.clone();
    bare.as_object_mut().unwrap().remove("shard");
    let f = report(dir.path(), "bare", &bare);
    refused(
        &store,
        &[&f1, &f],
        &format!("{f}: is a whole suite's report (it has no `shard`)"),
    );
}

#[test]
fn merge_refuses_fuzz_shards_that_are_not_one_whole_campaign_or_do_not_add_up() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "fz",
        "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 2 }\n\n[[fuzz.tools]]\ntool = \"*\"\nerror = { timeout = 0.3 }\n",
    );
    let agent = guest("hostile-agent");
    let shard = |p: &str| {
        let out = worldline(
            &store,
            [
                "fuzz",
                s(&case),
                "--agent",
                s(&agent),
                "--worlds",
                s(&worlds_dir()),
                "--runs",
                "12",
                "--partition",
                p,
                "--json",
            ],
        );
        assert!(out.code == 0 || out.code == 1, "{out}");
        out.json().clone()
    };
    let h1 = shard("hash:1/2");
    let h2 = shard("hash:2/2");
    let (f1, f2) = (report(dir.path(), "h1", &h1), report(dir.path(), "h2", &h2));
    let merged = worldline(&store, ["merge", &f1, &f2, "--json"]);
    assert!(merged.code == 0 || merged.code == 1, "{merged}");
    assert_eq!(merged.json()["summary"]["runs"], 12, "{merged}");

    refused(&store, &[&f1], "shard hash:2/2 is missing");
    for (partition, said) in [
        ("hash:3/2", "`hash:3/2`: the shard must be between 1 and 2"),
        ("hash:0/2", "`hash:0/2`: the shard must be between 1 and 2"),
        ("x:y/z", "`y` in `x:y/z` is not a whole number"),
        (
            "hash:2/3",
            "shards of different partitionings (hash:1/2 and hash:2/3)",
        ),
    ] {
        let mut forged = h2.clone();
        forged["partition"] = partition.into();
        let f = report(dir.path(), "forged", &forged);
        refused(&store, &[&f1, &f], said);
    }
    let runs = h2["tally"]["runs"].as_u64().unwrap();
    let mut forged = h2.clone();
    forged["tally"]["passed"] = 1028.into();
    let f = report(dir.path(), "forged", &forged);
    refused(
        &store,
        &[&f1, &f],
        &format!("shard hash:2/2: its tally does not add up: passed 1028 > runs {runs}"),
    );
    // Runs and passes raised together: the seeds by passes disagree.
    let mut forged = h2.clone();
    forged["tally"]["runs"] = (runs + 1000).into();
    let f = report(dir.path(), "forged", &forged);
    refused(
        &store,
        &[&f1, &f],
        "shard hash:2/2: its tally does not add up: runs is",
    );
}

/// `fork RUN --at N --respond RESPONSE --json` where N is the first event
/// of `call`; checks the fork answered the agent with `recorded` there
/// (marked as the fork's), replays identical, and returns the fork's output.
#[track_caller]
fn fork_responds(
    store: &Path,
    run: &common::CliOutput,
    call: &str,
    response: &str,
    recorded: &Value,
) -> Value {
    let events = common::read_bundle(&run.bundle()).events;
    let at = events
        .iter()
        .position(|e| e["call"] == call)
        .unwrap_or_else(|| panic!("no `{call}` event in the run:\n{run}"));
    let id = run.json()["run_id"].as_str().unwrap();
    let fork = worldline(
        store,
        [
            "fork",
            id,
            "--at",
            &at.to_string(),
            "--respond",
            response,
            "--json",
        ],
    );
    assert!(fork.code == 0 || fork.code == 1, "{fork}");
    let forked = common::read_bundle(&fork.bundle()).events;
    assert_eq!(forked[at]["response"], *recorded, "{fork}");
    assert_eq!(
        forked[at]["injected"],
        serde_json::json!({"action": "fork-respond"})
    );
    common::replays_identical(store, fork.json()["run_id"].as_str().unwrap());
    serde_json::from_str(fork.json()["output"].as_str().unwrap()).unwrap()
}

const TOOL: &str = "worldline:agent/tools.call";

#[test]
fn fork_respond_answers_every_kind_of_call_in_one_shape() {
    use serde_json::json;
    let dir = temp_dir();
    let store = dir.path().join("store");

    // A declared tool: {"ok": value}, a bare value (taken as `ok`), or an error.
    let caller = guest("caller-agent");
    let declared = write_case(dir.path(), "declared", &demo_case(1));
    let run = common::run_in(&store, &declared, &caller, &worlds_dir());
    run.expect_code(0);
    let ticket = json!({"id": "T-1", "status": "forked"});
    let out = fork_responds(
        &store,
        &run,
        TOOL,
        &json!({"ok": ticket}).to_string(),
        &json!({"ok": ticket}),
    );
    assert_eq!(out[0], json!({"ok": ticket}));
    let out = fork_responds(
        &store,
        &run,
        TOOL,
        &ticket.to_string(),
        &json!({"ok": ticket}),
    );
    assert_eq!(out[0], json!({"ok": ticket}));
    let error = json!({"error": {"kind": "timeout", "message": "forked"}});
    let out = fork_responds(&store, &run, TOOL, &error.to_string(), &error);
    assert_eq!(out[0], error);

    // A service tool: the same shapes (the recorded `service` note is the
    // original call's, not asked for).
    let services = dir.path().join("services");
    std::fs::create_dir_all(&services).unwrap();
    let worlds = common::counters(&services);
    let case = common::counters_case(
        &services,
        json!([{"tool": "bump", "args": {"id": "c"}}]),
        "",
    );
    let run = common::run_in(&store, &case, &caller, &worlds);
    run.expect_code(0);
    let recorded = &common::read_bundle(&run.bundle()).events;
    assert!(
        recorded
            .iter()
            .any(|e| e["response"].get("service").is_some()),
        "{run}"
    );
    let value = json!({"id": "c", "n": 41});
    let out = fork_responds(
        &store,
        &run,
        TOOL,
        &json!({"ok": value}).to_string(),
        &json!({"ok": value}),
    );
    assert_eq!(out[0], json!({"ok": value}));
    let out = fork_responds(
        &store,
        &run,
        TOOL,
        &value.to_string(),
        &json!({"ok": value}),
    );
    assert_eq!(out[0], json!({"ok": value}));
    let out = fork_responds(&store, &run, TOOL, &error.to_string(), &error);
    assert_eq!(out[0], error);

    // A model call: the completion as `ok` (the recorded `model_call` note
    // is the provider's), or an error.
    let asker = guest("asker-agent");
    let model_case = write_case(
        dir.path(),
        "model",
        "world = \"demo@v1\"\nclock = 2026-03-01T12:00:00Z\nseed = 11\ntask = { requests = [{ messages = [{ role = \"user\", content = \"hi\" }] }] }\n\n[model]\n\n[[model.rules]]\nreply = \"scripted\"\n",
    );
    let run = common::run_in(&store, &model_case, &asker, &worlds_dir());
    run.expect_code(0);
    let model = "worldline:agent/model.complete";
    let recorded = common::read_bundle(&run.bundle()).events;
    let chat = recorded.iter().find(|e| e["call"] == model).unwrap();
    assert!(chat["response"].get("model_call").is_some(), "{chat}");
    let mut completion = chat["response"]["ok"].clone();
    completion["choices"][0]["message"]["content"] = json!("forked");
    let out = fork_responds(
        &store,
        &run,
        model,
        &json!({"ok": completion}).to_string(),
        &json!({"ok": completion}),
    );
    assert_eq!(out[0]["content"], "forked", "{out}");
    let out = fork_responds(
        &store,
        &run,
        model,
        &completion.to_string(),
        &json!({"ok": completion}),
    );
    assert_eq!(out[0]["content"], "forked", "{out}");
    let out = fork_responds(&store, &run, model, &error.to_string(), &error);
    assert_eq!(out[0]["error"], "timeout", "{out}");

    // A user turn and an approval: text, or the recorded object form.
    let talker = guest("talker-agent");
    let talk = write_case(
        dir.path(),
        "talk",
        "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = { steps = [{ say = \"Which ticket?\" }, { approve = \"refund\", details = { amount = 20 } }] }\n\n[user]\ndefault = \"T-1\"\n\n[[approve]]\nkind = \"refund\"\ndecision = \"approve\"\n",
    );
    let run = common::run_in(&store, &talk, &talker, &worlds_dir());
    run.expect_code(0);
    let say = "worldline:agent/user.say";
    let out = fork_responds(
        &store,
        &run,
        say,
        "\"T-2 please\"",
        &json!({"reply": "T-2 please"}),
    );
    assert_eq!(out[0], json!({"reply": "T-2 please"}));
    let out = fork_responds(
        &store,
        &run,
        say,
        r#"{"reply": "T-3"}"#,
        &json!({"reply": "T-3"}),
    );
    assert_eq!(out[0], json!({"reply": "T-3"}));
    let approval = "worldline:agent/approval.request";
    let out = fork_responds(
        &store,
        &run,
        approval,
        "\"denied\"",
        &json!({"denied": "denied in a fork"}),
    );
    assert_eq!(out[1], json!({"denied": "denied in a fork"}));
    let out = fork_responds(
        &store,
        &run,
        approval,
        r#"{"denied": "no"}"#,
        &json!({"denied": "no"}),
    );
    assert_eq!(out[1], json!({"denied": "no"}));
}

/// Run ids, world identities and input errors that can be trusted.
mod ids_worlds_and_errors {
    use crate::common::*;
    use std::time::Duration;

    #[test]
    fn a_keep_all_campaign_keeps_every_run_under_its_own_id() {
        let dir = temp_dir();
        let store = dir.path().join("store");
        let text = "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 2 }\n\n[[fuzz.tools]]\ntool = \"*\"\nerror = { timeout = 0.3 }\n";
        let c = write_case(dir.path(), "fz", text);
        let fuzz = within(
            Duration::from_secs(300),
            &store,
            &[
                os("fuzz"),
                c.as_os_str(),
                os("--agent"),
                hostile().as_os_str(),
                os("--worlds"),
                worlds_dir().as_os_str(),
                os("--runs"),
                os("400"),
                os("--keep-all"),
                os("--json"),
            ],
        );
        // Each tool call times out with probability 0.3, drawn from the
        // campaign seed: the same 202 of 400 runs pass every time, and the
        // failure groups hold the other 198.
        fuzz.expect_code(1);
        let summary = &fuzz.json()["summary"];
        assert_eq!(
            (&summary["runs"], &summary["passed"]),
            (&400.into(), &202.into()),
            "{fuzz}"
        );
        let failed: u64 = fuzz.json()["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["count"].as_u64().unwrap())
            .sum();
        assert_eq!(failed, 198, "{fuzz}");
        let bundles = files_with_suffix(&store.join("runs"), ".jsonl");
        // A bundle for each run, and one for each failure group's shrunk
        // reproducer, each under its own id.
        let groups = fuzz.json()["groups"].as_array().unwrap();
        assert_eq!(bundles.len(), 400 + groups.len(), "{fuzz}");
        for g in groups {
            let id = g["reproducer"]["run_id"].as_str().unwrap();
            assert!(crate::common::bundle_in(&store, id).is_file(), "{g}");
        }
    }

    #[test]
    fn a_world_named_unlike_its_folder_is_refused_at_its_line() {
        let dir = temp_dir();
        let world = dir.path().join("worlds").join("shop").join("v2");
        std::fs::create_dir_all(&world).unwrap();
        let toml = "name = \"shop\"\nversion = 3\n\n[[tools]]\nname = \"noop\"\ndescription = \"x\"\nparams = { type = \"object\" }\nop = \"respond\"\nresponse = { ok = true }\n";
        std::fs::write(world.join("world.toml"), toml).unwrap();
        let c = write_case(
            dir.path(),
            "shop",
            "world = \"shop@v2\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n",
        );
        let out = worldline(
            &dir.path().join("store"),
            [
                os("run"),
                c.as_os_str(),
                os("--agent"),
                hostile().as_os_str(),
            ],
        );
        out.expect_code(2);
        assert!(
            out.stderr.contains("world.toml:2:11"),
            "the version's place:\n{out}"
        );
        assert!(out.stderr.contains("disagrees with the folder"), "{out}");
    }

    #[test]
    fn input_errors_under_json_are_json() {
        let dir = temp_dir();
        let c = write_case(dir.path(), "broken", "world = \"demo@v1\"\nseed = \n");
        let out = worldline(
            &dir.path().join("store"),
            [
                os("run"),
                c.as_os_str(),
                os("--agent"),
                hostile().as_os_str(),
                os("--json"),
            ],
        );
        out.expect_code(2);
        let e = &out.json()["error"];
        assert_eq!(e["kind"], "input", "{out}");
        assert_eq!(e["line"], 2, "{out}");
        assert!(
            e["file"].as_str().unwrap().ends_with("broken.toml"),
            "{out}"
        );
    }
}

/// A fork's answered error is recorded as an injected one is (`denied`,
/// `failed`): it was `read`, so `[[expect.calls]] denied` graded the fork
/// and the case made from it differently, and `otel` and `history`
/// disagreed. A fork recorded before replays as it ran.
#[test]
fn a_fork_s_edits_are_recorded_shown_and_refused_as_they_apply() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    common::imported_fixture(&store, "before-fork-effects", "fork-denied.json");
    let fixtures = common::workspace_root().join("tests/bundles/before-fork-effects");
    let ran = common::run_in(
        &store,
        &fixtures.join("case.toml"),
        &guest("caller-agent"),
        &common::workspace_root().join("tests/worlds"),
    );
    ran.expect_code(0);
    let run = ran.json()["run_id"].as_str().unwrap().to_string();
    // `fork RUN --at 1 FLAG VALUE`: the fork's id.
    let fork_at_1 = |flag: &str, value: &str| {
        let fork = worldline(&store, ["fork", &run, "--at", "1", flag, value, "--json"]);
        fork.json()["run_id"].as_str().unwrap().to_string()
    };
    for (kind, effect) in [("denied", "denied"), ("timeout", "failed")] {
        let answer = format!(r#"{{"error":{{"kind":"{kind}","message":"m"}}}}"#);
        let id = fork_at_1("--respond", &answer);
        let history = worldline(&store, ["history", &id, "--json"]);
        assert_eq!(history.json()["events"][1]["effect"], effect, "{history}");
        worldline(&store, ["verify", &id]).expect_code(0);
    }
    // A fork whose edit changed only what event 1 wrote: `diff` printed
    // the two alike lines of that event and nothing that differed.
    let id = fork_at_1("--set", r#"tickets/T-2.status="closed""#);
    let d = worldline(&store, ["diff", &run, &id]);
    d.expect_code(1);
    assert!(
        d.stdout.contains("  a wrote: []\n  b wrote: [") && d.stdout.contains("closed"),
        "{d}"
    );
    let d = worldline(&store, ["diff", &run, &id, "--json"]);
    let first = &d.json()["first_divergence"];
    assert_eq!(first["a"]["writes"], serde_json::json!([]), "{d}");
    assert_eq!(
        first["b"]["writes"].as_array().map(Vec::len),
        Some(1),
        "{d}"
    );
    // A fork with no edit (another agent's) points at none.
    let id = fork_at_1("--agent", guest("caller-agent").to_str().unwrap());
    let history = worldline(&store, ["history", &id]);
    assert!(
        history.stdout.contains("[fork point: live from here]")
            && !history.stdout.contains("edits above"),
        "{history}"
    );
    // At a finished run's end no call is made: an edit there was recorded
    // in the fork's header and never applied (the fork passed, `diff` saw
    // no change).
    for (flag, edit) in [
        ("--set", r#"tickets/T-1.status="closed""#),
        ("--deny", "get_ticket"),
    ] {
        let fork = worldline(&store, ["fork", &run, "--at", "2", flag, edit]);
        fork.expect_code(2);
        assert!(
            fork.stderr
                .contains(&format!("{flag}: event 2 is the end of a finished run"))
                && fork.stderr.contains("--at 1 or earlier"),
            "{fork}"
        );
    }
    // A run of no events has no earlier event to give (it said "give --at
    // 0 or earlier" of --at 0).
    let case = write_case(
        dir.path(),
        "nothing",
        &demo_case(1).replace("{ tool = \"get_ticket\", args = { id = \"T-1\" } }", ""),
    );
    let none = common::run_in(&store, &case, &guest("caller-agent"), &worlds_dir());
    let none_id = none.json()["run_id"].as_str().unwrap().to_string();
    let fork = worldline(
        &store,
        ["fork", &none_id, "--at", "0", "--deny", "get_ticket"],
    );
    fork.expect_code(2);
    assert!(
        fork.stderr.contains("it made no call at all") && !fork.stderr.contains("or earlier"),
        "{none}\n{fork}"
    );
}

/// `diff` of two runs alike in their events and final state but not in
/// what they returned says so, and exits 1 (it said "same events",
/// "final states: identical" and exited 0: a changed answer passed a
/// "same behaviour?" check).
#[test]
fn diff_says_when_the_outputs_differ() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = common::workspace_root().join("tests/worlds");
    let agent = guest("caller-agent");
    let run = |name: &str, output: &str| {
        let case = write_case(
            dir.path(),
            name,
            &format!(
                "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{{ tool = \"get_ticket\", args = {{ id = \"T-1\" }} }}], output = \"{output}\" }}\n"
            ),
        );
        let out = worldline(
            &store,
            [
                "run".as_ref(),
                case.as_os_str(),
                "--agent".as_ref(),
                agent.as_os_str(),
                "--worlds".as_ref(),
                worlds.as_os_str(),
                "--json".as_ref(),
            ],
        );
        out.expect_code(0);
        out.json()["run_id"].as_str().unwrap().to_string()
    };
    let (yes, no) = (run("yes", "refund: yes"), run("no", "refund: no"));
    let out = worldline(&store, ["diff", yes.as_str(), no.as_str()]);
    out.expect_code(1);
    assert!(
        out.stdout.contains("same events")
            && out.stdout.contains("outputs differ:")
            && out.stdout.contains("refund: yes")
            && out.stdout.contains("refund: no"),
        "{out}"
    );
    let same = run("yes2", "refund: yes");
    worldline(&store, ["diff", yes.as_str(), same.as_str()]).expect_code(0);
}

/// A stdout that cannot be written (`> /dev/full`) ends a command with
/// an error (exit 4) that blames the output: `--json` commands panicked
/// (exit 134, a backtrace) printing their error document to that stdout,
/// `runs` blamed the run index and said to rebuild it; and `--json` after
/// `--` is the native agent's, not worldline's (its usage error came as
/// JSON on stdout).
#[test]
fn a_stdout_that_fails_ends_the_command_with_an_error_not_a_panic() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let cases = suite(&dir.path().join("cases"), 1);
    let agent = guest("caller-agent");
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let to_full = |args: &[&str]| {
        let out = common::cli()
            .args(args)
            .args(["--store", s(&store)])
            .stdout(full())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(4), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{args:?}: {stderr}"
        );
        stderr
    };
    let worlds = worlds_dir();
    let suite = [
        "test",
        s(&cases),
        "--agent",
        s(&agent),
        "--worlds",
        s(&worlds),
    ];
    to_full(&[&suite[..], &["--json"]].concat());
    worldline(&store, suite).expect_code(0);
    for args in [
        &["runs", "--json"][..],
        &["verify", "--json"],
        &["retention"],
    ] {
        to_full(args);
    }
    let runs = to_full(&["runs"]);
    assert!(!runs.contains("index"), "{runs}");
    let usage = worldline(&store, ["test", "--jbos", "2", "--", "echo", "--json"]);
    usage.expect_code(2);
    assert_eq!(usage.stdout, "", "{usage}");
}
