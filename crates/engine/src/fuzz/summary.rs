//! From a campaign's trials to its report: a [`Tally`] counts trials as
//! they finish, and gives the pass rate with its 95% Wilson interval,
//! pass^k when seeds were repeated, and the failures grouped by signature
//! with the fault mix behind each group. Groups are ordered by size, then
//! signature; the mix by count, then label — never by a hash map's order —
//! so the same trials give the same report.

use super::stats::{Z95, pass_hat_ks_of_counts, reported_ks, wilson};
use super::trial::Trial;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use worldline_case::case::fuzz::PlannedFault;
use worldline_case::case::inject::Action;

/// Failures that share a signature.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    pub signature: String,
    pub count: u64,
    /// Share of all runs.
    pub rate: f64,
    /// The group's first trial (its reproducer).
    #[serde(skip)]
    pub first: Trial,
    /// How many of the group's runs met each kind of fault.
    pub fault_mix: Vec<MixEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixEntry {
    pub fault: String,
    pub runs: u64,
}

/// One pass^k (or pass@k) figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassK {
    pub k: u64,
    pub value: f64,
}

impl PassK {
    /// A curve over `n` runs: `values` at each of the k
    /// [`reported_ks`] lists (ascending).
    pub fn curve(n: u64, values: impl FnOnce(&[u64]) -> Vec<f64>) -> Vec<PassK> {
        let ks = reported_ks(n);
        let values = values(&ks);
        ks.into_iter()
            .zip(values)
            .map(|(k, value)| PassK { k, value })
            .collect()
    }
}

/// The campaign's numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub runs: u64,
    pub passed: u64,
    pub failed: u64,
    pub pass_rate: f64,
    /// 95% Wilson score interval of the pass rate.
    pub interval: [f64; 2],
    /// pass^k at the k `stats::reported_ks` lists (empty when seeds ran
    /// once).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_k: Vec<PassK>,
    /// With injections: how often the attack succeeded where one reached
    /// the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<AttackRate>,
}

/// The attack success rate: of the runs an injection reached, those whose
/// `[expect.attack]` goal was reached, with the 95% Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AttackRate {
    pub injected: u64,
    pub succeeded: u64,
    pub rate: f64,
    pub interval: [f64; 2],
}

/// A campaign's trials counted as they finish, in any order: memory grows
/// with the number of failure signatures and fault kinds, not with the
/// number of runs. The same trials give the same tally whatever their
/// order, and tallies of disjoint shards add up to the whole campaign's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    pub repeat: u64,
    pub runs: u64,
    pub passed: u64,
    /// `seeds_by_passes[c]`: seeds whose `repeat` runs passed `c` times.
    pub seeds_by_passes: Vec<u64>,
    /// Failures by signature.
    pub failures: BTreeMap<String, GroupTally>,
    /// Seeds with only some of their runs counted: seed → (runs, passes).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub open: BTreeMap<u64, (u64, u64)>,
    /// Runs an injection reached, and of those, runs whose attack succeeded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub injected: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attacked: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One signature's count, its first trial and its fault mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupTally {
    pub count: u64,
    pub first: Trial,
    pub mix: BTreeMap<String, u64>,
}

impl Tally {
    pub fn new(repeat: u64) -> Self {
        let repeat = repeat.max(1);
        Tally {
            repeat,
            seeds_by_passes: vec![0; repeat as usize + 1],
            ..Tally::default()
        }
    }

    /// Count one trial; its faults are kept only as mix counts, and the
    /// trial itself only while it is its group's first.
    pub fn add(&mut self, t: Trial) {
        self.runs += 1;
        self.injected += u64::from(t.injected);
        self.attacked += u64::from(t.injected && t.attacked);
        let passed = t.signature.is_none();
        self.passed += u64::from(passed);
        let seed = t.index / self.repeat;
        let (runs, passes) = self.open.entry(seed).or_insert((0, 0));
        *runs += 1;
        *passes += u64::from(passed);
        if *runs == self.repeat {
            let passes = *passes as usize;
            self.open.remove(&seed);
            self.seeds_by_passes[passes] += 1;
        }
        let Some(sig) = t.signature.clone() else {
            return;
        };
        let mut kinds: Vec<String> = t.faults.faults.iter().flat_map(labels).collect();
        if t.faults.clock_skew_s.is_some() {
            kinds.push("clock skew".to_string());
        }
        kinds.sort();
        kinds.dedup();
        let g = self.failures.entry(sig).or_insert_with(|| GroupTally {
            count: 0,
            first: t.clone(),
            mix: BTreeMap::new(),
        });
        g.count += 1;
        if t.index < g.first.index {
            g.first = t;
        }
        for k in kinds {
            *g.mix.entry(k).or_insert(0) += 1;
        }
    }

