//! The event page: one event's request and response (pretty JSON, long
//! strings folded), its writes, the world after it with the rows it
//! changed highlighted, links (and keys) to the previous/next event and
//! tool call, and the fork-from-here form.

use super::html::{badge, error_box, esc, json, page as frame, url, vtime};
use super::run::{id_of, marks};
use super::{App, Reply};
use anyhow::Result;
use axum::http::StatusCode;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use worldline_case::canon;
use worldline_engine::grade::{diff, final_state};

const TOOL_CALL: &str = "worldline:agent/tools.call";

/// What the fork form shows again after a refused fork.
pub struct Refused<'a> {
    pub error: String,
    pub form: &'a BTreeMap<String, String>,
}

pub fn page(app: &App, run: &str, n: u64, refused: Option<Refused>) -> Result<Reply> {
    let rec = app.recorded(run)?;
    let id = id_of(&rec.path);
    let events = &rec.bundle.events;
    let Some(e) = events.get(n as usize) else {
        return Err(worldline_case::error::InputError::new(
            &rec.path,
            format!(
                "no event {n} (the run has {} events, numbered from 0)",
                events.len()
            ),
        )
        .into());
    };
    let mut before = final_state(&rec.case.world.initial, &events[..n as usize]);
    let mut after = before.clone();
    for w in &e.writes {
        after.apply(w);
    }
    // What the page shows passes through the store's redaction policy
    // (one redactor, so a value has one placeholder on the page).
    let mut e = e.clone();
    let mut refused = refused;
    if let Some(r) = app.redactor()?.as_mut() {
        r.event(&mut e);
        r.state(&mut before);
        r.state(&mut after);
        if let Some(x) = refused.as_mut() {
            x.error = r.text(&x.error);
        }
    }
    let e = &e;
    let fork_points: Vec<u64> = rec
        .bundle
        .header
        .parent
        .iter()
        .flat_map(|p| p.fork_points())
        .map(|fp| fp.event)
        .collect();
    let mut o = format!(
        "<p><a href=\"/run/{}?page={}#e{n}\">← run <span class=\"mono\">{}</span></a></p><h1>Event {n}: <span class=\"mono\">{}</span> {}</h1>",
        url(&id),
        n as usize / super::run::PER_PAGE + 1,
        esc(&id),
        esc(&e.call),
        marks(e, &fork_points)
    );
    // Steps: previous/next event and tool call.
    let prev_tool = events[..n as usize]
        .iter()
        .rposition(|x| x.call == TOOL_CALL);
    let next_tool = events
        .iter()
        .skip(n as usize + 1)
        .position(|x| x.call == TOOL_CALL)
        .map(|i| i + n as usize + 1);
    let link = |anchor: &str, label: &str, to: Option<usize>| match to {
        Some(i) => format!(
            "<a id=\"{anchor}\" href=\"/run/{}/event/{i}\">{label} ({i})</a>",
            url(&id)
        ),
        None => format!("<span class=\"keys\">{label}</span>"),
    };
    let _ = write!(
        o,
        "<p class=\"pager\">{} {} {} {} <span class=\"keys\">keys: k/← j/→ events, p/n tool calls</span></p>",
        link("prev-tool", "⇤ tool call", prev_tool),
        link("prev", "← event", (n > 0).then(|| n as usize - 1)),
        link(
            "next",
            "event →",
            (n as usize + 1 < events.len()).then_some(n as usize + 1)
        ),
        link("next-tool", "tool call ⇥", next_tool),
    );
    let _ = write!(
        o,
        "<p>effect {} · vtime {} · fuel {}</p>",
        badge(&format!("{:?}", e.effect).to_lowercase()),
        vtime(e.vtime_ns),
        e.fuel
    );
    if let Some(i) = &e.injected {
        let _ = write!(
            o,
            "<p class=\"note\">injected: <span class=\"mono\">{}</span></p>",
            esc(&canon::to_string(i))
        );
    }
    let _ = write!(
        o,
        "<div class=\"grid\"><div><h2>Request</h2><div id=\"request\">{}</div></div><div><h2>Response</h2><div id=\"response\">{}</div></div></div>",
        json(&e.request),
        json(&e.response)
    );
    if !e.writes.is_empty() {
        let _ = write!(
            o,
            "<h2>Writes</h2><div id=\"writes\">{}</div>",
            json(&serde_json::to_value(&e.writes)?)
        );
    }
    let status = match &refused {
        Some(r) => {
            o.push_str(&fork_form(app, &id, n, &e.response, Some(r)));
            StatusCode::BAD_REQUEST
        }
        None => {
            o.push_str(&fork_form(app, &id, n, &e.response, None));
            StatusCode::OK
        }
    };
    let changes = diff::diff(&before, &after);
    let _ = write!(o, "<h2>World after event {n}</h2>");
    if changes.is_empty() {
        o.push_str("<p id=\"changes\">no change from the event before</p>");
    } else {
        o.push_str("<ul id=\"changes\">");
        for l in changes.lines() {
            let _ = write!(o, "<li class=\"changed mono\">{}</li>", esc(&l));
        }
        o.push_str("</ul>");
    }
    let changed: BTreeSet<(String, String)> = changes
        .tables
        .iter()
        .flat_map(|(t, d)| {
            d.added
                .keys()
                .chain(d.changed.keys())
                .map(move |k| (t.clone(), k.clone()))
        })
        .collect();
    o.push_str("<div id=\"state\">");
    for (name, table) in &after.tables {
        let _ = write!(
            o,
            "<h3>{} <small>({} rows)</small></h3><table class=\"state\"><tbody>",
            esc(name),
            table.rows.len()
        );
        for (k, row) in &table.rows {
            let class = if changed.contains(&(name.clone(), k.clone())) {
                " class=\"changed\""
            } else {
                ""
            };
            let _ = write!(
                o,
                "<tr{class} id=\"row-{}-{}\"><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>",
                esc(name),
                esc(k),
                esc(k),
                esc(&canon::to_string(row))
            );
        }
        o.push_str("</tbody></table>");
    }
    for (path, data) in &after.files {
        let class = if changes.files.contains_key(path) {
            " changed"
        } else {
            ""
        };
        let _ = write!(
            o,
            "<h3 class=\"mono{class}\">{}</h3><div>{}</div>",
            esc(path),
            json(&serde_json::to_value(data)?)
        );
    }
    o.push_str("</div>");
    let html = frame(&format!("event {n} of {id}"), &o);
    Ok(if status == StatusCode::OK {
        Reply::Page(html)
    } else {
        Reply::Problem(status, html)
    })
}

