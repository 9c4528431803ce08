//! End-to-end tests of conversations: the real `worldline` binary running
//! real guests that talk to a simulated user and ask for approvals — a
//! scripted user (rules, turns, weighted alternatives, the turn limit), a
//! user played by a model behind an OpenAI-compatible server on loopback,
//! approval rules and tools whose permission is `ask`; each recorded,
//! replayed `identical`, forked at a user turn or an approval, graded by
//! `[expect.conversation]`. An agent that imports none of it still loads.

use crate::common;

use common::{CliOutput, guest, prompt, read_bundle, temp_dir, wl, worlds_dir, write_case};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const SAY: &str = "worldline:agent/user.say";
const APPROVAL: &str = "worldline:agent/approval.request";

fn talker() -> PathBuf {
    guest("talker-agent")
}

/// `worldline run CASE --agent talker --worlds tests/worlds --json`.
fn run(store: &Path, case: &Path) -> CliOutput {
    common::run_in(store, case, &talker(), &worlds_dir())
}

fn run_id(out: &CliOutput) -> String {
    out.json()["run_id"].as_str().expect("run_id").to_string()
}

fn output(out: &CliOutput) -> Value {
    serde_json::from_str(out.json()["output"].as_str().unwrap_or("null"))
        .unwrap_or_else(|e| panic!("output is not JSON ({e}):\n{out}"))
}

fn failed_checks(out: &CliOutput) -> Vec<String> {
    out.json()["grade"]["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["passed"] == false)
        .map(|a| a["what"].as_str().unwrap().to_string())
        .collect()
}

const SUPPORT_USER: &str = r#"
[user]
default = "Sorry, what?"
max_turns = 4
latency_ms = 1500

[[user.rules]]
turn = 1
reply = "T-1 please"

[[user.rules]]
contains = "SHALL I CLOSE"
reply = "No, leave it open."

[[user.rules]]
contains = "goodbye"
end = "all sorted"
satisfied = true
"#;

fn talk_case(dir: &Path, name: &str, steps: &str, until_ended: bool, more: &str) -> PathBuf {
    write_case(
        dir,
        name,
        &format!(
            "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = {{ steps = [{steps}], until_ended = {until_ended} }}\n{more}"
        ),
    )
}

#[test]
fn a_scripted_user_answers_by_rule_turn_and_default_recorded_and_replayed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = talk_case(
        dir.path(),
        "talk",
        r#"{say = "Hello, which ticket?"}, {say = "Shall I close T-1?"}, {say = "Anything else?"}, {say = "Goodbye then!"}, {say = "Still there?"}"#,
        false,
        &format!(
            "{SUPPORT_USER}\n[expect.conversation]\nsatisfied = true\nmax_turns = 5\n[[expect.conversation.said]]\nregex = '^hello'\ncase_insensitive = true\n[[expect.conversation.said]]\ncontains = 'Close'\nlast = true\nabsent = true\n"
        ),
    );
    let out = run(&store, &case);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "passed", "{out}");
    assert_eq!(
        output(&out),
        json!([
            {"reply": "T-1 please"},
            {"reply": "No, leave it open."},
            {"reply": "Sorry, what?"},
            {"ended": "all sorted", "satisfied": true},
            {"ended": "all sorted", "satisfied": true},
        ])
    );
    // One event per turn: the agent's message, the user's line, the turn
    // and what answered, at the virtual time the user took.
    let events: Vec<Value> = read_bundle(&out.bundle())
        .events
        .into_iter()
        .filter(|e| e["call"] == SAY)
        .collect();
    assert_eq!(events.len(), 5);
    assert_eq!(
        events[0]["request"],
        json!({"message": "Hello, which ticket?"})
    );
    assert_eq!(
        events[0]["response"]["user"],
        json!({"turn": 1, "by": {"rule": 0}})
    );
    assert_eq!(
        events[2]["response"]["user"]["by"],
        json!({"default": true})
    );
    assert_eq!(
        events[3]["response"]["ended"],
        json!({"reason": "all sorted", "satisfied": true})
    );
    assert_eq!(
        events[4]["response"]["user"]["by"],
        json!({"already_ended": true})
    );
    let t = |i: usize| events[i]["vtime_ns"].as_u64().unwrap();
    assert!(t(1) - t(0) >= 1_500_000_000, "the user takes 1.5 s a turn");

    common::replays_identical(&store, &run_id(&out));
    let history = wl(&store, &[&"history", &run_id(&out)]);
    history.expect_code(0);
    assert!(
        history
            .stdout
            .contains("agent: Shall I close T-1? -> user: No, leave it open."),
        "{history}"
    );
    assert!(
        history
            .stdout
            .contains("agent: Goodbye then! -> user ended (satisfied): all sorted"),
        "{history}"
    );
}

#[test]
fn the_turn_limit_ends_the_conversation_and_the_grade_says_why() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = talk_case(
        dir.path(),
        "limit",
        r#"{say = "Hello, which ticket?"}, {say = "Hmm?"}"#,
        true,
        &format!(
            "{SUPPORT_USER}\n[expect.conversation]\nsatisfied = true\nmax_turns = 3\n[[expect.conversation.said]]\nany_of = ['refund', 'invoice']\n"
        ),
    );
    let out = run(&store, &case);
    out.expect_code(1);
    let answers = output(&out);
    let last = answers.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last, json!({"ended": "turn limit", "satisfied": false}));
    // The user answered 4 messages; the 5th met the limit.
    assert_eq!(answers.as_array().unwrap().len(), 5);
    assert_eq!(
        failed_checks(&out),
        [
            "agent said any of [\"refund\", \"invoice\"]",
            "conversation turns at most",
            "user ended satisfied"
        ]
    );
    common::replays_identical(&store, &run_id(&out));
}

