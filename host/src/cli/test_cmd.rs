//! `worldline test CASES... --agent A.wasm`: run a suite in parallel, one
//! line per case (with its run id) and a summary; exit 1 when any case
//! fails; JUnit XML for CI. Selection (`--filter`, `--rerun-failed`,
//! `--partition`, `--limit`, `--list`), repeats and `--fail-fast` as in
//! pytest and cargo-nextest.

use super::{Common, ModelArgs};
use crate::case::{self, discover};
use crate::error::{ExitCode, InputError};
use crate::report::{
    self,
    suite::{Shard, SuiteSummary},
};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use crate::suite::select::{Candidate, Filter};
use crate::suite::{Entry, Suite, last};
use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Args)]
pub struct TestArgs {
    /// Case files, or folders searched for `*.toml` cases.
    #[arg(required = true)]
    pub cases: Vec<PathBuf>,
    /// The agent component (.wasm).
    #[arg(long)]
    pub agent: PathBuf,
    /// Folder holding the worlds (default: the nearest `worlds/` above each case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Cases run at once (default: the number of cores). May exceed the
    /// cores when runs wait on a model endpoint.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Run only the cases this expression selects: words match part of the
    /// case name; `tag:T`, `world:W`, `path:P`, `name:N` take `*` globs;
    /// combine with `and`, `or`, `not` and parentheses.
    #[arg(long, short = 'k', value_name = "EXPR")]
    pub filter: Option<String>,
    /// Run only the cases that did not pass in the last `test` on this store.
    #[arg(long)]
    pub rerun_failed: bool,
    /// Run one shard of the selection: `count:i/n` (every n-th case),
    /// `hash:i/n` (by case name), or `i/n` for count.
    #[arg(long, value_name = "i/n")]
    pub partition: Option<String>,
    /// Run at most this many of the selected cases.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Stop starting cases after the first that does not pass.
    #[arg(long)]
    pub fail_fast: bool,
    /// Print the cases that would run, and run nothing.
    #[arg(long)]
    pub list: bool,
    /// Run each case this many times, each with its own model seed; report
    /// each case's pass rate and the suite's pass^k.
    #[arg(long, default_value_t = 1)]
    pub repeat: u64,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub common: Common,
}

/// One line of `--list --json`.
#[derive(Serialize)]
struct Listed<'a> {
    index: usize,
    name: &'a str,
    path: String,
    tags: &'a [String],
    world: String,
}

/// The cases the arguments select, in suite order.
/// The cases to run, and with `--partition` which shard of which
/// selection they are.
fn select(args: &TestArgs, store: &StoreDir) -> Result<(Vec<Entry>, Option<Shard>)> {
    let filter = args
        .filter
        .as_deref()
        .map(Filter::parse)
        .transpose()
        .map_err(|m| InputError::new("--filter", m))?;
    let partition = super::partition_arg(args.partition.as_deref())?;
    let failed: Option<BTreeSet<PathBuf>> = match args.rerun_failed {
        true => Some(last::failed(store)?.into_iter().collect()),
        false => None,
    };
    let mut entries = Vec::new();
    for (index, path) in discover::expand(&args.cases)?.into_iter().enumerate() {
        let name = discover::display_name(&path);
        let mut case = case::load(&path, args.worlds.as_deref())?;
        if failed
            .as_ref()
            .is_some_and(|f| !f.contains(&last::key(&path)))
        {
            continue;
        }
        let shown = path.display().to_string();
        let world = case.world.reference();
        let selected = filter.as_ref().is_none_or(|f| {
            f.matches(&Candidate {
                name: &name,
                path: &shown,
                world: &world,
                tags: &case.tags,
            })
        });
        if !selected {
            continue;
        }
        args.model.apply(&mut case)?;
        entries.push(Entry {
            index,
            name,
            path,
            case,
        });
    }
    let shard = partition.map(|p| {
        Shard::of(
            p.to_string(),
            entries.iter().map(|e| (e.index, e.name.as_str())),
        )
    });
    if let Some(p) = partition {
        entries = entries
            .into_iter()
            .enumerate()
            .filter(|(k, e)| p.contains(*k, &e.name))
            .map(|(_, e)| e)
            .collect();
    }
    if let Some(n) = args.limit {
        entries.truncate(n);
    }
    Ok((entries, shard))
}

fn print_list(entries: &[Entry], json: bool) -> Result<()> {
    let listed: Vec<Listed> = entries
        .iter()
        .map(|e| Listed {
            index: e.index,
            name: &e.name,
            path: e.path.display().to_string(),
            tags: &e.case.tags,
            world: e.case.world.reference(),
        })
        .collect();
    if json {
        return report::print_json(&listed);
    }
    for l in &listed {
        let tags = match l.tags.is_empty() {
            true => String::new(),
            false => format!("  [{}]", l.tags.join(", ")),
        };
        println!("{}  {}{tags}", l.name, l.world);
    }
    println!("{} case(s)", listed.len());
    Ok(())
}

/// A spinner, then a progress bar, on stderr when it is a terminal.
fn progress(total: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{bar:24} {pos}/{len} cases  {msg}  {elapsed}")
            .expect("the progress template is valid"),
    );
    bar
}

pub fn exec(args: TestArgs) -> Result<ExitCode> {
    if args.repeat == 0 {
        return Err(InputError::new("--repeat", "must be at least 1").into());
    }
    let store = StoreDir::open(&args.common.store)?;
    let (entries, shard) = select(&args, &store)?;
    if args.list {
        print_list(&entries, args.common.json)?;
        return Ok(ExitCode::Ok);
    }
    let bar = progress(entries.len() as u64);
    bar.set_message(format!(
        "loading {} (compiled on the first run of a build)",
        args.agent.display()
    ));
    bar.enable_steady_tick(Duration::from_millis(200));
    let sandbox = Sandbox::new(Some(store.cache_dir()))?;
    let agent = crate::agent_file::load(&sandbox, &store, &args.agent)?;
    for e in &entries {
        store.put_case(&e.case)?;
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    bar.set_message("0 failed");
    let failures = AtomicU64::new(0);
    let done = Suite {
        sandbox: &sandbox,
        agent: &agent,
        cases: &entries,
        store: &store,
        model_seed: args.model.model_seed,
        repeat: args.repeat,
        jobs,
        fail_fast: args.fail_fast,
    }
    .run(&|c| {
        let failed = !c.skipped() && !c.passed();
        let n = failures.fetch_add(u64::from(failed), Ordering::Relaxed) + u64::from(failed);
        bar.inc(1);
        bar.set_message(format!("{n} failed"));
    });
    bar.finish_and_clear();
    let done = done?;
    last::record(&store, &done)?;

    if let Some(path) = &args.junit {
        std::fs::write(path, report::junit::render(&done)?)
            .map_err(|e| InputError::new(path, format!("cannot write JUnit report: {e}")))?;
    }
    if args.common.json {
        let mut summary = SuiteSummary::of(&done);
        summary.shard = shard;
        report::print_json(&summary)?;
    } else {
        report::suite::print(&done);
    }
    Ok(if done.failed() == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
