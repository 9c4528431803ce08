//! `worldline repro RUN --times N`: run a recorded run's case, seed and
//! faults again N times, each time with a different model seed (and the
//! recorded model provider, or another one given with `--model-set`, e.g. a
//! live endpoint), and report how often it ends the way the recording did
//! (its failure signature, or passing) — a rate with its 95% Wilson
//! interval, not a yes or no.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::Path;
use worldline_case::error::InputError;
use worldline_engine::fuzz::repro::repro;
use worldline_engine::native::exec::Exec;
use worldline_engine::replay::{self, recorded_agent};
use worldline_log::log::signature;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct ReproArgs {
    /// The run: id, unique id prefix, or bundle path.
    pub run: String,
    /// How many times to run it again.
    #[arg(long, default_value_t = 20)]
    pub times: u64,
    /// Runs at once (default: the number of cores).
    #[arg(long, value_parser = super::jobs_arg)]
    pub jobs: Option<usize>,
    /// Override a key of the recorded case's [model] for the repetitions,
    /// e.g. `--model-set provider=openai` to ask a live endpoint (repeatable).
    #[arg(long = "model-set", value_name = "KEY=VALUE",
          value_parser = worldline_case::case::model::check_override)]
    pub model_set: Vec<String>,
    /// A key of the model that plays a model-played user, e.g.
    /// `--user-model-set provider=openai` (repeatable; see `run`).
    #[arg(long = "user-model-set", value_name = "KEY=VALUE",
          value_parser = worldline_case::case::model::check_override)]
    pub user_model_set: Vec<String>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: ReproArgs) -> Result<ExitCode> {
    super::runs_at_most("--times", args.times)?;
    let store = super::store_of_run(&args.common.store, &args.run)?;
    let sandbox =
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice());
    let mut rec = replay::open_held(&store, &args.run)?;
    store.audit_reexecution(&[&rec.id], "repro")?;
    recordings_in_store(&mut rec.case, &store);
    super::ModelArgs {
        set: args.model_set.clone(),
        user_set: args.user_model_set.clone(),
        model_seed: None,
    }
    .apply(&mut rec.case)
    .map_err(|e| at_the_run(e, &rec))?;
    let Some(footer) = &rec.bundle.footer else {
        return Err(InputError::new(
            &rec.path,
            "the run has no footer (it was cut short), so there is no outcome to reproduce",
        )
        .into());
    };
    // Stopped by a signal (Ctrl-C, `kill`): its outcome is the signal's,
    // which no run again repeats (it read as a flaky agent, 0 of N).
    if !footer.replayable && footer.status != worldline_log::log::Status::Timeout {
        return Err(InputError::new(
            &rec.path,
            format!(
                "the run was stopped before it ended (`{}`: a signal, or the command ending it), so its outcome is not the agent's to reproduce; run the case again with `worldline run`",
                footer.status.as_str()
            ),
        )
        .into());
    }
    refuse_edited_fork(&rec)?;
    let want = signature::of_footer(footer);
    // A native run repeats its recorded command.
    let native = rec
        .bundle
        .header
        .native
        .as_ref()
        .map(|n| Exec::recorded(n, &rec.path, "run again"))
        .transpose()?;
    let component;
    let agent: &dyn worldline_engine::run::Runner = match &native {
        Some(exec) => exec,
        None => {
            component = recorded_agent(&sandbox, &store, &rec)?;
            component.as_ref()
        }
    };
    let jobs = super::jobs(args.jobs);
    let stopping = super::stopping::Stopping::start("repetitions");
    let r = repro(&sandbox, agent, &rec, want, args.times, jobs)?;
    stopping.seen();
    if args.common.json {
        super::print_json_with_settings(&r)?;
    } else {
        worldline_report::repro::write(&mut super::human_out(), &r)?;
    }
    stopped(stopping, &r, args.times);
    Ok(ExitCode::Ok)
}

/// Once the rate is written: a signal that stopped the repetitions said,
/// with how many of the `asked` ended before it (it ended the command
/// silently, with no rate), then the process ended by it.
fn stopped(
    stopping: super::stopping::Stopping,
    r: &worldline_engine::fuzz::repro::Repro,
    asked: u64,
) {
    if let Some(signal) = r.interrupted {
        eprintln!(
            "interrupted by {signal}: the rate is of the {} of {asked} repetitions made",
            r.times
        );
    }
    stopping.end();
}

/// A `recorded` provider's `recording` was beside the case file, not
/// beside the case read back from the store: the store's runs, the run
/// itself among them, answer its repetitions (as a fork's are answered).
fn recordings_in_store(case: &mut worldline_case::case::Case, store: &StoreDir) {
    let dir = case
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    // Absolute: a recording is read relative to the case's folder, which
    // for a case read back is the store's objects (`.worldline/runs`
    // was looked for as `.worldline/objects/.worldline/runs`).
    let runs = store.runs_dir();
    let runs = std::path::absolute(&runs)
        .unwrap_or(runs)
        .display()
        .to_string();
    let user = case.user.as_mut().and_then(|u| u.model.as_mut());
    for model in std::iter::once(&mut case.model).chain(user) {
        if model.unreadable_recording(&dir, "the case file").is_some() {
            model.recording = Some(runs.clone());
        }
    }
}

/// An error `apply` placed at the run's case as the store keeps it
/// (`.worldline/objects/…`, a file the user never wrote), placed at the run.
fn at_the_run(e: anyhow::Error, rec: &replay::RecordedRun) -> anyhow::Error {
    match e.downcast::<InputError>() {
        Ok(mut e) if e.file == rec.case.path => {
            e.file = rec.path.clone();
            e.line = None;
            e.message = format!("its case `{}`: {}", rec.case.name, e.message);
            e.into()
        }
        Ok(e) => e.into(),
        Err(e) => e,
    }
}

/// A fork whose edits change what its run met is not its case run again:
/// `repro` runs the case from its start, without them, so its rate would
/// be of another run.
fn refuse_edited_fork(rec: &replay::RecordedRun) -> Result<()> {
    let edits = super::fork_edits(rec);
    if edits.is_empty() {
        return Ok(());
    }
    Err(InputError::new(
        &rec.path,
        format!(
            "run {} is a fork with edits ({}): repro runs its case from the start, without them. To see how often the edited run ends this way, make it a case, `worldline case from-run {} -o CASE.toml` (it lists what the case cannot carry), and run `worldline test CASE.toml --repeat N`; or branch the parent with the same edits and `fork --samples N`",
            rec.id,
            edits.join("; "),
            rec.id
        ),
    )
    .into())
}
