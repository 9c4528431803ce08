//! Reporters of a running suite or campaign: each is fed the runner's
//! typed events ([`SuiteEvent`], [`CampaignEvent`], decision 0365) as they
//! happen and writes what it shows to the `impl Write` it was given: the
//! text report, JSON lines (`test --events`, `fuzz --events`), JUnit XML,
//! or the progress message a bar shows.

use serde::Serialize;
use serde_json::{Value, json};
use std::io::{self, Write};
use std::time::Duration;
use worldline_engine::fuzz::campaign::CampaignEvent;
use worldline_engine::suite::SuiteEvent;

/// The text report of `worldline test`: a line per case, each written as
/// soon as its runs are on disk and the cases before it are written
/// ([`Streamed`](super::suite::Streamed)), the rest and the totals when
/// the suite finishes (`suite::write`): the cases to `out`, notes about
/// the machine to `err`.
pub struct Human<O, E> {
    pub out: O,
    pub err: E,
    lines: super::suite::Streamed,
    /// The first write of a line that failed: no line is written after
    /// it, and the report's end returns it.
    broken: Option<io::Error>,
}

impl<O: Write, E: Write> Human<O, E> {
    /// For a suite of the cases `(index, name)`, in its order.
    pub fn new<'a>(out: O, err: E, cases: impl Iterator<Item = (usize, &'a str)>) -> Self {
        Human {
            out,
            err,
            lines: super::suite::Streamed::new(cases),
            broken: None,
        }
    }

    pub fn event(&mut self, e: &SuiteEvent<'_>) -> io::Result<()> {
        match e {
            SuiteEvent::CaseFinished(c) => self.lines.finished(c),
            SuiteEvent::OnDisk { cases } if self.broken.is_none() => {
                if let Err(e) = self.lines.on_disk(cases, &mut self.out) {
                    self.broken = Some(e);
                }
            }
            SuiteEvent::Finished(s) => match self.broken.take() {
                Some(e) => return Err(e),
                None => return self.lines.finish(&mut self.out, &mut self.err, s),
            },
            _ => {}
        }
        Ok(())
    }
}

/// The `--junit` document, written to `out` when the suite finishes.
pub struct Junit<W>(pub W);

impl<W: Write> Junit<W> {
    pub fn event(&mut self, e: &SuiteEvent<'_>) -> anyhow::Result<()> {
        if let SuiteEvent::Finished(s) = e {
            self.0.write_all(super::junit::render(s)?.as_bytes())?;
            self.0.flush()?;
        }
        Ok(())
    }
}

/// One JSON object a line per event (keys sorted, `"event"` naming it),
/// flushed after each, so a file being written can be followed.
pub struct Lines<W>(pub W);

impl<W: Write> Lines<W> {
    /// A suite's event: `started` {cases, jobs, repeat}, `case_started`
    /// {index, name}, `interrupted` {signal}, `case_finished` {case: a case
    /// of `test --json`}, `finished` {summary: the `test --json` document}.
    pub fn suite(&mut self, e: &SuiteEvent<'_>) -> io::Result<()> {
        let line = match e {
            // Said by `case_finished` and `finished` already.
            SuiteEvent::OnDisk { .. } => return Ok(()),
            SuiteEvent::Started {
                cases,
                jobs,
                repeat,
            } => json!({"event": "started", "cases": cases, "jobs": jobs, "repeat": repeat}),
            SuiteEvent::CaseStarted { index, name } => {
                json!({"event": "case_started", "index": index, "name": name})
            }
            SuiteEvent::Interrupted { signal } => {
                json!({"event": "interrupted", "signal": signal})
            }
            SuiteEvent::CaseFinished(c) => json!({
                "event": "case_finished",
                "case": value(&super::suite::CaseSummary::of(c))?,
            }),
            SuiteEvent::Finished(s) => json!({
                "event": "finished",
                "summary": value(&super::suite::SuiteSummary::of(s))?,
            }),
        };
        self.write(&line)
    }

    /// A campaign's event: `started` {runs, jobs}, `run_finished` {trial},
    /// `interrupted` {signal}, `finished` {tally}.
    pub fn campaign(&mut self, e: &CampaignEvent<'_>) -> io::Result<()> {
        let line = match e {
            CampaignEvent::Started { runs, jobs } => {
                json!({"event": "started", "runs": runs, "jobs": jobs})
            }
            CampaignEvent::RunFinished(t) => json!({"event": "run_finished", "trial": value(t)?}),
            CampaignEvent::Interrupted { signal } => {
                json!({"event": "interrupted", "signal": signal})
            }
            CampaignEvent::Finished(t) => json!({"event": "finished", "tally": value(t)?}),
        };
        self.write(&line)
    }

    fn write(&mut self, line: &Value) -> io::Result<()> {
        serde_json::to_writer(&mut self.0, line)?;
        self.0.write_all(b"\n")?;
        self.0.flush()
    }
}

/// A serialized value with its maps' keys sorted.
fn value(v: &impl Serialize) -> io::Result<Value> {
    serde_json::to_value(v).map_err(io::Error::other)
}

/// What a progress bar shows: how many cases or runs are done and the
/// message beside the count (`3 failed`, and for a campaign its rate).
#[derive(Default)]
pub struct Progress {
    pub done: u64,
    pub failed: u64,
}

impl Progress {
    /// Count a suite's event; the new message when a case finished.
    pub fn suite(&mut self, e: &SuiteEvent<'_>) -> Option<String> {
        let SuiteEvent::CaseFinished(c) = e else {
            return None;
        };
        self.done += 1;
        self.failed += u64::from(!c.skipped() && !c.passed() && c.status() != "interrupted");
        Some(format!("{} failed", self.failed))
    }

    /// Count a campaign's event, `elapsed` into it; the new message when a
    /// run finished.
    pub fn campaign(&mut self, e: &CampaignEvent<'_>, elapsed: Duration) -> Option<String> {
        let CampaignEvent::RunFinished(t) = e else {
            return None;
        };
        self.done += 1;
        self.failed += u64::from(t.signature.is_some());
        let rate = super::fuzz::rate(self.done as f64 / elapsed.as_secs_f64().max(1e-9));
        Some(format!("{} failed  {rate} runs/s", self.failed))
    }
}
