//! Fork a recorded run at an event with edits: the edits parsed and
//! checked against the run, the other agent (if any) loaded, the fork run
//! and kept in the store.

use crate::fork::{self, check::EditText};
use crate::replay::RecordedRun;
use crate::run::RunOutcome;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// What to fork with.
pub struct ForkArgs {
    /// The event to fork at: earlier events replay from the log.
    pub at: u64,
    /// The edits as written (`--respond`, `--set`, ... or the form's fields).
    pub edits: EditText,
    /// Continue with another agent build.
    pub agent: Option<PathBuf>,
}

/// A fork that ran.
pub struct Forked {
    /// Notes about the edits (a response that fits loosely, ...).
    pub notes: Vec<String>,
    pub outcome: RunOutcome,
}

/// Why a fork did not run, by whose fault.
#[derive(Debug)]
pub enum ForkError {
    /// The edits do not parse or do not fit the run (nor does another
    /// agent, for a run that forks only with its own), or the provider it
    /// goes live at needs an API key that is not set.
    Edits(InputError),
    /// The other agent could not be loaded.
    Agent(anyhow::Error),
    /// The fork itself failed.
    Run(anyhow::Error),
}

impl std::fmt::Display for ForkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForkError::Edits(e) => write!(f, "{e}"),
            ForkError::Agent(e) | ForkError::Run(e) => write!(f, "{e:#}"),
        }
    }
}

impl From<ForkError> for anyhow::Error {
    fn from(e: ForkError) -> Self {
        match e {
            ForkError::Edits(e) => e.into(),
            ForkError::Agent(e) | ForkError::Run(e) => e,
        }
    }
}

/// Fork `rec` as `args` say.
pub fn fork(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    args: ForkArgs,
) -> Result<Forked, ForkError> {
    let edits = args.edits.parse().map_err(ForkError::Edits)?;
    let mut notes = fork::check::check(store, rec, args.at, &edits).map_err(ForkError::Edits)?;
    notes.extend(fork::rules_note(rec));
    // Refused before the other agent is compiled (seconds, for nothing).
    if args.agent.is_some()
        && let Some(refused) = fork::other_agent_refused(rec)
    {
        return Err(ForkError::Edits(refused));
    }
    if let Some(refused) = fork::key_refused(rec, "fork") {
        return Err(ForkError::Edits(refused));
    }
    let agent = match &args.agent {
        Some(path) => {
            Some(crate::agent_file::load(sandbox, store, path).map_err(ForkError::Agent)?)
        }
        None => None,
    };
    let outcome = fork::fork(sandbox, store, rec, args.at, edits, agent).map_err(ForkError::Run)?;
    Ok(Forked { notes, outcome })
}
