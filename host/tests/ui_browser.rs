//! `worldline ui` in a real headless Chromium (through chromedriver): the
//! debugging flow a user follows, once with the mouse and once with the
//! keyboard (open the runs, filter to the failed run, open it, step to the
//! stale event, read the state, fork with a fresh response, see the fork
//! pass, open the diff), and the views a team keeps open: a model-driven
//! run's task, output, usage and cost, its calls on the virtual clock and
//! its conversation; the runtime's own events hidden; a fuzz campaign
//! against its baseline run; a fork's user turn. Screenshots of every page
//! land in `<target>/tmp/ui-screenshots/<flow>/`; with
//! `WORLDLINE_UPDATE_SCREENSHOTS=1` the ones the README shows are written
//! to `docs/screenshots/` too.

use crate::common;
use crate::ui_support;

use common::{guest, read_bundle, run_json, temp_dir, workspace_root, worldline};
use serde_json::Value;
use std::path::PathBuf;
use ui_support::webdriver::Browser;
use ui_support::{Server, fixture};

fn shots(flow: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("ui-screenshots")
        .join(flow)
}

/// A screenshot for the README: in the flow's folder, and in
/// `docs/screenshots/` when asked to update them.
fn doc_shot(b: &Browser, flow: &str, name: &str) {
    b.screenshot(&shots(flow).join(name));
    if std::env::var_os("WORLDLINE_UPDATE_SCREENSHOTS").is_some() {
        b.screenshot(&workspace_root().join("docs/screenshots").join(name));
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Chromium: run tests/run, which installs it"
)]
fn the_debugging_flow_with_the_mouse() {
    let dir = temp_dir();
    let fx = fixture(dir.path());
    let server = Server::start(dir.path(), &[]);
    let b = Browser::start();
    let out = shots("mouse");

    b.goto(&server.url);
    assert!(b.text("#runs").contains(&fx.passed));
    b.screenshot(&out.join("1-runs.png"));
    b.click("#f-status option[value=\"failed\"]");
    b.click("#filter");
    b.wait_url("status=failed");
    let listed = b.text("#runs");
    assert!(
        listed.contains(&fx.failed) && !listed.contains(&fx.passed),
        "{listed}"
    );
    b.screenshot(&out.join("2-runs-failed.png"));

    b.click(&format!("#runs a[href=\"/run/{}\"]", fx.failed));
    b.wait_url(&format!("/run/{}", fx.failed));
    assert!(b.text("#grade").contains("failed"));
    b.screenshot(&out.join("3-run.png"));

    b.click(&format!(
        "#timeline a[href=\"/run/{}/event/{}\"]",
        fx.failed, fx.stale
    ));
    b.wait_url(&format!("/event/{}", fx.stale));
    assert!(b.text("h1").contains("injected: stale"));
    let response = b.text("#response");
    assert!(
        response.contains("D-41") && !response.contains("D-42"),
        "the stale list hides D-42: {response}"
    );
    assert!(
        b.text("#state").contains("D-42"),
        "the world already has D-42"
    );
    // Rows as tables: the answer's deploys and the world's tables have a
    // column per field.
    let columns = b.texts("#response table.rows th");
    assert!(columns.contains(&"id".to_string()), "{columns:?}");
    assert!(b.count("#state table.rows th") > 2);
    b.screenshot(&out.join("4-event.png"));
    doc_shot(&b, "mouse", "event.png");

    b.fill("#respond", &fx.fresh.to_string());
    b.click("#fork");
    let fork_url = b.wait_until("the fork's page", |u| !u.contains("/event/"));
    assert!(!fork_url.contains(&fx.failed), "{fork_url}");
    assert!(b.text("h1").contains("passed"), "the fork passes");
    assert!(b.text("#lineage").contains(&fx.failed));
    b.screenshot(&out.join("5-fork.png"));

    b.click("#diff");
    b.wait_url("/diff?");
    assert!(
        b.text("#first-difference")
            .contains(&format!("event {}", fx.stale))
    );
    assert!(
        b.text("#state-diff").contains("D-42"),
        "the fork rolled back D-42"
    );
    // Highlighted: the fork (a) was answered with D-42 where its parent
    // (b) got the stale list; the state lines are coloured by kind.
    let del = b.texts("#first-difference ~ .grid mark.del").join(" ");
    assert!(del.contains("D-42"), "marked on a: {del}");
    assert!(
        !b.texts("#first-difference ~ .grid mark.ins")
            .join(" ")
            .contains("D-42")
    );
    assert!(b.count("#state-diff li.del, #state-diff li.ins, #state-diff li.chg") > 0);
    b.screenshot(&out.join("6-diff.png"));
    doc_shot(&b, "mouse", "diff.png");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Chromium: run tests/run, which installs it"
)]
fn the_debugging_flow_with_the_keyboard() {
    let dir = temp_dir();
    let fx = fixture(dir.path());
    let server = Server::start(dir.path(), &[]);
    let b = Browser::start();
    let out = shots("keyboard");

    b.goto(&server.url);
    b.find("#runs");
    assert!(!b.displayed("#help"), "the key help starts hidden");
    b.keys("?", false);
    assert!(b.displayed("#help"));
    assert!(
        b.text("#help")
            .contains("show or hide the runtime's own events")
    );
    b.screenshot(&out.join("0-help.png"));
    doc_shot(&b, "keyboard", "keys.png");
    b.keys("\u{E00C}", false);
    assert!(!b.displayed("#help"), "Esc closes it");
    b.keys("/", false);
    b.keys("stale-deploys\u{E007}", false);
    b.wait_url("q=stale-deploys");
    assert!(!b.text("#runs").contains(&fx.passed));
    b.screenshot(&out.join("1-runs-filtered.png"));
    b.keys("j\u{E007}", false);
    b.wait_url(&format!("/run/{}", fx.failed));
    b.screenshot(&out.join("2-run.png"));

    // Down the timeline to the first event, open it, then the next tool
    // call until the stale one.
    b.keys("j\u{E007}", false);
    b.wait_url("/event/0");
    for _ in 0..fx.stale {
        b.keys("n", false);
    }
    b.wait_url(&format!("/event/{}", fx.stale));
    assert!(b.text("h1").contains("injected: stale"));
    assert!(b.text("#state").contains("D-42"));
    b.keys("k", false);
    b.wait_url(&format!("/event/{}", fx.stale - 1));
    b.keys("j", false);
    b.wait_url(&format!("/event/{}", fx.stale));
    b.screenshot(&out.join("3-event.png"));

    b.keys("f", false);
    b.keys(&fx.fresh.to_string(), false);
    b.keys("\u{E007}", true);
    let fork_url = b.wait_until("the fork's page", |u| !u.contains("/event/"));
    assert!(!fork_url.contains(&fx.failed), "{fork_url}");
    assert!(b.text("h1").contains("passed"), "the fork passes");
    b.screenshot(&out.join("4-fork.png"));

    b.keys("d", false);
    b.wait_url("/diff?");
    assert!(
        b.text("#first-difference")
            .contains(&format!("event {}", fx.stale))
    );
    b.screenshot(&out.join("5-diff.png"));
}

