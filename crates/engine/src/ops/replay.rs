//! Replay recorded runs strictly against their logs: one run, or many
//! (`verify`) with the drift rate over them.

use crate::log::bundle;
use crate::replay::{self, Recorded, ReplayReport, Verdict};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::Result;

/// Replay `rec` with its recorded agent: identical, or where it diverged.
pub fn replay(sandbox: &Sandbox, store: &StoreDir, rec: &Recorded) -> Result<ReplayReport> {
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
}

impl Verified {
    pub fn count(&self, v: Verdict) -> usize {
        self.reports.iter().filter(|r| r.verdict == v).count()
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

/// Replay `runs` (every run of the store when empty).
pub fn verify(sandbox: &Sandbox, store: &StoreDir, runs: &[String]) -> Result<Verified> {
    let runs = if runs.is_empty() {
        store.run_ids()?
    } else {
        runs.to_vec()
    };
    // Bundles being created are hard-linked from a temporary file; one a
    // killed writer left is not a run.
    crate::durable::sweep(&store.runs_dir());
    let mut out = Verified {
        reports: Vec::new(),
        unreadable: Vec::new(),
        headless: Vec::new(),
    };
    for run in runs {
        if let Ok(path) = store.resolve_run(&run)
            && bundle::has_header(&path).is_ok_and(|has| !has)
        {
            out.headless.push(run);
            continue;
        }
        match replay::open(store, &run).and_then(|rec| replay::replay(sandbox, store, &rec)) {
            Ok(r) => out.reports.push(r),
            Err(e) => out.unreadable.push(Unreadable {
                run,
                error: format!("{e:#}"),
            }),
        }
    }
    Ok(out)
}
