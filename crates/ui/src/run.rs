//! The run page: the header, the grade (each assertion's expected and
//! actual), the lineage, replay and diff forms, and the timeline a page of
//! [`PER_PAGE`] events at a time, with injected and fuzz faults marked, the
//! interpreter's start-up events and stdout/stderr collapsed, model calls
//! as a conversation, and a trapped run's traceback.

use super::html::{badge, esc, page as frame, short, url, vtime};
use super::{App, Reply};
use anyhow::Result;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use worldline_case::canon;
use worldline_engine::fork::check::describe;
use worldline_engine::index::Index;
use worldline_engine::log::{Event, bundle};
use worldline_engine::mediate::model::CALL as MODEL_CALL;
use worldline_report::timeline::summary;

pub const PER_PAGE: usize = 200;

/// The run id of a bundle path.
pub fn id_of(path: &std::path::Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().to_string())
}

/// An event's marks: injected or fuzz faults, a fork's answer, a fork point.
pub fn marks(e: &Event, fork_points: &[u64]) -> String {
    let mut out = String::new();
    if let Some(i) = &e.injected {
        let action = i["action"].as_str().unwrap_or("?");
        let (class, by) = if i.get("fuzz").is_some() {
            ("fuzz", "fuzz")
        } else if action == "fork-respond" {
            ("fork", "fork")
        } else {
            ("injected", "injected")
        };
        let _ = write!(
            out,
            "<span class=\"mark {class}\" title=\"{}\">{by}: {}</span>",
            esc(&canon::to_string(i)),
            esc(action)
        );
    }
    if fork_points.contains(&e.seq) {
        out.push_str("<span class=\"mark fork\">fork point</span>");
    }
    out
}

fn is_stdio(e: &Event) -> bool {
    e.request.get("text").is_some() && e.request.get("stream").is_some()
}

/// How many events the interpreter made before the agent's first own call
/// (host calls of `wasi:` only, before any `worldline:` call).
fn startup_len(events: &[Event]) -> usize {
    match events.iter().position(|e| e.call.starts_with("worldline:")) {
        Some(n) if events[..n].iter().all(|e| e.call.starts_with("wasi:")) => n,
        _ => 0,
    }
}

fn row(id: &str, e: &Event, fork_points: &[u64]) -> String {
    let call = e.call.rsplit_once('/').map_or(e.call.as_str(), |(_, c)| c);
    format!(
        "<tr id=\"e{seq}\" data-href=\"/run/{}/event/{seq}\"><td class=\"mono\"><a href=\"/run/{}/event/{seq}\">{seq}</a></td><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\" title=\"{}\">{}</td><td class=\"mono\">{}{}</td></tr>",
        url(id),
        url(id),
        vtime(e.vtime_ns),
        format!("{:?}", e.effect).to_lowercase(),
        esc(&e.call),
        esc(call),
        esc(&summary(e)),
        marks(e, fork_points),
        seq = e.seq,
    )
}

const HEAD: &str =
    "<thead><tr><th>#</th><th>vtime</th><th>effect</th><th>call</th><th>what</th></tr></thead>";

/// The timeline rows of `range`, start-up events and stdio runs folded.
fn timeline(
    id: &str,
    events: &[Event],
    range: std::ops::Range<usize>,
    fork_points: &[u64],
) -> String {
    let startup = startup_len(events);
    let mut out = String::new();
    let mut i = range.start;
    if i < startup {
        let end = startup.min(range.end);
        let _ = write!(
            out,
            "<details id=\"startup\"><summary>{} interpreter start-up events ({i}–{})</summary><table>{HEAD}<tbody>",
            end - i,
            end - 1
        );
        for e in &events[i..end] {
            out.push_str(&row(id, e, fork_points));
        }
        out.push_str("</tbody></table></details>");
        i = end;
    }
    let _ = write!(out, "<table id=\"timeline\">{HEAD}<tbody>");
    while i < range.end {
        if is_stdio(&events[i]) {
            let start = i;
            while i < range.end && is_stdio(&events[i]) {
                i += 1;
            }
            let text: String = events[start..i]
                .iter()
                .map(|e| e.request["text"].as_str().unwrap_or("").to_string())
                .collect();
            let _ = write!(
                out,
                "<tr class=\"stdio\"><td colspan=\"5\"><details><summary>{} stdout/stderr events ({start}–{})</summary><pre>{}</pre></details></td></tr>",
                i - start,
                i - 1,
                esc(&text)
            );
            continue;
        }
        out.push_str(&row(id, &events[i], fork_points));
        i += 1;
    }
    out.push_str("</tbody></table>");
    out
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => canon::to_string(other),
    }
}