#[test]
fn weighted_alternatives_follow_the_seed_and_replay() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let user = r#"
[user]
[[user.rules]]
contains = "confirm"
alternatives = [{weight = 1, reply = "yes"}, {weight = 1, reply = "no"}]
"#;
    let steps = [r#"{say = "Please confirm"}"#; 12].join(", ");
    let picks = |seed: u64| {
        let case = write_case(
            dir.path(),
            &format!("seed{seed}"),
            &format!(
                "world = \"demo@v1\"\nseed = {seed}\nclock = 2026-03-01T12:00:00Z\ntask = {{ steps = [{steps}] }}\n{user}"
            ),
        );
        let out = run(&store, &case);
        out.expect_code(0);
        common::replays_identical(&store, &run_id(&out));
        output(&out)
    };
    let a = picks(1);
    assert_eq!(a, picks(1), "the same seed, the same user");
    assert_ne!(a, picks(2), "another seed, another user");
    let text = a.to_string();
    assert!(
        text.contains("\"yes\"") && text.contains("\"no\""),
        "{text}"
    );
}

#[test]
fn a_fork_at_a_user_turn_gives_the_user_another_line_and_replays() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = talk_case(
        dir.path(),
        "fork",
        r#"{say = "Hello, which ticket?"}, {say = "Shall I close T-1?"}"#,
        true,
        &format!("{SUPPORT_USER}\n[expect.conversation]\nsatisfied = true\n"),
    );
    let out = run(&store, &case);
    out.expect_code(1);
    assert_eq!(failed_checks(&out), ["user ended satisfied"]);
    let parent = run_id(&out);
    let events = read_bundle(&out.bundle()).events;
    let at = events
        .iter()
        .position(|e| e["request"]["message"] == "Shall I close T-1?")
        .unwrap();

    // A plain string is the user's reply.
    let f = wl(
        &store,
        &[
            &"fork",
            &parent,
            &"--at",
            &at.to_string(),
            &"--respond",
            &"\"Yes, close it\"",
            &"--json",
        ],
    );
    f.expect_code(1);
    assert_eq!(output(&f)[1], json!({"reply": "Yes, close it"}));
    common::replays_identical(&store, &run_id(&f));

    // An `ended` object ends the conversation there: the outcome changes.
    let f = wl(
        &store,
        &[
            &"fork",
            &parent,
            &"--at",
            &at.to_string(),
            &"--respond",
            &r#"{"ended": {"reason": "thanks, that is all", "satisfied": true}}"#,
            &"--json",
        ],
    );
    f.expect_code(0);
    assert_eq!(f.json()["status"], "passed", "{f}");
    assert_eq!(
        output(&f)[1],
        json!({"ended": "thanks, that is all", "satisfied": true})
    );
    let forked = read_bundle(&f.bundle()).events;
    assert_eq!(
        forked[..at],
        events[..at],
        "the fork follows its parent up to N"
    );
    assert_eq!(forked[at]["injected"], json!({"action": "fork-respond"}));
    common::replays_identical(&store, &run_id(&f));
}

const APPROVALS: &str = r#"
[permissions]
ask = ["close_ticket"]

[[approve]]
kind = "refund"
path = "$.amount"
equals = 20
decision = "approve"
latency_ms = 60000

[[approve]]
kind = "refund"
decision = "deny"
reason = "over the refund limit"

[[approve]]
kind = "tool"
path = "$.tool"
equals = "close_ticket"
decision = "deny"
reason = "tickets stay open over the weekend"
"#;

