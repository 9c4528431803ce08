//! Hardening of what the store keeps to itself: every view of a run
//! (every page and form answer of `worldline ui`, `history`, `show`,
//! `diff`, `otel`) applies the store's `redact.toml`, and the UI's route
//! parameters are run ids resolved inside the store, never file paths.
//! The real binary on the `caller-agent` guest in a small CRM world whose
//! rows carry e-mail addresses and customer references.

use crate::common;
use crate::ui_support;

use common::crm::{POLICY, ROWS, SET_EMAIL};
use common::{CRM_WORLD, guest, temp_dir, worldline, write_case, write_world};
use std::path::{Path, PathBuf};
use ui_support::{Server, form, input_value, request};

/// The CRM case, with a fault profile for a campaign.
fn case() -> String {
    format!(
        "{}\n[fuzz]\n[[fuzz.tools]]\ntool = \"get_customer\"\nerror = {{ unavailable = 0.5 }}\n",
        common::crm::CASE
    )
}

/// What no view may show once the policy is in place.
const SECRETS: [&str; 8] = [
    "ana.lopez@example.com",
    "bo@example.org",
    "bo.chen@example.net",
    "someone.else@example.com",
    "zed@example.net",
    "yan@example.net",
    "CUST-004211",
    "CUST-000007",
];

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

struct Crm {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
    run: String,
    fork: String,
    campaign: String,
}

/// A store with a failed run, a fork of it made with a patch that writes
/// an address (so the fork's header edits carry one), a fuzz campaign,
/// and then the redaction policy.
fn crm() -> Crm {
    let dir = temp_dir();
    let root = dir.path().to_path_buf();
    let world = format!("{CRM_WORLD}{SET_EMAIL}");
    let worlds = write_world(&root, "crm", &world, &[("data/customers.jsonl", ROWS)]);
    let case = write_case(&root, "crm", &case());
    let store = root.join("store");
    let agent = guest("caller-agent");
    let out = worldline(
        &store,
        [
            "run",
            s(&case),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "--json",
        ],
    );
    out.expect_code(1);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let fork = worldline(
        &store,
        [
            "fork",
            run.as_str(),
            "--at",
            "0",
            "--set",
            "customers/CUST-004211.email=\"zed@example.net\"",
            "--json",
        ],
    );
    let fork = fork.json()["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{fork}"))
        .to_string();
    let fuzz = worldline(
        &store,
        [
            "fuzz",
            s(&case),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
            "--runs",
            "4",
            "--json",
        ],
    );
    let campaign = std::fs::read_dir(store.join("campaigns"))
        .unwrap_or_else(|e| panic!("no campaign kept ({e}):\n{fuzz}"))
        .next()
        .unwrap()
        .unwrap()
        .path()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    std::fs::write(store.join("redact.toml"), POLICY).unwrap();
    Crm {
        _dir: dir,
        root,
        store,
        run,
        fork,
        campaign,
    }
}

#[track_caller]
fn hides_everything(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(
            !text.contains(secret),
            "{what} shows `{secret}` although redact.toml hides it:\n{text}"
        );
    }
}

/// The seqs of a run's events, or of its tool calls only.
fn seqs(store: &Path, run: &str, only_tools: bool) -> Vec<u64> {
    let mut args = vec!["history", run, "--json"];
    if only_tools {
        args.extend(["--only", "tools"]);
    }
    let h = worldline(store, &args);
    h.expect_code(0);
    h.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect()
}

