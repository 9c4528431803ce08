//! Failure signatures: how a campaign tells one way of failing from
//! another. An agent fault is its kind (`trapped`, `out_of_fuel`,
//! `memory_limit`, `timeout`, `exited`); a graded failure is its first
//! failed assertion (`failed: deploys/D-42.status equals`), without the
//! values, which vary from run to run; a run the scripted model had no
//! reply for is `unscripted`, whatever its grade; an ungraded run that
//! did not complete is its status. A run that passes has no signature.
//!
//! Why the fault kind or the first failed assertion, without expected/actual
//! values (was decision 0034): a wrong value differs from run to run, the
//! failing check does not, so groups of failures stay few and stable; hashing
//! the whole failure text would make one group per run.
//! Readers of bundles take it from the footer ([`of_footer`]); the grader
//! from the grade in hand ([`of_parts`]).

use crate::log::{Footer, Status};

/// The signature of a recorded run, from its footer.
pub fn of_footer(f: &Footer) -> Option<String> {
    let grade = f.grade.as_ref().map(|g| {
        let first = g["assertions"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["passed"] == false))
            .and_then(|x| x["what"].as_str());
        (g["passed"] == true, first)
    });
    of_parts(f.status, grade)
}

/// The signature of a run that ended with `status`, given whether its
/// grade passed and its first failed assertion (`None`: ungraded).
pub fn of_parts(status: Status, grade: Option<(bool, Option<&str>)>) -> Option<String> {
    if status.overrides_grade() {
        return Some(status.as_str().to_string());
    }
    match grade {
        Some((true, _)) => None,
        Some((false, first)) => Some(format!("failed: {}", first.unwrap_or("the grade"))),
        None if status == Status::Completed => None,
        None => Some(status.as_str().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn faults_first_then_the_first_failed_assertion() {
        assert_eq!(
            of_parts(Status::OutOfFuel, Some((true, None))).as_deref(),
            Some("out_of_fuel")
        );
        assert_eq!(of_parts(Status::Completed, Some((true, None))), None);
        assert_eq!(
            of_parts(Status::Errored, Some((false, Some("status")))).as_deref(),
            Some("failed: status")
        );
        assert_eq!(of_parts(Status::Completed, None), None);
        assert_eq!(of_parts(Status::Errored, None).as_deref(), Some("errored"));
        // A script that ran out is the case's, whatever the grade says.
        assert_eq!(
            of_parts(Status::Unscripted, Some((true, None))).as_deref(),
            Some("unscripted")
        );
    }

    #[test]
    fn footers_give_the_same_signature() {
        let footer = |grade| Footer {
            backtrace: vec![],
            chain_hash: String::new(),
            error: None,
            events: 0,
            final_state_hash: String::new(),
            fuel: 0,
            grade: Some(grade),
            header_hash: None,
            hash: String::new(),
            output: None,
            replayable: true,
            status: Status::Completed,
            stderr: String::new(),
            stdout: String::new(),
            truncated: None,
            truncated_bytes: 0,
        };
        let failed = json!({"passed": false, "assertions": [
            {"what": "status", "passed": true},
            {"what": "deploys/D-42.status equals", "passed": false},
            {"what": "output x", "passed": false}]});
        assert_eq!(
            of_footer(&footer(failed)).as_deref(),
            Some("failed: deploys/D-42.status equals")
        );
        assert_eq!(
            of_footer(&footer(json!({"passed": true, "assertions": []}))),
            None
        );
    }
}
