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

/// A suite that ran two cases on two jobs: one whose agent could not
/// start, one `--fail-fast` skipped, beside a case file that could not be
/// loaded; every time in it fixed.
fn suite_run() -> worldline_engine::suite::SuiteRun {
    use worldline_engine::suite::{Attempt, CaseRun, SuiteRun};
    let case = |index: usize, name: &str, attempts| CaseRun {
        index,
        name: name.into(),
        path: format!("cases/{name}.toml").into(),
        attempts,
    };
    SuiteRun {
        cases: vec![
            case(
                0,
                "incident/stale-deploys",
                vec![Attempt {
                    outcome: Err("the agent could not start: no such file".into()),
                    elapsed: std::time::Duration::from_millis(12),
                }],
            ),
            case(1, "refund/duplicate", Vec::new()),
        ],
        repeat: 1,
        started: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_780_000_000),
        elapsed: std::time::Duration::from_millis(40),
        collection_errors: vec![worldline_case::error::InputError::new(
            "cases/broken.toml",
            "line 3: expected `=`",
        )],
        compiles: Vec::new(),
    }
}

/// The events of `suite_run()`, in the order one job reports them.
fn suite_events(
    s: &worldline_engine::suite::SuiteRun,
) -> Vec<worldline_engine::suite::SuiteEvent<'_>> {
    use worldline_engine::suite::SuiteEvent;
    let mut events = vec![SuiteEvent::Started {
        cases: s.cases.len(),
        jobs: 2,
        repeat: s.repeat,
    }];
    for c in &s.cases {
        if !c.skipped() {
            events.push(SuiteEvent::CaseStarted {
                index: c.index,
                name: &c.name,
            });
        }
        events.push(SuiteEvent::CaseFinished(c));
    }
    events.push(SuiteEvent::Finished(s));
    events
}

#[test]
fn the_human_reporter_writes_the_report_when_the_suite_finishes() {
    let s = suite_run();
    let mut human = super::events::Human {
        out: Vec::new(),
        err: Vec::new(),
    };
    for e in suite_events(&s) {
        human.event(&e).unwrap();
    }
    let (out, err) = (String::from_utf8(human.out).unwrap(), human.err);
    // Byte for byte what `suite::write` writes for the finished run.
    let mut direct = (Vec::new(), Vec::new());
    super::suite::write(&mut direct.0, &mut direct.1, &s).unwrap();
    assert_eq!((out.as_bytes(), &err), (&direct.0[..], &direct.1));
    insta::assert_snapshot!(out);
}

#[test]
fn the_lines_reporter_writes_a_json_line_per_suite_event() {
    let s = suite_run();
    insta::assert_snapshot!(text(|out| {
        let mut lines = super::events::Lines(out);
        suite_events(&s).iter().try_for_each(|e| lines.suite(e))
    }));
}

#[test]
fn the_junit_reporter_writes_the_document_when_the_suite_finishes() {
    let s = suite_run();
    let mut junit = super::events::Junit(Vec::new());
    for e in suite_events(&s) {
        junit.event(&e).unwrap();
    }
    let host = format!("hostname=\"{}\"", super::junit::hostname());
    let xml = String::from_utf8(junit.0).unwrap();
    insta::assert_snapshot!(xml.replace(&host, "hostname=\"HOST\""));
}

#[test]
fn the_progress_reporter_counts_failed_cases_and_runs() {
    use worldline_engine::fuzz::campaign::CampaignEvent;
    use worldline_engine::fuzz::summary::Tally;
    let s = suite_run();
    let mut shown = Vec::new();
    let mut progress = super::events::Progress::default();
    for e in suite_events(&s) {
        shown.extend(progress.suite(&e));
    }
    let trials = trials();
    let mut campaign = super::events::Progress::default();
    let tally = Tally::new(1);
    let events = std::iter::once(CampaignEvent::Started { runs: 3, jobs: 2 })
        .chain(trials.iter().map(CampaignEvent::RunFinished))
        .chain([CampaignEvent::Finished(&tally)]);
    for (i, e) in events.enumerate() {
        let elapsed = std::time::Duration::from_millis(250 * i as u64);
        shown.extend(campaign.campaign(&e, elapsed));
    }
    insta::assert_snapshot!(shown.join("\n"));
}