const MODEL_CALL: &str = "worldline:agent/model.complete";
const TOOL_CALL: &str = "worldline:agent/tools.call";

/// The run page of a model-driven run, with a price table in the project
/// file of the folder `ui` runs in: the task and the output; per call and
/// per run tokens, cost and latency; the calls on the virtual clock; each
/// tool call once; tool results as tables.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Chromium: run tests/run, which installs it"
)]
fn a_model_driven_run_shows_its_task_output_usage_cost_and_calls() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run_json(
        &store,
        &workspace_root().join("cases/model/rollback.toml"),
        &guest("model-agent"),
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let output = out.json()["output"].as_str().unwrap().to_string();
    let events = read_bundle(&out.bundle()).events;
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("worldline.toml"),
        "[prices.\"scripted\"]\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n",
    )
    .unwrap();
    let server = Server::start_in(&project, &store, &[]);
    let b = Browser::start();
    b.goto(&format!(
        "http://127.0.0.1:{}/run/{id}?token={}",
        server.port, server.token
    ));

    let task = b.text("#task");
    assert!(task.contains("ALERT-7") && task.contains("T-100"), "{task}");
    assert_eq!(b.text("#output"), output);

    // Usage: a row per model call; the run's sums; cost from the prices.
    let model: Vec<&Value> = events.iter().filter(|e| e["call"] == MODEL_CALL).collect();
    assert!(model.len() >= 5, "the scripted model answers five times");
    assert_eq!(b.count("#usage tbody tr"), model.len());
    let tokens = |field: &str| -> u64 {
        model
            .iter()
            .map(|e| {
                e["response"]["model_call"]["usage"][field]
                    .as_u64()
                    .unwrap()
            })
            .sum()
    };
    let (input, output_tokens) = (tokens("prompt_tokens"), tokens("completion_tokens"));
    let cost = (input as f64 * 3.0 + output_tokens as f64 * 15.0) / 1e6;
    let total = b.text("#usage-total");
    assert!(
        total.contains(&format!("tokens {input} in, {output_tokens} out")),
        "{total}"
    );
    assert_eq!(b.text("#run-cost"), format!("${cost:.6}"));
    assert!(
        total.contains(&format!("virtual latency {} ms", 800 * model.len())),
        "800 ms a call: {total}"
    );
    assert!(
        total.contains("real latency (wall clock, not replayed) —"),
        "a scripted model has no real latency, and says so: {total}"
    );

    // The calls on the virtual clock: one lane per tool or model call,
    // lasting from the event before to its own.
    let calls: Vec<usize> = (0..events.len())
        .filter(|&i| events[i]["call"] == MODEL_CALL || events[i]["call"] == TOOL_CALL)
        .collect();
    assert_eq!(b.count("#calls .lane"), calls.len());
    let first = calls[0];
    let ns = events[first]["vtime_ns"].as_u64().unwrap()
        - first
            .checked_sub(1)
            .map_or(0, |p| events[p]["vtime_ns"].as_u64().unwrap());
    let lane = b.text(&format!("#calls .lane[data-seq=\"{first}\"] .dur"));
    assert_eq!(lane, format!("{:.1} ms", ns as f64 / 1e6));
    let asked = model[0]["seq"].as_u64().unwrap();
    let label = b.text(&format!("#calls .lane[data-seq=\"{asked}\"]"));
    assert!(
        label.contains("model scripted"),
        "the lane names the model that answered: {label}"
    );

    // Each tool call once: its arguments in the conversation's answer and
    // on the call's own row, not again in the model's row or message.
    let conversation = b.text("#conversation");
    assert_eq!(
        conversation.matches("list_deploys").count(),
        1,
        "{conversation}"
    );
    assert_eq!(
        conversation.matches("rollback_deploy").count(),
        1,
        "{conversation}"
    );
    let asks = (0..events.len())
        .find(|&i| {
            events[i]["response"]["ok"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
                == "list_deploys"
        })
        .unwrap();
    let call = (asks..events.len())
        .find(|&i| events[i]["call"] == TOOL_CALL && events[i]["request"]["name"] == "list_deploys")
        .unwrap();
    let row = b.text(&format!("#e{asks}"));
    assert!(
        row.contains(&format!("asks for list_deploys (event {call})")) && !row.contains("checkout"),
        "the model's row names the call and links it: {row}"
    );
    assert!(
        b.text(&format!("#e{call}"))
            .contains("list_deploys({\"service\":\"checkout\"})")
    );
    assert!(
        b.count("#conversation table.rows") > 0,
        "the deploys as a table"
    );
    doc_shot(&b, "model", "run.png");
    b.scroll_to("#calls");
    doc_shot(&b, "model", "run-calls.png");
    b.scroll_to("#conversation");
    doc_shot(&b, "model", "run-conversation.png");
}

