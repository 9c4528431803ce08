//! The event page: one event's request and response (pretty JSON, long
//! strings folded, rows as tables), its writes, the world after it as
//! tables with the rows it changed highlighted, links (and keys) to the
//! previous/next event and tool call, and the fork-from-here form.

use super::calls::{is_model_call, is_tool_call};
use super::html::{badge, error_box, json, layout, url, vtime};
use super::run::{fork_points, id_of};
use super::table::rows_or_json;
use super::timeline::marks;
use super::{Reply, Seen};
use anyhow::Result;
use axum::http::StatusCode;
use maud::{Markup, html};
use std::collections::{BTreeMap, BTreeSet};
use worldline_case::canon;
use worldline_case::world::state::State;
use worldline_engine::grade::diff::{self, StateDiff};
use worldline_engine::grade::final_state;
use worldline_log::log::bundle::{self, HeldBundle};
use worldline_log::log::{Event, delivery};

/// What the fork form shows again after a refused fork.
pub(crate) struct Refused<'a> {
    pub error: String,
    pub form: &'a BTreeMap<String, String>,
}

/// The step links: previous/next event and tool call.
fn steps(id: &str, events: &[Event], n: usize) -> Markup {
    let prev_tool = events[..n].iter().rposition(is_tool_call);
    let next_tool = events
        .iter()
        .skip(n + 1)
        .position(is_tool_call)
        .map(|i| i + n + 1);
    let prev_model = events[..n].iter().rposition(is_model_call);
    let next_model = events
        .iter()
        .skip(n + 1)
        .position(is_model_call)
        .map(|i| i + n + 1);
    let link = |anchor: &str, label: &str, to: Option<usize>| match to {
        Some(i) => {
            html! { a id=(anchor) href={ "/run/" (url(id)) "/event/" (i) } { (label) " (" (i) ")" } }
        }
        None => html! { span.keys { (label) } },
    };
    html! {
        p.pager {
            (link("prev-tool", "⇤ tool call", prev_tool)) " "
            (link("prev", "← event", n.checked_sub(1))) " "
            (link("next", "event →", (n + 1 < events.len()).then_some(n + 1))) " "
            (link("next-tool", "tool call ⇥", next_tool)) " "
            (link("prev-model", "⇤ model call", prev_model)) " "
            (link("next-model", "model call ⇥", next_model)) " "
            span.keys { "keys: k/← j/→ events, p/n tool calls, M/m model calls, ? help" }
        }
    }
}

/// A state diff's lines, coloured: added, removed, changed.
pub(crate) fn diff_lines(id: &str, d: &StateDiff) -> Markup {
    html! {
        ul.diff id=(id) {
            @for l in d.lines() {
                @let class = match l.chars().next() { Some('+') => "ins", Some('-') => "del", _ => "chg" };
                li class={ "changed mono " (class) } { (super::html::text(&l)) }
            }
        }
    }
}

/// The world after the event, the rows it changed highlighted.
fn world(n: u64, after: &State, changes: &StateDiff) -> Markup {
    let changed = |t: &str| -> BTreeSet<String> {
        changes
            .tables
            .get(t)
            .map(|d| d.added.keys().chain(d.changed.keys()).cloned().collect())
            .unwrap_or_default()
    };
    html! {
        h2 { "World after event " (n) }
        @if changes.is_empty() { p #changes { "no change from the event before" } }
        @else { (diff_lines("changes", changes)) }
        div #state {
            @for (name, table) in &after.tables { (super::table::state(name, &table.rows, &changed(name))) }
            @for (path, data) in &after.files {
                h3.mono.changed[changes.files.contains_key(path)] { (path) }
                div { (json(&serde_json::to_value(data).unwrap_or_default())) }
            }
        }
    }
}

