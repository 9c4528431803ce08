//! End-to-end tests of redaction at read time: `history`, `show`, `diff`
//! and `export --redacted` hide what the store's policy names (each
//! detector, custom patterns, JSON paths) unless `--unredacted`; the
//! bundle on disk keeps everything; a redacted export imports labelled as
//! such and replay says what it can and cannot check. The real binary on
//! the `caller-agent` guest in a small CRM world written by the test.

use crate::common;

use common::{CRM_WORLD, guest, temp_dir, worldline, write_case, write_world};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Every kind of thing the detectors find, twice over.
const CUSTOMERS: &str = r#"{"id": "C-1", "name": "Ana Lopez", "email": "ana.lopez@example.com", "phone": "+44 20 7946 0958", "card": "4111 1111 1111 1111", "iban": "DE89 3704 0044 0532 0130 00", "api_key": "sk-proj-abcdefghijklmnop1234", "ref": "CUST-004211"}
{"id": "C-2", "name": "Bo Chen", "email": "bo@example.org", "phone": "(415) 555-0132", "card": "5500-0000-0000-0004", "iban": "GB82WEST12345698765432", "api_key": "AKIAIOSFODNN7EXAMPLE", "ref": "CUST-000007", "note": "card 4111 1111 1111 1112 fails its checksum"}
"#;

const CASE: &str = r#"world = "crm@v1"
seed = 5
clock = 2026-03-01T12:00:00Z
task = { calls = [
  { tool = "get_customer", args = { id = "C-1" } },
  { tool = "get_customer", args = { id = "C-2" } },
  { tool = "get_customer", args = { id = "C-1" } },
] }
"#;

const POLICY: &str = r#"paths = ["state.customers.*.name", "response.ok.name"]
[[custom]]
name = "customer"
pattern = "CUST-[0-9]{6}"
"#;

/// The raw values the views must hide, with the detector that hides each.
const SECRETS: [(&str, &str); 11] = [
    ("ana.lopez@example.com", "email"),
    ("bo@example.org", "email"),
    ("+44 20 7946 0958", "phone"),
    ("(415) 555-0132", "phone"),
    ("4111 1111 1111 1111", "card"),
    ("5500-0000-0000-0004", "card"),
    ("DE89 3704 0044 0532 0130 00", "iban"),
    ("GB82WEST12345698765432", "iban"),
    ("sk-proj-abcdefghijklmnop1234", "api_key"),
    ("AKIAIOSFODNN7EXAMPLE", "api_key"),
    ("CUST-004211", "customer"),
];

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: PathBuf,
    run: String,
}

fn setup() -> Setup {
    let dir = temp_dir();
    let root = dir.path().to_path_buf();
    write_world(
        &root,
        "crm",
        CRM_WORLD,
        &[("data/customers.jsonl", CUSTOMERS)],
    );
    let case = write_case(&root, "crm", CASE);
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
            s(&root.join("worlds")),
            "--json",
        ],
    );
    out.expect_code(0);
    std::fs::write(store.join("redact.toml"), POLICY).unwrap();
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    Setup {
        _dir: dir,
        root,
        store,
        run,
    }
}

/// The seqs of the tool calls, from the (unredacted) history.
fn tool_calls(st: &Setup) -> Vec<u64> {
    let h = worldline(
        &st.store,
        ["history", st.run.as_str(), "--json", "--only", "tools"],
    );
    h.expect_code(0);
    h.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect()
}

fn show(st: &Setup, at: u64, extra: &[&str]) -> Value {
    let at = at.to_string();
    let mut args = vec!["show", st.run.as_str(), "--at", at.as_str(), "--json"];
    args.extend_from_slice(extra);
    let out = worldline(&st.store, &args);
    out.expect_code(0);
    out.json().clone()
}

