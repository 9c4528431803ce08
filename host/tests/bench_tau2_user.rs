//! An imported τ²-bench task's user played by a model when one is
//! configured (decision 0386): `--user-model-set` (or `[user_model]` in the
//! project's worldline.toml) points it at a loopback OpenAI-compatible
//! server, which must receive tau2's own user-simulator prompt (made here
//! by tau2's code, not read from the import) and, for telecom, the phone's
//! tools, whose calls are recorded as `user/tools.call` events; the run
//! replays `identical` with the server gone. With no model configured the
//! same case runs offline, its user played by the scripted stand-in.

use crate::bench_tau2::{import, tau2_python, with_service};
use crate::common;

use common::chat::{said, serve};
use common::{temp_dir, worldline};
use serde_json::{Value, json};
use std::path::Path;

/// tau2's own user-simulator system prompt for `domain`'s task `id`, as
/// its `run.py` makes it (the user's tools given when the domain has them).
fn tau2_prompt(python: &Path, domain: &str, id: &str) -> String {
    let script = format!(
        r#"
import logging, sys
logging.disable(logging.CRITICAL)
from loguru import logger
logger.remove()
from tau2.registry import registry
from tau2.user.user_simulator import UserSimulator
env = registry.get_env_constructor("{domain}")()
try:
    tools = env.get_user_tools()
except Exception:
    tools = None
task = next(t for t in registry.get_tasks_loader("{domain}")() if t.id == {id:?})
sys.stdout.write(UserSimulator(tools=tools, instructions=str(task.user_scenario)).system_prompt)
"#
    );
    let out = std::process::Command::new(python)
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The imported case with the talker agent's lines as its task's steps.
fn talking(dir: &Path, name: &str, lines: &[&str]) -> std::path::PathBuf {
    let text = std::fs::read_to_string(dir.join("cases").join(name)).unwrap();
    let steps: Vec<String> = lines
        .iter()
        .map(|l| format!("{{ say = {} }}", json!(l)))
        .collect();
    let text = text.replacen(
        "policy = \"policy.md\" }",
        &format!("policy = \"policy.md\", steps = [{}] }}", steps.join(", ")),
        1,
    );
    let case = dir.join("cases").join(format!("talking-{name}"));
    std::fs::write(&case, text).unwrap();
    case
}

/// `run CASE --agent talker --worlds DIR/worlds --json` with `more` flags.
fn run(store: &Path, dir: &Path, case: &Path, more: &[&str]) -> common::CliOutput {
    let agent = common::guest("talker-agent");
    let worlds = dir.join("worlds");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "run".as_ref(),
        case.as_os_str(),
        "--agent".as_ref(),
        agent.as_os_str(),
        "--worlds".as_ref(),
        worlds.as_os_str(),
        "--json".as_ref(),
    ];
    args.extend(more.iter().map(std::ffi::OsStr::new));
    let out = worldline(store, args);
    assert!(matches!(out.code, 0 | 1), "{out}");
    out
}

/// The `--user-model-set` flags of a model behind `url`.
fn user_model(url: &str) -> Vec<String> {
    [
        "provider=openai".to_string(),
        format!("base_url={url}"),
        "model=local-user-sim".to_string(),
        "retries=0".to_string(),
    ]
    .into_iter()
    .flat_map(|kv| ["--user-model-set".to_string(), kv])
    .collect()
}

