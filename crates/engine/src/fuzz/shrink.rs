//! Shrinking: from the faults a failing run met, search for the schedule
//! with the fewest faults, then the smallest ages, latencies and clock
//! skew, that still fails with the same signature.
//!
//! The search is greedy and deterministic: first each fault alone, then
//! dropping one fault at a time until no single fault can go (every fault
//! left is needed), then for each fault left a binary search on its
//! magnitude. `fails` runs a candidate schedule and answers the schedule
//! the run actually met when it failed the same way, else `None`; a budget
//! caps the number of runs.
//!
//! Why greedy and deterministic (was decision 0035): each fault alone, then
//! drop one at a time until every fault left is needed (a 1-minimal set), then
//! a binary search per magnitude (stale age, latency, skew), reporting the
//! smallest failing value and the largest passing one tried. It assumes a
//! larger fault fails at least as often as a smaller one only to be fast: the
//! result always fails with the same signature, since only failing candidates
//! are kept, and the same campaign shrinks to the same reproducer. Delta
//! debugging over all subsets, or random shrinking, is slower, and random
//! shrinking is not repeatable without a seed of its own.

use anyhow::Result;
use worldline_case::case::fuzz::{PlannedFault, Schedule};
use worldline_case::case::inject::Action;

/// The smallest schedule found, and what the search learnt about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Shrunk {
    pub schedule: Schedule,
    /// Per fault of `schedule`: the largest magnitude (stale age in
    /// seconds, or latency in milliseconds for a latency-only fault) that
    /// was tried and passed, when one was.
    pub passes_at: Vec<Option<u64>>,
    /// For the clock skew: the largest skew magnitude tried that passed.
    pub skew_passes_at: Option<i64>,
    /// Runs the search made.
    pub tries: u64,
    /// False when the budget ran out before the search finished.
    pub complete: bool,
}

struct Search<F> {
    fails: F,
    tries: u64,
    budget: u64,
}

impl<F: FnMut(&Schedule) -> Result<Option<Schedule>>> Search<F> {
    fn run(&mut self, s: &Schedule) -> Result<Option<Schedule>> {
        if self.tries >= self.budget {
            return Ok(None);
        }
        self.tries += 1;
        (self.fails)(s)
    }

    fn out_of_budget(&self) -> bool {
        self.tries >= self.budget
    }

    /// The smallest value in `[0, hi]` for which `at(v)` still fails, given
    /// `hi` fails; and the largest value tried that passed.
    fn smallest(
        &mut self,
        hi: u64,
        mut at: impl FnMut(u64) -> Schedule,
    ) -> Result<(u64, Option<u64>)> {
        let (mut lo, mut hi) = (0, hi);
        let mut passes = None;
        while lo < hi && !self.out_of_budget() {
            let mid = lo + (hi - lo) / 2;
            if self.run(&at(mid))?.is_some() {
                hi = mid;
            } else {
                passes = Some(mid);
                lo = mid + 1;
            }
        }
        Ok((hi, passes))
    }
}

fn without(s: &Schedule, unit: usize) -> Schedule {
    // Unit 0 is the clock skew when there is one; then the faults in order.
    let mut out = s.clone();
    match (s.clock_skew_s.is_some(), unit) {
        (true, 0) => out.clock_skew_s = None,
        (true, i) => {
            out.faults.remove(i - 1);
        }
        (false, i) => {
            out.faults.remove(i);
        }
    }
    out
}

fn only(s: &Schedule, unit: usize) -> Schedule {
    match (s.clock_skew_s, unit) {
        (Some(skew), 0) => Schedule {
            clock_skew_s: Some(skew),
            faults: vec![],
        },
        (skew, i) => Schedule {
            clock_skew_s: None,
            faults: vec![s.faults[i - usize::from(skew.is_some())].clone()],
        },
    }
}

/// What was learnt of each fault of `cur` (`passes_at`), for the faults of
/// `met`, those of `cur` a run met.
fn aligned(cur: &Schedule, passes_at: &[Option<u64>], met: &Schedule) -> Vec<Option<u64>> {
    let mut used = vec![false; cur.faults.len()];
    (met.faults.iter())
        .map(|f| {
            let i = (0..cur.faults.len()).find(|&i| !used[i] && cur.faults[i] == *f)?;
            used[i] = true;
            passes_at.get(i).copied().flatten()
        })
        .collect()
}