#[test]
fn each_detector_hides_its_kind_with_stable_placeholders_unless_unredacted() {
    let st = setup();
    let calls = tool_calls(&st);
    assert_eq!(calls.len(), 3);
    let [c1, c2, c1_again] = [calls[0], calls[1], calls[2]].map(|at| show(&st, at, &[]));
    let text = format!("{c1}{c2}{c1_again}");
    for (secret, kind) in SECRETS {
        assert!(!text.contains(secret), "{secret} ({kind}) shown:\n{text}");
    }
    let ok = |v: &Value, f: &str| {
        v["event"]["response"]["ok"][f]
            .as_str()
            .unwrap()
            .to_string()
    };
    for (field, kind) in [
        ("email", "email"),
        ("phone", "phone"),
        ("card", "card"),
        ("iban", "iban"),
        ("api_key", "api_key"),
        ("ref", "customer"),
        ("name", "redacted"),
    ] {
        let (a, b, again) = (ok(&c1, field), ok(&c2, field), ok(&c1_again, field));
        assert!(
            a.starts_with(&format!("<{kind}:")) && a.ends_with('>'),
            "{field}: {a}"
        );
        assert_ne!(a, b, "{field}: different values, different placeholders");
        assert!(b.starts_with(&format!("<{kind}:")), "{field}: {b}");
        assert_eq!(
            a, again,
            "{field}: the same customer twice, one placeholder"
        );
    }
    assert_eq!(
        ok(&c2, "note"),
        "card 4111 1111 1111 1112 fails its checksum",
        "a number failing the Luhn check is not a card"
    );
    // The state after the call is redacted too, the same way.
    let row = &c1["state_after"]["tables"]["customers"]["rows"]["C-1"];
    assert_eq!(row["email"].as_str().unwrap(), ok(&c1, "email"));
    assert_eq!(row["name"].as_str().unwrap(), ok(&c1, "name"));

    let raw = show(&st, calls[0], &["--unredacted"]);
    assert_eq!(
        raw["event"]["response"]["ok"]["email"],
        "ana.lopez@example.com"
    );
    assert_eq!(raw["redacted_view"], false);
    let h = worldline(&st.store, ["history", st.run.as_str()]);
    h.expect_code(0);
    assert!(h.stdout.contains("redacted view"), "{h}");
    assert!(!h.stdout.contains("sk-proj-abcdefghijklmnop1234"), "{h}");
    assert!(h.stdout.contains("<api_key:"), "{h}");
    let h = worldline(&st.store, ["history", st.run.as_str(), "--unredacted"]);
    assert!(h.stdout.contains("sk-proj-abcdefghijklmnop1234"), "{h}");

    // The bundle keeps everything and still replays.
    let bundle = std::fs::read_to_string(common::bundle_in(&st.store, &st.run)).unwrap();
    assert!(bundle.contains("ana.lopez@example.com"));
    worldline(&st.store, ["replay", st.run.as_str()]).expect_code(0);

    // Another policy file, named on the command line, wins.
    let only_email = st.root.join("only-email.toml");
    std::fs::write(&only_email, "detectors = [\"email\"]\n").unwrap();
    let v = show(&st, calls[0], &["--redact", s(&only_email)]);
    assert!(ok(&v, "email").starts_with("<email:"));
    assert_eq!(ok(&v, "phone"), "+44 20 7946 0958");
}

/// A policy whose path starts with a root no run holds (a typo of
/// `response`) is refused at its line by every view, never read as a
/// policy that hides nothing: `history` showed the name it was written to
/// hide, and `export --redacted` wrote it.
#[test]
fn a_policy_path_no_run_holds_is_refused_and_nothing_is_shown() {
    let st = setup();
    let typo = st.root.join("typo.toml");
    std::fs::write(&typo, "detectors = []\npaths = [\"respnse.ok.name\"]\n").unwrap();
    let out_file = st.root.join("out.json");
    for args in [
        vec!["history", st.run.as_str(), "--redact", s(&typo)],
        vec![
            "export",
            st.run.as_str(),
            "--redacted",
            "--redact",
            s(&typo),
            "-o",
            s(&out_file),
        ],
    ] {
        let out = worldline(&st.store, &args);
        out.expect_code(2);
        assert!(
            out.stderr.contains(
                "typo.toml:2:10: path `respnse.ok.name` starts with `respnse`, which no run holds"
            ),
            "{out}"
        );
        assert!(!out.stdout.contains("Ana Lopez"), "{out}");
    }
    assert!(!out_file.exists());
}

#[test]
fn diff_is_redacted_with_one_placeholder_per_value_across_both_runs() {
    let st = setup();
    let fork = worldline(
        &st.store,
        [
            "fork",
            st.run.as_str(),
            "--at",
            "0",
            "--deny",
            "get_customer",
            "--json",
        ],
    );
    let fork_id = fork.json()["run_id"].as_str().unwrap().to_string();
    let d = worldline(
        &st.store,
        ["diff", st.run.as_str(), fork_id.as_str(), "--json"],
    );
    let text = d.stdout.clone();
    for (secret, _) in SECRETS {
        assert!(!text.contains(secret), "{secret} in diff:\n{text}");
    }
    assert_eq!(d.json()["redacted_view"], true);
    let raw = worldline(
        &st.store,
        ["diff", st.run.as_str(), fork_id.as_str(), "--unredacted"],
    );
    assert!(raw.stdout.contains("sk-proj-abcdefghijklmnop1234"), "{raw}");
    let redacted = worldline(&st.store, ["diff", st.run.as_str(), fork_id.as_str()]);
    assert!(redacted.stdout.contains("<api_key:"), "{redacted}");
}

/// A value one run hides at a later event, quoted by both runs earlier,
/// is hidden on both sides: `diff` learns both runs before it shows
/// either (it showed the text on one side and its placeholder on the
/// other, a false first difference at event 0 that told what the
/// placeholder stands for).
#[test]
fn diff_through_a_policy_finds_the_first_difference_the_runs_have() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = common::workspace_root().join("cases/incident/baseline.toml");
    let worlds = common::workspace_root().join("worlds");
    let run = |agent: &str| {
        let out = common::run_in(&store, &case, &guest(agent), &worlds);
        out.json()["run_id"].as_str().unwrap().to_string()
    };
    let (naive, careful) = (run("naive-agent"), run("careful-agent"));
    let raw = worldline(&store, ["diff", &naive, &careful, "--json", "--unredacted"]);
    let first = raw.json()["first_divergence"]["index"].clone();
    assert!(first.as_u64().is_some_and(|i| i > 0), "{raw}");
    let policy = dir.path().join("redact.toml");
    std::fs::write(&policy, "paths = [\"request.args.reason\"]\n").unwrap();
    for (a, b) in [(&naive, &careful), (&careful, &naive)] {
        let seen = worldline(&store, ["diff", a, b, "--json", "--redact", s(&policy)]);
        assert_eq!(seen.json()["first_divergence"]["index"], first, "{seen}");
    }
}

