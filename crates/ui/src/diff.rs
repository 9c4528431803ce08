//! The diff page: two runs side by side at the first event where they
//! differ, and the difference of their final states.

use super::html::{esc, json, page as frame, url};
use super::run::id_of;
use super::{App, Reply};
use anyhow::Result;
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use worldline_engine::grade::{diff, final_state};
use worldline_report::timeline::{first_difference, summary};

pub fn page(app: &App, q: &BTreeMap<String, String>) -> Result<Reply> {
    let get = |k: &str| q.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
    let mut o = format!(
        "<h1>Diff</h1><form class=\"filters\" method=\"get\" action=\"/diff\"><label>run a<input name=\"a\" id=\"diff-a\" value=\"{}\" size=\"28\"></label><label>run b<input name=\"b\" id=\"diff-b\" value=\"{}\" size=\"28\"></label><button>diff</button></form>",
        esc(get("a").unwrap_or("")),
        esc(get("b").unwrap_or(""))
    );
    let (Some(a), Some(b)) = (get("a"), get("b")) else {
        return Ok(Reply::Page(frame("diff", &o)));
    };
    let (a, b) = (app.recorded(a)?, app.recorded(b)?);
    let (ida, idb) = (id_of(&a.path), id_of(&b.path));
    let mut fa = final_state(&a.case.world.initial, &a.bundle.events);
    let mut fb = final_state(&b.case.world.initial, &b.bundle.events);
    let (mut ea, mut eb) = (a.bundle.events.clone(), b.bundle.events.clone());
    let mut outputs = [&a, &b].map(|r| {
        r.bundle
            .footer
            .as_ref()
            .and_then(|f| f.output.clone())
            .unwrap_or_default()
    });
    if let Some(r) = app.redactor()?.as_mut() {
        ea.iter_mut().chain(eb.iter_mut()).for_each(|e| r.event(e));
        r.state(&mut fa);
        r.state(&mut fb);
        for o in &mut outputs {
            *o = r.output(o);
        }
    }
    let (ea, eb) = (&ea, &eb);
    let link = |id: &str| {
        format!(
            "<a href=\"/run/{}\" class=\"mono\">{}</a>",
            url(id),
            esc(id)
        )
    };
    let _ = write!(
        o,
        "<p>a: {} ({} events) · b: {} ({} events)</p>",
        link(&ida),
        ea.len(),
        link(&idb),
        eb.len()
    );
    match first_difference(ea, eb) {
        None => o.push_str("<p id=\"first-difference\">same events</p>"),
        Some(i) => {
            let side = |id: &str, e: Option<&worldline_engine::log::Event>| match e {
                None => "<p>(no event: the run ended)</p>".to_string(),
                Some(e) => format!(
                    "<p><a href=\"/run/{}/event/{i}\">event {i}</a> <span class=\"mono\">{}</span></p><p class=\"mono\">{}</p>{}",
                    url(id),
                    esc(&e.call),
                    esc(&summary(e)),
                    json(
                        &json!({"request": e.request, "response": e.response, "writes": e.writes})
                    )
                ),
            };
            let _ = write!(
                o,
                "<h2 id=\"first-difference\">First difference: event {i}</h2><div class=\"grid\"><div><h3>a</h3>{}</div><div><h3>b</h3>{}</div></div>",
                side(&ida, ea.get(i)),
                side(&idb, eb.get(i))
            );
        }
    }
    let d = diff::diff(&fa, &fb);
    o.push_str("<h2>Final state, a → b</h2>");
    if d.is_empty() {
        o.push_str("<p id=\"state-diff\">identical</p>");
    } else {
        o.push_str("<ul id=\"state-diff\">");
        for l in d.lines() {
            let _ = write!(o, "<li class=\"mono changed\">{}</li>", esc(&l));
        }
        o.push_str("</ul>");
    }
    if outputs[0] != outputs[1] {
        let _ = write!(
            o,
            "<h2>Output</h2><div class=\"grid\"><pre>{}</pre><pre>{}</pre></div>",
            esc(&outputs[0]),
            esc(&outputs[1])
        );
    }
    Ok(Reply::Page(frame("diff", &o)))
}
