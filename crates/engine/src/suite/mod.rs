//! A suite: many cases against one agent on one engine, run in parallel
//! (`--jobs`), each result in the slot of its case, so the report is in the
//! order the cases were given whatever the number of jobs. A case that
//! cannot run (an internal error, or its own `exec` that cannot start) is
//! a result too; the suite goes on,
//! unless the store cannot be written (a full disk, a read-only folder, a
//! database store's server gone): that is an error of the machine, which
//! stops the suite starting cases instead of failing every case, as a
//! signal does; the cases under way end and the suite's report of the
//! runs made comes with the error ([`SuiteRun::stopped`]). A case file that cannot be loaded is a collection
//! error: carried in the result, it stops nothing but `--fail-fast`.
//! `select` decides which cases run; `last` remembers which failed.
//! While it runs, a suite reports what happens as [`SuiteEvent`]s to the
//! one sink its caller hands it (decision 0365); reporters turn them into
//! text, JSON lines, JUnit or a progress bar.

pub mod last;
pub mod pick;
pub mod select;

use crate::fuzz::campaign::model_seed;
use crate::grade::verdict;
use crate::native::signals;
use crate::run::{RunOptions, RunOutcome, Runner};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use worldline_case::ahead;
use worldline_case::case::Case;
use worldline_case::durable::{Spares, SyncBatch};
use worldline_case::error::{InputError, input_of, is_input};
use worldline_case::parallel::par_map;
use worldline_log::log::Held;
use worldline_log::log::bundle::Group;
use worldline_log::log::tokens;
use worldline_log::log::usage::ModelTotals;
use worldline_runtime::mediate::entropy::derive;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// A case of the suite, with where it came from.
pub struct Entry {
    /// Its position in the whole suite (before filters and partitions), so
    /// shard reports can be merged back into one order.
    pub index: usize,
    /// The case's short name (`incident/stale-deploys`).
    pub name: String,
    pub path: PathBuf,
    pub case: Case,
}

/// One run of a case and how it went. The run's events and final state
/// are not kept: what the report needs of them is counted as the run
/// finishes, so a suite's memory does not grow with its runs.
pub struct Attempt {
    /// The run (without its events and final state), or why it could not
    /// run.
    pub outcome: Result<RunOutcome, String>,
    /// Real time the run took (reported, never recorded).
    pub elapsed: Duration,
    /// Its model calls, counted.
    pub model: ModelTotals,
    /// Its judge's calls (`[[expect.judge]]`), counted apart.
    pub judge: ModelTotals,
    /// The case asked for token ids and the run's endpoint returned none:
    /// the warning.
    pub tokens_missing: Option<String>,
}

impl Attempt {
    /// `outcome` kept as a suite keeps it: counted, then its events, final
    /// state and output let go.
    fn kept(case: &Case, outcome: Result<RunOutcome, String>, elapsed: Duration) -> Self {
        let mut attempt = Attempt {
            outcome,
            elapsed,
            model: ModelTotals::default(),
            judge: ModelTotals::default(),
            tokens_missing: None,
        };
        if let Ok(o) = &mut attempt.outcome {
            attempt.model = ModelTotals::of_run(&o.events.whole());
            if let Some(g) = &o.grade {
                attempt.judge =
                    ModelTotals::of_judges(g.assertions.iter().filter_map(|a| a.judge.as_ref()));
            }
            if case.model.token_ids {
                attempt.tokens_missing = tokens::missing(o.events.as_held());
            }
            o.events = Held::default();
            o.final_state = Default::default();
            // No report of a suite shows an agent's output (it is in the
            // bundle): ~50 KB a case for an agent that answers its calls'
            // results.
            o.footer.output = None;
        }
        attempt
    }

    /// Let go of what only the run that speaks for its case
    /// ([`CaseRun::shown`]) is reported with: the grade's assertions, state
    /// diff and turns, and the footer's captured streams,
    /// backtrace and recorded grade, but the verdict and reward a group
    /// member is reported with. A repeated case's memory then grows by a
    /// few hundred bytes a run, not by its diff (~300 KB a run for a
    /// case whose agent adds 200 rows).
    fn slim(&mut self) {
        let Ok(o) = &mut self.outcome else {
            return;
        };
        if let Some(g) = &mut o.grade {
            g.assertions = Vec::new();
            g.diff = Default::default();
            g.turns = Vec::new();
        }
        let f = &mut o.footer;
        if let Some(grade) = &mut f.grade {
            let kept: serde_json::Map<_, _> = ["passed", "reward"]
                .into_iter()
                .filter_map(|k| Some((k.to_string(), grade.get(k)?.clone())))
                .collect();
            *grade = serde_json::Value::Object(kept);
        }
        f.stdout = String::new();
        f.stderr = String::new();
        f.backtrace = Vec::new();
    }
}

