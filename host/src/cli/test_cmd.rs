//! `worldline test CASES... --agent A.wasm` (or `--exec -- CMD ARGS...`): run a suite in parallel, one
//! line per case (with its run id) and a summary; exit 1 when any case
//! fails; JUnit XML for CI. Selection (`--filter`, `--rerun-failed`,
//! `--partition`, `--limit`, `--list`), repeats and `--fail-fast` as in
//! pytest and cargo-nextest. `--resume` resumes the selected cases'
//! incomplete runs instead (`resume.rs`).

mod resume;

use super::agent_choice::{self, Choice, Chosen, PerCase};
use super::{Common, ExecArgs, ModelArgs};
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;
use worldline_case::case::{self, discover};
use worldline_case::error::InputError;
use worldline_engine::suite::pick::{self, Picked, Selected, Selection};
use worldline_engine::suite::{Entry, Suite, SuiteEvent, last};
use worldline_report::events::{Human, Junit, Lines, Progress};
use worldline_report::suite::{Shard, SuiteSummary};
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct TestArgs {
    /// Case files, or folders searched for `*.toml` cases (default: `cases`
    /// in worldline.toml).
    pub cases: Vec<PathBuf>,
    /// The agent component (.wasm; default: each case's `exec`, else
    /// `agent` or `exec` in worldline.toml); `--list` needs none.
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// Folder holding the worlds (default: the nearest `worlds/` above each case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write the suite's events here as they happen, one JSON object a
    /// line (see docs/cli.md).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
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
    /// On a database store, the name a shard's report is kept under for
    /// `merge --suite` (default: the start of the selection's hash, the
    /// same in every shard; give the CI pipeline's id to keep runs of one
    /// suite apart).
    #[arg(long, value_name = "ID", requires = "partition")]
    pub suite_id: Option<String>,
    /// Run at most this many of the selected cases.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Stop starting cases after the first that does not pass.
    #[arg(long)]
    pub fail_fast: bool,
    /// Print the cases that would run, and run nothing.
    #[arg(long)]
    pub list: bool,
    /// Resume every incomplete run (killed: no footer) in the store of the
    /// selected cases, as `worldline resume` does, instead of running them.
    #[arg(long, conflicts_with_all = ["list", "repeat", "rerun_failed", "junit", "events"])]
    pub resume: bool,
    /// Run each case this many times, each with its own model seed; report
    /// each case's pass rate and the suite's pass^k.
    #[arg(long, default_value_t = 1)]
    pub repeat: u64,
    /// Run each case as a group of K rollouts for training (GRPO-style):
    /// every member with its own recorded model seed, the group recorded
    /// in each run and exported with pass@k and pass^k.
    #[arg(long, value_name = "K", conflicts_with_all = ["repeat", "model_seed"])]
    pub group: Option<u64>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
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

/// The cases the arguments select, the collection errors, and the
/// partition; `read` reads a case file (its world's reference and tags
/// beside what it gives).
fn select<T>(
    args: &TestArgs,
    store: &StoreDir,
    read: impl Fn(&std::path::Path) -> Result<(T, String, Vec<String>), InputError>,
) -> Result<Selected<T>> {
    let selection = Selection {
        filter: args.filter.as_deref().map(pick::filter).transpose()?,
        partition: super::partition_arg(args.partition.as_deref())?,
        failed: match args.rerun_failed {
            true => Some(last::failed(store)?.into_iter().collect()),
            false => None,
        },
        limit: args.limit,
    };
    Ok(pick::pick(
        discover::expand(&args.cases)?,
        &selection,
        read,
    )?)
}

fn print_list<T>(entries: &[Picked<T>], json: bool) -> Result<()> {
    let listed: Vec<Listed> = entries
        .iter()
        .map(|e| Listed {
            index: e.index,
            name: &e.name,
            path: e.path.display().to_string(),
            tags: &e.tags,
            world: e.world.clone(),
        })
        .collect();
    if json {
        return super::print_json(&listed);
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

pub fn exec(mut args: TestArgs) -> Result<ExitCode> {
    let mut supplied = super::project_args::supplied();
    if args.cases.is_empty() {
        match super::project_args::project() {
            Some(p) if !p.cases.is_empty() => {
                args.cases = p.cases.clone();
                let shown: Vec<String> = p.cases.iter().map(|c| c.display().to_string()).collect();
                supplied = super::project_args::note("cases", shown.join(", "));
            }
            _ => {
                return Err(InputError::new(
                    "test",
                    "no cases given: name case files or folders, or set `cases` in worldline.toml",
                )
                .into());
            }
        }
    }
    if args.repeat == 0 {
        return Err(InputError::new("--repeat", "must be at least 1").into());
    }
    if args.group == Some(0) {
        return Err(InputError::new("--group", "must be at least 1").into());
    }
    let store = StoreDir::open(&args.common.store)?;
    let worlds = args.worlds.as_deref();
    if args.list {
        // Listing reads the case files and each world's world.toml only.
        let selected = select(&args, &store, |path| {
            let h = case::header(path, worlds)?;
            Ok(((), h.world, h.tags))
        })?;
        print_list(&selected.entries, args.common.json)?;
        for e in &selected.broken {
            eprintln!("error collecting {e}");
        }
        return Ok(if selected.broken.is_empty() {
            ExitCode::Ok
        } else {
            ExitCode::Input
        });
    }
    let choice = Choice::of(&args.exec, args.agent.as_deref())?;
    let Selected {
        entries,
        broken,
        sharded,
    } = select(&args, &store, |path| {
        let case = case::load(path, worlds)?;
        let (world, tags) = (case.world.reference(), case.tags.clone());
        Ok((case, world, tags))
    })?;
    let entries = entries
        .into_iter()
        .map(|p| {
            let mut case = p.read;
            args.model.apply(&mut case)?;
            Ok(Entry {
                index: p.index,
                name: p.name,
                path: p.path,
                case,
            })
        })
        .collect::<Result<Vec<Entry>>>()?;
    let shard = sharded.map(|(p, all)| {
        Shard::of(
            p.to_string(),
            all.iter().map(|(index, name)| (*index, name.as_str())),
        )
    });
    if args.resume {
        for e in &broken {
            eprintln!("error collecting {e}");
        }
        let code = resume::exec(&store, &entries, args.common.json)?;
        return Ok(if broken.is_empty() {
            code
        } else {
            ExitCode::Input
        });
    }
    // Nothing names an agent, and no case its own (or none loaded).
    if !choice.names_an_agent() && entries.iter().all(|e| e.case.exec.command.is_empty()) {
        return Err(InputError::new("--agent", agent_choice::NO_AGENT).into());
    }
    // Each case's agent: the one component the cases that run one share.
    let mut component: Option<PathBuf> = None;
    for e in &entries {
        if let Chosen::Component(path) = choice.for_case(&e.case)? {
            component = Some(path);
        }
    }
    let component = component.as_deref();
    let bar = super::compile_progress::progress(entries.len() as u64, "cases");
    if let Some(agent) = component {
        bar.set_message(format!("loading {}", agent.display()));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let loaded = super::preload::load(&store, component, &entries, &bar)?;
    let sandbox = &loaded.sandbox;
    let per_case = PerCase {
        choice: &choice,
        component: loaded.agent.as_deref(),
    };
    let agent: &dyn worldline_engine::run::Runner = &per_case;
    for e in &entries {
        store.put_case(&e.case)?;
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    bar.set_message("0 failed");
    let lines = match &args.events {
        Some(path) => Some(Lines(std::io::BufWriter::new(
            worldline_case::output::create(path)?,
        ))),
        None => None,
    };
    let shown = Mutex::new(Shown {
        progress: Progress::default(),
        lines,
        error: None,
    });
    let done = Suite {
        sandbox,
        agent,
        cases: &entries,
        store: &store,
        model_seed: args.model.model_seed,
        repeat: args.group.unwrap_or(args.repeat),
        group: args.group.is_some(),
        jobs,
        fail_fast: args.fail_fast,
        collection_errors: &broken,
        compiles: &loaded.compiles,
    }
    .run(&|e| {
        let mut shown = shown.lock().expect("reporters lock");
        if let Some(message) = shown.progress.suite(&e) {
            bar.inc(1);
            bar.set_message(message);
        }
        if let Some(lines) = &mut shown.lines
            && let Err(err) = lines.suite(&e)
        {
            shown.error.get_or_insert(err);
        }
    });
    bar.finish_and_clear();
    let done = done?;
    if let (Some(path), Some(err)) = (
        &args.events,
        shown.into_inner().expect("reporters lock").error,
    ) {
        return Err(InputError::new(path, format!("cannot write: {err}")).into());
    }
    token_warnings(&entries, &done);
    last::record(&store, &done)?;

    let finished = SuiteEvent::Finished(&done);
    if let Some(path) = &args.junit {
        let mut junit = Junit(Vec::new());
        junit.event(&finished)?;
        worldline_case::output::write(path, &junit.0)?;
    }
    if let Some(shard) = &shard
        && store.database().is_some()
    {
        let mut summary = SuiteSummary::of(&done);
        summary.shard = Some(shard.clone());
        let suite = args
            .suite_id
            .clone()
            .unwrap_or_else(|| shard.selection[..12.min(shard.selection.len())].to_string());
        store.put_shard(
            &suite,
            &shard.partition,
            &shard.selection,
            &serde_json::to_value(&summary)?,
        )?;
        eprintln!(
            "shard {} of suite {suite} kept in {} (`worldline merge --suite {suite}` combines the shards)",
            shard.partition,
            store.name()
        );
    }
    if args.common.json {
        let mut summary = SuiteSummary::of(&done);
        summary.shard = shard;
        super::print_json_supplied(&summary, supplied)?;
    } else {
        Human {
            out: std::io::stdout().lock(),
            err: std::io::stderr(),
        }
        .event(&finished)?;
    }
    Ok(if !done.collection_errors.is_empty() {
        ExitCode::Input
    } else if done.failed() == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}

/// What the suite's sink feeds as it runs: the bar's message, the
/// `--events` lines, and the first error writing them.
struct Shown {
    progress: Progress,
    lines: Option<Lines<std::io::BufWriter<std::fs::File>>>,
    error: Option<std::io::Error>,
}

/// One warning line per case that asked for token ids (`[model]
/// token_ids`) and got runs whose endpoint returned none (the first such
/// run's count), as `run` prints it.
fn token_warnings(entries: &[Entry], done: &worldline_engine::suite::SuiteRun) {
    for case in &done.cases {
        let Some(entry) = entries.iter().find(|e| e.index == case.index) else {
            continue;
        };
        if !entry.case.model.token_ids {
            continue;
        }
        let missing = case.attempts.iter().find_map(|a| {
            let o = a.outcome.as_ref().ok()?;
            worldline_log::log::tokens::missing(&o.events)
        });
        if let Some(w) = missing {
            eprintln!("warning: {}: {w}", entry.case.path.display());
        }
    }
}
