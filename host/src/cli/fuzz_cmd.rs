//! `worldline fuzz CASE --agent A.wasm --runs N`: a fault-injection
//! campaign. Prints the pass rate with its 95% Wilson interval, pass^k
//! when seeds repeat, and the failures grouped by signature, each with its
//! fault mix and one reproducer bundle (shrunk with `--shrink`). Exit 1
//! when any run failed.

use super::Common;
use crate::case::fuzz::{self, FaultSource, Schedule};
use crate::case::{self, Case};
use crate::error::{ExitCode, InputError};
use crate::fuzz::campaign::{self, Campaign, Trial};
use crate::fuzz::describe;
use crate::fuzz::report::{self, Group, Summary};
use crate::fuzz::shrink::{self, Shrunk};
use crate::grade::signature;
use crate::run::RunOutcome;
use crate::sandbox::{Agent, Sandbox};
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{Value, json};
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Args)]
pub struct FuzzArgs {
    /// The case file (TOML); its `[fuzz]` table is the fault profile
    /// unless --faults names another.
    pub case: PathBuf,
    /// The agent component (.wasm).
    #[arg(long)]
    pub agent: PathBuf,
    /// Seeded variations to run.
    #[arg(long, default_value_t = 100)]
    pub runs: u64,
    /// Runs of each seed, each with its own model seed (gives pass^k).
    #[arg(long, default_value_t = 1)]
    pub repeat: u64,
    /// Runs at once (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Campaign seed (default: the case's seed); the same seed gives the
    /// same report.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A faults file (the body of a `[fuzz]` table) instead of the case's.
    #[arg(long)]
    pub faults: Option<PathBuf>,
    /// Shrink each group's reproducer to the fewest, smallest faults that
    /// still fail the same way.
    #[arg(long)]
    pub shrink: bool,
    /// Most runs one group's shrinking may make.
    #[arg(long, default_value_t = 400)]
    pub shrink_budget: u64,
    /// Write every run's bundle to the store, passing ones too.
    #[arg(long)]
    pub keep_all: bool,
    /// Folder holding the worlds (default: the nearest `worlds/` above the case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    /// Override a key of the case's [model] for every run, e.g.
    /// `--model-set provider=openai` (repeatable).
    #[arg(long = "model-set", value_name = "KEY=VALUE")]
    pub model_set: Vec<String>,
    #[command(flatten)]
    pub common: Common,
}

/// A group's kept reproducer.
struct Kept {
    group: Group,
    trial: Trial,
    outcome: RunOutcome,
    shrunk: Option<(Shrunk, usize)>,
}

