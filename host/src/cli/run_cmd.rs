//! `worldline run CASE --agent A.wasm` (or `--exec -- CMD ARGS...`): one
//! run, a summary, a bundle.

use super::{Common, ExecArgs, ModelArgs};
use crate::case;
use crate::error::ExitCode;
use crate::grade::verdict;
use crate::report::{self, run::RunSummary};
use crate::run::{RunOptions, run_with};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct RunArgs {
    /// The case file (TOML).
    pub case: PathBuf,
    /// The agent component (.wasm built for wasm32-wasip2; default: `agent`
    /// in worldline.toml).
    #[arg(long, required_unless_present = "exec")]
    pub agent: Option<PathBuf>,
    /// Folder holding the worlds (default: the nearest `worlds/` above the case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub exec: ExecArgs,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: RunArgs) -> Result<ExitCode> {
    let mut case = case::load(&args.case, args.worlds.as_deref())?;
    for w in crate::regress::origin_warnings(&case) {
        eprintln!("warning: {}: {w}", case.path.display());
    }
    args.model.apply(&mut case)?;
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::compile_notice());
    let native = args.exec.native(args.agent.as_deref())?;
    store.put_case(&case)?;
    let opts = RunOptions {
        store: Some(&store),
        model_seed: args.model.model_seed,
        ..RunOptions::default()
    };
    let outcome = match (&native, &args.agent) {
        (Some(exec), _) => crate::native::exec::run(&sandbox, &case, opts, exec)?,
        (None, agent) => {
            let path = agent
                .as_deref()
                .context("--agent is required without --exec")?;
            let agent = crate::agent_file::load(&sandbox, &store, path)?;
            run_with(&sandbox, &agent, &case, opts)?
        }
    };
    if args.common.json {
        super::print_json_with_settings(&RunSummary::of(&outcome))?;
    } else {
        report::run::print(&outcome);
    }
    Ok(verdict::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}
