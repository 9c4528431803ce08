//! `worldline test CASES... --agent A.wasm` (or `--exec -- CMD ARGS...`): run a suite in parallel, one
//! line per case (with its run id) and a summary; exit 1 when any case
//! fails; JUnit XML for CI. Selection (`--filter`, `--rerun-failed`,
//! `--partition`, `--limit`, `--list`), repeats and `--fail-fast` as in
//! pytest and cargo-nextest. `--resume` resumes the selected cases'
//! incomplete runs instead (`resume.rs`).

mod resume;

use super::agent_choice::{self, Choice, Chosen, PerCase};
use super::preload;
use super::project_args::Supplied;
use super::{Common, ExecArgs, ModelArgs};
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use indicatif::ProgressBar;
use serde::Serialize;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;
use worldline_case::ahead;
use worldline_case::case::{self, discover};
use worldline_case::error::InputError;
use worldline_case::shown::Escaped;
use worldline_engine::native::Interrupt;
use worldline_engine::ops;
use worldline_engine::suite::pick::{self, Picked, Selected, Selection};
use worldline_engine::suite::{Entry, Suite, SuiteEvent, SuiteRun, last};
use worldline_report::events::{Human, Junit, Progress};
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
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above each case).
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
    #[arg(long, value_parser = super::jobs_arg)]
    pub jobs: Option<usize>,
    /// Run only the cases this expression selects: words match part of the
    /// case name (without regard to case); `tag:T`, `world:W`, `path:P`, `name:N` take `*` globs;
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
    /// Print the cases that would run, and run nothing (no report to
    /// write: `--junit` and `--events` with it are refused; they wrote
    /// nothing, unsaid).
    #[arg(long, conflicts_with_all = ["junit", "events"])]
    pub list: bool,
    /// Resume every incomplete run (killed: no footer) in the store of the
    /// selected cases, as `worldline resume` does, instead of running them.
    /// `--fail-fast` and `--model-seed` are refused with it: a resumed run
    /// goes on with its recorded seed, and every one is resumed.
    #[arg(long, conflicts_with_all = ["list", "repeat", "group", "rerun_failed", "junit", "events", "fail_fast", "model_seed"])]
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

/// `--list --json`: the cases, and the files that could not be read, as
/// `test --json` names them (a bare list of the cases, exit 2, left a
/// script to learn why from stderr).
#[derive(Serialize)]
struct Listing<'a> {
    cases: Vec<Listed<'a>>,
    collection_errors: Vec<worldline_report::check::Problem>,
}

/// One case of `--list --json`.
#[derive(Serialize)]
struct Listed<'a> {
    index: usize,
    name: &'a str,
    path: String,
    tags: &'a [String],
    world: String,
}

/// The cases the arguments select, the collection errors, and the
/// partition; `read` reads a case file (see [`pick::Read`]).
fn select<T: Send>(
    args: &TestArgs,
    store: &StoreDir,
    read: impl Fn(&std::path::Path) -> pick::Read<T> + Sync,
) -> Result<Selected<T>> {
    let paths = discover::expand(&args.cases)?;
    let selection = Selection {
        filter: args.filter.as_deref().map(pick::filter).transpose()?,
        partition: super::partition_arg(args.partition.as_deref())?,
        failed: match args.rerun_failed {
            true => {
                let failed: std::collections::BTreeSet<_> =
                    last::failed(store)?.into_iter().collect();
                // pytest's `--lf` with no known failure among the cases
                // selected (`--lfnf=all`): it ran nothing and passed.
                let why = match () {
                    _ if failed.is_empty() => {
                        Some("the last test on this store left no case that did not pass")
                    }
                    _ if !paths.iter().any(|p| failed.contains(&last::key(p))) => Some(
                        "none of the cases the last test on this store left failing is among those selected",
                    ),
                    _ => None,
                };
                match why {
                    Some(why) => {
                        eprintln!("note: --rerun-failed: {why}; running every selected case");
                        None
                    }
                    None => Some(failed),
                }
            }
            false => None,
        },
        limit: args.limit,
    };
    Ok(pick::pick(paths, &selection, read)?)
}

