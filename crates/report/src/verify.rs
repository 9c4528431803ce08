//! What `worldline replay RUN` and `worldline verify` show: a line (or a
//! few, for a divergence) per replayed run, the runs not replayed and why,
//! the totals with the drift rate; or the `--json` document of the same.
//! A redacted copy is not replayed: `replay` says what reading it checked.
//! The engine hands back a typed result, not a stream of events
//! (decision 0327).

use serde_json::{Value, json};
use std::io::{self, Write};
use std::path::Path;
use worldline_engine::ops::replay::{Drawn, Verified};
use worldline_engine::replay::{ReplayReport, Scope, Verdict};
use worldline_log::log::bundle::Redacted;
use worldline_log::log::rules;

/// One replay's verdict: a line, then where a divergence differs and
/// which passed-through variables differ from the recording.
pub fn write_replay(out: &mut impl Write, r: &ReplayReport) -> io::Result<()> {
    let chain = r.chain_hash.get(..16).unwrap_or(&r.chain_hash);
    match r.verdict {
        Verdict::Identical if r.scope == Scope::Boundary => writeln!(
            out,
            "{}  identical at the boundary  (boundary replay of {}: {} events, chain {chain})",
            r.run,
            r.session.as_deref().unwrap_or("a native agent"),
            r.matched
        )?,
        Verdict::Identical => writeln!(
            out,
            "{}  identical  ({} events, chain {chain})",
            r.run, r.matched
        )?,
        Verdict::VerifiedPrefix => match &r.stopped {
            Some(status) => writeln!(
                out,
                "{}  verified  ({} of {} recorded events match; the recorded run was stopped before it ended (`{status}`: a signal, or the command ending it) and is not replayable, so there is no outcome to compare)",
                r.run, r.matched, r.recorded
            )?,
            None => writeln!(
                out,
                "{}  verified  ({} of {} recorded events match; the recorded run is incomplete, so there is no outcome to compare)",
                r.run, r.matched, r.recorded
            )?,
        },
        Verdict::Timeout if r.replay_timed_out => writeln!(
            out,
            "{}  timeout  (the replay's own watchdog stopped it before the recording's end: [limits] timeout_ms is wall-clock, so sooner on a busier machine; {} of {} recorded events replayed and match)",
            r.run, r.matched, r.recorded
        )?,
        Verdict::Timeout => writeln!(
            out,
            "{}  timeout  (stopped by the watchdog, so not replayable; {} of {} recorded events replayed and match)",
            r.run, r.matched, r.recorded
        )?,
        Verdict::Diverged => write_divergence(out, r)?,
    }
    if !r.env_differs.is_empty() {
        writeln!(out, "    {}", env_differs(&r.env_differs))?;
    }
    Ok(())
}

/// A diverged replay: where, what kind, the diff, expected and actual.
fn write_divergence(out: &mut impl Write, r: &ReplayReport) -> io::Result<()> {
    let Some(d) = &r.divergence else {
        return writeln!(out, "{}  diverged", r.run);
    };
    let field = d
        .field
        .as_deref()
        .map(|f| format!(", field `{f}`"))
        .unwrap_or_default();
    writeln!(
        out,
        "{}  diverged at event {} ({}{field})",
        r.run,
        d.index,
        d.class.as_str()
    )?;
    // Where they differ first: the whole values can be long.
    for line in &r.diff {
        writeln!(out, "    {line}")?;
    }
    writeln!(
        out,
        "    expected: {}",
        worldline_case::canon::to_string(&d.expected)
    )?;
    writeln!(
        out,
        "    actual:   {}",
        worldline_case::canon::to_string(&d.actual)
    )
}

/// `verify`'s report, written as the replays come: the text's lines, or
/// the `--json` document, whose `runs` come first (the totals after them
/// are known only at the end), the rest in alphabetical order. Nothing of
/// a replay is kept once written, so a store's check costs the memory of
/// its list of runs, not of its reports.
pub struct Stream<W: Write> {
    out: W,
    json: bool,
    written: u64,
    /// When what was written was last flushed (a reader sees the replays
    /// as they come, not at the end, without a write per line).
    flushed: std::time::Instant,
    /// The signal that stopped the check, and how many runs it was asked
    /// to check.
    interrupted: Option<(&'static str, usize)>,
}

/// How long a written replay may wait in the buffer.
const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

impl<W: Write> Stream<W> {
    /// The report to `out`; for text, the line naming the sample first
    /// (`asked` is the `--sample` size asked for, which the line repeats
    /// so the sample can be drawn again).
    pub fn new(mut out: W, json: bool, sample: Option<&Drawn>, asked: usize) -> io::Result<Self> {
        if let Some(s) = sample.filter(|_| !json) {
            // Drawn from runs named, the seed alone draws from every run.
            let from = if s.named {
                " with the same runs named"
            } else {
                ""
            };
            writeln!(
                out,
                "sample of {} of {} runs, seed {} (`--sample {asked} --seed {}`{from} draws it again): {}",
                s.runs.len(),
                s.of,
                s.seed,
                s.seed,
                s.runs.join(" ")
            )?;
        }
        out.flush()?;
        Ok(Stream {
            out,
            json,
            written: 0,
            flushed: std::time::Instant::now(),
            interrupted: None,
        })
    }