#[test]
fn a_redacted_export_imports_labelled_and_replay_says_what_it_checks() {
    let st = setup();
    let file = st.root.join("run.export.json");
    let out = worldline(
        &st.store,
        [
            "export",
            st.run.as_str(),
            "-o",
            s(&file),
            "--redacted",
            "--json",
        ],
    );
    out.expect_code(0);
    let exported = std::fs::read_to_string(&file).unwrap();
    for (secret, _) in SECRETS {
        assert!(!exported.contains(secret), "{secret} exported");
    }
    let doc: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(doc["redacted"], true);
    assert_eq!(
        doc["objects"].as_object().unwrap().len(),
        1,
        "the agent only"
    );

    // A policy given to an export that redacts nothing is refused, not
    // ignored (the run, or its trajectory, was written whole).
    let policy = st.root.join("policy.toml");
    std::fs::write(&policy, "paths = [\"request\"]\n").unwrap();
    for format in ["worldline", "trajectories", "atif"] {
        let whole = st.root.join(format!("whole.{format}"));
        let out = worldline(
            &st.store,
            [
                "export",
                &st.run,
                "-o",
                s(&whole),
                "--format",
                format,
                "--redact",
                s(&policy),
            ],
        );
        out.expect_code(2);
        assert!(out.stderr.contains("--redact"), "{format}: {out}");
        assert!(!whole.exists(), "{format}: {out}");
    }
    // `--unredacted` asks an export for nothing: said so with `--redacted`
    // or without (alone it said "add --redacted", and with it that the
    // store's redact.toml, there, was missing).
    for with in [&[][..], &["--redacted"][..]] {
        let whole = st.root.join("whole.unredacted");
        let mut args = vec!["export", &st.run, "-o", s(&whole), "--unredacted"];
        args.extend_from_slice(with);
        let out = worldline(&st.store, &args);
        out.expect_code(2);
        assert!(out.stderr.starts_with("error: --unredacted: "), "{out}");
        assert!(
            out.stderr.contains("drop --unredacted") || out.stderr.contains("give one of them"),
            "{out}"
        );
        assert!(!out.stderr.contains("redact.toml"), "{out}");
        assert!(!whole.exists(), "{out}");
    }

    let other = st.root.join("other");
    let imp = worldline(&other, ["import", s(&file), "--json"]);
    imp.expect_code(0);
    let id = imp.json()["run_id"].as_str().unwrap().to_string();
    assert_eq!(id, format!("{}-redacted", st.run));
    assert_eq!(imp.json()["redacted"]["original_run"], st.run.as_str());
    // A second import of the copy says it was there (it said "imported").
    let again = worldline(&other, ["import", s(&file)]);
    again.expect_code(0);
    assert!(
        again.stdout.contains("was already in") && !again.stdout.contains("imported"),
        "{again}"
    );

    let rows = worldline(&other, ["runs", "--json"]);
    let row = &rows.json()[0];
    assert!(
        row["tags"]
            .as_array()
            .unwrap()
            .contains(&Value::from("redacted")),
        "{row}"
    );
    // The table says it too (only --json did).
    let table = worldline(&other, ["runs"]);
    assert!(table.stdout.contains("{redacted}"), "{table}");

    let h = worldline(&other, ["history", id.as_str()]);
    h.expect_code(0);
    assert!(h.stdout.contains("REDACTED copy of run"), "{h}");
    let r = worldline(&other, ["replay", id.as_str(), "--json"]);
    r.expect_code(0);
    assert_eq!(r.json()["verdict"], "redacted_copy");
    assert!(!r.json()["not_checked"].as_array().unwrap().is_empty());
    // The UI's replay button reports the same (it answered 400).
    {
        let server = crate::ui_support::Server::start(&other, &[]);
        let page = server.get(&format!("/run/{id}"));
        let csrf = crate::ui_support::input_value(&page.body, "csrf").expect("a replay form");
        let host = server.host();
        let r = crate::ui_support::request(
            server.port,
            "POST",
            &format!("/run/{id}/replay?token={}", server.token),
            &[
                ("Host", &host),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            &crate::ui_support::form(&[("csrf", &csrf)]),
        );
        assert_eq!(r.status, 200, "{r:?}");
        assert!(
            r.body.contains("redacted_copy") && r.body.contains("cannot check"),
            "{}",
            r.body
        );
        // The run's page says it is a copy (it looked like the run), and
        // its events' links open them, without a world or a fork (they
        // answered 400).
        assert!(
            page.body.contains("A REDACTED copy of run"),
            "{}",
            page.body
        );
        let link = format!("/run/{id}/event/1");
        assert!(page.body.contains(&link), "{}", page.body);
        let event = server.get(&link);
        assert_eq!(event.status, 200, "{}", event.body);
        for shown in [
            "Event 1",
            "A REDACTED copy of run",
            "Response",
            "&lt;email:",
        ] {
            assert!(event.body.contains(shown), "{shown}: {}", event.body);
        }
        assert!(!event.body.contains("fork-form"), "{}", event.body);
        assert_eq!(server.get(&format!("/run/{id}/event/99")).status, 400);
    }
    let show = worldline(&other, ["show", id.as_str(), "--at", "0"]);
    show.expect_code(2);
    assert!(show.stderr.contains("redacted copy"), "{show}");
    // Nor is it graded: the state rebuilt from its redacted writes is not
    // the run's (a passed run was graded failed, exit 1).
    let grade = worldline(&other, ["grade", id.as_str()]);
    grade.expect_code(2);
    assert!(grade.stderr.contains("redacted copy"), "{grade}");
    // `verify` reads it as `replay` does: its hashes checked, no drift (it
    // was counted unreadable, drift 100%, exit 1).
    let v = worldline(&other, ["verify", "--json"]);
    v.expect_code(0);
    assert_eq!(v.json()["redacted_copies"], 1, "{v}");
    assert_eq!(v.json()["unreadable"], 0, "{v}");
    let path = common::bundle_in(&other, &id);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("<email:", "<emall:", 1)).unwrap();
    let v = worldline(&other, ["verify", "--json"]);
    v.expect_code(1);
    assert_eq!(v.json()["unreadable"], 1, "an edited copy: {v}");

    // A tampered copy does not import.
    let tampered = exported.replacen("<email:", "<emall:", 1);
    std::fs::write(&file, tampered).unwrap();
    let bad = worldline(&st.root.join("third"), ["import", s(&file)]);
    bad.expect_code(2);

    // Without a policy there is nothing to redact with.
    std::fs::remove_file(st.store.join("redact.toml")).unwrap();
    let none = worldline(
        &st.store,
        ["export", st.run.as_str(), "-o", s(&file), "--redacted"],
    );
    none.expect_code(2);
    assert!(none.stderr.contains("redact.toml"), "{none}");
}

