//! A fault-injection campaign (`worldline fuzz`): run it, reporting each
//! step to the caller's sink, then keep one reproducer bundle per failure
//! group (shrunk when asked). Building and rendering its report is the
//! caller's.

use crate::fuzz::campaign::{Campaign, CampaignEvent};
use crate::fuzz::reproducer::{Kept, Reproducers};
use crate::fuzz::summary::Tally;
use anyhow::Result;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use worldline_case::error::InputError;
use worldline_store::store::StoreDir;

/// A campaign that ran.
pub struct Fuzzed {
    pub tally: Tally,
    /// Each failure group's reproducer, in the tally's order.
    pub kept: Vec<Kept>,
    /// Real time the runs took (not the reproducers), for the report.
    pub elapsed: Duration,
}

/// Run `campaign`, handing `sink` each event with the real time since the
/// start; its first error (writing the file `sink_file`) fails the
/// campaign. Then keep a reproducer per group in `store`, shrinking each
/// with at most `shrink_budget` runs when given.
pub fn fuzz(
    campaign: &Campaign,
    store: &StoreDir,
    shrink_budget: Option<u64>,
    sink_file: Option<&Path>,
    sink: &(dyn Fn(&CampaignEvent<'_>, Duration) -> std::io::Result<()> + Sync),
) -> Result<Fuzzed> {
    let error: Mutex<Option<std::io::Error>> = Mutex::new(None);
    let started = Instant::now();
    let tally = campaign.run(&|e| {
        if let Err(err) = sink(&e, started.elapsed())
            && let Ok(mut first) = error.lock()
        {
            first.get_or_insert(err);
        }
    })?;
    let error = error.into_inner().unwrap_or_else(|e| e.into_inner());
    if let (Some(path), Some(err)) = (sink_file, error) {
        return Err(InputError::new(path, format!("cannot write: {err}")).into());
    }
    let elapsed = started.elapsed();
    let reproducers = Reproducers {
        sandbox: campaign.sandbox,
        agent: campaign.agent,
        case: campaign.case,
        store,
        faults: &campaign.faults,
        shrink_budget,
    };
    let kept = tally
        .groups()
        .into_iter()
        .map(|group| {
            let trial = group.first.clone();
            reproducers.keep(group, trial)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Fuzzed {
        tally,
        kept,
        elapsed,
    })
}
