//! The runs page: every run of the store from the run index, newest first,
//! filtered by status, grade, case, agent, world, signature or text, a page
//! of [`PER_PAGE`] at a time (counted and read by the index: a large store
//! costs no more per page than a small one).
//!
//! Why lists come from the run index (was decision 0089): a list is an indexed
//! query whatever the size of the store, with the same `Filter` as `worldline
//! runs`, so the UI and the CLI cannot list differently; reading bundles for
//! the list took seconds for large stores. (Paging by the index too:
//! docs/decisions/0265-ui-run-list-paged-by-the-index.md.)

use super::html::{badge, layout, recorded, short, url};
use super::{Reply, Seen};
use anyhow::Result;
use maud::{Markup, html};
use std::cell::RefCell;
use std::collections::BTreeMap;
use worldline_store::index::{
    Index,
    page::Page,
    query::{Filter, status_words},
    row::Row,
};

const PER_PAGE: u64 = 100;

/// The filter fields, as query keys and labels.
const FIELDS: [(&str, &str); 8] = [
    ("status", "status"),
    ("grade", "grade"),
    ("case", "case (glob)"),
    ("agent", "agent (hash prefix)"),
    ("world", "world (glob)"),
    ("signature", "signature contains"),
    ("q", "text"),
    ("writer", "writer (user, host, CI job)"),
];

fn filter_of(q: &BTreeMap<String, String>) -> Result<Filter> {
    let get = |k: &str| {
        q.get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    // A value no select offers is said (it listed no run, beside a select
    // reading "any"), as `runs --status` says it.
    for key in ["status", "grade"] {
        if let (Some(v), Some(offered)) = (get(key), options(key))
            && !offered.contains(&v.as_str())
        {
            return Err(worldline_case::error::InputError::new(
                key,
                format!(
                    "`{v}` is not a {key} the runs are filtered by; give one of {}",
                    offered[1..].join(", ")
                ),
            )
            .into());
        }
    }
    Ok(Filter {
        status: get("status").map(|s| vec![s]).unwrap_or_default(),
        grade: get("grade"),
        case: get("case"),
        world: get("world"),
        agent: get("agent"),
        signature: get("signature"),
        ..Filter::default()
    })
}

/// Whether a row contains the free text (id, case, world, signature), as
/// lowercased `needle`.
fn has_text(r: &Row, needle: &str) -> bool {
    [
        Some(&r.run_id),
        Some(&r.case),
        Some(&r.world),
        r.signature.as_ref(),
    ]
    .into_iter()
    .flatten()
    .any(|f| contains_lowercased(f, needle))
}

/// Whether `field`, lowercased, contains `needle` (already lowercased):
/// ASCII fields are compared byte by byte without a lowercased copy.
fn contains_lowercased(field: &str, needle: &str) -> bool {
    if !field.is_ascii() {
        return field.to_lowercase().contains(needle);
    }
    let (f, n) = (field.as_bytes(), needle.as_bytes());
    n.is_empty()
        || f.windows(n.len())
            .any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b))
}

/// The options of a select filter (`None` for a text field): "any", then
/// what `runs --status` takes.
fn options(key: &str) -> Option<Vec<&'static str>> {
    match key {
        "status" => Some([""].into_iter().chain(status_words()).collect()),
        "grade" => Some(vec!["", "passed", "failed", "none"]),
        _ => None,
    }
}

/// The filter form; `writers`: the store records who wrote each run (a
/// database store), so the writer field is offered.
fn filters(q: &BTreeMap<String, String>, writers: bool) -> Markup {
    html! {
        form.filters method="get" action="/" {
            @for &(key, label) in FIELDS.iter().filter(|(k, _)| writers || *k != "writer") {
                @let value = q.get(key).map_or("", String::as_str);
                label {
                    (label)
                    @match options(key) {
                        Some(opts) => {
                            select name=(key) id={ "f-" (key) } {
                                @for o in &opts { option value=(o) selected[*o == value] { (if o.is_empty() { "any" } else { *o }) } }
                            }
                        }
                        None => { input name=(key) id={ "f-" (key) } value=(value) size="14"; }
                    }
                }
            }
            button #filter type="submit" { "filter" } " " a href="/" { "clear" }
        }
    }
}

fn row(r: &Row) -> Markup {
    let id = url(&r.run_id);
    html! {
        tr data-href={ "/run/" (id) } {
            td.mono { a href={ "/run/" (id) } { (r.run_id) } @for t in &r.tags { " " span.mark.fork { (t) } } }
            td.mono.when { (recorded(r.created)) }
            td { (r.case) } td { (r.world) } td.mono { (short(&r.agent)) }
            td { (badge(&r.status)) }
            td { @if let Some(g) = &r.grade { (badge(g)) } }
            td { (r.signature.as_deref().unwrap_or("")) }
            td { (r.events) }
            td.mono {
                @if let Some(p) = &r.parent {
                    a href={ "/run/" (url(p)) } { (p) } @if let Some(e) = r.fork_event { " @" (e) }
                }
            }
        }
    }
}