#[test]
fn approvals_follow_the_rules_and_ask_tools_cannot_be_skipped() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = talk_case(
        dir.path(),
        "approve",
        r#"{approve = "refund", details = {amount = 20}}, {approve = "refund", details = {amount = 90}}, {approve = "cancel", details = {}}, {call = "close_ticket", args = {id = "T-1"}}, {call = "get_ticket", args = {id = "T-1"}}"#,
        false,
        &format!(
            "{APPROVALS}\n[expect]\nunchanged = [\"tickets\"]\n[expect.conversation]\napproval_before = [\"close_ticket\"]\n"
        ),
    );
    let out = run(&store, &case);
    out.expect_code(1);
    let answers = output(&out);
    assert_eq!(answers[0], json!({"approved": true}));
    assert_eq!(answers[1], json!({"denied": "over the refund limit"}));
    assert_eq!(
        answers[2],
        json!({"denied": "no [[approve]] rule matched this request"})
    );
    assert_eq!(answers[3]["error"], "denied");
    assert!(
        answers[3]["message"]
            .as_str()
            .unwrap()
            .contains("tickets stay open over the weekend"),
        "{answers}"
    );
    assert_eq!(answers[4]["ok"]["status"], "open");
    // The host asked before the call (one event), and the agent never did.
    assert_eq!(
        failed_checks(&out),
        ["approval asked before every close_ticket call"]
    );
    let events = read_bundle(&out.bundle()).events;
    let asked = events
        .iter()
        .position(|e| e["call"] == APPROVAL && e["request"]["by"] == "host")
        .unwrap();
    assert_eq!(
        events[asked]["request"]["details"],
        json!({"tool": "close_ticket", "args": {"id": "T-1"}})
    );
    assert_eq!(events[asked]["effect"], "denied");
    assert_eq!(events[asked + 1]["call"], "worldline:agent/tools.call");
    assert!(
        events[1]["vtime_ns"].as_u64().unwrap() - events[0]["vtime_ns"].as_u64().unwrap()
            < 1_000_000_000
            && events[0]["vtime_ns"].as_u64().unwrap() >= 60_000_000_000,
        "the approver took a virtual minute on the first request"
    );
    common::replays_identical(&store, &run_id(&out));

    // A fork flips the host's approval: now the close goes through.
    let f = wl(
        &store,
        &[
            &"fork",
            &run_id(&out),
            &"--at",
            &asked.to_string(),
            &"--respond",
            &"\"approved\"",
            &"--json",
        ],
    );
    f.expect_code(1);
    let answers = output(&f);
    assert_eq!(answers[3]["ok"]["status"], "closed", "{answers}");
    assert_eq!(answers[4]["ok"]["status"], "closed");
    assert!(
        failed_checks(&f).contains(&"unchanged tickets".to_string()),
        "{f}"
    );
    common::replays_identical(&store, &run_id(&f));

    // And one that denies the agent's first approval records it `denied`,
    // as a rule's denial is (it was `read`).
    let first = events.iter().position(|e| e["call"] == APPROVAL).unwrap();
    let f = wl(
        &store,
        &[
            &"fork",
            &run_id(&out),
            &"--at",
            &first.to_string(),
            &"--respond",
            &r#"{"denied": "not today"}"#,
            &"--json",
        ],
    );
    let forked = read_bundle(&f.bundle()).events;
    assert_eq!(forked[first]["effect"], "denied", "{f}");
    common::replays_identical(&store, &run_id(&f));
}

#[test]
fn an_agent_that_imports_no_conversation_still_loads_and_runs() {
    let engine = wasmtime::Engine::default();
    let imports = |path: &Path| -> Vec<String> {
        let c = wasmtime::component::Component::from_file(&engine, path).unwrap();
        c.component_type()
            .imports(&engine)
            .map(|(n, _)| n.to_string())
            .collect()
    };
    let probe = guest("probe-agent");
    let old = imports(&probe);
    assert!(
        !old.iter()
            .any(|i| i.contains("worldline:agent/user") || i.contains("worldline:agent/approval")),
        "{old:?}"
    );
    assert!(
        imports(&talker()).contains(&"worldline:agent/user@0.1.0".to_string()),
        "the talker imports the user"
    );
    let store = temp_dir();
    let out = common::run_json(store.path(), &common::case("probe"), &probe);
    out.expect_code(0);
    assert_eq!(out.json()["run_status"], "completed", "{out}");
}

#[test]
fn bad_user_and_approval_tables_are_refused_with_where_and_what_to_do() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    for (name, more, said) in [
        (
            "two",
            "[user]\n[[user.rules]]\nreply = 'a'\nend = 'b'\n",
            "[[user.rules]] #1: give `reply` or `end`, not both",
        ),
        (
            "model",
            "[user]\nplayed_by = 'model'\n",
            "needs a [user.model] table",
        ),
        (
            "approve",
            "[[approve]]\nequals = 3\ndecision = 'deny'\n",
            "[[approve]]: `equals` needs a `path`",
        ),
        (
            "ask",
            "[permissions]\nask = ['no_such_tool']\n",
            "rule `no_such_tool` names no tool",
        ),
        (
            "said",
            "[expect.conversation]\n[[expect.conversation.said]]\nregex = '('\n",
            "conversation.said #1: regex `(`",
        ),
    ] {
        let case = talk_case(dir.path(), name, r#"{say = "hi"}"#, false, more);
        let out = run(&store, &case);
        out.expect_code(2);
        assert!(out.stderr.contains(said), "{name}: {out}");
        assert!(
            out.stderr.contains(&format!("{name}.toml:")),
            "{name}: {out}"
        );
    }
}

/// A regular expression that does not compile, in `[[expect.conversation.said]]`
/// or `[[user.rules]]`, is said on one line, at its place, with the
/// column in the pattern: the regex crate's account drew the pattern over
/// four lines.
#[test]
fn a_bad_regex_is_refused_on_one_line() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    for (name, more, said) in [
        (
            "said",
            "[expect.conversation]\n[[expect.conversation.said]]\nregex = '(unclosed'\n",
            "conversation.said #1: regex `(unclosed`: regex parse error: unclosed group (at column 1)",
        ),
        (
            "rule",
            "[user]\n[[user.rules]]\nregex = 'a[b'\nreply = 'x'\n",
            "regex `a[b`: regex parse error: unclosed character class (at column 2)",
        ),
    ] {
        let case = talk_case(dir.path(), name, r#"{say = "hi"}"#, false, more);
        let worlds = worlds_dir();
        let check = prompt(
            &store,
            &[
                "check",
                case.to_str().unwrap(),
                "--worlds",
                worlds.to_str().unwrap(),
            ],
        );
        check.expect_code(2);
        let line = (check.stdout.lines())
            .find(|l| l.contains(said))
            .unwrap_or_else(|| panic!("{name}: {check}"));
        assert!(
            line.starts_with(&format!("{}:", case.display())),
            "{name}: {check}"
        );
        assert!(!check.stdout.contains("\n    ^"), "{name}: {check}");
        let out = run(&store, &case);
        out.expect_code(2);
        assert_eq!(out.stderr.trim_end().lines().count(), 1, "{name}: {out}");
        assert!(out.stderr.contains(said), "{name}: {out}");
    }
}

