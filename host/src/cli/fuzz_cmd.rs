//! `worldline fuzz CASE --agent A.wasm --runs N`: a fault-injection
//! campaign. Prints the pass rate with its 95% Wilson interval, pass^k
//! when seeds repeat, and the failures grouped by signature, each with its
//! fault mix and one reproducer bundle (shrunk with `--shrink`). Exit 1
//! when any run failed; 2, after the report of the runs made, when the
//! store failed (a database store's server gone).

use super::Common;
use super::agent_choice::{Choice, Chosen};
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;
use worldline_case::case;
use worldline_case::case::fuzz::{self, FaultSource};
use worldline_case::error::InputError;
use worldline_engine::fuzz::campaign::{Campaign, CampaignEvent};
use worldline_engine::fuzz::trial::Trial;
use worldline_engine::lanes::worker::Worker;
use worldline_engine::ops;
use worldline_report::events::Progress;
use worldline_report::fuzz::{Faults, FuzzReport, GroupReport, Timing};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct FuzzArgs {
    /// The case file (TOML); its `[fuzz]` table is the fault profile
    /// unless --faults names another.
    pub case: PathBuf,
    /// The agent component (.wasm; default: the case's `exec`, else
    /// `agent` or `exec` in worldline.toml).
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// Seeded variations to run.
    #[arg(long, default_value_t = 100)]
    pub runs: u64,
    /// Runs of each seed, each with its own model seed (gives pass^k).
    #[arg(long, default_value_t = 1)]
    pub repeat: u64,
    /// Runs at once (default: the number of cores). On more than one core
    /// they run in as many processes, a job each where the cores allow.
    #[arg(long, value_parser = super::jobs_arg)]
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
    /// Write the campaign's events here as they happen, one JSON object a
    /// line (see docs/cli.md).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above the case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    /// Run one shard of the campaign's seeds (`count:i/n`, `hash:i/n` or
    /// `i/n`); `worldline merge` combines the shards' `--json` reports.
    #[arg(long, value_name = "i/n")]
    pub partition: Option<String>,
    /// Override a key of the case's [model] for every run, e.g.
    /// `--model-set provider=openai` (repeatable).
    #[arg(long = "model-set", value_name = "KEY=VALUE",
          value_parser = worldline_case::case::model::check_override)]
    pub model_set: Vec<String>,
    /// A key of the model that plays a model-played user, e.g.
    /// `--user-model-set provider=openai` (repeatable; see `run`).
    #[arg(long = "user-model-set", value_name = "KEY=VALUE",
          value_parser = worldline_case::case::model::check_override)]
    pub user_model_set: Vec<String>,
    #[command(flatten)]
    pub exec: super::ExecArgs,
    #[command(flatten)]
    pub common: Common,
    /// Be a worker of the campaign this command line starts, running this
    /// many variations at once: read them from stdin, answer on stdout
    /// (decision 0406; started by the campaign itself).
    #[arg(long, value_name = "JOBS", hide = true)]
    pub fuzz_worker: Option<usize>,
}

pub fn exec(args: FuzzArgs) -> Result<ExitCode> {
    let worker = args.fuzz_worker.is_some();
    super::workers::as_worker(worker, |serving| campaign(args, serving))
}

