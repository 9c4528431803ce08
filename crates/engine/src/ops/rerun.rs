//! Rerun a recorded incident against another agent build.

use crate::replay::{self, ModelMode, RecordedRun};
use crate::run::RunOutcome;
use anyhow::Result;
use std::path::PathBuf;
use worldline_log::log::rules;
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
    /// What the caller should know: the rerun ran under other rules than
    /// the run it re-ran.
    pub notes: Vec<String>,
    pub outcome: RunOutcome,
}

/// Rerun `rec` with `args.agent`.
pub fn rerun(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    args: RerunArgs,
) -> Result<Reran> {
    // `live` asks the provider at every call; `recorded` once a request
    // differs from the recording's, which a new agent's usually does.
    if args.model != ModelMode::Fail
        && let Some(refused) = crate::fork::key_refused(rec, "rerun")
    {
        return Err(refused.into());
    }
    let agent = crate::agent_file::load(sandbox, store, &args.agent)?;
    let outcome = replay::rerun(sandbox, store, rec, &agent, args.model)?;
    Ok(Reran {
        agent_sha256: agent.sha256.clone(),
        notes: other_rules(rec).into_iter().collect(),
        outcome,
    })
}

/// A rerun is a new run of the case, under this worldline's rules: said
/// when `rec` ran under others, since what the rerun changed may then come
/// from those fixes as well as from the agent (decision 0423).
fn other_rules(rec: &RecordedRun) -> Option<String> {
    (rec.rules != rules::CURRENT).then(|| {
        format!(
            "run {} was recorded under rules {}; this rerun is a new run, under rules {} (fixes that change what a run records: decision 0423), so a change may come from those fixes as well as from the agent",
            rec.id,
            rec.rules,
            rules::CURRENT
        )
    })
}