/// A native agent's command line and a case's name are a run's text too:
/// a key passed as an argument and an address in the case's file name
/// are hidden from a redacted view and export, which then carries no
/// agent document (it holds the raw command). The run itself exports
/// and imports like a component's: its agent is that document, not a
/// WebAssembly file (its import was refused as one).
#[test]
fn a_native_run_s_command_is_redacted_and_the_run_imports() {
    let st = setup();
    let secret = "sk-proj-abcdefghijklmnop9876";
    let named = st.root.join("jane.doe@example.com.toml");
    std::fs::write(&named, CASE).unwrap();
    let worlds = st.root.join("worlds");
    let run = worldline(
        &st.store,
        [
            "run",
            s(&named),
            "--worlds",
            s(&worlds),
            "--json",
            "--store",
            s(&st.store),
            "--exec",
            "--",
            "/bin/sh",
            "-c",
            "echo '{}'",
            secret,
        ],
    );
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let history = worldline(&st.store, ["history", &id, "--json"]);
    history.expect_code(0);
    let file = st.root.join("native.redacted.json");
    worldline(&st.store, ["export", &id, "-o", s(&file), "--redacted"]).expect_code(0);
    let exported = std::fs::read_to_string(&file).unwrap();
    for (view, text) in [("history", &history.stdout), ("export", &exported)] {
        assert!(!text.contains(secret), "{view} shows the key");
        assert!(
            !text.contains("jane.doe@example.com"),
            "{view} shows the address"
        );
    }
    // `runs` (text and JSON) and OTel's spans name the case as shown.
    let runs = worldline(&st.store, ["runs"]);
    let runs_json = worldline(&st.store, ["runs", "--json"]);
    let spans = st.root.join("spans.pb");
    worldline(&st.store, ["otel", &id, "-o", s(&spans)]).expect_code(0);
    let spans = String::from_utf8_lossy(&std::fs::read(&spans).unwrap()).into_owned();
    for (view, text) in [
        ("runs", &runs.stdout),
        ("runs --json", &runs_json.stdout),
        ("otel", &spans),
    ] {
        assert!(text.contains("<email:"), "{view}: {text}");
        assert!(
            !text.contains("jane.doe@example.com"),
            "{view} shows the address"
        );
    }
    let matched = worldline(&st.store, ["runs", "--case", "jane*", "--json"]);
    assert!(
        !matched.stdout.contains(&id),
        "a filter matches the name as shown: {matched}"
    );
    // So does the UI's list of runs, and its case filter.
    let server = crate::ui_support::Server::start(&st.store, &[]);
    let page = server.get("/");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("&lt;email:"), "{}", page.body);
    let filtered = server.get("/?case=jane*");
    for body in [&page.body, &filtered.body] {
        assert!(
            !body.contains("jane.doe@example.com"),
            "the UI shows the address"
        );
    }
    assert!(!filtered.body.contains(&id), "{}", filtered.body);
    let doc: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(doc["objects"], serde_json::json!({}), "no agent document");
    worldline(&st.root.join("copies"), ["import", s(&file)]).expect_code(0);

    // Whole, it imports and replays.
    let whole = st.root.join("native.json");
    worldline(&st.store, ["export", &id, "-o", s(&whole)]).expect_code(0);
    let other = st.root.join("other");
    let imp = worldline(&other, ["import", s(&whole), "--json"]);
    imp.expect_code(0);
    assert_eq!(imp.json()["run_id"], id.as_str(), "{imp}");
    let replay = worldline(&other, ["replay", &id, "--json"]);
    replay.expect_code(0);
    // A store of its runs imports them all, the native one included.
    let gathered = st.root.join("gathered");
    let all = worldline(&gathered, ["import", s(&st.store), "--json"]);
    all.expect_code(0);
    assert_eq!(
        std::fs::read_dir(gathered.join("runs")).unwrap().count(),
        2,
        "{all}"
    );
}

