//! Readers of a PostgreSQL store by role: a viewer (a login role in
//! `<schema>_viewer`) reaches no raw value through any CLI reader, its
//! working folder, SQL or any UI route, and what needs raw data is refused
//! naming the role; each responder's unredacted read (CLI or UI token) is
//! audited and listed by `worldline audit`; `merge --suite` reads a
//! suite's shard reports from the database, and the UI the campaigns any
//! machine's `fuzz` kept there. The real binary, on a throwaway cluster
//! (`common/pg.rs`).

use crate::common;
use crate::ui_support;

use common::crm::{CASE as CRM_CASE, POLICY, ROWS as CRM_ROWS, SET_EMAIL};
use common::pg::{PASSWORD, cluster, fresh_schema};
use common::{guest, temp_dir, worldline, write_case};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// Readers by role: a viewer reaches no raw value by any route; each
// responder's raw read is audited.

/// What no viewer may see once the policy is set.
const SECRETS: [&str; 7] = [
    "ana.lopez@example.com",
    "bo@example.org",
    "bo.chen@example.net",
    "someone.else@example.com",
    "zed@example.net",
    "CUST-004211",
    "CUST-000007",
];

#[track_caller]
fn hides(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows `{secret}`:\n{text}");
    }
    assert!(!text.contains(PASSWORD), "{what} shows the password");
}

/// A store (written by the cluster's superuser, its owner) with a failed
/// run and a fork of it that writes an address, and two login roles: a
/// viewer and a responder. `policy`: the store's policy is then set.
struct Team {
    dir: tempfile::TempDir,
    schema: String,
    owner: PathBuf,
    viewer: PathBuf,
    responder: PathBuf,
    run: String,
    fork: String,
}

fn team(policy: bool) -> Team {
    let pg = cluster();
    let schema = fresh_schema();
    let owner = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    let world = format!("{}{SET_EMAIL}", common::CRM_WORLD);
    let worlds = common::write_world(
        dir.path(),
        "crm",
        &world,
        &[("data/customers.jsonl", CRM_ROWS)],
    );
    let case = write_case(dir.path(), "crm", CRM_CASE);
    let out = common::run_in(&owner, &case, &guest("caller-agent"), &worlds);
    out.expect_code(1);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let set = "customers/CUST-004211.email=\"zed@example.net\"";
    let fork = worldline(&owner, ["fork", &run, "--at", "0", "--set", set, "--json"]);
    let fork = fork.json()["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{fork}"))
        .to_string();
    if policy {
        let file = dir.path().join("redact.toml");
        std::fs::write(&file, POLICY).unwrap();
        let set = worldline(&owner, ["redaction", "--set", s(&file), "--json"]);
        set.expect_code(0);
        assert_eq!(set.json()["copies_made"], 2, "{set}");
    }
    let (v, r) = (format!("{schema}_v"), format!("{schema}_r"));
    pg.login(&v, &format!("{schema}_viewer"));
    pg.login(&r, &format!("{schema}_responder"));
    Team {
        viewer: pg.store_as(&v, &schema),
        responder: pg.store_as(&r, &schema),
        dir,
        schema,
        owner,
        run,
        fork,
    }
}