fn campaign(args: FuzzArgs, serving: &mut bool) -> Result<ExitCode> {
    if args.fuzz_worker.is_some() {
        // First, so that a Ctrl-C as it starts does not end it.
        worldline_engine::native::noted_in_a_worker();
    } else {
        // A Ctrl-C before the campaign starts (a compile) is said.
        worldline_engine::native::said_if_ended_early();
    }
    for (flag, n) in [("--runs", args.runs), ("--repeat", args.repeat)] {
        if n == 0 {
            return Err(InputError::new(flag, "must be at least 1").into());
        }
    }
    let mut case = case::load(&args.case, args.worlds.as_deref())?;
    let model = super::ModelArgs {
        set: args.model_set.clone(),
        user_set: args.user_model_set.clone(),
        model_seed: None,
    };
    model.apply(&mut case)?;
    let (profile, from) = profile(&args, &case)?;
    let goal = case.expect.as_ref().is_some_and(|e| e.attack.is_some());
    if args.fuzz_worker.is_none() && !goal && profile.tools.iter().any(|t| t.injection.is_some()) {
        // An attack rate of 0% where the agent did what the text asked:
        // nothing says what reaching the attacker's goal is.
        eprintln!(
            "note: {from} injects text, and the case names no [expect.attack] goal: no attack success rate is measured (add [expect.attack] with the state, calls or output that mean the attack worked)"
        );
    }
    if args.shrink && args.shrink_budget == 0 {
        let m = "0 lets shrinking make no run: give 1 or more, or leave out --shrink";
        return Err(InputError::new("--shrink-budget", m).into());
    }
    super::runs_at_most(
        "--runs times --repeat",
        args.runs.saturating_mul(args.repeat),
    )?;
    let partition = super::partition_arg(args.partition.as_deref())?;
    let store = StoreDir::open(&args.common.store)?;
    store.require_raw("storing a campaign's runs (`fuzz`)")?;
    let jobs = args.fuzz_worker.unwrap_or_else(|| super::jobs(args.jobs));
    let sandbox =
        Sandbox::pooled(Some(store.compile_cache_dir()), jobs)?.on_compile(super::compile_notice());
    let chosen = Choice::of(&args.exec, args.agent.as_deref())?.for_case(&case)?;
    let component;
    let agent: &dyn worldline_engine::run::Runner = match &chosen {
        Chosen::Native(exec) => exec,
        Chosen::Component(path) => {
            component = worldline_engine::agent_file::load(&sandbox, &store, path)?;
            component.as_ref()
        }
    };
    let c = Campaign {
        sandbox: &sandbox,
        agent,
        case: &case,
        faults: FaultSource::Profile(profile.clone()),
        seed: args.seed.unwrap_or(case.seed),
        runs: args.runs,
        repeat: args.repeat,
        jobs,
        keep_all: args.keep_all.then_some(&store),
        partition,
        // A worker is given the command line it was started from, so it
        // keeps them as the campaign does.
        every_fault: args.events.is_some(),
    };
    if args.fuzz_worker.is_some() {
        let (input, output) = (std::io::BufReader::new(std::io::stdin()), std::io::stdout());
        *serving = true;
        c.serve(input, output)?;
        return Ok(ExitCode::Ok);
    }
    store.put_case(&case)?;
    // The world's service compiled before the campaign's clock starts, as
    // the agent is: its compile was counted in the runs' time (19 s of a
    // 10-run campaign's 19 s, "0.53 runs/s"). One that does not load fails
    // each run that needs it, which reports it as a run does.
    if let Some(service) = &case.world.service {
        let _ = sandbox.service(service);
    }
    let total = c.indexes().len() as u64;
    let shares = super::workers::shares(jobs, total);
    let compiled = match &chosen {
        Chosen::Native(_) => None,
        Chosen::Component(_) => Some(agent.sha256()),
    };
    // A first SIGINT or SIGTERM stops the campaign starting runs; those
    // under way end, the report of those made is written and kept, then
    // the signal ends the process (a second ends it at once), as `test`.
    let interrupt = worldline_engine::native::Interrupt::start();
    // What the working folder held as not stored before: the bundles set
    // aside while the campaign ran are the others (its workers' too).
    let unstored = store.unstored();
    let fuzzed = run(
        &args,
        &c,
        || workers(&shares[1..], &c, compiled.as_deref()),
        &store,
        total,
    )?;
    let summary = fuzzed.tally.summary();
    let runs_per_s = summary.runs as f64 / fuzzed.elapsed.as_secs_f64().max(1e-9);
    let doc = FuzzReport {
        agent_sha256: agent.sha256(),
        case: case.name.clone(),
        faults: Faults { from, profile },
        groups: (fuzzed.kept.iter().map(GroupReport::of))
            .chain(fuzzed.unkept.iter().map(GroupReport::unkept))
            .collect(),
        repeat: args.repeat,
        seed: c.seed,
        seeds: args.runs,
        summary,
        timing: Timing {
            elapsed_ms: fuzzed.elapsed.as_secs_f64() * 1000.0,
            runs_per_s,
        },
        world: case.world.reference(),
        partition: partition.map(|p| p.to_string()),
        // `--shrink` too: a group's shrinking comes from the shard that ran
        // its first run, and was lost, unsaid, from a shard without it.
        inputs: partition.map(|_| {
            let shrink = args.shrink.then_some(args.shrink_budget);
            worldline_case::canon::sha256_hex(format!(
                "{}\n--shrink {shrink:?}\n",
                model.inputs_hash([(0, &case)])
            ))
        }),
        tally: partition.map(|_| fuzzed.tally.clone()),
        interrupted: interrupt.signal().map(String::from),
        store_failed: fuzzed.stopped.is_some(),
    };
    let code = render(&args, &store, &doc, (fuzzed.stopped, &unstored));
    interrupt.end();
    code
}