// --- a user played by a model behind an OpenAI-compatible server ----------

/// A tiny OpenAI-compatible server on loopback: answers each request with
/// the next of `lines` as the completion's content; keeps the bodies.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Value>>>,
}

fn serve(lines: Vec<&'static str>) -> Server {
    let (url, seen) = common::chat::serve(lines.into_iter().map(common::chat::said).collect());
    Server { url, seen }
}

#[test]
fn a_model_played_user_is_recorded_and_replays_with_the_endpoint_gone() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let server = serve(vec!["It's T-1.", "[SATISFIED] Great, thanks!"]);
    let case = talk_case(
        dir.path(),
        "model-user",
        r#"{say = "Which ticket is it?"}, {say = "Closed it. Anything else?"}, {say = "Hello?"}"#,
        false,
        &format!(
            "[user]\nplayed_by = \"model\"\npersona = \"You are Ana; ticket T-1 is yours.\"\n[user.model]\nprovider = \"openai\"\nmodel = \"local-user-sim\"\nbase_url = \"{}\"\nretries = 0\n[expect.conversation]\nsatisfied = true\n",
            server.url
        ),
    );
    let out = run(&store, &case);
    out.expect_code(0);
    assert_eq!(
        output(&out),
        json!([
            {"reply": "It's T-1."},
            {"ended": "Great, thanks!", "satisfied": true},
            {"ended": "Great, thanks!", "satisfied": true},
        ])
    );
    // The model saw the persona and the agent's side as the `user` role.
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "the ended user is not asked again");
    let second = &seen[1]["messages"];
    assert_eq!(second[0]["role"], "system");
    assert!(
        second[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You are Ana")
    );
    assert_eq!(
        second[1],
        json!({"role": "user", "content": "Which ticket is it?"})
    );
    assert_eq!(
        second[2],
        json!({"role": "assistant", "content": "It's T-1."})
    );
    assert_eq!(second[3]["content"], "Closed it. Anything else?");
    let events = read_bundle(&out.bundle()).events;
    let by = &events[0]["response"]["user"]["by"]["model"];
    assert_eq!(by["provider"], "openai", "{by}");
    assert_eq!(by["model"], "local-user-sim", "{by}");

    // The server has answered all it will: a replay must not ask it.
    common::replays_identical(&store, &run_id(&out));
    // And neither does a fork after the model's turns.
    let f = wl(
        &store,
        &[
            &"fork",
            &run_id(&out),
            &"--at",
            &"2",
            &"--respond",
            &"\"Hello yourself\"",
            &"--json",
        ],
    );
    f.expect_code(0);
    assert_eq!(output(&f)[2], json!({"reply": "Hello yourself"}));
    common::replays_identical(&store, &run_id(&f));
}

/// A model-played user with a scripted stand-in (decision 0386): with no
/// model configured the stand-in plays, each turn saying so, and a case
/// made from that run keeps the stand-in as a scripted user;
/// `--user-model-set` configures the model (here the scripted provider),
/// recorded in the header and applied again by the replay.
#[test]
fn a_model_played_users_stand_in_plays_until_a_model_is_configured() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = talk_case(
        dir.path(),
        "stand-in",
        r#"{say = "Which ticket is it?"}, {say = "Done. Anything else?"}"#,
        false,
        "[user]\nplayed_by = \"model\"\npersona = \"You are Ana; ticket T-1 is yours.\"\ndefault = \"No, thanks.\"\n[[user.rules]]\ncontains = \"ticket\"\nreply = \"It's T-1.\"\n",
    );
    let offline = run(&store, &case);
    offline.expect_code(0);
    assert_eq!(
        output(&offline),
        json!([{"reply": "It's T-1."}, {"reply": "No, thanks."}])
    );
    let bundle = read_bundle(&offline.bundle());
    assert!(bundle.header.get("user_model_overrides").is_none());
    let by: Vec<&Value> = bundle
        .events
        .iter()
        .filter(|e| e["call"] == "worldline:agent/user.say")
        .map(|e| &e["response"]["user"]["by"])
        .collect();
    assert_eq!(
        by,
        [
            &json!({"rule": 0, "stand_in": true}),
            &json!({"default": true, "stand_in": true})
        ]
    );
    common::replays_identical(&store, &run_id(&offline));
    let history = wl(&store, &[&"history", &run_id(&offline)]);
    assert!(
        history.stdout.contains("[stand-in {\"rule\":0}]"),
        "{history}"
    );
    let made = dir.path().join("from-stand-in.toml");
    wl(
        &store,
        &[&"case", &"from-run", &run_id(&offline), &"-o", &made],
    )
    .expect_code(0);
    let doc: toml::Table = toml::from_str(&std::fs::read_to_string(&made).unwrap()).unwrap();
    assert_eq!(doc["user"]["played_by"].as_str(), Some("scripted"), "{doc}");
    assert_eq!(
        doc["user"]["default"].as_str(),
        Some("No, thanks."),
        "{doc}"
    );
    assert!(doc["user"].get("persona").is_none(), "{doc}");

    let live = wl(
        &store,
        &[
            &"run",
            &case,
            &"--agent",
            &talker(),
            &"--worlds",
            &worlds_dir(),
            &"--json",
            &"--user-model-set",
            &r#"responses=["Mine is T-1.", "[SATISFIED] Bye."]"#,
        ],
    );
    live.expect_code(0);
    assert_eq!(
        output(&live),
        json!([{"reply": "Mine is T-1."}, {"ended": "Bye.", "satisfied": true}])
    );
    let header = read_bundle(&live.bundle()).header;
    assert_eq!(
        header["user_model_overrides"]["responses"],
        r#"["Mine is T-1.", "[SATISFIED] Bye."]"#
    );
    common::replays_identical(&store, &run_id(&live));
    // A scripted user takes no user model: nothing applied or recorded.
    let scripted = talk_case(
        dir.path(),
        "scripted",
        r#"{say = "Hi"}"#,
        false,
        "[user]\ndefault = \"Hello.\"\n",
    );
    let out = wl(
        &store,
        &[
            &"run",
            &scripted,
            &"--agent",
            &talker(),
            &"--worlds",
            &worlds_dir(),
            &"--json",
            &"--user-model-set",
            &"provider=openai",
        ],
    );
    out.expect_code(0);
    assert!(
        read_bundle(&out.bundle())
            .header
            .get("user_model_overrides")
            .is_none()
    );
}