/// A native agent (Python, standard library only) that reads customer
/// C-1 over MCP and prints the answer to stdout and stderr.
const PRINTS_WHAT_IT_READ: &str = r#"
import json, os, sys, urllib.request
url = os.environ["WORLDLINE_MCP_URL"]
def post(body, session=None):
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if session:
        headers["mcp-session-id"] = session
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.headers.get("mcp-session-id"), r.read().decode()
session, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
_, answer = post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_customer", "arguments": {"id": "C-1"}}}, session)
print("read", answer)
print("read", answer, file=sys.stderr)
print("{}")
"#;

/// A value a path hides is hidden where the run's streams quote it, in
/// `history --stdout` and `--stderr` (text and `--json`), as `export
/// --redacted` hides it: the streams were read without the events, which
/// tell the view what its paths hide.
#[test]
fn a_value_a_path_hides_is_hidden_in_the_streams_history_prints() {
    let st = setup();
    let run = worldline(
        &st.store,
        [
            "run",
            s(&st.root.join("crm.toml")),
            "--worlds",
            s(&st.root.join("worlds")),
            "--json",
            "--store",
            s(&st.store),
            "--exec",
            "--",
            "python3",
            "-c",
            PRINTS_WHAT_IT_READ,
        ],
    );
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    for args in [
        &["--stdout"][..],
        &["--stderr"],
        &["--stdout", "--stderr", "--json"],
    ] {
        let mut all = vec!["history", id.as_str()];
        all.extend_from_slice(args);
        let out = worldline(&st.store, &all);
        out.expect_code(0);
        assert!(
            !out.stdout.contains("Ana Lopez") && out.stdout.contains("<redacted:"),
            "{args:?}: {out}"
        );
    }
    let unredacted = worldline(&st.store, ["history", &id, "--stderr", "--unredacted"]);
    assert!(unredacted.stdout.contains("Ana Lopez"), "{unredacted}");
}

/// `runs` shows and matches a failure's signature as the views show it,
/// through the store's policy: it printed the raw signature, and
/// `--signature` matched a hidden value (the oracle decision 0101 keeps
/// out of the UI).
/// A field a path hides in a tool's answer is hidden where the next model
/// call's messages quote it, in `show --at` of that call and on its UI
/// event page, as `export --redacted` hides it (both showed it whole: the
/// view of one event never saw the answer that hid it).
#[test]
fn a_hidden_answer_is_hidden_where_the_next_model_call_quotes_it() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = common::workspace_root().join("cases/model/rollback.toml");
    let out = worldline(
        &store,
        [
            "run",
            s(&case),
            "--agent",
            s(&guest("model-agent")),
            "--json",
        ],
    );
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    std::fs::write(
        store.join("redact.toml"),
        "paths = [\"response.ok.summary\"]\ndetectors = []\n",
    )
    .unwrap();
    let bundle =
        worldline_log::log::bundle::read(Path::new(out.json()["bundle"].as_str().unwrap()))
            .unwrap();
    let (alert, secret) = (bundle.events.iter())
        .find_map(|e| Some((e.seq, e.response["ok"]["summary"].as_str()?.to_string())))
        .expect("an answer with a summary");
    let quoting = (bundle.events.iter())
        .find(|e| e.seq > alert && e.call == "worldline:agent/model.complete")
        .expect("a model call after it")
        .seq;
    let at = quoting.to_string();
    let shown = worldline(
        &store,
        ["show", run.as_str(), "--at", at.as_str(), "--json"],
    );
    shown.expect_code(0);
    let unredacted = worldline(
        &store,
        [
            "show",
            run.as_str(),
            "--at",
            at.as_str(),
            "--json",
            "--unredacted",
        ],
    );
    assert!(
        unredacted.stdout.contains(&secret),
        "the model call quotes it"
    );
    assert!(!shown.stdout.contains(&secret), "{}", shown.stdout);
    let server = crate::ui_support::Server::start(&store, &[]);
    let page = server.get(&format!("/run/{run}/event/{quoting}"));
    assert_eq!(page.status, 200);
    assert!(
        !page.body.contains(&html_escape(&secret)),
        "the UI event page shows it"
    );
}

