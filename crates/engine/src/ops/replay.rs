//! Replay recorded runs strictly against their logs: one run, or many
//! (`verify`) with the drift rate over them.

use crate::lanes::worker::Worker;
use crate::replay::{self, RecordedRun, ReplayReport, Scope, Verdict};
use crate::verify::{Checked, CheckedRun, Hello};
use anyhow::Result;
use worldline_case::error::InputError;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// Replay `rec` with its recorded agent: identical, or where it diverged.
pub fn replay(sandbox: &Sandbox, store: &StoreDir, rec: RecordedRun) -> Result<ReplayReport> {
    replay::replay(sandbox, store, rec)
}

/// A run `verify` could not replay, and why.
pub struct Unreadable {
    pub run: String,
    pub error: String,
}

/// Many runs replayed: each replay's report went to the caller as it came,
/// and is counted here; the runs not replayed are kept (they are few, and
/// a report lists them after the replays).
pub struct Verified {
    /// The replays counted by verdict.
    pub tally: Tally,
    pub unreadable: Vec<Unreadable>,
    /// Bundles cut off before their header (killed as the run started, or
    /// a full disk): incomplete runs with nothing to replay, not drift.
    pub headless: Vec<String>,
    /// Native runs of a transport this build does not replay: read (their
    /// hash chain checked), not replayed.
    pub sessions: Vec<String>,
    /// Redacted copies: read (their hash chain and footer checked), not
    /// replayed; they cannot be.
    pub copies: Vec<String>,
    /// Runs recorded under a later worldline's rules (which): not
    /// replayed, and not drift; that worldline verifies them.
    pub later: Vec<(String, u32)>,
    /// The sample checked, when one was asked for.
    pub sample: Option<Drawn>,
}

/// The replayed runs counted by verdict, as `verify` reports them.
#[derive(Default)]
pub struct Tally {
    /// Runs replayed, whatever their verdict.
    pub replayed: usize,
    /// WebAssembly runs replayed bit for bit.
    pub identical: usize,
    /// Native runs whose boundary replayed identical.
    pub boundary_replay: usize,
    pub verified_prefix: usize,
    pub timeout: usize,
    pub diverged: usize,
    /// Native runs identical or verified (not diverged, nor a timeout).
    pub boundary_agreed: usize,
    /// MCP sessions (`worldline mcp`) replayed, whatever their verdict.
    pub mcp_sessions: usize,
    /// MCP sessions identical or verified (not diverged, nor a timeout).
    pub mcp_agreed: usize,
}

/// A replay `verify` counts among the identical or verified: neither
/// diverged nor stopped by a watchdog (`timeout`, counted apart).
fn agreed(v: Verdict) -> bool {
    matches!(v, Verdict::Identical | Verdict::VerifiedPrefix)
}

impl Tally {
    /// Count one replay.
    pub fn add(&mut self, r: &ReplayReport) {
        self.replayed += 1;
        match (r.verdict, r.scope) {
            (Verdict::Identical, Scope::BitForBit) => self.identical += 1,
            (Verdict::Identical, Scope::Boundary) => self.boundary_replay += 1,
            (Verdict::VerifiedPrefix, _) => self.verified_prefix += 1,
            (Verdict::Timeout, _) => self.timeout += 1,
            (Verdict::Diverged, _) => self.diverged += 1,
        }
        // Among the identical or verified: not a timeout, which the
        // totals say apart (a native run the watchdog stopped was counted
        // a boundary replay of none).
        if r.scope == Scope::Boundary && agreed(r.verdict) {
            self.boundary_agreed += 1;
        }
    }

    /// Count one replay of an MCP session.
    pub fn add_mcp_session(&mut self, r: &ReplayReport) {
        self.add(r);
        self.mcp_sessions += 1;
        if agreed(r.verdict) {
            self.mcp_agreed += 1;
        }
    }
}

impl Verified {
    /// Diverged or unreadable runs over all replayed or unreadable ones.
    pub fn drift_rate(&self) -> f64 {
        let total = self.tally.replayed + self.unreadable.len();
        if total == 0 {
            return 0.0;
        }
        (self.tally.diverged + self.unreadable.len()) as f64 / total as f64
    }
}

/// Which runs `verify` checks: a seeded sample of `size`, when asked.
pub struct Sample {
    pub size: usize,
    pub seed: u64,
}

/// The sample that was checked: its seed draws it again.
pub struct Drawn {
    pub of: usize,
    pub seed: u64,
    pub runs: Vec<String>,
    /// It was drawn from runs named, not from every run of the store:
    /// the seed draws it again from the same runs named.
    pub named: bool,
}