// --- the support examples ----------------------------------------------------

fn support_suite(
    store: &Path,
    agent: &str,
) -> (CliOutput, std::collections::BTreeMap<String, Value>) {
    let wasm = guest(agent);
    let cases = common::workspace_root().join("cases/support");
    let out = wl(store, &[&"test", &cases, &"--agent", &wasm, &"--json"]);
    let by_case = out.json()["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| (c["case"].as_str().unwrap().to_string(), c.clone()))
        .collect();
    (out, by_case)
}

#[test]
fn the_support_examples_pass_careful_and_fail_naive_for_their_reasons_and_replay() {
    let dir = temp_dir();
    let store = dir.path();
    let (out, careful) = support_suite(store, "careful-agent");
    out.expect_code(0);
    assert!(careful.len() >= 9, "{}", careful.len());
    let (out, naive) = support_suite(store, "naive-agent");
    out.expect_code(1);
    let reason = |name: &str| naive[name]["reason"].as_str().unwrap_or("").to_string();
    for (case, why) in [
        // It never confirms.
        (
            "support/refund-confirmed",
            "agent said any of [\"to confirm\", \"shall i\"]",
        ),
        // It guesses the newest order instead of asking.
        ("support/missing-order", "orders/A-1002.status equals"),
        ("support/model-user", "orders/A-1002.status equals"),
        // It refunds without a yes.
        ("support/never-confirms", "unchanged orders"),
        ("support/changes-mind", "unchanged orders"),
        // It cancels a delivered order.
        ("support/cancel-delivered", "orders/A-1001.status equals"),
        // It refunds over the limit without asking a supervisor.
        ("support/approval-denied", "unchanged orders"),
        (
            "support/approval-granted",
            "approval asked before every refund_order call",
        ),
        // It tells the customer a denied cancellation went through.
        (
            "support/cancel-needs-approval",
            "agent last message contains \"couldn't cancel\"",
        ),
    ] {
        assert_eq!(
            careful[case]["status"], "passed",
            "{case}: {}",
            careful[case]
        );
        assert!(reason(case).contains(why), "{case}: {}", reason(case));
    }
    // Every conversation replays identical.
    let verify = wl(store, &[&"verify", &"--json"]);
    verify.expect_code(0);
    assert_eq!(
        verify.json()["identical"],
        verify.json()["replayed"],
        "{verify}"
    );
    assert_eq!(verify.json()["diverged"], 0, "{verify}");

    // A fork at the confirmation turn with another reply changes the outcome.
    let run = careful["support/refund-confirmed"]["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let bundle = common::bundle_in(store, &run);
    let at = read_bundle(&bundle)
        .events
        .iter()
        .position(|e| {
            e["call"] == SAY
                && e["request"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("To confirm")
        })
        .unwrap();
    let f = wl(
        store,
        &[
            &"fork",
            &run,
            &"--at",
            &at.to_string(),
            &"--respond",
            &"\"No, I'll keep it after all.\"",
            &"--json",
        ],
    );
    f.expect_code(1);
    assert!(
        failed_checks(&f).contains(&"orders/A-1001.status equals".to_string()),
        "{f}"
    );
    common::replays_identical(store, &run_id(&f));
}

// --- fuzzing the user's side ------------------------------------------------

#[test]
fn user_side_faults_are_drawn_shrunk_and_reproduced() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = talk_case(
        dir.path(),
        "fuzz-user",
        r#"{say = "Hello, which ticket?"}, {approve = "close", details = {id = "T-1"}}, {say = "Shall I close T-1?"}, {say = "Goodbye!"}"#,
        false,
        r#"
[user]
default = "Sorry?"
[[user.rules]]
contains = "goodbye"
end = "all sorted"
satisfied = true

[[approve]]
decision = "approve"

[expect.conversation]
satisfied = true

[fuzz.user]
silent = 0.2
reply = { p = 0.3, with = ["No.", "What?"] }
deny_approvals = 0.5
latency_ms = { p = 0.5, ms = [100, 60000] }
"#,
    );
    let worlds = worlds_dir();
    let agent = talker();
    let out = wl(
        &store,
        &[
            &"fuzz",
            &case,
            &"--agent",
            &agent,
            &"--worlds",
            &worlds,
            &"--runs",
            &"40",
            &"--shrink",
            &"--json",
        ],
    );
    out.expect_code(1);
    let r = out.json();
    let failed = r["summary"]["failed"].as_u64().unwrap();
    assert!((10..40).contains(&failed), "{failed} of 40 failed\n{out}");
    let g = &r["groups"][0];
    assert_eq!(g["signature"], "failed: user ended satisfied");
    let mix = g["fault_mix"].to_string();
    for fault in [
        "user.say latency",
        "user.say silent",
        "user.say reply",
        "approval.request deny",
    ] {
        assert!(mix.contains(fault), "{fault} in {mix}");
    }
    // One user fault is enough; the latencies and denials are not needed.
    let faults = g["reproducer"]["faults"]["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 1, "{g}");
    assert_eq!(faults[0]["tool"], "user.say");
    assert!(
        faults[0]["action"] == "empty" || faults[0]["action"].get("respond").is_some(),
        "{g}"
    );
    let words = g["shrunk"]["words"].as_str().unwrap();
    assert!(
        words.contains("goes silent") || words.contains("instead"),
        "{words}"
    );
    // The reproducer replays, and `repro` re-runs the shrunk schedule.
    let id = g["reproducer"]["run_id"].as_str().unwrap();
    common::replays_identical(&store, id);
    let events = read_bundle(Path::new(g["reproducer"]["bundle"].as_str().unwrap())).events;
    assert!(
        events
            .iter()
            .any(|e| e["call"] == SAY && e["injected"]["fuzz"]["tool"] == "user.say"),
        "the user fault is marked on its turn"
    );
    let repro = wl(&store, &[&"repro", &id, &"--times", &"5", &"--json"]);
    assert_eq!(
        repro.json()["outcome"],
        "failed: user ended satisfied",
        "{repro}"
    );
    assert_eq!(repro.json()["reproduced"], 5, "{repro}");
}

/// `export --format trajectories` of a run with a simulated user and no
/// model calls holds the conversation: each of the agent's lines an
/// assistant message, each reply (and the parting words) a user message,
/// between its tool calls. It held only the tool calls.
#[test]
fn a_conversation_s_trajectory_holds_what_each_side_said() {
    let dir = temp_dir();
    let store = dir.path();
    let case = common::workspace_root().join("cases/support/model-user.toml");
    let out = common::run_json(store, &case, &guest("careful-agent"));
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let file = dir.path().join("t.jsonl");
    let args: [&dyn AsRef<std::ffi::OsStr>; 6] =
        [&"export", &run, &"--format", &"trajectories", &"-o", &file];
    wl(store, &args).expect_code(0);
    let line: Value = serde_json::from_str(std::fs::read_to_string(&file).unwrap().trim()).unwrap();
    let said: Vec<(String, String)> = (line["messages"].as_array().unwrap().iter())
        .filter(|m| {
            m["content"].is_string() && m.get("tool_calls").is_none() && m["role"] != "tool"
        })
        .map(|m| {
            (
                m["role"].as_str().unwrap().into(),
                m["content"].as_str().unwrap().into(),
            )
        })
        .collect();
    let roles: Vec<&str> = said.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        [
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user"
        ],
        "{said:?}"
    );
    assert_eq!(said[1].1, "It is order A-1002.", "{said:?}");
    let tools = (line["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "tool")
        .count();
    assert_eq!(tools, 2, "{line}");
    // The ATIF document says the same turns, each user step with its
    // event's seq and time (they had no time) and the parting words as
    // its message (it was empty).
    let args: [&dyn AsRef<std::ffi::OsStr>; 6] =
        [&"export", &run, &"--format", &"atif", &"-o", &file];
    wl(store, &args).expect_code(0);
    let doc: Value = serde_json::from_str(std::fs::read_to_string(&file).unwrap().trim()).unwrap();
    let users: Vec<&Value> = (doc["steps"].as_array().unwrap().iter())
        .filter(|s| s["source"] == "user" && s["extra"]["agent_said"].is_string())
        .collect();
    let replies: Vec<&str> = said
        .iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t.as_str())
        .collect();
    let messages: Vec<&str> = users
        .iter()
        .map(|s| s["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages, replies, "{doc}");
    for step in users {
        assert!(step["extra"]["vtime_ns"].is_u64(), "{step}");
    }
}

/// A `--respond` at a user turn or an approval that the agent could not be
/// given as it is written is refused before anything runs, no run
/// written: `{"reply": 5}` was recorded, then refused as the run was
/// written (an incomplete run left, blamed on the store), and
/// `{"approved": false}` was listed as approved while the agent was
/// denied. An end without `satisfied` makes a case (`case from-run` was
/// an internal error, exit 4).
#[test]
fn a_fork_s_answer_to_a_user_or_an_approval_is_typed_as_the_agent_gets_it() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = talk_case(
        dir.path(),
        "typed",
        r#"{say = "Hello, which ticket?"}, {say = "Shall I close T-1?"}"#,
        true,
        &format!("{SUPPORT_USER}\n[expect.conversation]\nsatisfied = true\n"),
    );
    let out = run(&store, &case);
    let parent = run_id(&out);
    let events = read_bundle(&out.bundle()).events;
    let at = events
        .iter()
        .position(|e| e["request"]["message"] == "Shall I close T-1?")
        .unwrap()
        .to_string();
    let count = || std::fs::read_dir(store.join("runs")).unwrap().count();
    let before = count();
    for bad in [
        r#"{"reply": 5}"#,
        r#"{"ended": "bye"}"#,
        r#"{"reply": "x", "extra": 1}"#,
        r#"{"ended": {"reason": 3}}"#,
        r#"{"approved": false}"#,
    ] {
        let f = wl(
            &store,
            &[
                &"fork",
                &parent,
                &"--at",
                &at,
                &"--respond",
                &bad,
                &"--json",
            ],
        );
        f.expect_code(2);
        assert_eq!(f.json()["error"]["file"], "--respond", "{bad}: {f}");
        assert_eq!(count(), before, "{bad}: a run was written");
    }
    // A model-played user's turns become scripted rules, the fork's end
    // among them.
    let played = talk_case(
        dir.path(),
        "played",
        r#"{say = "Which ticket is it?"}, {say = "Done. Anything else?"}"#,
        false,
        "[user]\nplayed_by = \"model\"\npersona = \"You are Ana.\"\n[user.model]\nprovider = \"scripted\"\nresponses = [\"It's T-1.\", \"No, thanks.\"]\n",
    );
    let out = run(&store, &played);
    out.expect_code(0);
    let events = read_bundle(&out.bundle()).events;
    let at = events
        .iter()
        .position(|e| e["request"]["message"] == "Done. Anything else?")
        .unwrap()
        .to_string();
    let f = wl(
        &store,
        &[
            &"fork",
            &run_id(&out),
            &"--at",
            &at,
            &"--respond",
            &r#"{"ended": {"reason": "bye"}}"#,
            &"--json",
        ],
    );
    f.expect_code(0);
    let made = dir.path().join("regress.toml");
    let c = wl(
        &store,
        &[&"case", &"from-run", &run_id(&f), &"-o", &made, &"--json"],
    );
    c.expect_code(0);
    let text = std::fs::read_to_string(&made).unwrap();
    assert!(text.contains("satisfied = false"), "{text}");
}

// --- approvals in the exports ------------------------------------------------

/// A span as the tests read it: its name and its attributes' string
/// values.
pub(crate) type Spanned = (String, std::collections::BTreeMap<String, String>);

/// The spans of an `otel -o FILE` export.
pub(crate) fn otel_spans(file: &Path) -> Vec<Spanned> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use prost::Message as _;
    let bytes = std::fs::read(file).unwrap();
    let req = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::decode(
        bytes.as_slice(),
    )
    .expect("an OTLP export");
    (req.resource_spans.iter())
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|s| {
            let attrs = (s.attributes.iter())
                .filter_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
                    Any::StringValue(v) => Some((kv.key.clone(), v.clone())),
                    _ => None,
                })
                .collect();
            (s.name.clone(), attrs)
        })
        .collect()
}

