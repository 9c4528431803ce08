//! The forms that change the store: fork from an event and replay a run.
//! Each parses its form, calls the operation in `ops/` the CLI calls too,
//! and renders the result (a refused fork shows its form again with the
//! reason), a fork's index row committed first. Each needs the CSRF
//! token and is gone in `--read-only` mode.

use super::event::Refused;
use super::html::{badge, json_against, url};
use super::{Reply, Seen};
use anyhow::Result;
use axum::http::StatusCode;
use maud::{Markup, html};
use std::collections::BTreeMap;
use worldline_case::error::InputError;
use worldline_engine::fork::check::EditText;
use worldline_engine::ops;
use worldline_engine::ops::fork::ForkError;
use worldline_engine::replay::ReplayReport;
use worldline_log::log::bundle;

type FormData = BTreeMap<String, String>;

/// Refuse a request that may not change the store.
fn allowed(app: &Seen, form: &FormData) -> Option<Reply> {
    if app.read_only() {
        let why = match app.read_only {
            true => "the UI is read-only (--read-only)",
            false => {
                "a viewer's token cannot fork or replay (re-executing reads the raw run): use a responder's"
            }
        };
        return Some(Reply::Problem(
            StatusCode::FORBIDDEN,
            format!("403 forbidden: {why}\n"),
        ));
    }
    let token = form.get("csrf").map_or("", String::as_str);
    (!super::guard::csrf_ok(&app.secrets, token)).then(|| {
        Reply::Problem(
            StatusCode::FORBIDDEN,
            "403 forbidden: the form's CSRF token is missing or wrong; reload the page\n".into(),
        )
    })
}

fn words(text: Option<&String>) -> Vec<String> {
    text.map(|t| {
        t.split([' ', ',', '\n'])
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    })
    .unwrap_or_default()
}