/// The runs `verify` checks: `runs` (every run of the store when empty),
/// or a seeded sample of them.
pub fn drawn(
    store: &StoreDir,
    runs: &[String],
    sample: Option<Sample>,
) -> Result<(Vec<String>, Option<Drawn>)> {
    let whole = runs.is_empty();
    let all = match whole {
        true => store.run_ids()?,
        false => named(store, runs)?,
    };
    let (checked, drawn) = match sample {
        Some(Sample { size, seed }) => {
            let runs = crate::verify::sample(&all, size, seed);
            let drawn = Drawn {
                of: all.len(),
                seed,
                runs: runs.clone(),
                named: !whole,
            };
            (runs, Some(drawn))
        }
        None => (all, None),
    };
    // Only what is checked is held: a sample of 100 holds 100 runs, not
    // the store's every run.
    Ok(match whole {
        true => (held(store, checked), drawn),
        false => (checked, drawn),
    })
}

/// The store's runs `listed`, held for the rest of this process, less those
/// a gc pass removed before they were held: what `verify` checks is fixed
/// as it starts, and a pass beside it removes none of it (a run it had
/// already removed was counted unreadable, as drift). One lease write for
/// them all, as a suite holds its runs (on a database store, in the
/// database too: a pass on another machine removes none of them either);
/// a store this process cannot write is read without a hold, as a replay
/// reads it.
fn held(store: &StoreDir, listed: Vec<String>) -> Vec<String> {
    let ids: Vec<&str> = listed
        .iter()
        .map(String::as_str)
        .filter(|id| worldline_store::store::is_run_id(id))
        .collect();
    if store.hold_reads(&ids).is_err() {
        return listed;
    }
    // A pass holds the store's gate while it removes, and the hold waited
    // for it: a bundle there now stays until this process ends.
    listed
        .into_iter()
        .filter(|id| {
            !worldline_store::store::is_run_id(id)
                || store.bundle_path(id).symlink_metadata().is_ok()
        })
        .collect()
}

/// The runs named, each once: a name that is no run of the store (nor a
/// bundle) is an input error before anything is replayed, not a run
/// counted unreadable as drift, and a run named twice is checked once.
fn named(store: &StoreDir, runs: &[String]) -> Result<Vec<String>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut kept = Vec::new();
    for run in runs {
        let path = store.resolve_run(run)?;
        // An export, or a case, named as a run was verified as a run cut
        // off at its start (exit 0), or counted as drift.
        if let Some(said) = worldline_log::log::bundle::not_a_bundle(&path) {
            return Err(InputError::new(&path, said).into());
        }
        if seen.insert(path) {
            kept.push(run.clone());
        }
    }
    Ok(kept)
}

/// Replay `runs` (as [`drawn`] gave them, with their sample) on `jobs`
/// jobs: those of the `workers` it starts in their processes, the rest on
/// threads of this one. Each replay's report goes to `each` in the order
/// of `runs` as it comes; the first error `each` returns stops what it is
/// handed and ends the check with that error.
pub fn verify(
    sandbox: &Sandbox,
    store: &StoreDir,
    (runs, sample): (Vec<String>, Option<Drawn>),
    jobs: usize,
    workers: impl FnOnce(&Hello) -> Result<Vec<Worker<CheckedRun>>>,
    mut each: impl FnMut(&ReplayReport) -> std::io::Result<()> + Send,
) -> Result<Verified> {
    let mut out = Verified {
        tally: Tally::default(),
        unreadable: Vec::new(),
        headless: Vec::new(),
        sessions: Vec::new(),
        copies: Vec::new(),
        later: Vec::new(),
        sample,
    };
    let mut failed: Option<std::io::Error> = None;
    crate::verify::verify(sandbox, store, &runs, jobs, workers, |i, checked| {
        let run = &runs[i];
        let mcp_session = matches!(checked, Checked::McpSession(_));
        match checked {
            Checked::Replayed(r) | Checked::McpSession(r) => {
                match mcp_session {
                    true => out.tally.add_mcp_session(&r),
                    false => out.tally.add(&r),
                }
                if failed.is_none()
                    && let Err(e) = each(&r)
                {
                    failed = Some(e);
                }
            }
            Checked::Unreadable(error) => out.unreadable.push(Unreadable {
                run: run.clone(),
                error,
            }),
            Checked::Headless => out.headless.push(run.clone()),
            Checked::Session => out.sessions.push(run.clone()),
            Checked::Copy => out.copies.push(run.clone()),
            Checked::Later(rules) => out.later.push((run.clone(), rules)),
        }
    })?;
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}
