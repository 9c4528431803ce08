//! `worldline case from-run RUN -o FILE` (a recorded run made a case) and
//! `worldline case from-trace TRACE -o DIR` (an OpenTelemetry trace made a
//! case folder).

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use worldline_case::case::model::CassetteMode;
use worldline_engine::regress::from_run::{self, Options};
use worldline_engine::regress::from_trace;
use worldline_report::case as case_report;

#[derive(Args)]
pub struct CaseArgs {
    #[command(subcommand)]
    pub command: CaseCommand,
}

#[derive(Subcommand)]
pub enum CaseCommand {
    /// Write a case that summons a recorded run's world again: its seed,
    /// clock, task, faults (as [[inject]] rules) and model answers.
    FromRun(FromRunArgs),
    /// Write a case folder from an OpenTelemetry trace of an agent run
    /// (OTLP protobuf or JSON; GenAI attributes or events, OpenInference).
    FromTrace(FromTraceArgs),
}

#[derive(Args)]
pub struct FromTraceArgs {
    /// The trace file: OTLP protobuf (`otel -o`, OTLP/HTTP bodies) or OTLP
    /// JSON (the Collector's file exporter), at most 1 GiB.
    pub trace: PathBuf,
    /// The folder to write (must not exist): cases/, worlds/, README.md.
    #[arg(short, long, required_unless_present = "list")]
    pub output: Option<PathBuf>,
    /// The agent run to take (its trace id, or a unique prefix), when the
    /// file holds several; with `--list`, list the runs whose id starts so.
    #[arg(long)]
    pub trace_id: Option<String>,
    /// List the agent runs in the file and write nothing (not with `-o`,
    /// which it ignored).
    #[arg(long, conflicts_with = "output")]
    pub list: bool,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct FromRunArgs {
    /// Run id (or a unique prefix), or a bundle path.
    pub run: String,
    /// The case file to write (`.toml`); the bundle's copy goes beside it
    /// as `NAME.run.jsonl`.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Take `[expect]` from this case file instead of the run's case.
    #[arg(long, value_name = "CASE")]
    pub expect_from: Option<PathBuf>,
    /// What the `recorded` provider does with a model request the run never
    /// made: `none` (an error the agent sees), `once` or `all` (ask the
    /// case's endpoint).
    #[arg(long, value_enum, default_value = "none")]
    pub model_fallback: Fallback,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Fallback {
    None,
    Once,
    All,
}

pub fn exec(args: CaseArgs) -> Result<ExitCode> {
    match args.command {
        CaseCommand::FromRun(a) => exec_from_run(a),
        CaseCommand::FromTrace(a) => exec_from_trace(a),
    }
}

fn exec_from_run(args: FromRunArgs) -> Result<ExitCode> {
    let store = super::store_of_run(&args.common.store, &args.run)?;
    // It writes the run's bundle whole beside the case: a raw read, noted
    // in a database store's audit as an export is.
    let id = super::redact_opts::id_of(&store.resolve_run(&args.run)?);
    store.audit_raw(None, &[&id], "case from-run")?;
    let fallback = match args.model_fallback {
        Fallback::None => CassetteMode::None,
        Fallback::Once => CassetteMode::Once,
        Fallback::All => CassetteMode::All,
    };
    let made = from_run::from_run(
        &store,
        &Options {
            run: &args.run,
            output: &args.output,
            expect_from: args.expect_from.as_deref(),
            fallback,
        },
    )?;
    // `test` and `run` look for its world in the nearest `worlds/` above
    // it: a case written elsewhere did not load, unsaid.
    // The project's `worlds` when the case is written inside the project
    // (they find it there: the note said they would not).
    let project_worlds = super::project_args::project()
        .filter(|p| p.holds(&made.case))
        .and_then(|p| p.worlds.clone());
    let found = (project_worlds.or_else(|| worldline_case::case::find_worlds_root(&made.case)))
        .ok_or_else(|| "no `worlds/` folder is in its folder or above it".to_string())
        .and_then(|root| {
            worldline_case::world::check_header(&root, &made.world, &made.case)
                .map_err(|e| e.message)
        });
    if let Err(why) = found {
        eprintln!(
            "note: {}: `worldline test` and `run` will not find its world `{}` there ({why}): pass them `--worlds DIR`, or write the case inside the project whose `worlds/` holds it",
            made.case.display(),
            made.world
        );
    }
    if args.common.json {
        out!("{}", serde_json::to_value(&made)?)?;
        return Ok(ExitCode::Ok);
    }
    case_report::write_from_run(&mut super::human_out(), &made)?;
    Ok(ExitCode::Ok)
}

fn exec_from_trace(args: FromTraceArgs) -> Result<ExitCode> {
    if args.list {
        let runs = from_trace::list(&args.trace, args.trace_id.as_deref())?;
        if args.common.json {
            out!("{}", serde_json::to_value(&runs)?)?;
        } else {
            case_report::write_trace_runs(&mut super::human_out(), &runs)?;
        }
        return Ok(ExitCode::Ok);
    }
    let Some(out) = &args.output else {
        unreachable!("clap requires -o without --list")
    };
    let made = from_trace::from_trace(&args.trace, out, args.trace_id.as_deref())?;
    if args.common.json {
        out!("{}", serde_json::to_value(&made)?)?;
    } else {
        case_report::write_from_trace(&mut super::human_out(), &made)?;
    }
    Ok(ExitCode::Ok)
}
