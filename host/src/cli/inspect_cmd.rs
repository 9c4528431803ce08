//! Looking at recorded runs: `history` (the timeline), `show --at N` (one
//! event in full and the world after it) and `diff` (two runs side by
//! side).

use super::Common;
use super::redact_opts::RedactArgs;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::io::{IsTerminal, Write};
use worldline_case::error::InputError;
use worldline_case::shown::Escaped;
use worldline_engine::grade::final_state;
use worldline_engine::ops::history;
use worldline_engine::replay;
use worldline_log::log::{bundle, delivery};
use worldline_report::diff as compare;
use worldline_report::history as report;
use worldline_report::timeline::Cut;

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
    /// `[limits] stdout_bytes`; to a terminal, its control characters
    /// escaped as `\u{1b}`) instead of the timeline.
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
    /// Run id (or a unique prefix), or a bundle path.
    pub run: String,
    /// The event to show (numbered from 0).
    #[arg(long, allow_hyphen_values = true, value_parser = super::event_arg)]
    pub at: u64,
    #[command(flatten)]
    pub redaction: RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct DiffArgs {
    /// The first run: its id (or a unique prefix), or a bundle path.
    pub run_a: String,
    /// The run compared with it (its parent or fork, another agent's run
    /// of the same case...), named the same ways.
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

pub fn exec_history(args: HistoryArgs) -> Result<ExitCode> {
    let store = super::store_of_run(&args.common.store, &args.run)?;
    let path = store.resolve_run(&args.run)?;
    let id = super::redact_opts::id_of(&path);
    let mut redactor = args.redaction.redactor(&store, "history", &[&id])?;
    let query = history::Query {
        only: args.only.clone(),
        skip: args.skip,
        max_count: args.max_count,
        streams: args.stdout || args.stderr,
        whole: redactor.is_some(),
    };
    let mut read = history::read(&path, &query)?;
    if let Some(r) = redactor.as_mut() {
        // What the policy's `state` paths hide in the world the run met
        // (a list's answer showed it whole before any event hid it).
        store.learn_world(r, &read.bundle.header.world_hash);
        r.held(&mut read.bundle);
    }
    let hidden = redactor.as_ref().map(|r| r.hidden());
    if query.streams {
        return print_streams(&args, &path, &read.bundle);
    }
    let page = history::page(&mut read, &query);
    let timeline = report::Timeline {
        path: &path,
        bundle: &read.bundle,
        page: &page,
        hidden,
        store_view: store.role() == Some(worldline_pgstore::roles::Role::Viewer),
        live: read.bundle.footer.is_none() && store.being_recorded(&path),
    };
    let mut out = std::io::stdout().lock();
    if args.common.json {
        let doc = report::json(&timeline, &query, args.full);
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(ExitCode::Ok);
    }
    // Sequence, virtual time, effect and call take 67 columns. What the
    // agent named or wrote reaches the terminal escaped.
    let mut out = Escaped::new(out);
    report::write(&mut out, &timeline, Cut::for_terminal(args.full, 67))?;
    out.flush()?;
    Ok(ExitCode::Ok)
}

/// `history --stdout` / `--stderr`: the streams the run kept, as written
/// (their control characters escaped to a terminal).
fn print_streams(
    args: &HistoryArgs,
    path: &std::path::Path,
    b: &bundle::HeldBundle,
) -> Result<ExitCode> {
    let Some(f) = &b.footer else {
        return Err(InputError::new(
            path,
            "is an incomplete run (no footer): its stdout and stderr were not kept",
        )
        .into());
    };
    let streams = report::Streams {
        stdout: args.stdout,
        stderr: args.stderr,
    };
    let mut out = std::io::stdout().lock();
    if args.common.json {
        let doc = report::streams_json(path, f, streams);
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(ExitCode::Ok);
    }
    // To a terminal, what the agent wrote cannot move the cursor, set the
    // title, clear the screen or write the clipboard: its control
    // characters are escaped, as every other reader shows them. Piped or
    // redirected, the bytes go out as written.
    let err = &mut std::io::stderr().lock();
    if out.is_terminal() {
        report::write_streams(&mut Escaped::new(out), err, f, streams)?;
    } else {
        report::write_streams(&mut out, err, f, streams)?;
    }
    Ok(ExitCode::Ok)
}

pub fn exec_show(args: ShowArgs) -> Result<ExitCode> {
    let store = super::store_of_run(&args.common.store, &args.run)?;
    let path = store.resolve_run(&args.run)?;
    // The prefix held compact, the event shown put back whole (decision
    // 0380): the conversation once, not once per model call before it.
    // Redacted, the whole run: what a later event hides is hidden here
    // too, as `history` hides it.
    let redactor = args
        .redaction
        .redactor(&store, "show", &[&super::redact_opts::id_of(&path)])?;
    let upto = match redactor {
        Some(_) => u64::MAX,
        None => args.at.saturating_add(1),
    };
    let mut rec = replay::open_to_read(&store, path, Some(upto))?;
    let count = rec.event_count();
    let held = rec.held.as_mut().expect("read held");
    // The flag is what is wrong, as `fork --at` names it (the bundle was).
    let Some(mut event) = held.event(args.at).map(std::borrow::Cow::into_owned) else {
        return Err(InputError::new(
            "--at",
            format!(
                "no event {} in run {} (it has {})",
                args.at,
                rec.id,
                worldline_engine::fork::check::numbered(count),
            ),
        )
        .into());
    };
    // The body it sent, whole as a run before rules 11 recorded it.
    worldline_log::log::rendered::put_back(&mut event);
    // Whether the agent went on without the event's answer is told by the
    // events after it: read them all for an answer over HTTP.
    let gone = match delivery::over_http(&event) {
        true => {
            let whole = replay::open_held(&store, &args.run)?;
            delivery::undelivered(whole.events(), whole.rules)
                .get(&args.at)
                .copied()
        }
        false => None,
    };
    let mut state = final_state(&rec.case.world.initial, &rec.events()[..=args.at as usize]);
    let state_hash = state.hash();
    let redacted = match redactor {
        Some(mut r) => {
            let held = rec.held.as_mut().expect("read held");
            r.whole(&rec.bundle.header, held, rec.bundle.footer.as_ref());
            // What this event hides is learnt first: the state after it
            // holds what it wrote (a `request.args` path's value showed
            // whole there). Then the state: a value a `state` path hides
            // is then hidden in the event too (a get's answer showed it).
            r.learn(std::iter::once(&event));
            r.state(&mut state);
            r.event(&mut event);
            true
        }
        None => false,
    };
    let event = &event;
    let origin = &rec.bundle.header.origin;
    let mut doc = json!({"run": rec.id, "event": event, "state_after": state, "state_hash_after": state_hash, "redacted_view": redacted, "origin": origin});
    if let Some(at) = gone {
        doc["never_delivered"] = json!({"agent_went_on_ns": at});
    }
    if args.common.json {
        out!("{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        report::write_event(
            &mut super::human_out(),
            &rec.id,
            event,
            gone,
            origin.as_ref(),
            &state,
        )?;
    }
    Ok(ExitCode::Ok)
}

pub fn exec_diff(args: DiffArgs) -> Result<ExitCode> {
    let store = super::store_of_run(&args.common.store, &args.run_a)?;
    // Each run held compact (decision 0380): its requests put back one
    // at a time where the runs are compared, not all at once.
    let a = replay::open_to_read(&store, store.resolve_run(&args.run_a)?, None)?;
    // Each bundle path with its own store (two machines' runs compared).
    let b = match super::store_path_of_run(&args.common.store, &args.run_b) {
        Some(other) if other != store.root => {
            let other = super::open_holding(&args.common.store, &args.run_b, other)?;
            let path = other.resolve_run(&args.run_b)?;
            replay::open_to_read(&other, path, None)?
        }
        _ => replay::open_to_read(&store, store.resolve_run(&args.run_b)?, None)?,
    };
    let mut redactor = args.redaction.redactor(&store, "diff", &[&a.id, &b.id])?;
    let sides = compare::sides(&a, &b, redactor.as_mut());
    let compared = compare::Compared {
        a: compare::Side {
            run: &a.id,
            events: sides.events[0],
            output: sides.outputs[0].as_deref(),
            rules: a.rules,
            ending: &sides.endings[0],
        },
        b: compare::Side {
            run: &b.id,
            events: sides.events[1],
            output: sides.outputs[1].as_deref(),
            rules: b.rules,
            ending: &sides.endings[1],
        },
        first: sides.first,
        state: &sides.state,
        redacted_view: redactor.is_some(),
        notes: &sides.notes,
    };
    let mut out = std::io::stdout().lock();
    if args.common.json {
        let doc = compare::json(&compared);
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        let mut out = Escaped::new(&mut out);
        compare::write(&mut out, &compared, Cut::for_terminal(args.full, 5))?;
        out.flush()?;
    }
    Ok(match compared.differ() {
        false => ExitCode::Ok,
        true => ExitCode::Failed,
    })
}