fn fork_form(
    app: &App,
    id: &str,
    n: u64,
    response: &serde_json::Value,
    refused: Option<&Refused>,
) -> String {
    if app.read_only {
        return String::new();
    }
    let field = |k: &str, default: String| {
        refused
            .and_then(|r| r.form.get(k).cloned())
            .unwrap_or(default)
    };
    let respond = field("respond", String::new());
    let mut o = String::from("<h2 id=\"fork-here\">Fork from here</h2>");
    if let Some(r) = refused {
        o.push_str(&error_box(&r.error));
    }
    let _ = write!(
        o,
        "<form method=\"post\" action=\"/run/{}/event/{n}/fork\" id=\"fork-form\">\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<label>respond (JSON; empty keeps the recorded answer; recorded: <code>{}</code>)<textarea name=\"respond\" id=\"respond\" rows=\"5\">{}</textarea></label>\
<label>set (one <code>table/key=JSON</code> or <code>table/key.field=JSON</code> a line; applied as event {n}'s first writes, seen from event {} on)<textarea name=\"set\" id=\"set\" rows=\"2\">{}</textarea></label>\
<label>deny tools (names or globs, space separated) <input name=\"deny\" id=\"deny\" value=\"{}\"></label> \
<label>allow tools <input name=\"allow\" id=\"allow\" value=\"{}\"></label> \
<label>agent (path of another build on this machine; empty keeps the recorded one) <input name=\"agent\" id=\"agent\" value=\"{}\" size=\"40\"></label> \
<button type=\"submit\" id=\"fork\">fork and run</button></form>",
        url(id),
        esc(&app.secrets.csrf),
        esc(&short_json(response)),
        esc(&respond),
        n + 1,
        esc(&field("set", String::new())),
        esc(&field("deny", String::new())),
        esc(&field("allow", String::new())),
        esc(&field("agent", String::new())),
    );
    o
}

fn short_json(v: &serde_json::Value) -> String {
    let t = canon::to_string(v);
    if t.chars().count() > 120 {
        format!("{}…", t.chars().take(120).collect::<String>())
    } else {
        t
    }
}