/// Three trials of a campaign, the second failing on a fault.
fn trials() -> Vec<worldline_engine::fuzz::trial::Trial> {
    serde_json::from_value(serde_json::json!([
        {"index": 0, "seed": 11, "model_seed": null, "signature": null, "faults": {"faults": []}},
        {"index": 1, "seed": 12, "model_seed": null, "signature": "check `refund_once` failed",
         "faults": {"clock_skew_s": 30, "faults": []}},
        {"index": 2, "seed": 13, "model_seed": 7, "signature": null, "faults": {"faults": []}},
    ]))
    .unwrap()
}

#[test]
fn the_lines_reporter_writes_a_json_line_per_campaign_event() {
    use worldline_engine::fuzz::campaign::CampaignEvent;
    use worldline_engine::fuzz::summary::Tally;
    let trials = trials();
    let mut tally = Tally::new(1);
    for t in &trials {
        tally.add(t.clone());
    }
    insta::assert_snapshot!(text(|out| {
        let mut lines = super::events::Lines(out);
        lines.campaign(&CampaignEvent::Started { runs: 3, jobs: 2 })?;
        for t in &trials {
            lines.campaign(&CampaignEvent::RunFinished(t))?;
        }
        lines.campaign(&CampaignEvent::Finished(&tally))
    }));
}

/// A verification with a run of each verdict and each kind not replayed.
fn verified() -> worldline_engine::ops::replay::Verified {
    use worldline_engine::ops::replay::{Drawn, Unreadable, Verified};
    use worldline_engine::replay::{Class, Divergence, ReplayReport, Scope, Verdict};
    let report = |run: &str, verdict, scope| ReplayReport {
        run: run.into(),
        verdict,
        scope,
        matched: 12,
        recorded: 14,
        chain_hash: "9f2c4e1a7b3d5f60aa11bb22cc33dd44".into(),
        divergence: None,
        diff: Vec::new(),
        env_differs: Vec::new(),
    };
    let diverged = ReplayReport {
        divergence: Some(Divergence {
            index: 7,
            class: Class::Mismatch,
            field: Some("request".into()),
            expected: serde_json::json!({"tool": "get_user", "args": {"id": 1}}),
            actual: serde_json::json!({"tool": "get_user", "args": {"id": 2}}),
        }),
        diff: vec!["$.args.id: 1 → 2".into()],
        env_differs: vec!["HOME (changed)".into()],
        ..report(
            "20261128-093040-d00d0004",
            Verdict::Diverged,
            Scope::Boundary,
        )
    };
    Verified {
        reports: vec![
            report(
                "20261128-093036-a00a0001",
                Verdict::Identical,
                Scope::BitForBit,
            ),
            report(
                "20261128-093037-b00b0002",
                Verdict::Identical,
                Scope::Boundary,
            ),
            report(
                "20261128-093038-c00c0003",
                Verdict::VerifiedPrefix,
                Scope::BitForBit,
            ),
            report(
                "20261128-093039-c00c0009",
                Verdict::Timeout,
                Scope::BitForBit,
            ),
            diverged,
        ],
        unreadable: vec![Unreadable {
            run: "20261128-093041-e00e0005".into(),
            error: "bad chain hash at event 3".into(),
        }],
        headless: vec!["20261128-093042-f00f0006".into()],
        sessions: vec!["20261128-093043-aa0a0007".into()],
        sample: Some(Drawn {
            of: 40,
            seed: 17,
            runs: vec![
                "20261128-093036-a00a0001".into(),
                "20261128-093040-d00d0004".into(),
            ],
        }),
    }
}

#[test]
fn verify_writes_a_line_per_run_then_the_totals() {
    let v = verified();
    insta::assert_snapshot!(text(|out| super::verify::write(out, &v, 2)));
}

#[test]
fn verify_json_counts_each_verdict() {
    let doc = super::verify::json(&verified());
    insta::assert_snapshot!(serde_json::to_string_pretty(&doc).unwrap());
}

#[test]
fn merge_takes_fuzz_shards_as_a_campaign_and_names_a_shard_given_twice() {
    use super::merge::{Ending, Merged, merge};
    let shard = |name: &str| (std::path::PathBuf::from(name), fixture(name));
    let merged = merge(vec![
        shard("fuzz-stale-deploys-1of2.json"),
        shard("fuzz-stale-deploys-2of2.json"),
    ])
    .unwrap();
    assert!(matches!(merged, Merged::Campaign(_)));
    assert_eq!(merged.ending(), Ending::Failed);
    let twice = merge(vec![
        shard("fuzz-stale-deploys-1of2.json"),
        shard("fuzz-stale-deploys-1of2.json"),
    ]);
    insta::assert_snapshot!(twice.err().unwrap().to_string());
}