/// The user turns of a run: each `user/say` event's response.
fn turns(out: &common::CliOutput) -> Vec<Value> {
    common::read_bundle(&out.bundle())
        .events
        .into_iter()
        .filter(|e| e["call"] == "worldline:agent/user.say")
        .map(|e| e["response"].clone())
        .collect()
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn an_imported_airline_users_model_gets_tau2s_prompt_and_the_stand_in_plays_offline() {
    let Some(python) = tau2_python() else { return };
    let tmp = temp_dir();
    let store = tmp.path().join("store");
    let dir = tmp.path().join("airline");
    import(&python, &store, &dir, "airline");
    with_service(&dir, "airline");
    let case = talking(
        &dir,
        "task-000.toml",
        &[
            "Which reservation is it?",
            "It cannot be refunded. Anything else?",
        ],
    );

    let (url, seen) = serve(vec![
        said("It's EHGLP3."),
        said("Then I won't cancel. ###STOP###"),
    ]);
    let flags = user_model(&url);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let out = run(&store, &dir, &case, &flags);
    let turns_live = turns(&out);
    assert_eq!(turns_live[0]["reply"], "It's EHGLP3.", "{out}");
    assert_eq!(turns_live[1]["ended"]["reason"], "Then I won't cancel.");
    assert_eq!(turns_live[1]["ended"]["satisfied"], true);
    assert_eq!(turns_live[0]["user"]["by"]["model"]["provider"], "openai");
    let header = common::read_bundle(&out.bundle()).header;
    assert_eq!(header["user_model_overrides"]["base_url"], url, "{header}");
    // The model got tau2's prompt alone, then tau2's greeting and the
    // opening message the agent was given, then the agent's messages.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let messages = seen[1]["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[0]["content"].as_str().unwrap(),
        tau2_prompt(&python, "airline", "0")
    );
    assert_eq!(messages[1]["content"], "Hi! How can I help you today?");
    assert_eq!(messages[2]["role"], "assistant");
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .contains("cancel reservation EHGLP3")
    );
    assert_eq!(messages[3]["content"], "Which reservation is it?");
    assert_eq!(messages[4]["content"], "It's EHGLP3.");
    assert_eq!(seen[0].get("tools"), None, "airline's user has no tools");
    // The server is spent: the replay answers from the recording.
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(&store, &run_id);

    // No model configured: the stand-in plays, offline, and says so.
    let offline = run(&store, &dir, &case, &[]);
    let default = toml::from_str::<toml::Table>(&std::fs::read_to_string(&case).unwrap()).unwrap()
        ["user"]["default"]
        .as_str()
        .unwrap()
        .to_string();
    for t in turns(&offline) {
        assert_eq!(t["reply"].as_str(), Some(default.as_str()), "{offline}");
        assert_eq!(t["user"]["by"], json!({"default": true, "stand_in": true}));
    }
    let header = common::read_bundle(&offline.bundle()).header;
    assert_eq!(header.get("user_model_overrides"), None, "{header}");
    let offline_id = offline.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(&store, &offline_id);
    let history = common::wl(&store, &[&"history", &offline_id]);
    assert!(history.stdout.contains("stand-in"), "{history}");

    // The project's [user_model] table configures it too.
    let (url, seen) = serve(vec![said("###STOP###")]);
    let project = dir.join("worldline.toml");
    let mut text = std::fs::read_to_string(&project).unwrap();
    text.push_str(&format!(
        "\n[user_model]\nprovider = \"openai\"\nbase_url = \"{url}\"\nmodel = \"local-user-sim\"\nretries = 0\n"
    ));
    std::fs::write(&project, text).unwrap();
    let agent = common::guest("talker-agent");
    let out = common::worldline_at(
        &dir,
        [
            "run".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--json".as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
        ],
        &[],
    );
    assert!(matches!(out.code, 0 | 1), "{out}");
    assert_eq!(turns(&out)[0]["ended"]["satisfied"], true, "{out}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py, the pinned Python environments: run tests/run, which installs it"
)]
fn an_imported_telecom_users_model_calls_the_phones_tools_and_replays() {
    let Some(python) = tau2_python() else { return };
    let tmp = temp_dir();
    let store = tmp.path().join("store");
    let dir = tmp.path().join("telecom");
    import(&python, &store, &dir, "telecom");
    with_service(&dir, "telecom");
    let name = "task-service_issue-airplane_mode_on-unseat_sim_card-PERSONA-None.toml";
    let id = "[service_issue]airplane_mode_on|unseat_sim_card[PERSONA:None]";
    let case = talking(
        &dir,
        name,
        &["Please turn airplane mode off and reseat your SIM card."],
    );
    let call = |id: &str, tool: &str| json!({"id": id, "type": "function", "function": {"name": tool, "arguments": "{}"}});
    let (url, seen) = serve(vec![
        json!({"role": "assistant", "content": null, "tool_calls": [call("c1", "toggle_airplane_mode"), call("c2", "reseat_sim_card")]}),
        said("The status bar shows signal now. ###STOP###"),
    ]);
    let flags = user_model(&url);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let out = run(&store, &dir, &case, &flags);
    assert_eq!(out.json()["status"], "passed", "{out}");
    let events = common::read_bundle(&out.bundle()).events;
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["call"] == "worldline:user/tools.call")
        .map(|e| &e["request"]["name"])
        .collect();
    assert_eq!(calls, ["toggle_airplane_mode", "reseat_sim_card"], "{out}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0]["messages"][0]["content"].as_str().unwrap(),
        tau2_prompt(&python, "telecom", id)
    );
    let tools: Vec<&Value> = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["function"]["name"])
        .collect();
    assert!(tools.contains(&&json!("toggle_airplane_mode")), "{tools:?}");
    assert!(tools.contains(&&json!("reseat_sim_card")), "{tools:?}");
    // The second step saw the calls' results as `tool` messages.
    let second = seen[1]["messages"].as_array().unwrap();
    assert_eq!(second[second.len() - 1]["role"], "tool");
    assert_eq!(second[second.len() - 1]["tool_call_id"], "c2");
    let run_id = out.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(&store, &run_id);

    // Offline, the stand-in answers (its rules name no tool here).
    let offline = run(&store, &dir, &case, &[]);
    let t = &turns(&offline)[0];
    assert_eq!(t["user"]["by"]["stand_in"], true, "{offline}");
    let id = offline.json()["run_id"].as_str().unwrap().to_string();
    common::replays_identical(&store, &id);
}
