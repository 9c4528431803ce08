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

/// A case run K times keeps its `c/K passed, pass@K, pass^K` and its
/// failing run in the merged text, as one machine's report gives them
/// (the merged line dropped them).
#[test]
fn a_merged_case_run_k_times_says_how_often_it_passed() {
    let mut doc = fixture("test-model.json");
    let case = &mut doc["cases"][1];
    case["runs"] = 20.into();
    case["passes"] = 15.into();
    case["passed"] = false.into();
    case["status"] = "failed".into();
    case["reason"] = "deploys/D-42.status equals".into();
    let summary: super::suite::SuiteSummary = serde_json::from_value(doc).unwrap();
    let out = text(|out| super::suite::write_merged(out, &mut Vec::new(), &summary));
    let line = out.lines().nth(1).unwrap();
    assert!(
        line.starts_with("FAIL  model/rollback-weighted      20 events")
            && line.contains("15/20 passed, pass@20 100.0%, pass^20 0.0%  failed — deploys/D-42.status equals (run 20261128-102845-0a7a478b)"),
        "{line}"
    );
}

/// A report edited wrong is refused naming the field (it named none).
#[test]
fn a_report_of_a_wrong_type_is_refused_naming_its_field() {
    let mut doc = fixture("test-model.json");
    doc["cases"][1]["passed"] = "yes".into();
    let Err(e) = super::merge::merge(vec![("typ.json".into(), doc)]) else {
        panic!("merged a report whose case says passed = \"yes\"");
    };
    assert!(
        e.to_string().contains(
            "report at `cases[1].passed`: invalid type: string \"yes\", expected a boolean"
        ),
        "{e}"
    );
}

/// A campaign's shard edited wrong is refused naming the file and the
/// field, as a suite's is: its `repeat` given as text was read as 1 and
/// blamed on its tally.
#[test]
fn a_campaign_shard_of_a_wrong_type_is_refused_naming_its_field() {
    let mut second = fixture("fuzz-stale-deploys-2of2.json");
    second["repeat"] = "1".into();
    let Err(e) = super::merge::merge(vec![
        ("one.json".into(), fixture("fuzz-stale-deploys-1of2.json")),
        ("two.json".into(), second),
    ]) else {
        panic!("merged a shard whose repeat is text");
    };
    let e = e.to_string();
    assert!(e.contains("two.json"), "{e}");
    assert!(
        e.contains("is not a `fuzz --json` report at `repeat`: invalid type: string \"1\""),
        "{e}"
    );
}

/// A shrink's words are shown whole: their end says whether each fault
/// is needed or that the budget ran out (cut at 200 characters, the text
/// lost it; `--json` had it).
#[test]
fn a_shrink_s_words_are_shown_whole() {
    let mut report: super::fuzz::FuzzReport =
        serde_json::from_value(fixture("fuzz-stale-deploys-1of2.json")).unwrap();
    let end = "; the shrink budget ran out, so some may not be needed (raise --shrink-budget)";
    report.groups[0].shrunk = Some(super::fuzz::ShrinkReport {
        complete: false,
        faults_after: 4,
        faults_before: 4,
        tries: 1,
        words: format!(
            "fails when all of these happen: {}{end}",
            "list_deploys (call 1) is denied; ".repeat(8)
        ),
    });
    let shown = text(|out| super::fuzz::write(out, &report));
    assert!(shown.contains(end), "{shown}");
}

#[test]
fn a_merged_campaign_is_what_one_machine_prints() {
    let shards = [
        fixture("fuzz-stale-deploys-1of2.json"),
        fixture("fuzz-stale-deploys-2of2.json"),
    ]
    .map(|doc| serde_json::from_value::<super::fuzz::FuzzReport>(doc).unwrap());
    let merged = super::fuzz::merge(&shards).unwrap();
    insta::assert_snapshot!(text(|out| super::fuzz::write(out, &merged)));
}