/// The JavaScript engine reads the monotonic clock (and more) for itself
/// as the agent runs: those rows are hidden until the toggle (or `r`)
/// shows them; the agent's own calls always show.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Chromium, Node.js and the pinned npm packages: run tests/run, which installs it"
)]
fn the_runtimes_own_events_are_hidden_until_asked_for() {
    let dir = temp_dir();
    let agent = common::js_guest("examples/ts-agent/agent.ts");
    let out = run_json(
        dir.path(),
        &workspace_root().join("cases/incident/baseline.toml"),
        &agent,
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = read_bundle(&out.bundle()).events;
    let call = |i: usize| events[i]["call"].as_str().unwrap().to_string();
    let first_own = (0..events.len())
        .find(|&i| call(i).starts_with("worldline:"))
        .unwrap();
    let end = events.len().min(200);
    let noise: Vec<usize> = (first_own..end)
        .filter(|&i| {
            (call(i).starts_with("wasi:clocks/monotonic-clock")
                || call(i).starts_with("wasi:random/"))
                && events[i]["injected"].is_null()
        })
        .collect();
    assert!(
        !noise.is_empty(),
        "the JS engine reads the clock or randomness after the agent's first call"
    );
    let own = (first_own..end).find(|&i| call(i) == TOOL_CALL).unwrap();

    let server = Server::start(dir.path(), &[]);
    let b = Browser::start();
    b.goto(&format!(
        "http://127.0.0.1:{}/run/{id}?token={}",
        server.port, server.token
    ));
    let row = |i: usize| format!("#e{i}");
    assert!(!b.displayed(&row(noise[0])), "hidden by default");
    assert!(b.displayed(&row(own)), "the agent's own call shows");
    b.scroll_to("#show-noise");
    doc_shot(&b, "noise", "timeline.png");
    b.click("#show-noise");
    assert!(b.displayed(&row(noise[0])), "shown when asked for");
    b.screenshot(&shots("noise").join("timeline-with-runtime.png"));
    b.keys("r", false);
    assert!(!b.displayed(&row(noise[0])), "`r` hides them again");
    assert!(b.displayed(&row(own)));
}

/// A fuzz campaign's pass rate and failure groups as bars, marked with
/// the baseline run's rate (the same case and agent without faults).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Chromium: run tests/run, which installs it"
)]
fn a_campaign_shows_its_bars_against_the_baseline_run() {
    let dir = temp_dir();
    let store = dir.path();
    let case = workspace_root().join("cases/incident/fuzz-stale-deploys.toml");
    let naive = guest("naive-agent");
    let base = run_json(store, &case, &naive);
    let base_id = base.json()["run_id"].as_str().unwrap().to_string();
    let base_passed = base.json()["status"] == "passed";
    let fuzz = worldline(
        store,
        [
            "fuzz".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            naive.as_os_str(),
            "--runs".as_ref(),
            "20".as_ref(),
        ],
    );
    assert!(fuzz.stderr.contains("kept in the store"), "{fuzz}");

    let server = Server::start(store, &[]);
    let b = Browser::start();
    b.goto(&format!(
        "http://127.0.0.1:{}/campaigns?token={}",
        server.port, server.token
    ));
    b.click("#campaigns a");
    b.wait_url("/campaign/");
    let href = b.attr("#baseline-run", "href").expect("a baseline run");
    assert!(href.ends_with(&format!("/run/{base_id}")), "{href}");
    let line = b.attr("#bar-pass .line", "style").unwrap();
    let at = if base_passed {
        "left:100.0%"
    } else {
        "left:0.0%"
    };
    assert!(
        line.contains(at),
        "the baseline's mark at its pass rate: {line}"
    );
    assert_eq!(b.count("#bar-baseline"), 1);
    assert!(
        b.count("#baseline-bars tr") >= 3,
        "baseline, pass rate, a group"
    );
    doc_shot(&b, "campaign", "campaign.png");
}

