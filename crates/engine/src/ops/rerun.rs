//! Rerun a recorded incident against another agent build.

use crate::replay::{self, ModelMode, RecordedRun};
use crate::run::RunOutcome;
use anyhow::Result;
use std::path::PathBuf;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// What to rerun with.
pub struct RerunArgs {
    /// The new agent build.
    pub agent: PathBuf,
    /// Where model answers come from.
    pub model: ModelMode,
}

/// A rerun that ran.
pub struct Reran {
    /// SHA-256 of the new agent.
    pub agent_sha256: String,
    pub outcome: RunOutcome,
}

/// Rerun `rec` with `args.agent`.
pub fn rerun(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    args: RerunArgs,
) -> Result<Reran> {
    let agent = crate::agent_file::load(sandbox, store, &args.agent)?;
    let outcome = replay::rerun(sandbox, store, rec, &agent, args.model)?;
    Ok(Reran {
        agent_sha256: agent.sha256.clone(),
        outcome,
    })
}
