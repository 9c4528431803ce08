//! Run a case once against an agent (a WebAssembly component, or a native
//! process under `--exec`) and keep the run in the store.

use crate::native::exec::Exec;
use crate::run::{RunOptions, RunOutcome, run_with};
use anyhow::Result;
use std::path::PathBuf;
use worldline_case::case::Case;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// Who runs the case.
pub enum Who<'a> {
    /// A WebAssembly component, from this file.
    Component(PathBuf),
    /// A native process (`--exec`), at its boundary.
    Native(&'a Exec),
}

/// What to run.
pub struct RunArgs<'a> {
    pub who: Who<'a>,
    /// The scripted model's seed, when not the case's.
    pub model_seed: Option<u64>,
}

/// A run that ran.
pub struct Ran {
    /// Warnings about the case's `[origin]` (the run it was made from), and
    /// about token ids the case asked for and the endpoint did not return.
    pub warnings: Vec<String>,
    pub outcome: RunOutcome,
}

/// Run `case` (loaded, its model overrides applied) with `args.who`.
pub fn run(sandbox: &Sandbox, store: &StoreDir, case: &Case, args: RunArgs) -> Result<Ran> {
    let mut warnings = crate::regress::origin_warnings(case);
    let opts = RunOptions {
        store: Some(store),
        model_seed: args.model_seed,
        ..RunOptions::default()
    };
    let outcome = match args.who {
        Who::Native(exec) => {
            store.put_case(case)?;
            crate::native::exec::run(sandbox, case, opts, exec)?
        }
        Who::Component(path) => {
            let agent = crate::agent_file::load(sandbox, store, &path)?;
            store.put_case(case)?;
            run_with(sandbox, &agent, case, opts)?
        }
    };
    if case.model.token_ids {
        warnings.extend(worldline_log::log::tokens::missing(
            outcome.events.as_held(),
        ));
    }
    Ok(Ran { warnings, outcome })
}
