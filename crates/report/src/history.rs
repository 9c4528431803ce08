//! `history` and `show`: a page of a run's timeline as text (the run, its
//! lineage and edits, a line per event, where the page stands) or as the
//! `history --json` document; the streams the run kept (`--stdout`,
//! `--stderr`); one event in full and the world after it (`show --at N`).

use super::timeline::{Cut, short_call, summary_cut};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;
use worldline_case::canon;
use worldline_case::case::origin::Origin;
use worldline_case::shown::one_line;
use worldline_case::world::state::State;
use worldline_engine::fork::check::describe;
use worldline_engine::ops::history::{Page, Query};
use worldline_engine::traceback;
use worldline_log::log::delivery;
use worldline_log::log::event::By;
use worldline_log::log::intent::Intent;
use worldline_log::log::{Event, Footer, ForkPoint, HeldBundle};

/// A page of a run's timeline, as `history` shows it.
pub struct Timeline<'a> {
    /// The run's bundle, as named to the reader.
    pub path: &'a Path,
    pub bundle: &'a HeldBundle,
    pub page: &'a Page,
    /// Distinct values a redacted view hides (`None`: the view is not
    /// redacted).
    pub hidden: Option<usize>,
    /// The run is the store's redacted copy, as a database store's viewer
    /// reads every run: a redacted view of the store's run, not a copy
    /// someone made of it.
    pub store_view: bool,
    /// Its writer is still recording it (a run without a footer that was
    /// not killed).
    pub live: bool,
}

/// Why a served episode ended without its client's `end` (decision 0429).
fn truncated(b: &HeldBundle) -> Option<&str> {
    b.footer.as_ref()?.truncated.as_deref()
}

/// The run's status: its footer's, else `incomplete`.
fn status(b: &HeldBundle) -> &str {
    b.footer
        .as_ref()
        .map_or("incomplete", |f| f.status.as_str())
}

/// `history --json`: the run, its header and the page's events (the
/// document does not depend on the terminal: `full` keeps every value
/// whole, else the standard cut).
pub fn json(t: &Timeline<'_>, q: &Query, full: bool) -> Value {
    let b = t.bundle;
    let agent_error = b.footer.as_ref().and_then(traceback::agent_error);
    let cut = if full { Cut::Full } else { Cut::Standard };
    let gone = undelivered(b);
    let rows: Vec<Value> = t
        .page
        .events
        .iter()
        .map(|e| {
            let mut row = json!({"seq": e.seq, "vtime_ns": e.vtime_ns, "call": e.call, "effect": e.effect, "summary": summary_cut(e, cut), "injected": e.injected});
            if let Some(at) = gone.get(&e.seq) {
                row["never_delivered"] = json!({"agent_went_on_ns": at});
            }
            row
        })
        .collect();
    let mut doc = json!({"run": t.path.display().to_string(), "status": status(b), "agent_error": agent_error, "header": b.header, "redacted_view": t.hidden.is_some() || t.store_view, "events": rows});
    // The call a killed run was inside, as the text says it (a script
    // deciding on `resume --resend-in-flight` parsed the text for it).
    if let Some(i) = &b.in_flight {
        doc["in_flight"] = json!(i);
    }
    if t.live {
        doc["being_recorded"] = json!(true);
    }
    if let Some(why) = truncated(b) {
        doc["truncated"] = json!(why);
    }
    // A page says where it is; the whole timeline reads as it always did.
    if q.max_count.is_some() || q.skip > 0 {
        doc["matched"] = json!(t.page.matched);
        doc["skip"] = json!(q.skip);
    }
    doc
}