    /// A signal (`SIGINT`, `SIGTERM`) stopped the check of `asked` runs
    /// before it began them all: [`Stream::finish`] says so, and how many
    /// were not checked.
    pub fn interrupted(&mut self, signal: Option<&'static str>, asked: usize) {
        self.interrupted = signal.map(|s| (s, asked));
    }

    /// Whether a replay's report is written yet.
    pub fn started(&self) -> bool {
        self.written > 0
    }

    /// One replay's report.
    pub fn replayed(&mut self, r: &ReplayReport) -> io::Result<()> {
        if self.json {
            let lead = if self.written == 0 {
                "{\n  \"runs\": [\n    "
            } else {
                ",\n    "
            };
            // Through a tree: its keys in alphabetical order.
            let r = serde_json::to_value(r)?;
            write!(self.out, "{lead}{}", crate::indented(&r, 4)?)?;
        } else {
            write_replay(&mut self.out, r)?;
        }
        self.written += 1;
        if self.flushed.elapsed() >= FLUSH_EVERY {
            self.out.flush()?;
            self.flushed = std::time::Instant::now();
        }
        Ok(())
    }

    /// The runs not replayed and the totals.
    pub fn finish(mut self, v: &Verified) -> io::Result<()> {
        if self.json {
            self.close_runs()?;
            let mut rest = rest_json(v);
            if let Some((signal, asked)) = self.interrupted {
                rest["interrupted"] = json!(signal);
                rest["not_checked"] = json!(asked.saturating_sub(checked(v)));
            }
            let rest = indented_members(&rest)?;
            writeln!(self.out, ",{rest}\n}}")?;
            return self.out.flush();
        }
        let out = &mut self.out;
        for run in &v.headless {
            writeln!(
                out,
                "{run}  incomplete: cut off before its header was written (killed as it started, or the disk was full); nothing to replay"
            )?;
        }
        for run in &v.sessions {
            writeln!(
                out,
                "{run}  native run of a transport this build does not replay: its hash chain is intact"
            )?;
        }
        for run in &v.copies {
            writeln!(
                out,
                "{run}  redacted copy: its hash chain and footer are intact; a copy cannot be re-executed"
            )?;
        }
        for (run, rules) in &v.later {
            writeln!(
                out,
                "{run}  later worldline: recorded under rules {rules}, past this one's {}; verify it with that worldline or a later one (not counted as drift)",
                rules::CURRENT
            )?;
        }
        for u in &v.unreadable {
            writeln!(out, "{}  unreadable: {}", u.run, u.error)?;
        }
        let tally = &v.tally;
        let total = tally.replayed + v.unreadable.len();
        let copies = match v.copies.len() {
            0 => String::new(),
            n => format!(", {n} redacted copies read"),
        };
        let unreplayed = match v.sessions.len() {
            0 => String::new(),
            n => format!(", {n} native runs of a transport not replayed read"),
        };
        let later = match v.later.len() {
            0 => String::new(),
            n => format!(", {n} from a later worldline not replayed"),
        };
        // Runs the watchdog stopped are said apart, as `--json` counts
        // them: a timeout is neither identical nor verified (they were
        // counted among those).
        let timeouts = match tally.timeout {
            0 => String::new(),
            n => format!(
                ", {n} timeout (stopped by the watchdog: wall-clock, not replayable, their replayed events match; not drift)"
            ),
        };
        writeln!(
            out,
            "{} runs: {} identical or verified ({} of them boundary replays of native agents, {} of those MCP sessions){timeouts}, {} diverged, {} unreadable, {} incomplete without a header{unreplayed}{copies}{later}; drift rate {:.1}%",
            total + v.headless.len() + v.sessions.len() + v.copies.len() + v.later.len(),
            tally.replayed - tally.diverged - tally.timeout,
            tally.boundary_agreed,
            tally.mcp_agreed,
            tally.diverged,
            v.unreadable.len(),
            v.headless.len(),
            v.drift_rate() * 100.0
        )?;
        if let Some((signal, asked)) = self.interrupted {
            writeln!(
                out,
                "interrupted by {signal}: {} of the {asked} runs checked",
                checked(v)
            )?;
        }
        out.flush()
    }

