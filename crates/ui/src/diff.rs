//! The diff page: two runs side by side at the first event where they
//! differ, the values that differ highlighted on each side, and the
//! difference of their final states and outputs, coloured by kind, and of
//! how each ended; a note first when the runs are of different cases or
//! worlds.

use super::event::diff_lines;
use super::html::{json_against, layout, url};
use super::run::id_of;
use super::{Reply, Seen};
use anyhow::Result;
use maud::{Markup, html};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use worldline_log::log::Event;
use worldline_report::diff as compare;
use worldline_report::timeline::summary;

fn form(a: &str, b: &str) -> Markup {
    html! {
        h1 { "Diff" }
        form.filters method="get" action="/diff" {
            label { "run a" input #diff-a name="a" value=(a) size="28"; }
            label { "run b" input #diff-b name="b" value=(b) size="28"; }
            button { "diff" }
        }
    }
}

fn shown(e: &Event) -> Value {
    json!({"call": e.call, "request": e.request, "response": e.response, "writes": e.writes})
}

/// One side of the first difference, what differs from `other` marked.
fn side(id: &str, i: usize, e: Option<&Event>, other: Option<&Event>, class: &str) -> Markup {
    let Some(e) = e else {
        return html! { p { "(no event: the run ended)" } };
    };
    let other = other.map(shown);
    html! {
        p { a href={ "/run/" (url(id)) "/event/" (i) } { "event " (i) } " " span.mono { (e.call) } }
        p.mono { (summary(e)) }
        (json_against(&shown(e), Some(other.as_ref().unwrap_or(&Value::Null)), class))
    }
}

/// What the two runs returned, when they differ: each as the JSON value it
/// is, else its text, and a run that returned nothing said to have no
/// output (it was shown as the string `"(none)"`, as a run that returned
/// that text is).
fn outputs(o: &[Option<String>; 2]) -> Markup {
    let shown = |o: &Option<String>| {
        o.as_ref()
            .map(|text| serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone())))
    };
    let (a, b) = (shown(&o[0]), shown(&o[1]));
    if a == b {
        return html! {};
    }
    let one = |v: &Option<Value>, other: &Option<Value>, class: &str| match v {
        None => html! { p.absent { em { "no output" } } },
        Some(v) => json_against(v, Some(other.as_ref().unwrap_or(&Value::Null)), class),
    };
    html! {
        h2 { "Output" }
        div.grid #output-diff { (one(&a, &b, "del")) (one(&b, &a, "ins")) }
    }
}

/// How each run ended, when they ended otherwise: status and outcome.
fn endings(e: &[compare::Ending; 2]) -> Markup {
    if e[0] == e[1] {
        return html! {};
    }
    let one = |e: &compare::Ending| {
        html! {
            p.mono { (e.status) @if e.outcome != e.status { " (" (e.outcome) ")" } }
        }
    };
    html! {
        h2 { "Ending" }
        div.grid #ending-diff { div { h3 { "a" } (one(&e[0])) } div { h3 { "b" } (one(&e[1])) } }
    }
}

pub(crate) fn page(app: &Seen, q: &BTreeMap<String, String>) -> Result<Reply> {
    let get = |k: &str| q.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let (Some(a), Some(b)) = (get("a"), get("b")) else {
        let o = form(get("a").unwrap_or(""), get("b").unwrap_or(""));
        return Ok(Reply::Page(layout("diff", o)));
    };
    // Each run held compact (decision 0380), its requests put back one at
    // a time where the runs are compared.
    let (a, b) = (app.recorded_held(a)?, app.recorded_held(b)?);
    let (ida, idb) = (id_of(&a.path), id_of(&b.path));
    let mut redactor = app.redactor()?;
    let sides = compare::sides(&a, &b, redactor.as_mut());
    let ([na, nb], first, d, outs) = (sides.events, sides.first, sides.state, sides.outputs);
    let (ends, notes) = (sides.endings, sides.notes);
    let link = |id: &str| html! { a.mono href={ "/run/" (url(id)) } { (id) } };
    let o = html! {
        (form(&ida, &idb))
        p { "a: " (link(&ida)) " (" (na) " events) · b: " (link(&idb)) " (" (nb) " events)" }
        @if !notes.is_empty() { div.note #diff-notes { @for n in &notes { p { "note: " (n) } } } }
        @match &first {
            None => { p #first-difference { "same events" } }
            Some(f) => {
                h2 #first-difference { "First difference: event " (f.index) }
                div.grid {
                    div { h3 { "a" } (side(&ida, f.index, f.a.as_ref(), f.b.as_ref(), "del")) }
                    div { h3 { "b" } (side(&idb, f.index, f.b.as_ref(), f.a.as_ref(), "ins")) }
                }
            }
        }
        h2 { "Final state, a → b" }
        @if d.is_empty() { p #state-diff { "identical" } } @else { (diff_lines("state-diff", &d)) }
        (outputs(&outs))
        (endings(&ends))
    };
    Ok(Reply::Page(layout("diff", o)))
}
