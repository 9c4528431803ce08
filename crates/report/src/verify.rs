//! What `worldline replay RUN` and `worldline verify` show: a line (or a
//! few, for a divergence) per replayed run, the runs not replayed and why,
//! the totals with the drift rate; or the `--json` document of the same.
//! The engine hands back a typed result, not a stream of events
//! (decision 0327).

use serde_json::{Value, json};
use std::io::{self, Write};
use worldline_engine::ops::replay::Verified;
use worldline_engine::replay::{ReplayReport, Scope, Verdict};

/// One replay's verdict: a line, then where a divergence differs and
/// which passed-through variables differ from the recording.
pub fn write_replay(out: &mut impl Write, r: &ReplayReport) -> io::Result<()> {
    let chain = r.chain_hash.get(..16).unwrap_or(&r.chain_hash);
    match r.verdict {
        Verdict::Identical if r.scope == Scope::Boundary => writeln!(
            out,
            "{}  identical at the boundary  (boundary replay of a native agent: {} events, chain {chain})",
            r.run, r.matched
        )?,
        Verdict::Identical => writeln!(
            out,
            "{}  identical  ({} events, chain {chain})",
            r.run, r.matched
        )?,
        Verdict::VerifiedPrefix => writeln!(
            out,
            "{}  verified  ({} of {} recorded events match; the recorded run is incomplete, so there is no outcome to compare)",
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
        writeln!(
            out,
            "    passed-through variables differ from the recording: {}",
            r.env_differs.join(", ")
        )?;
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

/// `verify`'s text report. `asked` is the `--sample` size asked for, which
/// the line naming the sample repeats so it can be drawn again.
pub fn write(out: &mut impl Write, v: &Verified, asked: usize) -> io::Result<()> {
    if let Some(s) = &v.sample {
        writeln!(
            out,
            "sample of {} of {} runs, seed {} (`--sample {asked} --seed {}` draws it again): {}",
            s.runs.len(),
            s.of,
            s.seed,
            s.seed,
            s.runs.join(" ")
        )?;
    }
    for r in &v.reports {
        write_replay(out, r)?;
    }
    for run in &v.headless {
        writeln!(
            out,
            "{run}  incomplete: cut off before its header was written (killed as it started, or the disk was full); nothing to replay"
        )?;
    }
    for run in &v.sessions {
        writeln!(
            out,
            "{run}  MCP session: its hash chain is intact; there is no process to run again"
        )?;
    }
    for u in &v.unreadable {
        writeln!(out, "{}  unreadable: {}", u.run, u.error)?;
    }
    let tally = v.tally();
    let total = v.reports.len() + v.unreadable.len();
    writeln!(
        out,
        "{} runs: {} identical or verified ({} of them boundary replays of native agents), {} diverged, {} unreadable, {} incomplete without a header, {} MCP sessions read; drift rate {:.1}%",
        total + v.headless.len() + v.sessions.len(),
        v.reports.len() - tally.diverged,
        tally.boundary_agreed,
        tally.diverged,
        v.unreadable.len(),
        v.headless.len(),
        v.sessions.len(),
        v.drift_rate() * 100.0
    )
}

/// `verify --json`: the totals, each replay, the runs not replayed and the
/// sample (keys in alphabetical order).
pub fn json(v: &Verified) -> Value {
    let tally = v.tally();
    let sample = v
        .sample
        .as_ref()
        .map(|s| json!({"size": s.runs.len(), "of": s.of, "seed": s.seed, "runs": s.runs}));
    let errors: Vec<Value> = v
        .unreadable
        .iter()
        .map(|u| json!({"run": u.run, "error": u.error}))
        .collect();
    json!({
        "replayed": v.reports.len(),
        "identical": tally.identical,
        "boundary_replay": tally.boundary_replay,
        "mcp_sessions": v.sessions.len(),
        "verified_prefix": tally.verified_prefix,
        "timeout": tally.timeout,
        "diverged": tally.diverged,
        "unreadable": errors.len(),
        "incomplete": v.headless.len(),
        "drift_rate": v.drift_rate(),
        "runs": v.reports,
        "errors": errors,
        "incomplete_runs": v.headless,
        "sample": sample,
        "mcp_session_runs": v.sessions,
    })
}
