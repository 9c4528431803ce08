//! A suite as JUnit XML for CI, written with `quick-junit` (the writer
//! cargo-nextest uses): one testsuite, one testcase per case, a graded
//! failure as `<failure>`, an agent fault or a case that could not run as
//! `<error>`, the bundle's path in `<system-out>`.

use crate::suite::{CaseRun, SuiteRun};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

/// The `--junit` document.
pub fn render(s: &SuiteRun) -> anyhow::Result<String> {
    let mut suite = TestSuite::new("worldline");
    suite
        .set_timestamp(chrono::DateTime::<chrono::Utc>::from(s.started))
        .set_time(s.elapsed);
    for c in &s.cases {
        suite.add_test_case(test_case(c));
    }
    let mut report = Report::new("worldline");
    report
        .set_timestamp(chrono::DateTime::<chrono::Utc>::from(s.started))
        .set_time(s.elapsed)
        .add_test_suite(suite);
    Ok(report.to_string()?)
}

fn test_case(c: &CaseRun) -> TestCase {
    let status = if c.passed() {
        TestCaseStatus::success()
    } else {
        let kind = if c.errored() {
            NonSuccessKind::Error
        } else {
            NonSuccessKind::Failure
        };
        let mut status = TestCaseStatus::non_success(kind);
        status
            .set_message(c.reason().unwrap_or_default())
            .set_type(c.status())
            .set_description(details(c));
        status
    };
    let mut case = TestCase::new(c.name.as_str(), status);
    case.set_time(c.elapsed);
    if let Ok(o) = &c.outcome {
        case.set_classname(o.header.world.as_str());
        if let Some(b) = &o.bundle {
            case.set_system_out(format!("bundle: {}", b.display()));
        }
    }
    case
}

/// Every failed assertion with expected vs actual, the state diff, and the
/// run's error.
fn details(c: &CaseRun) -> String {
    let mut body = String::new();
    let Ok(o) = &c.outcome else {
        return body;
    };
    if let Some(g) = &o.grade {
        for a in g.failures() {
            body.push_str(&format!(
                "{}: expected {}, got {}\n",
                a.what, a.expected, a.actual
            ));
        }
        for l in g.diff.lines() {
            body.push_str(&format!("{l}\n"));
        }
    }
    if let Some(e) = &o.footer.error {
        body.push_str(&format!("{e}\n"));
    }
    body
}
