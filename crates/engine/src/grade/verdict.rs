//! What a run counts as: the status users script against (the grade's
//! verdict, or how the run ended), how it came out, its first failure, and
//! what of a recorded grade a replay checks.

use super::Grade;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use worldline_log::log::{Footer, Status};

/// The status a run is reported with: the grade's verdict (`passed`,
/// `failed`) when the case has expectations and the agent finished, else
/// how the run ended.
pub fn shown_status(status: Status, grade: Option<&Grade>) -> &'static str {
    match grade {
        Some(g) if !status.overrides_grade() => g.verdict(),
        _ => status.as_str(),
    }
}

/// [`shown_status`] of a recorded run, from its footer.
pub fn recorded_status(footer: &Footer) -> &'static str {
    match footer.verdict() {
        Some(v) if !footer.status.overrides_grade() => v,
        _ => footer.status.as_str(),
    }
}

/// How a run came out, as a command reports it (the CLI's exit code:
/// 0, 1 and 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Passed its grade, or completed with none.
    Passed,
    /// Failed its grade, errored, or the scripted model ran out.
    Failed,
    /// A trap, fuel, memory or the watchdog.
    AgentFault,
}

/// How a run that ended with `status` and `grade` came out.
pub fn ending(status: Status, grade: Option<&Grade>) -> Ending {
    if status == Status::Unscripted {
        return Ending::Failed;
    }
    if status.is_fault() {
        return Ending::AgentFault;
    }
    match grade {
        Some(g) if g.passed => Ending::Passed,
        Some(_) => Ending::Failed,
        None if status == Status::Completed => Ending::Passed,
        None => Ending::Failed,
    }
}

/// The first failed assertion, briefly.
pub fn first_failure(grade: &Grade) -> Option<String> {
    grade
        .failures()
        .next()
        .map(|a| format!("{}: expected {}, got {}", a.what, a.expected, a.actual))
}

/// Why a run that ended with `footer` and `grade` did not pass, in one
/// line (`None`: it passed): a fault says more than the grade it spoiled
/// (a Python exception, a panic, fuel), else the first failed check, else
/// the run's error.
pub(crate) fn reason(footer: &Footer, grade: Option<&Grade>) -> Option<String> {
    if ending(footer.status, grade) == Ending::Passed {
        return None;
    }
    if footer.status.overrides_grade() {
        return footer.error.clone();
    }
    grade
        .and_then(first_failure)
        .or_else(|| footer.error.clone())
}

/// What of a grade a replay compares with its recording (decision 0424):
/// the verdict, the reward and each check's verdict, in order. What the
/// checks say and saw is not compared: a later grader may word it
/// otherwise.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Scored {
    passed: bool,
    /// Absent from grades recorded before rewards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reward: Option<f64>,
    #[serde(default)]
    assertions: Vec<CheckScored>,
}

/// One check's verdict.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct CheckScored {
    passed: bool,
}

impl Scored {
    fn of(grade: &Grade) -> Self {
        Scored {
            passed: grade.passed,
            reward: Some(grade.reward),
            assertions: (grade.assertions.iter())
                .map(|a| CheckScored { passed: a.passed })
                .collect(),
        }
    }

    /// The `recorded` grade's scores and those of the run graded again
    /// (none when the case grades nothing), as JSON: equal when they
    /// agree. A recorded grade that does not read as a grade is compared
    /// whole.
    pub(crate) fn compared(recorded: &Value, regraded: Option<&Grade>) -> (Value, Value) {
        let mut now = regraded.map(Scored::of);
        let was = match Scored::deserialize(recorded) {
            Ok(was) => was,
            Err(_) => return (recorded.clone(), json(&now)),
        };
        if let Some(now) = &mut now
            && was.reward.is_none()
        {
            now.reward = None;
        }
        (json(&was), json(&now))
    }
}

fn json(scored: &impl Serialize) -> Value {
    serde_json::to_value(scored).expect("scores serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn grade(passed: bool, reward: f64, checks: &[bool]) -> Grade {
        Grade {
            passed,
            reward,
            assertions: (checks.iter())
                .map(|&passed| super::super::Assertion {
                    what: "a check".into(),
                    passed,
                    expected: json!(1),
                    actual: json!(1),
                    judge: None,
                })
                .collect(),
            diff: Default::default(),
            turns: Vec::new(),
        }
    }

    #[test]
    fn a_recorded_grade_agrees_with_its_regrade_by_its_scores_only() {
        let g = grade(false, 0.5, &[true, false]);
        let recorded = serde_json::to_value(&g).unwrap();
        let (was, now) = Scored::compared(&recorded, Some(&g));
        assert_eq!(was, now);
        // Worded otherwise by a later grader: the same.
        let mut reworded = recorded.clone();
        reworded["assertions"][0]["what"] = json!("said otherwise");
        let (was, now) = Scored::compared(&reworded, Some(&g));
        assert_eq!(was, now);
        // Recorded before rewards: the reward is not compared.
        let mut old = recorded.clone();
        old.as_object_mut().unwrap().remove("reward");
        let (was, now) = Scored::compared(&old, Some(&g));
        assert_eq!(was, now);
    }

    #[test]
    fn a_forged_verdict_reward_or_check_differs_from_its_regrade() {
        let g = grade(false, 0.5, &[true, false]);
        let recorded = serde_json::to_value(&g).unwrap();
        let forged = |edit: &dyn Fn(&mut Value)| {
            let mut f = recorded.clone();
            edit(&mut f);
            Scored::compared(&f, Some(&g))
        };
        for (was, now) in [
            forged(&|f| f["passed"] = json!(true)),
            forged(&|f| f["reward"] = json!(1.0)),
            forged(&|f| f["assertions"][1]["passed"] = json!(true)),
            forged(&|f| f["assertions"].as_array_mut().unwrap().truncate(1)),
            forged(&|f| *f = json!("passed")),
        ] {
            assert_ne!(was, now);
        }
        // A grade recorded where the case now grades nothing.
        let (was, now) = Scored::compared(&recorded, None);
        assert_ne!(was, now);
        assert_eq!(now, Value::Null);
    }
}