/// `history`: the lines above the timeline, a line per event of the page
/// (values cut as `cut` says), then what the page left out and whether
/// the run is incomplete.
pub fn write(out: &mut impl Write, t: &Timeline<'_>, cut: Cut) -> io::Result<()> {
    write_head(out, t, t.hidden)?;
    write_events(out, t.bundle, t.page, cut)?;
    let page = t.page;
    if page.events.is_empty() && page.after == 0 && !t.bundle.events.is_empty() {
        // A page of nothing says why, rather than the header alone.
        match page.matched {
            0 => writeln!(
                out,
                "(no event matched --only: it matches an event's call, such as `tools.call`, `model.complete` or `clocks`, not a tool's name)"
            )?,
            n => writeln!(
                out,
                "(--skip is at or past the end of the {n} event(s) there are)"
            )?,
        }
    } else if page.after > 0 && page.events.is_empty() {
        // `-n 0`: another --skip would show nothing either.
        writeln!(
            out,
            "... {} event(s) not shown: -n {} shows them",
            page.after, page.after
        )?;
    } else if page.after > 0 {
        writeln!(
            out,
            "... {} more event(s): --skip {} shows the next ones",
            page.after,
            page.matched - page.after
        )?;
    }
    if t.bundle.footer.is_none() && t.live {
        writeln!(
            out,
            "(incomplete: still being recorded by a process that has not ended; {} events so far)",
            t.bundle.events.len()
        )?;
    } else if t.bundle.footer.is_none() {
        match t.bundle.events.len() {
            0 => writeln!(
                out,
                "(incomplete: the run stopped before its first event; no footer)"
            )?,
            n => writeln!(
                out,
                "(incomplete: the run stopped after event {}; no footer)",
                n - 1
            )?,
        }
    }
    Ok(())
}

/// Where the run's case came from, in one line.
fn origin_line(o: &Origin) -> String {
    match &o.chain_hash {
        Some(chain) => format!(
            "case made from {} (chain {})",
            o.source(),
            short_hash(chain)
        ),
        None => format!("case made from {}", o.source()),
    }
}

/// A call in flight, as `history` names it (`tool `x``, or the call).
fn in_flight(i: &Intent) -> String {
    match &i.tool {
        Some(tool) => format!("tool `{tool}`"),
        None => short_call(&i.call).to_string(),
    }
}