/// Every file under `dir`, as text.
fn texts_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(texts_under(&p));
        } else if let Ok(bytes) = std::fs::read(&p) {
            out.push((p, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_viewer_gets_only_the_redacted_view_from_every_cli_reader_its_folder_and_sql() {
    let t = team(false);
    let (v, run, fork) = (&t.viewer, t.run.as_str(), t.fork.as_str());
    // Under the default policy (every built-in detector) addresses are
    // hidden and customer references are not; a new policy makes every
    // copy again, and the viewer's folder takes them on its next read.
    let before = worldline(v, ["history", run, "--full"]);
    before.expect_code(0);
    assert!(
        before.stdout.contains("CUST-004211") && !before.stdout.contains("ana.lopez@"),
        "{before}"
    );
    let file = t.dir.path().join("redact.toml");
    std::fs::write(&file, POLICY).unwrap();
    worldline(&t.responder, ["redaction", "--set", s(&file)]).expect_code(0);
    std::thread::sleep(std::time::Duration::from_millis(1100));

    let out = |name: &str| t.dir.path().join(name);
    let shown = [
        worldline(v, ["runs", "--json"]),
        worldline(v, ["history", run, "--full"]),
        worldline(v, ["history", fork, "--json", "--full"]),
        worldline(v, ["export", run, "-o", s(&out("e.json"))]),
        worldline(v, ["export", fork, "--redacted", "-o", s(&out("r.json"))]),
        worldline(
            v,
            [
                "export",
                run,
                "--format",
                "trajectories",
                "-o",
                s(&out("t.jsonl")),
            ],
        ),
        worldline(v, ["otel", run, fork, "--content", "-o", s(&out("o.json"))]),
    ];
    for o in &shown {
        o.expect_code(0);
        hides("a viewer's command", &format!("{o}"));
    }
    // The store's run as a viewer reads it: a redacted view, not a copy
    // someone made of it.
    assert!(shown[1].stdout.contains("redacted view: "), "{}", shown[1]);
    assert!(
        !shown[1].stdout.contains("not the original"),
        "{}",
        shown[1]
    );
    assert_eq!(shown[2].json()["redacted_view"], true, "{}", shown[2]);
    for f in ["e.json", "r.json", "t.jsonl", "o.json"] {
        hides(f, &String::from_utf8_lossy(&std::fs::read(out(f)).unwrap()));
    }
    // A viewer's export is a redacted copy, under `<id>-redacted` as a
    // responder's `--redacted` is (it kept the run's own id, which an
    // import of the run then found taken), and says so.
    assert!(
        shown[3]
            .stdout
            .contains(&format!("exported a redacted copy {run}-redacted to")),
        "{}",
        shown[3]
    );
    assert!(
        shown[4]
            .stdout
            .contains(&format!("copy {fork}-redacted to")),
        "{}",
        shown[4]
    );
    // So are its trajectories (they went under the run's own id, beside
    // the unredacted run's, with nothing to tell them apart).
    let line: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(out("t.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["run_id"], format!("{run}-redacted"), "{line}");
    assert!(
        shown[5].stdout.contains("exported 1 trajectory to"),
        "{}",
        shown[5]
    );
    // What needs raw data is refused, naming the role to ask for.
    let needed = format!("{}_responder", t.schema);
    for args in [
        vec!["history", run, "--unredacted"],
        vec!["show", run, "--at", "1"],
        vec!["diff", run, fork],
        vec!["replay", run],
        vec![
            "fork",
            run,
            "--at",
            "0",
            "--set",
            "customers/CUST-000007.email=\"x@y.z\"",
        ],
        vec!["rerun", run, "--agent", s(&guest("caller-agent"))],
        vec!["verify"],
        vec!["verify", "--verify-worker", "1"],
        vec!["audit"],
        vec!["redaction"],
    ] {
        let o = worldline(v, &args);
        assert_ne!(o.code, 0, "{args:?}: {o}");
        assert!(o.stderr.contains(&needed), "{args:?} names the role: {o}");
        hides("a refusal", &format!("{o}"));
    }
    // What stores runs is refused before it runs any (they were run, each
    // refused, and left in the viewer's folder listed as the store's).
    let case = t.dir.path().join("crm.toml");
    let (agent, worlds) = (guest("caller-agent"), t.dir.path().join("worlds"));
    let listed = |o: &common::CliOutput| o.json()["runs"].as_array().map_or(0, Vec::len);
    let before = listed(&worldline(v, ["runs", "--json"]));
    for args in [
        vec![
            "test",
            s(&case),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
        ],
        vec![
            "run",
            s(&case),
            "--agent",
            s(&agent),
            "--worlds",
            s(&worlds),
        ],
        vec!["import", s(&out("r.json"))],
    ] {
        let o = worldline(v, &args);
        o.expect_code(2);
        assert!(o.stderr.contains(&needed), "{args:?} names the role: {o}");
    }
    assert_eq!(listed(&worldline(v, ["runs", "--json"])), before);
    // The viewer's working folder holds redacted copies only.
    let folder = common::store_folder(v);
    let files = texts_under(&folder);
    assert!(
        files
            .iter()
            .any(|(p, _)| p.to_string_lossy().ends_with(&format!("{run}.jsonl")))
    );
    for (p, text) in &files {
        hides(&p.display().to_string(), text);
    }
    // And SQL as the viewer reaches no raw line, object, salt or audit.
    let pg = cluster();
    let user = format!("{}_v", t.schema);
    for table in ["frames", "objects", "redaction", "audit"] {
        let e = pg
            .psql_as(&user, &format!("SELECT * FROM {}.{table}", t.schema))
            .unwrap_err();
        assert!(e.contains("permission denied"), "{table}: {e}");
    }
    let e = pg
        .psql_as(
            &user,
            &format!("INSERT INTO {}.audit (command) VALUES ('x')", t.schema),
        )
        .unwrap_err();
    assert!(e.contains("permission denied"), "{e}");
    let copies = pg
        .psql_as(
            &user,
            &format!(
                "SELECT string_agg(line, '') FROM {}.redacted_frames",
                t.schema
            ),
        )
        .unwrap();
    assert!(copies.contains("<customer:"), "{copies}");
    hides("the redacted copies", &copies);
}

/// A `worldline ui` with one URL per token (killed when dropped).
struct Ui {
    child: std::process::Child,
    port: u16,
    /// Each token's name, role and secret, as printed.
    tokens: Vec<(String, String, String)>,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Ui {
    fn start(store: &Path, args: &[&str]) -> Ui {
        Ui::start_in(store, &common::store_cache(), args)
    }

    /// [`Ui::start`] on a machine whose working folders are under `cache`.
    fn start_in(store: &Path, cache: &Path, args: &[&str]) -> Ui {
        use std::io::BufRead as _;
        let mut child = crate::common::cli()
            .args(["ui", "--port", "0", "--store"])
            .arg(store)
            .args(args)
            .env("WORLDLINE_STORE_CACHE", cache)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut port, mut tokens, mut url) = (0, Vec::new(), String::new());
        for line in lines.by_ref() {
            let line = line.unwrap();
            hides("ui's output", &line);
            if let Some(u) = line.strip_prefix("worldline ui on ") {
                url = u.to_string();
                let rest = u.strip_prefix("http://127.0.0.1:").unwrap();
                port = rest[..rest.find('/').unwrap()].parse().unwrap();
            } else if let Some(t) = line.strip_prefix("  token `") {
                let (name, role) = t.split_once("`: ").unwrap();
                let secret = url.split("token=").nth(1).unwrap().to_string();
                tokens.push((name.to_string(), role.to_string(), secret));
            } else {
                break;
            }
        }
        Ui {
            child,
            port,
            tokens,
        }
    }

    fn secret(&self, name: &str) -> &str {
        &self.tokens.iter().find(|t| t.0 == name).unwrap().2
    }

    fn get(&self, token: &str, path: &str) -> ui_support::Response {
        let sep = if path.contains('?') { '&' } else { '?' };
        let host = format!("127.0.0.1:{}", self.port);
        ui_support::request(
            self.port,
            "GET",
            &format!("{path}{sep}token={token}"),
            &[("Host", &host)],
            "",
        )
    }

    fn post(&self, token: &str, path: &str, body: &str) -> ui_support::Response {
        let host = format!("127.0.0.1:{}", self.port);
        let headers = [
            ("Host", host.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ];
        ui_support::request(
            self.port,
            "POST",
            &format!("{path}?token={token}"),
            &headers,
            body,
        )
    }

    /// Every page a run's reader can open, as `token`, none showing a raw
    /// value; the forms and the raw view refused.
    fn walk_as_viewer(&self, token: &str, t: &Team, events: usize) {
        let mut paths = vec![
            "/".to_string(),
            "/?status=failed".into(),
            format!("/run/{}", t.run),
            format!("/run/{}", t.fork),
            format!("/diff?a={}&b={}", t.run, t.fork),
            "/campaigns".into(),
        ];
        paths.extend((0..events).map(|n| format!("/run/{}/event/{n}", t.run)));
        for p in &paths {
            let r = self.get(token, p);
            hides(p, &r.body);
        }
        assert_eq!(self.get(token, &format!("/run/{}", t.run)).status, 200);
        for p in [
            format!("/run/{}?unredacted=1", t.run),
            "/?unredacted=1".into(),
        ] {
            let r = self.get(token, &p);
            assert_eq!(r.status, 403, "{p}: {}", r.body);
            assert!(
                r.body.contains(&format!("{}_responder", t.schema)),
                "{}",
                r.body
            );
            // The token's role, not the connection's (a responder's UI
            // said its viewer token's user "is a responder").
            assert!(r.body.contains("is a viewer's"), "{}", r.body);
            assert!(!r.body.contains("is a responder"), "{}", r.body);
            hides(&p, &r.body);
        }
        for p in [
            format!("/run/{}/event/1/fork", t.run),
            format!("/run/{}/replay", t.run),
        ] {
            let r = self.post(token, &p, "csrf=x&respond=%7B%7D");
            assert_eq!(r.status, 403, "{p}: {}", r.body);
            hides(&p, &r.body);
        }
    }
}

fn events_of(t: &Team) -> usize {
    let h = worldline(&t.owner, ["history", &t.run, "--json"]);
    h.json()["events"].as_array().unwrap().len()
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_viewer_walks_every_ui_route_without_a_raw_value_and_a_responders_raw_page_is_audited() {
    let t = team(true);
    let events = events_of(&t);
    assert!(events >= 3);
    // A UI connected as a viewer serves the redacted copies, and issues
    // viewer tokens only.
    let ui = Ui::start(&t.viewer, &[]);
    assert_eq!(ui.tokens.len(), 1);
    assert_eq!(ui.tokens[0].1, "viewer");
    ui.walk_as_viewer(&ui.tokens[0].2.clone(), &t, events);
    drop(ui);
    let refused = worldline(&t.viewer, ["ui", "--port", "0", "--token", "ann=responder"]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains(&format!("{}_responder", t.schema)),
        "{refused}"
    );
    // `--redact FILE` is refused as `--redact`, as `history` refuses it
    // (it was refused as `--unredacted`).
    let policy = t.dir.path().join("mine.toml");
    std::fs::write(&policy, POLICY).unwrap();
    let refused = worldline(&t.responder, ["ui", "--port", "0", "--redact", s(&policy)]);
    refused.expect_code(2);
    assert!(refused.stderr.contains("--redact"), "{refused}");
    assert!(!refused.stderr.contains("--unredacted"), "{refused}");
    assert!(refused.stderr.contains("redaction --set"), "{refused}");

    // Two tokens of one name are refused: the audit could not tell them
    // apart (both were issued).
    let twice = worldline(
        &t.responder,
        [
            "ui",
            "--port",
            "0",
            "--token",
            "a=viewer",
            "--token",
            "a=responder",
        ],
    );
    twice.expect_code(2);
    assert!(twice.stderr.contains("`a` is named twice"), "{twice}");
    // A UI connected as a responder serves each token its role's view.
    let ui = Ui::start(
        &t.responder,
        &["--token", "bob=viewer", "--token", "ann=responder"],
    );
    let roles: Vec<&str> = ui.tokens.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(roles, ["viewer", "responder"]);
    ui.walk_as_viewer(ui.secret("bob"), &t, events);
    let ann = ui.secret("ann");
    let redacted = ui.get(ann, &format!("/run/{}", t.run));
    hides("a responder's default page", &redacted.body);
    let raw = ui.get(ann, &format!("/run/{}?unredacted=1", t.run));
    assert_eq!(raw.status, 200);
    assert!(raw.body.contains("ana.lopez@example.com"), "{}", raw.body);
    let audit = worldline(&t.owner, ["audit", "--json", "--run", &t.run[..12]]);
    audit.expect_code(0);
    let rows: Vec<_> = audit
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["token"].is_string())
        .cloned()
        .collect();
    assert_eq!(rows.len(), 1, "{audit}");
    assert_eq!(rows[0]["token"], "ann");
    assert_eq!(rows[0]["db_user"], format!("{}_r", t.schema));
    assert_eq!(rows[0]["run_id"], t.run.as_str());
    assert_eq!(rows[0]["command"], format!("ui GET /run/{}", t.run));
    // A responder's replay and fork from the UI re-execute the run, and
    // are audited as the CLI's are (they were not).
    let page = ui.get(ann, &format!("/run/{}/event/1", t.run));
    let csrf = ui_support::input_value(&page.body, "csrf").expect("the fork form's CSRF token");
    let body = ui_support::form(&[("csrf", &csrf)]);
    let replay = ui.post(ann, &format!("/run/{}/replay", t.run), &body);
    assert_eq!(replay.status, 200, "{replay:?}");
    let fork = ui.post(ann, &format!("/run/{}/event/1/fork", t.run), &body);
    assert_eq!(fork.status, 303, "{fork:?}");
    let audit = worldline(&t.owner, ["audit", "--json", "--run", &t.run[..12]]);
    let commands: Vec<&str> = (audit.json().as_array().unwrap().iter())
        .filter(|x| x["token"] == "ann")
        .map(|x| x["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        commands,
        [
            format!("ui GET /run/{}", t.run),
            format!("ui POST /run/{}/replay", t.run),
            format!("ui POST /run/{}/event/1/fork", t.run),
        ],
        "{audit}"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn each_responder_unredacted_read_is_audited_and_listed() {
    let t = team(true);
    let r = &t.responder;
    let plain = worldline(r, ["history", &t.run, "--full"]);
    plain.expect_code(0);
    hides("a responder's default view", &plain.stdout);
    // The owner's fork (in `team`) re-executed the run: audited too.
    let user = format!("{}_r", t.schema);
    let before = worldline(r, ["audit", "--json"]);
    let before = before.json().as_array().unwrap().clone();
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(
        (before[0]["db_user"].as_str(), before[0]["command"].as_str()),
        (Some("worldline"), Some("fork"))
    );
    assert_eq!(before[0]["run_id"], t.run.as_str());

    let raw = worldline(r, ["history", &t.run, "--unredacted", "--full"]);
    raw.expect_code(0);
    assert!(raw.stdout.contains("ana.lopez@example.com"), "{raw}");
    worldline(r, ["show", &t.run, "--at", "1", "--unredacted"]).expect_code(0);
    worldline(r, ["diff", &t.run, &t.fork, "--unredacted"]).expect_code(1);
    let file = t.dir.path().join("raw.json");
    worldline(r, ["export", &t.run, "-o", s(&file)]).expect_code(0);
    // Each format by its own name (ATIF was recorded as `trajectories`).
    for format in ["trajectories", "atif"] {
        let file = t.dir.path().join(format!("raw.{format}.jsonl"));
        worldline(r, ["export", &t.run, "--format", format, "-o", s(&file)]).expect_code(0);
    }
    // `case from-run` writes the bundle whole beside the case.
    let case = t.dir.path().join("raw-case.toml");
    worldline(r, ["case", "from-run", &t.run, "-o", s(&case)]).expect_code(0);
    // `verify` notes the runs it replays (it noted none).
    worldline(r, ["verify", &t.run]).expect_code(0);
    let listed = worldline(r, ["audit", "--json"]);
    listed.expect_code(0);
    let mine: Vec<serde_json::Value> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["db_user"] == user.as_str())
        .cloned()
        .collect();
    let rows: Vec<(String, String)> = mine
        .iter()
        .map(|x| {
            (
                x["run_id"].as_str().unwrap().to_string(),
                x["command"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let (run, fork) = (t.run.clone(), t.fork.clone());
    assert_eq!(
        rows,
        [
            (run.clone(), "history --unredacted".to_string()),
            (run.clone(), "show --unredacted".into()),
            (run.clone(), "diff --unredacted".into()),
            (fork.clone(), "diff --unredacted".into()),
            (run.clone(), "export".into()),
            (run.clone(), "export --format trajectories".into()),
            (run.clone(), "export --format atif".into()),
            (run.clone(), "case from-run".into()),
            (run.clone(), "verify".into()),
        ]
    );
    for x in &mine {
        assert!(x["at"].as_str().unwrap().ends_with('Z'), "{x}");
    }
    let text = worldline(r, ["audit", "--run", &fork, "--since", "1h"]);
    text.expect_code(0);
    assert_eq!(text.stdout.lines().count(), 1, "{text}");
    assert!(text.stdout.contains("diff --unredacted"), "{text}");
    let later = worldline(r, ["audit", "--json", "--since", "2999-01-01"]);
    assert_eq!(later.json().as_array().unwrap().len(), 0, "{later}");
    let folder = worldline(&t.dir.path().join("folder"), ["audit"]);
    folder.expect_code(2);
    assert!(folder.stderr.contains("postgres://"), "{folder}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn merge_reads_a_suites_shards_from_the_database() {
    let t = team(true);
    let cases = t.dir.path().join("suite");
    std::fs::create_dir_all(&cases).unwrap();
    for i in 0..4 {
        let text = CRM_CASE.replace("seed = 5", &format!("seed = {i}"));
        write_case(&cases, &format!("c{i}"), &text);
    }
    let worlds = t.dir.path().join("worlds");
    let agent = guest("caller-agent");
    for part in ["1/2", "2/2"] {
        let out = worldline(
            &t.responder,
            [
                "test",
                s(&cases),
                "--agent",
                s(&agent),
                "--worlds",
                s(&worlds),
                "--jobs",
                "1",
                "--partition",
                part,
                "--suite-id",
                "nightly-7",
                "--json",
            ],
        );
        out.expect_code(1);
        assert!(out.stderr.contains("merge --suite nightly-7"), "{out}");
    }
    let merged = worldline(&t.viewer, ["merge", "--suite", "nightly-7", "--json"]);
    merged.expect_code(1);
    assert_eq!(merged.json()["total"], 4, "{merged}");
    assert_eq!(merged.json()["failed"], 4, "{merged}");
    hides("a viewer's merge", &merged.stdout);
    let refused = worldline(&t.viewer, ["merge", "--suite", "nightly-7", "--unredacted"]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains(&format!("{}_responder", t.schema)),
        "{refused}"
    );
    let raw = worldline(
        &t.responder,
        ["merge", "--suite", "nightly-7", "--unredacted", "--json"],
    );
    raw.expect_code(1);
    assert!(raw.stdout.contains("someone.else@example.com"), "{raw}");
    // A row for each run the raw reports name (it was one, naming none).
    let audit = worldline(&t.responder, ["audit", "--json"]);
    let rows: Vec<serde_json::Value> = (audit.json().as_array().unwrap().iter())
        .filter(|r| r["command"] == "merge --suite nightly-7 --unredacted")
        .cloned()
        .collect();
    assert_eq!(rows.len(), 4, "{audit}");
    assert!(rows.iter().all(|r| r["run_id"].is_string()), "{audit}");
    let missing = worldline(&t.viewer, ["merge", "--suite", "nope"]);
    missing.expect_code(2);
    assert!(
        missing.stderr.contains("no shard of suite `nope`"),
        "{missing}"
    );
    // The suite run again on three machines: the two reports of the
    // halves are of no merge with its thirds (merge refused every later
    // run under the id), so they are replaced, with a note.
    for part in ["1/3", "2/3", "3/3"] {
        let out = worldline(
            &t.responder,
            [
                "test",
                s(&cases),
                "--agent",
                s(&agent),
                "--worlds",
                s(&worlds),
                "--jobs",
                "1",
                "--partition",
                part,
                "--suite-id",
                "nightly-7",
                "--json",
            ],
        );
        out.expect_code(1);
        let replaced = out
            .stderr
            .contains("held 2 shard report(s) of another partitioning");
        assert_eq!(replaced, part == "1/3", "{out}");
    }
    let merged = worldline(&t.viewer, ["merge", "--suite", "nightly-7", "--json"]);
    merged.expect_code(1);
    assert_eq!(merged.json()["total"], 4, "{merged}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_responders_runs_matches_signatures_as_shown_not_the_hidden_values() {
    let t = team(true);
    // The listed runs' ids and signatures.
    let listed = |args: &[&str]| -> Vec<(String, String)> {
        let mut all = vec!["runs", "--json"];
        all.extend_from_slice(args);
        let out = worldline(&t.responder, &all);
        out.expect_code(0);
        hides("a responder's runs", &out.stdout);
        out.json()
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let field = |k: &str| r[k].as_str().unwrap_or("").to_string();
                (field("run_id"), field("signature"))
            })
            .collect()
    };
    // The run and its fork fail alike; their signatures are shown
    // redacted, and the raw run (in the responder's working folder once
    // listed) names the customer.
    let shown = listed(&[]);
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(
        shown.iter().all(|(_, s)| s.contains("<customer:")),
        "{shown:?}"
    );
    let raw = std::fs::read_to_string(common::bundle_in(
        &common::store_folder(&t.responder),
        &t.run,
    ))
    .unwrap();
    assert!(raw.contains("customers/CUST-004211.email"));
    // A hidden value matches nothing; the placeholder shown matches, and
    // the limit counts what matched.
    assert_eq!(listed(&["--signature", "CUST-004211"]), []);
    assert_eq!(listed(&["--signature", "<customer:"]), shown);
    assert_eq!(
        listed(&["--signature", "<customer:", "--limit", "1"]),
        shown[..1]
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn the_databases_run_index_is_what_runs_lists_and_a_viewer_may_read_it() {
    let t = team(true);
    // A passing run beside the failing run and its fork.
    let passing = CRM_CASE.replace(
        "key = \"CUST-004211\"\nfield = \"email\"\nequals = \"someone.else@example.com\"",
        "key = \"CUST-000007\"\nfield = \"email\"\nequals = \"bo.chen@example.net\"",
    );
    assert_ne!(passing, CRM_CASE);
    let case = write_case(t.dir.path(), "crm-passes", &passing);
    common::run_in(
        &t.responder,
        &case,
        &guest("caller-agent"),
        &t.dir.path().join("worlds"),
    )
    .expect_code(0);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let listed = worldline(&t.viewer, ["runs", "--json"]);
    listed.expect_code(0);
    let mut want: Vec<serde_json::Value> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            serde_json::json!([
                r["run_id"],
                r["created"],
                r["case"],
                r["world"],
                r["status"],
                r["grade"],
                r["outcome"],
                r["signature"],
                r["events"],
                r["parent"].as_str().map(|p| p.split('@').next().unwrap()),
                r["rules"],
            ])
        })
        .collect();
    want.sort_by_key(|r| r[0].as_str().unwrap().to_string());
    assert_eq!(want.len(), 3, "{listed}");
    // Read as the viewer, in SQL.
    let sql = format!(
        "SELECT json_agg(json_build_array(run_id,
             to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
             case_name, world, status, grade, outcome, signature, events, parent, rules) ORDER BY run_id)
         FROM {}.run_index",
        t.schema
    );
    let got = cluster().psql_as(&format!("{}_v", t.schema), &sql).unwrap();
    hides("the run index a viewer reads", &got);
    let got: Vec<serde_json::Value> = serde_json::from_str(&got).unwrap();
    assert_eq!(got, want);
    let outcomes: Vec<&str> = got.iter().map(|r| r[6].as_str().unwrap()).collect();
    // Each run's rules, in both (neither had them).
    let current = worldline_log::log::rules::CURRENT;
    assert!(got.iter().all(|r| r[10] == current), "{got:?}");
    assert!(
        outcomes.contains(&"passed") && outcomes.contains(&"failed"),
        "{outcomes:?}"
    );
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn setting_the_policy_makes_the_redacted_shard_reports_again() {
    let t = team(false);
    // A shard whose case's name is a customer's reference, stored under
    // the default policy (customer references shown).
    let cases = t.dir.path().join("suite");
    std::fs::create_dir_all(&cases).unwrap();
    write_case(&cases, "crm-CUST-004211", CRM_CASE);
    let out = worldline(
        &t.responder,
        [
            "test",
            s(&cases),
            "--agent",
            s(&guest("caller-agent")),
            "--worlds",
            s(&t.dir.path().join("worlds")),
            "--partition",
            "1/1",
            "--suite-id",
            "weekly-2",
            "--json",
        ],
    );
    out.expect_code(1);
    let viewed = || {
        let merged = worldline(&t.viewer, ["merge", "--suite", "weekly-2", "--json"]);
        merged.expect_code(1);
        merged.stdout
    };
    assert!(viewed().contains("CUST-004211"), "{}", viewed());
    let file = t.dir.path().join("redact.toml");
    std::fs::write(&file, POLICY).unwrap();
    worldline(&t.responder, ["redaction", "--set", s(&file)]).expect_code(0);
    hides("a viewer's merge after the policy was set", &viewed());
    let raw = worldline(
        &t.responder,
        ["merge", "--suite", "weekly-2", "--unredacted", "--json"],
    );
    assert!(raw.stdout.contains("CUST-004211"), "{raw}");
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_merged_suite_hides_a_state_value_a_policy_path_hides_where_its_failing_check_quotes_it() {
    let t = team(false);
    // A case failing on a customer's note, which only a path of the
    // policy hides (no detector matches it).
    let cases = t.dir.path().join("notes");
    std::fs::create_dir_all(&cases).unwrap();
    let case = CRM_CASE
        .replace("field = \"email\"", "field = \"note\"")
        .replace("someone.else@example.com", "never written");
    assert_ne!(case, CRM_CASE);
    write_case(&cases, "note", &case);
    let note = "prefers mail to";
    let shard = |suite: &str| {
        let out = worldline(
            &t.responder,
            [
                "test",
                s(&cases),
                "--agent",
                s(&guest("caller-agent")),
                "--worlds",
                s(&t.dir.path().join("worlds")),
                "--partition",
                "1/1",
                "--suite-id",
                suite,
                "--json",
            ],
        );
        out.expect_code(1);
        assert!(out.stdout.contains(note), "{out}");
    };
    // One shard kept before the policy is set (its redacted form made
    // again by `redaction --set`), one after (made as it is kept).
    shard("before");
    let file = t.dir.path().join("redact.toml");
    std::fs::write(
        &file,
        "detectors = []\npaths = [\"state.customers.*.note\"]\n",
    )
    .unwrap();
    worldline(&t.responder, ["redaction", "--set", s(&file)]).expect_code(0);
    shard("after");
    for suite in ["before", "after"] {
        for (who, store) in [("viewer", &t.viewer), ("responder", &t.responder)] {
            for json in [true, false] {
                let mut args = vec!["merge", "--suite", suite];
                if json {
                    args.push("--json");
                }
                let merged = worldline(store, &args);
                merged.expect_code(1);
                assert!(
                    !merged.stdout.contains(note) && !merged.stderr.contains(note),
                    "a {who}'s merge of shard `{suite}` shows the note:\n{merged}"
                );
                assert!(merged.stdout.contains("<redacted:"), "{merged}");
            }
        }
        let raw = worldline(
            &t.responder,
            ["merge", "--suite", suite, "--unredacted", "--json"],
        );
        raw.expect_code(1);
        assert!(raw.stdout.contains(note), "{raw}");
    }
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_campaign_fuzzed_on_one_machine_is_in_another_machines_ui_and_a_viewer_sees_it_redacted() {
    let t = team(false);
    let machine = |n: &str| t.dir.path().join(n);
    // A fuzz campaign of a failing case whose name is a customer's
    // reference (a raw value in the report), on machine A.
    let mut case = CRM_CASE.to_string();
    case.push_str("[fuzz]\n[[fuzz.tools]]\ntool = \"get_*\"\ndeny = 0.5\n");
    let case = write_case(t.dir.path(), "crm-CUST-004211", &case);
    let worlds = t.dir.path().join("worlds");
    let agent = guest("caller-agent");
    let fuzzed = common::on_machine(
        &t.responder,
        &machine("a"),
        &[
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
    fuzzed.expect_code(1);
    let id = fuzzed
        .stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("campaign ")?
                .strip_suffix(" kept in the store (worldline ui shows it)")
        })
        .unwrap_or_else(|| panic!("no campaign id: {fuzzed}"))
        .to_string();
    // Kept in the database, not in machine A's working folder.
    let folder_a = texts_under(&machine("a"));
    assert!(
        !folder_a
            .iter()
            .any(|(p, _)| p.components().any(|c| c.as_os_str() == "campaigns")),
        "a campaign file on machine A"
    );
    let pg = cluster();
    let raw = pg.psql(&format!(
        "SELECT report FROM {}.campaigns WHERE id = '{id}'",
        t.schema
    ));
    assert!(raw.contains("CUST-004211"), "the raw report: {raw}");
    // Made under the default policy (customer references shown), the
    // redacted report is made again when the store's policy is set.
    let redacted = || {
        pg.psql(&format!(
            "SELECT redacted FROM {}.campaigns WHERE id = '{id}'",
            t.schema
        ))
    };
    assert!(redacted().contains("CUST-004211"), "{}", redacted());
    let file = t.dir.path().join("redact.toml");
    std::fs::write(&file, POLICY).unwrap();
    worldline(&t.responder, ["redaction", "--set", s(&file)]).expect_code(0);
    hides("the redacted report", &redacted());

    // Machine B's UI, connected as a viewer, lists and shows it redacted.
    let ui = Ui::start_in(&t.viewer, &machine("b"), &[]);
    let token = ui.tokens[0].2.clone();
    let list = ui.get(&token, "/campaigns");
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains(&id), "{}", list.body);
    hides("a viewer's campaigns list", &list.body);
    let page = ui.get(&token, &format!("/campaign/{id}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("&lt;customer:"), "{}", page.body);
    hides("a viewer's campaign page", &page.body);
    let refused = ui.get(&token, &format!("/campaign/{id}?unredacted=1"));
    assert_eq!(refused.status, 403, "{}", refused.body);
    drop(ui);

    // Machine C's UI, connected as a responder: a viewer's token gets the
    // redacted page; a responder's raw page is audited.
    let ui = Ui::start_in(
        &t.responder,
        &machine("c"),
        &["--token", "bob=viewer", "--token", "ann=responder"],
    );
    for p in ["/campaigns".to_string(), format!("/campaign/{id}")] {
        let r = ui.get(ui.secret("bob"), &p);
        assert_eq!(r.status, 200, "{p}: {}", r.body);
        assert!(r.body.contains(&id), "{p}: {}", r.body);
        hides(&p, &r.body);
    }
    let raw = ui.get(ui.secret("ann"), &format!("/campaign/{id}?unredacted=1"));
    assert_eq!(raw.status, 200, "{}", raw.body);
    assert!(raw.body.contains("CUST-004211"), "{}", raw.body);
    let audit = worldline(&t.owner, ["audit", "--json"]);
    let last = audit.json().as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["command"], format!("ui GET /campaign/{id}"), "{audit}");
    assert_eq!(last["token"], "ann");

    // SQL as the viewer reaches the redacted column only.
    let user = format!("{}_v", t.schema);
    let e = pg
        .psql_as(&user, &format!("SELECT report FROM {}.campaigns", t.schema))
        .unwrap_err();
    assert!(e.contains("permission denied"), "{e}");
    let redacted = pg
        .psql_as(
            &user,
            &format!("SELECT redacted FROM {}.campaigns", t.schema),
        )
        .unwrap();
    assert!(redacted.contains("<customer:"), "{redacted}");
    hides("the redacted reports", &redacted);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_viewers_retention_set_is_refused_naming_the_responder_role() {
    let pg = cluster();
    let schema = fresh_schema();
    let owner = PathBuf::from(pg.store_in(&schema));
    worldline(&owner, ["migrate", "--json"]).expect_code(0);
    worldline(&owner, ["retention", "--json"]).expect_code(0);
    let v = format!("{schema}_v");
    pg.login(&v, &format!("{schema}_viewer"));
    let viewer = pg.store_as(&v, &schema);
    let dir = temp_dir();
    let file = dir.path().join("policy.toml");
    std::fs::write(&file, "[keep]\npassed = 2\n").unwrap();
    let refused = worldline(&viewer, ["retention", "--set", s(&file)]);
    refused.expect_code(2);
    assert!(
        refused.stderr.contains(&format!("{schema}_responder")),
        "{refused}"
    );
    assert!(!refused.stderr.contains(PASSWORD), "{refused}");
    assert_eq!(
        pg.psql(&format!("SELECT count(*) FROM {schema}.retention")),
        "0"
    );
    // A viewer reads it (there is no data in it).
    let shown = worldline(&viewer, ["retention", "--json"]);
    shown.expect_code(0);
    assert_eq!(shown.json()["from"], "the defaults", "{shown}");
    assert_eq!(shown.json()["policy"]["keep"]["passed"], 7, "{shown}");
}

/// A login in neither role of a store is told the GRANT to ask for, and
/// the server's own words (it was told "db error").
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_login_in_neither_role_is_told_the_grant_to_ask_for() {
    let pg = cluster();
    let schema = fresh_schema();
    let owner = PathBuf::from(pg.store_in(&schema));
    worldline(&owner, ["migrate", "--json"]).expect_code(0);
    let nobody = format!("{schema}_n");
    pg.psql(&format!("CREATE ROLE {nobody} LOGIN"));
    let store = pg.store_as(&nobody, &schema);
    let refused = worldline(&store, ["runs"]);
    refused.expect_code(2);
    assert!(
        refused
            .stderr
            .contains(&format!("GRANT {schema}_viewer TO"))
            && refused.stderr.contains("permission denied")
            && !refused.stderr.contains("db error")
            && !refused.stderr.contains(PASSWORD),
        "{refused}"
    );
}