/// One case of a suite and how its runs went (one per `--repeat`).
pub struct CaseRun {
    pub index: usize,
    pub name: String,
    pub path: PathBuf,
    /// Its world (`name@vN`), whether it ran or not.
    pub world: String,
    /// Empty when `--fail-fast` or a signal stopped the suite before this
    /// case.
    pub attempts: Vec<Attempt>,
    /// A signal stopped its runs before `--repeat`'s count (or its
    /// `--group`'s): its runs so far are kept, but it has not passed.
    pub cut: Option<Cut>,
}

/// A case's repeats a signal cut short.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cut {
    /// `SIGINT` or `SIGTERM` (or `the store's error`, which stopped the
    /// suite).
    pub signal: &'static str,
    /// The runs the case was to make.
    pub of: u64,
}

impl Cut {
    /// Why a case whose runs all passed so far did not pass.
    pub fn reason(&self, runs: u64) -> String {
        format!(
            "{} stopped its runs after {runs} of {}; run it again to see it pass",
            self.signal, self.of
        )
    }
}

impl Attempt {
    pub fn passed(&self) -> bool {
        self.outcome.as_ref().is_ok_and(|o| {
            verdict::ending(o.footer.status, o.grade.as_ref()) == verdict::Ending::Passed
        })
    }

    /// An agent fault (trap, fuel, memory, timeout) or a run that could not
    /// run: an error rather than a graded failure.
    pub fn errored(&self) -> bool {
        match &self.outcome {
            Ok(o) => o.footer.status.is_fault(),
            Err(_) => true,
        }
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
            Ok(o) => verdict::reason(&o.footer, o.grade.as_ref()),
        }
    }

    pub fn run_id(&self) -> Option<&str> {
        self.outcome.as_ref().ok().and_then(|o| o.run_id.as_deref())
    }
}

impl CaseRun {
    /// Not run: `--fail-fast` or a signal stopped the suite first (a
    /// case whose only run the signal stopped is `interrupted`).
    pub fn skipped(&self) -> bool {
        self.attempts.is_empty() && self.cut.is_none()
    }

    /// Every run passed, and it made them all.
    pub fn passed(&self) -> bool {
        !self.skipped() && self.cut.is_none() && self.attempts.iter().all(Attempt::passed)
    }

    /// Its status: the shown run's, or `interrupted` when each run it made
    /// (if any) passed but a signal cut them short.
    pub fn status(&self) -> &'static str {
        match self.shown() {
            None if self.cut.is_some() => "interrupted",
            None => "skipped",
            Some(a) if a.passed() && self.cut.is_some() => "interrupted",
            Some(a) => a.status(),
        }
    }

    /// Why it did not pass, in one line.
    pub fn reason(&self) -> Option<String> {
        let Some(shown) = self.shown() else {
            return self.cut.map(|cut| cut.reason(0));
        };
        match self.cut {
            Some(cut) if shown.passed() => Some(cut.reason(self.attempts.len() as u64)),
            _ => shown.reason(),
        }
    }

    /// How many runs passed.
    pub fn passes(&self) -> u64 {
        self.attempts.iter().filter(|a| a.passed()).count() as u64
    }

    /// The run that speaks for the case: the first that did not pass, else
    /// the first.
    pub fn shown(&self) -> Option<&Attempt> {
        self.attempts
            .iter()
            .find(|a| !a.passed())
            .or(self.attempts.first())
    }

    /// Real time of all its runs.
    pub fn elapsed(&self) -> Duration {
        self.attempts.iter().map(|a| a.elapsed).sum()
    }
}

/// A component compiled before the suite's first case (not in any case's
/// time).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, PartialEq)]
pub struct Compile {
    pub bytes: u64,
    /// The file, and for a service, whose service it is.
    pub component: String,
    /// Real time the compile took.
    pub ms: f64,
}