/// Virtual time in seconds, to the millisecond.
pub(crate) fn vtime(ns: u64) -> String {
    format!("{}.{:03}s", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}

/// The first 12 characters of a hash read from a bundle (all of it when a
/// hostile header gives a shorter one).
fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// The lines above the timeline: the run, how it ended, where it came
/// from, what was raised, edited or redacted.
fn write_head(out: &mut impl Write, t: &Timeline<'_>, hidden: Option<usize>) -> io::Result<()> {
    let (path, b) = (t.path, t.bundle);
    let h = &b.header;
    writeln!(
        out,
        "{}  {}  case {}  world {}  agent {}",
        path.display(),
        status(b),
        // A line break in the case's name is `\n`: the head is one line
        // (the terminal's writer escapes the other controls).
        one_line(&h.case),
        h.world,
        short_hash(&h.agent_sha256)
    )?;
    let agent_error = b.footer.as_ref().and_then(traceback::agent_error);
    super::run::write_agent_error(out, agent_error.as_ref(), "")?;
    if let Some(id) = &h.episode_id {
        writeln!(out, "episode_id (its client's reset): {}", one_line(id))?;
    }
    if let Some(why) = truncated(b) {
        writeln!(out, "an episode its client left without `end`: {why}")?;
    }
    write_lineage(out, b, t.live)?;
    if !h.limits.is_empty() {
        let raised: Vec<String> = h.limits.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        writeln!(out, "limits raised: {}", raised.join(", "))?;
    }
    if let Some(o) = &h.origin {
        writeln!(out, "{}", origin_line(o))?;
    }
    for fp in fork_points(b) {
        for edit in &fp.edits {
            writeln!(out, "  edit at event {}: {}", fp.event, describe(edit))?;
        }
    }
    match &h.redacted {
        // The store's own copy, which is what a viewer reads of its run.
        Some(r) if t.store_view => writeln!(
            out,
            "redacted view: {} distinct values hidden (the store's redacted copy, all a viewer reads; a responder reads the run whole)",
            r.hidden
        )?,
        Some(r) => writeln!(
            out,
            "REDACTED copy of run {} (its chain hash {}); {} values hidden; not the original",
            r.original_run,
            &r.original_chain_hash[..16.min(r.original_chain_hash.len())],
            r.hidden
        )?,
        None => {}
    }
    if let Some(n) = hidden {
        writeln!(
            out,
            "redacted view: {n} distinct values hidden (--unredacted shows them)"
        )?;
    }
    Ok(())
}

/// The run's fork points (none when it is not a fork).
fn fork_points(b: &HeldBundle) -> Vec<ForkPoint> {
    b.header
        .parent
        .as_ref()
        .map(|p| p.fork_points())
        .unwrap_or_default()
}

/// Whose fork or resumption the run is, and the calls a kill left in
/// flight (or, while `live`, the call its writer is inside).
fn write_lineage(out: &mut impl Write, b: &HeldBundle, live: bool) -> io::Result<()> {
    match &b.header.parent {
        Some(p) if p.resumed => writeln!(
            out,
            "resumed from {} at event {} (events before it followed from its recording)",
            p.run, p.event
        )?,
        Some(p) => writeln!(out, "fork of {} at event {}", p.run, p.event)?,
        None => {}
    }
    if let Some(i) = b.header.parent.as_ref().and_then(|p| p.in_flight.as_ref()) {
        writeln!(
            out,
            "in flight when {} was killed: {}, made again at event {}",
            b.header.parent.as_ref().map_or("", |p| p.run.as_str()),
            in_flight(i),
            i.seq
        )?;
    }
    match &b.in_flight {
        // Its writer still waits for the answer: nothing killed it.
        Some(i) if live => writeln!(
            out,
            "in flight: {} (event {}: its intent recorded, its answer not yet)",
            in_flight(i),
            i.seq
        )?,
        Some(i) => writeln!(
            out,
            "killed inside {} (event {}: its intent recorded, no answer)",
            in_flight(i),
            i.seq
        )?,
        None => {}
    }
    Ok(())
}

/// `  [injected: ACTION]` (or `fuzz`) after an event a fault was
/// injected into, else nothing.
pub(crate) fn mark(e: &Event) -> String {
    match e.mark() {
        Some(m) => {
            let by = if matches!(m.by, By::Fuzz(_)) {
                "fuzz"
            } else {
                "injected"
            };
            format!(
                "  [{by}: {}]",
                m.action.and_then(Value::as_str).unwrap_or("?")
            )
        }
        None => String::new(),
    }
}

/// The answers of `b` the agent never received, each with when it went on
/// without it (`log/delivery.rs`).
fn undelivered(b: &HeldBundle) -> BTreeMap<u64, u64> {
    delivery::undelivered(b.events.as_held(), b.header.rules.unwrap_or(0))
}

/// The mark of an answer the agent went on without at `at`.
fn never_delivered(at: u64) -> String {
    format!(
        "  [never delivered: the agent went on without it at {}]",
        vtime(at)
    )
}

/// A line per event of the page, marked where a fault was injected, the
/// run resumed, a fork's edits apply or the agent went on without the
/// answer.
fn write_events(out: &mut impl Write, b: &HeldBundle, page: &Page, cut: Cut) -> io::Result<()> {
    let points = fork_points(b);
    let gone = undelivered(b);
    let resumed_at = b
        .header
        .parent
        .as_ref()
        .filter(|p| p.resumed)
        .map(|p| p.event);
    for e in &page.events {
        let call = short_call(&e.call);
        let mark = mark(e);
        let mark = if resumed_at == Some(e.seq) {
            format!("{mark}  [resumed: live from here]")
        } else if let Some(fp) = points.iter().find(|fp| fp.event == e.seq) {
            // A fork with no edit (another agent's, a branch) has none
            // above to point at.
            match fp.edits.is_empty() {
                true => format!("{mark}  [fork point: live from here]"),
                false => format!("{mark}  [fork point: edits above]"),
            }
        } else {
            mark
        };
        let mark = match gone.get(&e.seq) {
            Some(&at) => format!("{mark}{}", never_delivered(at)),
            None => mark,
        };
        writeln!(
            out,
            "{:>5}  {:>9}  {:<7} {:<40} {}{mark}",
            e.seq,
            vtime(e.vtime_ns),
            format!("{:?}", e.effect).to_lowercase(),
            call,
            // One line: text a run recorded breaks no line of the listing
            // (`--json` holds it as it is).
            one_line(&summary_cut(e, cut))
        )?;
    }
    Ok(())
}

/// Which of a run's streams `history` shows.
#[derive(Debug, Clone, Copy)]
pub struct Streams {
    pub stdout: bool,
    pub stderr: bool,
}

/// `history --stdout --json` (or `--stderr`): the streams asked for and
/// the bytes dropped past the limit.
pub fn streams_json(path: &Path, f: &Footer, s: Streams) -> Value {
    let mut doc = json!({"run": path.display().to_string(), "truncated_bytes": f.truncated_bytes});
    if s.stdout {
        doc["stdout"] = json!(f.stdout);
    }
    if s.stderr {
        doc["stderr"] = json!(f.stderr);
    }
    doc
}

/// `history --stdout` / `--stderr`: the streams the run kept, as written
/// (each ending in a newline), to `out`; to `err`, how much was dropped.
pub fn write_streams(
    out: &mut impl Write,
    err: &mut impl Write,
    f: &Footer,
    s: Streams,
) -> io::Result<()> {
    for (wanted, text) in [(s.stdout, &f.stdout), (s.stderr, &f.stderr)] {
        if wanted {
            out.write_all(text.as_bytes())?;
            if !text.is_empty() && !text.ends_with('\n') {
                out.write_all(b"\n")?;
            }
        }
    }
    if f.truncated_bytes > 0 {
        writeln!(
            err,
            "({} bytes of stdout and stderr were dropped past [limits] stdout_bytes)",
            f.truncated_bytes
        )?;
    }
    Ok(())
}

/// `show --at N`: event N of `run` in full (request, response, effect,
/// what was injected and written, whether the agent went on without its
/// answer, and when: `gone`), then the world after it.
pub fn write_event(
    out: &mut impl Write,
    run: &str,
    event: &Event,
    gone: Option<u64>,
    origin: Option<&Origin>,
    state: &State,
) -> io::Result<()> {
    writeln!(out, "event {} of {run}: {}", event.seq, event.call)?;
    if let Some(o) = origin {
        writeln!(out, "{}", origin_line(o))?;
    }
    writeln!(
        out,
        "request:  {}",
        serde_json::to_string_pretty(&event.request)?
    )?;
    writeln!(
        out,
        "response: {}",
        serde_json::to_string_pretty(&event.response)?
    )?;
    writeln!(
        out,
        "effect: {:?}  vtime: {}  fuel: {}",
        event.effect,
        vtime(event.vtime_ns),
        event.fuel
    )?;
    if let Some(at) = gone {
        writeln!(
            out,
            "never delivered: the agent went on without it at {}, before it was ready",
            vtime(at)
        )?;
    }
    if let Some(i) = &event.injected {
        writeln!(out, "injected: {}", canon::to_string(i))?;
    }
    if !event.writes.is_empty() {
        writeln!(
            out,
            "writes:   {}",
            serde_json::to_string_pretty(&event.writes)?
        )?;
    }
    writeln!(
        out,
        "world after event {}:\n{}",
        event.seq,
        serde_json::to_string_pretty(state)?
    )
}
