//! A campaign: N seeded variations of one case, run in parallel on one
//! engine and one pre-instantiated agent, each graded into a small
//! [`Trial`] (its signature and the faults it met) that is counted into a
//! tally and dropped, never written as a bundle unless asked. The tally
//! does not depend on the order trials finish in, so the report is
//! independent of the number of jobs. While it runs, a campaign reports
//! each trial as a [`CampaignEvent`] to the sink its caller hands it
//! (decision 0365).

use super::summary::Tally;
use super::trial::Trial;
use crate::grade::signature;
use crate::lanes::worker::{self, Worker};
use crate::lanes::{self, Remote};
use crate::run::{RunOptions, RunOutcome, Runner};
use anyhow::Result;
use std::io::{BufRead, Write};
use std::sync::Mutex;
use worldline_case::case::Case;
use worldline_case::case::fuzz::{FaultSource, PlannedFault, Schedule};
use worldline_case::error::is_store;
use worldline_case::partition::Partition;
use worldline_log::log::event::By;
use worldline_runtime::mediate::entropy::derive;
use worldline_runtime::mediate::faults::Faults;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// What happens while a campaign runs: `Started` first, a `RunFinished`
/// per trial in the order they finish, `Finished` with the tally last.
pub enum CampaignEvent<'a> {
    /// The campaign is about to start: this machine's runs and threads.
    Started { runs: u64, jobs: usize },
    /// A trial was run and graded (`signature` is `None` when it passed).
    RunFinished(&'a Trial),
    /// A signal came (`SIGINT`, `SIGTERM`): no run starts from now on;
    /// those under way end and are counted.
    Interrupted { signal: &'static str },
    /// Every trial made is counted.
    Finished(&'a Tally),
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

/// One run of `case` with its seed replaced by `seed`, carried out as
/// `opts` says (its faults, model seed, store).
pub fn execute(
    sandbox: &Sandbox,
    agent: &dyn Runner,
    case: &Case,
    seed: u64,
    opts: RunOptions,
) -> Result<RunOutcome> {
    let mut case = case.clone();
    case.seed = seed;
    agent.run(sandbox, &case, opts)
}

/// The faults a finished run actually met, as a schedule that re-creates
/// them: the clock skew it started with (none when it drew 0 s: a run
/// whose clock is right met no skew) and every fuzz mark in its events.
pub fn realized(outcome: &RunOutcome, faults: &FaultSource, seed: u64) -> Schedule {
    Schedule {
        clock_skew_s: Faults::new(faults, seed).skew_s().filter(|s| *s != 0),
        faults: outcome
            .events
            .as_held()
            .iter()
            .filter_map(|e| match e.mark()?.by {
                By::Fuzz(fault) => Some(fault),
                _ => None,
            })
            .filter_map(|f| serde_json::from_value::<PlannedFault>(f.clone()).ok())
            .collect(),
    }
}

/// Whether a fuzz fault placed injected text at a vector of an answer the
/// agent received.
fn injection_landed(outcome: &RunOutcome) -> bool {
    outcome.events.as_held().iter().any(|e| {
        e.injected.as_ref().is_some_and(|m| {
            m.get("fuzz").is_some()
                && m["action"] == "injection"
                && m["vectors"].as_array().is_some_and(|v| !v.is_empty())
        })
    })
}

/// The first line a campaign writes its worker.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Hello {
    campaign: String,
}

/// The campaign's settings.
pub struct Campaign<'a> {
    pub sandbox: &'a Sandbox,
    pub agent: &'a dyn Runner,
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
    /// Run only this shard's seeds (all repetitions of a seed stay in one
    /// shard, so pass^k can be computed from merged shards).
    pub partition: Option<Partition>,
    /// Keep the faults a passing run met too: `fuzz --events` says of
    /// each run the faults it met (it said none of every passing run).
    /// The tally reads those of failures only.
    pub every_fault: bool,
}

impl Campaign<'_> {
    /// What two processes must agree on to run trials of one campaign:
    /// its case, world, agent, faults and seeds (SHA-256, hex).
    pub fn identity(&self) -> String {
        worldline_case::canon::sha256_hex(
            serde_json::json!({
                "case": self.case.hash,
                "world": self.case.world.hash,
                "model_overrides": self.case.model_overrides,
                "user_model_overrides": self.case.user_model_overrides,
                "agent": self.agent.sha256(),
                "faults": self.faults,
                "seed": self.seed,
                "runs": self.runs,
                "repeat": self.repeat,
            })
            .to_string(),
        )
    }

    /// What a worker of this campaign is sent first: the campaign's
    /// identity, which the worker checks against its own.
    pub fn hello(&self) -> Hello {
        Hello {
            campaign: self.identity(),
        }
    }

    /// Be a worker of this campaign (decision 0406): run the variations
    /// its campaign writes on `input` on `jobs` threads, answering each on
    /// `output`, until `input` ends. A campaign that is not this one (a
    /// file changed since it started) is refused.
    pub fn serve(&self, input: impl BufRead + Send, output: impl Write + Send) -> Result<()> {
        let start = |hello: Hello| {
            if hello.campaign != self.identity() {
                anyhow::bail!(
                    "this fuzz worker's case, world, agent or faults differ from its campaign's (a file changed since the campaign started): run the campaign again"
                );
            }
            Ok(|i| self.made(i))
        };
        worker::serve(self.jobs, start, input, output)
    }

    /// Trial `i`, or `None` when a signal came before it began or stopped
    /// it: a run a signal stopped before it began is not made (a native
    /// one refuses to begin), not an error of the campaign, and one it
    /// stopped under way (a native one, `trapped`) is the signal's
    /// outcome, not the agent's failure (it was counted one).
    fn made(&self, i: u64) -> Result<Option<Trial>> {
        match self.trial(i) {
            Ok(t) => Ok(t),
            Err(_) if crate::native::signals::interrupted().is_some() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Run one trial: variation `i` (seed index `i / repeat`); `None`
    /// when a signal stopped it from outside.
    fn trial(&self, i: u64) -> Result<Option<Trial>> {
        let seed = run_seed(self.seed, i / self.repeat);
        let model_seed = model_seed(seed, i % self.repeat);
        let o = execute(
            self.sandbox,
            self.agent,
            self.case,
            seed,
            RunOptions {
                store: self.keep_all,
                faults: Some(self.faults.clone()),
                model_seed,
                // Kept in memory, it is counted and dropped.
                counted: self.keep_all.is_none(),
                ..RunOptions::default()
            },
        )?;
        if o.footer.stopped_from_outside() {
            return Ok(None);
        }
        let signature = signature::of(o.footer.status, o.grade.as_ref());
        let faults = if signature.is_some() || self.every_fault {
            realized(&o, &self.faults, seed)
        } else {
            Schedule::default()
        };
        Ok(Some(Trial {
            index: i,
            seed,
            model_seed,
            signature,
            faults,
            // Counted for the attack rate only where the case says what
            // the attack's goal is (it was 0% where the agent did what the
            // text asked).
            injected: injection_landed(&o)
                && (self.case.expect.as_ref()).is_some_and(|e| e.attack.is_some()),
            attacked: match (&self.case.expect, &o.grade) {
                (Some(e), Some(g)) => crate::grade::attack_reached(e, g),
                _ => false,
            },
        }))
    }

    /// The variations this machine runs, in order: every one, or the
    /// repetitions of this shard's seeds.
    pub fn indexes(&self) -> Vec<u64> {
        (0..self.runs)
            .filter(|s| {
                self.partition
                    .is_none_or(|p| p.contains(*s as usize, &s.to_string()))
            })
            .flat_map(|s| s * self.repeat..(s + 1) * self.repeat)
            .collect()
    }

    /// Run this machine's trials on `jobs` jobs, those of `workers` in
    /// their processes and the rest on threads of this one, counting each
    /// into a tally as it finishes and reporting each step to `sink`
    /// (called from the threads that run or receive trials). The first
    /// error of a trial stops every lane taking more; the trials under
    /// way end and are counted. Gives the tally of the trials made, with
    /// that error: a store that failed (a database store's server gone,
    /// [`is_store`]) leaves the tally to be reported, and is `Finished`
    /// too; any other error is the campaign's.
    pub fn run(
        &self,
        workers: Vec<Worker<Trial>>,
        sink: &(dyn Fn(CampaignEvent<'_>) + Sync),
    ) -> (Tally, Result<()>) {
        let indexes = self.indexes();
        sink(CampaignEvent::Started {
            runs: indexes.len() as u64,
            jobs: self.jobs,
        });
        let tally = Mutex::new(Tally::new(self.repeat));
        // The first signal is said as soon as a lane sees it (the campaign
        // said nothing until its report), once.
        let said = std::sync::atomic::AtomicBool::new(false);
        let halted = || match crate::native::signals::interrupted() {
            Some(signal) => {
                if !said.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    sink(CampaignEvent::Interrupted { signal });
                }
                true
            }
            None => false,
        };
        let remote: usize = workers.iter().map(|w| w.jobs()).sum();
        let workers = workers
            .into_iter()
            .map(|w| Box::new(w) as Box<dyn Remote<Trial>>)
            .collect();
        let ran = lanes::run(
            &indexes,
            self.jobs.saturating_sub(remote),
            workers,
            &|i| self.made(i),
            &|t| {
                sink(CampaignEvent::RunFinished(&t));
                tally.lock().expect("tally lock").add(t);
            },
            &|| halted(),
        );
        // A signal that came as the last runs ended, after any lane asked.
        halted();
        let tally = tally.into_inner().expect("tally lock");
        if ran.as_ref().is_ok() || ran.as_ref().is_err_and(is_store) {
            sink(CampaignEvent::Finished(&tally));
        }
        (tally, ran)
    }
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
}