/// The link to page `p` of the same filter.
fn page_link(q: &BTreeMap<String, String>, p: u64) -> String {
    let mut query: Vec<String> = q
        .iter()
        .filter(|(k, v)| *k != "page" && *k != "token" && !v.is_empty())
        .map(|(k, v)| format!("{}={}", url(k), url(v)))
        .collect();
    query.push(format!("page={p}"));
    format!("/?{}", query.join("&"))
}

/// Page `at` of the index rows the query selects, signatures redacted.
/// SQL filters and pages; the filters it cannot apply (the text, the
/// writer, and the signature and case under a redaction policy) are applied to
/// each selected row as it is read.
fn select(app: &Seen, q: &BTreeMap<String, String>, at: u64) -> Result<Page> {
    let mut filter = filter_of(q)?;
    // Under a redaction policy, signatures are shown redacted and matched
    // as shown: a filter must not tell whether a hidden value is there.
    let redactor = RefCell::new(app.redactor()?);
    let (signature, case) = match redactor.borrow().is_some() {
        true => (filter.signature.take(), filter.case.take()),
        false => (None, None),
    };
    let text = q
        .get("q")
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty());
    // Who wrote a run is known to a database store only.
    let written_by = match (q.get("writer").map(|w| w.trim()), app.store.database()) {
        (Some(w), Some(db)) if !w.is_empty() => Some(
            db.runs_written_by(w)
                .map_err(worldline_store::store::db_error)?,
        ),
        // It matched every run, as if the filter were not there.
        (Some(w), None) if !w.is_empty() => {
            return Err(worldline_case::error::InputError::new(
                "writer",
                "a folder store records no writers (one machine writes it); it filters a postgres:// store",
            )
            .into());
        }
        _ => None,
    };
    let (page, _) = Index::read(&app.store, |index| {
        let mut redactor = redactor.borrow_mut();
        if signature.is_none() && case.is_none() && text.is_none() && written_by.is_none() {
            let mut page = index.page(&filter, PER_PAGE, at)?;
            if let Some(red) = redactor.as_mut() {
                let mut worlds = std::collections::BTreeSet::new();
                (page.rows.iter_mut()).for_each(|r| shown(&app.store, red, r, &mut worlds));
            }
            return Ok(page);
        }
        let mut worlds = std::collections::BTreeSet::new();
        index.page_kept(&filter, PER_PAGE, at, |r| {
            if let Some(red) = redactor.as_mut() {
                shown(&app.store, red, r, &mut worlds);
            }
            signature
                .as_ref()
                .is_none_or(|s| r.signature.as_ref().is_some_and(|x| x.contains(s)))
                && (case.as_ref()).is_none_or(|c| worldline_case::world::glob_match(c, &r.case))
                && text.as_deref().is_none_or(|t| has_text(r, t))
                && written_by
                    .as_ref()
                    .is_none_or(|ids| ids.contains(&r.run_id))
        })
    })?;
    Ok(page)
}

/// A row's signature and case name as the view's policy shows them (the
/// signature once its run is learnt, `StoreDir::shown_signature`).
fn shown(
    store: &worldline_store::store::StoreDir,
    red: &mut worldline_log::redact::Redactor,
    r: &mut Row,
    worlds: &mut std::collections::BTreeSet<String>,
) {
    let signature = r.signature.take();
    r.signature = store.shown_signature(red, &r.run_id, signature, worlds);
    r.case = red.repeated(std::mem::take(&mut r.case));
}

pub(crate) fn page(app: &Seen, q: &BTreeMap<String, String>) -> Result<Reply> {
    let asked = q
        .get("page")
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(1);
    let Page {
        rows,
        total,
        at,
        pages,
    } = select(app, q, asked)?;
    let b = html! {
        h1 { "Runs " small { "(" (total) " matching)" } }
        (filters(q, app.store.database().is_some()))
        table #runs {
            thead { tr { th { "run" } th { "recorded" } th { "case" } th { "world" } th { "agent" } th { "status" } th { "grade" } th { "failure / signature" } th { "events" } th { "parent" } } }
            tbody { @for r in &rows { (row(r)) } }
        }
        p.pager {
            @if at > 1 { a #prev-page href=(page_link(q, at - 1)) { "← newer" } }
            "page " (at) " of " (pages)
            @if at < pages { " " a #next-page href=(page_link(q, at + 1)) { "older →" } }
        }
        p.keys { "keys: / text filter · j/k move · Enter open · ? help" }
    };
    Ok(Reply::Page(layout("runs", b)))
}

#[cfg(test)]
mod tests {
    use super::contains_lowercased;

    #[test]
    fn the_text_filter_ignores_case_in_ascii_and_beyond() {
        assert!(contains_lowercased("Case-17-Refund", "case-17"));
        assert!(contains_lowercased("anything", ""));
        assert!(!contains_lowercased("case-1", "case-17"));
        // Non-ASCII text is lowercased as Rust does (Σ, É).
        assert!(contains_lowercased("ÉCHEC Σ", "échec σ"));
        assert!(!contains_lowercased("ÉCHEC", "echec"));
    }
}