#[test]
fn every_ui_page_and_form_answer_applies_the_stores_redaction_policy() {
    let c = crm();
    // The policy finds something to hide in every run: without it, the
    // pages below would show these values.
    let raw = worldline(&c.store, ["history", c.run.as_str(), "--unredacted"]);
    assert!(raw.stdout.contains("CUST-004211"), "{raw}");

    let server = Server::start(&c.store, &[]);
    let mut pages: Vec<String> = vec![
        "/".into(),
        format!("/?signature={}", "failed"),
        "/campaigns".into(),
        format!("/campaign/{}", c.campaign),
        format!("/diff?a={}&b={}", c.run, c.fork),
    ];
    for run in [&c.run, &c.fork] {
        pages.push(format!("/run/{run}"));
        for n in seqs(&c.store, run, false) {
            pages.push(format!("/run/{run}/event/{n}"));
        }
    }
    for path in &pages {
        let r = server.get(path);
        assert_eq!(r.status, 200, "{path}: {r:?}");
        hides_everything(&format!("GET {path}"), &r.body);
    }
    // The views added to these pages were among what was checked: the
    // task (its calls name customers), the output, the calls on the
    // virtual clock, the campaign against its baseline run.
    let run_page = server.get(&format!("/run/{}", c.run)).body;
    for view in [
        "id=\"task\"",
        "id=\"output\"",
        "id=\"calls\"",
        "id=\"timeline\"",
    ] {
        assert!(run_page.contains(view), "the run page has {view}");
    }
    let campaign = server.get(&format!("/campaign/{}", c.campaign)).body;
    assert!(
        campaign.contains("id=\"baseline-run\"")
            && campaign.contains(&format!("href=\"/run/{}\"", c.run)),
        "the campaign's baseline is the first run: {campaign}"
    );

    // The forms: a replay's verdict page, a fork refused (its page shows
    // the recorded answer and the error again), and a fork accepted.
    let call = seqs(&c.store, &c.run, true)[2];
    let event = server.get(&format!("/run/{}/event/{call}", c.run));
    let csrf = input_value(&event.body, "csrf").expect("a CSRF token");
    let host = server.host();
    let post = |path: &str, pairs: &[(&str, &str)]| {
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(pairs);
        request(
            server.port,
            "POST",
            &format!("{path}?token={}", server.token),
            &[
                ("Host", host.as_str()),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            &form(&all),
        )
    };
    let r = post(&format!("/run/{}/replay", c.run), &[]);
    assert_eq!(r.status, 200, "{r:?}");
    hides_everything("the replay verdict page", &r.body);
    let r = post(
        &format!("/run/{}/event/{call}/fork", c.run),
        &[("set", "nowhere/x=1")],
    );
    assert_eq!(r.status, 400, "{r:?}");
    hides_everything("a refused fork's page", &r.body);
    let r = post(
        &format!("/run/{}/event/{call}/fork", c.run),
        &[(
            "respond",
            r#"{"ok": {"id": "CUST-000007", "email": "yan@example.net"}}"#,
        )],
    );
    assert_eq!(r.status, 303, "{r:?}");
    let to = r.header("location").unwrap().to_string();
    let r = server.get(&to);
    assert_eq!(r.status, 200, "{to}: {r:?}");
    hides_everything("the new fork's page", &r.body);
    let new_fork = to.trim_start_matches("/run/").to_string();
    let r = server.get(&format!("/run/{new_fork}/event/{call}"));
    hides_everything("the new fork's answered event", &r.body);
    drop(server);

    // --unredacted shows them: the pages above had something to hide.
    let open = Server::start(&c.store, &["--unredacted"]);
    let r = open.get(&format!("/run/{}", c.run));
    assert!(r.body.contains("CUST-004211"), "{r:?}");
    let task = &r.body[r.body.find("id=\"task\"").unwrap()..];
    assert!(
        task[..task.find("</div>").unwrap()].contains("CUST-004211"),
        "the task view had a customer to hide: {task}"
    );
}

#[test]
fn history_show_diff_and_otel_apply_the_policy_to_headers_and_grades_too() {
    let c = crm();
    let views = [
        vec!["history", c.fork.as_str()],
        vec!["history", c.fork.as_str(), "--json"],
        vec!["history", c.run.as_str()],
        vec!["show", c.run.as_str(), "--at", "1", "--json"],
        vec!["diff", c.run.as_str(), c.fork.as_str()],
        vec!["diff", c.run.as_str(), c.fork.as_str(), "--json"],
    ];
    for args in views {
        let out = worldline(&c.store, &args);
        assert!(out.code == 0 || out.code == 1, "{args:?}: {out}");
        hides_everything(&args.join(" "), &out.stdout);
    }
    let spans = c.root.join("spans.json");
    let out = worldline(
        &c.store,
        [
            "otel",
            c.run.as_str(),
            c.fork.as_str(),
            "--content",
            "--output",
            s(&spans),
        ],
    );
    out.expect_code(0);
    let bytes = std::fs::read(&spans).unwrap();
    hides_everything("the OTel export", &String::from_utf8_lossy(&bytes));
}

#[test]
fn ui_routes_take_run_ids_of_the_store_and_nothing_else() {
    let c = crm();
    // A run of another store, and a file that is not a run at all.
    let other = c.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let bundle = common::bundle_in(&c.store, &c.run);
    let outside = other.join("stolen.jsonl");
    std::fs::copy(&bundle, &outside).unwrap();
    let server = Server::start(&c.store, &[]);
    let enc = |p: &Path| {
        p.to_str()
            .unwrap()
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect::<String>()
    };
    let passwd = enc(Path::new("/etc/passwd"));
    let stolen = enc(&outside);
    let relative = enc(Path::new("../other/stolen"));
    for path in [
        format!("/run/{stolen}"),
        format!("/run/{stolen}/event/0"),
        format!("/run/{passwd}"),
        format!("/run/{passwd}/event/0"),
        format!("/run/{relative}"),
        format!("/diff?a={}&b={stolen}", c.run),
        format!("/diff?a={stolen}&b={}", c.run),
        "/run/%2E%2E".to_string(),
        "/campaign/%2E%2E%2Fruns%2Fx".to_string(),
    ] {
        let r = server.get(&path);
        assert_eq!(r.status, 404, "GET {path}: {r:?}");
        assert!(
            !r.body.contains("root:") && !r.body.contains("CUST-004211"),
            "GET {path} shows what it read: {r:?}"
        );
    }
    // An id and a unique prefix of one still open the run.
    for id in [c.run.clone(), c.run[..c.run.len() - 2].to_string()] {
        let r = server.get(&format!("/run/{id}"));
        assert_eq!(r.status, 200, "{id}: {r:?}");
    }
}

/// The network is not part of a world: every call is denied and recorded.
mod network {
    use crate::common::*;
    use serde_json::Value;

    #[test]
    fn a_rust_name_lookup_is_denied_and_recorded() {
        let dir = temp_dir();
        let c = write_case(
            dir.path(),
            "resolve",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"resolve\" }\n",
        );
        let run = run_in_demo(&c, &hostile());
        run.expect_code(0);
        let out: Value = serde_json::from_str(run.json()["output"].as_str().unwrap()).unwrap();
        assert!(out["resolve_error"].is_string(), "{out}");
        let bundle = read_bundle(&run.bundle());
        assert!(
            bundle.events.iter().any(|e| e["call"]
                == "wasi:sockets/ip-name-lookup.resolve-addresses"
                && e["effect"] == "denied"),
            "the lookup is a denied event"
        );
    }

    #[test]
    #[cfg_attr(
        not(worldline_tests_run),
        ignore = "needs componentize-py: run tests/run, which installs it"
    )]
    fn python_network_calls_are_denied_and_catchable() {
        let agent = python_guest("tests/guests/python-hostile/agent.py");
        let dir = temp_dir();
        let c = write_case(
            dir.path(),
            "py-net",
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"network\" }\n",
        );
        let run = run_in_demo(&c, &agent);
        run.expect_code(0);
        assert_eq!(run.json()["status"], "completed", "{run}");
        let out: Value = serde_json::from_str(run.json()["output"].as_str().unwrap()).unwrap();
        for attempt in [
            "getaddrinfo",
            "gethostbyname",
            "create_connection",
            "urlopen",
        ] {
            assert!(
                out[attempt]["error"].is_string(),
                "{attempt} raised an exception the agent caught: {out}"
            );
        }
        let bundle = read_bundle(&run.bundle());
        assert!(
            bundle
                .events
                .iter()
                .any(|e| e["effect"] == "denied" && e["call"].as_str().unwrap().contains("sockets")),
            "the attempts are denied events"
        );
    }
}

