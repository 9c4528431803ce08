//! A rerun (and a fork): the run's summary plus what it was run against.

use super::run::RunSummary;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};
use worldline_engine::grade::Grade;
use worldline_engine::run::RunOutcome;

/// An assertion whose verdict changed between the original and the rerun.
#[derive(Serialize)]
pub struct Change {
    pub after: bool,
    pub before: Option<bool>,
    pub what: String,
}

/// The run a rerun re-ran.
#[derive(Serialize)]
pub struct Original<'a> {
    pub output: Option<&'a str>,
    /// The rules it ran under (decision 0423).
    pub rules: u32,
    pub run: &'a str,
    pub status: &'static str,
}

/// The `rerun --json` document.
#[derive(Serialize)]
pub struct RerunSummary<'a> {
    #[serde(flatten)]
    pub run: RunSummary<'a>,
    pub changed_assertions: &'a [Change],
    /// What the caller should know (the rerun ran under other rules than
    /// the original), as the text's `note:` lines say it.
    pub notes: &'a [String],
    pub original: Original<'a>,
    /// The rules the rerun ran under: this worldline's.
    pub rules: u32,
}

/// `rerun`: a line naming the run and the agent, the rerun's summary, then
/// the verdict before and after and each assertion that changed.
pub fn write(
    out: &mut impl Write,
    s: &RerunSummary<'_>,
    outcome: &RunOutcome,
    agent_sha256: &str,
) -> io::Result<()> {
    writeln!(
        out,
        "rerun of {} with agent {}",
        s.original.run,
        agent_sha256.get(..12).unwrap_or(agent_sha256)
    )?;
    super::run::write(out, outcome)?;
    writeln!(
        out,
        "  original: {}  ->  rerun: {}",
        s.original.status, s.run.status
    )?;
    for c in s.changed_assertions {
        let before = c.before.map_or("null".to_string(), |b| b.to_string());
        writeln!(out, "  changed: {}: {before} -> {}", c.what, c.after)?;
    }
    Ok(())
}

/// Where a fork branched off.
#[derive(Serialize)]
pub struct ForkParent<'a> {
    pub event: u64,
    pub run: &'a str,
}

/// The `fork --json` document.
#[derive(Serialize)]
pub struct ForkSummary<'a> {
    #[serde(flatten)]
    pub run: RunSummary<'a>,
    /// What the caller should know about the edits and the rules, as the
    /// text's `note:` lines say it.
    pub notes: &'a [String],
    pub parent: ForkParent<'a>,
    /// The rules the fork ran under: its parent's (decision 0423).
    pub rules: u32,
}

/// `what → passed` of a recorded grade (as JSON).
fn verdicts(grade: Option<&Value>) -> Vec<(String, bool)> {
    grade
        .and_then(|g| g["assertions"].as_array())
        .map(|a| {
            a.iter()
                .map(|x| {
                    (
                        x["what"].as_str().unwrap_or("").to_string(),
                        x["passed"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The assertions of `after` whose verdict differs from the recorded
/// grade's (`before`, graded under `rules`: absent there counts as
/// changed). A check is found by its name, or by the name it had under
/// `rules` ([`renamed`]).
pub fn changed_assertions(
    before: Option<&Value>,
    rules: u32,
    after: Option<&Grade>,
) -> Vec<Change> {
    let before = verdicts(before);
    after
        .map(|g| g.assertions.iter())
        .into_iter()
        .flatten()
        .filter_map(|a| {
            let was = (before.iter().find(|(w, _)| *w == a.what))
                .or_else(|| before.iter().find(|(w, _)| renamed(w, rules, &a.what)))
                .map(|(_, p)| *p);
            (was != Some(a.passed)).then(|| Change {
                after: a.passed,
                before: was,
                what: a.what.clone(),
            })
        })
        .collect()
}

/// Whether `old`, a check's name in a grade under `rules`, is the check
/// this worldline names `what`: under rules 7 and before, an output `json`
/// check of a run without (JSON) output was named by its path alone
/// (`output P` for `output P equals`; rules 8); under rules 9 and before,
/// a negative check by its flag (`calls T attempted` for `calls T not
/// attempted`, `P exists` for `P absent` and the reverse; rules 10).
fn renamed(old: &str, rules: u32, what: &str) -> bool {
    use worldline_log::log::rules::{
        CHECKS_NAMED_BY_WHAT_THEY_ASSERT, OUTPUT_CHECK_NAMED_BY_ITS_TEST,
    };
    let test = what.strip_prefix(old).and_then(|t| t.strip_prefix(' '));
    let by_path = rules < OUTPUT_CHECK_NAMED_BY_ITS_TEST
        && old.starts_with("output ")
        && test.is_some_and(|t| {
            ["exists", "absent", "equals", "contains"]
                .iter()
                .any(|w| t.starts_with(w))
        });
    let by_flag = rules < CHECKS_NAMED_BY_WHAT_THEY_ASSERT
        && [
            (" not attempted", " attempted"),
            (" absent", " exists"),
            (" exists", " absent"),
        ]
        .iter()
        .any(|(now, was)| {
            what.strip_suffix(now)
                .is_some_and(|stem| old.strip_suffix(was) == Some(stem))
        });
    by_path || by_flag
}

#[cfg(test)]
mod tests {
    use super::renamed;

    #[test]
    fn an_output_check_named_by_its_path_under_rules_7_is_the_one_named_by_its_test() {
        assert!(renamed(
            "output cause_deploy",
            7,
            "output cause_deploy equals"
        ));
        assert!(renamed("output a b", 0, "output a b contains \"x\""));
        assert!(!renamed(
            "output cause_deploy",
            8,
            "output cause_deploy equals"
        ));
        assert!(!renamed("output contains", 7, "output contains any of"));
        assert!(!renamed("status", 7, "status equals"));
    }

    #[test]
    fn a_negative_check_named_by_its_flag_under_rules_9_is_the_one_named_by_what_it_asserts() {
        assert!(renamed(
            "calls close attempted",
            9,
            "calls close not attempted"
        ));
        assert!(renamed("file a.md exists", 9, "file a.md absent"));
        assert!(renamed("t/1 absent", 0, "t/1 exists"));
        assert!(!renamed(
            "calls close attempted",
            10,
            "calls close not attempted"
        ));
        assert!(!renamed("file a.md exists", 9, "file b.md absent"));
    }
}
