//! A run's lineage as a small tree: its ancestors up the parent chain
//! (from bundle headers) and its forks below it, with their fork points
//! (from the run index).

use super::html::{badge, url};
use maud::{Markup, html};
use worldline_log::log::bundle::{self, Parent};
use worldline_store::index::{Index, query::Filter, row::Row};
use worldline_store::store::StoreDir;

/// How far up and down the tree goes.
const DEPTH: usize = 8;

/// Ancestors, nearest first: (run, event the next one down forks at,
/// whether the store holds it: a database store never holds the killed
/// run a resumed one names).
fn ancestors(store: &StoreDir, parent: Option<&Parent>) -> Vec<(String, u64, bool)> {
    let mut chain = Vec::new();
    let mut parent = parent.cloned();
    while let Some(p) = parent.take().filter(|_| chain.len() < DEPTH) {
        let path = store.resolve_run_id(&p.run).ok();
        chain.push((p.run.clone(), p.event, path.is_some()));
        parent = path
            .and_then(|path| bundle::read_header(&path).ok())
            .and_then(|h| h.parent);
    }
    chain
}

/// The tree as nested lists, `id` (whose header names `parent`) marked as
/// the current run.
pub(crate) fn tree(store: &StoreDir, index: &Index, id: &str, parent: Option<&Parent>) -> Markup {
    let mut inner = html! { li { b.mono { (id) } " (this run)" (children(index, id, 0)) } };
    for (run, at, held) in ancestors(store, parent) {
        let name = match held {
            true => html! { a.mono href={ "/run/" (url(&run)) } { (run) } },
            false => html! { span.mono { (run) } " (not in this store)" },
        };
        inner = html! {
            li { (name) " — forked at event " (at) ":" ul.tree { (inner) } }
        };
    }
    html! { ul.tree #lineage { (inner) } }
}

fn child(index: &Index, r: &Row, depth: usize) -> Markup {
    html! {
        li {
            "fork at event " (r.fork_event.map_or("?".into(), |e| e.to_string())) ": "
            a.mono href={ "/run/" (url(&r.run_id)) } { (r.run_id) } " "
            (badge(r.grade.as_deref().unwrap_or(&r.status)))
            (children(index, &r.run_id, depth + 1))
        }
    }
}

fn children(index: &Index, id: &str, depth: usize) -> Markup {
    let rows = index
        .query(&Filter {
            parent: Some(id.to_string()),
            ..Filter::default()
        })
        .unwrap_or_default();
    if rows.is_empty() || depth >= DEPTH {
        return html! {};
    }
    html! { ul.tree { @for r in rows.iter().rev() { (child(index, r, depth)) } } }
}
