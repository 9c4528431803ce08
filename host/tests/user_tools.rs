//! The simulated user's own tools (issue 42 item 3, decision 0371): a
//! world's `[[user_tools]]` over the user's tables (a phone), called by a
//! scripted user's rule before it answers, each call its own
//! `worldline:user/tools.call` event; hidden from the agent, graded by the
//! final state and by gold calls, failed by `[fuzz.user] tool_errors`,
//! forked like a tool call, replayed `identical`, shown by `history` and
//! the UI's conversation page. A model-played user calls them too, as
//! its model's tool calls between its steps (decision 0379).

use crate::common;

use crate::ui_support::Server;
use common::{CliOutput, guest, read_bundle, temp_dir, wl, write_case};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const USER_TOOL: &str = "worldline:user/tools.call";

/// A world with a line the agent's tool reads and a phone only the
/// user's tools touch.
fn phone_world(root: &Path) -> PathBuf {
    let dir = root.join("worlds/phone/v1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("lines.jsonl"),
        "{\"id\": \"L1\", \"status\": \"active\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("device.jsonl"),
        "{\"id\": \"phone\", \"airplane_mode\": true}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("world.toml"),
        r#"name = "phone"
version = 1

[tables.lines]
key = "id"
rows = "lines.jsonl"

[tables.device]
key = "id"
rows = "device.jsonl"

[[tools]]
name = "get_line"
description = "A line"
params = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
op = "get"
table = "lines"

[[user_tools]]
name = "toggle_airplane_mode"
description = "Turn airplane mode on or off"
params = { type = "object", properties = { id = { type = "string" }, on = { type = "boolean" } }, required = ["id", "on"] }
op = "update"
table = "device"
set = { airplane_mode = "$on" }

[[user_tools]]
name = "check_status_bar"
description = "What the phone's status bar shows"
params = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
op = "get"
table = "device"
"#,
    )
    .unwrap();
    root.join("worlds")
}

const USER: &str = r#"
[user]
default = "Sorry?"

[[user.rules]]
contains = "airplane"
calls = [{ tool = "check_status_bar", args = { id = "phone" } }, { tool = "toggle_airplane_mode", args = { id = "phone", on = false } }]
reply = "Done, it is off now."

[expect]
[[expect.state]]
table = "device"
key = "phone"
field = "airplane_mode"
equals = false

[[expect.gold]]
tool = "toggle_airplane_mode"
args = { id = "phone", on = false }
"#;