/// A user turn answered by a fork shows the fork's text (and says who
/// answered), in the timeline and in the conversation.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Chromium: run tests/run, which installs it"
)]
fn a_forked_user_turn_shows_its_text() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = common::write_case(
        dir.path(),
        "talk",
        "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\n\
         task = { steps = [{say = \"Hello, which ticket?\"}, {say = \"Shall I close T-1?\"}], until_ended = true }\n\
         [user]\ndefault = \"Sorry, what?\"\nmax_turns = 4\n\
         [[user.rules]]\nturn = 1\nreply = \"T-1 please\"\n",
    );
    let out = common::run_in(&store, &case, &guest("talker-agent"), &common::worlds_dir());
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = read_bundle(&out.bundle()).events;
    let at = events
        .iter()
        .position(|e| e["request"]["message"] == "Shall I close T-1?")
        .unwrap();

    let server = Server::start(&store, &[]);
    let b = Browser::start();
    b.goto(&format!(
        "http://127.0.0.1:{}/run/{id}/event/{at}?token={}",
        server.port, server.token
    ));
    b.fill("#respond", "\"Yes, close it\"");
    b.click("#fork");
    b.wait_until("the fork's page", |u| !u.contains("/event/"));
    let row = b.text(&format!("#e{at}"));
    assert!(
        row.contains("user: Yes, close it") && row.contains("[fork]") && !row.contains("null"),
        "{row}"
    );
    let conversation = b.text("#conversation");
    assert!(
        conversation.contains("Yes, close it") && conversation.contains("answered by a fork"),
        "{conversation}"
    );
    doc_shot(&b, "user", "fork-user-turn.png");
}