fn print_list<T>(entries: &[Picked<T>], broken: &[InputError], json: bool) -> Result<()> {
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
        return super::print_json(&Listing {
            cases: listed,
            collection_errors: broken
                .iter()
                .map(worldline_report::check::Problem::of)
                .collect(),
        });
    }
    let mut out = super::human_out();
    for l in &listed {
        let tags = match l.tags.is_empty() {
            true => String::new(),
            false => format!("  [{}]", l.tags.join(", ")),
        };
        writeln!(out, "{}  {}{tags}", l.name, l.world)?;
    }
    writeln!(out, "{} case(s)", listed.len())?;
    Ok(())
}

pub fn exec(mut args: TestArgs) -> Result<ExitCode> {
    // A Ctrl-C before the suite starts (reading the cases, a compile) is
    // said, as `fuzz` says it (`test` ended without a word).
    worldline_engine::native::said_if_ended_early();
    let supplied = default_cases(&mut args)?;
    if args.limit == Some(0) {
        // As a filter that selects nothing is: not a suite that passed.
        return Err(InputError::new(
            "--limit",
            "0 runs no case: give at least 1, or leave it out",
        )
        .into());
    }
    super::runs_at_most("--repeat", args.repeat)?;
    if let Some(k) = args.group {
        super::runs_at_most("--group", k)?;
    }
    let store = StoreDir::open(&args.common.store)?;
    if args.list {
        return list(&args, &store);
    }
    // A viewer stores no run: refused before any runs (they were run,
    // refused one by one, and left in its folder as the store's).
    store.require_raw("storing runs (`test`)")?;
    check_reports(&args)?;
    let choice = Choice::of(&args.exec, args.agent.as_deref())?;
    let worlds = args.worlds.as_deref();
    let bar = super::compile_progress::progress(0, "cases");
    let (selected, early) = std::thread::scope(|s| {
        // The agent the command line names is loaded while the cases are
        // read (decision 0400), or after them here when the other thread
        // has not begun by then (decision 0407).
        let early = (choice.every_case_component())
            .filter(|_| !args.resume)
            .map(|agent| {
                let (store, bar, jobs) = (&store, &bar, super::jobs(args.jobs));
                ahead::spawn(s, move || preload::start(store, Some(agent), bar, jobs))
            });
        let selected = worldline_case::world::one_pass(|| {
            // Each world the cases share checked once (decision 0394).
            select(&args, &store, |path| match case::load(path, worlds) {
                Ok(case) => {
                    let (world, tags) = (case.world.reference(), case.tags.clone());
                    Ok((Ok(case), world, tags))
                }
                // Its world and tags read from the case file and world.toml
                // alone, as `--list` reads them: a case the selection
                // leaves out is no error of the suite (a `-k` that left out
                // the cases of a world whose service was not built failed
                // the suite once for each of them), one it selects is.
                Err(e) => match case::header(path, worlds) {
                    Ok(h) => Ok((Err(e), h.world, h.tags)),
                    Err(_) => Err(e),
                },
            })
        });
        let early = early.map(ahead::Ahead::take);
        (selected, early)
    });
    let Selected {
        entries,
        mut broken,
        sharded,
        others,
    } = selected?;
    let inputs = sharded
        .as_ref()
        .map(|_| inputs_hash(&entries, &others, &args.model));
    let mut entries = entries
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
    if args.resume {
        collection_errors(&broken);
        let code = resume::exec(&store, &entries, args.common.json)?;
        return Ok(if broken.is_empty() {
            code
        } else {
            ExitCode::Input
        });
    }
    let loaded = load(
        &args,
        &store,
        &choice,
        (&mut entries, &mut broken),
        &bar,
        early,
    )?;
    // A first SIGINT or SIGTERM stops the suite starting cases; those
    // under way end, the report is written, then the signal ends the
    // process (a second ends it at once), as in nextest and pytest. Not
    // caught before: one that comes while the cases are read or the agent
    // and the services compile ends the process at once (it was noted,
    // and the process waited out their compile, minutes for a Python
    // service, to report no case run).
    let interrupt = Interrupt::start();
    let (done, human) = run(&args, &store, &choice, (&entries, &broken), &loaded, bar)?;
    drop(loaded);
    let shard = sharded.map(|(p, all)| Shard {
        agent: one_agent(&done),
        inputs,
        ..Shard::of(
            p.to_string(),
            all.iter().map(|(index, name)| (*index, name.as_str())),
        )
    });
    let code = render(&args, &store, (&done, human), shard, supplied);
    interrupt.end();
    // The cases and their results, values only, are left to the process's
    // end (decisions 0395, 0398), as a fork's are.
    std::mem::forget(entries);
    std::mem::forget(done);
    code
}

