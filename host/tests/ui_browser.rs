//! `worldline ui` in a real headless Chromium (through chromedriver): the
//! debugging flow a user follows, once with the mouse and once with the
//! keyboard. Open the runs, filter to the failed run, open it, step to the
//! stale event, read the state, fork with a fresh response, see the fork
//! pass, open the diff. Screenshots of every page land in
//! `<target>/tmp/ui-screenshots/<flow>/`.

mod common;
mod ui_support;

use common::temp_dir;
use std::path::PathBuf;
use ui_support::webdriver::Browser;
use ui_support::{Server, fixture};

fn shots(flow: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("ui-screenshots")
        .join(flow)
}

#[test]
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
    b.screenshot(&out.join("4-event.png"));

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
    b.screenshot(&out.join("6-diff.png"));
}

#[test]
fn the_debugging_flow_with_the_keyboard() {
    let dir = temp_dir();
    let fx = fixture(dir.path());
    let server = Server::start(dir.path(), &[]);
    let b = Browser::start();
    let out = shots("keyboard");

    b.goto(&server.url);
    b.find("#runs");
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
