//! `worldline ui` over plain HTTP: the token, Host and CSRF checks a user
//! relies on to keep other pages and sites out, `--read-only`, and the
//! pages themselves (runs filtered and paged, a run, an event, a refused and an
//! accepted fork, a diff, a campaign) on real runs of real guests.

use crate::common;
use crate::ui_support;

use common::{guest, temp_dir, workspace_root, worldline};
use ui_support::{Server, fixture, form, input_value, request};

fn runs_in(store: &std::path::Path) -> usize {
    std::fs::read_dir(store.join("runs")).map_or(0, |d| d.count())
}

#[test]
fn every_request_needs_the_token_and_a_loopback_host() {
    let dir = temp_dir();
    let store = dir.path();
    let fx = fixture(store);
    let s = Server::start(store, &[]);
    let host = s.host();
    let path = format!("/run/{}", fx.failed);

    // No token, a wrong token: refused, and nothing of the store shown.
    for p in [
        path.clone(),
        format!("{path}?token=0000"),
        format!("{path}?token={}x", s.token),
    ] {
        let r = request(s.port, "GET", &p, &[("Host", &host)], "");
        assert_eq!(r.status, 403, "{p}: {r:?}");
        assert!(!r.body.contains("stale-deploys"), "{r:?}");
    }
    // The printed URL's token lets in and sets a cookie that lets in after.
    let r = request(
        s.port,
        "GET",
        &format!("{path}?token={}", s.token),
        &[("Host", &host)],
        "",
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("stale-deploys"));
    let cookie = r.header("set-cookie").expect("a cookie").to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let r = request(
        s.port,
        "GET",
        &path,
        &[("Host", &host), ("Cookie", pair)],
        "",
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.header("content-security-policy")
            .unwrap()
            .contains("default-src 'none'")
    );
    let r = request(
        s.port,
        "GET",
        &path,
        &[("Host", &host), ("Cookie", "worldline_token=nope")],
        "",
    );
    assert_eq!(r.status, 403);

    // DNS rebinding: the right token under another name is refused.
    for h in [
        format!("evil.example:{}", s.port),
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{}", s.port + 1),
    ] {
        let r = request(
            s.port,
            "GET",
            &format!("{path}?token={}", s.token),
            &[("Host", &h)],
            "",
        );
        assert_eq!(r.status, 403, "Host {h}: {r:?}");
        // Named with the names accepted, as every loopback server names it
        // (the UI said only that it answers to them "with its port").
        assert!(
            r.body.contains(&format!(
                "Host `{h}` does not name this server: use `127.0.0.1:{0}`, `localhost:{0}` or `[::1]:{0}`",
                s.port
            )),
            "Host {h}: {r:?}"
        );
    }
    let r = request(
        s.port,
        "GET",
        &format!("/?token={}", s.token),
        &[("Host", &format!("localhost:{}", s.port))],
        "",
    );
    assert_eq!(r.status, 200);
}

#[test]
fn forms_that_change_the_store_need_the_csrf_token_and_read_only_has_none() {
    let dir = temp_dir();
    let store = dir.path();
    let fx = fixture(store);
    let fresh = fx.fresh.to_string();
    let s = Server::start(store, &[]);
    let host = s.host();
    let event = s.get(&format!("/run/{}/event/{}", fx.failed, fx.stale));
    assert_eq!(event.status, 200, "{event:?}");
    // An event number that is none is the page's 400 in words (it was
    // the framework's "Cannot parse value at index 1", as plain text).
    for n in ["-1", "abc"] {
        let bad = s.get(&format!("/run/{}/event/{n}", fx.failed));
        assert_eq!(bad.status, 400, "{bad:?}");
        assert!(
            bad.body.contains("is no event number") && !bad.body.contains("Cannot parse"),
            "{bad:?}"
        );
    }
    let csrf = input_value(&event.body, "csrf").expect("the fork form carries the CSRF token");
    assert_ne!(csrf, s.token);
    let fork_path = format!(
        "/run/{}/event/{}/fork?token={}",
        fx.failed, fx.stale, s.token
    );
    let ct = ("Content-Type", "application/x-www-form-urlencoded");
    let before = runs_in(store);
    for body in [
        form(&[("respond", &fresh)]),
        form(&[("respond", &fresh), ("csrf", "0123")]),
    ] {
        let r = request(s.port, "POST", &fork_path, &[("Host", &host), ct], &body);
        assert_eq!(r.status, 403, "{r:?}");
        assert!(r.body.contains("CSRF"), "{r:?}");
    }
    // Another site's page posting the right form is refused by its Origin.
    let good = form(&[("respond", &fresh), ("csrf", &csrf)]);
    let r = request(
        s.port,
        "POST",
        &fork_path,
        &[("Host", &host), ct, ("Origin", "http://evil.example")],
        &good,
    );
    assert_eq!(r.status, 403, "{r:?}");
    assert_eq!(runs_in(store), before, "no refused form wrote a run");

    // An edit that does not fit: the form again, with what was wrong.
    let bad = form(&[("set", "pagers/P-1.status=\"x\""), ("csrf", &csrf)]);
    let r = request(s.port, "POST", &fork_path, &[("Host", &host), ct], &bad);
    assert_eq!(r.status, 400, "{r:?}");
    assert!(
        r.body.contains("no table `pagers`") && r.body.contains("fork-form"),
        "{}",
        r.body
    );
    assert_eq!(runs_in(store), before);

    // An agent that is not there is named on the form.
    let bad = form(&[("agent", "/nowhere/agent.wasm"), ("csrf", &csrf)]);
    let r = request(s.port, "POST", &fork_path, &[("Host", &host), ct], &bad);
    assert_eq!(r.status, 400, "{r:?}");
    assert!(
        r.body.contains("/nowhere/agent.wasm") && r.body.contains("cannot read agent"),
        "{}",
        r.body
    );
    assert_eq!(runs_in(store), before);

    // No edit at all is a fork as `worldline fork RUN --at N` makes it
    // (the form refused it: "give at least one edit").
    let plain = form(&[("csrf", &csrf)]);
    let r = request(s.port, "POST", &fork_path, &[("Host", &host), ct], &plain);
    assert_eq!(r.status, 303, "{r:?}");
    let before = before + 1;
    assert_eq!(runs_in(store), before);

    // The right form runs the fork and sends the browser to it.
    let origin = format!("http://{host}");
    let r = request(
        s.port,
        "POST",
        &fork_path,
        &[("Host", &host), ct, ("Origin", &origin)],
        &good,
    );
    assert_eq!(r.status, 303, "{r:?}");
    let to = r.header("location").unwrap().to_string();
    assert_eq!(runs_in(store), before + 1);
    let fork = s.get(&to);
    assert_eq!(fork.status, 200);
    assert!(
        fork.body.contains("badge ok\">passed"),
        "the fork passes: {}",
        fork.body
    );
    assert!(fork.body.contains(&format!(
        "href=\"/run/{}\" class=\"mono\" id=\"parent\"",
        fx.failed
    )));

    // Replay from the page: identical.
    let r = request(
        s.port,
        "POST",
        &format!("{to}/replay?token={}", s.token),
        &[("Host", &host), ct],
        &form(&[("csrf", &csrf)]),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        r.body.contains("id=\"verdict\"") && r.body.contains(">identical<"),
        "{}",
        r.body
    );
    drop(s);

    // Read-only: no forms, and their requests refused whatever they carry.
    let ro = Server::start(store, &["--read-only"]);
    let event = ro.get(&format!("/run/{}/event/{}", fx.failed, fx.stale));
    assert_eq!(event.status, 200);
    assert!(!event.body.contains("fork-form") && !event.body.contains("name=\"csrf\""));
    let run = ro.get(&format!("/run/{}", fx.failed));
    assert!(!run.body.contains("id=\"replay\""));
    let r = request(
        ro.port,
        "POST",
        &format!(
            "/run/{}/event/{}/fork?token={}",
            fx.failed, fx.stale, ro.token
        ),
        &[("Host", &ro.host()), ct],
        &good,
    );
    assert_eq!(r.status, 403);
    assert!(r.body.contains("read-only"));
    assert_eq!(runs_in(store), before + 1);
}

