//! A campaign: N seeded variations of one case, run in parallel on one
//! engine and one pre-instantiated agent, each graded and kept in memory
//! as a small [`Trial`] (its signature and the faults it met), never as a
//! bundle unless asked. Trials come back in seed order whatever the
//! number of jobs, so everything computed from them is independent of it.

use crate::case::Case;
use crate::case::fuzz::{FaultSource, PlannedFault, Schedule};
use crate::fuzz::faults::Faults;
use crate::grade::signature;
use crate::run::{RunOptions, RunOutcome, run_with};
use crate::sandbox::{Agent, Sandbox};
use crate::store::StoreDir;
use anyhow::Result;
use sha2::{Digest, Sha256};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A number derived from `seed`, a purpose and an index (SHA-256, first
/// eight bytes): run seeds from the campaign seed, model seeds from a run
/// seed.
pub fn derive(seed: u64, purpose: &str, index: u64) -> u64 {
    let mut h = Sha256::new();
    h.update(b"worldline/");
    h.update(purpose.as_bytes());
    h.update(seed.to_le_bytes());
    h.update(index.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().expect("eight bytes"))
}

/// The seed of the campaign's `i`-th variation.
pub fn run_seed(campaign_seed: u64, i: u64) -> u64 {
    derive(campaign_seed, "fuzz-run", i)
}

/// The model seed of repetition `rep` of a seed: the first repetition
/// leaves it to the run seed, later ones draw their own.
pub fn model_seed(seed: u64, rep: u64) -> Option<u64> {
    (rep > 0).then(|| derive(seed, "model", rep))
}

/// One run of `case` with its seed replaced by `seed`, the given faults
/// and model seed; written to `store` when given, else kept in memory.
pub fn execute(
    sandbox: &Sandbox,
    agent: &Agent,
    case: &Case,
    seed: u64,
    faults: Option<&FaultSource>,
    model_seed: Option<u64>,
    store: Option<&StoreDir>,
) -> Result<RunOutcome> {
    let mut case = case.clone();
    case.seed = seed;
    run_with(
        sandbox,
        agent,
        &case,
        RunOptions {
            store,
            faults: faults.cloned(),
            model_seed,
            ..RunOptions::default()
        },
    )
}

/// The faults a finished run actually met, as a schedule that re-creates
/// them: the clock skew it started with and every fuzz mark in its events.
pub fn realized(outcome: &RunOutcome, faults: &FaultSource, seed: u64) -> Schedule {
    Schedule {
        clock_skew_s: Faults::new(faults, seed).skew_s(),
        faults: outcome
            .events
            .iter()
            .filter_map(|e| e.injected.as_ref()?.get("fuzz"))
            .filter_map(|f| serde_json::from_value::<PlannedFault>(f.clone()).ok())
            .collect(),
    }
}

/// What a campaign keeps of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub seed: u64,
    pub model_seed: Option<u64>,
    /// `None` when the run passed.
    pub signature: Option<String>,
    /// The faults the run met (kept for failures only).
    pub faults: Schedule,
}

/// The campaign's settings.
pub struct Campaign<'a> {
    pub sandbox: &'a Sandbox,
    pub agent: &'a Agent,
    pub case: &'a Case,
    pub faults: FaultSource,
    pub seed: u64,
    /// Distinct seeds.
    pub runs: u64,
    /// Runs of each seed (with different model seeds).
    pub repeat: u64,
    pub jobs: usize,
    /// Write every run's bundle here (else runs stay in memory).
    pub keep_all: Option<&'a StoreDir>,
}

impl Campaign<'_> {
    /// Run one trial: variation `i` (seed index `i / repeat`).
    fn trial(&self, i: u64) -> Result<Trial> {
        let seed = run_seed(self.seed, i / self.repeat);
        let model_seed = model_seed(seed, i % self.repeat);
        let o = execute(
            self.sandbox,
            self.agent,
            self.case,
            seed,
            Some(&self.faults),
            model_seed,
            self.keep_all,
        )?;
        let signature = signature::of(o.footer.status, o.grade.as_ref());
        let faults = if signature.is_some() {
            realized(&o, &self.faults, seed)
        } else {
            Schedule::default()
        };
        Ok(Trial {
            seed,
            model_seed,
            signature,
            faults,
        })
    }

    /// Run every trial on `jobs` threads; `done(failed)` is called after
    /// each. Trials come back in order.
    pub fn run(&self, done: &(dyn Fn(bool) + Sync)) -> Result<Vec<Trial>> {
        let total = (self.runs * self.repeat) as usize;
        par_map(total, self.jobs, |i| {
            let t = self.trial(i as u64)?;
            done(t.signature.is_some());
            Ok(t)
        })
    }
}

/// `f(0) .. f(total - 1)` on `jobs` threads, results in index order; the
/// first error stops the rest.
pub fn par_map<T: Send>(
    total: usize,
    jobs: usize,
    f: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..total).map(|_| None).collect());
    let error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, total.max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    match f(i) {
                        Ok(t) => results.lock().expect("results lock")[i] = Some(t),
                        Err(e) => {
                            error.lock().expect("error lock").get_or_insert(e);
                            next.store(total, Ordering::Relaxed);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = error.into_inner().expect("error lock") {
        return Err(e);
    }
    Ok(results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .flatten()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_are_derived_stably() {
        assert_eq!(run_seed(1, 0), run_seed(1, 0));
        assert_ne!(run_seed(1, 0), run_seed(1, 1));
        assert_ne!(run_seed(1, 0), run_seed(2, 0));
        assert_eq!(model_seed(5, 0), None);
        assert_ne!(model_seed(5, 1), model_seed(5, 2));
    }

    #[test]
    fn par_map_keeps_order_and_stops_at_an_error() {
        let doubled = par_map(100, 3, |i| Ok(i * 2)).unwrap();
        assert_eq!(doubled, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        let err = par_map(100, 2, |i| {
            if i == 40 {
                anyhow::bail!("boom at {i}")
            }
            Ok(i)
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "boom at 40");
    }
}
