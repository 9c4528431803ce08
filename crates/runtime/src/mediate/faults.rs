//! The faults of one fuzz run, as the mediator meets tool calls: drawn from
//! a profile with a ChaCha20 stream derived from the run's seed (purpose
//! `faults`, independent of the guest's `wasi:random` streams), or taken
//! from an explicit schedule. Either way the same seed and the same calls
//! give the same faults, so a fuzz run replays like any other run.
//!
//! User turns and approval requests are counted and faulted under the
//! pseudo-tools `user.say`, `approval.request` and `user.tools` (`[fuzz.user]`).
//!
//! Calls are counted per tool once they pass the permission check (as
//! `[[inject]]` counts them); a call a case rule already answers gets no
//! fuzz fault but still counts, so a schedule's `nth` means the same thing
//! whichever way the faults came.

use crate::mediate::entropy;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use std::collections::BTreeMap;
use worldline_case::case::fuzz::{
    self, Dist, FaultSource, LatencyFault, PlannedFault, Range, ToolFaults, UserFaults,
};
use worldline_case::case::inject::{Action, Injection, Partial, Stale};
use worldline_case::error_kind::ErrorKind;
use worldline_case::world::glob_match;

/// Where the faults come from while the run goes.
enum Plan {
    Drawn {
        tools: Vec<ToolFaults>,
        user: Option<UserFaults>,
        rng: Box<ChaCha20Rng>,
    },
    Scheduled(Vec<PlannedFault>),
}

/// The fault state of one run.
pub struct Faults {
    plan: Plan,
    seen: BTreeMap<String, u64>,
    skew_s: Option<i64>,
}

