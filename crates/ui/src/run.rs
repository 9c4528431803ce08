//! The run page: the header, the task the agent was given and its final
//! output, the agent's own error, the grade (each assertion's expected and
//! actual), the model usage and cost, the calls on the virtual clock, the
//! lineage, replay and diff forms, the event table a page of
//! [`PER_PAGE`](super::timeline::PER_PAGE)
//! events at a time, the conversation, and a trapped run's traceback.

use super::html::{badge, layout, short, url};
use super::timeline::PER_PAGE;
use super::{Reply, Seen};
use anyhow::Result;
use maud::{Markup, html};
use serde_json::Value;
use std::collections::BTreeMap;
use worldline_case::canon;
use worldline_engine::fork::check::describe;
use worldline_log::log::bundle::{self, Footer, Header, HeldBundle};
use worldline_log::log::{Call, Event, Held, delivery};
use worldline_store::index::Index;
use worldline_store::index::row::{created_of, created_of_id};
use worldline_store::store::StoreDir;

/// The run id of a bundle path.
pub(crate) fn id_of(path: &std::path::Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().to_string())
}

/// The fork points of a run's header.
pub(crate) fn fork_points(h: &Header) -> Vec<u64> {
    h.parent
        .iter()
        .flat_map(|p| p.fork_points())
        .map(|fp| fp.event)
        .collect()
}

fn grade(g: &Value) -> Markup {
    let passed = |v: &Value| {
        if v["passed"] == true {
            "passed"
        } else {
            "failed"
        }
    };
    html! {
        h2 { "Grade " (badge(passed(g))) }
        table #grade {
            thead { tr { th { "assertion" } th {} th { "expected" } th { "actual" } } }
            tbody {
                @for a in g["assertions"].as_array().into_iter().flatten() {
                    tr {
                        td { (a["what"].as_str().unwrap_or("?")) }
                        td { (badge(passed(a))) }
                        td.mono { (canon::to_string(&a["expected"])) }
                        td.mono { (canon::to_string(&a["actual"])) }
                    }
                }
            }
        }
    }
}

/// The model line of the header: provider and overrides.
fn model_line(b: &Shown) -> Option<String> {
    let h = &b.header;
    let provider = b
        .events
        .iter()
        .filter(|e| super::calls::is_model_call(e))
        .find_map(|e| match e.typed() {
            Call::ModelComplete { request, .. } => Some(request.provider),
            _ => None,
        });
    (provider.is_some() || !h.model_overrides.is_empty()).then(|| {
        let over: Vec<String> = h
            .model_overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        format!("{} {}", provider.as_deref().unwrap_or("?"), over.join(" "))
    })
}

/// The `--user-model-set` keys a model-played user was played with
/// (none: its stand-in or the case's `[user.model]`, decision 0386).
fn user_model_line(h: &Header) -> String {
    let set: Vec<String> = h
        .user_model_overrides
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    set.join(" ")
}

/// The run's parent, linked when the store holds it; else said not to be
/// here (a link to it was a page saying "no run"), and why when it is a
/// killed run a database store never took (`absent`: [`absent_parent`]).
fn parent_line(id: &str, h: &Header, absent: Option<&str>) -> Markup {
    let Some(p) = &h.parent else { return html! {} };
    let edits: Vec<String> = p.edits.iter().map(describe).collect();
    html! {
        dt { "parent" }
        dd {
            @match absent {
                None => { a href={ "/run/" (url(&p.run)) } class="mono" id="parent" { (p.run) } }
                Some(why) => { span.mono id="parent" { (p.run) } " (" span #parent-absent { (why) } ")" }
            }
            " at event " a href={ "/run/" (url(id)) "/event/" (p.event) } { (p.event) }
            // A fork with no edits (another agent, or the run continued)
            // ended its line at a colon.
            @if edits.is_empty() { " (no edits)" } @else { ": " span.mono { (edits.join(" ")) } }
        }
    }
}

/// Why the parent `h` names is not in `store`, when it is not: a run
/// resumed on a database store names the killed run it resumed, which the
/// database never took (it keeps finished runs only).
fn absent_parent(store: &StoreDir, h: &Header) -> Option<&'static str> {
    let p = h.parent.as_ref()?;
    if store.resolve_run_id(&p.run).is_ok() {
        return None;
    }
    Some(match (p.resumed, store.database().is_some()) {
        (true, true) => {
            "not in the store: a database store keeps finished runs only, and the killed run this one resumed stays in the working folder of the machine that ran it"
        }
        _ => "not in this store",
    })
}

