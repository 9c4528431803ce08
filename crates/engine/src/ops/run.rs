//! Run a case once against an agent and keep the run in the store.

use crate::case::Case;
use crate::run::{RunOptions, RunOutcome, run_with};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::Result;
use std::path::PathBuf;

/// What to run.
pub struct RunArgs {
    /// The agent component.
    pub agent: PathBuf,
    /// The scripted model's seed, when not the case's.
    pub model_seed: Option<u64>,
}

/// A run that ran.
pub struct Ran {
    /// Warnings about the case's `[origin]` (the run it was made from).
    pub warnings: Vec<String>,
    pub outcome: RunOutcome,
}

/// Run `case` (loaded, its model overrides applied) with `args.agent`.
pub fn run(sandbox: &Sandbox, store: &StoreDir, case: &Case, args: RunArgs) -> Result<Ran> {
    let warnings = crate::regress::origin_warnings(case);
    let agent = crate::agent_file::load(sandbox, store, &args.agent)?;
    store.put_case(case)?;
    let outcome = run_with(
        sandbox,
        &agent,
        case,
        RunOptions {
            store: Some(store),
            model_seed: args.model_seed,
            ..RunOptions::default()
        },
    )?;
    Ok(Ran { warnings, outcome })
}
