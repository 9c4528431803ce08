//! Gold-state grading: a case's `[[expect.gold]]` calls applied, through
//! the same tools and services the agent used, to a fresh copy of the
//! case's initial world; the run passes this check when its final state
//! equals that gold state, leaving out `gold_ignore` (generated ids,
//! timestamps, notes). A failure shows the state diff from the gold state
//! to the agent's.
//!
//! Gold calls skip permissions, `[[inject]]` rules and fuzz faults (they
//! are the intended trajectory on a quiet world). The gold state depends
//! only on the case and its world, so it is computed once per case and
//! process (a fuzz campaign grades hundreds of runs against one), and
//! re-grading a recorded run needs the world's service but no agent.
//!
//! Why gold grading reuses the run's dispatch (was decision 0073): the gold
//! state is built by a `Mediator` of the case with the world's service
//! attached, calling `run_tool` for each gold call on a fresh copy of the
//! world, the same code that answers the agent, so it cannot disagree with what
//! the agent's calls would have done; re-grading needs the sandbox (for the
//! service) but never the agent; a failure shows the same diff lines people
//! already read in `grade` and `diff`. Gold states written by hand in the case
//! would drift from the tools; tool semantics re-implemented in the grader
//! would be a second copy.
//!
//! Why gold calls belong to the case (was decision 0142): the gold state is
//! computed before the agent runs, and a gold call that fails is an input error
//! (exit 2) at its `[[expect.gold]]` line naming the call and the tool's error,
//! with no run made, because a failing gold call used to grade the agent as
//! failed for the case's mistake. A `case_error` run status would leave a
//! bundle for a run whose outcome means nothing and a new status every report
//! must learn. `gold = []` is an input error that says to use `unchanged`,
//! rather than silently meaning "nothing changed".

use super::{Assertion, check, diff};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use worldline_case::case::Case;
use worldline_case::case::expect::Expect;
use worldline_case::case::gold::{Ignore, ignore_of};
use worldline_case::error::InputError;
use worldline_case::world::compare::Equality;
use worldline_case::world::state::State;
use worldline_runtime::mediate::HostServices;
use worldline_runtime::mediate::service::Runtime;
use worldline_runtime::mediate::services::Unrecorded;
use worldline_runtime::sandbox::{Sandbox, timeout_ticks};

/// The gold state of a case, or why its gold calls could not be applied.
pub(crate) type GoldState = Result<State, GoldFailure>;

/// Why the gold state could not be made: the failing gold call (1-based)
/// and what went wrong, or the world's service that would not load.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldFailure {
    pub step: Option<usize>,
    pub message: String,
    /// The machine's failure (its service could not be instantiated), not
    /// the case's: exit 4, and not kept for the next run to meet.
    pub machine: bool,
}

impl std::fmt::Display for GoldFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The gold state of `case` when it has gold calls. A gold call that fails
/// is the case's error, not the agent's: an input error (exit 2) at the
/// failing `[[expect.gold]]` naming the call and the tool's error. One the
/// machine could not run (its service's instance) is the machine's: exit
/// 4, saying so.
pub(crate) fn for_case(sandbox: &Sandbox, case: &Case) -> anyhow::Result<Option<Arc<GoldState>>> {
    let Some(expect) = case.expect.as_ref().filter(|e| !e.gold.is_empty()) else {
        return Ok(None);
    };
    let g = gold_state(sandbox, case);
    let Err(failure) = g.as_ref() else {
        return Ok(Some(g));
    };
    if failure.machine {
        anyhow::bail!(
            "{}: [[expect.gold]]: {failure} (the agent was not graded against them)",
            case.path.display()
        );
    }
    let message = format!(
        "[[expect.gold]]: {failure}; the gold calls must succeed on the case's world \
         (the agent was not graded against them)"
    );
    Err(match failure.step.and_then(|n| expect.gold.get(n - 1)) {
        Some(call) => InputError::at(&case.path, &case.source, call.span().start, message),
        None => InputError::new(&case.path, message),
    }
    .into())
}

/// The gold state of `case` (which has gold calls), computed once per
/// process for each case and world.
pub(crate) fn gold_state(sandbox: &Sandbox, case: &Case) -> Arc<GoldState> {
    static CACHE: Mutex<BTreeMap<String, Arc<GoldState>>> = Mutex::new(BTreeMap::new());
    let key = format!("{}/{}", case.hash, case.world.hash);
    if let Some(g) = CACHE.lock().expect("gold cache lock").get(&key) {
        return g.clone();
    }
    let g = Arc::new(apply(sandbox, case));
    // The machine's failure is not the case's: the next run tries again.
    if !g.as_ref().as_ref().is_err_and(|f| f.machine) {
        CACHE
            .lock()
            .expect("gold cache lock")
            .insert(key, g.clone());
    }
    g
}