pub fn exec(args: FuzzArgs) -> Result<ExitCode> {
    let mut case = case::load(&args.case, args.worlds.as_deref())?;
    super::ModelArgs {
        set: args.model_set.clone(),
        model_seed: None,
    }
    .apply(&mut case)?;
    let (profile, from) = match &args.faults {
        Some(path) => (
            fuzz::load_file(path, &case.world)?,
            path.display().to_string(),
        ),
        None => match &case.fuzz {
            Some(p) => (p.clone(), "[fuzz]".to_string()),
            None => {
                return Err(InputError::new(
                    &args.case,
                    "the case has no [fuzz] fault profile; add one (see docs/formats.md) or pass --faults FILE",
                )
                .into());
            }
        },
    };
    if args.runs == 0 || args.repeat == 0 {
        return Err(InputError::new(&args.case, "--runs and --repeat must be at least 1").into());
    }
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?;
    let agent = crate::agent_file::load(&sandbox, &store, &args.agent)?;
    store.put_case(&case)?;

    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let seed = args.seed.unwrap_or(case.seed);
    let faults = FaultSource::Profile(profile.clone());
    let c = Campaign {
        sandbox: &sandbox,
        agent: &agent,
        case: &case,
        faults: faults.clone(),
        seed,
        runs: args.runs,
        repeat: args.repeat,
        jobs,
        keep_all: args.keep_all.then_some(&store),
    };
    let total = args.runs * args.repeat;
    let bar = progress(total);
    let failures = AtomicU64::new(0);
    let started = Instant::now();
    let trials = c.run(&|failed| {
        let n = failures.fetch_add(u64::from(failed), Ordering::Relaxed) + u64::from(failed);
        bar.inc(1);
        if !bar.is_hidden() {
            let rate = bar.position() as f64 / started.elapsed().as_secs_f64().max(1e-9);
            bar.set_message(format!("{n} failed  {rate:.0} runs/s"));
        }
    })?;
    let elapsed = started.elapsed();
    bar.finish_and_clear();

    let summary = report::summarize(&trials, args.repeat);
    let mut kept = Vec::new();
    for group in report::groups(&trials) {
        let trial = trials[group.first].clone();
        kept.push(keep(
            &args, &sandbox, &agent, &case, &store, &faults, group, trial,
        )?);
    }
    let timing = json!({
        "elapsed_ms": elapsed.as_secs_f64() * 1000.0,
        "runs_per_s": total as f64 / elapsed.as_secs_f64().max(1e-9),
    });
    if args.common.json {
        let doc = json!({
            "case": case.name,
            "world": case.world.reference(),
            "agent_sha256": agent.sha256,
            "seed": seed,
            "seeds": args.runs,
            "repeat": args.repeat,
            "faults": {"from": from, "profile": profile},
            "summary": summary,
            "groups": kept.iter().map(group_json).collect::<Vec<_>>(),
            "timing": timing,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_text(&case, seed, &from, &summary, &kept, &timing);
    }
    Ok(if summary.failed == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}

/// A progress bar on stderr when it is a terminal; hidden otherwise.
fn progress(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:24} {pos}/{len} runs  {msg}  {elapsed}")
            .expect("the progress template is valid"),
    );
    bar.set_message("0 failed");
    bar
}

/// Keep one reproducer for a group: shrunk first when asked, then written
/// to the store and checked to fail the same way.
#[allow(clippy::too_many_arguments)]
fn keep(
    args: &FuzzArgs,
    sandbox: &Sandbox,
    agent: &Agent,
    case: &Case,
    store: &StoreDir,
    faults: &FaultSource,
    group: Group,
    trial: Trial,
) -> Result<Kept> {
    let run = |source: &FaultSource, store: Option<&StoreDir>| {
        campaign::execute(
            sandbox,
            agent,
            case,
            trial.seed,
            Some(source),
            trial.model_seed,
            store,
        )
    };
    let mut source = faults.clone();
    let mut shrunk = None;
    if args.shrink {
        let same = |s: &Schedule| -> Result<Option<Schedule>> {
            let source = FaultSource::Schedule(s.clone());
            let o = run(&source, None)?;
            Ok((signature::of(o.footer.status, o.grade.as_ref()).as_ref()
                == Some(&group.signature))
            .then(|| campaign::realized(&o, &source, trial.seed)))
        };
        // The drawn faults, named outright, must fail the same way first.
        let Some(start) = same(&trial.faults)? else {
            anyhow::bail!(
                "internal: the faults of seed {} run as a schedule did not fail with `{}`; the schedule does not re-create the drawn run",
                trial.seed,
                group.signature
            );
        };
        let before = start.len();
        let s = shrink::shrink(start, args.shrink_budget, same)?;
        source = FaultSource::Schedule(s.schedule.clone());
        shrunk = Some((s, before));
    }
    let outcome = run(&source, Some(store))?;
    let got = signature::of(outcome.footer.status, outcome.grade.as_ref());
    if got.as_ref() != Some(&group.signature) {
        anyhow::bail!(
            "internal: the reproducer of `{}` (seed {}) ended as {:?} when written; the run is not deterministic",
            group.signature,
            trial.seed,
            got
        );
    }
    Ok(Kept {
        group,
        trial,
        outcome,
        shrunk,
    })
}

fn group_json(k: &Kept) -> Value {
    let faults = match &k.shrunk {
        Some((s, _)) => &s.schedule,
        None => &k.trial.faults,
    };
    let mut g = json!({
        "signature": k.group.signature,
        "count": k.group.count,
        "rate": k.group.rate,
        "fault_mix": k.group.fault_mix,
        "reproducer": {
            "run_id": k.outcome.run_id,
            "bundle": k.outcome.bundle.as_ref().map(|b| b.display().to_string()),
            "seed": k.trial.seed,
            "model_seed": k.trial.model_seed,
            "chain_hash": k.outcome.footer.chain_hash,
            "faults": faults,
        },
    });
    if let Some((s, before)) = &k.shrunk {
        g["shrunk"] = json!({
            "faults_before": before,
            "faults_after": s.schedule.len(),
            "tries": s.tries,
            "complete": s.complete,
            "words": describe::schedule(s),
        });
    }
    g
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn print_text(case: &Case, seed: u64, from: &str, s: &Summary, kept: &[Kept], timing: &Value) {
    println!(
        "fuzz {} on {}: {} runs, campaign seed {seed}, faults from {from}",
        case.name,
        case.world.reference(),
        s.runs
    );
    println!(
        "  passed {}/{} = {} (95% interval {} – {})",
        s.passed,
        s.runs,
        pct(s.pass_rate),
        pct(s.interval[0]),
        pct(s.interval[1])
    );
    if !s.pass_k.is_empty() {
        let ks: Vec<String> = s
            .pass_k
            .iter()
            .map(|p| format!("pass^{} {}", p.k, pct(p.value)))
            .collect();
        println!("  {}", ks.join(", "));
    }
    if kept.is_empty() {
        println!("  no failures");
    }
    for k in kept {
        println!(
            "  {} run{} ({}) {}",
            k.group.count,
            if k.group.count == 1 { "" } else { "s" },
            pct(k.group.rate),
            k.group.signature
        );
        let mix: Vec<String> = k
            .group
            .fault_mix
            .iter()
            .map(|m| format!("{} ×{}", m.fault, m.runs))
            .collect();
        if !mix.is_empty() {
            println!("      fault mix: {}", mix.join(", "));
        }
        if let Some((sh, before)) = &k.shrunk {
            println!(
                "      shrunk from {before} to {} fault(s) in {} runs{}: {}",
                sh.schedule.len(),
                sh.tries,
                if sh.complete { "" } else { " (budget spent)" },
                describe::schedule(sh)
            );
        }
        if let Some(id) = &k.outcome.run_id {
            println!(
                "      reproducer: {id} (seed {}); worldline replay {id}",
                k.trial.seed
            );
        }
    }
    println!(
        "  {:.0} ms, {:.0} runs/s",
        timing["elapsed_ms"].as_f64().unwrap_or(0.0),
        timing["runs_per_s"].as_f64().unwrap_or(0.0)
    );
}