fn case(dir: &Path, name: &str, more: &str) -> PathBuf {
    write_case(
        dir,
        name,
        &format!(
            "world = \"phone@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
             task = {{ steps = [{{call = \"get_line\", args = {{id = \"L1\"}}}}, \
             {{call = \"toggle_airplane_mode\", args = {{id = \"phone\", on = false}}}}, \
             {{say = \"Please turn airplane mode off.\"}}] }}\n{USER}{more}"
        ),
    )
}

fn run(store: &Path, case: &Path, worlds: &Path) -> CliOutput {
    common::run_in(store, case, &guest("talker-agent"), worlds)
}

fn output(out: &CliOutput) -> Value {
    serde_json::from_str(out.json()["output"].as_str().unwrap_or("null")).unwrap()
}

#[test]
fn the_users_tools_are_called_by_its_rule_recorded_graded_replayed_and_hidden_from_the_agent() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = phone_world(dir.path());
    let out = run(&store, &case(dir.path(), "user-tools", ""), &worlds);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "passed", "{out}");
    // The agent cannot call the user's tool: it is not one of its tools.
    let o = output(&out);
    assert_eq!(o[1]["error"], "not-found", "{o}");
    assert_eq!(o[2], json!({"reply": "Done, it is off now."}));
    // The user's two calls: events of their own, in the rule's order,
    // before the turn they answer, the write on the second.
    let events = read_bundle(&out.bundle()).events;
    let calls: Vec<&str> = events.iter().map(|e| e["call"].as_str().unwrap()).collect();
    let first = calls
        .iter()
        .position(|c| *c == USER_TOOL)
        .expect("a user tool call");
    assert_eq!(
        calls[first..first + 3],
        [USER_TOOL, USER_TOOL, "worldline:agent/user.say"]
    );
    assert_eq!(
        events[first]["request"],
        json!({"name": "check_status_bar", "args": {"id": "phone"}})
    );
    assert_eq!(events[first]["response"]["ok"]["airplane_mode"], true);
    assert_eq!(events[first + 1]["effect"], "write");
    common::replays_identical(&store, out.json()["run_id"].as_str().unwrap());
    let history = wl(
        &store,
        &[&"history", &out.json()["run_id"].as_str().unwrap()],
    );
    history.expect_code(0);
    assert!(
        history
            .stdout
            .contains("user calls toggle_airplane_mode({\"id\":\"phone\",\"on\":false})"),
        "{history}"
    );
    // The UI's conversation page shows the user's calls with their results.
    let ui = Server::start(&store, &[]);
    let page = ui.get(&format!("/run/{}", out.json()["run_id"].as_str().unwrap()));
    let conv = &page.body[page
        .body
        .find("id=\"conversation\"")
        .expect("a conversation")..];
    let (checks, toggles, reply) = (
        conv.find("user calls check_status_bar")
            .expect("the user's first call"),
        conv.find("user calls toggle_airplane_mode")
            .expect("the user's second call"),
        conv.find("Done, it is off now.").expect("the reply"),
    );
    assert!(checks < toggles && toggles < reply, "{conv}");
    // `validate`: the oracle makes the gold call of the user's tool as the
    // user's, and passes; doing nothing leaves the phone in airplane mode.
    let v = wl(
        &store,
        &[
            &"validate",
            &dir.path().join("user-tools.toml"),
            &"--worlds",
            &worlds,
            &"--json",
        ],
    );
    v.expect_code(0);
    let r = &v.json()["results"][0];
    assert_eq!(r["oracle"]["passed"], true, "{v}");
    assert_eq!(r["do_nothing"]["passed"], false, "{v}");
    // The agent's tool list has its own tool only.
    let specs = events
        .iter()
        .find(|e| e["call"] == "worldline:agent/tools.specs");
    if let Some(s) = specs {
        assert!(!s["response"].to_string().contains("toggle_airplane_mode"));
    }
}

#[test]
fn a_user_tool_fault_fails_the_call_and_a_fork_can_fail_it_too() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = phone_world(dir.path());
    // Every call the user makes of their tools fails: the phone stays in
    // airplane mode, the state and gold checks fail.
    let c = case(dir.path(), "faulted", "\n[fuzz.user]\ntool_errors = 1.0\n");
    let out = wl(
        &store,
        &[
            &"fuzz",
            &c,
            &"--agent",
            &guest("talker-agent"),
            &"--worlds",
            &worlds,
            &"--runs",
            &"2",
            &"--json",
        ],
    );
    out.expect_code(1);
    let r = out.json();
    assert_eq!(r["summary"]["failed"], 2, "{out}");
    assert!(
        r["groups"][0]["fault_mix"]
            .to_string()
            .contains("user.tools"),
        "{out}"
    );

    // A fork at the user's write answers it with an error instead: the
    // write is gone and the grade fails.
    let out = run(&store, &case(dir.path(), "forked", ""), &worlds);
    out.expect_code(0);
    let events = read_bundle(&out.bundle()).events;
    let at = events
        .iter()
        .position(|e| e["call"] == USER_TOOL && e["effect"] == "write")
        .unwrap();
    let f = wl(
        &store,
        &[
            &"fork",
            &out.json()["run_id"].as_str().unwrap(),
            &"--at",
            &at.to_string(),
            &"--respond",
            &r#"{"error": {"kind": "unavailable", "message": "no signal"}}"#,
            &"--json",
        ],
    );
    f.expect_code(1);
    let forked = read_bundle(&f.bundle()).events;
    assert_eq!(forked[at]["call"], USER_TOOL);
    assert_eq!(forked[at]["response"]["error"]["message"], "no signal");
    common::replays_identical(&store, f.json()["run_id"].as_str().unwrap());
}

/// A rule calling a tool the user does not have is refused at the rule's
/// own `[[user.rules]]` (line 9), not at `[user]` (line 5).
#[test]
fn a_rule_calling_a_tool_the_user_does_not_have_is_refused_where_it_is() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = phone_world(dir.path());
    let c = write_case(
        dir.path(),
        "bad",
        "world = \"phone@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n[user]\n[[user.rules]]\nreply = \"ok\"\n\n[[user.rules]]\nreply = \"ok\"\ncalls = [{ tool = \"get_line\" }]\n",
    );
    let out = run(&store, &c, &worlds);
    out.expect_code(2);
    assert!(
        out.stderr.contains("bad.toml:9:1: [[user.rules]] #2: calls `get_line`")
            && out
                .stderr
                .contains("calls `get_line`, which is not one of the world's [[user_tools]] (toggle_airplane_mode, check_status_bar)"),
        "{out}"
    );
}

/// A model-played user (decision 0379): its scripted model sees the
/// phone's tools, calls one, reads the result, then answers.
const MODEL_USER: &str = r#"
[user]
played_by = "model"
persona = "Your phone is in airplane mode and you want it working."

[user.model]
provider = "scripted"

[[user.model.rules]]
contains = "Please turn airplane mode off"
reply = { tool_calls = [{ name = "toggle_airplane_mode", arguments = { id = "phone", on = false } }] }

[[user.model.responses]]
content = "[SATISFIED] It is off now, thanks."

[expect]
[[expect.state]]
table = "device"
key = "phone"
field = "airplane_mode"
equals = false
"#;

fn model_case(dir: &Path, name: &str, more: &str) -> PathBuf {
    write_case(
        dir,
        name,
        &format!(
            "world = \"phone@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
             task = {{ steps = [{{say = \"Please turn airplane mode off.\"}}] }}\n{MODEL_USER}{more}"
        ),
    )
}

#[test]
fn a_model_played_user_calls_its_tools_between_model_steps() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = phone_world(dir.path());
    let out = run(&store, &model_case(dir.path(), "model-user", ""), &worlds);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "passed", "{out}");
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = read_bundle(&out.bundle()).events;
    let at = events
        .iter()
        .position(|e| e["call"] == USER_TOOL)
        .expect("the model-played user's call");
    assert_eq!(
        events[at]["request"],
        json!({"name": "toggle_airplane_mode", "args": {"id": "phone", "on": false}})
    );
    assert_eq!(events[at]["effect"], "write");
    let turn = &events[at + 1];
    assert_eq!(turn["call"], "worldline:agent/user.say");
    assert_eq!(turn["response"]["ended"]["satisfied"], true, "{turn}");
    common::replays_identical(&store, &run_id);
    let history = wl(&store, &[&"history", &run_id]);
    assert!(
        history
            .stdout
            .contains("user calls toggle_airplane_mode({\"id\":\"phone\",\"on\":false})"),
        "{history}"
    );
    let ui = Server::start(&store, &[]);
    let page = ui.get(&format!("/run/{run_id}"));
    assert!(
        page.body.contains("user calls toggle_airplane_mode"),
        "{}",
        page.body
    );

    // A fork answering the user's call with an error: the phone stays in
    // airplane mode, the next model step reads the error, the grade fails.
    let f = wl(
        &store,
        &[
            &"fork",
            &run_id,
            &"--at",
            &at.to_string(),
            &"--respond",
            &r#"{"error": {"kind": "unavailable", "message": "no signal"}}"#,
            &"--json",
        ],
    );
    f.expect_code(1);
    let forked = read_bundle(&f.bundle()).events;
    assert_eq!(forked[at]["response"]["error"]["message"], "no signal");
    common::replays_identical(&store, f.json()["run_id"].as_str().unwrap());

    // `[fuzz.user] tool_errors` fails the model-played user's call too.
    let c = model_case(
        dir.path(),
        "model-faulted",
        "\n[fuzz.user]\ntool_errors = 1.0\n",
    );
    let out = wl(
        &store,
        &[
            &"fuzz",
            &c,
            &"--agent",
            &guest("talker-agent"),
            &"--worlds",
            &worlds,
            &"--runs",
            &"1",
            &"--json",
        ],
    );
    out.expect_code(1);
    assert_eq!(out.json()["summary"]["failed"], 1, "{out}");
}

/// `case from-run` of a model-played user's run makes its scripted rules
/// call the user's tools as the run did: the calls were dropped, and the
/// case failed its state check where the run passed.
#[test]
fn a_case_from_a_model_played_users_run_calls_its_tools_again() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = phone_world(dir.path());
    let out = run(&store, &model_case(dir.path(), "model-user", ""), &worlds);
    out.expect_code(0);
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let made = cases.join("again.toml");
    wl(&store, &[&"case", &"from-run", &run_id, &"-o", &made]).expect_code(0);
    let again = run(&store, &made, &worlds);
    again.expect_code(0);
    assert_eq!(again.json()["status"], "passed", "{again}");
}

/// Under rules 6 the user's tool calls in answer to the agent's message
/// belong to the next turn (decision 0376): turn 1, which that message
/// ended, sees the phone as it was. They counted in turn 1 under rules 5.
#[test]
fn the_users_answer_belongs_to_the_next_turn() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = phone_world(dir.path());
    let turns = r#"
[[expect.turn]]
turn = 1
[[expect.turn.state]]
table = "device"
key = "phone"
field = "airplane_mode"
equals = true

[[expect.turn]]
turn = 2
[[expect.turn.state]]
table = "device"
key = "phone"
field = "airplane_mode"
equals = false
"#;
    let c = write_case(
        dir.path(),
        "turns",
        &format!(
            "world = \"phone@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
             task = {{ steps = [{{say = \"Please turn airplane mode off.\"}}] }}\n{USER}{turns}"
        ),
    );
    let out = run(&store, &c, &worlds);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "passed", "{out}");
}

/// A case of the `looper-agent` (a scripted model) asking the user to
/// turn airplane mode off: the user's rule calls its two tools, then
/// answers; the user leaves at the next message.
const TALKS_TO_PHONE_USER: &str = r#"world = "phone@v1"
seed = 5
clock = 2026-03-01T12:00:00Z
task = { prompt = "Help the user get signal.", talk = true }

[user]
default = "Sorry?"

[[user.rules]]
contains = "airplane"
calls = [{ tool = "check_status_bar", args = { id = "phone" } }, { tool = "toggle_airplane_mode", args = { id = "phone", on = false } }]
reply = "Done, it is off now."

[[user.rules]]
contains = "Anything else"
end = "all good"
satisfied = true

[[model.responses]]
tool_calls = [{ name = "get_line", arguments = { id = "L1" } }]

[[model.responses]]
content = "Line L1 is active. Please turn airplane mode off."

[[model.responses]]
content = "Signal is back. Anything else?"
"#;

/// The user's own tool calls, as `(name, args)`, in a bundle's order.
fn user_calls(bundle: &Path) -> Vec<Value> {
    (read_bundle(bundle).events.into_iter())
        .filter(|e| e["call"] == USER_TOOL)
        .map(|e| e["request"].clone())
        .collect()
}

/// `worldline otel` exports each call the simulated user made of its own
/// tools as an `execute_tool` span under the `invoke_agent user` span of
/// the turn it made them for (`worldline.ran_by` `user`; with
/// `--content`, its arguments and result, redacted as the agent's are),
/// and `case from-trace` makes that turn's rule call them again (they
/// were not exported: a trace showed the user answer without them, and
/// its case never called them).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs the pinned Python environments: run tests/run, which installs it"
)]
fn the_users_tool_calls_are_spans_under_its_turn_and_a_case_from_the_trace_makes_them() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let worlds = phone_world(dir.path());
    let agent = guest("looper-agent");
    let case = write_case(dir.path(), "phone-talk", TALKS_TO_PHONE_USER);
    let first = common::run_in(&store, &case, &agent, &worlds);
    first.expect_code(0);
    let id = first.json()["run_id"].as_str().unwrap().to_string();
    let made_calls = user_calls(&first.bundle());
    assert_eq!(made_calls.len(), 2, "{first}");

    // The store's policy hides the device's id wherever it is quoted.
    std::fs::write(
        store.join("redact.toml"),
        "[[custom]]\nname = \"device\"\npattern = \"phone\"\n",
    )
    .unwrap();
    let receiver = crate::otel::Receiver::start(dir.path());
    let endpoint = receiver.endpoint();
    wl(
        &store,
        &[
            &"otel",
            &id,
            &"--content",
            &"--endpoint",
            &endpoint,
            &"--json",
        ],
    )
    .expect_code(0);
    let all: Vec<Value> = (receiver.received().iter())
        .flat_map(crate::otel::spans)
        .collect();
    let attr = |s: &Value, k: &str| crate::otel::attr(s, k);
    let turns: Vec<&Value> = (all.iter())
        .filter(|s| s["name"] == "invoke_agent user")
        .collect();
    assert_eq!(turns.len(), 2, "{all:#?}");
    let under = |turn: &Value| -> Vec<Value> {
        (all.iter())
            .filter(|s| s["parentSpanId"] == turn["spanId"])
            .cloned()
            .collect()
    };
    let calls = under(turns[0]);
    let names: Vec<&Value> = calls.iter().map(|s| &s["name"]).collect();
    assert_eq!(
        names,
        [
            "execute_tool check_status_bar",
            "execute_tool toggle_airplane_mode"
        ],
        "{all:#?}"
    );
    assert!(under(turns[1]).is_empty(), "{all:#?}");
    let time = |s: &Value, k: &str| s[k].as_str().unwrap().parse::<u64>().unwrap();
    for c in &calls {
        assert_eq!(
            attr(c, "gen_ai.operation.name"),
            Some("execute_tool".into())
        );
        assert_eq!(attr(c, "worldline.ran_by"), Some("user".into()), "{c}");
        assert_eq!(c["traceId"], turns[0]["traceId"]);
        assert!(
            time(c, "startTimeUnixNano") >= time(turns[0], "startTimeUnixNano"),
            "{c}"
        );
        assert!(
            time(c, "endTimeUnixNano") <= time(turns[0], "endTimeUnixNano"),
            "{c}"
        );
        let args = attr(c, "gen_ai.tool.call.arguments").expect("--content gives the arguments");
        let result = attr(c, "gen_ai.tool.call.result").expect("and the result");
        for text in [&args, &result] {
            let text = text.as_str().unwrap();
            assert!(
                text.contains("<device:") && !text.contains("\"phone\""),
                "{c}"
            );
        }
    }
    assert!(
        (attr(&calls[1], "gen_ai.tool.call.arguments")
            .unwrap()
            .as_str()
            .unwrap())
        .contains("\"on\":false"),
        "{:?}",
        calls[1]
    );
    // The agent's own tool call stays under the run's span.
    let root = all
        .iter()
        .find(|s| s.get("parentSpanId").is_none())
        .unwrap();
    let agent_tool = (all.iter())
        .find(|s| s["name"] == "execute_tool get_line")
        .expect("the agent's call");
    assert_eq!(agent_tool["parentSpanId"], root["spanId"]);
    assert_eq!(attr(agent_tool, "worldline.ran_by"), None);

    // Read back (unredacted), the user's turn calls its tools again.
    let trace = dir.path().join("trace.pb");
    wl(
        &store,
        &[&"otel", &id, &"--content", &"--unredacted", &"-o", &trace],
    )
    .expect_code(0);
    let out = dir.path().join("made");
    let made = wl(
        &store,
        &[&"case", &"from-trace", &trace, &"-o", &out, &"--json"],
    );
    made.expect_code(0);
    assert_eq!(made.json()["user_turns"], 2, "{made}");
    assert_eq!(made.json()["tool_calls"], 1, "the agent's alone: {made}");
    let world = std::fs::read_to_string(out.join("worlds/traced/v1/world.toml")).unwrap();
    assert!(world.contains("[[user_tools]]"), "{world}");
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.contains("own tools (check_status_bar, toggle_airplane_mode)"),
        "{readme}"
    );
    let again = common::run_in(
        &store,
        Path::new(made.json()["case"].as_str().unwrap()),
        &agent,
        &out.join("worlds"),
    );
    again.expect_code(0);
    assert_eq!(user_calls(&again.bundle()), made_calls, "{again}");
    assert_eq!(again.json()["output"], first.json()["output"], "{again}");
}