/// Chromium's folders (chromedriver's profile, the socket folders of the
/// profile lock Chromium leaves behind when it quits) are made in the
/// browser's own temporary folder, which goes when the browser does:
/// before, each browser left two in `/tmp` for good.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Chromium: run tests/run, which installs it"
)]
fn chromium_leaves_nothing_behind_in_the_shared_temporary_folder() {
    let b = Browser::start();
    b.goto("about:blank");
    let tmp = b.tmp().to_path_buf();
    let chromiums = std::fs::read_dir(&tmp)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .contains("org.chromium.Chromium")
        })
        .count();
    assert!(
        chromiums > 0,
        "Chromium made its folders elsewhere than the browser's own temporary folder {}",
        tmp.display()
    );
    drop(b);
    assert!(!tmp.exists(), "{} outlived the browser", tmp.display());
}

/// At a phone's width (390 px) no page is wider than the window: the
/// runs list's status and grade, an event page's tables and the diff's
/// "b" side were off screen. Wide tables scroll in place and panes side
/// by side stack. And a jump to one of the runtime's own events (the
/// looper's clock reads) shows its row.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs Chromium: run tests/run, which installs it"
)]
fn pages_fit_a_phone_s_width_and_a_jump_shows_a_runtime_row() {
    let dir = temp_dir();
    let fx = fixture(dir.path());
    let (worlds, case) = common::long::write_task(dir.path(), 3, "clock_reads = 2");
    let out = common::run_in(dir.path(), &case, &guest("looper-agent"), &worlds);
    out.expect_code(0);
    let looped = out.json()["run_id"].as_str().unwrap().to_string();
    let clock = (read_bundle(&out.bundle()).events.iter())
        .position(|e| e["call"] == "wasi:clocks/monotonic-clock.now")
        .unwrap();
    let server = Server::start(dir.path(), &[]);
    let b = Browser::start();
    let open = |path: &str| {
        let sep = if path.contains('?') { '&' } else { '?' };
        b.goto(&format!(
            "http://127.0.0.1:{}{path}{sep}token={}",
            server.port, server.token
        ));
    };
    b.resize(390, 1600);
    let inner = b.eval("window.innerWidth").as_u64().unwrap();
    assert!(inner <= 400, "a phone's width: {inner}");
    for path in [
        "/".to_string(),
        format!("/run/{}", fx.failed),
        format!("/run/{}/event/{}", fx.failed, fx.stale),
        format!("/diff?a={}&b={}", fx.failed, fx.passed),
    ] {
        open(&path);
        b.find("main");
        let wide = b
            .eval("document.documentElement.scrollWidth")
            .as_u64()
            .unwrap();
        b.screenshot(
            &shots("phone").join(format!("{}.png", path.replace(['/', '?', '&', '='], "_"))),
        );
        assert!(wide <= inner, "{path} is {wide} px wide at {inner}");
    }
    open(&format!("/run/{looped}?at={clock}"));
    b.wait_url("noise=1");
    assert!(
        b.displayed(&format!("#e{clock}")),
        "the clock read's row shows"
    );
}
