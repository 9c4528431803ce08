//! `fork --samples K`: the group of branches from one event, written as
//! its branches come (a line each, or each member of the `fork --samples
//! --json` document), then the group's pass@k and pass^k. Nothing of a
//! branch is kept once its line is written, so K branches cost the memory
//! of one.

use super::run::RunSummary;
use crate::indented;
use serde_json::{Value, json};
use std::io::{self, Write};
use worldline_engine::fuzz::stats::{pass_at_ks, pass_hat_ks};
use worldline_engine::fuzz::summary::PassK;
use worldline_engine::grade::verdict::{self, Ending};
use worldline_engine::run::RunOutcome;

/// What `fork --samples` was asked: `samples` branches from event `at`
/// of `parent`.
pub struct Asked<'a> {
    /// The parent run's id.
    pub parent: &'a str,
    /// The event branched from.
    pub at: u64,
    /// Branches asked for (`--samples`).
    pub samples: u64,
}

/// The group's report, written to `out` as its branches come.
pub struct Stream<'a, W: Write> {
    out: W,
    asked: Asked<'a>,
    json: bool,
    /// Branches written so far, and how many of them passed.
    size: u64,
    passes: u64,
    /// The group's id: its first member's run.
    id: Option<String>,
    /// The signal that stopped the branching, if one did.
    interrupted: Option<&'static str>,
}

impl<'a, W: Write> Stream<'a, W> {
    /// A report of `asked` to `out`: text, or the `--json` document.
    pub fn new(out: W, asked: Asked<'a>, json: bool) -> Self {
        Stream {
            out,
            asked,
            json,
            size: 0,
            passes: 0,
            id: None,
            interrupted: None,
        }
    }

    /// A signal (`SIGINT`, `SIGTERM`) stopped the branching before the
    /// `samples` asked for: [`Stream::finish`] says so, and of how many.
    pub fn interrupted(&mut self, signal: Option<&'static str>) {
        self.interrupted = signal;
    }

    /// Whether anything has been written yet.
    pub fn started(&self) -> bool {
        self.size > 0
    }

    /// The next member, which drew the model from `seed`: its line, or
    /// its entry in the document's `members`.
    pub fn member(&mut self, seed: u64, o: &RunOutcome) -> io::Result<()> {
        let index = self.size;
        if index == 0 {
            self.id.clone_from(&o.run_id);
            self.head()?;
        }
        self.size += 1;
        if verdict::ending(o.footer.status, o.grade.as_ref()) == Ending::Passed {
            self.passes += 1;
        }
        if self.json {
            let member = json!({
                "member": index,
                "model_seed": seed,
                "reward": o.footer.reward(),
                "verdict": o.footer.verdict(),
                "run": RunSummary::of(o),
            });
            let comma = if index == 0 { "" } else { "," };
            write!(self.out, "{comma}\n    {}", indented(&member, 4)?)?;
        } else {
            writeln!(
                self.out,
                "  {index}  {}  {}",
                o.run_id.as_deref().unwrap_or("-"),
                verdict::shown_status(o.footer.status, o.grade.as_ref())
            )?;
        }
        // Written before the next chunk copies the process, whose copies
        // must not inherit a buffer to write again.
        self.out.flush()
    }

    /// The group's rates after the last member; `replayed` is how many
    /// times the prefix was followed. Whether every branch passed (or
    /// completed, ungraded).
    pub fn finish(mut self, replayed: u64, elapsed_ms: f64) -> io::Result<bool> {
        if !self.started() {
            self.head()?;
        }
        let (c, n) = (self.passes, self.size);
        let pass_at = PassK::curve(n, |ks| pass_at_ks(c, n, ks));
        let pass_hat = PassK::curve(n, |ks| pass_hat_ks(&[c], n, ks));
        if self.json {
            let group = json!({
                "id": self.id,
                "size": self.asked.samples,
                "passes": c,
                "pass_at_k": pass_at,
                "pass_hat_k": pass_hat,
            });
            let prefix = json!({"events": self.asked.at, "replayed": replayed});
            let open = if self.started() { "\n  " } else { "" };
            let interrupted = match self.interrupted {
                Some(signal) => format!(",\n  \"interrupted\": {}", json!(signal)),
                None => String::new(),
            };
            writeln!(
                self.out,
                "{open}],\n  \"group\": {},\n  \"prefix\": {},\n  \"elapsed_ms\": {}{interrupted}\n}}",
                indented(&group, 2)?,
                indented(&prefix, 2)?,
                json!(elapsed_ms),
            )?;
        } else {
            let last = |v: &[PassK]| v.last().map_or(0.0, |p| p.value * 100.0);
            // pass@1, and pass@n when n is more (one branch said pass@1
            // twice).
            let at_n = match n {
                1 => String::new(),
                _ => format!(", pass@{n} {:.1}%", last(&pass_at)),
            };
            writeln!(
                self.out,
                "{c}/{n} passed, pass@1 {:.1}%{at_n}, pass^{n} {:.1}% ({:.0} ms)",
                pass_at.first().map_or(0.0, |p| p.value * 100.0),
                last(&pass_hat),
                elapsed_ms
            )?;
            if let Some(signal) = self.interrupted {
                writeln!(
                    self.out,
                    "interrupted by {signal}: {n} of the {} branches asked for made",
                    self.asked.samples
                )?;
            }
        }
        self.out.flush()?;
        Ok(c == n)
    }

    /// `--json` only: end a started document with `error` (the `error`
    /// object `--json` prints for a failed command) after the members
    /// written, so that stdout stays one JSON document.
    pub fn fail(mut self, error: &Value) -> io::Result<()> {
        writeln!(self.out, "\n  ],\n  \"error\": {}\n}}", indented(error, 2)?)?;
        self.out.flush()
    }

    /// The heading: the text's first line, or the document up to its
    /// `members`.
    fn head(&mut self) -> io::Result<()> {
        let a = &self.asked;
        if self.json {
            let parent = json!({"run": a.parent, "event": a.at});
            write!(
                self.out,
                "{{\n  \"parent\": {},\n  \"members\": [",
                indented(&parent, 2)?
            )
        } else {
            writeln!(
                self.out,
                "{} branches of {} at event {} (group {})",
                a.samples,
                a.parent,
                a.at,
                self.id.as_deref().unwrap_or("-")
            )
        }
    }
}
