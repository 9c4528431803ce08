//! `worldline replay RUN` (strict replay of one run) and
//! `worldline verify [RUN...]` (replay many and report the drift rate).

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use worldline_case::error::InputError;
use worldline_engine::lanes::worker::Worker;
use worldline_engine::ops;
use worldline_engine::replay::{self, Verdict};
use worldline_engine::verify;
use worldline_log::log::bundle::{self, HeldBundle, Redacted};
use worldline_report::verify as verify_report;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct ReplayArgs {
    /// Run id (or a unique prefix) in the store, or a bundle path.
    pub run: String,
    #[command(flatten)]
    pub redact: super::redact_opts::RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// Runs to replay (default: every run in the store).
    pub runs: Vec<String>,
    /// Replay N of them drawn at random (a nightly check of a large store);
    /// the sample and its seed are printed.
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// The seed of `--sample` (default: a fresh one, printed): the same seed
    /// on the same runs draws the same sample.
    #[arg(long, requires = "sample")]
    pub seed: Option<u64>,
    /// Runs replayed at once (default: the number of cores).
    #[arg(long, value_parser = super::jobs_arg)]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub redact: super::redact_opts::RedactArgs,
    #[command(flatten)]
    pub common: Common,
    /// Be a worker of the `verify` this command line starts, replaying
    /// this many runs at once: read them from stdin, answer on stdout
    /// (decision 0406; started by `verify` itself).
    #[arg(long, value_name = "JOBS", hide = true)]
    pub verify_worker: Option<usize>,
}

/// A redacted copy cannot be re-executed: say what reading it checked
/// and what no one can check from it.
fn report_redacted_copy(
    path: &std::path::Path,
    b: &HeldBundle,
    r: &Redacted,
    json: bool,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let doc = verify_report::redacted_copy_json(path, b.events.len(), r);
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        verify_report::write_redacted_copy(&mut out, path, b.events.len(), r)?;
    }
    Ok(())
}

/// A replay's report as the store's redaction policy shows values, as
/// the UI's replay page shows it: the divergence's recorded and replayed
/// values (after what the run's events before it hid) and the lines of
/// where they differ. They were printed whole, a redacted `history`
/// beside them.
fn redacted(
    store: &StoreDir,
    r: &mut replay::ReplayReport,
    redactor: &mut worldline_log::redact::Redactor,
) {
    let Some(d) = r.divergence.as_mut() else {
        return;
    };
    // A bundle named by a path outside the store is not found by its id:
    // its own values are hidden all the same.
    if let Ok(mut rec) = replay::open_held(store, &r.run) {
        redactor.learn_state(&rec.case.world.initial);
        if let Some(held) = rec.held.as_mut() {
            redactor.before(&rec.bundle.header, held, d.index.saturating_add(1));
        }
    }
    redactor.divergence(d.field.as_deref(), &mut d.expected);
    redactor.divergence(d.field.as_deref(), &mut d.actual);
    for line in &mut r.diff {
        *line = redactor.text(line);
    }
}

pub fn exec_replay(args: ReplayArgs) -> Result<ExitCode> {
    let store = super::store_of_run(&args.common.store, &args.run)?;
    store.require_raw("`replay` (re-executing a run)")?;
    let path = store.resolve_run(&args.run)?;
    // Only a redacted copy is read here: a run to replay is read once, by
    // `replay::open_held`; both hold requests compact (decisions 0347,
    // 0380). (A header that does not read is read for its error.)
    if bundle::read_header(&path).map_or(true, |h| h.redacted.is_some()) {
        let b = bundle::read_held(&path).map_err(InputError::from)?;
        if let Some(r) = &b.header.redacted {
            report_redacted_copy(&path, &b, r, args.common.json)?;
            return Ok(ExitCode::Ok);
        }
    }
    let sandbox =
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice());
    let rec = replay::open_held(&store, &args.run)?;
    store.audit_reexecution(&[&rec.id], "replay")?;
    let id = rec.id.clone();
    let mut r = ops::replay::replay(&sandbox, &store, rec)?;
    if let Some(mut redactor) = args.redact.redactor(&store, "replay", &[&id])? {
        redacted(&store, &mut r, &mut redactor);
    }
    if args.common.json {
        out!("{}", serde_json::to_string_pretty(&r)?)?;
    } else {
        verify_report::write_replay(&mut super::human_out(), &r)?;
    }
    Ok(if r.verdict == Verdict::Diverged {
        ExitCode::Failed
    } else {
        ExitCode::Ok
    })
}

pub fn exec_verify(args: VerifyArgs) -> Result<ExitCode> {
    let worker = args.verify_worker.is_some();
    super::workers::as_worker(worker, |serving| verified(args, serving))
}

