//! From a campaign's trials to its report: the pass rate with its 95%
//! Wilson interval, pass^k when seeds were repeated, and the failures
//! grouped by signature with the fault mix behind each group. Groups are
//! ordered by size, then signature; the mix by count, then label — never
//! by a hash map's order — so the same trials give the same report.

use super::campaign::Trial;
use super::stats::{Z95, pass_hat_k, wilson};
use crate::case::fuzz::PlannedFault;
use crate::case::inject::Action;
use serde::Serialize;
use std::collections::BTreeMap;

/// Failures that share a signature.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    pub signature: String,
    pub count: u64,
    /// Share of all runs.
    pub rate: f64,
    /// Index of the group's first trial (its reproducer).
    #[serde(skip)]
    pub first: usize,
    /// How many of the group's runs met each kind of fault.
    pub fault_mix: Vec<MixEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixEntry {
    pub fault: String,
    pub runs: u64,
}

/// One pass^k figure.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PassK {
    pub k: u64,
    pub value: f64,
}

/// The campaign's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub runs: u64,
    pub passed: u64,
    pub failed: u64,
    pub pass_rate: f64,
    /// 95% Wilson score interval of the pass rate.
    pub interval: [f64; 2],
    /// pass^k for k = 1..repeat (empty when seeds ran once).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pass_k: Vec<PassK>,
}

/// A fault's kind, as the mix counts it: `list_deploys stale`,
/// `get_alert error timeout`, `list_deploys latency`.
pub fn labels(f: &PlannedFault) -> Vec<String> {
    let action = match &f.action {
        Action::Stale(_) => Some("stale".to_string()),
        Action::Deny => Some("deny".to_string()),
        Action::Error(kind) => Some(format!("error {kind}")),
        Action::Empty => Some("empty".to_string()),
        Action::Partial(_) => Some("partial".to_string()),
        Action::Respond(_) => Some("response".to_string()),
        Action::Delay => None,
    };
    let mut out: Vec<String> = action
        .map(|a| format!("{} {a}", f.tool))
        .into_iter()
        .collect();
    if f.latency_ms.is_some() {
        out.push(format!("{} latency", f.tool));
    }
    out
}

/// Group failed trials by signature.
pub fn groups(trials: &[Trial]) -> Vec<Group> {
    let total = trials.len().max(1) as f64;
    let mut by_sig: BTreeMap<&str, (u64, usize, BTreeMap<String, u64>)> = BTreeMap::new();
    for (i, t) in trials.iter().enumerate() {
        let Some(sig) = &t.signature else { continue };
        let entry = by_sig.entry(sig).or_insert((0, i, BTreeMap::new()));
        entry.0 += 1;
        let mut kinds: Vec<String> = t.faults.faults.iter().flat_map(labels).collect();
        if t.faults.clock_skew_s.is_some() {
            kinds.push("clock skew".to_string());
        }
        kinds.sort();
        kinds.dedup();
        for k in kinds {
            *entry.2.entry(k).or_insert(0) += 1;
        }
    }
    let mut out: Vec<Group> = by_sig
        .into_iter()
        .map(|(sig, (count, first, mix))| {
            let mut fault_mix: Vec<MixEntry> = mix
                .into_iter()
                .map(|(fault, runs)| MixEntry { fault, runs })
                .collect();
            fault_mix.sort_by(|a, b| b.runs.cmp(&a.runs).then_with(|| a.fault.cmp(&b.fault)));
            Group {
                signature: sig.to_string(),
                count,
                rate: count as f64 / total,
                first,
                fault_mix,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.signature.cmp(&b.signature))
    });
    out
}

/// The pass rate, its interval and pass^k. Trials are in seed order with
/// `repeat` runs of each seed next to each other.
pub fn summarize(trials: &[Trial], repeat: u64) -> Summary {
    let runs = trials.len() as u64;
    let passed = trials.iter().filter(|t| t.signature.is_none()).count() as u64;
    let (lo, hi) = wilson(passed, runs, Z95);
    let pass_k = if repeat > 1 {
        let per_seed: Vec<u64> = trials
            .chunks(repeat as usize)
            .map(|c| c.iter().filter(|t| t.signature.is_none()).count() as u64)
            .collect();
        (1..=repeat)
            .map(|k| PassK {
                k,
                value: pass_hat_k(&per_seed, repeat, k),
            })
            .collect()
    } else {
        Vec::new()
    };
    Summary {
        runs,
        passed,
        failed: runs - passed,
        pass_rate: if runs == 0 {
            0.0
        } else {
            passed as f64 / runs as f64
        },
        interval: [lo, hi],
        pass_k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::fuzz::Schedule;
    use crate::case::inject::Stale;

    fn trial(sig: Option<&str>, faults: Vec<PlannedFault>) -> Trial {
        Trial {
            index: 0,
            seed: 0,
            model_seed: None,
            signature: sig.map(String::from),
            faults: Schedule {
                clock_skew_s: None,
                faults,
            },
        }
    }

    fn stale(tool: &str, latency: Option<u64>) -> PlannedFault {
        PlannedFault {
            action: Action::Stale(Stale {
                age_s: 600,
                field: None,
            }),
            latency_ms: latency,
            nth: 1,
            tool: tool.into(),
        }
    }

    #[test]
    fn groups_are_ordered_by_size_and_carry_their_fault_mix() {
        let trials = vec![
            trial(None, vec![]),
            trial(Some("trapped"), vec![]),
            trial(Some("failed: x"), vec![stale("a", Some(5))]),
            trial(Some("failed: x"), vec![stale("a", None), stale("a", None)]),
            trial(None, vec![]),
        ];
        let g = groups(&trials);
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].signature.as_str(), g[0].count, g[0].first),
            ("failed: x", 2, 2)
        );
        assert_eq!(g[0].rate, 0.4);
        assert_eq!(
            g[0].fault_mix,
            vec![
                MixEntry {
                    fault: "a stale".into(),
                    runs: 2
                },
                MixEntry {
                    fault: "a latency".into(),
                    runs: 1
                },
            ]
        );
        assert_eq!((g[1].signature.as_str(), g[1].first), ("trapped", 1));
        let s = summarize(&trials, 1);
        assert_eq!((s.runs, s.passed, s.failed), (5, 2, 3));
        assert!(s.interval[0] < 0.4 && 0.4 < s.interval[1]);
        assert!(s.pass_k.is_empty());
    }

    #[test]
    fn repeated_seeds_give_pass_k() {
        // Two seeds, two runs each: the first passes both, the second one of two.
        let trials = vec![
            trial(None, vec![]),
            trial(None, vec![]),
            trial(None, vec![]),
            trial(Some("trapped"), vec![]),
        ];
        let s = summarize(&trials, 2);
        assert_eq!(s.pass_k.len(), 2);
        assert_eq!(s.pass_k[0].value, 0.75);
        assert_eq!(s.pass_k[1].value, 0.5);
    }
}