    /// Check a shard's tally (read from a report, so maybe edited) against
    /// itself and against the seeds the shard ran: `own` of the campaign's
    /// `seeds`, `mine(seed index)` saying which. Names what does not add
    /// up.
    pub fn check_shard(
        &self,
        seeds: u64,
        own: u64,
        mine: impl Fn(u64) -> bool,
    ) -> Result<(), String> {
        // Read numbers may be anything: add them up without overflow.
        let repeat = self.repeat.max(1);
        if self.seeds_by_passes.len() as u128 != u128::from(repeat) + 1 {
            return Err(format!(
                "`seeds_by_passes` has {} entries, not repeat {repeat} + 1",
                self.seeds_by_passes.len(),
            ));
        }
        let counted: u128 = self.seeds_by_passes.iter().map(|n| u128::from(*n)).sum();
        let passes: u128 = (0u128..)
            .zip(&self.seeds_by_passes)
            .map(|(c, n)| c * u128::from(*n))
            .sum();
        let failures: u128 = self.failures.values().map(|g| u128::from(g.count)).sum();
        let (runs, passed) = (u128::from(self.runs), u128::from(self.passed));
        let checks = [
            (
                runs == u128::from(own) * u128::from(repeat),
                format!(
                    "runs is {}, but the shard has {own} seed(s) × repeat {repeat}",
                    self.runs
                ),
            ),
            (
                self.passed <= self.runs,
                format!("passed {} > runs {}", self.passed, self.runs),
            ),
            (
                counted == u128::from(own),
                format!("`seeds_by_passes` counts {counted} seed(s), the shard has {own}"),
            ),
            (
                passes == passed,
                format!(
                    "`seeds_by_passes` adds up to {passes} passes, `passed` is {}",
                    self.passed
                ),
            ),
            (
                failures == runs.saturating_sub(passed),
                format!(
                    "the failure groups count {failures} runs, runs − passed is {}",
                    self.runs.saturating_sub(self.passed)
                ),
            ),
        ];
        if let Some((_, why)) = checks.into_iter().find(|(ok, _)| !ok) {
            return Err(why);
        }
        for (sig, g) in &self.failures {
            let seed = g.first.index / repeat;
            if g.count == 0 || seed >= seeds || !mine(seed) || g.mix.values().any(|n| *n > g.count)
            {
                return Err(format!(
                    "failure group `{sig}` does not fit the shard (count {}, first run {} of seed {seed})",
                    g.count, g.first.index
                ));
            }
        }
        Ok(())
    }

    /// Add a tally of other runs of the same campaign (another shard).
    pub fn merge(&mut self, other: Tally) -> Result<(), String> {
        if other.repeat != self.repeat {
            return Err(format!(
                "the reports repeat seeds {} and {} times",
                self.repeat, other.repeat
            ));
        }
        if let Some(seed) = other.open.keys().next() {
            return Err(format!(
                "a report counts only some runs of seed {seed}; merge whole shards"
            ));
        }
        self.runs += other.runs;
        self.passed += other.passed;
        self.injected += other.injected;
        self.attacked += other.attacked;
        for (mine, theirs) in self.seeds_by_passes.iter_mut().zip(other.seeds_by_passes) {
            *mine += theirs;
        }
        for (sig, g) in other.failures {
            match self.failures.get_mut(&sig) {
                None => {
                    self.failures.insert(sig, g);
                }
                Some(mine) => {
                    mine.count += g.count;
                    if g.first.index < mine.first.index {
                        mine.first = g.first;
                    }
                    for (k, n) in g.mix {
                        *mine.mix.entry(k).or_insert(0) += n;
                    }
                }
            }
        }
        Ok(())
    }

