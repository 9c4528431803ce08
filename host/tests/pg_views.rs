//! One run of a database store as each role reads it: a viewer's `otel`
//! export (of the run's redacted copy) is the responder's trace, with the
//! same ids and virtual times, and so is one of a redacted export imported
//! elsewhere; every reader's `--json` says redacted output is redacted;
//! a copy counts the values its view hides, as `history` does. The real
//! binary on the test cluster (`common/pg.rs`).

use crate::common;

use common::crm::{CASE, POLICY, ROWS, SET_EMAIL};
use common::pg::{cluster, fresh_schema};
use common::{guest, temp_dir, worldline, write_case};
use prost::Message as _;
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A customer the case never reads: the policy hides its values in the
/// world's state, but no view of the run shows them.
const UNREAD: &str = r#"{"id": "CUST-555555", "email": "never.read@example.com", "note": "none"}
"#;

/// The case's clock, 2026-03-01T12:00:00Z, in Unix nanoseconds.
const CLOCK_NS: u64 = 1_772_366_400_000_000_000;

/// A store with its policy set, one run, a viewer and a responder.
struct Store {
    dir: tempfile::TempDir,
    owner: PathBuf,
    viewer: PathBuf,
    responder: PathBuf,
    run: String,
}

fn store() -> Store {
    let pg = cluster();
    let schema = fresh_schema();
    let owner = PathBuf::from(pg.store_in(&schema));
    let dir = temp_dir();
    let policy = dir.path().join("redact.toml");
    std::fs::write(&policy, POLICY).unwrap();
    worldline(&owner, ["redaction", "--set", s(&policy)]).expect_code(0);
    let world = format!("{}{SET_EMAIL}", common::CRM_WORLD);
    let rows = format!("{ROWS}{UNREAD}");
    let worlds = common::write_world(
        dir.path(),
        "crm",
        &world,
        &[("data/customers.jsonl", &rows)],
    );
    let case = write_case(dir.path(), "crm", CASE);
    let out = common::run_in(&owner, &case, &guest("caller-agent"), &worlds);
    out.expect_code(1);
    let run = out.json()["run_id"].as_str().unwrap().to_string();
    let (v, r) = (format!("{schema}_v"), format!("{schema}_r"));
    pg.login(&v, &format!("{schema}_viewer"));
    pg.login(&r, &format!("{schema}_responder"));
    Store {
        viewer: pg.store_as(&v, &schema),
        responder: pg.store_as(&r, &schema),
        dir,
        owner,
        run,
    }
}

/// A span as compared: name, trace id, span id, start and end.
type Span = (String, Vec<u8>, Vec<u8>, u64, u64);

/// Each span of an OTLP file, sorted.
fn spans(file: &Path) -> Vec<Span> {
    let bytes = std::fs::read(file).unwrap();
    let req = opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::decode(
        bytes.as_slice(),
    )
    .unwrap();
    let mut out: Vec<_> = (req.resource_spans.iter())
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans)
        .map(|s| {
            let times = (s.start_time_unix_nano, s.end_time_unix_nano);
            (
                s.name.clone(),
                s.trace_id.clone(),
                s.span_id.clone(),
                times.0,
                times.1,
            )
        })
        .collect();
    out.sort();
    out
}