#[test]
fn otel_names_each_run_and_its_trace() {
    let s = super::otel::OtelSummary {
        http_status: None,
        rejected_spans: None,
        partial_success_message: None,
        redacted: false,
        requests: 1,
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
        env_differs: Vec::new(),
        errors: BTreeMap::new(),
        interrupted: None,
        interval: [0.7225, 1.0],
        outcome: "failed: deploys/D-42.status equals".into(),
        outcomes: BTreeMap::from([("failed: deploys/D-42.status equals".into(), 10)]),
        rate: 1.0,
        reproduced: 10,
        rules: worldline_log::log::rules::CURRENT,
        run: "20261128-093036-94a3bea0".into(),
        times: 10,
    };
    insta::assert_snapshot!(text(|out| super::repro::write(out, &r)));
    // Repetitions that were six distinct runs say so, as --json does.
    let varied = worldline_engine::fuzz::repro::Repro {
        distinct_runs: 6,
        interrupted: None,
        ..r
    };
    let shown = text(|out| super::repro::write(out, &varied));
    assert!(shown.contains("  6 distinct runs"), "{shown}");
    // Repetitions of a run under older rules ran under them, and say so.
    let older = worldline_engine::fuzz::repro::Repro { rules: 7, ..varied };
    let shown = text(|out| super::repro::write(out, &older));
    assert!(
        shown.contains("\n  under rules 7, the run's (decision 0423); "),
        "{shown}"
    );
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
        world: "incident@v4".into(),
        attempts,
        cut: None,
    };
    SuiteRun {
        cases: vec![
            case(
                0,
                "incident/stale-deploys",
                vec![Attempt {
                    outcome: Err("the agent could not start: no such file".into()),
                    elapsed: std::time::Duration::from_millis(12),
                    model: Default::default(),
                    judge: Default::default(),
                    tokens_missing: None,
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
        interrupted: None,
        stopped: None,
        set_aside: Vec::new(),
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

/// The text reporter of `s`'s cases, writing to memory.
fn human(s: &worldline_engine::suite::SuiteRun) -> super::events::Human<Vec<u8>, Vec<u8>> {
    let cases = s.cases.iter().map(|c| (c.index, c.name.as_str()));
    super::events::Human::new(Vec::new(), Vec::new(), cases)
}

#[test]
fn the_human_reporter_writes_the_report_when_the_suite_finishes() {
    let s = suite_run();
    let mut human = human(&s);
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

/// A case's line is written once its runs are on disk and every case
/// before it in the suite's order is written: the same lines, in the same
/// order, as the report at the end, only sooner. A line was written only
/// when the whole suite ended (a CI log of a suite of live-model cases
/// stayed empty for its minutes).
#[test]
fn the_human_reporter_writes_a_case_s_line_once_its_runs_and_those_before_are_on_disk() {
    use worldline_engine::suite::SuiteEvent;
    use worldline_engine::suite::{Attempt, CaseRun};
    let mut s = suite_run();
    // Three cases that ran, then the one `--fail-fast` skipped.
    let ran = |index: usize, name: &str| CaseRun {
        index,
        name: name.into(),
        path: format!("cases/{name}.toml").into(),
        world: "incident@v4".into(),
        attempts: vec![Attempt {
            outcome: Err("the agent could not start: no such file".into()),
            elapsed: std::time::Duration::from_millis(12),
            model: Default::default(),
            judge: Default::default(),
            tokens_missing: None,
        }],
        cut: None,
    };
    let skipped = s.cases.pop().unwrap();
    s.cases = vec![
        ran(0, "incident/stale-deploys"),
        ran(1, "b"),
        ran(2, "c"),
        CaseRun {
            index: 3,
            ..skipped
        },
    ];
    let mut human = human(&s);
    let written = |human: &mut super::events::Human<Vec<u8>, Vec<u8>>, e: SuiteEvent| {
        human.event(&e).unwrap();
        String::from_utf8(human.out.clone()).unwrap()
    };
    // The third case on disk first: nothing, as the first is not.
    written(&mut human, SuiteEvent::CaseFinished(&s.cases[2]));
    assert_eq!(written(&mut human, SuiteEvent::OnDisk { cases: &[2] }), "");
    // The first finished but not on disk: nothing.
    assert_eq!(
        written(&mut human, SuiteEvent::CaseFinished(&s.cases[0])),
        ""
    );
    let first = written(&mut human, SuiteEvent::OnDisk { cases: &[0] });
    assert_eq!(first.lines().count(), 1, "{first}");
    assert!(first.starts_with("FAIL  incident/stale-deploys"), "{first}");
    // The second on disk: it and the third, held for it.
    written(&mut human, SuiteEvent::CaseFinished(&s.cases[1]));
    let three = written(&mut human, SuiteEvent::OnDisk { cases: &[1] });
    let names: Vec<&str> = three
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(names, ["incident/stale-deploys", "b", "c"], "{three}");
    // The skipped case's line waits for the end, with the totals.
    written(&mut human, SuiteEvent::CaseFinished(&s.cases[3]));
    assert_eq!(
        written(&mut human, SuiteEvent::OnDisk { cases: &[3] }),
        three
    );
    let all = written(&mut human, SuiteEvent::Finished(&s));
    let mut direct = (Vec::new(), Vec::new());
    super::suite::write(&mut direct.0, &mut direct.1, &s).unwrap();
    assert_eq!((all.as_bytes(), &human.err), (&direct.0[..], &direct.1));
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

/// The characters XML 1.0 forbids beside the controls (U+FFFE, U+FFFF)
/// never reach the document: a CI parser refused it; the characters that
/// reorder text reach it escaped.
#[test]
fn the_junit_document_holds_no_character_xml_forbids() {
    let mut s = suite_run();
    s.cases[0].attempts[0].outcome =
        Err("the agent said \u{FFFE}\u{FFFF} \u{1b}[31m \u{202e}desrever\u{2066}".into());
    let xml = super::junit::render(&s).unwrap();
    assert!(!xml.contains(['\u{FFFE}', '\u{FFFF}', '\u{1b}']), "{xml}");
    assert!(xml.contains("the agent said"), "{xml}");
    // Nor the characters that reorder text: escaped, as the terminal does.
    assert!(!xml.contains(['\u{202e}', '\u{2066}']), "{xml}");
    assert!(xml.contains("\\u{202e}desrever\\u{2066}"), "{xml}");
}

/// A case's reason is cut at 16 KiB in the suite's line and in JUnit's
/// message (a 500,000-character `where` made one line of that size).
#[test]
fn a_huge_reason_is_cut_in_the_case_line_and_in_junit() {
    let mut s = suite_run();
    s.cases[0].attempts[0].outcome = Err(format!("no row has status {}", "x".repeat(500_000)));
    let shown = text(|out| super::suite::write(out, &mut Vec::new(), &s));
    let line = shown.lines().next().unwrap();
    assert!(line.len() < 17 * 1024, "{} bytes", line.len());
    assert!(
        line.contains("bytes more; `--json` holds it whole)"),
        "{}",
        &line[line.len() - 80..]
    );
    let xml = super::junit::render(&s).unwrap();
    assert!(xml.len() < 40 * 1024, "{} bytes of JUnit", xml.len());
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

/// A verification with a run of each verdict and each kind not replayed:
/// its replays' reports, and what is counted and kept of them.
fn verified() -> (
    Vec<worldline_engine::replay::ReplayReport>,
    worldline_engine::ops::replay::Verified,
) {
    use worldline_engine::ops::replay::{Drawn, Tally, Unreadable, Verified};
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
        stopped: None,
        replay_timed_out: false,
        session: None,
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
        stopped: None,
        replay_timed_out: false,
        session: None,
        ..report(
            "20261128-093040-d00d0004",
            Verdict::Diverged,
            Scope::Boundary,
        )
    };
    let reports = vec![
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
    ];
    let mut tally = Tally::default();
    for r in &reports {
        tally.add(r);
    }
    let v = Verified {
        tally,
        unreadable: vec![Unreadable {
            run: "20261128-093041-e00e0005".into(),
            error: "bad chain hash at event 3".into(),
        }],
        headless: vec!["20261128-093042-f00f0006".into()],
        sessions: vec!["20261128-093043-aa0a0007".into()],
        copies: vec!["20261128-093044-bb0b0008-redacted".into()],
        later: vec![(
            "20261128-093045-cc0c0009".into(),
            worldline_log::log::rules::CURRENT + 1,
        )],
        sample: Some(Drawn {
            of: 40,
            seed: 17,
            runs: vec![
                "20261128-093036-a00a0001".into(),
                "20261128-093040-d00d0004".into(),
            ],
            named: false,
        }),
    };
    (reports, v)
}

/// `verify`'s report written as its replays come, this worldline's rules
/// number and the later one's named by what they are, so a new rules
/// number does not change the snapshots (they spelt 9 and 10 once).
fn verify_report(json: bool) -> String {
    let (reports, v) = verified();
    let doc = text(|out| {
        let mut report = super::verify::Stream::new(out, json, v.sample.as_ref(), 2)?;
        for r in &reports {
            report.replayed(r)?;
        }
        report.finish(&v)
    });
    let current = worldline_log::log::rules::CURRENT;
    doc.replace(
        &format!("rules {}, past this one's {current}", current + 1),
        "rules CURRENT + 1, past this one's CURRENT",
    )
    .replace(
        &format!("\"rules\": {}", current + 1),
        "\"rules\": \"CURRENT + 1\"",
    )
}

#[test]
fn verify_writes_a_line_per_run_then_the_totals() {
    insta::assert_snapshot!(verify_report(false));
}

/// A sample drawn from runs named says the seed draws it again from
/// them: the seed alone draws from every run of the store.
#[test]
fn verify_of_a_sample_of_runs_named_says_to_name_them_again() {
    let (_, mut v) = verified();
    if let Some(s) = v.sample.as_mut() {
        s.named = true;
    }
    let said = text(|out| super::verify::Stream::new(out, false, v.sample.as_ref(), 2).map(drop));
    assert!(
        said.contains("(`--sample 2 --seed 17` with the same runs named draws it again)"),
        "{said}"
    );
}

#[test]
fn verify_json_counts_each_verdict() {
    let doc = verify_report(true);
    let read: Value = serde_json::from_str(&doc).expect("one JSON document");
    assert_eq!(read["runs"].as_array().map(Vec::len), Some(5));
    insta::assert_snapshot!(doc);
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
    // The same profile read from another spelling of its path (another
    // machine's mount) is the same campaign: it was refused.
    let (path, mut other) = shard("fuzz-stale-deploys-2of2.json");
    let from = other["faults"]["from"].as_str().unwrap().to_string();
    other["faults"]["from"] = Value::from(format!("/mnt/pod/{from}"));
    let merged = merge(vec![shard("fuzz-stale-deploys-1of2.json"), (path, other)]);
    assert!(merged.is_ok(), "{}", merged.err().unwrap());
}

/// A fork of a run (`rollback_deploy` denied from event 2, the case made
/// from that run, fuel raised) killed inside a call: six events, one
/// shaped by a case rule and one by a fuzz fault, no footer.
fn forked_bundle() -> worldline_log::log::Bundle {
    use serde_json::json;
    use worldline_log::log::{Bundle, Chain, Event};
    let header = serde_json::from_value(json!({
        "agent_sha256": "5a85abe72625901f9457cef10dac8d2a6d10550658ae2504582a095c0475866e",
        "case": "incident/stale-deploys",
        "case_hash": "90d49a33a76c9e4fec8dcacedec4f03884a5a7d0780dcbf4702dd09764321da5",
        "engine_hash": "524fe5548ccb435172ce38fcc98362869829762a30bbab82c142828761d081bf",
        "format": "worldline-bundle/1",
        "harness_version": "0.1.0",
        "limits": {"fuel": 50_000_000},
        "origin": {"created_from": "run", "run": "20261128-093036-94a3bea0",
                   "chain_hash": "28ac4fcec88c021fc56ba0cc4c5101f0"},
        "parent": {"run": "20261128-093036-94a3bea0", "chain_hash": "9f2c4e1a7b3d5f60",
                   "event": 2, "edits": [{"edit": "deny", "tool": "rollback_deploy"}]},
        "seed": 514,
        "world": "incident@v4",
        "world_hash": "182df03b2e45956372d27b220e48b55a0a3bacb5efc942542bb892613f47486c"
    }))
    .unwrap();
    let tool =
        |seq: u64, effect: &str, name: &str, response: Value, injected: Option<Value>| -> Event {
            serde_json::from_value(json!({
                "call": "worldline:agent/tools.call", "effect": effect, "fuel": 1000 * seq,
                "request": {"args": {"id": "D-42"}, "name": name}, "response": response,
                "injected": injected, "seq": seq, "vtime_ns": 930_000_000 * seq,
            }))
            .unwrap()
        };
    let refused = json!({"error": {"kind": "denied", "message": "rollback_deploy is denied"}});
    let events =
        vec![
        serde_json::from_value(json!({
            "call": "wasi:clocks/wall-clock.now", "effect": "read", "fuel": 10,
            "request": {}, "response": {"seconds": 1_772_366_400, "nanoseconds": 0},
            "seq": 0, "vtime_ns": 1_000_000,
        }))
        .unwrap(),
        tool(1, "read", "get_deploy", json!({"ok": {"id": "D-42", "status": "live"}}), None),
        tool(2, "denied", "rollback_deploy", refused, None),
        tool(
            3,
            "failed",
            "list_deploys",
            json!({"error": {"kind": "unavailable", "message": "503"}}),
            Some(json!({"rule": 0, "action": "error"})),
        ),
        tool(
            4,
            "failed",
            "list_deploys",
            json!({"error": {"kind": "timeout", "message": "timed out"}}),
            Some(json!({"fuzz": {"tool": "list_deploys", "nth": 2, "action": "timeout"},
                        "action": "timeout"})),
        ),
        serde_json::from_value(json!({
            "call": "wasi:clocks/monotonic-clock.now", "effect": "read", "fuel": 5000,
            "request": {}, "response": 4_650_000_000_u64, "seq": 5, "vtime_ns": 4_650_000_000_u64,
        }))
        .unwrap(),
    ];
    Bundle {
        header,
        events,
        footer: None,
        in_flight: Some(
            serde_json::from_value(json!({"call": "worldline:agent/tools.call",
                "request_sha256": "ab", "seq": 6, "tool": "page_oncall"}))
            .unwrap(),
        ),
        chain: Chain::default(),
    }
}

/// Events 1 to 4 of `forked_bundle()`: a page with one event after it.
fn history_query() -> worldline_engine::ops::history::Query {
    worldline_engine::ops::history::Query {
        only: None,
        skip: 1,
        max_count: Some(4),
        streams: false,
        whole: false,
    }
}

#[test]
fn history_writes_the_lineage_a_line_per_event_and_where_the_page_stands() {
    use worldline_engine::ops::history::{Read, page};
    let mut read = Read {
        bundle: forked_bundle().into(),
        total: 6,
    };
    let q = history_query();
    let page = page(&mut read, &q);
    let t = super::history::Timeline {
        path: std::path::Path::new("runs/20261128-093040-d00d0004.jsonl"),
        bundle: &read.bundle,
        page: &page,
        hidden: Some(3),
        store_view: false,
        live: false,
    };
    let cut = super::timeline::Cut::Standard;
    insta::assert_snapshot!(text(|out| super::history::write(out, &t, cut)));
}

/// A run killed before its first event says so (it said "after event 0",
/// an event it never had).
#[test]
fn history_of_a_run_killed_before_any_event_says_so() {
    use worldline_engine::ops::history::{Read, page};
    let mut bundle = forked_bundle();
    bundle.events.clear();
    bundle.in_flight = None;
    let mut read = Read {
        bundle: bundle.into(),
        total: 0,
    };
    let page = page(&mut read, &history_query());
    let t = super::history::Timeline {
        path: std::path::Path::new("runs/20261128-093040-d00d0004.jsonl"),
        bundle: &read.bundle,
        page: &page,
        hidden: None,
        store_view: false,
        live: false,
    };
    let cut = super::timeline::Cut::Standard;
    let said = text(|out| super::history::write(out, &t, cut));
    assert!(
        said.contains("(incomplete: the run stopped before its first event; no footer)"),
        "{said}"
    );
}

/// A run still being recorded is inside its open call, not killed there
/// (it opened "killed inside model.complete" and ended "still being
/// recorded").
#[test]
fn history_of_a_live_run_says_its_open_call_is_in_flight() {
    use worldline_engine::ops::history::{Read, page};
    let mut bundle = forked_bundle();
    bundle.footer = None;
    let mut read = Read {
        bundle: bundle.into(),
        total: 6,
    };
    let page = page(&mut read, &history_query());
    let t = super::history::Timeline {
        path: std::path::Path::new("runs/20261128-093040-d00d0004.jsonl"),
        bundle: &read.bundle,
        page: &page,
        hidden: None,
        store_view: false,
        live: true,
    };
    let cut = super::timeline::Cut::Standard;
    let said = text(|out| super::history::write(out, &t, cut));
    assert!(
        said.contains(
            "in flight: tool `page_oncall` (event 6: its intent recorded, its answer not yet)"
        ),
        "{said}"
    );
    assert!(!said.contains("killed"), "{said}");
    assert!(said.contains("still being recorded"), "{said}");
}

#[test]
fn history_json_is_the_header_and_the_page_saying_where_it_is() {
    use worldline_engine::ops::history::{Read, page};
    let mut read = Read {
        bundle: forked_bundle().into(),
        total: 6,
    };
    let q = history_query();
    let page = page(&mut read, &q);
    let t = super::history::Timeline {
        path: std::path::Path::new("runs/20261128-093040-d00d0004.jsonl"),
        bundle: &read.bundle,
        page: &page,
        hidden: None,
        store_view: false,
        live: false,
    };
    let doc = super::history::json(&t, &q, false);
    insta::assert_snapshot!(serde_json::to_string_pretty(&doc).unwrap());
}

/// A run's footer as recorded, with `status` and what it kept of its
/// streams.
fn footer(status: &str, stdout: &str, stderr: &str) -> worldline_log::log::Footer {
    serde_json::from_value(serde_json::json!({
        "chain_hash": "9f2c4e1a7b3d5f60aa11bb22cc33dd44", "events": 12,
        "final_state_hash": "c0ffee", "fuel": 123_456, "output": "rolled back D-42",
        "replayable": true, "status": status, "stdout": stdout, "stderr": stderr,
        "truncated_bytes": 12,
    }))
    .unwrap()
}

#[test]
fn history_streams_end_each_with_a_newline_and_note_what_was_dropped() {
    use super::history::{Streams, streams_json, write_streams};
    let f = footer("completed", "step 1\nstep 2", "warning: slow\n");
    let both = Streams {
        stdout: true,
        stderr: true,
    };
    let mut err = Vec::new();
    let out = text(|out| write_streams(out, &mut err, &f, both));
    let path = std::path::Path::new("runs/20261128-093040-d00d0004.jsonl");
    let only_stderr = Streams {
        stdout: false,
        stderr: true,
    };
    let doc = streams_json(path, &f, only_stderr);
    insta::assert_snapshot!(format!(
        "{out}--- stderr\n{}--- json\n{}",
        String::from_utf8(err).unwrap(),
        serde_json::to_string_pretty(&doc).unwrap()
    ));
}

/// A world with one deploy, `D-42`, live.
fn deploys() -> worldline_case::world::state::State {
    serde_json::from_value(serde_json::json!({
        "tables": {"deploys": {"key": "id", "rows": {"D-42": {"id": "D-42", "status": "live"}}}},
        "files": {},
    }))
    .unwrap()
}

#[test]
fn show_writes_the_event_whole_and_the_world_after_it() {
    use worldline_case::world::state::Write;
    let mut event = forked_bundle().events.swap_remove(3);
    let write = Write::Put {
        table: "deploys".into(),
        key: "D-42".into(),
        row: serde_json::json!({"id": "D-42", "status": "rolled_back"}),
    };
    let mut state = deploys();
    state.apply(&write);
    event.writes.push(write);
    let origin = forked_bundle().header.origin;
    insta::assert_snapshot!(text(|out| super::history::write_event(
        out,
        "20261128-093040-d00d0004",
        &event,
        None,
        origin.as_ref(),
        &state
    )));
}

/// Three branches of a run: one completed, one errored, one trapped.
fn branch_outcomes() -> Vec<worldline_engine::run::RunOutcome> {
    let header: worldline_log::log::Header = forked_bundle().header;
    ["completed", "errored", "trapped"]
        .iter()
        .enumerate()
        .map(|(i, status)| worldline_engine::run::RunOutcome {
            run_id: Some(format!("20261128-09304{i}-b00b000{i}")),
            divergence: None,
            reached_end: false,
            grade: None,
            bundle: None,
            header: header.clone(),
            footer: footer(status, "", "panicked at src/lib.rs:3:5"),
            events: Default::default(),
            final_state: Default::default(),
        })
        .collect()
}

/// The report of `branch_outcomes()`, four asked for, written as a
/// stream to memory: `end` finishes it (or fails it) after the members.
fn branches(
    json: bool,
    end: impl FnOnce(super::group::Stream<'_, &mut Vec<u8>>) -> std::io::Result<()>,
) -> String {
    let outcomes = branch_outcomes();
    text(|out| {
        let asked = super::group::Asked {
            parent: "20261128-093036-94a3bea0",
            at: 2,
            samples: 4,
        };
        let mut report = super::group::Stream::new(out, asked, json);
        for (seed, o) in [11, 12, 13].into_iter().zip(&outcomes) {
            report.member(seed, o)?;
        }
        end(report)
    })
}

#[test]
fn a_group_of_branches_is_a_line_each_then_pass_at_k_and_pass_hat_k() {
    let written = branches(false, |report| {
        assert!(!report.finish(1, 1234.5)?, "two of three failed");
        Ok(())
    });
    insta::assert_snapshot!(written);
}

#[test]
fn a_group_of_branches_as_json_names_its_parent_and_each_member() {
    let written = branches(true, |report| report.finish(1, 1234.5).map(drop));
    let doc: Value = serde_json::from_str(&written).expect("one JSON document");
    assert_eq!(doc["members"].as_array().unwrap().len(), 3, "{doc}");
    assert_eq!(doc["group"]["passes"], 1, "{doc}");
    insta::assert_snapshot!(written);
}

/// A `--json` report that fails after its first members is still one
/// JSON document: the members written, then the error.
#[test]
fn a_group_of_branches_that_fails_midway_ends_its_json_with_the_error() {
    let error =
        serde_json::json!({"kind": "internal", "exit_code": 4, "message": "branch 3 of 4: killed"});
    let written = branches(true, |report| report.fail(&error));
    let doc: Value = serde_json::from_str(&written).expect("one JSON document");
    assert_eq!(doc["members"].as_array().unwrap().len(), 3, "{doc}");
    assert_eq!(doc["error"], error);
    assert!(doc.get("group").is_none(), "{doc}");
}

/// Where two runs' events first differ, as `diff` finds it (each held).
fn first_of(
    a: &[worldline_log::log::Event],
    b: &[worldline_log::log::Event],
) -> Option<super::diff::First> {
    use worldline_log::log::Held;
    super::diff::first_difference(&mut Held::of(a), &mut Held::of(b), None)
}

/// How a completed run that passed ended.
fn passed() -> super::diff::Ending {
    super::diff::Ending {
        status: "completed".into(),
        outcome: "passed".into(),
    }
}

/// `forked_bundle()`'s events beside the same run answered otherwise at
/// event 2, whose final state has the deploy rolled back.
fn compared_runs(f: impl FnOnce(&super::diff::Compared<'_>) -> String) -> String {
    use worldline_case::world::state::Write;
    let a = forked_bundle().events;
    let mut b = a.clone();
    b[2].effect = worldline_log::log::Effect::Write;
    b[2].response = serde_json::json!({"ok": {"id": "D-42", "status": "rolled_back"}});
    let mut after = deploys();
    after.apply(&Write::Put {
        table: "deploys".into(),
        key: "D-42".into(),
        row: serde_json::json!({"id": "D-42", "status": "rolled_back"}),
    });
    let state = worldline_engine::grade::diff::diff(&deploys(), &after);
    use super::diff::{Compared, Side};
    let ending = passed();
    f(&Compared {
        a: Side {
            run: "20261128-093040-d00d0004",
            events: a.len(),
            output: None,
            rules: 8,
            ending: &ending,
        },
        b: Side {
            run: "20261128-093041-e00e0005",
            events: b.len(),
            output: Some("rolled back D-42"),
            rules: 9,
            ending: &ending,
        },
        first: first_of(&a, &b),
        state: &state,
        redacted_view: false,
        notes: &[],
    })
}

#[test]
fn diff_writes_where_two_runs_first_differ_and_their_final_states() {
    insta::assert_snapshot!(compared_runs(|c| text(|out| super::diff::write(
        out,
        c,
        super::timeline::Cut::Standard
    ))));
}

#[test]
fn diff_json_gives_each_side_of_the_first_divergence() {
    insta::assert_snapshot!(compared_runs(|c| serde_json::to_string_pretty(
        &super::diff::json(c)
    )
    .unwrap()));
}

/// Two runs whose first difference is a request field no line shows (a
/// model request's `temperature`): `diff` says where they differ (it
/// printed two equal lines and nothing else).
#[test]
fn diff_names_the_request_field_two_equal_lines_differ_in() {
    let a = forked_bundle().events;
    let mut b = a.clone();
    b[1].request["temperature"] = serde_json::json!(1.0);
    let state = worldline_engine::grade::diff::diff(&deploys(), &deploys());
    let ending = passed();
    let c = super::diff::Compared {
        a: super::diff::Side {
            run: "a",
            events: a.len(),
            output: None,
            rules: 9,
            ending: &ending,
        },
        b: super::diff::Side {
            run: "b",
            events: b.len(),
            output: None,
            rules: 9,
            ending: &ending,
        },
        first: first_of(&a, &b),
        state: &state,
        redacted_view: false,
        notes: &[],
    };
    let written = text(|out| super::diff::write(out, &c, super::timeline::Cut::Standard));
    assert!(
        written.contains("first difference at event 1:"),
        "{written}"
    );
    assert!(
        written.contains("  request $.temperature: null → 1.0"),
        "{written}"
    );
}

/// A probe of `validate` that ran and passed or not.
fn probe(agent: &'static str, passed: bool) -> worldline_engine::validate::Probe {
    worldline_engine::validate::Probe {
        agent,
        status: "completed".into(),
        passed,
        reward: if passed { 1.0 } else { 0.0 },
        failed: Vec::new(),
    }
}

/// Three cases: one that validates, one the do-nothing agent passes and
/// whose answer leaks, one that does not load.
fn validated_rows() -> Vec<super::validate::Row> {
    use super::validate::Row;
    use worldline_engine::validate::{Leak, Validated};
    let ok = Validated {
        ok: true,
        problems: Vec::new(),
        notes: vec!["no gold calls: the oracle was not run".into()],
        oracle: None,
        do_nothing: probe("do-nothing", false),
        empty_answer: probe("empty-answer", false),
        deterministic: true,
        leaks: Vec::new(),
    };
    let failing = Validated {
        ok: false,
        problems: vec!["the do-nothing agent passes: nothing checks the work".into()],
        notes: vec!["no gold calls: the oracle was not run".into()],
        oracle: Some(probe("oracle", true)),
        do_nothing: probe("do-nothing", true),
        empty_answer: probe("empty-answer", false),
        deterministic: false,
        leaks: vec![Leak {
            check: "output.contains".into(),
            value: "D-42".into(),
            seen_in: "task".into(),
        }],
    };
    vec![
        Row::validated(
            "refund/duplicate".into(),
            "cases/refund/duplicate.toml".into(),
            ok,
        ),
        Row::validated(
            "incident/stale-deploys".into(),
            "cases/incident/stale-deploys.toml".into(),
            failing,
        ),
        Row::broken(
            "broken".into(),
            "cases/broken.toml".into(),
            "cases/broken.toml: line 3: expected `=`".into(),
        ),
    ]
}

#[test]
fn validate_writes_a_line_per_case_the_failing_ones_and_the_notes() {
    let rows = validated_rows();
    let report = super::validate::Report::of(&rows);
    assert!(!report.passed());
    insta::assert_snapshot!(text(|out| super::validate::write(out, &report)));
}

/// A case named shorter than the `case` header keeps its row under the
/// headers (the columns were pushed left of them).
#[test]
fn validate_s_columns_stay_under_their_headers_for_a_short_case_name() {
    let rows = [super::validate::Row::broken(
        "c".into(),
        "cases/c.toml".into(),
        "no world".into(),
    )];
    let report = super::validate::Report::of(&rows);
    let shown = text(|out| super::validate::write(out, &report));
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0].find("oracle"), Some(6), "{shown}");
    assert_eq!(lines[1].find('-'), Some(6), "{shown}");
}

/// Every result of `validate --json` holds the keys docs/cli.md lists,
/// a broken case's too (it held `case`, `path`, `verdict` and `error`).
#[test]
fn validate_json_gives_every_result_every_key() {
    let rows = validated_rows();
    let report = super::validate::Report::of(&rows);
    let doc = serde_json::to_value(&report).unwrap();
    let keys = [
        "case",
        "path",
        "verdict",
        "ok",
        "problems",
        "notes",
        "oracle",
        "do_nothing",
        "empty_answer",
        "deterministic",
        "leaks",
    ];
    for r in doc["results"].as_array().unwrap() {
        for k in keys {
            assert!(r.get(k).is_some(), "{k} in {r}");
        }
    }
    let broken = (doc["results"].as_array().unwrap().iter())
        .find(|r| r["verdict"] == "broken")
        .unwrap();
    assert_eq!(broken["ok"], false);
    assert_eq!(broken["problems"][0], broken["error"]);
}

#[test]
fn replay_of_a_redacted_copy_says_what_it_checked_and_what_it_cannot() {
    let r = worldline_log::log::bundle::Redacted {
        hidden: 7,
        original_run: "20261128-093036-94a3bea0".into(),
        original_chain_hash: "9f2c4e1a7b3d5f60aa11bb22cc33dd44".into(),
        policy_sha256: "5d1f0e9a".into(),
        clock: None,
    };
    let path = std::path::Path::new("copies/20261128-093036-94a3bea0.jsonl");
    let doc = super::verify::redacted_copy_json(path, 12, &r);
    insta::assert_snapshot!(format!(
        "{}--- json\n{}",
        text(|out| super::verify::write_redacted_copy(out, path, 12, &r)),
        serde_json::to_string_pretty(&doc).unwrap()
    ));
}

#[test]
fn rerun_writes_the_run_then_the_verdict_before_and_after_and_what_changed() {
    use super::rerun::{Change, Original, RerunSummary};
    let outcomes = branch_outcomes();
    let changed = [
        Change {
            after: true,
            before: Some(false),
            what: "deploys/D-42.status equals \"rolled_back\"".into(),
        },
        Change {
            after: true,
            before: None,
            what: "output contains \"D-42\"".into(),
        },
    ];
    let s = RerunSummary {
        run: super::run::RunSummary::of(&outcomes[0]),
        changed_assertions: &changed,
        notes: &[],
        original: Original {
            output: None,
            rules: 8,
            run: "20261128-093036-94a3bea0",
            status: "failed",
        },
        rules: 8,
    };
    insta::assert_snapshot!(text(|out| super::rerun::write(
        out,
        &s,
        &outcomes[0],
        "5a85abe72625901f9457cef10dac8d2a6d10550658ae2504582a095c0475866e"
    )));
}

#[test]
fn a_regraded_run_is_its_status_the_warnings_the_agents_error_then_the_grade() {
    use worldline_case::world::state::Write;
    use worldline_engine::grade::{Assertion, Grade};
    let mut after = deploys();
    after.apply(&Write::Put {
        table: "deploys".into(),
        key: "D-42".into(),
        row: serde_json::json!({"id": "D-42", "status": "paused"}),
    });
    let grade = Grade {
        passed: false,
        reward: 0.0,
        assertions: vec![
            Assertion {
                what: "output contains \"D-42\"".into(),
                passed: true,
                expected: serde_json::json!("D-42"),
                actual: serde_json::json!("rolled back D-42"),
                judge: None,
            },
            Assertion {
                what: "deploys/D-42.status equals".into(),
                passed: false,
                expected: serde_json::json!("rolled_back"),
                actual: serde_json::json!("paused"),
                judge: None,
            },
        ],
        diff: worldline_engine::grade::diff::diff(&deploys(), &after),
        turns: Vec::new(),
    };
    let f = footer("trapped", "", "panicked at src/lib.rs:3:5");
    let warnings = ["the case changed since the run: graded against the case as it is now".into()];
    let s = super::grade::RegradeSummary {
        agent_error: worldline_engine::traceback::agent_error(&f),
        bundle: "runs/20261128-093040-d00d0004.jsonl".into(),
        case: "cases/incident/stale-deploys.toml".into(),
        grade: &grade,
        recorded_grade: f.verdict(),
        run_status: f.status.as_str(),
        status: worldline_engine::grade::verdict::shown_status(f.status, Some(&grade)),
        warnings: &warnings,
    };
    insta::assert_snapshot!(text(|out| super::grade::write_regrade(out, &s)));
}

#[test]
fn import_names_each_run_a_redacted_copy_and_what_was_skipped() {
    use worldline_engine::export::{Imported, Skipped};
    let imported = [
        Imported {
            run_id: "20261128-093036-94a3bea0".into(),
            redacted: None,
            new: true,
        },
        Imported {
            run_id: "20261128-093037-ab44c7dd".into(),
            redacted: None,
            new: false,
        },
        Imported {
            run_id: "20261128-093038-c00c0003".into(),
            redacted: Some(worldline_log::log::bundle::Redacted {
                hidden: 7,
                original_run: "20261128-093030-0a0a0a0a".into(),
                original_chain_hash: "9f2c4e1a7b3d5f60".into(),
                policy_sha256: "5d1f0e9a".into(),
                clock: None,
            }),
            new: true,
        },
    ];
    let skipped = [Skipped {
        run_id: "20261128-093039-c00c0009".into(),
        reason: "bad chain hash at event 3".into(),
    }];
    let mut err = Vec::new();
    let out = text(|out| {
        super::import::write(
            out,
            &mut err,
            &super::import::Imports {
                store: "/srv/worldline/store",
                imported: &imported,
                skipped: &skipped,
                totals: true,
            },
        )
    });
    insta::assert_snapshot!(format!(
        "{out}--- stderr\n{}",
        String::from_utf8(err).unwrap()
    ));
}

#[test]
fn case_from_run_and_from_trace_say_what_they_wrote_and_list_a_traces_runs() {
    use worldline_engine::regress::from_run::FromRun;
    use worldline_engine::regress::from_trace::{FromTrace, Listed};
    let from_run = FromRun {
        run_id: "20261128-093036-94a3bea0".into(),
        chain_hash: "9f2c4e1a7b3d5f60aa11bb22cc33dd44".into(),
        case: "cases/regress/stale-deploys.toml".into(),
        bundle_copy: "cases/regress/stale-deploys.bundle.jsonl".into(),
        injects: 2,
        model_calls: 5,
        not_carried: vec!["the agent's environment (HOME changed)".into()],
        world: "incident@v4".into(),
    };
    // A trace's id and tool name with a terminal escape in them.
    let listed = [Listed {
        trace_id: "28ac4fcec88c021f\u{1b}[2J".into(),
        model_calls: 3,
        tool_calls: 2,
        tools: vec!["get_deploy".into(), "roll\u{1b}[31mback".into()],
    }];
    let from_trace = FromTrace {
        trace_id: "28ac4fcec88c021fc56ba0cc4c5101f0".into(),
        dir: "cases/from-trace".into(),
        case: "cases/from-trace/case.toml".into(),
        world: "cases/from-trace/worlds/traced".into(),
        model_calls: 3,
        tool_calls: 2,
        pinned: 1,
        user_turns: 0,
        tools: vec!["get_deploy".into(), "rollback_deploy".into()],
        forms: vec!["openai-v2"],
    };
    insta::assert_snapshot!(text(|out| {
        super::case::write_from_run(out, &from_run)?;
        super::case::write_trace_runs(out, &listed)?;
        super::case::write_from_trace(out, &from_trace)
    }));
}

/// A trace run with no tool says so (the summary read `tools: )`).
#[test]
fn a_trace_run_without_tools_says_no_tools() {
    use worldline_engine::regress::from_trace::{FromTrace, Listed};
    let listed = [Listed {
        trace_id: "28ac4fcec88c021fc56ba0cc4c5101f0".into(),
        model_calls: 1,
        tool_calls: 0,
        tools: Vec::new(),
    }];
    let made = FromTrace {
        trace_id: "28ac4fcec88c021fc56ba0cc4c5101f0".into(),
        dir: "out".into(),
        case: "out/cases/trace-28ac4fce.toml".into(),
        world: "out/worlds/traced/v1/world.toml".into(),
        model_calls: 1,
        tool_calls: 0,
        pinned: 0,
        user_turns: 0,
        tools: Vec::new(),
        forms: vec!["gen_ai attributes"],
    };
    let shown = text(|out| {
        super::case::write_trace_runs(out, &listed)?;
        super::case::write_from_trace(out, &made)
    });
    assert!(
        shown.contains("0 tool call(s)  no tools\n")
            && shown.contains("0 recorded result(s) pinned, no tools); read out/README.md"),
        "{shown}"
    );
    assert!(!shown.contains("tools: "), "{shown}");
}

/// A text report shows at most 16 KiB of one value, and says how much it
/// left out (a 6 MB output went to the terminal whole); `--json` is whole.
#[test]
fn a_huge_output_is_shown_cut_and_its_json_whole() {
    let mut outcome = branch_outcomes().remove(0);
    outcome.footer.output = Some(format!("é{}", "x".repeat(6 << 20)));
    let shown = text(|out| super::run::write(out, &outcome));
    let line = shown.lines().find(|l| l.starts_with("  output: ")).unwrap();
    assert!(line.len() < 17 * 1024, "{} bytes", line.len());
    assert!(
        line.ends_with("… (6275074 bytes more; `--json` holds it whole)"),
        "{}",
        &line[line.len() - 80..]
    );
    let json = serde_json::to_string(&super::run::RunSummary::of(&outcome)).unwrap();
    assert!(json.contains(&"x".repeat(6 << 20)));
}

/// A suite a signal stopped: pass^k is over the cases that made every
/// run (a case stopped after 2 of 4 runs counted the 2 never made as
/// failures: pass^2 16.7% from runs that all passed), its skipped cases
/// say what stopped them, and the merge does not pass.
#[test]
fn an_interrupted_suite_s_pass_k_is_over_the_cases_that_made_every_run() {
    let mut doc = fixture("test-model.json");
    doc["repeat"] = 4.into();
    doc["interrupted"] = "SIGINT".into();
    let cases = doc["cases"].as_array_mut().unwrap();
    for (case, runs) in cases.iter_mut().zip([4u64, 2, 0]) {
        let ids: Vec<String> = (0..runs).map(|i| format!("r{i}")).collect();
        (case["runs"], case["passes"], case["run_ids"]) = (runs.into(), runs.into(), ids.into());
    }
    let skipped = &mut cases[2];
    (skipped["skipped"], skipped["passed"]) = (true.into(), false.into());
    skipped["status"] = "skipped".into();
    for key in ["run_id", "bundle", "chain_hash", "events", "run_status"] {
        skipped[key] = serde_json::Value::Null;
    }
    (doc["passed"], doc["skipped"]) = (2.into(), 1.into());
    let merged = super::merge::merge(vec![("all.json".into(), doc)]).unwrap();
    let super::merge::Merged::Suite(s) = &merged else {
        panic!("a suite");
    };
    let values: Vec<f64> = s.pass_k.iter().map(|p| p.value).collect();
    assert_eq!(values, vec![1.0; values.len()], "{:?}", s.pass_k);
    assert!(!values.is_empty());
    assert!(matches!(merged.ending(), super::merge::Ending::Failed));
    let mut out = Vec::new();
    merged.write(&mut out, &mut Vec::new()).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("(SIGINT: not run)"), "{text}");
}

/// A case's name with control characters (its file's) reaches neither
/// the terminal nor the JUnit file raw: a newline broke the report's line
/// a case, and the JUnit writer dropped an escape and the character
/// after it.
#[test]
fn a_case_name_s_control_characters_are_shown_escaped() {
    let mut s = suite_run();
    s.cases[0].name = "nl\nname\u{1b}x".into();
    let mut out = Vec::new();
    super::suite::write(&mut out, &mut Vec::new(), &s).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("nl\\u{a}name\\u{1b}x"), "{text}");
    let junit = super::junit::render(&s).unwrap();
    assert!(junit.contains("name\\u{1b}x"), "{junit}");
}

/// A run that is not replayable is said to be stopped by the watchdog
/// only when it timed out; one a signal stopped (`trapped`) was blamed on
/// the watchdog of a case with no time limit of its own.
#[test]
fn a_run_stopped_by_a_signal_is_not_blamed_on_the_watchdog() {
    use worldline_log::log::bundle::Status;
    let mut outcome = branch_outcomes().remove(0);
    outcome.footer.replayable = false;
    for (status, said) in [
        (
            Status::Timeout,
            "stopped by the wall-clock watchdog; not replayable",
        ),
        (
            Status::Trapped,
            "stopped before it ended (a signal, or the command ending it); not replayable",
        ),
    ] {
        outcome.footer.status = status;
        let shown = text(|out| super::run::write(out, &outcome));
        assert!(shown.contains(said), "{shown}");
    }
}

/// A run stopped because the case's script ran out gets no guest
/// backtrace in its report: the agent did nothing wrong, and the frames
/// were the interpreter's (`<unnamed>` seven times, or CPython's). A
/// trap's is still shown.
#[test]
fn an_unscripted_run_s_report_shows_no_guest_backtrace() {
    let mut outcome = branch_outcomes().swap_remove(0);
    outcome.footer.backtrace = vec!["<unnamed>".into(), "run".into()];
    outcome.footer.stderr = String::new();
    for (status, shown) in [
        (worldline_log::log::Status::Unscripted, false),
        (worldline_log::log::Status::Trapped, true),
    ] {
        outcome.footer.status = status;
        let said = text(|out| super::run::write(out, &outcome));
        assert_eq!(said.contains("guest backtrace"), shown, "{said}");
    }
}

/// A native agent that prints its answer over several lines gets a note
/// saying that is not its output (its last line that is JSON, `2`, was,
/// with no word); one printed on one line gets none.
#[test]
fn a_native_answer_printed_over_several_lines_is_noted() {
    let mut outcome = branch_outcomes().swap_remove(0);
    outcome.header.isolation = Some("native".into());
    let pretty = "working\n{\n  \"cause\": \"D-42\",\n  \"n\": [\n    1,\n    2\n  ]\n}\n";
    for (stdout, output, noted) in [
        (pretty, "2", true),
        (
            "{\"cause\": \"D-42\", \"n\": [1, 2]}\n",
            "{\"cause\": \"D-42\", \"n\": [1, 2]}",
            false,
        ),
        ("just text\n", "2", false),
    ] {
        outcome.footer.stdout = stdout.into();
        outcome.footer.output = Some(output.into());
        let said = text(|out| super::run::write(out, &outcome));
        assert_eq!(said.contains("written over several lines"), noted, "{said}");
    }
    // A guest's output is not read from stdout.
    outcome.header.isolation = None;
    outcome.footer.stdout = pretty.into();
    outcome.footer.output = Some("2".into());
    let said = text(|out| super::run::write(out, &outcome));
    assert!(!said.contains("written over several lines"), "{said}");
}

/// A recording that ended stopped by a signal (a footer, `trapped`, not
/// replayable) is said so by `replay` and `verify`: it was "incomplete",
/// as a run cut off before its footer is.
#[test]
fn a_replay_of_a_run_a_signal_stopped_says_so() {
    use worldline_engine::replay::{ReplayReport, Scope, Verdict};
    let mut r = ReplayReport {
        run: "20261128-093036-94a3bea0".into(),
        verdict: Verdict::VerifiedPrefix,
        scope: Scope::Boundary,
        matched: 0,
        recorded: 0,
        chain_hash: "9f2c4e1a7b3d5f60aa11bb22cc33dd44".into(),
        divergence: None,
        diff: Vec::new(),
        env_differs: Vec::new(),
        stopped: Some("trapped".into()),
        replay_timed_out: false,
        session: None,
    };
    let shown = text(|out| super::verify::write_replay(out, &r));
    assert!(
        shown.contains("stopped before it ended (`trapped`") && !shown.contains("incomplete"),
        "{shown}"
    );
    r.stopped = None;
    let shown = text(|out| super::verify::write_replay(out, &r));
    assert!(shown.contains("the recorded run is incomplete"), "{shown}");
}