fn verified(args: VerifyArgs, serving: &mut bool) -> Result<ExitCode> {
    if args.verify_worker.is_some() {
        // First, so that a Ctrl-C as it starts does not end it.
        worldline_engine::native::noted_in_a_worker();
    } else {
        // A Ctrl-C before the replays start (reading the store) is said.
        worldline_engine::native::said_if_ended_early();
    }
    // A sample of no runs replays nothing, and a nightly check that
    // replays nothing passed.
    if args.sample == Some(0) {
        return Err(InputError::new(
            "--sample",
            "must be at least 1: the number of runs drawn and replayed (leave it out to replay every run)",
        )
        .into());
    }
    // The whole store, or runs named (bundle paths need no store; those of
    // a store are read with it, one store a command).
    let holding: std::collections::BTreeMap<&std::path::Path, &str> = (args.runs.iter())
        .filter_map(|r| Some((super::store_path_of_run(&args.common.store, r)?, r.as_str())))
        .collect();
    if holding.len() > 1 {
        let shown: Vec<String> = holding.keys().map(|p| p.display().to_string()).collect();
        return Err(InputError::new(
            "verify",
            format!(
                "the bundles named are of {} stores ({}): verify the runs of one store at a time",
                shown.len(),
                shown.join(", ")
            ),
        )
        .into());
    }
    let store = match (args.runs.is_empty(), holding.first_key_value()) {
        (true, _) => StoreDir::open_existing(&args.common.store)?,
        (false, Some((holding, run))) => super::open_holding(&args.common.store, run, holding)?,
        (false, None) => StoreDir::open_existing(&args.common.store)?,
    };
    // A worker re-executes runs too: refused to a viewer, whoever started
    // it; the runs it is handed were audited by the process that drew them.
    if args.verify_worker.is_some() {
        store.require_raw("verify (unredacted)")?;
    }
    let jobs = args.verify_worker.unwrap_or_else(|| super::jobs(args.jobs));
    let sandbox =
        Sandbox::pooled(Some(store.compile_cache_dir()), jobs)?.on_compile(super::compile_notice());
    if args.verify_worker.is_some() {
        let input = std::io::BufReader::new(std::io::stdin());
        *serving = true;
        verify::serve(&sandbox, &store, jobs, input, std::io::stdout())?;
        return Ok(ExitCode::Ok);
    }
    let sample = args.sample.map(|size| ops::replay::Sample {
        size,
        seed: args.seed.unwrap_or_else(verify::fresh_seed),
    });
    let workers = |hello: &verify::Hello| workers(&sandbox, &store, jobs, hello);
    let (runs, drawn) = ops::replay::drawn(&store, &args.runs, sample)?;
    // Each run replayed is audited for a responder by its id (a run named
    // by its bundle's path or a prefix of its id, too).
    if store.database().is_some() {
        let ids: Vec<String> = (runs.iter())
            .map(|r| Ok(super::redact_opts::id_of(&store.resolve_run(r)?)))
            .collect::<Result<_>>()?;
        store.audit_reexecution(
            &ids.iter().map(String::as_str).collect::<Vec<_>>(),
            "verify",
        )?;
    }
    let report = verify_report::Stream::new(
        std::io::BufWriter::new(std::io::stdout()),
        args.common.json,
        drawn.as_ref(),
        args.sample.unwrap_or(0),
    )?;
    let redactor = match args.verify_worker {
        Some(_) => None,
        None => args.redact.redactor(&store, "verify", &[])?,
    };
    let report = std::sync::Mutex::new((report, redactor));
    let (stopping, asked) = (super::stopping::Stopping::start("replays"), runs.len());
    let checked = ops::replay::verify(&sandbox, &store, (runs, drawn), jobs, workers, |r| {
        stopping.seen();
        let (report, redactor) = &mut *report.lock().expect("report lock");
        match redactor {
            Some(redactor) if r.divergence.is_some() => {
                let mut r = r.clone();
                redacted(&store, &mut r, redactor);
                report.replayed(&r)
            }
            _ => report.replayed(r),
        }
    });
    let (mut report, _) = report.into_inner().expect("report lock");
    let v = match checked {
        Ok(v) => v,
        Err(err) if args.common.json && report.started() => {
            return super::ended_with(&err, |e| report.fail(e));
        }
        Err(err) => return Err(err),
    };
    let drifted = v.tally.diverged + v.unreadable.len() > 0;
    report.interrupted(stopping.seen(), asked);
    report.finish(&v)?;
    stopping.end();
    Ok(if drifted {
        ExitCode::Failed
    } else {
        ExitCode::Ok
    })
}

/// Start a worker for each share of `jobs` but this process's, once the
/// first run was checked here: this command line again, with
/// `--verify-worker JOBS`. When the first run's agent is not in the
/// store's compile cache (it cannot be written), every job stays in this
/// process (each worker would compile it again), as it does when the list
/// of runs is longer than a worker reads in a line.
fn workers(
    sandbox: &Sandbox,
    store: &StoreDir,
    jobs: usize,
    hello: &verify::Hello,
) -> Result<Vec<Worker<verify::CheckedRun>>> {
    let rest = hello.runs().len().saturating_sub(1) as u64;
    let shares = super::workers::shares(jobs, rest);
    let Some((_, shares)) = shares.split_first() else {
        return Ok(Vec::new());
    };
    if shares.is_empty() || !hello.fits_a_line() {
        return Ok(Vec::new());
    }
    let first = (hello.runs().first())
        .and_then(|run| store.resolve_run(run).ok())
        .and_then(|path| bundle::read_header(&path).ok());
    if first.is_some_and(|h| h.native.is_none() && !sandbox.cached(&h.agent_sha256)) {
        return Ok(Vec::new());
    }
    shares
        .iter()
        .map(|&jobs| {
            let command = super::workers::command("--verify-worker", jobs)?;
            Worker::start(command, jobs, "verify", hello)
        })
        .collect()
}