#[test]
fn pages_show_the_runs_a_run_an_event_a_diff_and_a_campaign() {
    let dir = temp_dir();
    let store = dir.path();
    let fx = fixture(store);
    let fuzz = worldline(
        store,
        [
            "fuzz".as_ref(),
            workspace_root()
                .join("cases/incident/fuzz-stale-deploys.toml")
                .as_os_str(),
            "--agent".as_ref(),
            guest("naive-agent").as_os_str(),
            "--runs".as_ref(),
            "20".as_ref(),
        ],
    );
    assert!(fuzz.stderr.contains("kept in the store"), "{fuzz}");
    let s = Server::start(store, &[]);

    let all = s.get("/");
    assert_eq!(all.status, 200);
    assert!(all.body.contains(&fx.failed) && all.body.contains(&fx.passed));
    let failed = s.get("/?status=failed");
    assert!(
        failed.body.contains(&fx.failed) && !failed.body.contains(&fx.passed),
        "{}",
        failed.body
    );
    // A status or grade no select offers is said (it listed no run beside
    // a select reading "any").
    for q in ["/?status=bogus", "/?grade=PASSED"] {
        let bad = s.get(q);
        assert_eq!(bad.status, 400, "{q}: {}", bad.body);
        assert!(bad.body.contains("give one of"), "{q}: {}", bad.body);
    }
    let text = s.get("/?q=baseline");
    assert!(text.body.contains(&fx.passed) && !text.body.contains(&fx.failed));

    let run = s.get(&format!("/run/{}", fx.failed));
    assert!(run.body.contains("id=\"grade\"") && run.body.contains("badge bad\">failed"));
    assert!(
        run.body.contains("injected: stale"),
        "the stale event is marked"
    );
    assert!(
        run.body
            .contains(&format!("/run/{}/event/{}", fx.failed, fx.stale))
    );

    let ev = s.get(&format!("/run/{}/event/{}", fx.failed, fx.stale));
    assert!(ev.body.contains("id=\"request\"") && ev.body.contains("list_deploys"));
    assert!(ev.body.contains("id=\"next-tool\"") && ev.body.contains("id=\"prev\""));
    let write = s.get(&format!("/run/{}/event/{}", fx.failed, fx.stale + 2));
    assert!(
        write.body.contains("<tr class=\"changed\""),
        "a write's row is highlighted: {}",
        write.body
    );
    let missing = s.get(&format!("/run/{}/event/99999", fx.failed));
    assert_eq!(missing.status, 400);
    assert!(missing.body.contains("no event 99999"));
    // Named by the run's id, not by its file in the store (the page showed
    // the store's absolute path).
    let root = store.display().to_string();
    assert!(
        missing.body.contains(&format!("{}: no event", fx.failed)) && !missing.body.contains(&root),
        "{}",
        missing.body
    );
    let nope = s.get("/campaign/nope");
    assert_eq!(nope.status, 404);
    assert!(
        nope.body.contains("campaign nope: ") && !nope.body.contains(&root),
        "{}",
        nope.body
    );
    // A replay's or a fork's address asked again (a reload) leads back to
    // its page (it was a blank 405).
    let again = s.get(&format!("/run/{}/replay", fx.failed));
    assert_eq!(again.status, 303, "{again:?}");
    assert_eq!(
        again.header("location"),
        Some(format!("/run/{}", fx.failed).as_str())
    );
    let again = s.get(&format!("/run/{}/event/{}/fork", fx.failed, fx.stale));
    assert_eq!(again.status, 303, "{again:?}");
    assert_eq!(
        again.header("location"),
        Some(format!("/run/{}/event/{}", fx.failed, fx.stale).as_str())
    );
    // When the run was recorded, in the list and on its page; the diff
    // box is labelled.
    let when = format!(
        "{}-{}-{} {}:{}:{} UTC",
        &fx.failed[..4],
        &fx.failed[4..6],
        &fx.failed[6..8],
        &fx.failed[9..11],
        &fx.failed[11..13],
        &fx.failed[13..15]
    );
    assert!(
        all.body.contains("<th>recorded</th>") && all.body.contains(&when),
        "{}",
        all.body
    );
    assert!(
        run.body
            .contains(&format!("<dd id=\"recorded\">{when}</dd>")),
        "{}",
        run.body
    );
    assert!(
        run.body.contains("<label> diff with <input id=\"diff-b\""),
        "{}",
        run.body
    );

    let diff = s.get(&format!("/diff?a={}&b={}", fx.failed, fx.passed));
    assert!(
        diff.body.contains("First difference: event"),
        "{}",
        diff.body
    );

    let list = s.get("/campaigns");
    let id = list
        .body
        .split("href=\"/campaign/")
        .nth(1)
        .expect("the campaign is listed");
    let id = &id[..id.find('"').unwrap()];
    let c = s.get(&format!("/campaign/{id}"));
    assert!(
        c.body.contains("id=\"pass-rate\"") && c.body.contains("95% interval"),
        "{}",
        c.body
    );
    assert!(c.body.contains("<svg id=\"plot\""), "{}", c.body);
    assert!(c.body.contains("list_deploys stale"), "{}", c.body);
    // No baseline run of this case: no black line to explain; a count of
    // one is singular.
    assert!(
        c.body
            .contains("no run of this case by this agent without faults"),
        "{}",
        c.body
    );
    assert!(!c.body.contains("black line"), "{}", c.body);
    assert!(
        c.body.contains("The whisker is the 95% interval."),
        "{}",
        c.body
    );
    assert!(!c.body.contains(" 1 runs"), "{}", c.body);
}

