//! Reproduction rate: a recorded run's case, seed and faults run again N
//! times, each with another model seed, and how often it ends the way the
//! recording did (its failure signature, or passing) — a rate with its 95%
//! Wilson interval, not a yes or no. Each way it ended otherwise is shown
//! with why its first repetition so ended, and a native run's
//! passed-through variables that differ from the recording are named, as
//! `replay` names them.

use super::campaign;
use super::stats::{Z95, wilson};
use crate::grade::signature;
use crate::replay::RecordedRun;
use crate::run::{RunOptions, Runner};
use anyhow::Result;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use worldline_case::parallel::par_map;
use worldline_runtime::sandbox::Sandbox;

/// How the repetitions ended.
#[derive(Serialize)]
pub struct Repro {
    /// Repetitions that were distinct runs (by chain hash); 1 when nothing
    /// in the case draws from the model seed.
    pub distinct_runs: usize,
    /// A native run: the passed-through variables whose values now differ
    /// from those it recorded (by name and how; never the values), as
    /// `replay` gives them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env_differs: Vec<String>,
    /// For each outcome other than the recorded one, why the first
    /// repetition that ended so did not pass (its agent's error, or the
    /// first failed check), when it says.
    pub errors: BTreeMap<String, String>,
    /// The signal (`SIGINT`, `SIGTERM`) that stopped the repetitions, if
    /// one did: `times` counts those that ended before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<&'static str>,
    pub interval: [f64; 2],
    /// The recorded outcome: its failure signature, or `passed`.
    pub outcome: String,
    /// How many repetitions ended each way.
    pub outcomes: BTreeMap<String, u64>,
    pub rate: f64,
    pub reproduced: u64,
    /// The rules the repetitions ran under: the recorded run's
    /// (decision 0423), so a run recorded before a fix ends as it did.
    pub rules: u32,
    pub run: String,
    pub times: u64,
}

/// Run `rec` again `times` times on `jobs` threads; repetition `i` gets
/// model seed `i + 1` of the run's seed (0 is the run's own). `want` is the
/// recorded signature (`None`: it passed). Each runs under the rules
/// `rec` ran under, as a fork of it does. A SIGINT or SIGTERM its caller
/// catches ends it with the repetitions made before it.
pub fn repro(
    sandbox: &Sandbox,
    agent: &dyn Runner,
    rec: &RecordedRun,
    want: Option<String>,
    times: u64,
    jobs: usize,
) -> Result<Repro> {
    let header = &rec.bundle.header;
    // After a signal its caller catches, no repetition begins, and one it
    // stopped (a native run's `trapped`) is not counted.
    let stopped = crate::native::signals::received;
    let ends = par_map(times as usize, jobs, |i| {
        if stopped() {
            return Ok(None);
        }
        let o = campaign::execute(
            sandbox,
            agent,
            &rec.case,
            header.seed,
            RunOptions {
                faults: header.fuzz.clone(),
                model_seed: campaign::model_seed(header.seed, i as u64 + 1),
                rules: Some(rec.rules),
                ..RunOptions::default()
            },
        )?;
        Ok((!stopped()).then(|| {
            (
                signature::of(o.footer.status, o.grade.as_ref()),
                o.footer.chain_hash.clone(),
                crate::grade::verdict::reason(&o.footer, o.grade.as_ref()),
            )
        }))
    })?;
    let ends: Vec<_> = ends.into_iter().flatten().collect();
    let made = ends.len() as u64;
    let reproduced = ends.iter().filter(|(s, ..)| *s == want).count() as u64;
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    let mut errors: BTreeMap<String, String> = BTreeMap::new();
    for (s, _, why) in &ends {
        let outcome = s.clone().unwrap_or_else(|| "passed".into());
        if let (Some(why), true) = (why, *s != want) {
            errors.entry(outcome.clone()).or_insert_with(|| why.clone());
        }
        *outcomes.entry(outcome).or_insert(0) += 1;
    }
    let distinct_runs = ends
        .iter()
        .map(|(_, h, _)| h)
        .collect::<BTreeSet<_>>()
        .len();
    let (lo, hi) = wilson(reproduced, made, Z95);
    let env_differs = header.native.as_ref().map_or_else(Vec::new, |agent| {
        crate::native::environment::differing(header.env.as_ref(), &agent.pass_env)
    });
    Ok(Repro {
        distinct_runs,
        env_differs,
        errors,
        interrupted: crate::native::signals::interrupted(),
        interval: [lo, hi],
        outcome: want.unwrap_or_else(|| "passed".into()),
        outcomes,
        rate: reproduced as f64 / made.max(1) as f64,
        reproduced,
        rules: rec.rules,
        run: rec.id.clone(),
        times: made,
    })
}