/// The fault profile (`--faults FILE`, else the case's `[fuzz]`) and
/// where it came from.
fn profile(args: &FuzzArgs, case: &case::Case) -> Result<(fuzz::Profile, String)> {
    Ok(match &args.faults {
        Some(path) => (
            fuzz::load_file(path, &case.world, case.user.is_some())?,
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
    })
}

/// Start a worker for each share: this command line again, with
/// `--fuzz-worker JOBS` before any `--` (after which come a native
/// agent's arguments). The world's service is loaded first, so that the
/// workers find it compiled in the store's cache, as they find the agent
/// (`component`, the agent's SHA-256 when it is one). When the cache does
/// not hold both (it cannot be written), every job stays in this process:
/// each worker would compile them again.
fn workers(shares: &[usize], c: &Campaign, component: Option<&str>) -> Result<Vec<Worker<Trial>>> {
    if shares.is_empty() {
        return Ok(Vec::new());
    }
    let mut compiled: Vec<&str> = component.into_iter().collect();
    if let Some(service) = &c.case.world.service {
        // One that does not load fails each run that needs it, which
        // reports it as a run does.
        let _ = c.sandbox.service(service);
        compiled.push(&service.sha256);
    }
    if !compiled.iter().all(|sha256| c.sandbox.cached(sha256)) {
        return Ok(Vec::new());
    }
    let hello = c.hello();
    shares
        .iter()
        .map(|&jobs| {
            let command = super::workers::command("--fuzz-worker", jobs)?;
            Worker::start(command, jobs, "fuzz", &hello)
        })
        .collect()
}

/// Run the campaign with a progress bar and the `--events` lines.
fn run(
    args: &FuzzArgs,
    c: &Campaign,
    workers: impl FnOnce() -> Result<Vec<Worker<Trial>>>,
    store: &StoreDir,
    total: u64,
) -> Result<ops::fuzz::Fuzzed> {
    let bar = super::compile_progress::progress(total, "runs");
    bar.set_message("0 failed");
    let lines = super::compile_progress::event_lines(args.events.as_deref())?;
    let shown = Mutex::new((Progress::default(), lines));
    let shrink_budget = args.shrink.then_some(args.shrink_budget);
    let fuzzed = ops::fuzz::fuzz(
        c,
        workers,
        store,
        shrink_budget,
        args.events.as_deref(),
        &|e, elapsed| {
            let mut shown = shown.lock().expect("reporters lock");
            let (progress, lines) = &mut *shown;
            if let CampaignEvent::Interrupted { signal } = e {
                bar.suspend(|| eprintln!("{}", super::stopping::notice(signal, "runs")));
            }
            if let Some(message) = progress.campaign(e, elapsed) {
                bar.inc(1);
                if !bar.is_hidden() {
                    bar.set_message(message);
                }
            }
            if let CampaignEvent::Finished(_) = e {
                bar.finish_and_clear();
            }
            match lines {
                Some(lines) => lines.campaign(e),
                None => Ok(()),
            }
        },
    );
    bar.finish_and_clear();
    fuzzed
}

/// Keep the report in the store and print it (text or `--json`); exit 1
/// when any run failed. A campaign the store's error stopped (`stopped`:
/// a database store's server gone), or whose report the store does not
/// take, prints its report all the same, then the error and the runs set
/// aside (those `unstored` did not hold before the campaign); exit 2
/// (`"kind": "store"`).
fn render(
    args: &FuzzArgs,
    store: &StoreDir,
    doc: &FuzzReport,
    (mut stopped, unstored): (Option<anyhow::Error>, &BTreeSet<PathBuf>),
) -> Result<ExitCode> {
    let mut value = serde_json::to_value(doc)?;
    // After the store's error, its server is likely away: the report is
    // not offered to it.
    let campaign = match &stopped {
        Some(_) => None,
        None => match worldline_store::campaigns::save(store, &value) {
            Ok(campaign) => Some(campaign),
            Err(e) if store.failed(&e) => {
                stopped = Some(e);
                None
            }
            Err(e) => return Err(e),
        },
    };
    let mut set_aside = store.set_aside();
    for path in store.unstored().difference(unstored) {
        if !set_aside.contains(path) {
            set_aside.push(path.clone());
        }
    }
    if args.common.json {
        // Which kept campaign it is, as the text's stderr line says (the
        // report kept has no id of its own: its file is named by it).
        if let Some(campaign) = &campaign {
            value["campaign"] = campaign.clone().into();
        }
        if let Some(err) = &stopped {
            super::store_failed::add_to_json(&mut value, err, &set_aside);
        }
        super::print_json_with_settings(&value)?;
    } else {
        worldline_report::fuzz::write(&mut super::human_out(), doc)?;
    }
    if let Some(err) = &stopped {
        eprintln!("the campaign's report was not kept in the store: the store's error follows");
        let again = "run the campaign again for the reproducers it did not keep";
        return Ok(super::store_failed::report(err, &set_aside, again));
    }
    if let Some(campaign) = &campaign {
        eprintln!("campaign {campaign} kept in the store (worldline ui shows it)");
    }
    Ok(if doc.summary.failed == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
