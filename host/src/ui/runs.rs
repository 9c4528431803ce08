//! The runs page: every run of the store from the run index, newest first,
//! filtered by status, grade, case, agent, world, signature or text, a page
//! of [`PER_PAGE`] at a time.

use super::html::{badge, esc, page as frame, short, url};
use super::{App, Reply};
use crate::index::{Index, query::Filter, row::Row};
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;

const PER_PAGE: usize = 100;

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

fn filter_of(q: &BTreeMap<String, String>) -> Filter {
    let get = |k: &str| {
        q.get(k)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    Filter {
        status: get("status").map(|s| vec![s]).unwrap_or_default(),
        grade: get("grade"),
        case: get("case"),
        world: get("world"),
        agent: get("agent"),
        signature: get("signature"),
        ..Filter::default()
    }
}

/// Whether a row contains the free text (id, case, world, signature).
fn has_text(r: &Row, text: &str) -> bool {
    let t = text.to_lowercase();
    [
        Some(&r.run_id),
        Some(&r.case),
        Some(&r.world),
        r.signature.as_ref(),
    ]
    .into_iter()
    .flatten()
    .any(|f| f.to_lowercase().contains(&t))
}

pub fn page(app: &App, q: &BTreeMap<String, String>) -> Result<Reply> {
    let mut filter = filter_of(q);
    // Under a redaction policy, signatures are shown redacted and matched
    // as shown: a filter must not tell whether a hidden value is there.
    let mut redactor = app.redactor()?;
    let signature = match redactor {
        Some(_) => filter.signature.take(),
        None => None,
    };
    let (mut rows, _) = Index::read(&app.store, |index| index.query(&filter))?;
    if let Some(red) = redactor.as_mut() {
        for r in &mut rows {
            r.signature = r.signature.as_deref().map(|s| red.text(s));
        }
    }
    if let Some(s) = signature {
        rows.retain(|r| r.signature.as_ref().is_some_and(|x| x.contains(&s)));
    }
    if let Some(t) = q.get("q").filter(|t| !t.trim().is_empty()) {
        rows.retain(|r| has_text(r, t.trim()));
    }
    // Who wrote a run is known to a database store only.
    if let Some(w) = q.get("writer").filter(|w| !w.trim().is_empty())
        && let Some(db) = app.store.database()
    {
        let ids = db
            .runs_written_by(w.trim())
            .map_err(crate::error::InputError::from)?;
        rows.retain(|r| ids.contains(&r.run_id));
    }
    let pages = rows.len().div_ceil(PER_PAGE).max(1);
    let at = q
        .get("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, pages);
    let mut b = String::new();
    let _ = write!(b, "<h1>Runs <small>({} matching)</small></h1>", rows.len());
    b.push_str("<form class=\"filters\" method=\"get\" action=\"/\">");
    for (key, label) in FIELDS {
        let value = q.get(key).map_or("", String::as_str);
        if key == "status" || key == "grade" {
            let options: &[&str] = if key == "status" {
                &[
                    "",
                    "passed",
                    "failed",
                    "faulted",
                    "completed",
                    "errored",
                    "trapped",
                    "incomplete",
                    "broken",
                ]
            } else {
                &["", "passed", "failed", "none"]
            };
            let _ = write!(b, "<label>{label}<select name=\"{key}\" id=\"f-{key}\">");
            for o in options {
                let sel = if *o == value { " selected" } else { "" };
                let _ = write!(
                    b,
                    "<option value=\"{o}\"{sel}>{}</option>",
                    if o.is_empty() { "any" } else { o }
                );
            }
            b.push_str("</select></label>");
        } else {
            let _ = write!(
                b,
                "<label>{label}<input name=\"{key}\" id=\"f-{key}\" value=\"{}\" size=\"14\"></label>",
                esc(value)
            );
        }
    }
    b.push_str(
        "<button type=\"submit\" id=\"filter\">filter</button> <a href=\"/\">clear</a></form>",
    );
    b.push_str("<table id=\"runs\"><thead><tr><th>run</th><th>case</th><th>world</th><th>agent</th><th>status</th><th>grade</th><th>failure / signature</th><th>events</th><th>parent</th></tr></thead><tbody>");
    for r in rows.iter().skip((at - 1) * PER_PAGE).take(PER_PAGE) {
        let tags: String = r
            .tags
            .iter()
            .map(|t| format!(" <span class=\"mark fork\">{}</span>", esc(t)))
            .collect();
        let parent = match (&r.parent, r.fork_event) {
            (Some(p), e) => format!(
                "<a href=\"/run/{}\">{}</a>{}",
                url(p),
                esc(p),
                e.map_or(String::new(), |e| format!(" @{e}"))
            ),
            _ => String::new(),
        };
        let _ = write!(
            b,
            "<tr data-href=\"/run/{id}\"><td class=\"mono\"><a href=\"/run/{id}\">{}</a>{tags}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"mono\">{parent}</td></tr>",
            esc(&r.run_id),
            esc(&r.case),
            esc(&r.world),
            esc(short(&r.agent)),
            badge(&r.status),
            r.grade.as_deref().map_or_else(String::new, badge),
            esc(r.signature.as_deref().unwrap_or("")),
            r.events,
            id = url(&r.run_id),
        );
    }
    b.push_str("</tbody></table>");
    let link = |p: usize| {
        let mut query: Vec<String> = q
            .iter()
            .filter(|(k, v)| *k != "page" && *k != "token" && !v.is_empty())
            .map(|(k, v)| format!("{}={}", url(k), url(v)))
            .collect();
        query.push(format!("page={p}"));
        format!("/?{}", query.join("&"))
    };
    b.push_str("<p class=\"pager\">");
    if at > 1 {
        let _ = write!(
            b,
            "<a id=\"prev-page\" href=\"{}\">← newer</a>",
            esc(&link(at - 1))
        );
    }
    let _ = write!(b, "page {at} of {pages}");
    if at < pages {
        let _ = write!(
            b,
            " <a id=\"next-page\" href=\"{}\">older →</a>",
            esc(&link(at + 1))
        );
    }
    b.push_str("</p><p class=\"keys\">keys: / text filter · j/k move · Enter open</p>");
    Ok(Reply::Page(frame("runs", &b)))
}
