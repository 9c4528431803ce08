//! Forks: a new run that follows a recorded run up to event N, applies
//! edits at N (a different response, a permission, a state patch, or a
//! different agent), and runs live from there. A native process is run
//! again with the recorded answers up to N, then live. The fork records its parent
//! and N; the parent is never modified. Edits are checked against the run
//! first ([`check`]).

pub mod check;

use crate::error::InputError;
use crate::log::bundle::{Edit, ForkPoint, Parent};
use crate::mediate::follow::Following;
use crate::native::exec::Exec;
use crate::replay::{RecordedRun, recorded_agent};
use crate::run::{RunOptions, RunOutcome, run_with};
use crate::sandbox::{Agent, Sandbox};
use crate::store::StoreDir;
use anyhow::Result;
use std::sync::Arc;

/// Fork `rec` at event `at` with `edits`, optionally with another agent.
/// The fork is written to the store as a new run.
pub fn fork(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    at: u64,
    edits: Vec<Edit>,
    agent: Option<Arc<Agent>>,
) -> Result<RunOutcome> {
    check::check(rec, at, &edits)?;
    let mut edits = edits;
    for e in &mut edits {
        if let (Edit::Respond { response }, Some(event)) = (e, rec.bundle.events.get(at as usize)) {
            *response = check::shape_response(&event.call, &event.response, response.clone());
        }
    }
    let native = match &rec.bundle.header.native {
        Some(n) => Some(Exec::recorded(n).ok_or_else(|| {
            InputError::new(
                &rec.path,
                "was an MCP session: there is no process to run again up to the fork point",
            )
        })?),
        None => None,
    };
    if native.is_some() && agent.is_some() {
        return Err(InputError::new(
            "--agent",
            "a native run forks with its own command; --agent names a WebAssembly agent",
        )
        .into());
    }
    let chain_hash = rec.bundle.footer.as_ref().map_or_else(
        || {
            rec.bundle
                .events
                .last()
                .map_or_else(String::new, |e| e.hash.clone())
        },
        |f| f.chain_hash.clone(),
    );
    let earlier: Vec<ForkPoint> = rec
        .bundle
        .header
        .parent
        .as_ref()
        .map(|p| {
            p.fork_points()
                .into_iter()
                .filter(|fp| fp.event < at)
                .collect()
        })
        .unwrap_or_default();
    let parent = Parent {
        run: rec.id.clone(),
        chain_hash,
        event: at,
        edits,
        earlier,
    };
    let following = Following::fork(rec.bundle.events.clone(), at, parent.fork_points());
    let opts = RunOptions {
        store: Some(store),
        following: Some(following),
        parent: Some(parent),
        faults: rec.bundle.header.fuzz.clone(),
        model_seed: rec.bundle.header.model_seed,
        ..RunOptions::default()
    };
    let outcome = match (&native, agent) {
        (Some(exec), _) => crate::native::exec::run(sandbox, &rec.case, opts, exec)?,
        (None, Some(agent)) => run_with(sandbox, &agent, &rec.case, opts)?,
        (None, None) => {
            let agent = recorded_agent(sandbox, store, rec)?;
            run_with(sandbox, &agent, &rec.case, opts)?
        }
    };
    if let Some(d) = &outcome.divergence {
        anyhow::bail!(
            "the fork's agent departed from the recording at event {} before the fork point {at} ({:?}); fork at or before {} instead",
            d.index,
            d.class,
            d.index
        );
    }
    Ok(outcome)
}
