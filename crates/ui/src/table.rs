//! Rows shown as tables: a JSON array of objects (a tool's answer, a
//! task's list) as a table with one column per field, and a world table
//! with the rows an event changed highlighted. Anything else stays JSON.
//! A table shows at most [`SHOWN`] rows (a world table those an event
//! changed beside them), with the count of the rest.

use super::html::{SHOWN, json, more};
use maud::{Markup, html};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use worldline_case::canon;
use worldline_case::world::state::Rows;

/// The columns of `rows`: every field of any row, in first-seen order.
fn columns<'a>(rows: impl Iterator<Item = &'a Map<String, Value>>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for r in rows {
        for k in r.keys() {
            if seen.insert(k.clone()) {
                out.push(k.clone());
            }
        }
    }
    out
}

/// A cell: strings as they are, anything else as canonical JSON.
fn cell(v: Option<&Value>) -> String {
    match v {
        None => String::new(),
        Some(Value::String(s)) => super::html::text(s).into_owned(),
        Some(other) => super::html::text(&canon::to_string(other)).into_owned(),
    }
}

/// The rows in `v`: `v` itself (or its `ok`) when it is an array of
/// objects, or the one field of an object that is (`{"deploys": [...]}`).
fn rows_in(v: &Value) -> Option<&Vec<Value>> {
    match v.get("ok").unwrap_or(v) {
        Value::Array(list) => Some(list),
        Value::Object(m) => {
            let mut lists = m
                .values()
                .filter_map(Value::as_array)
                .filter(|l| l.iter().all(Value::is_object));
            let one = lists.next()?;
            lists.next().is_none().then_some(one)
        }
        _ => None,
    }
}

/// `v` as a table when it holds a non-empty array of objects.
pub(crate) fn rows(v: &Value) -> Option<Markup> {
    let list = rows_in(v)?;
    let objects: Vec<&Map<String, Value>> =
        list.iter().map(Value::as_object).collect::<Option<_>>()?;
    if objects.is_empty() {
        return None;
    }
    let shown = &objects[..objects.len().min(SHOWN)];
    let cols = columns(shown.iter().copied());
    Some(html! {
        table.rows {
            thead { tr { @for c in &cols { th { (c) } } } }
            tbody {
                @for o in shown {
                    tr { @for c in &cols { td { (cell(o.get(c))) } } }
                }
                (more_rows(objects.len() - shown.len(), cols.len()))
            }
        }
    })
}

/// `v` as a table when it is rows (its JSON a click away), else as JSON.
pub(crate) fn rows_or_json(v: &Value) -> Markup {
    match rows(v) {
        Some(t) => html! { (t) details { summary { "JSON" } (json(v)) } },
        None => json(v),
    }
}

/// The last row of a table cut at [`SHOWN`] rows: how many more there are.
fn more_rows(hidden: usize, cols: usize) -> Markup {
    html! {
        @if hidden > 0 { tr.more { td colspan=(cols.max(1)) { (more(hidden, "rows")) } } }
    }
}

/// A world table: its rows by key, `changed` keys highlighted; the first
/// [`SHOWN`] rows and every changed one.
pub(crate) fn state(name: &str, rows: &Rows, changed: &BTreeSet<String>) -> Markup {
    let shown: Vec<(&String, &Value)> = (rows.iter().enumerate())
        .filter(|(i, (k, _))| *i < SHOWN || changed.contains(*k))
        .map(|(_, row)| row)
        .collect();
    let cols = columns(shown.iter().filter_map(|(_, r)| r.as_object()));
    html! {
        h3 { (name) " " small { "(" (rows.len()) " rows)" } }
        table.state.rows {
            thead { tr { th { "key" } @for c in &cols { th { (c) } } } }
            tbody {
                @for &(k, row) in &shown {
                    tr class=[changed.contains(k).then_some("changed")] id={ "row-" (name) "-" (k) } {
                        td { (k) }
                        @match row.as_object() {
                            Some(o) => { @for c in &cols { td { (cell(o.get(c))) } } }
                            None => { td colspan=(cols.len().max(1)) { (cell(Some(row))) } }
                        }
                    }
                }
                (more_rows(rows.len() - shown.len(), cols.len() + 1))
            }
        }
    }
}