/// A number in [0, 1) from 53 random bits (exact, no rounding).
fn unit(rng: &mut ChaCha20Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// An integer in `[lo, hi]`.
fn uniform(rng: &mut ChaCha20Rng, lo: i64, hi: i64) -> i64 {
    let width = (hi as i128 - lo as i128 + 1) as u128;
    (lo as i128 + (rng.next_u64() as u128 % width) as i128) as i64
}

/// An integer in `r` spread as `dist` says.
fn sample(rng: &mut ChaCha20Rng, r: Range, dist: Dist) -> i64 {
    match dist {
        Dist::Uniform => uniform(rng, r.lo, r.hi),
        Dist::Log => {
            // A band 2^k (k up to the width's bit length), then uniform below it.
            let width = (r.hi - r.lo) as u64;
            let bits = 64 - width.leading_zeros() as i64;
            let k = uniform(rng, 0, bits) as u32;
            let top = if k >= 64 {
                width
            } else {
                ((1u64 << k) - 1).min(width)
            };
            r.lo + uniform(rng, 0, top as i64)
        }
    }
}

/// Draw one call's fault from a profile entry: at most one action, plus
/// latency drawn on its own.
fn draw(t: &ToolFaults, rng: &mut ChaCha20Rng) -> Option<(Action, Option<u64>)> {
    let u = unit(rng);
    let mut acc = 0.0;
    let mut hit = |p: f64| {
        acc += p;
        u < acc
    };
    let action = if hit(t.deny) {
        Some(Action::Deny)
    } else if let Some(s) = &t.stale
        && hit(s.p)
    {
        Some(Action::Stale(Stale {
            age_s: uniform(rng, s.age_s.lo, s.age_s.hi) as u64,
            field: s.field.clone(),
        }))
    } else if let Some(kind) = t.error.iter().find(|(_, p)| hit(**p)).map(|(k, _)| k) {
        Some(Action::Error(ErrorKind::named(kind)))
    } else if hit(t.empty) {
        Some(Action::Empty)
    } else if let Some(p) = &t.partial
        && hit(p.p)
    {
        Some(Action::Partial(Partial {
            fields: p.fields.clone(),
            error: p.error.as_deref().map(ErrorKind::named),
        }))
    } else if let Some(i) = &t.injection
        && hit(i.p)
    {
        Some(Action::Injection(Injection {
            text: i.text.clone(),
            vector: i.vector.clone(),
        }))
    } else {
        None
    };
    with_latency(action, t.latency_ms.as_ref(), rng)
}

/// `action` with a latency drawn after it from `latency` (its own draw);
/// a latency alone delays the answer.
fn with_latency(
    action: Option<Action>,
    latency: Option<&LatencyFault>,
    rng: &mut ChaCha20Rng,
) -> Option<(Action, Option<u64>)> {
    let latency = latency.and_then(|l| (unit(rng) < l.p).then(|| sample(rng, l.ms, l.dist) as u64));
    match (action, latency) {
        (None, None) => None,
        (None, Some(ms)) => Some((Action::Delay, Some(ms))),
        (Some(a), ms) => Some((a, ms)),
    }
}

/// Draw one user turn's or approval's fault from `[fuzz.user]`: silence,
/// another line, or a denial; a user turn's latency is drawn on its own.
fn draw_user(u: &UserFaults, call: &str, rng: &mut ChaCha20Rng) -> Option<(Action, Option<u64>)> {
    if call == fuzz::APPROVAL {
        return (u.deny_approvals > 0.0 && unit(rng) < u.deny_approvals)
            .then_some((Action::Deny, None));
    }
    if call == fuzz::USER_TOOL {
        return (u.tool_errors > 0.0 && unit(rng) < u.tool_errors)
            .then_some((Action::Error(ErrorKind::Unavailable), None));
    }
    let roll = unit(rng);
    let action = if roll < u.silent {
        Some(Action::Empty)
    } else if let Some(r) = &u.reply
        && roll < u.silent + r.p
    {
        let i = uniform(rng, 0, r.with.len() as i64 - 1) as usize;
        Some(Action::Respond(serde_json::Value::String(
            r.with[i].clone(),
        )))
    } else {
        None
    };
    with_latency(action, u.latency_ms.as_ref(), rng)
}

impl Faults {
    /// The faults of a run with this seed.
    pub fn new(source: &FaultSource, seed: u64) -> Self {
        match source {
            FaultSource::Profile(p) => {
                let mut rng = entropy::stream(seed, "faults");
                let skew_s = p.clock_skew_s.map(|r| uniform(&mut rng, r.lo, r.hi));
                Faults {
                    plan: Plan::Drawn {
                        tools: p.tools.clone(),
                        user: p.user.clone(),
                        rng: Box::new(rng),
                    },
                    seen: BTreeMap::new(),
                    skew_s,
                }
            }
            FaultSource::Schedule(s) => Faults {
                plan: Plan::Scheduled(s.faults.clone()),
                seen: BTreeMap::new(),
                skew_s: s.clock_skew_s,
            },
        }
    }

    /// Seconds the agent's wall clock is off by, if skewed.
    pub fn skew_s(&self) -> Option<i64> {
        self.skew_s
    }

    /// Count a call of `tool`; when `free` (no case rule answers it),
    /// the fault it gets, if any.
    pub fn next(&mut self, tool: &str, free: bool) -> Option<PlannedFault> {
        // The name copied only at its first call.
        let n = match self.seen.get_mut(tool) {
            Some(seen) => {
                *seen += 1;
                *seen
            }
            None => {
                self.seen.insert(tool.to_string(), 1);
                1
            }
        };
        if !free {
            return None;
        }
        match &mut self.plan {
            Plan::Drawn { tools, user, rng } => {
                let (action, latency_ms) =
                    if [fuzz::USER_TURN, fuzz::APPROVAL, fuzz::USER_TOOL].contains(&tool) {
                        draw_user(user.as_ref()?, tool, rng)?
                    } else {
                        let entry = tools.iter().find(|t| glob_match(&t.tool, tool))?;
                        draw(entry, rng)?
                    };
                Some(PlannedFault {
                    action,
                    latency_ms,
                    nth: n,
                    tool: tool.to_string(),
                })
            }
            Plan::Scheduled(faults) => faults
                .iter()
                .find(|f| f.tool == tool && f.nth == n)
                .cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::case::fuzz::{LatencyFault, Profile, Schedule, StaleFault};

    fn profile(stale: f64, latency: f64) -> FaultSource {
        FaultSource::Profile(Profile {
            clock_skew_s: Some(Range { lo: -60, hi: 60 }),
            tools: vec![ToolFaults {
                deny: 0.1,
                empty: 0.0,
                error: BTreeMap::from([("timeout".to_string(), 0.1)]),
                injection: None,
                latency_ms: Some(LatencyFault {
                    dist: Dist::Log,
                    ms: Range { lo: 1, hi: 10_000 },
                    p: latency,
                }),
                partial: None,
                stale: Some(StaleFault {
                    age_s: Range { lo: 60, hi: 600 },
                    field: Some("at".into()),
                    p: stale,
                }),
                tool: "list_*".into(),
            }],
            user: None,
        })
    }

    fn calls(f: &mut Faults, n: usize) -> Vec<Option<PlannedFault>> {
        (0..n).map(|_| f.next("list_deploys", true)).collect()
    }

    #[test]
    fn the_same_seed_draws_the_same_faults() {
        let src = profile(0.5, 0.5);
        let a = calls(&mut Faults::new(&src, 7), 200);
        assert_eq!(a, calls(&mut Faults::new(&src, 7), 200));
        assert_ne!(a, calls(&mut Faults::new(&src, 8), 200));
        let stale = a
            .iter()
            .flatten()
            .filter(|f| matches!(f.action, Action::Stale(_)))
            .count();
        assert!((60..=140).contains(&stale), "{stale} stale of 200");
        for f in a.iter().flatten() {
            if let Action::Stale(s) = &f.action {
                assert!((60..=600).contains(&s.age_s));
            }
            if let Some(ms) = f.latency_ms {
                assert!((1..=10_000).contains(&ms));
            }
        }
        let skew = Faults::new(&src, 7).skew_s().unwrap();
        assert!((-60..=60).contains(&skew));
    }

    #[test]
    fn unmatched_tools_and_case_rules_get_nothing_but_count() {
        let src = profile(1.0 - 0.2, 0.0);
        let mut f = Faults::new(&src, 1);
        assert_eq!(f.next("get_alert", true), None);
        assert_eq!(f.next("list_deploys", false), None);
        let second = f.next("list_deploys", true).unwrap();
        assert_eq!(second.nth, 2);
    }

    #[test]
    fn a_schedule_names_its_calls() {
        let planned = PlannedFault {
            action: Action::Deny,
            latency_ms: None,
            nth: 2,
            tool: "get_alert".into(),
        };
        let src = FaultSource::Schedule(Schedule {
            clock_skew_s: None,
            faults: vec![planned.clone()],
        });
        let mut f = Faults::new(&src, 99);
        assert_eq!(f.next("get_alert", true), None);
        assert_eq!(f.next("list_deploys", true), None);
        assert_eq!(f.next("get_alert", true), Some(planned));
        assert_eq!(f.next("get_alert", true), None);
    }

    #[test]
    fn log_latency_is_mostly_short() {
        let mut rng = entropy::stream(3, "test");
        let r = Range { lo: 0, hi: 100_000 };
        let v: Vec<i64> = (0..1000).map(|_| sample(&mut rng, r, Dist::Log)).collect();
        assert!(v.iter().all(|x| (0..=100_000).contains(x)));
        let short = v.iter().filter(|x| **x < 1000).count();
        assert!(short > 400, "{short} of 1000 under 1000");
    }
}
