//! `worldline resume RUN [--fuel N] [--max-steps N] [--max-events N]
//! [--max-errors N] [--resend-in-flight]`: a run that was killed, or
//! stopped at a limit, goes on from where its recording ends (the recorded
//! calls answered from it; a call it was killed inside made again).

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::collections::BTreeMap;
use worldline_engine::ops;
use worldline_engine::replay;
use worldline_log::log::intent::Intent;
use worldline_report::{rerun::ForkParent, run::RunSummary};
use worldline_runtime::sandbox::Sandbox;

#[derive(Args)]
pub struct ResumeArgs {
    /// Run id (or a unique prefix) in the store, or a bundle path: a run
    /// without its footer (killed), or one stopped at a limit.
    pub run: String,
    /// Raise `[limits] fuel` to this.
    #[arg(long)]
    pub fuel: Option<u64>,
    /// Raise `[limits] max_steps` to this.
    #[arg(long)]
    pub max_steps: Option<u64>,
    /// Raise `[limits] max_events` to this.
    #[arg(long)]
    pub max_events: Option<u64>,
    /// Raise `[limits] max_errors` to this.
    #[arg(long)]
    pub max_errors: Option<u64>,
    /// Raise `[limits] timeout_ms` to this (a run the watchdog stopped
    /// follows its prefix again under it).
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// The run was killed inside a call of a tool that may write: call it
    /// again (without this, such a run is refused).
    #[arg(long)]
    pub resend_in_flight: bool,
    #[command(flatten)]
    pub common: Common,
}

/// The `resume --json` document: the new run, and where it went live.
#[derive(Serialize)]
struct ResumeSummary<'a> {
    #[serde(flatten)]
    run: RunSummary<'a>,
    resumed_from: ForkParent<'a>,
    /// The limits raised.
    limits: &'a BTreeMap<String, u64>,
    /// The call the run was killed inside, made again.
    #[serde(skip_serializing_if = "Option::is_none")]
    in_flight: Option<&'a Intent>,
}

pub fn exec(args: ResumeArgs) -> Result<ExitCode> {
    let store = super::store_of_run(&args.common.store, &args.run)?;
    let sandbox =
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice());
    let rec = replay::open_held(&store, &args.run)?;
    let raised: BTreeMap<String, u64> = [
        ("fuel", args.fuel),
        ("max_steps", args.max_steps),
        ("max_events", args.max_events),
        ("max_errors", args.max_errors),
        ("timeout_ms", args.timeout_ms),
    ]
    .into_iter()
    .filter_map(|(name, v)| Some((name.to_string(), v?)))
    .collect();
    let (rec, raised, note) = ops::resume::from_furthest(&store, rec, &raised);
    if let Some(note) = note {
        eprintln!("{note}");
    }
    // A signal that stops a native run ends the command once the run is
    // reported, as under `run` (it ended with nothing said).
    let interrupt =
        (rec.bundle.header.native.is_some()).then(worldline_engine::native::Interrupt::start);
    let outcome = ops::resume::resume(&sandbox, &store, &rec, &raised, args.resend_in_flight)?;
    super::indexed(&store);
    // A database store keeps finished runs only: the killed run stays in
    // this machine's working folder, and the run stored names it.
    if store.database().is_some() && rec.bundle.footer.is_none() {
        eprintln!(
            "note: {} is unfinished (killed), and a database store keeps finished runs only: it stays in this machine's working folder ({}), and the resumed run, stored, names it as its parent, which other machines and `runs` elsewhere do not hold",
            rec.id,
            store.root.display()
        );
    }
    let in_flight = rec.bundle.in_flight.as_ref();
    let at = rec.event_count() as u64;
    if args.common.json {
        super::print_json(&ResumeSummary {
            run: RunSummary::of(&outcome),
            resumed_from: ForkParent {
                event: at,
                run: &rec.id,
            },
            limits: &raised,
            in_flight,
        })?;
    } else {
        let followed = match at {
            0 => "no event followed from its recording".to_string(),
            n => format!("events 0 to {} followed from its recording", n - 1),
        };
        out!(
            "resumed {} at event {at} ({followed}, live from {at})",
            rec.id
        )?;
        if let Some(i) = in_flight {
            let what = i
                .tool
                .as_ref()
                .map_or(i.call.clone(), |t| format!("tool `{t}`"));
            out!("killed inside {what} at event {at}: made again")?;
        }
        worldline_report::run::write(&mut super::human_out(), &outcome)?;
    }
    if let Some(i) = interrupt {
        i.end();
    }
    Ok(crate::cli::exit::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}
