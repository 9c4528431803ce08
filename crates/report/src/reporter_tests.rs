//! Each text reporter on a document the real binary wrote (`fixtures/`,
//! from `worldline test --json` and `worldline fuzz --partition i/2 --json`) or on a
//! typed result built here, snapshot-tested with `insta`: a change to
//! what people read shows up as a snapshot to review (`cargo insta
//! review`, or `INSTA_UPDATE=always cargo test -p worldline-report`).

use serde_json::Value;
use std::collections::BTreeMap;

/// What a reporter wrote, as text.
fn text(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).expect("writing to memory does not fail");
    String::from_utf8(out).expect("reporters write UTF-8")
}

fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_merged_suite_is_a_line_per_case_then_the_totals() {
    let summary: super::suite::SuiteSummary =
        serde_json::from_value(fixture("test-model.json")).unwrap();
    let mut err = Vec::new();
    let out = text(|out| super::suite::write_merged(out, &mut err, &summary));
    insta::assert_snapshot!(out);
    insta::assert_snapshot!("merged_suite_stderr", String::from_utf8(err).unwrap());
}

#[test]
fn a_merged_campaign_is_its_rate_and_groups() {
    let shards = [
        fixture("fuzz-stale-deploys-1of2.json"),
        fixture("fuzz-stale-deploys-2of2.json"),
    ];
    let merged = super::fuzz::merge(&shards).unwrap();
    insta::assert_snapshot!(text(|out| super::fuzz::write_merged(out, &merged)));
}

#[test]
fn otel_names_each_run_and_its_trace() {
    let s = super::otel::OtelSummary {
        http_status: None,
        redacted: false,
        run_ids: vec![
            "20261128-093036-94a3bea0".into(),
            "20261128-093037-ab44c7dd".into(),
        ],
        runs: 2,
        spans: 31,
        to: "spans.pb".into(),
        trace_ids: vec![
            "28ac4fcec88c021fc56ba0cc4c5101f0".into(),
            "5d1f0e9a7c3b2a4f8e6d0c1b9a8f7e6d".into(),
        ],
    };
    insta::assert_snapshot!(text(|out| super::otel::write(out, &s)));
}

#[test]
fn repro_gives_the_rate_its_interval_and_each_outcome() {
    let r = worldline_engine::fuzz::repro::Repro {
        distinct_runs: 1,
        interval: [0.7225, 1.0],
        outcome: "failed: deploys/D-42.status equals".into(),
        outcomes: BTreeMap::from([("failed: deploys/D-42.status equals".into(), 10)]),
        rate: 1.0,
        reproduced: 10,
        run: "20261128-093036-94a3bea0".into(),
        times: 10,
    };
    insta::assert_snapshot!(text(|out| super::repro::write(out, &r)));
}
