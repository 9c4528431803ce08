//! A run's lineage as a small tree: its ancestors up the parent chain
//! (from bundle headers) and its forks below it, with their fork points
//! (from the run index).

use super::html::{badge, esc, url};
use std::fmt::Write as _;
use worldline_engine::index::{Index, query::Filter};
use worldline_engine::log::bundle::{self, Parent};
use worldline_engine::store::StoreDir;

/// How far up and down the tree goes.
const DEPTH: usize = 8;

/// The tree as nested lists, `id` (whose header names `parent`) marked as
/// the current run.
pub fn tree(store: &StoreDir, index: &Index, id: &str, parent: Option<&Parent>) -> String {
    // Ancestors, nearest first: (run, event the next one down forks at).
    let mut chain: Vec<(String, Option<u64>)> = Vec::new();
    let mut parent = parent.cloned();
    for _ in 0..DEPTH {
        match parent {
            Some(p) => {
                chain.push((p.run.clone(), Some(p.event)));
                parent = store
                    .resolve_run_id(&p.run)
                    .ok()
                    .and_then(|path| bundle::read(&path).ok())
                    .and_then(|b| b.header.parent);
            }
            None => break,
        }
    }
    let mut inner = format!("<li><b class=\"mono\">{}</b> (this run)", esc(id));
    children(index, id, 0, &mut inner);
    inner.push_str("</li>");
    for (run, at) in &chain {
        inner = format!(
            "<li><a href=\"/run/{}\" class=\"mono\">{}</a>{}<ul class=\"tree\">{inner}</ul></li>",
            url(run),
            esc(run),
            at.map_or(String::new(), |e| format!(" — forked at event {e}:"))
        );
    }
    format!("<ul class=\"tree\" id=\"lineage\">{inner}</ul>")
}

fn children(index: &Index, id: &str, depth: usize, out: &mut String) {
    let Ok(rows) = index.query(&Filter {
        parent: Some(id.to_string()),
        ..Filter::default()
    }) else {
        return;
    };
    if rows.is_empty() || depth >= DEPTH {
        return;
    }
    out.push_str("<ul class=\"tree\">");
    for r in rows.iter().rev() {
        let _ = write!(
            out,
            "<li>fork at event {}: <a href=\"/run/{}\" class=\"mono\">{}</a> {}",
            r.fork_event.map_or("?".into(), |e| e.to_string()),
            url(&r.run_id),
            esc(&r.run_id),
            badge(r.grade.as_deref().unwrap_or(&r.status))
        );
        children(index, &r.run_id, depth + 1, out);
        out.push_str("</li>");
    }
    out.push_str("</ul>");
}