fn tool_calls(calls: &Value) -> String {
    calls
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    format!(
                        "<div class=\"mono\">→ {}({})</div>",
                        esc(c["function"]["name"].as_str().unwrap_or("?")),
                        esc(&text_of(&c["function"]["arguments"]))
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The model calls of `range` as a conversation: the messages each call
/// added, then the model's answer with its tool calls.
fn conversation(id: &str, events: &[Event], range: std::ops::Range<usize>) -> String {
    let mut out = String::new();
    let mut seen = 0;
    for e in events
        .iter()
        .take(range.end)
        .filter(|e| e.call == MODEL_CALL)
    {
        let messages = e.request["request"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let new = messages
            .get(seen.min(messages.len())..)
            .unwrap_or(&[])
            .to_vec();
        seen = messages.len();
        if (e.seq as usize) < range.start {
            continue;
        }
        for m in new {
            let role = m["role"].as_str().unwrap_or("?");
            let _ = write!(
                out,
                "<div class=\"msg {}\"><b>{}</b> {}{}</div>",
                esc(role),
                esc(role),
                esc(&text_of(&m["content"])),
                tool_calls(&m["tool_calls"])
            );
        }
        let answer = &e.response["ok"]["choices"][0]["message"];
        let said = match e.response.get("error") {
            Some(err) => format!(
                "<span class=\"badge bad\">{}</span> {}",
                esc(err["kind"].as_str().unwrap_or("?")),
                esc(&text_of(&err["message"]))
            ),
            None => format!(
                "{}{}",
                esc(&text_of(&answer["content"])),
                tool_calls(&answer["tool_calls"])
            ),
        };
        let _ = write!(
            out,
            "<div class=\"msg assistant\"><b>model</b> <a href=\"/run/{}/event/{}\">event {}</a> {said}</div>",
            url(id),
            e.seq,
            e.seq
        );
    }
    if out.is_empty() {
        out
    } else {
        format!("<h2>Conversation</h2><div class=\"conv\" id=\"conversation\">{out}</div>")
    }
}

fn grade(g: &Value) -> String {
    let mut out = format!(
        "<h2>Grade {}</h2><table id=\"grade\"><thead><tr><th>assertion</th><th></th><th>expected</th><th>actual</th></tr></thead><tbody>",
        badge(if g["passed"] == true {
            "passed"
        } else {
            "failed"
        })
    );
    for a in g["assertions"].as_array().into_iter().flatten() {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>",
            esc(a["what"].as_str().unwrap_or("?")),
            badge(if a["passed"] == true {
                "passed"
            } else {
                "failed"
            }),
            esc(&canon::to_string(&a["expected"])),
            esc(&canon::to_string(&a["actual"]))
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// The page; `extra` (a replay verdict) goes under the header.
pub fn body(app: &App, run: &str, q: &BTreeMap<String, String>, extra: &str) -> Result<Reply> {
    let path = app.run_path(run)?;
    let mut b = bundle::read(&path).map_err(worldline_case::error::InputError::from)?;
    if let Some(r) = app.redactor()?.as_mut() {
        r.bundle(&mut b);
    }
    let id = id_of(&path);
    let h = &b.header;
    let fork_points: Vec<u64> = h
        .parent
        .iter()
        .flat_map(|p| p.fork_points())
        .map(|fp| fp.event)
        .collect();
    let status = b
        .footer
        .as_ref()
        .map_or("incomplete", |f| f.status.as_str());
    let mut o = format!(
        "<h1>Run <span class=\"mono\">{}</span> {} {}</h1>",
        esc(&id),
        badge(status),
        b.footer
            .as_ref()
            .and_then(|f| f.verdict())
            .map_or_else(String::new, badge)
    );
    o.push_str("<dl class=\"kv\" id=\"header\">");
    let mut kv = |k: &str, v: String| {
        let _ = write!(o, "<dt>{k}</dt><dd>{v}</dd>");
    };
    kv("case", esc(&h.case));
    kv("world", esc(&h.world));
    kv("seed", h.seed.to_string());
    kv(
        "agent",
        format!(
            "<span class=\"mono\" title=\"{}\">{}</span>",
            esc(&h.agent_sha256),
            esc(short(&h.agent_sha256))
        ),
    );
    let provider = b
        .events
        .iter()
        .find(|e| e.call == MODEL_CALL)
        .and_then(|e| e.request["provider"].as_str());
    if provider.is_some() || !h.model_overrides.is_empty() {
        let over: Vec<String> = h
            .model_overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        kv(
            "model",
            esc(&format!("{} {}", provider.unwrap_or("?"), over.join(" "))),
        );
    }
    if let Some(f) = &h.fuzz {
        kv(
            "fuzz faults",
            format!(
                "<span class=\"mono\">{}</span>",
                esc(&serde_json::to_string(f).unwrap_or_default())
            ),
        );
    }
    if let Some(origin) = &h.origin {
        let chain = origin
            .chain_hash
            .as_deref()
            .map_or_else(String::new, |c| format!(" (chain {})", short(c)));
        kv(
            "origin",
            format!(
                "<span id=\"origin\">case made from {}{}</span>",
                esc(&origin.source()),
                esc(&chain)
            ),
        );
    }
    if let Some(p) = &h.parent {
        let edits: Vec<String> = p.edits.iter().map(describe).collect();
        kv(
            "parent",
            format!(
                "<a href=\"/run/{}\" class=\"mono\" id=\"parent\">{}</a> at event <a href=\"/run/{}/event/{}\">{}</a>: <span class=\"mono\">{}</span>",
                url(&p.run),
                esc(&p.run),
                url(&id),
                p.event,
                p.event,
                esc(&edits.join(" "))
            ),
        );
    }
    if let Some(f) = &b.footer {
        kv(
            "chain hash",
            format!("<span class=\"mono\">{}</span>", esc(short(&f.chain_hash))),
        );
        if let Some(err) = &f.error {
            kv("stopped", esc(err));
        }
        if let Some(out) = &f.output {
            kv(
                "output",
                format!("<span class=\"mono\">{}</span>", esc(out)),
            );
        }
    }
    kv("events", b.events.len().to_string());
    o.push_str("</dl>");
    o.push_str(extra);
    if !app.read_only {
        let _ = write!(
            o,
            "<form method=\"post\" action=\"/run/{}/replay\" style=\"display:inline\"><input type=\"hidden\" name=\"csrf\" value=\"{}\"><button id=\"replay\">replay / verify</button></form> ",
            url(&id),
            esc(&app.secrets.csrf)
        );
    }
    let _ = write!(
        o,
        "<form method=\"get\" action=\"/diff\" style=\"display:inline\"><input type=\"hidden\" name=\"a\" value=\"{}\"> diff with <input name=\"b\" id=\"diff-b\" value=\"{}\" size=\"26\"> <button id=\"diff\">diff</button></form>",
        esc(&id),
        esc(h.parent.as_ref().map_or("", |p| p.run.as_str()))
    );
    if let Some(f) = &b.footer {
        if let Some(g) = &f.grade {
            o.push_str(&grade(g));
        }
        if f.status == bundle::Status::Trapped
            && let Some(acc) = worldline_engine::traceback::find(&f.stderr)
        {
            let _ = write!(
                o,
                "<h2>Traceback</h2><pre id=\"traceback\">{}</pre>",
                esc(acc.text())
            );
        }
    }
    let (index, _) = Index::open(&app.store)?;
    let _ = write!(
        o,
        "<h2>Lineage</h2>{}",
        super::lineage::tree(&app.store, &index, &id, h.parent.as_ref())
    );
    let n = b.events.len();
    let pages = n.div_ceil(PER_PAGE).max(1);
    let at = q
        .get("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, pages);
    let range = (at - 1) * PER_PAGE..(at * PER_PAGE).min(n);
    let _ = write!(
        o,
        "<h2>Timeline <small>(events {}–{} of {n})</small></h2>",
        range.start,
        range.end.saturating_sub(1)
    );
    o.push_str(&timeline(&id, &b.events, range.clone(), &fork_points));
    o.push_str("<p class=\"pager\">");
    if at > 1 {
        let _ = write!(
            o,
            "<a id=\"prev-page\" href=\"/run/{}?page={}\">← earlier</a>",
            url(&id),
            at - 1
        );
    }
    let _ = write!(o, "page {at} of {pages}");
    if at < pages {
        let _ = write!(
            o,
            " <a id=\"next-page\" href=\"/run/{}?page={}\">later →</a>",
            url(&id),
            at + 1
        );
    }
    o.push_str("</p>");
    o.push_str(&conversation(&id, &b.events, range));
    if let Some(f) = &b.footer
        && !f.stderr.is_empty()
    {
        let _ = write!(
            o,
            "<details><summary>stderr ({} bytes)</summary><pre>{}</pre></details>",
            f.stderr.len(),
            esc(&f.stderr)
        );
    }
    Ok(Reply::Page(frame(&format!("run {id}"), &o)))
}

pub fn page(app: &App, run: &str, q: &BTreeMap<String, String>) -> Result<Reply> {
    body(app, run, q, "")
}