/// What every shard of a suite must have been given alike (merge compares
/// it): each selected case file's hash and its world's in suite order,
/// and the model flags.
fn inputs_hash(
    mine: &[Picked<case::Case>],
    others: &[Picked<case::Case>],
    model: &ModelArgs,
) -> String {
    let mut cases: Vec<&Picked<case::Case>> = mine.iter().chain(others).collect();
    cases.sort_by_key(|p| p.index);
    model.inputs_hash(cases.iter().map(|p| (p.index, &p.read)))
}

/// The agent every run of the suite ran (its SHA-256), when they all ran
/// one.
fn one_agent(done: &SuiteRun) -> Option<String> {
    let mut agents = (done.cases.iter())
        .flat_map(|c| &c.attempts)
        .filter_map(|a| a.outcome.as_ref().ok())
        .map(|o| o.header.agent_sha256.as_str());
    let first = agents.next()?;
    agents.all(|a| a == first).then(|| first.to_string())
}

/// With no cases named, worldline.toml's `cases` (and the note saying
/// so), else a usage error.
fn default_cases(args: &mut TestArgs) -> Result<Supplied> {
    if !args.cases.is_empty() {
        return Ok(super::project_args::supplied());
    }
    match super::project_args::project() {
        Some(p) if !p.cases.is_empty() => {
            if let Some(err) = p.missing_case() {
                return Err(err.into());
            }
            args.cases = p.cases.clone();
            let shown: Vec<String> = p.cases.iter().map(|c| c.display().to_string()).collect();
            Ok(super::project_args::note("cases", shown.into()))
        }
        p => Err(p
            .and_then(|p| p.empty_cases())
            .unwrap_or_else(|| {
                InputError::new(
                    "test",
                    "no cases given: name case files or folders, or set `cases` in worldline.toml",
                )
            })
            .into()),
    }
}

/// `--list`: the selected cases, reading the case files and each world's
/// world.toml only.
fn list(args: &TestArgs, store: &StoreDir) -> Result<ExitCode> {
    let worlds = args.worlds.as_deref();
    let selected = select(args, store, |path| {
        let h = case::header(path, worlds)?;
        Ok((Ok(()), h.world, h.tags))
    })?;
    print_list(&selected.entries, &selected.broken, args.common.json)?;
    collection_errors(&selected.broken);
    Ok(if selected.broken.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Input
    })
}

fn collection_errors(broken: &[InputError]) {
    for e in broken {
        eprintln!(
            "error collecting {}",
            worldline_case::shown::message(&e.to_string())
        );
    }
}

/// Refuse `--junit` and `--events` paths that cannot be written, or
/// name one file: before anything is read or loaded (they were refused
/// after the agent and the services compiled, minutes for a Python one).
fn check_reports(args: &TestArgs) -> Result<()> {
    for path in [&args.junit, &args.events].into_iter().flatten() {
        worldline_case::output::check_file(path)?;
    }
    if let (Some(junit), Some(events)) = (&args.junit, &args.events)
        && std::path::absolute(junit).ok() == std::path::absolute(events).ok()
    {
        return Err(InputError::new(
            junit,
            "is named by both --junit and --events: each writes a file of its own; give them two paths",
        )
        .into());
    }
    Ok(())
}