/// `otel RUN -o FILE --json` on `store` (exit 0): its document and spans.
fn otel(store: &Path, run: &str, file: &Path) -> (serde_json::Value, Vec<Span>) {
    let out = worldline(store, ["otel", run, "-o", s(file), "--json"]);
    out.expect_code(0);
    (out.json().clone(), spans(file))
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_viewers_otel_export_of_a_run_is_the_responders_trace_at_the_case_clock() {
    let t = store();
    let file = |name: &str| t.dir.path().join(name);
    let (resp, want) = otel(&t.responder, &t.run, &file("r.pb"));
    assert_eq!(resp["redacted"], true, "{resp}");
    let root = want
        .iter()
        .find(|s| s.0.starts_with("invoke_agent"))
        .unwrap();
    assert_eq!(root.3, CLOCK_NS, "the run starts at its case's clock");
    // The viewer reads the run's redacted copy (made with the run): the
    // same trace, at the same times, said to be redacted.
    let (view, got) = otel(&t.viewer, &t.run, &file("v.pb"));
    assert_eq!(view["trace_ids"], resp["trace_ids"], "{view}\n{resp}");
    assert_eq!(view["run_ids"], resp["run_ids"], "{view}\n{resp}");
    assert_eq!(view["redacted"], true, "{view}");
    assert_eq!(got, want);
    // A copy made again when the policy changes keeps the clock.
    let policy = file("redact2.toml");
    std::fs::write(&policy, format!("{POLICY}# again\n")).unwrap();
    worldline(&t.responder, ["redaction", "--set", s(&policy)]).expect_code(0);
    let (_, again) = otel(&t.viewer, &t.run, &file("v2.pb"));
    assert_eq!(again, want, "after the copies were made again");
    // A redacted export imported into a folder store (which has no case
    // for it) is the same trace too.
    let out = worldline(
        &t.owner,
        ["export", &t.run, "--redacted", "-o", s(&file("r.wlrun"))],
    );
    out.expect_code(0);
    let folder = file("folder");
    worldline(&folder, ["import", s(&file("r.wlrun"))]).expect_code(0);
    let copy = format!("{}-redacted", t.run);
    let (imported, got) = otel(&folder, &copy, &file("i.pb"));
    assert_eq!(imported["trace_ids"], resp["trace_ids"], "{imported}");
    assert_eq!(imported["redacted"], true, "{imported}");
    assert_eq!(got, want);
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_viewers_export_says_redacted_and_every_copy_counts_the_values_its_view_hides() {
    let t = store();
    let file = |name: &str| t.dir.path().join(name);
    let hidden = |f: &Path| {
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
        let bundle = doc["bundle"].as_str().unwrap();
        let header: serde_json::Value =
            serde_json::from_str(bundle.lines().next().unwrap()).unwrap();
        header["header"]["redacted"]["hidden"].as_u64().unwrap()
    };
    let view = worldline(
        &t.viewer,
        ["export", &t.run, "-o", s(&file("v.wlrun")), "--json"],
    );
    view.expect_code(0);
    assert_eq!(view.json()["redacted"], true, "{view}");
    let copy = file("r.wlrun");
    let args = ["export", &t.run, "--redacted", "-o", s(&copy), "--json"];
    let resp = worldline(&t.responder, args);
    resp.expect_code(0);
    assert_eq!(resp.json()["redacted"], true, "{resp}");
    // What the responder's redacted view of the run says it hides.
    let history = worldline(&t.responder, ["history", &t.run]);
    history.expect_code(0);
    let shown: u64 = (history.stdout.lines())
        .find_map(|l| l.strip_prefix("redacted view: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{history}"));
    assert_eq!(hidden(&file("r.wlrun")), shown, "{history}");
    assert_eq!(hidden(&file("v.wlrun")), shown, "{history}");
}

/// A policy whose only rule is a `state` path, set after the run: the
/// copies it makes again hide what the path hides in the world's state
/// wherever the events quote it (a get's answer), as the copy made with
/// the run and a responder's redacted export do.
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_copy_made_again_hides_what_a_state_path_hides_where_the_events_quote_it() {
    let t = store();
    let file = |name: &str| t.dir.path().join(name);
    let policy = file("state.toml");
    std::fs::write(
        &policy,
        "detectors = []\npaths = [\"state.customers.*.email\"]\n",
    )
    .unwrap();
    worldline(&t.responder, ["redaction", "--set", s(&policy)]).expect_code(0);
    for (who, store) in [("viewer", &t.viewer), ("responder", &t.responder)] {
        let out = file(&format!("{who}.wlrun"));
        let args = ["export", &t.run, "--redacted", "-o", s(&out)];
        worldline(store, args).expect_code(0);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(
            !text.contains("ana.lopez@example.com") && text.contains("<redacted:"),
            "{who}'s copy shows the address"
        );
    }
}

/// A viewer's `history` is a redacted view and says so: `redacted_view`
/// true (it was false, while `otel` and `export` said `redacted`), its
/// text naming the values hidden, not "a REDACTED copy ...; not the
/// original" (it is the store's run, as a viewer reads it).
#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs PostgreSQL: run tests/run, which installs it"
)]
fn a_viewers_history_is_a_redacted_view_of_the_stores_run() {
    let t = store();
    for reader in [&t.viewer, &t.responder] {
        let doc = worldline(reader, ["history", &t.run, "--json"]);
        doc.expect_code(0);
        assert_eq!(doc.json()["redacted_view"], true, "{doc}");
    }
    let text = worldline(&t.viewer, ["history", &t.run]);
    text.expect_code(0);
    assert!(!text.stdout.contains("not the original"), "{text}");
    let hidden: u64 = (text.stdout.lines())
        .find_map(|l| l.strip_prefix("redacted view: "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!(hidden > 0, "{text}");
}