fn html_escape(text: &str) -> String {
    (text
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;"))
    .replace('"', "&quot;")
}

#[test]
fn runs_shows_and_matches_signatures_through_the_store_s_policy() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let root = common::workspace_root();
    let out = worldline(
        &store,
        [
            "test",
            s(&root.join("cases/incident/note-partial.toml")),
            "--agent",
            s(&guest("naive-agent")),
            "--worlds",
            s(&root.join("worlds")),
        ],
    );
    out.expect_code(1);
    let raw = worldline(&store, ["runs", "--json"]);
    assert!(
        raw.json()[0]["signature"]
            .as_str()
            .unwrap()
            .contains("T-100"),
        "{raw}"
    );
    let policy = "detectors = []\n[[custom]]\nname = \"ticket\"\npattern = \"T-100\"\n";
    std::fs::write(store.join("redact.toml"), policy).unwrap();
    let listed = worldline(&store, ["runs", "--json"]);
    let signature = listed.json()[0]["signature"].as_str().unwrap().to_string();
    assert!(
        !signature.contains("T-100") && signature.contains("ticket"),
        "{listed}"
    );
    let text = worldline(&store, ["runs"]);
    assert!(!text.stdout.contains("T-100"), "{text}");
    let matched = worldline(&store, ["runs", "--signature", "T-100", "--json"]);
    assert_eq!(
        matched.json().as_array().map(Vec::len),
        Some(0),
        "{matched}"
    );
    let unredacted = worldline(&store, ["runs", "--unredacted", "--json"]);
    assert!(unredacted.stdout.contains("T-100"), "{unredacted}");
}

/// A value a `state` path hides is hidden in the event `show` shows as in
/// its state (a get's answer showed the name whole, the state beside it
/// hid it).
#[test]
fn a_state_path_hides_its_value_in_the_answer_that_carries_it() {
    let st = setup();
    std::fs::write(
        st.store.join("redact.toml"),
        "paths = [\"state.customers.*.name\"]\ndetectors = []\n",
    )
    .unwrap();
    let at = tool_calls(&st)[0];
    let shown = show(&st, at, &[]);
    let text = shown.to_string();
    assert!(!text.contains("Ana Lopez"), "{text}");
    assert_eq!(
        shown["event"]["response"]["ok"]["name"],
        shown["state_after"]["tables"]["customers"]["rows"]["C-1"]["name"],
        "{text}"
    );
    // A redacted export, which holds no state, hides it in the answer too.
    let file = st.root.join("copy.wl");
    worldline(
        &st.store,
        ["export", st.run.as_str(), "--redacted", "-o", s(&file)],
    )
    .expect_code(0);
    let copy = std::fs::read_to_string(&file).unwrap();
    assert!(!copy.contains("Ana Lopez") && !copy.contains("Bo Chen"));
}

/// A value a `state` path hides in the world a run met, quoted by an
/// answer before any event hid it, is hidden in every view of whole runs:
/// `history`, `diff`, the UI's run and diff pages (each showed the
/// customer's name whole; `show --at` and the event page hid it).
#[test]
fn a_state_path_hides_the_world_s_value_in_every_view_of_whole_runs() {
    let st = setup();
    std::fs::write(
        st.store.join("redact.toml"),
        "paths = [\"state.customers.*.name\"]\ndetectors = []\n",
    )
    .unwrap();
    let other = {
        // The same calls in another order: the runs differ at event one.
        let case = write_case(
            &st.root,
            "crm2",
            &CASE.replacen("C-1", "C-0", 1).replacen("C-0", "C-2", 1),
        );
        let out = worldline(
            &st.store,
            [
                "run",
                s(&case),
                "--agent",
                s(&guest("caller-agent")),
                "--worlds",
                s(&st.root.join("worlds")),
                "--json",
            ],
        );
        out.expect_code(0);
        out.json()["run_id"].as_str().unwrap().to_string()
    };
    let secrets = ["Ana Lopez", "Bo Chen"];
    for args in [
        vec!["history", st.run.as_str(), "--full"],
        vec!["diff", st.run.as_str(), other.as_str(), "--json"],
        vec!["diff", st.run.as_str(), other.as_str(), "--full"],
    ] {
        let seen = worldline(&st.store, &args);
        assert!(
            secrets.iter().all(|x| !seen.stdout.contains(x)),
            "{args:?}: {seen}"
        );
        assert!(seen.stdout.contains("<redacted:"), "{args:?}: {seen}");
    }
    let ui = crate::ui_support::Server::start(&st.store, &[]);
    for page in [
        format!("/run/{}", st.run),
        format!("/diff?a={}&b={other}", st.run),
    ] {
        let got = ui.get(&page);
        assert_eq!(got.status, 200, "{page}");
        assert!(
            secrets.iter().all(|x| !got.body.contains(x)),
            "{page}: {}",
            got.body
        );
    }
    // The diff page shows the outputs as the JSON they are (each was one
    // string of escaped quotes).
    let diff = ui.get(&format!("/diff?a={}&b={other}", st.run));
    assert!(diff.body.contains("id=\"output-diff\""), "{}", diff.body);
    assert!(!diff.body.contains("\\&quot;"), "{}", diff.body);
}