/// A finished suite.
pub struct SuiteRun {
    pub cases: Vec<CaseRun>,
    /// Runs of each case.
    pub repeat: u64,
    /// When it started and how long it took (real time, for reports).
    pub started: SystemTime,
    pub elapsed: Duration,
    /// Case files that could not be loaded (reported; the suite exits 2).
    pub collection_errors: Vec<InputError>,
    /// Components compiled before the first case.
    pub compiles: Vec<Compile>,
    /// The signal that stopped the suite (`SIGINT`, `SIGTERM`) under an
    /// [`Interrupt`](crate::native::Interrupt): the cases it had not started are skipped.
    pub interrupted: Option<&'static str>,
    /// The error that stopped the suite starting cases (the store could
    /// not be written: a full disk, a database store's server gone): the
    /// cases it had not started are skipped, and the command fails with
    /// it once the runs made are reported.
    pub stopped: Option<anyhow::Error>,
    /// The bundles of runs the database did not take (its server went
    /// away), set aside in the working folder's `unstored/`: every one,
    /// the one `stopped` names and those of cases under way alike.
    pub set_aside: Vec<PathBuf>,
}

impl SuiteRun {
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.passed()).count()
    }

    pub fn skipped(&self) -> usize {
        self.cases.iter().filter(|c| c.skipped()).count()
    }

    /// Cases a signal cut short, each run they made passing (status
    /// `interrupted`): neither passed nor failed.
    pub fn interrupted_cases(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| c.status() == "interrupted")
            .count()
    }

    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed() - self.skipped() - self.interrupted_cases()
    }
}