    /// `--json` only, once [`Stream::started`]: end the document with
    /// `error` (the `error` object `--json` prints for a failed command)
    /// after the runs written, so that stdout stays one JSON document.
    pub fn fail(mut self, error: &Value) -> io::Result<()> {
        self.close_runs()?;
        writeln!(
            self.out,
            ",\n  \"error\": {}\n}}",
            crate::indented(error, 2)?
        )?;
        self.out.flush()
    }

    fn close_runs(&mut self) -> io::Result<()> {
        match self.written {
            0 => write!(self.out, "{{\n  \"runs\": []"),
            _ => write!(self.out, "\n  ]"),
        }
    }
}

/// How many runs `v` holds a check of, whatever its outcome.
fn checked(v: &Verified) -> usize {
    v.tally.replayed + v.unreadable.len() + v.headless.len() + v.sessions.len() + v.copies.len()
}

/// The members of an object pretty-printed two spaces in, without its
/// braces: to follow others in a document written a part at a time.
fn indented_members(object: &Value) -> io::Result<String> {
    let text = crate::indented(object, 0)?;
    let inner = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix("\n}"))
        .unwrap_or_default();
    Ok(inner.to_string())
}

/// `verify --json` after its `runs`: the totals, the runs not replayed and
/// the sample (keys in alphabetical order).
fn rest_json(v: &Verified) -> Value {
    let tally = &v.tally;
    let sample = v
        .sample
        .as_ref()
        .map(|s| json!({"size": s.runs.len(), "of": s.of, "seed": s.seed, "runs": s.runs}));
    let later: Vec<Value> = (v.later.iter())
        .map(|(run, rules)| json!({"run": run, "rules": rules}))
        .collect();
    let errors: Vec<Value> = v
        .unreadable
        .iter()
        .map(|u| json!({"run": u.run, "error": u.error}))
        .collect();
    json!({
        "replayed": tally.replayed,
        "identical": tally.identical,
        "boundary_replay": tally.boundary_replay,
        "mcp_sessions": tally.mcp_sessions,
        "verified_prefix": tally.verified_prefix,
        "timeout": tally.timeout,
        "diverged": tally.diverged,
        "unreadable": errors.len(),
        "incomplete": v.headless.len(),
        "drift_rate": v.drift_rate(),
        "errors": errors,
        "incomplete_runs": v.headless,
        "sample": sample,
        "unreplayed_native": v.sessions.len(),
        "unreplayed_native_runs": v.sessions,
        "redacted_copies": v.copies.len(),
        "redacted_copy_runs": v.copies,
        "later_rules": v.later.len(),
        "later_rules_runs": later,
    })
}

/// What reading a redacted copy checks.
const COPY_CHECKED: [&str; 2] = [
    "the copy's hash chain (every event, in order)",
    "the copy's footer hash (its outcome)",
];

/// What no one can check from a redacted copy.
const COPY_NOT_CHECKED: [&str; 2] = [
    "that the agent makes these calls: the copy's answers are redacted, and its case and world were not exported, so it is not re-executed",
    "that the copy matches the original run: only the original's chain hash is known",
];

/// `replay --json` of a redacted copy of `events` events at `path`.
pub fn redacted_copy_json(path: &Path, events: usize, r: &Redacted) -> Value {
    json!({
        "run": path.display().to_string(), "verdict": "redacted_copy",
        "events": events, "original_run": r.original_run,
        "original_chain_hash": r.original_chain_hash, "hidden": r.hidden,
        "checked": COPY_CHECKED, "not_checked": COPY_NOT_CHECKED,
    })
}

/// `replay` of a redacted copy, which cannot be re-executed: what reading
/// it checked and what no one can check from it.
pub fn write_redacted_copy(
    out: &mut impl Write,
    path: &Path,
    events: usize,
    r: &Redacted,
) -> io::Result<()> {
    writeln!(
        out,
        "{}  redacted copy of {} ({events} events, {} values hidden)",
        path.display(),
        r.original_run,
        r.hidden
    )?;
    for c in COPY_CHECKED {
        writeln!(out, "  checked: {c}")?;
    }
    for c in COPY_NOT_CHECKED {
        writeln!(out, "  cannot check: {c}")?;
    }
    Ok(())
}

/// The line that names a native run's passed-through variables whose
/// values differ from the recording (`replay`, `verify`, `repro`).
pub(crate) fn env_differs(names: &[String]) -> String {
    format!(
        "passed-through variables differ from the recording: {}",
        names.join(", ")
    )
}