/// What a redacted copy is, said on its pages (it looked like the run).
pub(crate) fn copy_note(h: &Header) -> Markup {
    let Some(copy) = &h.redacted else {
        return html! {};
    };
    html! {
        p.note #redacted-copy {
            "A REDACTED copy of run " span.mono { (copy.original_run) } " ("
            (copy.hidden) " values hidden): not the original. Its case and world stayed behind, so it does not replay, fork or grade, and no world state is shown; the replay button checks its integrity."
        }
    }
}

fn header(id: &str, b: &Shown, absent: Option<&str>) -> Markup {
    let h = &b.header;
    let status = b
        .footer
        .as_ref()
        .map_or("incomplete", |f| f.status.as_str());
    html! {
        h1 {
            "Run " span.mono { (id) } " " (badge(status)) " "
            @if let Some(v) = b.footer.as_ref().and_then(|f| f.verdict()) { (badge(v)) }
        }
        dl.kv #header {
            @if let Some(t) = b.created { dt { "recorded" } dd #recorded { (super::html::recorded(t)) } }
            dt { "case" } dd { (h.case) }
            dt { "world" } dd { (h.world) }
            dt { "seed" } dd { (h.seed) }
            dt { "agent" } dd { span.mono title=(h.agent_sha256) { (short(&h.agent_sha256)) } }
            @if let Some(m) = model_line(b) { dt { "model" } dd { (m) } }
            @if !h.user_model_overrides.is_empty() { dt { "user model" } dd { (user_model_line(h)) } }
            @if let Some(f) = &h.fuzz { dt { "fuzz faults" } dd { span.mono { (serde_json::to_string(f).unwrap_or_default()) } } }
            @if let Some(o) = &h.origin {
                dt { "origin" }
                dd { span #origin { "case made from " (o.source()) @if let Some(c) = &o.chain_hash { " (chain " (short(c)) ")" } } }
            }
            (parent_line(id, h, absent))
            @if let Some(f) = &b.footer {
                dt { "chain hash" } dd { span.mono { (short(&f.chain_hash)) } }
                @if let Some(err) = &f.error { dt { "stopped" } dd { (err) } }
            }
            dt { "events" } dd { (b.events.len()) }
        }
        (copy_note(h))
    }
}

/// The task the agent was given (a string as text, rows as a table).
fn task(task: Option<&Value>) -> Markup {
    let Some(t) = task else { return html! {} };
    html! {
        h2 { "Task" }
        @match t.as_str() {
            Some(text) => { div.task #task { (super::html::text(text)) } }
            None => { div #task { (super::table::rows_or_json(t)) } }
        }
    }
}

/// The final output, and the agent's own error when it stopped on one.
fn outcome(f: Option<&Footer>) -> Markup {
    let Some(f) = f else { return html! {} };
    let err = worldline_engine::traceback::agent_error(f);
    html! {
        h2 { "Output" }
        @match &f.output {
            Some(out) => { div.output.mono #output { (super::html::text(out)) } }
            None => { p #output.keys { "(the agent wrote no output)" } }
        }
        @if f.status == worldline_log::log::Status::Unscripted {
            p.note #unscripted {
                "not the agent's failure: no reply was scripted or recorded for its request. "
                (f.error.as_deref().unwrap_or_default())
            }
        }
        @if let Some(e) = err {
            p.error #agent-error {
                "agent " (e.status) ": " (e.message)
                @if let Some(at) = &e.at { br; "at " (at) }
            }
        }
    }
}

fn forms(app: &Seen, id: &str, h: &Header) -> Markup {
    html! {
        @if !app.read_only() {
            form method="post" action={ "/run/" (url(id)) "/replay" } style="display:inline" {
                input type="hidden" name="csrf" value=(app.secrets.csrf);
                button #replay { "replay / verify" }
            }
            " "
        }
        form method="get" action="/diff" style="display:inline" {
            input type="hidden" name="a" value=(id);
            // Labelled: a screen reader read an unnamed text box.
            label { " diff with "
                input #diff-b name="b" value=(h.parent.as_ref().map_or("", |p| p.run.as_str())) size="26";
            }
            " " button #diff { "diff" }
        }
    }
}

fn trouble(f: Option<&Footer>) -> Markup {
    let Some(f) = f else { return html! {} };
    let account = (f.status == bundle::Status::Trapped)
        .then(|| worldline_engine::traceback::find(&f.stderr))
        .flatten();
    // The guest's own frames, as `run` prints them (out of fuel, a Rust
    // agent's panic): the page never showed them.
    let frames = worldline_report::run::backtrace_shown(f, account.as_ref());
    html! {
        @if let Some(g) = &f.grade { (grade(g)) }
        @if let Some(acc) = &account { h2 { "Traceback" } pre #traceback { (acc.text()) } }
        @if !frames.is_empty() {
            h2 { "Guest backtrace " small { "(innermost first)" } }
            pre #backtrace { @for fr in &frames { (fr) "\n" } }
        }
    }
}

/// Whether `q` asks for the runtime's own rows shown (`noise=1`): the
/// timeline's and the usage table's pagers keep it.
fn shows_noise(q: &BTreeMap<String, String>) -> bool {
    q.get("noise").is_some_and(|v| v == "1")
}

/// The page of the event table `q` asks for, and its pager.
fn events(id: &str, b: &Shown, q: &BTreeMap<String, String>) -> (Markup, std::ops::Range<usize>) {
    let n = b.events.len();
    let pages = n.div_ceil(PER_PAGE).max(1);
    let at = q
        .get("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, pages);
    let range = (at - 1) * PER_PAGE..(at * PER_PAGE).min(n);
    let gone = delivery::undelivered(&b.events, b.header.rules.unwrap_or(0));
    let marked = super::timeline::Marked {
        fork_points: &fork_points(&b.header),
        gone: &gone,
    };
    let noise = shows_noise(q);
    let table = super::timeline::table(id, &b.events, (range.clone(), noise), &marked);
    let keep = if noise { "&noise=1" } else { "" };
    let markup = html! {
        h2 { "Timeline " small {
            // A run killed before its first event has none (it said
            // "events 0–0 of 0").
            @if n == 0 { "(no events)" } @else { "(events " (range.start) "–" (range.end.saturating_sub(1)) " of " (n) ")" }
        } }
        (super::find::bar(id, &b.events, &range, q))
        (table)
        p.pager {
            @if at > 1 { a #prev-page href={ "/run/" (url(id)) "?page=" (at - 1) (keep) } { "← earlier" } }
            "page " (at) " of " (pages)
            @if at < pages { " " a #next-page href={ "/run/" (url(id)) "?page=" (at + 1) (keep) } { "later →" } }
        }
    };
    (markup, range)
}

/// A run as its page shows it (decision 0380): its header and footer,
/// each event as its row reads it (`Held::shown`: a model call's fields
/// whole but its messages, those it appended), and the events held
/// compact, from which the conversation and a search put back what they
/// need one request at a time.
struct Shown {
    /// When the run was recorded (Unix seconds), as the runs list says.
    created: Option<i64>,
    header: Header,
    footer: Option<Footer>,
    events: Vec<Event>,
    held: Held,
}

impl Shown {
    fn of(b: HeldBundle, created: Option<i64>) -> Shown {
        let mut held = b.events;
        let events = (0..held.len() as u64)
            .filter_map(|seq| held.shown(seq).map(std::borrow::Cow::into_owned))
            .collect();
        Shown {
            created,
            header: b.header,
            footer: b.footer,
            events,
            held,
        }
    }
}

/// The run's bundle, held compact, and its case's task, redacted, and its
/// prices (a redacted copy has no case in the store: its bundle alone).
fn load(
    app: &Seen,
    run: &str,
) -> Result<(
    String,
    HeldBundle,
    Option<Value>,
    worldline_case::prices::Prices,
)> {
    let path = app.run_path(run)?;
    let (mut b, case) = match app.recorded_held(run) {
        Ok(rec) => {
            let (b, case) = rec.into_held();
            (b, Some(case))
        }
        Err(_) => (
            bundle::read_held(&path).map_err(worldline_case::error::InputError::from)?,
            None,
        ),
    };
    let mut task = case.as_ref().map(|c| c.task.value());
    if let Some(r) = app.redactor()?.as_mut() {
        // What the policy's `state` paths hide in the world the run met,
        // first: a list's answer, the conversation and the find bar
        // quoted it whole.
        if let Some(c) = &case {
            r.learn_state(&c.world.initial);
        }
        r.held(&mut b);
        if let Some(t) = task.as_mut() {
            r.json(t);
        }
    }
    let prices = case.map_or_else(|| app.prices.clone(), |c| c.prices.over(&app.prices));
    Ok((id_of(&path), b, task, prices))
}

/// The page; `extra` (a replay verdict) goes under the header.
pub(crate) fn body(
    app: &Seen,
    run: &str,
    q: &BTreeMap<String, String>,
    extra: Markup,
) -> Result<Reply> {
    let (id, b, task_value, prices) = load(app, run)?;
    let created = created_of_id(&id).or_else(|| {
        let meta = std::fs::metadata(app.run_path(run).ok()?).ok()?;
        Some(created_of(&id, &meta))
    });
    let mut b = Shown::of(b, created);
    if let Some(to) = super::find::jump(&id, &b.events, q)? {
        return Ok(Reply::Redirect(to));
    }
    let (index, _) = Index::open(&app.store)?;
    let lineage = super::lineage::tree(&app.store, &index, &id, b.header.parent.as_ref());
    let (table, range) = events(&id, &b, q);
    let noise = shows_noise(q);
    let usage = super::usage::RunUsage::of(&b.events, &prices);
    let gone = delivery::undelivered(&b.events, b.header.rules.unwrap_or(0));
    let footer = b.footer.as_ref();
    let o = html! {
        (header(&id, &b, absent_parent(&app.store, &b.header)))
        (extra)
        (forms(app, &id, &b.header))
        (task(task_value.as_ref()))
        (outcome(footer))
        (trouble(footer))
        (super::usage::section(&id, &usage, (range.clone(), noise)))
        (super::usage::judged(footer.and_then(|f| f.grade.as_ref()), &prices))
        (super::calls::chart(&id, &b.events, b.header.rules.unwrap_or(0), range))
        h2 { "Lineage" } (lineage)
        (table)
        (super::conversation::section(&id, (&b.events, &gone), &mut b.held, q))
        @if let Some(f) = footer.filter(|f| !f.stderr.is_empty()) {
            details { summary { "stderr (" (f.stderr.len()) " bytes)" } pre { (f.stderr) } }
        }
    };
    Ok(Reply::Page(layout(&format!("run {id}"), o)))
}

pub(crate) fn page(app: &Seen, run: &str, q: &BTreeMap<String, String>) -> Result<Reply> {
    body(app, run, q, html! {})
}
