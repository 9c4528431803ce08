//! The forms that change the store: fork from an event (edits checked by
//! `fork::check` first, like the CLI's), and replay a run. Each needs the
//! CSRF token and is gone in `--read-only` mode.

use super::event::Refused;
use super::run::id_of;
use super::{App, Reply};
use anyhow::Result;
use axum::http::StatusCode;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use worldline_engine::fork::{self, check};
use worldline_engine::replay;

/// Refuse a request that may not change the store.
fn allowed(app: &App, form: &BTreeMap<String, String>) -> Option<Reply> {
    if app.read_only {
        return Some(Reply::Problem(
            StatusCode::FORBIDDEN,
            "403 forbidden: the UI is read-only (--read-only)\n".into(),
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

pub fn fork(app: &App, run: &str, at: u64, form: &BTreeMap<String, String>) -> Result<Reply> {
    if let Some(no) = allowed(app, form) {
        return Ok(no);
    }
    let rec = app.recorded(run)?;
    let text = check::EditText {
        respond: form
            .get("respond")
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty()),
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
    };
    let refuse = |e: worldline_case::error::InputError| {
        super::event::page(
            app,
            run,
            at,
            Some(Refused {
                error: e.to_string(),
                form,
            }),
        )
    };
    let edits = match text.parse() {
        Ok(e) => e,
        Err(e) => return refuse(e),
    };
    let agent_path = form
        .get("agent")
        .map(|a| a.trim())
        .filter(|a| !a.is_empty());
    if edits.is_empty() && agent_path.is_none() {
        return refuse(worldline_case::error::InputError::new(
            "fork",
            "give at least one edit (a response, a patch, a tool to deny or allow, or another agent)",
        ));
    }
    if let Err(e) = check::check(&rec, at, &edits) {
        return refuse(e);
    }
    let agent = match agent_path {
        None => None,
        Some(p) => {
            match worldline_engine::agent_file::load(
                app.sandbox()?,
                &app.store,
                std::path::Path::new(p),
            ) {
                Ok(a) => Some(a),
                Err(e) => {
                    return refuse(worldline_case::error::InputError::new(
                        "agent",
                        format!("{e:#}"),
                    ));
                }
            }
        }
    };
    let outcome = fork::fork(app.sandbox()?, &app.store, &rec, at, edits, agent)?;
    let id = outcome.run_id.clone().unwrap_or_default();
    Ok(Reply::Redirect(format!("/run/{}", super::html::url(&id))))
}

pub fn replay(app: &App, run: &str, form: &BTreeMap<String, String>) -> Result<Reply> {
    if let Some(no) = allowed(app, form) {
        return Ok(no);
    }
    let rec = app.recorded(run)?;
    let r = replay::replay(app.sandbox()?, &app.store, &rec)?;
    let verdict = serde_json::to_value(r.verdict)?;
    let mut o = format!(
        "<div class=\"note\" id=\"verdict\">replay: {} — {} of {} events matched",
        super::html::badge(verdict.as_str().unwrap_or("?")),
        r.matched,
        r.recorded
    );
    if let Some(d) = &r.divergence {
        let (mut expected, mut actual) = (d.expected.clone(), d.actual.clone());
        if let Some(red) = app.redactor()?.as_mut() {
            red.json(&mut expected);
            red.json(&mut actual);
        }
        let _ = write!(
            o,
            "<p>diverged at <a href=\"/run/{}/event/{}\">event {}</a> ({:?}{}): expected <code>{}</code>, actual <code>{}</code></p>",
            super::html::url(&id_of(&rec.path)),
            d.index,
            d.index,
            d.class,
            d.field
                .as_ref()
                .map_or(String::new(), |f| format!(", field {f}")),
            super::html::esc(&worldline_case::canon::to_string(&expected)),
            super::html::esc(&worldline_case::canon::to_string(&actual))
        );
    }
    o.push_str("</div>");
    super::run::body(app, run, &BTreeMap::new(), &o)
}