/// Apply the gold calls in order, each at the next tick of the case clock.
fn apply(sandbox: &Sandbox, case: &Case) -> GoldState {
    let gold = case.expect.as_ref().map_or(&[][..], |e| &e.gold[..]);
    let mut services = HostServices::new(case);
    if let Some(source) = &case.world.service {
        let service = sandbox.service(source).map_err(|e| GoldFailure {
            step: None,
            message: format!("{e:#}"),
            machine: false,
        })?;
        services.attach_service(Runtime::new(
            service,
            case,
            timeout_ticks(case.limits.timeout_ms),
        ));
    }
    let world = case.world.clone();
    for (i, g) in gold.iter().map(toml::Spanned::get_ref).enumerate() {
        let tool = world
            .tool(&g.tool)
            .or_else(|| world.user_tool(&g.tool))
            .ok_or_else(|| GoldFailure {
                step: Some(i + 1),
                message: format!("gold call {}: no tool `{}`", i + 1, g.tool),
                machine: false,
            })?;
        let args = Value::Object(g.args.clone());
        let call = format!(
            "gold call {} ({} {})",
            i + 1,
            g.tool,
            worldline_case::canon::to_string(&args)
        );
        match services.call_unrecorded(tool, &args) {
            Ok(()) => {}
            Err(Unrecorded::Tool(f)) => {
                // `failed` is said once ("failed: failed: ..." said it twice).
                let kind = match f.kind {
                    worldline_case::error_kind::ErrorKind::Failed => String::new(),
                    kind => format!("{kind}: "),
                };
                return Err(GoldFailure {
                    step: Some(i + 1),
                    message: format!("{call} failed: {kind}{}", f.message),
                    machine: false,
                });
            }
            Err(Unrecorded::Machine(why)) => {
                return Err(GoldFailure {
                    step: Some(i + 1),
                    message: format!("{call} could not run: {why}"),
                    machine: true,
                });
            }
        }
    }
    Ok(services.finish().state)
}

/// `d` without what `ignore` leaves out of the comparison: ignored
/// tables, and ignored fields (changes under them dropped, a changed row
/// left with none is no change; added and removed rows are shown without
/// them). The same as comparing the two states with those fields and
/// tables removed, at the cost of the diff, not of the states.
fn without(mut d: diff::StateDiff, ignore: &[String]) -> diff::StateDiff {
    for entry in ignore {
        match ignore_of(entry) {
            Ignore::Table(t) => {
                d.tables.remove(t);
            }
            Ignore::Field { table, field } => {
                for (name, t) in d.tables.iter_mut() {
                    if table != "*" && table != name {
                        continue;
                    }
                    for row in t.added.values_mut().chain(t.removed.values_mut()) {
                        if let Value::Object(m) = row {
                            m.remove(field);
                        }
                    }
                    for changes in t.changed.values_mut() {
                        changes.retain(|path, _| !under(path, field));
                    }
                    t.changed.retain(|_, changes| !changes.is_empty());
                }
            }
        }
    }
    d.tables.retain(|_, t| *t != diff::TableDiff::default());
    d
}

/// Whether a change's path inside a row is the field or inside it.
fn under(path: &str, field: &str) -> bool {
    path.strip_prefix(field)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

/// The gold check of a run whose final state is `final_state`.
pub(crate) fn assertion(
    expect: &Expect,
    eq: Equality,
    gold: Option<&GoldState>,
    final_state: &State,
) -> Assertion {
    let what = "final state equals the gold state".to_string();
    let gold = match gold {
        Some(Ok(g)) => g,
        Some(Err(why)) => {
            return check(what, json!("the gold state"), json!(why.message), false);
        }
        None => {
            return check(
                what,
                json!("the gold state"),
                json!("the gold state was not computed for this grade"),
                false,
            );
        }
    };
    let d = without(diff::diff_with(gold, final_state, eq), &expect.gold_ignore);
    let passed = d.is_empty();
    let actual = if passed {
        json!("equal")
    } else {
        json!({"gold -> agent": d.lines()})
    };
    check(what, json!("equal"), actual, passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::world::state::Table;

    fn state(rows: &[(&str, Value)]) -> State {
        let mut s = State::default();
        s.tables.insert(
            "t".into(),
            Table {
                key: "id".into(),
                rows: rows
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
                ids: Default::default(),
            },
        );
        s.tables.insert(
            "notes".into(),
            Table {
                key: "id".into(),
                rows: Default::default(),
                ids: Default::default(),
            },
        );
        s
    }

    fn expect(ignore: &[&str]) -> Expect {
        Expect {
            gold_ignore: ignore.iter().map(|s| s.to_string()).collect(),
            ..Expect::default()
        }
    }

    #[test]
    fn equal_states_pass_and_ignored_fields_and_tables_do_not_count() {
        let gold = state(&[("a", json!({"id": "a", "n": 1, "at": "x"}))]);
        let mut agent = state(&[("a", json!({"id": "a", "n": 1, "at": "y"}))]);
        agent
            .tables
            .get_mut("notes")
            .unwrap()
            .rows
            .insert("n1".into(), json!({"id": "n1"}));
        let ok = Ok(gold.clone());
        assert!(!assertion(&expect(&[]), Equality::default(), Some(&ok), &agent).passed);
        assert!(
            assertion(
                &expect(&["t.at", "notes"]),
                Equality::default(),
                Some(&ok),
                &agent
            )
            .passed
        );
        assert!(
            assertion(
                &expect(&["*.at", "notes"]),
                Equality::default(),
                Some(&ok),
                &agent
            )
            .passed
        );
    }

    #[test]
    fn a_difference_is_shown_from_gold_to_agent() {
        let gold = Ok(state(&[("a", json!({"id": "a", "n": 1}))]));
        let agent = state(&[("a", json!({"id": "a", "n": 2})), ("b", json!({"id": "b"}))]);
        let a = assertion(&expect(&[]), Equality::default(), Some(&gold), &agent);
        assert!(!a.passed);
        assert_eq!(
            a.actual,
            json!({"gold -> agent": ["+ t/b {\"id\":\"b\"}", "~ t/a.n: 1 -> 2"]})
        );
        let broken: GoldState = Err(GoldFailure {
            step: Some(1),
            message: "gold call 1 (x) failed".into(),
            machine: false,
        });
        assert_eq!(
            assertion(&expect(&[]), Equality::default(), Some(&broken), &agent).actual,
            json!("gold call 1 (x) failed")
        );
    }
}
