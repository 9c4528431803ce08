//! A fault-injection campaign (`worldline fuzz`): run it, reporting each
//! step to the caller's sink, then keep one reproducer bundle per failure
//! group (shrunk when asked). Building and rendering its report is the
//! caller's.

use super::sink::FirstError;
use crate::fuzz::campaign::{Campaign, CampaignEvent};
use crate::fuzz::reproducer::{Kept, Reproducers};
use crate::fuzz::summary::{Group, Tally};
use crate::fuzz::trial::Trial;
use crate::lanes::worker::Worker;
use anyhow::Result;
use std::path::Path;
use std::time::{Duration, Instant};
use worldline_store::store::StoreDir;

/// A campaign that ran.
pub struct Fuzzed {
    pub tally: Tally,
    /// Each failure group's reproducer, in the tally's order.
    pub kept: Vec<Kept>,
    /// The groups after those, in the tally's order, whose reproducer was
    /// not kept: the store had failed ([`Fuzzed::stopped`]).
    pub unkept: Vec<Group>,
    /// Real time the runs took (not the reproducers), for the report.
    pub elapsed: Duration,
    /// The store's error that stopped the campaign (a database store's
    /// server gone, a full disk: [`StoreDir::failed`]): as a signal does, no run starts after
    /// it, nor is a reproducer kept; the runs made are reported with it.
    pub stopped: Option<anyhow::Error>,
}

/// Run `campaign` (the share of the `workers` it starts in their
/// processes, their start counted in its time), handing `sink` each event
/// with the real time since the start; its first error (writing the file
/// `sink_file`) fails the campaign. Then keep a reproducer per group in
/// `store`, shrinking each with at most `shrink_budget` runs when given.
/// The store's error (while runs are kept, `--keep-all`, or a
/// reproducer) stops the campaign and is given back with what it made
/// ([`Fuzzed::stopped`]); any other error is the campaign's.
pub fn fuzz(
    campaign: &Campaign,
    workers: impl FnOnce() -> Result<Vec<Worker<Trial>>>,
    store: &StoreDir,
    shrink_budget: Option<u64>,
    sink_file: Option<&Path>,
    sink: &(dyn Fn(&CampaignEvent<'_>, Duration) -> std::io::Result<()> + Sync),
) -> Result<Fuzzed> {
    let error = FirstError::new();
    let started = Instant::now();
    let (tally, ran) = campaign.run(workers()?, &|e| error.keep(sink(&e, started.elapsed())));
    let mut stopped = match ran {
        Ok(()) => None,
        Err(e) if store.failed(&e) => Some(e),
        Err(e) => return Err(e),
    };
    error.into_result(sink_file)?;
    let elapsed = started.elapsed();
    // After a signal each group's reproducer is kept (one run), not
    // shrunk (hundreds), and a native agent's run does not begin: a group
    // whose reproducer cannot be run then is left out of the report (its
    // runs stay counted), not an error that loses the report.
    let interrupted = crate::native::signals::interrupted().is_some();
    let reproducers = Reproducers {
        sandbox: campaign.sandbox,
        agent: campaign.agent,
        case: campaign.case,
        store,
        faults: &campaign.faults,
        shrink_budget: shrink_budget.filter(|_| !interrupted),
    };
    // Once the store has failed, no reproducer is kept (each would be
    // run, and set aside, for nothing).
    let (mut kept, mut unkept) = (Vec::new(), Vec::new());
    for group in tally.groups() {
        if stopped.is_some() {
            unkept.push(group);
            continue;
        }
        let trial = group.first.clone();
        match reproducers.keep(group.clone(), trial) {
            Ok(k) => kept.push(k),
            Err(_) if interrupted => {}
            Err(e) if store.failed(&e) => {
                stopped = Some(e);
                unkept.push(group);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Fuzzed {
        tally,
        kept,
        unkept,
        elapsed,
        stopped,
    })
}