/// Shrink `start` (which fails) with at most `budget` runs.
pub(crate) fn shrink(
    start: Schedule,
    budget: u64,
    fails: impl FnMut(&Schedule) -> Result<Option<Schedule>>,
) -> Result<Shrunk> {
    let mut search = Search {
        fails,
        tries: 0,
        budget,
    };
    let mut cur = start;
    // Fewer faults: one alone, then one less at a time.
    if cur.len() > 1 {
        for unit in 0..cur.len() {
            if let Some(met) = search.run(&only(&cur, unit))? {
                cur = met;
                break;
            }
        }
    }
    loop {
        let mut dropped = false;
        for unit in (0..cur.len()).rev() {
            if let Some(met) = search.run(&without(&cur, unit))? {
                cur = met;
                dropped = true;
                break;
            }
        }
        if !dropped || search.out_of_budget() {
            break;
        }
    }
    // Smaller magnitudes.
    let mut passes_at = Vec::with_capacity(cur.faults.len());
    for i in 0..cur.faults.len() {
        if cur.faults[i].latency_ms.is_some() && cur.faults[i].action != Action::Delay {
            let mut c = cur.clone();
            c.faults[i].latency_ms = None;
            if search.run(&c)?.is_some() {
                cur = c;
            }
        }
        let f: PlannedFault = cur.faults[i].clone();
        let passes = match (&f.action, f.latency_ms) {
            (Action::Stale(st), _) => {
                let (age, pass) = search.smallest(st.age_s, |v| {
                    let mut c = cur.clone();
                    if let Action::Stale(s) = &mut c.faults[i].action {
                        s.age_s = v;
                    }
                    c
                })?;
                if let Action::Stale(s) = &mut cur.faults[i].action {
                    s.age_s = age;
                }
                pass
            }
            (_, Some(ms)) => {
                let (ms, pass) = search.smallest(ms, |v| {
                    let mut c = cur.clone();
                    c.faults[i].latency_ms = Some(v);
                    c
                })?;
                cur.faults[i].latency_ms = Some(ms);
                pass.filter(|_| f.action == Action::Delay)
            }
            _ => None,
        };
        passes_at.push(passes);
    }
    // What smaller magnitudes left may hold a fault that no longer strikes
    // (a call no longer made once an earlier answer changed: it was kept,
    // and said to be needed): the faults a run of it meets are kept, each
    // with what was learnt of it.
    if !search.out_of_budget()
        && let Some(met) = search.run(&cur)?
    {
        passes_at = aligned(&cur, &passes_at, &met);
        cur = met;
    }
    let mut skew_passes_at = None;
    if let Some(skew) = cur.clock_skew_s {
        let sign = skew.signum();
        let (mag, pass) = search.smallest(skew.unsigned_abs(), |v| Schedule {
            clock_skew_s: Some(sign * v as i64),
            ..cur.clone()
        })?;
        cur.clock_skew_s = Some(sign * mag as i64);
        skew_passes_at = pass.map(|p| sign * p as i64);
    }
    Ok(Shrunk {
        schedule: cur,
        passes_at,
        skew_passes_at,
        tries: search.tries,
        complete: !search.out_of_budget(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::case::inject::Stale;

    fn fault(tool: &str, action: Action, latency: Option<u64>) -> PlannedFault {
        PlannedFault {
            action,
            latency_ms: latency,
            nth: 1,
            tool: tool.into(),
        }
    }

    fn stale(age: u64) -> Action {
        Action::Stale(Stale {
            age_s: age,
            field: Some("at".into()),
        })
    }

    /// A model of an agent that fails exactly when `list_deploys` is stale
    /// by more than 540 s, whatever else happens.
    fn model(s: &Schedule) -> Result<Option<Schedule>> {
        let fails = s.faults.iter().any(|f| {
            f.tool == "list_deploys" && matches!(&f.action, Action::Stale(st) if st.age_s > 540)
        });
        Ok(fails.then(|| s.clone()))
    }

    #[test]
    fn ends_at_the_one_fault_that_matters_at_its_smallest() {
        let start = Schedule {
            clock_skew_s: Some(-200),
            faults: vec![
                fault("get_alert", Action::Delay, Some(3000)),
                fault("list_deploys", stale(1500), Some(800)),
                fault(
                    "close_ticket",
                    Action::Error(worldline_case::error_kind::ErrorKind::Timeout),
                    None,
                ),
            ],
        };
        let s = shrink(start, 500, model).unwrap();
        assert_eq!(
            s.schedule,
            Schedule {
                clock_skew_s: None,
                faults: vec![fault("list_deploys", stale(541), None)],
            }
        );
        assert_eq!(s.passes_at, vec![Some(540)]);
        assert!(s.complete);
    }

    #[test]
    fn keeps_every_fault_that_is_needed() {
        let both = |s: &Schedule| -> Result<Option<Schedule>> {
            let has = |t: &str| s.faults.iter().any(|f| f.tool == t);
            Ok((has("a") && has("b")).then(|| s.clone()))
        };
        let start = Schedule {
            clock_skew_s: None,
            faults: vec![
                fault("a", Action::Deny, None),
                fault("c", Action::Empty, None),
                fault("b", Action::Deny, None),
            ],
        };
        let s = shrink(start, 100, both).unwrap();
        let tools: Vec<&str> = s.schedule.faults.iter().map(|f| f.tool.as_str()).collect();
        assert_eq!(tools, ["a", "b"]);
    }

    /// A fault on a call the agent makes only while another fault is
    /// large is left out once that one is at its smallest: it no longer
    /// strikes (it was kept, and said to be needed).
    #[test]
    fn a_fault_that_no_longer_strikes_once_another_is_smaller_is_left_out() {
        // Fails when `list_deploys` is stale by more than 540 s and, past
        // 900 s, only with the fourth call's fault, which that call is made
        // for only then.
        let agent = |s: &Schedule| -> Result<Option<Schedule>> {
            let age = s.faults.iter().find_map(|f| match &f.action {
                Action::Stale(st) if f.tool == "list_deploys" => Some(st.age_s),
                _ => None,
            });
            let Some(age) = age else { return Ok(None) };
            let mut met = s.clone();
            met.faults.retain(|f| f.tool == "list_deploys" || age > 900);
            let fourth = met.faults.iter().any(|f| f.tool == "get_ticket");
            Ok((age > 540 && (age <= 900 || fourth)).then_some(met))
        };
        let start = Schedule {
            clock_skew_s: None,
            faults: vec![
                fault("list_deploys", stale(1000), None),
                fault("get_ticket", Action::Deny, None),
            ],
        };
        let s = shrink(start, 100, agent).unwrap();
        assert_eq!(
            s.schedule.faults,
            vec![fault("list_deploys", stale(541), None)]
        );
        assert_eq!(s.passes_at, vec![Some(540)]);
    }

    #[test]
    fn stops_at_the_budget() {
        let start = Schedule {
            clock_skew_s: None,
            faults: vec![fault("list_deploys", stale(100_000), None)],
        };
        let s = shrink(start, 3, model).unwrap();
        assert_eq!(s.tries, 3);
        assert!(!s.complete);
    }
}
