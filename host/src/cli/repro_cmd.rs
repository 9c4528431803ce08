//! `worldline repro RUN --times N`: run a recorded run's case, seed and
//! faults again N times, each time with a different model seed (and the
//! recorded model provider, or another one given with `--model-set`, e.g. a
//! live endpoint), and report how often it ends the way the recording did
//! (its failure signature, or passing) — a rate with its 95% Wilson
//! interval, not a yes or no.

use super::Common;
use crate::error::{ExitCode, InputError};
use crate::fuzz::campaign::{self, par_map};
use crate::fuzz::stats::{Z95, wilson};
use crate::grade::signature;
use crate::replay::{self, recorded_agent};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::collections::BTreeMap;

#[derive(Args)]
pub struct ReproArgs {
    /// The run: id, unique id prefix, or bundle path.
    pub run: String,
    /// How many times to run it again.
    #[arg(long, default_value_t = 20)]
    pub times: u64,
    /// Runs at once (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Override a key of the recorded case's [model] for the repetitions,
    /// e.g. `--model-set provider=openai` to ask a live endpoint (repeatable).
    #[arg(long = "model-set", value_name = "KEY=VALUE")]
    pub model_set: Vec<String>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: ReproArgs) -> Result<ExitCode> {
    if args.times == 0 {
        return Err(InputError::new(&args.run, "--times must be at least 1").into());
    }
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?;
    let mut rec = replay::open(&store, &args.run)?;
    super::ModelArgs {
        set: args.model_set.clone(),
        model_seed: None,
    }
    .apply(&mut rec.case)?;
    let Some(footer) = &rec.bundle.footer else {
        return Err(InputError::new(
            &rec.path,
            "the run has no footer (it was cut short), so there is no outcome to reproduce",
        )
        .into());
    };
    let want = signature::of_footer(footer);
    let agent = recorded_agent(&sandbox, &store, &rec)?;
    let header = &rec.bundle.header;
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    // Repetition i gets model seed i + 1 of the run's seed (0 is the run's own).
    let ends = par_map(args.times as usize, jobs, |i| {
        let o = campaign::execute(
            &sandbox,
            &agent,
            &rec.case,
            header.seed,
            header.fuzz.as_ref(),
            campaign::model_seed(header.seed, i as u64 + 1),
            None,
        )?;
        Ok((
            signature::of(o.footer.status, o.grade.as_ref()),
            o.footer.chain_hash,
        ))
    })?;
    let reproduced = ends.iter().filter(|(s, _)| *s == want).count() as u64;
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    for (s, _) in &ends {
        *outcomes
            .entry(s.clone().unwrap_or_else(|| "passed".into()))
            .or_insert(0) += 1;
    }
    let distinct = ends
        .iter()
        .map(|(_, h)| h)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let (lo, hi) = wilson(reproduced, args.times, Z95);
    let rate = reproduced as f64 / args.times as f64;
    let shown = want.clone().unwrap_or_else(|| "passed".into());
    if args.common.json {
        let doc = json!({
            "run": rec.id,
            "outcome": shown,
            "times": args.times,
            "reproduced": reproduced,
            "rate": rate,
            "interval": [lo, hi],
            "outcomes": outcomes,
            "distinct_runs": distinct,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("repro {}: {shown}", rec.id);
        println!(
            "  reproduced {reproduced}/{} = {:.1}% (95% interval {:.1}% – {:.1}%)",
            args.times,
            rate * 100.0,
            lo * 100.0,
            hi * 100.0
        );
        for (outcome, n) in &outcomes {
            println!("  {n:>6}  {outcome}");
        }
        if distinct == 1 {
            println!(
                "  every repetition was the same run: nothing in this case draws from the model seed"
            );
        }
    }
    Ok(ExitCode::Ok)
}