fn detail(e: &Event) -> Markup {
    html! {
        p { "effect " (badge(&format!("{:?}", e.effect).to_lowercase())) " · vtime " (vtime(e.vtime_ns)) " · fuel " (e.fuel) }
        @if let Some(i) = &e.injected { p.note { "injected: " span.mono { (canon::to_string(i)) } } }
        div.grid {
            div { h2 { "Request" } div #request { (json(&e.request)) } }
            div { h2 { "Response" } div #response { (rows_or_json(&e.response)) } }
        }
        @if !e.writes.is_empty() {
            h2 { "Writes" } div #writes { (json(&serde_json::to_value(&e.writes).unwrap_or_default())) }
        }
    }
}

/// Event `n` is not in run `id`, which has `count` (named by its id, not
/// its file in the store: a page showed the store's absolute path).
fn no_event(id: &str, n: u64, count: usize) -> anyhow::Error {
    worldline_case::error::InputError::new(
        id,
        format!(
            "no event {n} (the run has {})",
            worldline_engine::fork::check::numbered(count)
        ),
    )
    .into()
}

pub(crate) fn page(app: &Seen, run: &str, n: u64, refused: Option<Refused>) -> Result<Reply> {
    // The run held compact, this event put back whole (decision 0380).
    let mut rec = match app.recorded_held(run) {
        Ok(rec) => rec,
        // A redacted copy has no case or world here: its events alone.
        Err(err) => {
            let path = app.run_path(run)?;
            return match bundle::read_held(&path) {
                Ok(b) if b.header.redacted.is_some() => copy_page(app, &path, b, n),
                _ => Err(err),
            };
        }
    };
    let id = id_of(&rec.path);
    let whole = rec.held.as_mut().and_then(|held| held.event(n));
    let Some(mut e) = whole.map(std::borrow::Cow::into_owned) else {
        return Err(no_event(&id, n, rec.event_count()));
    };
    // The body it sent, whole as a run before rules 11 recorded it.
    worldline_log::log::rendered::put_back(&mut e);
    // One redactor for the page, which first learns what the whole run
    // hides (this event may quote a value a later one hides), as
    // `history` and the run's page do.
    let mut redactor = app.redactor()?;
    if let (Some(r), Some(held)) = (redactor.as_mut(), rec.held.as_mut()) {
        r.whole(&rec.bundle.header, held, rec.bundle.footer.as_ref());
    }
    let events = rec.events();
    let gone = delivery::undelivered(events, rec.rules).get(&n).copied();
    let mut before = final_state(&rec.case.world.initial, &events[..n as usize]);
    let mut after = before.clone();
    for w in &e.writes {
        after.apply(w);
    }
    // What the page shows passes through the store's redaction policy
    // (one redactor, so a value has one placeholder on the page).
    let mut refused = refused;
    if let Some(r) = redactor.as_mut() {
        // What this event hides first: the state after it holds what it
        // wrote (a `request.args` path's value showed whole in the world's
        // table and what changed). Then the states: a value a `state` path
        // hides is then hidden in the event too (a get's answer showed it).
        r.learn(std::iter::once(&e));
        r.state(&mut before);
        r.state(&mut after);
        r.event(&mut e);
        if let Some(x) = refused.as_mut() {
            x.error = r.text(&x.error);
        }
    }
    let status = if refused.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let o = html! {
        p { a href=(super::find::to_row(&id, events, n as usize)) { "← run " span.mono { (id) } } }
        h1 { "Event " (n) ": " span.mono { (e.call) } " " (marks(&e, &fork_points(&rec.bundle.header), gone)) }
        (steps(&id, events, n as usize))
        (detail(&e))
        (fork_form(app, &id, n, &e.response, refused.as_ref()))
        (world(n, &after, &diff::diff(&before, &after)))
    };
    let html = layout(&format!("event {n} of {id}"), o);
    Ok(if status == StatusCode::OK {
        Reply::Page(html)
    } else {
        Reply::Problem(status, html)
    })
}

/// A redacted copy's event: as the copy recorded it (its answers were
/// redacted when it was made, and the store's policy applies on top), and
/// no world: a copy leaves the case and world behind, so neither the
/// state after the event nor a fork is to be had.
fn copy_page(app: &Seen, path: &std::path::Path, mut b: HeldBundle, n: u64) -> Result<Reply> {
    let (id, count) = (id_of(path), b.events.len());
    let Some(mut e) = b.events.event(n).map(std::borrow::Cow::into_owned) else {
        return Err(no_event(&id, n, count));
    };
    if let Some(r) = app.redactor()?.as_mut() {
        r.whole(&b.header, &mut b.events, b.footer.as_ref());
        r.event(&mut e);
    }
    let events: Vec<Event> = (0..count as u64)
        .filter_map(|seq| b.events.shown(seq).map(std::borrow::Cow::into_owned))
        .collect();
    let gone = delivery::undelivered(&events, b.header.rules.unwrap_or(0))
        .get(&n)
        .copied();
    let o = html! {
        p { a href=(super::find::to_row(&id, &events, n as usize)) { "← run " span.mono { (id) } } }
        h1 { "Event " (n) ": " span.mono { (e.call) } " " (marks(&e, &fork_points(&b.header), gone)) }
        (steps(&id, &events, n as usize))
        (super::run::copy_note(&b.header))
        (detail(&e))
    };
    Ok(Reply::Page(layout(&format!("event {n} of {id}"), o)))
}

fn fork_form(
    app: &Seen,
    id: &str,
    n: u64,
    response: &serde_json::Value,
    refused: Option<&Refused>,
) -> Markup {
    if app.read_only() {
        return html! {};
    }
    let field = |k: &str| {
        refused
            .and_then(|r| r.form.get(k).cloned())
            .unwrap_or_default()
    };
    html! {
        h2 #fork-here { "Fork from here" }
        @if let Some(r) = refused { (error_box(&r.error)) }
        form #fork-form method="post" action={ "/run/" (url(id)) "/event/" (n) "/fork" } {
            input type="hidden" name="csrf" value=(app.secrets.csrf);
            label { "respond (JSON; empty keeps the recorded answer; recorded: " code { (short_json(response)) } ")"
                textarea #respond name="respond" rows="5" { (field("respond")) } }
            label { "set (one " code { "table/key=JSON" } " or " code { "table/key.field=JSON" } " a line; applied as event " (n) "'s first writes, seen from event " (n + 1) " on)"
                textarea #set name="set" rows="2" { (field("set")) } }
            label { "deny tools (names or globs, space separated) " input #deny name="deny" value=(field("deny")); } " "
            label { "allow tools " input #allow name="allow" value=(field("allow")); } " "
            label { "agent (path of another build on this machine; empty keeps the recorded one) " input #agent name="agent" value=(field("agent")) size="40"; } " "
            button #fork type="submit" { "fork and run" }
        }
    }
}

fn short_json(v: &serde_json::Value) -> String {
    let t = canon::to_string(v);
    if t.chars().count() > 120 {
        format!("{}…", t.chars().take(120).collect::<String>())
    } else {
        t
    }
}