/// The run ids a runs page lists, in its order.
fn listed_ids(body: &str) -> Vec<String> {
    body.split("<tr data-href=\"/run/")
        .skip(1)
        .map(|r| r[..r.find('"').unwrap()].to_string())
        .collect()
}

#[test]
fn the_run_list_pages_in_the_order_of_runs_and_counts_every_match() {
    let dir = temp_dir();
    let store = dir.path();
    let case = workspace_root().join("cases/incident/fuzz-stale-deploys.toml");
    let naive = guest("naive-agent");
    worldline(
        store,
        [
            "fuzz".as_ref(),
            case.as_os_str(),
            "--agent".as_ref(),
            naive.as_os_str(),
            "--runs".as_ref(),
            "130".as_ref(),
            "--keep-all".as_ref(),
        ],
    );
    let cli = |flags: &[&str]| -> Vec<String> {
        let mut args = vec!["runs", "--json"];
        args.extend_from_slice(flags);
        let out = worldline(store, args);
        out.expect_code(0);
        let rows = out.json().as_array().unwrap_or_else(|| panic!("{out}"));
        rows.iter()
            .map(|r| r["run_id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = cli(&[]);
    assert!(all.len() > 100, "{} runs", all.len());
    let s = Server::start(store, &[]);

    // Two pages, in the CLI's order, counted whole.
    let first = s.get("/");
    assert!(first.body.contains(&format!("({} matching)", all.len())));
    assert!(first.body.contains("page 1 of 2") && first.body.contains("id=\"next-page\""));
    assert!(!first.body.contains("id=\"prev-page\""));
    let second = s.get("/?page=2");
    assert!(second.body.contains("page 2 of 2") && !second.body.contains("id=\"next-page\""));
    let mut paged = listed_ids(&first.body);
    assert_eq!(paged.len(), 100);
    paged.extend(listed_ids(&second.body));
    assert_eq!(paged, all);
    // A page past the last is the last; a page that is no number, the first.
    let past = s.get("/?page=7");
    assert!(past.body.contains("page 2 of 2"));
    assert_eq!(listed_ids(&past.body), listed_ids(&second.body));
    assert_eq!(listed_ids(&s.get("/?page=x").body), listed_ids(&first.body));

    // A filter SQL applies, and the free text (applied row by row), page
    // alike: the same runs as the CLI's list, in its order.
    let failed = cli(&["--status", "failed"]);
    let page = s.get("/?status=failed");
    assert!(page.body.contains(&format!("({} matching)", failed.len())));
    assert_eq!(listed_ids(&page.body), failed[..failed.len().min(100)]);
    let text = s.get("/?q=fuzz-stale&page=2");
    assert!(
        text.body.contains(&format!("({} matching)", all.len())),
        "{}",
        text.body
    );
    assert_eq!(listed_ids(&text.body), all[100..]);
}

#[test]
fn last_failed_opens_the_newest_failed_run() {
    let dir = temp_dir();
    let store = dir.path();
    let fx = fixture(store);
    let s = Server::start(store, &["--last-failed"]);
    assert!(
        s.url.contains(&format!("/run/{}?token=", fx.failed)),
        "{}",
        s.url
    );
    let empty = temp_dir();
    // An empty store (a folder with no `runs/` is none: refused below).
    std::fs::create_dir(empty.path().join("runs")).unwrap();
    let out = worldline(empty.path(), ["ui", "--port", "0", "--last-failed"]);
    out.expect_code(2);
    assert!(out.stderr.contains("no failed run"), "{out}");
    // A mistyped store is refused, not made and served empty.
    let typo = empty.path().join("typo");
    let limit = std::time::Duration::from_secs(30);
    let out = common::worldline_within(limit, &typo, ["ui", "--port", "0", "--read-only"])
        .expect("ui on a missing store served it (it made one)");
    out.expect_code(2);
    assert!(
        out.stderr.contains("does not exist: no store is there"),
        "{out}"
    );
    assert!(!typo.exists());
}

#[test]
fn a_model_driven_run_reads_as_a_conversation() {
    let dir = temp_dir();
    let store = dir.path();
    let out = common::run_json(
        store,
        &workspace_root().join("cases/model/rollback.toml"),
        &guest("model-agent"),
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let s = Server::start(store, &[]);
    let run = s.get(&format!("/run/{id}"));
    assert_eq!(run.status, 200);
    let conv = &run.body[run
        .body
        .find("id=\"conversation\"")
        .expect("a conversation")..];
    // The model's tool calls, in order, and the tool results it was given.
    let lists = conv
        .find("→ list_deploys(")
        .expect("the model lists deploys");
    let rolls = conv.find("→ rollback_deploy(").expect("then rolls back");
    assert!(lists < rolls, "{conv}");
    assert!(
        conv.contains("class=\"msg tool\""),
        "tool results are messages: {conv}"
    );
}

/// The model usage table names what answered each call: a call the
/// scripted model failed (its first answer timed out) is the provider's,
/// `scripted`, as the calls it answered are. A failed call showed the
/// model the agent asked for (here none: `?`).
#[test]
fn model_usage_names_the_provider_of_a_failed_call_as_of_an_answered_one() {
    let dir = temp_dir();
    let store = dir.path();
    let out = common::run_json(
        store,
        &workspace_root().join("cases/model/model-timeout.toml"),
        &guest("model-agent"),
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let s = Server::start(store, &[]);
    let run = s.get(&format!("/run/{id}"));
    assert_eq!(run.status, 200);
    let table = &run.body[run.body.find("id=\"usage\"").expect("a usage table")..];
    let table = &table[..table.find("</table>").unwrap()];
    let models: Vec<&str> = (table.split("<td class=\"mono\">").skip(1))
        .map(|cell| &cell[..cell.find('<').unwrap()])
        .collect();
    assert!(models.len() > 1, "{table}");
    assert!(models.iter().all(|m| *m == "scripted"), "{models:?}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn a_python_run_folds_the_interpreter_start_up() {
    let dir = temp_dir();
    let store = dir.path();
    let agent = common::python_guest("examples/python-agent/agent.py");
    let out = common::run_json(
        store,
        &workspace_root().join("cases/incident/baseline.toml"),
        &agent,
    );
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = common::read_bundle(&out.bundle()).events;
    let first_own = events
        .iter()
        .position(|e| e["call"].as_str().unwrap().starts_with("worldline:"))
        .unwrap();
    assert!(
        first_own > 0,
        "CPython makes host calls before the agent's first"
    );
    let s = Server::start(store, &[]);
    let run = s.get(&format!("/run/{id}"));
    let folded = format!(
        "<details id=\"startup\"><summary>{first_own} interpreter start-up events (0–{})</summary>",
        first_own - 1
    );
    assert!(run.body.contains(&folded), "{}", run.body);
    // Folded (no `open`), and the agent's own first call is in the timeline.
    let timeline = &run.body[run.body.find("id=\"timeline\"").unwrap()..];
    assert!(timeline.contains(&format!("id=\"e{first_own}\"")));
}

/// The README shows the UI's screenshots, which the browser tests take:
/// every one it names is a PNG in docs/screenshots/, and every PNG there
/// is shown.
#[test]
fn the_readme_shows_every_screenshot_the_browser_tests_take() {
    let root = workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let named: std::collections::BTreeSet<String> = readme
        .split("(docs/screenshots/")
        .skip(1)
        .map(|rest| rest[..rest.find(')').unwrap()].to_string())
        .collect();
    let on_disk: std::collections::BTreeSet<String> =
        std::fs::read_dir(root.join("docs/screenshots"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
    assert_eq!(named, on_disk);
    let taken = std::fs::read_to_string(root.join("host/tests/ui_browser.rs")).unwrap();
    for name in &named {
        let bytes = std::fs::read(root.join("docs/screenshots").join(name)).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{name} is a PNG");
        assert!(
            taken.contains(&format!("\"{name}\")")),
            "{name} is taken by a browser test"
        );
    }
}

/// The run page shows the agent's own error (the `errored` reason) with
/// the task it was given and its output.
#[test]
fn the_run_page_shows_the_task_the_output_and_the_agents_own_error() {
    let dir = temp_dir();
    let case = common::write_case(
        dir.path(),
        "missing-ticket",
        "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = { ticket = \"T-404\" }\n",
    );
    let store = dir.path().join("store");
    let out = common::run_in(&store, &case, &guest("probe-agent"), &common::worlds_dir());
    assert_eq!(out.json()["run_status"], "errored", "{out}");
    let reason = out.json()["agent_error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let s = Server::start(&store, &[]);
    let page = s.get(&format!("/run/{id}")).body;
    let error = &page[page.find("id=\"agent-error\"").expect("the agent's error")..];
    let error = &error[..error.find("</p>").unwrap()];
    let escaped = reason
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    assert!(
        error.contains(&format!("agent errored: {escaped}")),
        "{error}"
    );
    let task = &page[page.find("id=\"task\"").expect("the task")..];
    assert!(
        task[..task.find("</div>").unwrap()].contains("T-404"),
        "{task}"
    );
    assert!(page.contains("id=\"output\""), "{page}");
}

#[test]
fn a_long_run_jumps_to_an_event_steps_model_calls_and_finds_text() {
    let dir = temp_dir();
    let (worlds, case) = common::long::write(dir.path(), 120);
    let store = dir.path().join("store");
    let out = worldline(
        &store,
        [
            std::ffi::OsStr::new("run"),
            case.as_os_str(),
            std::ffi::OsStr::new("--agent"),
            guest("looper-agent").as_os_str(),
            std::ffi::OsStr::new("--worlds"),
            worlds.as_os_str(),
            std::ffi::OsStr::new("--json"),
        ],
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let bundle = worldline_log::log::bundle::read(std::path::Path::new(
        out.json()["bundle"].as_str().unwrap(),
    ))
    .unwrap();
    let n = bundle.events.len();
    assert!(n > 200, "two pages of events: {n}");
    let model = |from: usize| {
        (from..n)
            .find(|&i| bundle.events[i].call == "worldline:agent/model.complete")
            .unwrap()
    };
    let s = Server::start(&store, &[]);

    // `?at=N` answers with the page holding event N, at its row.
    let r = s.get(&format!("/run/{id}?at=230"));
    assert_eq!(r.status, 303, "{r:?}");
    assert_eq!(
        r.header("location"),
        Some(format!("/run/{id}?page=2#e230").as_str()),
        "{r:?}"
    );
    for bad in [n.to_string(), "x".to_string()] {
        let r = s.get(&format!("/run/{id}?at={bad}"));
        assert_eq!(r.status, 400, "{r:?}");
        assert!(
            r.body.contains(&format!("numbered 0 to {}", n - 1)),
            "{}",
            r.body
        );
    }

    // The page's bar links the model calls either side of it.
    let first = s.get(&format!("/run/{id}"));
    assert_eq!(first.status, 200);
    let next = model(200);
    assert!(
        first.body.contains(&format!(
            "id=\"next-model\" href=\"/run/{id}?page=2#e{next}\""
        )),
        "page 1 links model call {next}: {}",
        first.body
    );
    assert!(first.body.contains("id=\"jump-at\""), "the jump form");
    let second = s.get(&format!("/run/{id}?page=2"));
    let prev = (0..200)
        .rev()
        .find(|&i| bundle.events[i].call == "worldline:agent/model.complete")
        .unwrap();
    assert!(
        second.body.contains(&format!(
            "id=\"prev-model\" href=\"/run/{id}?page=1#e{prev}\""
        )),
        "{}",
        second.body
    );

    // An event page steps to the next model call.
    let after_first = model(2);
    let event = s.get(&format!("/run/{id}/event/1"));
    assert!(
        event.body.contains(&format!(
            "id=\"next-model\" href=\"/run/{id}/event/{after_first}\""
        )),
        "{}",
        event.body
    );

    // A search lists the events holding the text, each linked.
    let tool = bundle
        .events
        .iter()
        .find(|e| e.call == "worldline:agent/tools.call" && e.request["args"]["id"] == "D-57")
        .unwrap()
        .seq;
    let found = s.get(&format!("/run/{id}?find=d57w3%20"));
    assert_eq!(found.status, 200);
    let section = &found.body[found.body.find("id=\"found\"").expect("a search")..];
    assert!(
        section.contains(&format!("href=\"/run/{id}/event/{tool}\"")),
        "the tool call that read D-57 is found: {section}"
    );
    let none = s.get(&format!("/run/{id}?find=no-such-text-anywhere"));
    assert!(none.body.contains("0 events hold"), "{}", none.body);
}

/// A long run's conversation is paged on its own, from its first model
/// call whatever page of the timeline is shown (the timeline's range cut
/// it: an SDK agent's 200 events held a turn or two, the first page of a
/// JS agent's run none), with a pager that keeps the timeline's page.
#[test]
fn a_long_runs_conversation_pages_on_its_own_from_the_first_call() {
    let dir = temp_dir();
    let (worlds, case) = common::long::write(dir.path(), 120);
    let store = dir.path().join("store");
    let out = worldline(
        &store,
        [
            std::ffi::OsStr::new("run"),
            case.as_os_str(),
            std::ffi::OsStr::new("--agent"),
            guest("looper-agent").as_os_str(),
            std::ffi::OsStr::new("--worlds"),
            worlds.as_os_str(),
            std::ffi::OsStr::new("--json"),
        ],
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let bundle = worldline_log::log::bundle::read(std::path::Path::new(
        out.json()["bundle"].as_str().unwrap(),
    ))
    .unwrap();
    let models: Vec<u64> = (bundle.events.iter())
        .filter(|e| e.call == "worldline:agent/model.complete")
        .map(|e| e.seq)
        .collect();
    assert_eq!(models.len(), 120);
    assert!(bundle.events.len() > 200, "two pages of events");
    let s = Server::start(&store, &[]);
    let conversation = |body: &str| -> String {
        let at = body.find("<h2>Conversation").expect("a conversation");
        body[at..].to_string()
    };
    let link = |seq: u64| format!("href=\"/run/{id}/event/{seq}\"");

    // The timeline's second page: the conversation from its first call.
    let page = s.get(&format!("/run/{id}?page=2"));
    assert_eq!(page.status, 200);
    let conv = conversation(&page.body);
    assert!(
        conv.contains("(1–50 of 120 model calls, turns and approvals)"),
        "{}",
        &conv[..conv.len().min(400)]
    );
    assert!(conv.contains(&link(models[0])), "the first model call");
    assert!(conv.contains(&link(models[49])) && !conv.contains(&link(models[50])));
    assert!(conv.contains(&format!(
        "id=\"next-conv\" href=\"/run/{id}?page=2&amp;conv=2#conversation\""
    )));

    // Its last page: the answer, and the way back.
    let last = s.get(&format!("/run/{id}?page=2&conv=3"));
    let conv = conversation(&last.body);
    assert!(
        conv.contains("(101–120 of 120"),
        "{}",
        &conv[..conv.len().min(400)]
    );
    assert!(conv.contains("All read.") && conv.contains(&link(models[119])));
    assert!(!conv.contains(&link(models[99])));
    assert!(conv.contains(&format!(
        "id=\"prev-conv\" href=\"/run/{id}?page=2&amp;conv=2#conversation\""
    )));
    assert!(!conv.contains("next-conv"));
}

/// A run of 300 calls that each add a note: its page shows a page's worth
/// of calls on the clock and at most 200 of the task's rows, and its last
/// event's page 200 of the notes table's rows and the one it added, each
/// with the count of the rest (the whole of each made a page grow with the
/// run).
#[test]
fn a_long_runs_pages_show_a_bounded_part_of_its_lists() {
    let dir = temp_dir();
    let calls: Vec<String> = (0..300)
        .map(|i| format!(r#"{{ tool = "add_note", args = {{ ticket = "T-1", text = "n{i}", author = "bot" }} }}"#))
        .collect();
    let case = common::write_case(
        dir.path(),
        "notes",
        &format!(
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{}] }}\n",
            calls.join(", ")
        ),
    );
    let store = dir.path().join("store");
    let (agent, worlds) = (guest("caller-agent"), workspace_root().join("tests/worlds"));
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
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let n = out.json()["events"].as_u64().unwrap();
    let s = Server::start(&store, &[]);
    let page = s.get(&format!("/run/{id}"));
    assert_eq!(page.status, 200);
    let lanes = page.body.matches("class=\"lane ").count();
    assert!(
        (1..=200).contains(&lanes),
        "{lanes} calls charted on page 1"
    );
    assert!(page.body.contains("300 calls"), "the chart counts them all");
    let task = &page.body[page.body.find("id=\"task\"").expect("the task")..];
    assert!(
        task.contains("… 100 more rows not shown"),
        "{}",
        &task[..task.len().min(2000)]
    );
    let last = s.get(&format!("/run/{id}/event/{}", n - 1));
    assert_eq!(last.status, 200);
    let notes = &last.body[last.body.find("<h3>notes").expect("the notes table")..];
    let notes = &notes[..notes.find("</table>").unwrap()];
    let rows = notes.matches("<tr id=\"row-notes-").count();
    assert!(rows <= 201, "{rows} rows of the notes table");
    assert!(
        notes.contains("class=\"changed\""),
        "the row the event added is shown"
    );
    assert!(notes.contains("more rows not shown"), "{notes}");
    assert!(
        page.body.len() + last.body.len() < 600_000,
        "{} and {} bytes",
        page.body.len(),
        last.body.len()
    );
}

/// After the UI replays a native run, SIGTERM still stops it: the run
/// left SIGINT and SIGTERM caught for the process's life, so the signal
/// was only noted (and ended the server inside its next native replay).
#[test]
fn sigterm_stops_the_ui_after_it_replays_a_native_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = common::write_case(dir.path(), "c", &common::passing_demo_case(1));
    // `--store` before `--exec --`, whose words are the command's.
    let ran = common::worldline_raw([
        "run".as_ref(),
        case.as_os_str(),
        "--worlds".as_ref(),
        common::worlds_dir().as_os_str(),
        "--json".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        "/bin/true".as_ref(),
    ]);
    let id = ran.json()["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{ran}"))
        .to_string();
    let mut s = Server::start(&store, &[]);
    let page = s.get(&format!("/run/{id}"));
    let csrf = input_value(&page.body, "csrf")
        .unwrap_or_else(|| panic!("the replay form carries the CSRF token: {page:?}"));
    let host = s.host();
    let r = request(
        s.port,
        "POST",
        &format!("/run/{id}/replay?token={}", s.token),
        &[
            ("Host", &host),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &form(&[("csrf", &csrf)]),
    );
    assert_eq!(r.status, 200, "{r:?}");
    // Said as a boundary replay, as `worldline replay` says it (it read
    // as a guest's bit-for-bit `identical`).
    assert!(
        r.body.contains("identical</span> at the boundary")
            && r.body.contains("boundary replay of a native agent"),
        "{}",
        r.body
    );
    assert!(
        s.terminated_within(std::time::Duration::from_secs(5)),
        "the UI still runs 5 s after SIGTERM"
    );
}

/// `ui BUNDLE` serves the store the bundle is in, as every command on one
/// run reads it (the page it printed was a 404 of the store named), and a
/// bundle of no store is refused saying so.
#[test]
fn ui_of_a_bundle_path_serves_its_store() {
    let dir = temp_dir();
    let store = dir.path().join("a");
    let case = common::write_case(dir.path(), "c", &common::passing_demo_case(1));
    let ran = common::run_in(&store, &case, &guest("caller-agent"), &common::worlds_dir());
    let id = ran.json()["run_id"].as_str().unwrap().to_string();
    let bundle = common::bundle_in(&store, &id);
    let s = Server::start(&dir.path().join("other"), &[bundle.to_str().unwrap()]);
    assert!(s.url.contains(&format!("/run/{id}")), "{}", s.url);
    assert_eq!(s.get(&format!("/run/{id}")).status, 200);
    // A folder store records no writers: the filter matched every run.
    let writer = s.get("/?writer=bob");
    assert_eq!(writer.status, 400, "{writer:?}");
    assert!(
        writer.body.contains("a folder store records no writers"),
        "{writer:?}"
    );
    assert!(!s.get("/").body.contains("id=\"f-writer\""));
    drop(s);
    let loose = dir.path().join("copy.jsonl");
    std::fs::copy(&bundle, &loose).unwrap();
    let out = worldline(&store, ["ui", "--port", "0", loose.to_str().unwrap()]);
    out.expect_code(2);
    assert!(
        out.stderr.contains("is no run of the store served"),
        "{out}"
    );
}

/// A jump to one of the runtime's own events (a clock read the looper
/// makes before each model call) lands on the page with those events
/// shown, server side (`noise=1`: the row was hidden by the page's
/// style, JavaScript or not), and so does the event page's way back; the
/// page without them offers a link that shows them with JavaScript off
/// (the checkbox did nothing without it).
#[test]
fn a_jump_to_a_runtime_event_shows_the_runtime_s_rows_without_javascript() {
    let dir = temp_dir();
    let (worlds, case) = common::long::write_task(dir.path(), 3, "clock_reads = 2");
    let store = dir.path().join("store");
    let out = common::run_in(&store, &case, &guest("looper-agent"), &worlds);
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let events = common::read_bundle(&out.bundle()).events;
    let clock = (events.iter())
        .position(|e| e["call"] == "wasi:clocks/monotonic-clock.now")
        .expect("the looper reads the monotonic clock");
    let s = Server::start(&store, &[]);
    let plain = s.get(&format!("/run/{id}"));
    assert!(
        plain
            .body
            .contains("<table id=\"timeline\" class=\"hide-noise\">"),
        "hidden by default"
    );
    assert!(
        plain.body.contains(&format!(
            "<noscript> <a id=\"noise-link\" href=\"/run/{id}?page=1&amp;noise=1\">show them</a>"
        )),
        "{}",
        plain.body
    );
    let to = format!("/run/{id}?page=1&noise=1#e{clock}");
    let r = s.get(&format!("/run/{id}?at={clock}"));
    assert_eq!(r.status, 303, "{r:?}");
    assert_eq!(r.header("location"), Some(to.as_str()), "{r:?}");
    let shown = s.get(&format!("/run/{id}?page=1&noise=1"));
    assert!(
        shown.body.contains("<table id=\"timeline\">"),
        "the runtime's rows show: {}",
        shown.body
    );
    assert!(
        shown
            .body
            .contains(&format!("<tr id=\"e{clock}\" class=\"noise\""))
    );
    assert!(
        shown
            .body
            .contains("id=\"show-noise\" type=\"checkbox\" checked")
    );
    assert!(shown.body.contains("hide them</a>"));
    let event = s.get(&format!("/run/{id}/event/{clock}"));
    assert!(
        event
            .body
            .contains(&format!("href=\"{}\"", to.replace('&', "&amp;"))),
        "the way back shows the row: {}",
        event.body
    );
    // A model call's row is never hidden: no `noise`.
    let model = (events.iter())
        .position(|e| e["call"] == "worldline:agent/model.complete")
        .unwrap();
    let r = s.get(&format!("/run/{id}?at={model}"));
    assert_eq!(
        r.header("location"),
        Some(format!("/run/{id}?page=1#e{model}").as_str())
    );
}

/// A model call that failed (a timeout) used no tokens: it costs $0, so
/// a priced run's cost is its answered calls' (one failed call made the
/// whole run's cost "no price" beside the hint to add the `[prices]`
/// table it had), and the chart names the call as the usage table does.
#[test]
fn a_failed_model_call_costs_nothing_and_has_one_name() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = common::run_json(
        &store,
        &workspace_root().join("cases/model/model-timeout.toml"),
        &guest("model-agent"),
    );
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    std::fs::write(
        dir.path().join("worldline.toml"),
        "[prices.\"scripted\"]\ninput_per_mtok = 2.5\noutput_per_mtok = 10.0\n",
    )
    .unwrap();
    let s = Server::start_in(dir.path(), &store, &[]);
    let run = s.get(&format!("/run/{id}"));
    assert_eq!(run.status, 200);
    let cost = &run.body[run.body.find("id=\"run-cost\">").expect("the run's cost")..];
    let cost = &cost["id=\"run-cost\">".len()..cost.find('<').unwrap()];
    assert!(cost.starts_with('$'), "the run's cost: {cost}");
    assert!(!run.body.contains("Costs come from"), "{}", run.body);
    let usage = &run.body[run.body.find("id=\"usage\"").unwrap()..];
    let usage = &usage[..usage.find("</table>").unwrap()];
    assert!(!usage.contains("no price"), "{usage}");
    let chart = &run.body[run.body.find("id=\"calls\"").expect("the chart")..];
    let names: Vec<&str> = (chart
        .split("k-model\">model</span> <span class=\"mono\">")
        .skip(1))
    .map(|rest| &rest[..rest.find('<').unwrap()])
    .collect();
    assert!(names.len() > 1, "{chart}");
    assert!(names.iter().all(|n| *n == "scripted"), "{names:?}");
}

/// A run of more model calls than a page shows lists in its usage table
/// those of the timeline's page, with a way to the others (600 rows for
/// a 600-call run before), which keeps the runtime's rows shown when the
/// page shows them (`noise=1`, as the timeline's pager keeps it: the
/// usage table's links dropped it).
#[test]
fn a_long_run_s_usage_table_lists_the_calls_of_the_page() {
    let dir = temp_dir();
    let (worlds, case) = common::long::write(dir.path(), 210);
    let store = dir.path().join("store");
    let out = common::run_in(&store, &case, &guest("looper-agent"), &worlds);
    out.expect_code(0);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let s = Server::start(&store, &[]);
    let rows = |page: &str| {
        let usage = &page[page.find("id=\"usage\"").expect("a usage table")..];
        let usage = &usage[..usage.find("</table>").unwrap()];
        usage.matches("<tr><td><a href=").count()
    };
    let first = s.get(&format!("/run/{id}"));
    assert!(first.body.contains("<b>210 model calls</b>"), "all counted");
    let on_first = rows(&first.body);
    assert!((1..=200).contains(&on_first), "{on_first} rows");
    assert!(
        first.body.contains(&format!(
            "the {on_first} of 210 calls among events 0–199 (the timeline's page 1)"
        )),
        "{}",
        first.body
    );
    assert!(
        first
            .body
            .contains(&format!("href=\"/run/{id}?page=2#usage\""))
    );
    let second = s.get(&format!("/run/{id}?page=2"));
    assert!(rows(&second.body) > 0 && rows(&second.body) <= 200);
    assert!(
        second
            .body
            .contains(&format!("href=\"/run/{id}?page=1#usage\""))
    );
    for (page, to) in [(1, 2), (2, 1)] {
        let noisy = s.get(&format!("/run/{id}?page={page}&noise=1"));
        assert_eq!(noisy.status, 200, "{noisy:?}");
        let pager = &noisy.body[noisy.body.find("id=\"usage-page\"").expect("a pager")..];
        let pager = &pager[..pager.find("</p>").unwrap()];
        assert!(
            pager.contains(&format!("href=\"/run/{id}?page={to}&amp;noise=1#usage\"")),
            "page {page}: {pager}"
        );
        assert!(
            (noisy.body).contains(&format!("href=\"/run/{id}?page={to}&amp;noise=1\"")),
            "the timeline's pager keeps it too"
        );
    }
}

/// A run that trapped shows the guest's backtrace on its page, as `run`
/// prints it (the page never showed it).
#[test]
fn a_trapped_run_shows_its_guest_backtrace() {
    let dir = temp_dir();
    let store = dir.path();
    let out = common::run_json(
        store,
        &common::case("hostile-panic"),
        &guest("hostile-agent"),
    );
    out.expect_code(3);
    let id = out.json()["run_id"].as_str().unwrap().to_string();
    let s = Server::start(store, &[]);
    let run = s.get(&format!("/run/{id}"));
    let trace = &run.body[run
        .body
        .find("<pre id=\"backtrace\">")
        .expect("the backtrace")..];
    let trace = &trace[..trace.find("</pre>").unwrap()];
    assert!(trace.contains("hostile_agent"), "{trace}");
}

/// `ui --open` whose opener fails (no browser: `xdg-open` ends non-zero)
/// says so on stderr, and the opener is reaped: it was spawned and never
/// waited for, its failure silent and the process left a zombie.
#[test]
fn ui_open_says_an_opener_that_fails_and_leaves_no_zombie() {
    use std::io::BufRead;
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = common::write_case(dir.path(), "passes", common::DEMO_PASSES);
    common::run_in(&store, &case, &guest("caller-agent"), &common::worlds_dir()).expect_code(0);
    // Openers that fail, first on PATH.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for opener in ["xdg-open", "open"] {
        let path = bin.join(opener);
        std::fs::write(&path, "#!/bin/sh\nexit 3\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_worldline"))
        .args(["ui", "--port", "0", "--open", "--store"])
        .arg(&store)
        .env("PATH", path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("worldline ui starts");
    /// The server, killed when the test ends.
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut ui = Killed(child);
    let _stdout = ui.0.stdout.take();
    let stderr = ui.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    // Generous: a loaded machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut said = Vec::new();
    let message = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("could not open a browser") => break line,
            Ok(line) => said.push(line),
            Err(_) => panic!("no word of the opener's failure; stderr: {said:?}"),
        }
    };
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    assert!(
        message.contains(&format!("({opener} ended with exit status: 3)"))
            && message.ends_with("open the URL above"),
        "{message}"
    );
    // Its children: none is a zombie (the opener was waited for).
    let pid = ui.0.id().to_string();
    let zombies: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = after.split_whitespace().collect();
            fields.len() > 1 && fields[1] == pid && fields[0] == "Z"
        })
        .collect();
    assert!(zombies.is_empty(), "zombie children: {zombies:?}");
}

/// A fork made from its form is in the run index when the page answers,
/// as `worldline fork`'s run is once it returns: its row waited in the
/// server's queue (the end of a command's process commits its rows; a
/// server's does not end) until something read the index, and `index
/// --check` found it missing. A replay keeps no run: the index is whole
/// after it too.
#[test]
fn a_fork_from_its_form_is_indexed_before_the_answer() {
    let dir = temp_dir();
    let store = dir.path();
    let fx = fixture(store);
    let s = Server::start(store, &[]);
    let host = s.host();
    let event = s.get(&format!("/run/{}/event/{}", fx.failed, fx.stale));
    let csrf = input_value(&event.body, "csrf").expect("the fork form");
    let ct = ("Content-Type", "application/x-www-form-urlencoded");
    let checked = || {
        let check = worldline(store, ["index", "--check", "--json"]);
        assert_eq!(check.json()["missing"], serde_json::json!([]), "{check}");
        check.expect_code(0);
    };
    let r = request(
        s.port,
        "POST",
        &format!(
            "/run/{}/event/{}/fork?token={}",
            fx.failed, fx.stale, s.token
        ),
        &[("Host", &host), ct],
        &form(&[("csrf", &csrf)]),
    );
    assert_eq!(r.status, 303, "{r:?}");
    checked();
    let before = runs_in(store);
    let r = request(
        s.port,
        "POST",
        &format!("/run/{}/replay?token={}", fx.passed, s.token),
        &[("Host", &host), ct],
        &form(&[("csrf", &csrf)]),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(runs_in(store), before, "a replay keeps no run");
    checked();
}

/// A client that stops partway through a request's headers, or sends
/// none, is closed 10 s after it connected, and no more than 64
/// connections are served at once: it was answered whenever it went on
/// (a 40 s stall, then 200), held its connection for good, and a few
/// hundred such held every descriptor the server had.
#[test]
fn a_request_left_half_sent_is_closed_and_connections_are_capped() {
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};
    let dir = temp_dir();
    std::fs::create_dir(dir.path().join("runs")).unwrap();
    let s = Server::start(dir.path(), &[]);
    let addr = ("127.0.0.1", s.port);
    let mut partial = TcpStream::connect(addr).unwrap();
    partial
        .write_all(format!("GET /?token={} HTTP/1.1\r\n", s.token).as_bytes())
        .unwrap();
    let began = Instant::now();
    let cap = worldline_engine::native::listen::MAX_CONNECTIONS as usize;
    let mut silent: Vec<TcpStream> = (1..cap)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    // One past the cap waits in the kernel's queue, unanswered.
    let mut waiting = TcpStream::connect(addr).unwrap();
    waiting
        .write_all(
            format!(
                "GET /?token={} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                s.token,
                s.host()
            )
            .as_bytes(),
        )
        .unwrap();
    waiting
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut first = [0u8; 1];
    let early = waiting.read(&mut first);
    assert!(
        early.is_err(),
        "answered past the cap of {cap} connections: {early:?}"
    );
    for c in std::iter::once(&mut partial).chain(silent.iter_mut()) {
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut rest = Vec::new();
        let read = c.read_to_end(&mut rest);
        assert!(read.is_ok(), "still open after 30 s: {read:?}");
    }
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    // Those closed, the one that waited is served.
    waiting
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut said = String::new();
    waiting.read_to_string(&mut said).unwrap();
    assert!(said.starts_with("HTTP/1.1 200"), "{said}");
    assert_eq!(s.get("/").status, 200);
}

/// The notes a fork from the form gets (a `set` that makes a row) pass
/// through the store's policy as the page below them does: a row's key
/// the email detector hides was shown whole in them.
#[test]
fn a_fork_s_notes_on_the_page_are_redacted() {
    let dir = temp_dir();
    let store = dir.path();
    let case = workspace_root().join("cases/support/refund-confirmed.toml");
    let ran = common::run_json(store, &case, &guest("careful-agent"));
    let id = ran.json()["run_id"].as_str().unwrap().to_string();
    std::fs::write(store.join("redact.toml"), "detectors = [\"email\"]\n").unwrap();
    let s = Server::start(store, &[]);
    let host = s.host();
    let event = s.get(&format!("/run/{id}/event/2"));
    let csrf = input_value(&event.body, "csrf").expect("the fork form's CSRF token");
    let set =
        r#"customers/"bob@evil.com"={"id":"bob@evil.com","name":"Bob","email":"bob@evil.com"}"#;
    let r = request(
        s.port,
        "POST",
        &format!("/run/{id}/event/2/fork?token={}", s.token),
        &[
            ("Host", &host),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &form(&[("set", set), ("csrf", &csrf)]),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("fork-notes"), "{}", r.body);
    assert!(!r.body.contains("bob@evil.com"), "{}", r.body);
}