/// What happens while a suite runs, in order on each worker thread (the
/// cases of different threads interleave): `Started` first, `Finished`
/// last, and between them each case's `CaseStarted` before its
/// `CaseFinished`, and a case's `OnDisk` after its `CaseFinished`.
pub enum SuiteEvent<'a> {
    /// The suite is about to start its first case.
    Started {
        /// Cases selected (not counting collection errors).
        cases: usize,
        jobs: usize,
        /// Runs of each case.
        repeat: u64,
    },
    /// A case's first run is about to start.
    CaseStarted { index: usize, name: &'a str },
    /// A signal came: no case starts from now on; those under way end.
    Interrupted { signal: &'static str },
    /// A case's runs are done (or it was skipped by `--fail-fast` or a
    /// signal).
    CaseFinished(&'a CaseRun),
    /// The runs of these finished cases (their `index`) are on disk: a
    /// flush of the suite's batch took them while others still ran
    /// (decision 0263). A reporter may say them done from now on; those
    /// no flush took before the last are on disk at `Finished`.
    OnDisk { cases: &'a [usize] },
    /// Every case is done and the runs are on disk.
    Finished(&'a SuiteRun),
}

/// What a suite runs: the cases, the agent, where runs go.
pub struct Suite<'a> {
    pub sandbox: &'a Sandbox,
    pub agent: &'a dyn Runner,
    pub cases: &'a [Entry],
    pub store: &'a StoreDir,
    /// `--model-seed`: the first repetition's model seed.
    pub model_seed: Option<u64>,
    /// Runs of each case; repetition `r > 0` draws its own model seed.
    pub repeat: u64,
    /// `--group`: the runs of a case are a group, every member (the first
    /// too) with its own recorded model seed.
    pub group: bool,
    pub jobs: usize,
    /// Stop starting cases after the first that does not pass, or before
    /// the first when a case file could not be loaded.
    pub fail_fast: bool,
    /// Case files that could not be loaded: the other cases run (as in
    /// pytest and nextest), unless `fail_fast`.
    pub collection_errors: &'a [InputError],
    /// Components compiled before the first case, carried into the result.
    pub compiles: &'a [Compile],
}

/// Whether the input error `err` holds is one in `case`'s own file.
fn of_case(err: &anyhow::Error, case: &Case) -> bool {
    input_of(err).is_some_and(|i| i.file == case.path)
}

/// The model seed of member `i` of a case's group (`test --group`):
/// derived from the case seed, distinct for every member.
pub fn member_seed(case_seed: u64, i: u64) -> u64 {
    derive(case_seed, "group-model", i)
}

impl Suite<'_> {
    /// The runs of case `e`: `repeat` of them (each with its model seed, a
    /// group's members recorded as one), their bundles synced with `batch`
    /// into files of `spares`; no repetition starts once `stopped` holds.
    /// An error that stops the suite (the store's) ends them: the runs
    /// made before it, and it. A run the signal stopped (a native one)
    /// ends them too, left out, and is said (`true`).
    fn attempts(
        &self,
        e: &Entry,
        repeat: u64,
        (batch, spares): (&SyncBatch, &Spares),
        stopped: &dyn Fn() -> bool,
    ) -> (Vec<Attempt>, Option<anyhow::Error>, bool) {
        let mut attempts = Vec::new();
        // The group's id: its first member's run id.
        let mut group_id: Option<String> = None;
        // Whether a run of the case has not passed yet.
        let mut failed = false;
        for rep in 0..repeat {
            if rep > 0 && stopped() {
                break;
            }
            let t = Instant::now();
            let options = RunOptions {
                store: Some(self.store),
                batch: Some(batch),
                spares: Some(spares),
                model_seed: match rep {
                    _ if self.group => Some(member_seed(e.case.seed, rep)),
                    0 => self.model_seed,
                    _ => model_seed(e.case.seed, rep),
                },
                group: self.group.then(|| Group {
                    id: group_id.clone(),
                    member: rep,
                    size: repeat,
                }),
                ..RunOptions::default()
            };
            let outcome = match self.agent.run(self.sandbox, &e.case, options) {
                Ok(o) => Ok(o),
                // A problem of the case's own file (its `exec` cannot
                // start) is its result; any other input error (the
                // store's write errors, a flag every case shares) stops
                // the suite.
                Err(err) if is_input(&err) && !of_case(&err, &e.case) => {
                    return (
                        attempts,
                        Some(err.context(format!("running case {}", e.name))),
                        false,
                    );
                }
                Err(err) => Err(format!("{err:#}")),
            };
            if self.group && group_id.is_none() {
                group_id = outcome.as_ref().ok().and_then(|o| o.run_id.clone());
            }
            // A native run the signal stopped is not the agent's to
            // count (it was a `trapped` failure): the case is cut short
            // there, as a component run's case is before its next run.
            if outcome
                .as_ref()
                .is_ok_and(|o| o.footer.stopped_from_outside())
            {
                return (attempts, None, true);
            }
            let mut attempt = Attempt::kept(&e.case, outcome, t.elapsed());
            // Kept whole: the first run and the first that did not
            // pass, one of which `CaseRun::shown` reports.
            let speaks = attempts.is_empty() || (!failed && !attempt.passed());
            failed |= !attempt.passed();
            if !speaks {
                attempt.slim();
            }
            attempts.push(attempt);
        }
        (attempts, None, false)
    }

    /// Run every case on `jobs` threads, reporting each step to `sink`
    /// (called from the worker threads).
    pub fn run(&self, sink: &(dyn Fn(SuiteEvent<'_>) + Sync)) -> anyhow::Result<SuiteRun> {
        sink(SuiteEvent::Started {
            cases: self.cases.len(),
            jobs: self.jobs,
            repeat: self.repeat.max(1),
        });
        let started = SystemTime::now();
        let t0 = Instant::now();
        let stop = AtomicBool::new(!self.collection_errors.is_empty());
        // The first error that stopped the suite, once one has.
        let halted: std::sync::Mutex<Option<anyhow::Error>> = std::sync::Mutex::new(None);
        let is_halted = || (halted.lock().unwrap_or_else(|e| e.into_inner())).is_some();
        // Held while a failing case sets `stop` and is told (below).
        let failing = std::sync::Mutex::new(());
        let repeat = self.repeat.max(1);
        // The runs are flushed to disk together, not one `fsync` each.
        let batch = SyncBatch::start(&self.store.runs_dir(), SyncBatch::INTERVAL);
        let runs = self.cases.len() * repeat as usize;
        // Their bundles' files made ahead: four for each job, at most 32
        // (each an open descriptor), no more than the suite's runs.
        let spares = Spares::start(&self.store.runs_dir(), (4 * self.jobs).min(32).min(runs));
        // Their index rows committed off their path (when they fill a batch).
        let committer = worldline_store::index::committer(self.store, runs);
        // Whether `Interrupted` was sent.
        let told = AtomicBool::new(false);
        let interrupted = || {
            let signal = signals::interrupted()?;
            if !told.swap(true, Ordering::SeqCst) {
                sink(SuiteEvent::Interrupted { signal });
            }
            Some(signal)
        };
        // The finished cases no flush has taken yet, each with how many
        // runs had been handed to the batch when it finished.
        let unflushed: std::sync::Mutex<Vec<(usize, u64)>> = std::sync::Mutex::new(Vec::new());
        let cases = std::thread::scope(|s| {
            // Told as the signal comes, not when a case under way ends;
            // and the cases a flush took, as it takes them.
            let watch = s.spawn(|| {
                while !told.load(Ordering::SeqCst) && interrupted().is_none() {
                    std::thread::park_timeout(Duration::from_millis(50));
                    let durable = batch.durable();
                    let mut on_disk = Vec::new();
                    (unflushed.lock().unwrap_or_else(|e| e.into_inner())).retain(
                        |&(index, handed)| {
                            let taken = handed <= durable;
                            if taken {
                                on_disk.push(index);
                            }
                            !taken
                        },
                    );
                    if !on_disk.is_empty() {
                        sink(SuiteEvent::OnDisk { cases: &on_disk });
                    }
                }
            });
            let cases = par_map(self.cases.len(), self.jobs, |i| {
                let e = &self.cases[i];
                let skipped = self.fail_fast && stop.load(Ordering::Relaxed);
                let (attempts, stopped) = if skipped || interrupted().is_some() || is_halted() {
                    (Vec::new(), false)
                } else {
                    sink(SuiteEvent::CaseStarted {
                        index: e.index,
                        name: &e.name,
                    });
                    let (attempts, error, stopped) =
                        self.attempts(e, repeat, (&batch, &spares), &|| {
                            interrupted().is_some() || is_halted()
                        });
                    if let Some(error) = error {
                        (halted.lock().unwrap_or_else(|e| e.into_inner())).get_or_insert(error);
                    }
                    (attempts, stopped)
                };
                let made = attempts.len() as u64;
                // A signal, or the error that stopped the suite.
                let stopper =
                    || interrupted().or_else(|| is_halted().then_some("the store's error"));
                let cut = ((made > 0 || stopped) && made < repeat)
                    .then(stopper)
                    .flatten()
                    .map(|signal| Cut { signal, of: repeat });
                let run = CaseRun {
                    index: e.index,
                    name: e.name.clone(),
                    path: e.path.clone(),
                    world: e.case.world.reference(),
                    attempts,
                    cut,
                };
                // A failure is told before the cases it skips: a worker
                // that saw `stop` tells its skip once the failing case's
                // own finish is told (it held `failing` while it set
                // `stop`), as nextest reports a failure and then what was
                // cancelled.
                let failed = !run.skipped() && !run.passed();
                let _ordered =
                    (failed || skipped).then(|| failing.lock().unwrap_or_else(|e| e.into_inner()));
                if failed {
                    stop.store(true, Ordering::Relaxed);
                }
                sink(SuiteEvent::CaseFinished(&run));
                (unflushed.lock().unwrap_or_else(|e| e.into_inner()))
                    .push((e.index, batch.handed()));
                Ok::<_, anyhow::Error>(run)
            });
            // The watch ends (the suite's report tells a later signal).
            told.store(true, Ordering::SeqCst);
            watch.thread().unpark();
            cases
        })?;
        drop(spares);
        drop(committer);
        let flushed = std::thread::scope(|s| {
            // The runs' last flush waits on the disk while the last rows
            // the suite queued for the index are committed, and its log
            // checkpointed after a suite of many runs (decision 0393); the
            // flush not begun by then is done here (decision 0407).
            let flushing = ahead::spawn(s, move || batch.finish());
            worldline_store::index::settle(self.store, runs);
            flushing.take()
        });
        flushed.map_err(|e| self.store.write_error(&self.store.runs_dir(), e))?;
        let run = SuiteRun {
            cases,
            repeat,
            started,
            elapsed: t0.elapsed(),
            collection_errors: self.collection_errors.to_vec(),
            compiles: self.compiles.to_vec(),
            interrupted: interrupted(),
            stopped: halted.into_inner().unwrap_or_else(|e| e.into_inner()),
            set_aside: self.store.set_aside(),
        };
        sink(SuiteEvent::Finished(&run));
        Ok(run)
    }
}