/// A value a `request.args` path hides is hidden in the state after the
/// event that wrote it, as in the event's request and writes: `show --at`
/// (and the UI's event page, which shares the order) showed the state
/// after the write with the value whole.
#[test]
fn a_value_an_event_hides_is_hidden_in_the_state_after_it() {
    let dir = temp_dir();
    let root = dir.path();
    let world = format!("{CRM_WORLD}{}", common::crm::SET_EMAIL);
    write_world(
        root,
        "crm",
        &world,
        &[("data/customers.jsonl", common::crm::ROWS)],
    );
    let case = write_case(
        root,
        "set",
        "world = \"crm@v1\"\nseed = 5\nclock = 2026-03-01T12:00:00Z\ntask = { calls = [\n  { tool = \"set_email\", args = { id = \"CUST-000007\", email = \"the Chens at home\" } },\n] }\n",
    );
    let store = root.join("store");
    let out = worldline(
        &store,
        [
            "run",
            s(&case),
            "--agent",
            s(&guest("caller-agent")),
            "--worlds",
            s(&root.join("worlds")),
            "--json",
        ],
    );
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    std::fs::write(
        store.join("redact.toml"),
        "paths = [\"request.args.email\"]\ndetectors = []\n",
    )
    .unwrap();
    let h = worldline(
        &store,
        ["history", run.as_str(), "--json", "--only", "tools"],
    );
    let at = h.json()["events"][0]["seq"].as_u64().unwrap().to_string();
    for json in [true, false] {
        let mut args = vec!["show", run.as_str(), "--at", at.as_str()];
        args.extend(json.then_some("--json"));
        let shown = worldline(&store, &args);
        shown.expect_code(0);
        assert!(
            !shown.stdout.contains("the Chens at home"),
            "the state after shows it: {shown}"
        );
    }
    let server = crate::ui_support::Server::start(&store, &[]);
    let page = server.get(&format!("/run/{run}/event/{at}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        !page.body.contains("the Chens at home"),
        "the event page's world or what changed shows it"
    );
}

/// `replay` and `verify` show a divergence's values through the store's
/// policy, as `history` and `diff` do, unless `--unredacted`: a run's
/// output against a forged one named the customers' addresses whole.
#[test]
fn a_divergence_is_shown_redacted() {
    let st = setup();
    let (root, store) = (&st.root, &st.store);
    let bundle = common::bundle_in(store, &st.run);
    // The recorded output forged: the replay's own, which holds the
    // customers' answers, is shown against it.
    let forged = root.join("forged.jsonl");
    let text = std::fs::read_to_string(&bundle).unwrap();
    let text = common::resealed(&text, |_| {}, |f| f.output = Some("\"forged\"".into()));
    std::fs::write(&forged, text).unwrap();
    for cmd in ["replay", "verify"] {
        let seen = worldline(store, [cmd, s(&forged)]);
        seen.expect_code(1);
        assert!(
            !seen.stdout.contains("ana.lopez@example.com") && seen.stdout.contains("<email:"),
            "{seen}"
        );
        let whole = worldline(store, [cmd, s(&forged), "--unredacted"]);
        assert!(whole.stdout.contains("ana.lopez@example.com"), "{whole}");
    }
}

/// A value a later event shows to be hidden (its path is the policy's)
/// is hidden where an earlier event quotes it too, in `history` and in a
/// redacted copy: both hid it only after the event that matched, so the
/// same listing or copy showed it in clear a few events before its
/// placeholder (`diff`, which learns both runs first, hid it).
#[test]
fn a_value_hidden_later_in_a_run_is_hidden_where_it_came_first() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let secret = "s3cr3t-author-77";
    let case = write_case(
        dir.path(),
        "notes",
        &format!(
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [\
             {{ tool = \"add_note\", args = {{ ticket = \"T-1\", text = \"{secret}\", author = \"bot\" }} }}, \
             {{ tool = \"add_note\", args = {{ ticket = \"T-2\", text = \"second\", author = \"{secret}\" }} }}] }}\n"
        ),
    );
    let worlds = common::worlds_dir();
    let out = worldline(
        &store,
        [
            "run",
            s(&case),
            "--agent",
            s(&guest("caller-agent")),
            "--worlds",
            s(&worlds),
            "--json",
        ],
    );
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let policy = dir.path().join("redact.toml");
    std::fs::write(
        &policy,
        "paths = [\"request.args.author\"]\ndetectors = []\n",
    )
    .unwrap();
    let plain = worldline(&store, ["history", run.as_str(), "--full"]);
    assert!(plain.stdout.contains(secret), "{plain}");
    for args in [
        vec!["history", run.as_str(), "--full", "--redact", s(&policy)],
        vec!["history", run.as_str(), "--json", "--redact", s(&policy)],
    ] {
        let seen = worldline(&store, &args);
        seen.expect_code(0);
        assert!(!seen.stdout.contains(secret), "{args:?}: {seen}");
        assert!(seen.stdout.contains("<redacted:"), "{args:?}: {seen}");
    }
    // `show` of the earlier event, as `history` shows it.
    let first = bundle_events(&store, &run)
        .into_iter()
        .find(|e| e["request"]["args"]["text"] == secret)
        .expect("the first note")["seq"]
        .to_string();
    let shown = worldline(
        &store,
        [
            "show",
            run.as_str(),
            "--at",
            first.as_str(),
            "--json",
            "--redact",
            s(&policy),
        ],
    );
    shown.expect_code(0);
    assert!(!shown.stdout.contains(secret), "{shown}");
    let copy = dir.path().join("copy.wl");
    worldline(
        &store,
        [
            "export",
            run.as_str(),
            "--redacted",
            "--redact",
            s(&policy),
            "-o",
            s(&copy),
        ],
    )
    .expect_code(0);
    let text = std::fs::read_to_string(&copy).unwrap();
    assert!(!text.contains(secret), "the redacted copy quotes it");
}

/// The events of run `id` in `store`, as its bundle holds them.
fn bundle_events(store: &Path, id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(common::bundle_in(store, id)).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("seq").is_some())
        .collect()
}

/// `run` of `case` (on the demo world) by the caller agent into `store`.
fn run_on_demo(store: &Path, case: &Path) -> common::CliOutput {
    worldline(
        store,
        [
            "run",
            s(case),
            "--agent",
            s(&guest("caller-agent")),
            "--worlds",
            s(&common::worlds_dir()),
            "--json",
        ],
    )
}

/// `otel` learns the whole run before it shows a span, as `history` does:
/// a value a path hides in a later event is hidden in the spans before
/// it, and a value a `state` path hides in the world is hidden in the
/// answers that quote it (`otel --content` showed both whole, each span
/// redacted as it came).
#[test]
fn otel_hides_what_history_hides_learning_the_whole_run_first() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let secret = "s3cr3t-author-77";
    let case = write_case(
        dir.path(),
        "notes",
        &format!(
            "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [\
             {{ tool = \"add_note\", args = {{ ticket = \"T-1\", text = \"{secret}\", author = \"bot\" }} }}, \
             {{ tool = \"add_note\", args = {{ ticket = \"T-2\", text = \"second\", author = \"{secret}\" }} }}] }}\n"
        ),
    );
    let out = run_on_demo(&store, &case);
    out.expect_code(0);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let policy = dir.path().join("redact.toml");
    std::fs::write(
        &policy,
        "paths = [\"request.args.author\"]\ndetectors = []\n",
    )
    .unwrap();
    let spans = dir.path().join("spans.pb");
    for redact in [vec!["--unredacted"], vec!["--redact", s(&policy)]] {
        let mut args = vec!["otel", run.as_str(), "--content", "-o", s(&spans)];
        args.extend(&redact);
        worldline(&store, &args).expect_code(0);
        let bytes = std::fs::read(&spans).unwrap();
        let shown = String::from_utf8_lossy(&bytes);
        assert_eq!(
            shown.contains(secret),
            redact[0] == "--unredacted",
            "{redact:?}"
        );
    }
    // A `state` path: the world's value, in the answer that quotes it.
    let st = setup();
    std::fs::write(
        st.store.join("redact.toml"),
        "paths = [\"state.customers.*.name\"]\ndetectors = []\n",
    )
    .unwrap();
    let spans = st.root.join("crm.pb");
    worldline(
        &st.store,
        ["otel", st.run.as_str(), "--content", "-o", s(&spans)],
    )
    .expect_code(0);
    let shown = String::from_utf8_lossy(&std::fs::read(&spans).unwrap()).into_owned();
    assert!(
        !shown.contains("Ana Lopez") && !shown.contains("Bo Chen") && shown.contains("<redacted:"),
        "{shown}"
    );
}

/// A failure signature names what its check names (a row's key); a
/// listing shows it as `history` of its run would, hiding a key a path of
/// the policy hides in the run: `runs`, `runs --json`, the UI's list of
/// runs and `otel`'s root span showed `tickets/T-777` where `history` hid
/// it (a key of four characters or more: a shorter one is hidden only where
/// a path names it).
#[test]
fn a_signature_hides_a_key_a_path_hides_in_its_run() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "tickets",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\n\
         task = { calls = [{ tool = \"get_ticket\", args = { id = \"T-777\" } }] }\n\
         [[expect.state]]\ntable = \"tickets\"\nkey = \"T-777\"\nfield = \"status\"\nequals = \"never\"\n",
    );
    let out = run_on_demo(&store, &case);
    out.expect_code(1);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let plain = worldline(&store, ["runs", "--json"]);
    assert!(
        plain.json()[0]["signature"]
            .as_str()
            .unwrap()
            .contains("T-777"),
        "{plain}"
    );
    std::fs::write(
        store.join("redact.toml"),
        "paths = [\"request.args.id\"]\ndetectors = []\n",
    )
    .unwrap();
    let history = worldline(&store, ["history", run.as_str(), "--full"]);
    assert!(!history.stdout.contains("T-777"), "{history}");
    let listed = worldline(&store, ["runs", "--json"]);
    let signature = listed.json()[0]["signature"].as_str().unwrap().to_string();
    assert!(
        !signature.contains("T-777") && signature.contains("<redacted:"),
        "{listed}"
    );
    let text = worldline(&store, ["runs"]);
    assert!(!text.stdout.contains("T-777"), "{text}");
    let spans = dir.path().join("spans.pb");
    worldline(&store, ["otel", run.as_str(), "-o", s(&spans)]).expect_code(0);
    let shown = String::from_utf8_lossy(&std::fs::read(&spans).unwrap()).into_owned();
    assert!(!shown.contains("T-777"), "{shown}");
    let ui = crate::ui_support::Server::start(&store, &[]);
    let page = ui.get("/");
    assert_eq!(page.status, 200);
    assert!(
        !page.body.contains("T-777") && page.body.contains("&lt;redacted:"),
        "{}",
        page.body
    );
}
