//! `worldline run CASE --agent A.wasm` (or `--exec -- CMD ARGS...`): one
//! run, a summary, a bundle.

use super::agent_choice::{Choice, Chosen};
use super::{Common, ExecArgs, ModelArgs};
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use worldline_case::case;
use worldline_engine::ops;
use worldline_report::run::RunSummary;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct RunCommand {
    /// The case file (TOML).
    pub case: PathBuf,
    /// The agent component (.wasm built for wasm32-wasip2; default: the
    /// case's `exec`, else `agent` or `exec` in worldline.toml).
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above the case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: RunCommand) -> Result<ExitCode> {
    let mut case = case::load(&args.case, args.worlds.as_deref())?;
    args.model.apply(&mut case)?;
    let store = StoreDir::open(&args.common.store)?;
    store.require_raw("storing a run (`run`)")?;
    let sandbox =
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice());
    let chosen = Choice::of(&args.exec, args.agent.as_deref())?.for_case(&case)?;
    let who = match &chosen {
        Chosen::Native(exec) => ops::run::Who::Native(exec),
        Chosen::Component(path) => ops::run::Who::Component(path.clone()),
    };
    // A SIGINT or SIGTERM that stops a native run ends the process once
    // the run is reported (it ended the process before: the run recorded,
    // its id and status never said).
    let interrupt =
        matches!(chosen, Chosen::Native(_)).then(worldline_engine::native::Interrupt::start);
    let ran = ops::run::run(
        &sandbox,
        &store,
        &case,
        ops::run::RunArgs {
            who,
            model_seed: args.model.model_seed,
        },
    )?;
    super::indexed(&store);
    for w in &ran.warnings {
        eprintln!("warning: {}: {w}", case.path.display());
    }
    let outcome = &ran.outcome;
    if args.common.json {
        let summary = RunSummary {
            warnings: &ran.warnings,
            ..RunSummary::of(outcome)
        };
        super::print_json_with_settings(&summary)?;
    } else {
        worldline_report::run::write(&mut super::human_out(), outcome)?;
    }
    if let Some(i) = interrupt {
        i.end();
    }
    Ok(crate::cli::exit::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}