/// The fork form as the operation's arguments.
fn fork_args(at: u64, form: &FormData) -> ops::fork::ForkArgs {
    let text = |k: &str| form.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    ops::fork::ForkArgs {
        at,
        edits: EditText {
            respond: text("respond").map(str::to_string),
            allow: words(form.get("allow")),
            deny: words(form.get("deny")),
            set: form
                .get("set")
                .map(|s| {
                    s.lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
        },
        agent: text("agent").map(std::path::PathBuf::from),
    }
}

pub(crate) fn fork(app: &Seen, run: &str, at: u64, form: &FormData) -> Result<Reply> {
    if let Some(no) = allowed(app, form) {
        return Ok(no);
    }
    let refuse = |error: String| super::event::page(app, run, at, Some(Refused { error, form }));
    // No edit is a fork as `worldline fork RUN --at N` makes one: the
    // run goes on live from the event (the form refused it).
    let args = fork_args(at, form);
    let rec = worldline_engine::fork::open_at(&app.store, app.run_path(run)?, at)?;
    let forked = ops::fork::fork(app.sandbox()?, &app.store, &rec, args);
    // The fork's row committed before the answer, as `worldline fork`
    // commits it: it waited in this process's queue for more rows
    // (decision 0393), and a server's process does not end, which
    // commits a command's, so the index lacked the run until something
    // read it.
    worldline_store::index::flush(&app.store);
    match forked {
        // Its notes (a response that fits loosely, the parent's older
        // rules) shown above the fork's page, as `fork` prints them; with
        // none, the fork's page itself.
        Ok(forked) if !forked.notes.is_empty() => {
            let id = forked.outcome.run_id.unwrap_or_default();
            // Through the store's policy as the page below them: a note
            // quotes the edit (a `--set` row's key) and the fork's events.
            let mut notes = forked.notes;
            if let Some(red) = app.redactor()?.as_mut() {
                red.learn_state(&forked.outcome.final_state);
                red.learn(forked.outcome.events.whole().iter());
                notes = notes.iter().map(|n| red.text(n)).collect();
            }
            let shown = html! {
                div.note #fork-notes {
                    @for note in &notes { p { "note: " (note) } }
                }
            };
            super::run::body(app, &id, &BTreeMap::new(), shown)
        }
        Ok(forked) => {
            let id = forked.outcome.run_id.unwrap_or_default();
            Ok(Reply::Redirect(format!("/run/{}", url(&id))))
        }
        Err(ForkError::Edits(e)) => refuse(e.to_string()),
        Err(ForkError::Agent(e)) => refuse(InputError::new("agent", format!("{e:#}")).to_string()),
        Err(e) => Err(e.into()),
    }
}

/// A replay's verdict, the divergence's two sides marked.
fn verdict(app: &Seen, id: &str, r: &ReplayReport) -> Result<Markup> {
    let name = serde_json::to_value(r.verdict)?;
    let divergence = match &r.divergence {
        None => None,
        Some(d) => {
            let (mut expected, mut actual) = (d.expected.clone(), d.actual.clone());
            if let Some(red) = app.redactor()?.as_mut() {
                // What the events up to it hid first: the actual side may
                // quote a value a path hid (it was shown whole).
                let mut rec = app.recorded_held(id)?;
                red.learn_state(&rec.case.world.initial);
                if let Some(held) = rec.held.as_mut() {
                    red.before(&rec.bundle.header, held, d.index.saturating_add(1));
                }
                red.divergence(d.field.as_deref(), &mut expected);
                red.divergence(d.field.as_deref(), &mut actual);
            }
            Some((d, expected, actual))
        }
    };
    // A native agent's replay is of its boundary, never bit for bit, and
    // says so (docs/native.md), with the passed-through variables that
    // differ: the page said `identical` as a guest's, and named neither.
    let boundary = r.scope == worldline_engine::replay::Scope::Boundary;
    Ok(html! {
        div.note #verdict {
            "replay: " (badge(name.as_str().unwrap_or("?")))
            @if boundary && r.verdict == worldline_engine::replay::Verdict::Identical { " at the boundary" }
            " — " (r.matched) " of " (r.recorded) " events matched"
            @if boundary {
                @match &r.session {
                    // No agent process ran: the session's messages were
                    // answered again from its events.
                    Some(s) => p { "boundary replay of " (s) ": the messages its client sent and the answers they got are compared" },
                    None => p { "boundary replay of a native agent: the requests it sent and the answers it got are compared, not what it did between them" },
                }
            }
            @if !r.env_differs.is_empty() {
                p { "passed-through variables differ from the recording: " (r.env_differs.join(", ")) }
            }
            @if let Some((d, expected, actual)) = divergence {
                p {
                    "diverged at " a href={ "/run/" (url(id)) "/event/" (d.index) } { "event " (d.index) }
                    " (" (d.class.as_str()) @if let Some(f) = &d.field { ", field " (f) } ")"
                }
                div.grid {
                    div { "expected" (json_against(&expected, Some(&actual), "del")) }
                    div { "actual" (json_against(&actual, Some(&expected), "ins")) }
                }
            }
        }
    })
}

pub(crate) fn replay(app: &Seen, run: &str, form: &FormData) -> Result<Reply> {
    if let Some(no) = allowed(app, form) {
        return Ok(no);
    }
    // A redacted copy cannot be re-executed: what can be checked of it is,
    // as `worldline replay` reports it (verdict `redacted_copy`; the page
    // answered 400).
    let path = app.run_path(run)?;
    if let Ok(header) = bundle::read_header(&path)
        && header.redacted.is_some()
    {
        let b = bundle::read_held(&path).map_err(InputError::from)?;
        let copy = b.header.redacted.as_ref().expect("a redacted copy");
        let mut text = Vec::new();
        worldline_report::verify::write_redacted_copy(&mut text, &path, b.events.len(), copy)?;
        let text = String::from_utf8_lossy(&text).into_owned();
        let shown = html! {
            div.note #verdict {
                "replay: " (badge("redacted_copy"))
                pre { (text) }
            }
        };
        return super::run::body(app, run, &BTreeMap::new(), shown);
    }
    let rec = worldline_engine::replay::open_at_held(&app.store, app.run_path(run)?)?;
    let id = super::run::id_of(&rec.path);
    let r = ops::replay::replay(app.sandbox()?, &app.store, rec)?;
    let shown = verdict(app, &id, &r)?;
    super::run::body(app, run, &BTreeMap::new(), shown)
}