    /// The pass rate, its interval and pass^k (over seeds whose runs were
    /// all counted).
    pub fn summary(&self) -> Summary {
        let (runs, passed) = (self.runs, self.passed);
        let (lo, hi) = wilson(passed, runs, Z95);
        let pass_k = if self.repeat > 1 {
            PassK::curve(self.repeat, |ks| {
                pass_hat_ks_of_counts(&self.seeds_by_passes, self.repeat, ks)
            })
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
            attack: (self.injected > 0).then(|| {
                let (lo, hi) = wilson(self.attacked, self.injected, Z95);
                AttackRate {
                    injected: self.injected,
                    succeeded: self.attacked,
                    rate: self.attacked as f64 / self.injected as f64,
                    interval: [lo, hi],
                }
            }),
        }
    }

    /// The failure groups, by size then signature; each mix by count then
    /// label.
    pub fn groups(&self) -> Vec<Group> {
        let total = self.runs.max(1) as f64;
        let mut out: Vec<Group> = self
            .failures
            .iter()
            .map(|(sig, g)| {
                let mut fault_mix: Vec<MixEntry> = g
                    .mix
                    .iter()
                    .map(|(fault, runs)| MixEntry {
                        fault: fault.clone(),
                        runs: *runs,
                    })
                    .collect();
                fault_mix.sort_by(|a, b| b.runs.cmp(&a.runs).then_with(|| a.fault.cmp(&b.fault)));
                Group {
                    signature: sig.clone(),
                    count: g.count,
                    rate: g.count as f64 / total,
                    first: g.first.clone(),
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
}

/// A fault's kind, as the mix counts it: `list_deploys stale`,
/// `get_alert error timeout`, `list_deploys latency`, `user.say silent`.
pub fn labels(f: &PlannedFault) -> Vec<String> {
    let user_turn = f.tool == worldline_case::case::fuzz::USER_TURN;
    let action = match &f.action {
        Action::Empty if user_turn => Some("silent".to_string()),
        Action::Respond(_) if user_turn => Some("reply".to_string()),
        Action::Stale(_) => Some("stale".to_string()),
        Action::Deny => Some("deny".to_string()),
        Action::Error(kind) => Some(format!("error {kind}")),
        Action::Empty => Some("empty".to_string()),
        Action::Partial(_) => Some("partial".to_string()),
        Action::Respond(_) => Some("response".to_string()),
        Action::Injection(_) => Some("injection".to_string()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::case::fuzz::Schedule;
    use worldline_case::case::inject::Stale;

    fn tally(trials: Vec<Trial>, repeat: u64) -> Tally {
        let mut t = Tally::new(repeat);
        for (i, mut trial) in trials.into_iter().enumerate() {
            trial.index = i as u64;
            t.add(trial);
        }
        t
    }

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
            injected: false,
            attacked: false,
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
        let t = tally(trials, 1);
        let g = t.groups();
        assert_eq!(g.len(), 2);
        assert_eq!(
            (g[0].signature.as_str(), g[0].count, g[0].first.index),
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
        assert_eq!((g[1].signature.as_str(), g[1].first.index), ("trapped", 1));
        let s = t.summary();
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
        let s = tally(trials, 2).summary();
        assert_eq!(s.pass_k.len(), 2);
        assert_eq!(s.pass_k[0].value, 0.75);
        assert_eq!(s.pass_k[1].value, 0.5);
    }

    #[test]
    fn a_tally_is_the_same_in_any_order_and_shards_add_up() {
        let trials: Vec<Trial> = (0..12)
            .map(|i| {
                let sig = match i % 3 {
                    0 => None,
                    1 => Some("trapped"),
                    _ => Some("failed: x"),
                };
                let mut t = trial(sig, vec![stale(if i % 2 == 0 { "a" } else { "b" }, None)]);
                t.index = i;
                t
            })
            .collect();
        let mut forward = Tally::new(3);
        trials.iter().cloned().for_each(|t| forward.add(t));
        let mut backward = Tally::new(3);
        trials.iter().rev().cloned().for_each(|t| backward.add(t));
        assert_eq!(forward, backward);
        assert!(forward.open.is_empty());
        assert_eq!(forward.groups()[0].first.index, 2);

        // Shards hold whole seeds (3 runs each).
        let (mut one, mut two) = (Tally::new(3), Tally::new(3));
        for t in trials.iter().cloned() {
            if (t.index / 3) % 2 == 0 {
                one.add(t)
            } else {
                two.add(t)
            }
        }
        one.merge(two).unwrap();
        assert_eq!(one, forward);

        let mut half = Tally::new(3);
        half.add(trials[0].clone());
        assert!(
            forward
                .clone()
                .merge(half)
                .unwrap_err()
                .contains("only some runs of seed 0")
        );
    }
}