/// A run's trajectories line, ATIF document and OTel spans.
fn exports(store: &Path, run: &str) -> (Value, Value, Vec<Spanned>) {
    let dir = temp_dir();
    let (t, a, o) = (
        dir.path().join("t.jsonl"),
        dir.path().join("a.json"),
        dir.path().join("o.pb"),
    );
    for (format, file) in [("trajectories", &t), ("atif", &a)] {
        wl(store, &[&"export", &run, &"--format", &format, &"-o", file]).expect_code(0);
    }
    wl(store, &[&"otel", &run, &"-o", &o]).expect_code(0);
    let read = |p: &Path| -> Value {
        serde_json::from_str(std::fs::read_to_string(p).unwrap().trim()).unwrap()
    };
    (read(&t), read(&a), otel_spans(&o))
}

/// An approval the agent asked and was denied (the support example's
/// `approval-denied`: the user says "Yes.", the supervisor says no) is
/// in the trajectories line (`approvals`, and between the user's "Yes."
/// and the agent's reply a call of `approval_request` answered with the
/// denial and its reason), in the ATIF document (a step of its own) and
/// in OTel (an `approval refund` span): the three went from "Yes." to the
/// agent's reply with nothing between.
#[test]
fn an_approval_the_agent_asked_is_in_every_export() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = common::workspace_root().join("cases/support/approval-denied.toml");
    let worlds = common::workspace_root().join("worlds");
    let out = common::run_in(&store, &case, &guest("careful-agent"), &worlds);
    out.expect_code(0);
    let run = run_id(&out);
    let reason = "the repair service must inspect it first";
    let (traj, atif, spans) = exports(&store, &run);

    let approvals = traj["approvals"].as_array().expect("approvals");
    assert_eq!(approvals.len(), 1, "{traj}");
    let a = &approvals[0];
    assert_eq!(
        (&a["kind"], &a["asked_by"], &a["decision"], &a["reason"]),
        (
            &json!("refund"),
            &json!("agent"),
            &json!("denied"),
            &json!(reason)
        ),
        "{traj}"
    );
    assert_eq!(a["details"]["order"], "B-2001", "{traj}");
    let messages = traj["messages"].as_array().unwrap();
    let yes = messages
        .iter()
        .position(|m| m["role"] == "user" && m["content"] == "Yes.")
        .expect("the user's yes");
    let asked = &messages[yes + 1];
    assert_eq!(
        asked["tool_calls"][0]["function"]["name"], "approval_request",
        "{traj}"
    );
    let answer = &messages[yes + 2];
    assert_eq!(answer["role"], "tool", "{traj}");
    assert_eq!(
        answer["tool_call_id"], asked["tool_calls"][0]["id"],
        "{traj}"
    );
    assert!(
        answer["content"].as_str().unwrap().contains(reason),
        "{traj}"
    );

    let steps = atif["steps"].as_array().unwrap();
    let step = steps
        .iter()
        .find(|s| s["extra"].get("approval").is_some())
        .unwrap_or_else(|| panic!("no approval step: {atif}"));
    assert_eq!(step["source"], "agent", "{step}");
    assert_eq!(step["llm_call_count"], 0, "{step}");
    assert_eq!(step["tool_calls"][0]["function_name"], "approval_request");
    assert_eq!(step["extra"]["approval"]["reason"], reason, "{step}");
    assert!(
        step["observation"]["results"][0]["content"]
            .as_str()
            .unwrap()
            .contains(reason),
        "{step}"
    );

    let approval: Vec<_> = spans
        .iter()
        .filter(|(n, _)| n == "approval refund")
        .collect();
    assert_eq!(approval.len(), 1, "{spans:?}");
    let attrs = &approval[0].1;
    assert_eq!(attrs["worldline.approval.asked_by"], "agent");
    assert_eq!(attrs["worldline.approval.decision"], "denied");
    assert_eq!(attrs["worldline.approval.reason"], reason);
    assert_eq!(attrs["worldline.effect"], "denied");
}