/// The views of a model-driven run (the conversation with its tool
/// results as tables, the usage, the calls on the virtual clock, the
/// model's rows of the timeline, the output) show it through the policy.
#[test]
fn a_model_driven_runs_views_apply_the_policy_too() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = common::run_json(
        &store,
        &common::workspace_root().join("cases/model/rollback.toml"),
        &guest("model-agent"),
    );
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    std::fs::write(
        store.join("redact.toml"),
        "[[custom]]\nname = \"deploy\"\npattern = \"D-4[0-9]\"\n",
    )
    .unwrap();
    let server = Server::start(&store, &[]);
    let page = server.get(&format!("/run/{run}"));
    assert_eq!(page.status, 200);
    for view in [
        "id=\"conversation\"",
        "class=\"rows\"",
        "id=\"usage\"",
        "id=\"calls\"",
        "id=\"output\"",
    ] {
        assert!(page.body.contains(view), "the page has {view}");
    }
    assert!(
        !page.body.contains("D-4"),
        "a deploy id shows:\n{}",
        page.body
    );
    for n in seqs(&store, &run, false) {
        let ev = server.get(&format!("/run/{run}/event/{n}"));
        assert!(!ev.body.contains("D-4"), "event {n} shows a deploy id");
    }
    drop(server);
    let open = Server::start(&store, &["--unredacted"]);
    let page = open.get(&format!("/run/{run}")).body;
    let conversation = &page[page.find("id=\"conversation\"").unwrap()..];
    assert!(
        conversation.contains("D-42"),
        "the conversation had one to hide"
    );
}