/// Refuse a report that would replace a case of the suite, its agent
/// (`component`), the project file, or anything in a world the suite
/// runs on: once the cases are read, before the agent is loaded.
fn check_reports_apart(
    args: &TestArgs,
    entries: &[Entry],
    component: Option<&std::path::Path>,
) -> Result<()> {
    let project = std::env::current_dir()
        .ok()
        .and_then(|d| worldline_case::project::find(&d));
    let inputs: Vec<&std::path::Path> = (entries.iter())
        .map(|e| e.path.as_path())
        .chain(component)
        .chain(project.as_deref())
        .collect();
    let worlds: std::collections::BTreeSet<&std::path::Path> =
        entries.iter().map(|e| e.case.world.dir.as_path()).collect();
    for path in [&args.junit, &args.events].into_iter().flatten() {
        let what = "a case of the suite, its agent, or the project file";
        worldline_case::output::check_not_input(path, inputs.iter().copied(), what)?;
        let what = "the folder of a world the suite runs on";
        worldline_case::output::check_not_inside(path, worlds.iter().copied(), what)?;
    }
    Ok(())
}

/// Load the agent the cases run with and their worlds' services, showing
/// progress on `bar`. `early`: the agent loaded while the cases were
/// read, if it was. The cases of a world whose service is refused move to
/// the collection errors.
fn load(
    args: &TestArgs,
    store: &StoreDir,
    choice: &Choice,
    (entries, broken): (&mut Vec<Entry>, &mut Vec<InputError>),
    bar: &ProgressBar,
    early: Option<Result<preload::Started>>,
) -> Result<preload::Loaded> {
    let component = component(choice, entries)?;
    let component = component.as_deref();
    check_reports_apart(args, entries, component)?;
    bar.set_length(entries.len() as u64);
    if let Some(agent) = component {
        bar.set_message(format!("loading {}", agent.display()));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    // The early load is used only when a case runs the agent it loaded
    // (its error too: a suite of no loadable case reports no agent's).
    let started = match early {
        Some(Ok(s)) if s.agent_path.as_deref() == component => s,
        Some(Err(e)) if component.is_some() => return Err(e),
        _ => preload::start(store, component, bar, super::jobs(args.jobs))?,
    };
    let (loaded, refused) = started.services(entries);
    entries.retain(|e| match refused.get(&e.case.world.reference()) {
        Some(refusal) => {
            broken.push(worldline_engine::suite::pick::of_case(
                &e.path,
                refusal.clone(),
            ));
            false
        }
        None => true,
    });
    bar.set_length(entries.len() as u64);
    Ok(loaded)
}

/// Run the selected cases with the agents `loaded`, showing progress on
/// `bar` and writing `--events` as they go; the token-id warnings after.
fn run(
    args: &TestArgs,
    store: &StoreDir,
    choice: &Choice,
    (entries, broken): (&[Entry], &[InputError]),
    loaded: &preload::Loaded,
    bar: ProgressBar,
) -> Result<(SuiteRun, Option<HumanReport>)> {
    let per_case = PerCase {
        choice,
        component: loaded.agent.as_deref(),
    };
    let suite = Suite {
        sandbox: &loaded.sandbox,
        agent: &per_case,
        cases: entries,
        store,
        model_seed: args.model.model_seed,
        repeat: args.group.unwrap_or(args.repeat),
        group: args.group.is_some(),
        jobs: super::jobs(args.jobs),
        fail_fast: args.fail_fast,
        collection_errors: broken,
        compiles: &loaded.compiles,
    };
    bar.set_message("0 failed");
    let lines = super::compile_progress::event_lines(args.events.as_deref())?;
    // The text report's case lines are written as the cases' runs reach
    // the disk; `--json` writes its document at the end.
    let human = (!args.common.json).then(|| {
        let cases = entries.iter().map(|e| (e.index, e.name.as_str()));
        let err = Escaped::new(std::io::stderr());
        Human::new(Escaped::new(std::io::stdout()), err, cases)
    });
    let shown = Mutex::new((Progress::default(), lines, human));
    let tested = ops::test::test(&suite, args.events.as_deref(), &|e| {
        let mut shown = shown.lock().expect("reporters lock");
        let (progress, lines, human) = &mut *shown;
        if let SuiteEvent::Interrupted { signal } = e {
            bar.suspend(|| eprintln!("{}", super::stopping::notice(signal, "cases")));
        }
        if let Some(message) = progress.suite(e) {
            bar.inc(1);
            bar.set_message(message);
        }
        // Its write errors are the report's, said at its end (`render`).
        match (human, e) {
            (Some(human), SuiteEvent::OnDisk { .. }) => {
                let _ = bar.suspend(|| human.event(e));
            }
            (Some(human), SuiteEvent::CaseFinished(_)) => {
                let _ = human.event(e);
            }
            _ => {}
        }
        match lines {
            Some(lines) => lines.suite(e),
            None => Ok(()),
        }
    });
    bar.finish_and_clear();
    let tested = tested?;
    for (path, warning) in &tested.token_warnings {
        eprintln!("warning: {}: {warning}", path.display());
    }
    let human = shown.into_inner().expect("reporters lock").2;
    Ok((tested.run, human))
}

/// The text report as `test` writes it: stdout's characters escaped, a
/// write at a time (the lines are written from the suite's threads).
type HumanReport = Human<Escaped<std::io::Stdout>, Escaped<std::io::Stderr>>;

/// The one component the cases that run one share (each case's agent is
/// it or the case's own `exec`); a usage error when nothing names an
/// agent and no case its own (or none loaded).
fn component(choice: &Choice, entries: &[Entry]) -> Result<Option<PathBuf>> {
    if !choice.names_an_agent() && entries.iter().all(|e| e.case.exec.command.is_empty()) {
        return Err(InputError::new("--agent", agent_choice::NO_AGENT).into());
    }
    let mut component: Option<PathBuf> = None;
    for e in entries {
        if let Chosen::Component(path) = choice.for_case(&e.case)? {
            component = Some(path);
        }
    }
    Ok(component)
}

/// The JUnit file, a shard's report kept on a database store, and the
/// summary (text or `--json`); the exit code.
fn render(
    args: &TestArgs,
    store: &StoreDir,
    (done, human): (&SuiteRun, Option<HumanReport>),
    shard: Option<Shard>,
    supplied: Supplied,
) -> Result<ExitCode> {
    let finished = SuiteEvent::Finished(done);
    if let Some(path) = &args.junit {
        let mut junit = Junit(Vec::new());
        junit.event(&finished)?;
        worldline_case::output::write(path, &junit.0)?;
    }
    // A suite the store's error stopped keeps no shard report: it is not
    // the shard's (and the server is likely away).
    if let Some(shard) = &shard
        && store.database().is_some()
        && done.stopped.is_none()
    {
        keep_shard(args, store, done, shard)?;
    }
    if args.common.json {
        let mut summary = SuiteSummary::of(done);
        summary.shard = shard;
        let mut doc = serde_json::to_value(&summary)?;
        // The runs made, and the error that stopped the suite.
        if let Some(err) = &done.stopped {
            super::store_failed::add_to_json(&mut doc, err, &done.set_aside);
        }
        super::print_json_supplied(&doc, supplied)?;
    } else if let Some(mut human) = human {
        human.event(&finished)?;
    }
    if let Some(err) = &done.stopped {
        let again = "run the cases of the others again";
        return Ok(super::store_failed::report(err, &done.set_aside, again));
    }
    Ok(if !done.collection_errors.is_empty() {
        ExitCode::Input
    } else if done.failed() + done.interrupted_cases() == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}

/// Keep a shard's report in the database store for `merge --suite`.
fn keep_shard(args: &TestArgs, store: &StoreDir, done: &SuiteRun, shard: &Shard) -> Result<()> {
    let mut summary = SuiteSummary::of(done);
    summary.shard = Some(shard.clone());
    let suite = args
        .suite_id
        .clone()
        .unwrap_or_else(|| shard.selection[..12.min(shard.selection.len())].to_string());
    let replaced = store.put_shard(
        &suite,
        &shard.partition,
        &shard.selection,
        &serde_json::to_value(&summary)?,
    )?;
    if replaced > 0 {
        eprintln!(
            "note: suite {suite} held {replaced} shard report(s) of another partitioning than {} (a run on another number of machines): removed, as no merge could take them with this one",
            shard.partition
        );
    }
    eprintln!(
        "shard {} of suite {suite} kept in {} (`worldline merge --suite {suite}` combines the shards)",
        shard.partition,
        store.name()
    );
    Ok(())
}