/// The incident scenario of the conformance tests (whose host asks the
/// approval rules before `add_incident_note`: approved) with its close
/// asked of them too, not denied by a rule: denied, with a reason.
pub(crate) fn host_asked_scenario(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(crate::conformance::scenario()).unwrap();
    let edits = [
        ("[[inject]]\ntool = \"close_ticket\"\ndeny = true\n", ""),
        (
            "ask = [\"add_incident_note\"]\n",
            "ask = [\"add_incident_note\", \"close_ticket\"]\n",
        ),
        (
            "[[approve]]\nkind = \"tool\"\ndecision = \"approve\"\n",
            "[[approve]]\nkind = \"tool\"\npath = \"$.tool\"\nequals = \"close_ticket\"\ndecision = \"deny\"\nreason = \"a human closes tickets\"\n\n[[approve]]\nkind = \"tool\"\ndecision = \"approve\"\n",
        ),
    ];
    let mut asked = text;
    for (from, to) in edits {
        assert!(asked.contains(from), "the scenario changed: {from}");
        asked = asked.replacen(from, to, 1);
    }
    write_case(dir, "asked", &asked)
}

/// Approvals the host asked before tools whose permission is `ask`, in a
/// run whose agent asks a model: each in the trajectories line's
/// `approvals` (the messages are the model's), an ATIF `system` step
/// that leaves the tool call it came before the result of the model step
/// that asked for it, and an OTel span.
#[test]
fn approvals_the_host_asked_of_a_model_agent_are_in_every_export() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = host_asked_scenario(dir.path());
    let worlds = common::workspace_root().join("worlds");
    let out = common::run_in(&store, &case, &guest("model-agent"), &worlds);
    out.expect_code(0);
    let run = run_id(&out);
    let (traj, atif, spans) = exports(&store, &run);

    let approvals = traj["approvals"].as_array().expect("approvals");
    let seen: Vec<(&Value, &Value, &Value)> = approvals
        .iter()
        .map(|a| (&a["details"]["tool"], &a["asked_by"], &a["decision"]))
        .collect();
    assert_eq!(
        seen,
        [
            (
                &json!("add_incident_note"),
                &json!("host"),
                &json!("approved")
            ),
            (&json!("close_ticket"), &json!("host"), &json!("denied")),
        ],
        "{traj}"
    );
    assert_eq!(approvals[1]["reason"], "a human closes tickets", "{traj}");

    let steps = atif["steps"].as_array().unwrap();
    let system: Vec<&Value> = steps
        .iter()
        .filter(|s| s["source"] == "system" && s["extra"].get("approval").is_some())
        .collect();
    assert_eq!(system.len(), 2, "{atif}");
    assert!(
        system[1]["message"]
            .as_str()
            .unwrap()
            .contains("denied: a human closes tickets"),
        "{atif}"
    );
    // Every tool call is still the result of the model step that asked
    // for it: none is a step of its own.
    assert!(
        steps.iter().all(|s| s["llm_call_count"] != 0),
        "a tool call lost its model step: {atif}"
    );
    let results: usize = steps
        .iter()
        .filter(|s| s["llm_call_count"] == 1)
        .map(|s| s["observation"]["results"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(results, crate::conformance::CALLS.len(), "{atif}");

    let approval: Vec<_> = spans.iter().filter(|(n, _)| n == "approval tool").collect();
    assert_eq!(approval.len(), 2, "{spans:?}");
    assert_eq!(approval[0].1["worldline.approval.decision"], "approved");
    assert_eq!(approval[1].1["worldline.approval.asked_by"], "host");
    assert_eq!(
        approval[1].1["worldline.approval.reason"],
        "a human closes tickets"
    );
    let tools = spans
        .iter()
        .filter(|(_, a)| a.get("gen_ai.operation.name").map(String::as_str) == Some("execute_tool"))
        .count();
    assert_eq!(tools, crate::conformance::CALLS.len(), "{spans:?}");
}
