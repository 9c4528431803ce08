//! A suite as JUnit XML for CI, written with `quick-junit` (the writer
//! cargo-nextest uses): one testsuite, one testcase per case, a graded
//! failure as `<failure>`, an agent fault or a case that could not run as
//! `<error>`, a case file that could not be loaded as an `<error>` of its
//! own, a case `--fail-fast` or a signal never started as `<skipped>`; the seed,
//! world, agent and (with `--repeat`) the pass rate, pass@k and pass^k as
//! properties (the suite's pass@k and pass^k on the testsuite); the
//! bundle's path in `<system-out>`.

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use worldline_engine::fuzz::stats::{pass_at_k, pass_hat_k};
use worldline_engine::suite::{Attempt, CaseRun, SuiteRun};

/// The machine's name, for the report's `hostname`.
pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `len` bytes into the buffer.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    if ok {
        String::from_utf8_lossy(&buf[..end]).into_owned()
    } else {
        "localhost".into()
    }
}

/// The `--junit` document.
pub fn render(s: &SuiteRun) -> anyhow::Result<String> {
    let started = chrono::DateTime::<chrono::Utc>::from(s.started);
    let mut suite = TestSuite::new("worldline");
    suite.set_timestamp(started).set_time(s.elapsed);
    suite.extra.insert("hostname".into(), hostname().into());
    for c in &s.cases {
        suite.add_test_case(test_case(c, s.repeat, s.interrupted));
    }
    for e in &s.collection_errors {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
        status
            .set_message(e.to_string())
            .set_type("collection error");
        let name = worldline_case::case::discover::display_name(&e.file);
        // The schema CI validators read requires a classname and a time:
        // the case file stands for the world it could not name.
        let mut case = TestCase::new(name.as_str(), status);
        case.set_classname(e.file.display().to_string())
            .set_time(std::time::Duration::ZERO);
        suite.add_test_case(case);
    }
    let summary = super::suite::SuiteSummary::of(s);
    for p in &summary.pass_at_k {
        suite.add_property(Property::new(
            format!("pass@{}", p.k),
            format!("{:.4}", p.value),
        ));
    }
    for p in &summary.pass_k {
        suite.add_property(Property::new(
            format!("pass^{}", p.k),
            format!("{:.4}", p.value),
        ));
    }
    let mut report = Report::new("worldline");
    report
        .set_timestamp(started)
        .set_time(s.elapsed)
        .add_test_suite(suite);
    // quick-junit leaves out the control characters XML 1.0 forbids, not
    // U+FFFE and U+FFFF, which it forbids too: a CI parser refused the
    // file for an agent's answer that held one.
    Ok(reordering_escaped(
        report
            .to_string()?
            .replace(['\u{FFFE}', '\u{FFFF}'], "\u{FFFD}"),
    ))
}

/// `xml` with the characters that reorder text (the bidirectional
/// overrides and isolates, U+202A–U+202E and U+2066–U+2069) written
/// `\u{202e}`, as the terminal's report shows them: an agent's error
/// holding one showed a CI page's text reversed.
fn reordering_escaped(xml: String) -> String {
    let reorders = |c: char| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !xml.contains(reorders) {
        return xml;
    }
    let mut out = String::with_capacity(xml.len() + 16);
    for c in xml.chars() {
        match c {
            c if reorders(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

fn test_case(c: &CaseRun, repeat: u64, interrupted: Option<&str>) -> TestCase {
    let Some(shown) = c.shown() else {
        let status = match c.reason() {
            // Its only run stopped by the signal (a native one).
            Some(reason) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_message(reason).set_type(c.status());
                status
            }
            None => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(match interrupted {
                    Some(signal) => format!("not run: {signal} stopped the suite"),
                    None => "not run: --fail-fast stopped the suite after a failure or a collection error"
                        .to_string(),
                });
                status
            }
        };
        // The world as classname, as a case that ran has it: CI keys a
        // test's history on classname and name.
        let mut case = TestCase::new(name(&c.name), status);
        case.set_classname(c.world.as_str())
            .set_time(std::time::Duration::ZERO);
        return case;
    };
    let status = if c.passed() {
        TestCaseStatus::success()
    } else {
        // A case a signal cut short is an error, as one that could not run.
        let kind = if shown.errored() || c.cut.is_some() {
            NonSuccessKind::Error
        } else {
            NonSuccessKind::Failure
        };
        let mut status = TestCaseStatus::non_success(kind);
        status
            .set_message(super::bounded(&c.reason().unwrap_or_default()).into_owned())
            .set_type(c.status())
            .set_description(details(shown));
        status
    };
    let mut case = TestCase::new(name(&c.name), status);
    case.set_time(c.elapsed());
    if let Ok(o) = &shown.outcome {
        case.set_classname(o.header.world.as_str());
        case.add_property(Property::new("seed", o.header.seed.to_string()));
        case.add_property(Property::new("world", o.header.world.as_str()));
        case.add_property(Property::new(
            "agent_sha256",
            o.header.agent_sha256.as_str(),
        ));
        if let Some(id) = &o.run_id {
            case.add_property(Property::new("run_id", id.as_str()));
        }
        if let Some(b) = &o.bundle {
            case.set_system_out(format!("bundle: {}", b.display()));
        }
    }
    if repeat > 1 {
        let runs = c.attempts.len() as u64;
        case.add_property(Property::new("runs", runs.to_string()));
        case.add_property(Property::new("passes", c.passes().to_string()));
        case.add_property(Property::new(
            "pass_rate",
            format!("{:.4}", c.passes() as f64 / runs as f64),
        ));
        let passes = c.passes();
        case.add_property(Property::new(
            format!("pass@{runs}"),
            format!("{:.4}", pass_at_k(passes, runs, runs)),
        ));
        case.add_property(Property::new(
            format!("pass^{runs}"),
            format!("{:.4}", pass_hat_k(&[passes], runs, runs)),
        ));
    }
    case
}

/// A case's name (its file's) with the control characters XML cannot
/// hold escaped (`\u{1b}`): the writer dropped them, and the character
/// after an escape with them.
fn name(name: &str) -> String {
    worldline_case::shown::message(name)
}

/// Every failed assertion with expected vs actual, the state diff, and the
/// run's error.
fn details(a: &Attempt) -> String {
    let mut body = String::new();
    let Ok(o) = &a.outcome else {
        return body;
    };
    if let Some(g) = &o.grade {
        for a in g.failures() {
            body.push_str(&format!(
                "{}: expected {}, got {}\n",
                super::bounded(&a.what),
                super::bounded(&a.expected.to_string()),
                super::bounded(&a.actual.to_string())
            ));
        }
        for l in g.diff.lines() {
            body.push_str(&format!("{}\n", super::bounded(&l)));
        }
    }
    if let Some(e) = &o.footer.error {
        body.push_str(&format!("{e}\n"));
    }
    if let Some(e) = worldline_engine::traceback::agent_error(&o.footer) {
        body.push_str(&format!("agent error ({}): {}\n", e.status, e.message));
        if let Some(t) = &e.traceback {
            body.push_str(&format!("{t}\n"));
        }
    }
    body
}
