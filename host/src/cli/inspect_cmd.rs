//! Looking at recorded runs: `history` (the timeline), `show --at N` (one
//! event in full and the world after it) and `diff` (two runs side by
//! side).

use super::Common;
use super::redact_opts::RedactArgs;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};
use std::io::Write;
use worldline_case::canon;
use worldline_case::error::InputError;
use worldline_engine::fork::check::describe;
use worldline_engine::grade::{diff, final_state};
use worldline_engine::ops::history;
use worldline_engine::replay;
use worldline_log::log::event::By;
use worldline_log::log::{Event, bundle};
use worldline_report::timeline::{Cut, first_difference, summary_cut};
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct HistoryArgs {
    /// Run id (or a unique prefix), or a bundle path.
    pub run: String,
    /// Only events whose call contains this text (e.g. `tools`, `clocks`).
    #[arg(long)]
    pub only: Option<String>,
    /// Show every value whole (by default values are cut to fit the
    /// terminal's width, or about 120 columns when it is not one).
    #[arg(long)]
    pub full: bool,
    /// Print the run's captured stdout (as the agent wrote it, up to
    /// `[limits] stdout_bytes`) instead of the timeline.
    #[arg(long)]
    pub stdout: bool,
    /// Print the run's captured stderr instead of the timeline (with
    /// `--stdout`, after it).
    #[arg(long)]
    pub stderr: bool,
    /// Show at most N events (after `--only` and `--skip`), as `git log -n`.
    #[arg(short = 'n', long, value_name = "N")]
    pub max_count: Option<usize>,
    /// Leave out the first N events (after `--only`), as `git log --skip`:
    /// with `-n`, a page of a long run.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip: usize,
    #[command(flatten)]
    pub redaction: RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct ShowArgs {
    pub run: String,
    /// The event to show (numbered from 0).
    #[arg(long)]
    pub at: u64,
    #[command(flatten)]
    pub redaction: RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct DiffArgs {
    pub run_a: String,
    pub run_b: String,
    /// Show the differing events whole (by default values are cut to fit
    /// the terminal's width).
    #[arg(long)]
    pub full: bool,
    #[command(flatten)]
    pub redaction: RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

/// Where the run's case came from, in one line.
fn origin_line(o: &worldline_case::case::origin::Origin) -> String {
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
fn in_flight(i: &worldline_log::log::intent::Intent) -> String {
    match &i.tool {
        Some(tool) => format!("tool `{tool}`"),
        None => i
            .call
            .rsplit_once('/')
            .map_or(&*i.call, |(_, c)| c)
            .to_string(),
    }
}

fn vtime(ns: u64) -> String {
    format!("{}.{:03}s", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}

pub fn exec_history(args: HistoryArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let path = store.resolve_run(&args.run)?;
    let query = history::Query {
        only: args.only.clone(),
        skip: args.skip,
        max_count: args.max_count,
        streams: args.stdout || args.stderr,
    };
    let mut read = history::read(&path, &query)?;
    let id = super::redact_opts::id_of(&path);
    let mut redactor = args.redaction.redactor(&store, "history", &[&id])?;
    if let Some(r) = redactor.as_mut() {
        r.bundle(&mut read.bundle);
    }
    let hidden = redactor.as_ref().map(|r| r.hidden());
    if query.streams {
        return print_streams(&args, &path, &read.bundle);
    }
    let page = history::page(&read, &query);
    let mut out = std::io::stdout().lock();
    if args.common.json {
        let doc = history_json(&args, &path, &read.bundle, &page, hidden.is_some());
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(ExitCode::Ok);
    }
    write_history_head(&mut out, &path, &read.bundle, hidden)?;
    // Sequence, virtual time, effect and call take 67 columns.
    let cut = Cut::for_terminal(args.full, 67);
    write_history_events(&mut out, &read.bundle, &page, cut)?;
    if page.after > 0 {
        writeln!(
            out,
            "... {} more event(s): --skip {} shows the next ones",
            page.after,
            page.matched - page.after
        )?;
    }
    if read.bundle.footer.is_none() {
        writeln!(
            out,
            "(incomplete: the run stopped after event {}; no footer)",
            read.bundle.events.len().saturating_sub(1)
        )?;
    }
    Ok(ExitCode::Ok)
}

/// The run's status: its footer's, else `incomplete`.
fn status(b: &bundle::Bundle) -> &str {
    b.footer
        .as_ref()
        .map_or("incomplete", |f| f.status.as_str())
}

/// `history --json`: the run, its header and the page's events (the
/// document does not depend on the terminal).
fn history_json(
    args: &HistoryArgs,
    path: &std::path::Path,
    b: &bundle::Bundle,
    page: &history::Page<'_>,
    redacted_view: bool,
) -> Value {
    let agent_error = b
        .footer
        .as_ref()
        .and_then(worldline_engine::traceback::agent_error);
    let cut = if args.full { Cut::Full } else { Cut::Standard };
    let rows: Vec<Value> = page
        .events
        .iter()
        .map(|e| json!({"seq": e.seq, "vtime_ns": e.vtime_ns, "call": e.call, "effect": e.effect, "summary": summary_cut(e, cut), "injected": e.injected}))
        .collect();
    let mut doc = json!({"run": path.display().to_string(), "status": status(b), "agent_error": agent_error, "header": b.header, "redacted_view": redacted_view, "events": rows});
    // A page says where it is; the whole timeline reads as it always did.
    if args.max_count.is_some() || args.skip > 0 {
        doc["matched"] = json!(page.matched);
        doc["skip"] = json!(args.skip);
    }
    doc
}

/// The lines above the timeline: the run, how it ended, where it came
/// from, what was raised, edited or redacted.
fn write_history_head(
    out: &mut impl Write,
    path: &std::path::Path,
    b: &bundle::Bundle,
    hidden: Option<usize>,
) -> Result<()> {
    let h = &b.header;
    writeln!(
        out,
        "{}  {}  case {}  world {}  agent {}",
        path.display(),
        status(b),
        h.case,
        h.world,
        short_hash(&h.agent_sha256)
    )?;
    let agent_error = b
        .footer
        .as_ref()
        .and_then(worldline_engine::traceback::agent_error);
    worldline_report::run::write_agent_error(out, agent_error.as_ref(), "")?;
    write_lineage(out, b)?;
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
    if let Some(r) = &h.redacted {
        writeln!(
            out,
            "REDACTED copy of run {} (its chain hash {}); {} values hidden; not the original",
            r.original_run,
            &r.original_chain_hash[..16.min(r.original_chain_hash.len())],
            r.hidden
        )?;
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
fn fork_points(b: &bundle::Bundle) -> Vec<worldline_log::log::bundle::ForkPoint> {
    b.header
        .parent
        .as_ref()
        .map(|p| p.fork_points())
        .unwrap_or_default()
}

/// Whose fork or resumption the run is, and the calls a kill left in flight.
fn write_lineage(out: &mut impl Write, b: &bundle::Bundle) -> Result<()> {
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
    if let Some(i) = &b.in_flight {
        writeln!(
            out,
            "killed inside {} (event {}: its intent recorded, no answer)",
            in_flight(i),
            i.seq
        )?;
    }
    Ok(())
}

/// A line per event of the page, marked where a fault was injected, the
/// run resumed or a fork's edits apply.
fn write_history_events(
    out: &mut impl Write,
    b: &bundle::Bundle,
    page: &history::Page<'_>,
    cut: Cut,
) -> Result<()> {
    let points = fork_points(b);
    let resumed_at = b
        .header
        .parent
        .as_ref()
        .filter(|p| p.resumed)
        .map(|p| p.event);
    for e in &page.events {
        let call = e.call.rsplit_once('/').map_or(e.call.as_str(), |(_, c)| c);
        let mark = match e.mark() {
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
        };
        let mark = if resumed_at == Some(e.seq) {
            format!("{mark}  [resumed: live from here]")
        } else if points.iter().any(|fp| fp.event == e.seq) {
            format!("{mark}  [fork point: edits above]")
        } else {
            mark
        };
        writeln!(
            out,
            "{:>5}  {:>9}  {:<7} {:<40} {}{mark}",
            e.seq,
            vtime(e.vtime_ns),
            format!("{:?}", e.effect).to_lowercase(),
            call,
            summary_cut(e, cut)
        )?;
    }
    Ok(())
}

/// `history --stdout` / `--stderr`: the streams the run kept, as written.
fn print_streams(
    args: &HistoryArgs,
    path: &std::path::Path,
    b: &bundle::Bundle,
) -> Result<ExitCode> {
    let Some(f) = &b.footer else {
        return Err(InputError::new(
            path,
            "is an incomplete run (no footer): its stdout and stderr were not kept",
        )
        .into());
    };
    if args.common.json {
        let mut doc =
            json!({"run": path.display().to_string(), "truncated_bytes": f.truncated_bytes});
        if args.stdout {
            doc["stdout"] = json!(f.stdout);
        }
        if args.stderr {
            doc["stderr"] = json!(f.stderr);
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::Ok);
    }
    let mut out = std::io::stdout().lock();
    for (wanted, text) in [(args.stdout, &f.stdout), (args.stderr, &f.stderr)] {
        if wanted {
            out.write_all(text.as_bytes())?;
            if !text.is_empty() && !text.ends_with('\n') {
                out.write_all(b"\n")?;
            }
        }
    }
    if f.truncated_bytes > 0 {
        eprintln!(
            "({} bytes of stdout and stderr were dropped past [limits] stdout_bytes)",
            f.truncated_bytes
        );
    }
    Ok(ExitCode::Ok)
}

pub fn exec_show(args: ShowArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let path = store.resolve_run(&args.run)?;
    let rec = replay::open_prefix(&store, path, args.at.saturating_add(1))?;
    let Some(event) = rec.bundle.events.get(args.at as usize) else {
        return Err(InputError::new(
            &rec.path,
            format!(
                "no event {} (the run has {} events, numbered from 0)",
                args.at,
                rec.bundle.events.len()
            ),
        )
        .into());
    };
    let mut state = final_state(
        &rec.case.world.initial,
        &rec.bundle.events[..=args.at as usize],
    );
    let state_hash = state.hash();
    let mut event = event.clone();
    let redacted = match args.redaction.redactor(&store, "show", &[&rec.id])? {
        Some(mut r) => {
            r.event(&mut event);
            r.state(&mut state);
            true
        }
        None => false,
    };
    let event = &event;
    let origin = &rec.bundle.header.origin;
    let doc = json!({"run": rec.id, "event": event, "state_after": state, "state_hash_after": state_hash, "redacted_view": redacted, "origin": origin});
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("event {} of {}: {}", event.seq, rec.id, event.call);
        if let Some(o) = origin {
            println!("{}", origin_line(o));
        }
        println!(
            "request:  {}",
            serde_json::to_string_pretty(&event.request)?
        );
        println!(
            "response: {}",
            serde_json::to_string_pretty(&event.response)?
        );
        println!(
            "effect: {:?}  vtime: {}  fuel: {}",
            event.effect,
            vtime(event.vtime_ns),
            event.fuel
        );
        if let Some(i) = &event.injected {
            println!("injected: {}", canon::to_string(i));
        }
        if !event.writes.is_empty() {
            println!("writes:   {}", serde_json::to_string_pretty(&event.writes)?);
        }
        println!(
            "world after event {}:\n{}",
            event.seq,
            serde_json::to_string_pretty(&state)?
        );
    }
    Ok(ExitCode::Ok)
}

pub fn exec_diff(args: DiffArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let a = replay::open(&store, &args.run_a)?;
    let b = replay::open(&store, &args.run_b)?;
    let mut redactor = args.redaction.redactor(&store, "diff", &[&a.id, &b.id])?;
    let mut fa = final_state(&a.case.world.initial, &a.bundle.events);
    let mut fb = final_state(&b.case.world.initial, &b.bundle.events);
    let (mut ea, mut eb) = (a.bundle.events.clone(), b.bundle.events.clone());
    let mut outputs = [&a, &b].map(|r| r.bundle.footer.as_ref().and_then(|f| f.output.clone()));
    if let Some(r) = redactor.as_mut() {
        ea.iter_mut().chain(eb.iter_mut()).for_each(|e| r.event(e));
        r.state(&mut fa);
        r.state(&mut fb);
        for o in outputs.iter_mut().flatten() {
            *o = r.output(o);
        }
    }
    let (ea, eb) = (&ea, &eb);
    let first = first_difference(ea, eb);
    let side = |e: Option<&Event>| {
        e.map(|e| json!({"call": e.call, "request": e.request, "response": e.response}))
    };
    let state = diff::diff(&fa, &fb);
    if args.common.json {
        let doc = json!({
            "a": a.id, "b": b.id,
            "first_divergence": first.map(|i| json!({"index": i, "a": side(ea.get(i)), "b": side(eb.get(i))})),
            "final_state_diff": state,
            "outputs": outputs,
            "redacted_view": redactor.is_some(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "a: {}  ({} events)\nb: {}  ({} events)",
            a.id,
            ea.len(),
            b.id,
            eb.len()
        );
        match first {
            None => println!("same events"),
            Some(i) => {
                let cut = Cut::for_terminal(args.full, 5);
                let line = |e: Option<&Event>| e.map_or("(none)".into(), |e| summary_cut(e, cut));
                println!("first difference at event {i}:");
                println!("  a: {}", line(ea.get(i)));
                println!("  b: {}", line(eb.get(i)));
            }
        }
        if state.is_empty() {
            println!("final states: identical");
        } else {
            println!("final state, a -> b:");
            for l in state.lines() {
                println!("  {l}");
            }
        }
    }
    Ok(if first.is_none() && state.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}

/// The first 12 characters of a hash read from a bundle (all of it when a
/// hostile header gives a shorter one).
fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
