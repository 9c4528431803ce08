//! Replay recorded runs strictly against their logs: one run, or many
//! (`verify`) with the drift rate over them.

use crate::lanes::worker::Worker;
use crate::replay::{self, RecordedRun, ReplayReport, Scope, Verdict};
use crate::verify::{Checked, CheckedRun, Hello};
use anyhow::Result;
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

/// Many runs replayed.
pub struct Verified {
    pub reports: Vec<ReplayReport>,
    pub unreadable: Vec<Unreadable>,
    /// Bundles cut off before their header (killed as the run started, or
    /// a full disk): incomplete runs with nothing to replay, not drift.
    pub headless: Vec<String>,
    /// MCP sessions: read (their hash chain checked), not replayed; there
    /// is no process to run again.
    pub sessions: Vec<String>,
    /// The sample checked, when one was asked for.
    pub sample: Option<Drawn>,
}

/// The replayed runs counted by verdict, as `verify` reports them.
pub struct Tally {
    /// WebAssembly runs replayed bit for bit.
    pub identical: usize,
    /// Native runs whose boundary replayed identical.
    pub boundary_replay: usize,
    pub verified_prefix: usize,
    pub timeout: usize,
    pub diverged: usize,
    /// Native runs that did not diverge (whatever else their verdict).
    pub boundary_agreed: usize,
}

impl Verified {
    pub fn count(&self, v: Verdict) -> usize {
        self.reports.iter().filter(|r| r.verdict == v).count()
    }

    /// The replayed runs by verdict (and scope, for `identical`).
    pub fn tally(&self) -> Tally {
        let identical_in = |scope| {
            self.reports
                .iter()
                .filter(|r| r.verdict == Verdict::Identical && r.scope == scope)
                .count()
        };
        Tally {
            identical: identical_in(Scope::BitForBit),
            boundary_replay: identical_in(Scope::Boundary),
            verified_prefix: self.count(Verdict::VerifiedPrefix),
            timeout: self.count(Verdict::Timeout),
            diverged: self.count(Verdict::Diverged),
            boundary_agreed: self
                .reports
                .iter()
                .filter(|r| r.scope == Scope::Boundary && r.verdict != Verdict::Diverged)
                .count(),
        }
    }

    /// Diverged or unreadable runs over all replayed or unreadable ones.
    pub fn drift_rate(&self) -> f64 {
        let total = self.reports.len() + self.unreadable.len();
        if total == 0 {
            return 0.0;
        }
        (self.count(Verdict::Diverged) + self.unreadable.len()) as f64 / total as f64
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
}

/// Replay `runs` (every run of the store when empty), or a seeded sample
/// of them, on `jobs` jobs: those of the `workers` it starts in their
/// processes, the rest on threads of this one.
pub fn verify(
    sandbox: &Sandbox,
    store: &StoreDir,
    runs: &[String],
    sample: Option<Sample>,
    jobs: usize,
    workers: impl FnOnce(&Hello) -> Result<Vec<Worker<CheckedRun>>>,
) -> Result<Verified> {
    let all = if runs.is_empty() {
        store.run_ids()?
    } else {
        runs.to_vec()
    };
    let (runs, drawn) = match sample {
        Some(Sample { size, seed }) => {
            let runs = crate::verify::sample(&all, size, seed);
            let drawn = Drawn {
                of: all.len(),
                seed,
                runs: runs.clone(),
            };
            (runs, Some(drawn))
        }
        None => (all, None),
    };
    let mut out = Verified {
        reports: Vec::new(),
        unreadable: Vec::new(),
        headless: Vec::new(),
        sessions: Vec::new(),
        sample: drawn,
    };
    for (run, checked) in runs
        .iter()
        .zip(crate::verify::verify(sandbox, store, &runs, jobs, workers)?)
    {
        match checked {
            Checked::Replayed(r) => out.reports.push(r),
            Checked::Unreadable(error) => out.unreadable.push(Unreadable {
                run: run.clone(),
                error,
            }),
            Checked::Headless => out.headless.push(run.clone()),
            Checked::Session => out.sessions.push(run.clone()),
        }
    }
    Ok(out)
}
