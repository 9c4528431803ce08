//! A failure group's reproducer: its lowest-index run, shrunk when asked
//! to the fewest, smallest faults that still fail the same way, then
//! written to the store and checked to fail the same way again (a
//! component's run that does not is an internal error, never a silent
//! skip; a native agent's is kept and said to have ended otherwise: the
//! order its parallel requests arrive in is the operating system's).

use super::campaign;
use super::shrink::{self, Shrunk};
use super::summary::Group;
use super::trial::Trial;
use crate::grade::signature;
use crate::run::{RunOptions, RunOutcome, Runner};
use anyhow::Result;
use worldline_case::case::Case;
use worldline_case::case::fuzz::{FaultSource, Schedule};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// A group's kept reproducer.
pub struct Kept {
    pub group: Group,
    pub trial: Trial,
    /// The run as written to the store.
    pub outcome: RunOutcome,
    /// The shrink result and how many faults it started from.
    pub shrunk: Option<(Shrunk, usize)>,
    /// A native agent's reproducer that ended otherwise when written (its
    /// parallel requests answered in another order): how it ended. A
    /// component's is an internal error instead: it cannot.
    pub ended_otherwise: Option<String>,
}

impl Kept {
    /// The faults the reproducer runs with.
    pub fn faults(&self) -> &Schedule {
        match &self.shrunk {
            Some((s, _)) => &s.schedule,
            None => &self.trial.faults,
        }
    }
}

/// What reproducers are made from and where they go.
pub struct Reproducers<'a> {
    pub sandbox: &'a Sandbox,
    pub agent: &'a dyn Runner,
    pub case: &'a Case,
    pub store: &'a StoreDir,
    /// The campaign's faults (drawn from its profile).
    pub faults: &'a FaultSource,
    /// Shrink with at most this many runs per group; `None`: do not shrink.
    pub shrink_budget: Option<u64>,
}

impl Reproducers<'_> {
    /// Keep one reproducer for `group`, whose first run is `trial`.
    pub fn keep(&self, group: Group, trial: Trial) -> Result<Kept> {
        let run = |source: &FaultSource, store: Option<&StoreDir>| {
            campaign::execute(
                self.sandbox,
                self.agent,
                self.case,
                trial.seed,
                RunOptions {
                    store,
                    faults: Some(source.clone()),
                    model_seed: trial.model_seed,
                    // Shrinking's runs are counted and dropped.
                    counted: store.is_none(),
                    ..RunOptions::default()
                },
            )
        };
        let mut source = self.faults.clone();
        let mut shrunk = None;
        if let Some(budget) = self.shrink_budget {
            let same = |s: &Schedule| -> Result<Option<Schedule>> {
                let source = FaultSource::Schedule(s.clone());
                let o = run(&source, None)?;
                Ok((signature::of(o.footer.status, o.grade.as_ref()).as_ref()
                    == Some(&group.signature))
                .then(|| campaign::realized(&o, &source, trial.seed)))
            };
            // The drawn faults, named outright, must fail the same way first
            // (a native agent's may not: it is then kept unshrunk).
            match same(&trial.faults)? {
                Some(start) => {
                    let before = start.len();
                    let s = shrink::shrink(start, budget, same)?;
                    source = FaultSource::Schedule(s.schedule.clone());
                    shrunk = Some((s, before));
                }
                None if self.agent.may_differ() => {}
                None => anyhow::bail!(
                    "internal: the faults of seed {} run as a schedule did not fail with `{}`; the schedule does not re-create the drawn run",
                    trial.seed,
                    group.signature
                ),
            }
        }
        let outcome = run(&source, Some(self.store))?;
        let got = signature::of(outcome.footer.status, outcome.grade.as_ref());
        let ended_otherwise = (got.as_ref() != Some(&group.signature))
            .then(|| got.unwrap_or_else(|| "passed".into()));
        if let Some(got) = &ended_otherwise
            && !self.agent.may_differ()
        {
            anyhow::bail!(
                "internal: the reproducer of `{}` (seed {}) ended as `{got}` when written; the run is not deterministic",
                group.signature,
                trial.seed,
            );
        }
        Ok(Kept {
            group,
            trial,
            outcome,
            shrunk,
            ended_otherwise,
        })
    }
}
