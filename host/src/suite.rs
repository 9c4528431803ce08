//! A suite: many cases against one agent on one engine, run in parallel
//! (`--jobs`), each result in the slot of its case, so the report is in the
//! order the cases were given whatever the number of jobs. A case that
//! cannot run (an internal error) is a result too; the suite goes on.

use crate::case::Case;
use crate::error::ExitCode;
use crate::grade::verdict;
use crate::parallel::par_map;
use crate::run::{RunOptions, RunOutcome, run_with};
use crate::sandbox::{Agent, Sandbox};
use crate::store::StoreDir;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// One case of a suite and how its run went.
pub struct CaseRun {
    /// The case's short name (`incident/stale-deploys`).
    pub name: String,
    pub path: PathBuf,
    /// The run, or why it could not run.
    pub outcome: Result<RunOutcome, String>,
    /// Real time the run took (reported, never recorded).
    pub elapsed: Duration,
}

impl CaseRun {
    pub fn passed(&self) -> bool {
        self.outcome
            .as_ref()
            .is_ok_and(|o| verdict::exit_code(o.footer.status, o.grade.as_ref()) == ExitCode::Ok)
    }

    /// An agent fault (trap, fuel, memory, timeout) or a run that could not
    /// run: an error rather than a graded failure.
    pub fn errored(&self) -> bool {
        self.outcome
            .as_ref()
            .map_or(true, |o| o.footer.status.is_fault())
    }

    pub fn status(&self) -> &'static str {
        match &self.outcome {
            Ok(o) => verdict::shown_status(o.footer.status, o.grade.as_ref()),
            Err(_) => "error",
        }
    }

    /// Why it did not pass, in one line.
    pub fn reason(&self) -> Option<String> {
        match &self.outcome {
            Err(e) => Some(e.clone()),
            Ok(_) if self.passed() => None,
            // A fault says more than the grade it spoiled (a Python
            // exception, a panic, fuel).
            Ok(o) if o.footer.status.is_fault() => o.footer.error.clone(),
            Ok(o) => o
                .grade
                .as_ref()
                .and_then(verdict::first_failure)
                .or_else(|| o.footer.error.clone()),
        }
    }
}

/// A finished suite.
pub struct SuiteRun {
    pub cases: Vec<CaseRun>,
    /// When it started and how long it took (real time, for reports).
    pub started: SystemTime,
    pub elapsed: Duration,
}

impl SuiteRun {
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed()).count()
    }

    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed()
    }
}

/// What a suite runs: the cases (with the files and names they came from),
/// the agent, where runs go.
pub struct Suite<'a> {
    pub sandbox: &'a Sandbox,
    pub agent: &'a Agent,
    pub cases: &'a [(String, PathBuf, Case)],
    pub store: &'a StoreDir,
    pub model_seed: Option<u64>,
    pub jobs: usize,
}

impl Suite<'_> {
    /// Run every case on `jobs` threads.
    pub fn run(&self) -> SuiteRun {
        let started = SystemTime::now();
        let t0 = Instant::now();
        let cases = par_map(self.cases.len(), self.jobs, |i| {
            let (name, path, case) = &self.cases[i];
            let t = Instant::now();
            let options = RunOptions {
                store: Some(self.store),
                model_seed: self.model_seed,
                ..RunOptions::default()
            };
            let outcome =
                run_with(self.sandbox, self.agent, case, options).map_err(|e| format!("{e:#}"));
            Ok(CaseRun {
                name: name.clone(),
                path: path.clone(),
                outcome,
                elapsed: t.elapsed(),
            })
        })
        .expect("a case's error is its result, never the suite's");
        SuiteRun {
            cases,
            started,
            elapsed: t0.elapsed(),
        }
    }
}
