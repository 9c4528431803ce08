//! The campaigns pages: the fuzz campaigns kept in the store, and one
//! campaign's pass rate with its interval next to the baseline run's (the
//! same case and agent without faults), pass^k, failure groups with their
//! fault mix as bars, the shrink result in words, reproducer links, and an
//! SVG plot of the failing runs by fault kind. A database store's
//! campaigns come from its database (`worldline_store::campaigns`): a viewer-connected
//! server gets the redacted reports; a responder-connected one redacts
//! the raw reports for each page as it does runs.
//!
//! Why the baseline is the newest unfaulted run of the case and agent (was
//! decision 0226): "how much worse under faults" needs the same agent on the
//! same case without them. The run index already has every field needed (the
//! newest run with the campaign's case, world and `agent_sha256` that is
//! neither a fuzz run nor a fork), and the campaign report needs no new key, so
//! old campaigns get a baseline too. Running a baseline inside every campaign
//! would change `fuzz` and its reports and cost every campaign.

use super::html::{badge, count, layout, text, url};
use super::{Reply, Seen};
use anyhow::Result;
use maud::{Markup, html};
use serde_json::Value;
use std::collections::BTreeMap;
use worldline_store::campaigns;
use worldline_store::index::{Index, query::Filter, row::Row};

fn pct(x: &Value) -> String {
    x.as_f64()
        .map_or("?".into(), |v| format!("{:.1}%", v * 100.0))
}

fn listed(id: &str, r: &Value) -> Markup {
    let s = &r["summary"];
    html! {
        tr {
            td.mono { a href={ "/campaign/" (url(id)) } { (id) } }
            td { (r["case"].as_str().unwrap_or("?")) } td { (r["world"].as_str().unwrap_or("?")) }
            td { (s["runs"]) } td { (pct(&s["pass_rate"])) }
            td { (pct(&s["interval"][0])) "–" (pct(&s["interval"][1])) }
            td { (r["groups"].as_array().map_or(0, Vec::len)) }
        }
    }
}

pub(crate) fn list(app: &Seen) -> Result<Reply> {
    let kept = campaigns::all(&app.store)?;
    let mut redactor = app.redactor()?;
    let mut rows = Vec::new();
    for (id, mut r) in kept {
        if let Some(red) = redactor.as_mut() {
            red.report(&mut r);
        }
        rows.push(listed(&id, &r));
    }
    let o = html! {
        h1 { "Campaigns" }
        @if rows.is_empty() { p { "No campaign in the store yet: " code { "worldline fuzz CASE --agent A.wasm" } " keeps its report here." } }
        table #campaigns {
            thead { tr { th { "campaign" } th { "case" } th { "world" } th { "runs" } th { "pass rate" } th { "95% interval" } th { "groups" } } }
            tbody { @for r in rows { (r) } }
        }
    };
    Ok(Reply::Page(layout("campaigns", o)))
}

/// The baseline of a campaign: the newest run of its case, world and agent
/// that no fuzz schedule or fork shaped.
fn baseline(app: &Seen, r: &Value) -> Option<Row> {
    let field = |k: &str| r[k].as_str().map(str::to_string);
    let filter = Filter {
        case: field("case"),
        world: field("world"),
        agent: field("agent_sha256"),
        ..Filter::default()
    };
    let (rows, _) = Index::read(&app.store, |index| index.query(&filter)).ok()?;
    rows.into_iter()
        .find(|row| !row.tags.iter().any(|t| t == "fuzz" || t == "fork") && row.parent.is_none())
}

/// A horizontal bar of `share`, with the interval's whisker and the
/// baseline's mark when given.
fn bar(
    id: &str,
    share: f64,
    colour: &str,
    interval: Option<(f64, f64)>,
    base: Option<f64>,
) -> Markup {
    let p = |x: f64| format!("{:.1}%", x.clamp(0.0, 1.0) * 100.0);
    html! {
        div.base id=(id) {
            span style={ "left:0;width:" (p(share)) ";background:" (colour) } {}
            @if let Some((lo, hi)) = interval { span.ci title="95% interval" style={ "left:" (p(lo)) ";width:" (p(hi - lo)) } {} }
            @if let Some(b) = base { span.line title="the baseline run" style={ "left:" (p(b)) } {} }
        }
    }
}

/// The campaign's pass rate and each group's share against the baseline.
fn against_baseline(app: &Seen, r: &Value, groups: &[Value]) -> Markup {
    let s = &r["summary"];
    let base = baseline(app, r);
    let base_pass = base.as_ref().map(|b| {
        if b.grade.as_deref() == Some("passed") || (b.grade.is_none() && b.status == "completed") {
            1.0
        } else {
            0.0
        }
    });
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    html! {
        h2 #baseline { "Against the baseline" }
        @match &base {
            Some(b) => { p { "baseline run (no faults): " a.mono #baseline-run href={ "/run/" (url(&b.run_id)) } { (b.run_id) } " " (badge(b.grade.as_deref().unwrap_or(&b.status))) } }
            None => { p.keys #baseline-run { "no run of this case by this agent without faults is in the store: " code { "worldline run CASE --agent A.wasm" } " makes one" } }
        }
        table #baseline-bars {
            tbody {
                @if let Some(bp) = base_pass { tr { td { "baseline pass rate" } td { (bar("bar-baseline", bp, "#2da44e", None, None)) } td { (pct(&Value::from(bp))) } } }
                tr { td { "pass rate with faults" } td { (bar("bar-pass", f(&s["pass_rate"]), "#1f6feb", Some((f(&s["interval"][0]), f(&s["interval"][1]))), base_pass)) } td { (pct(&s["pass_rate"])) } }
                @for (g, group) in groups.iter().enumerate() {
                    tr { td { "group " (g + 1) " failures" } td { (bar(&format!("bar-group-{}", g + 1), f(&group["rate"]), COLOURS[g % COLOURS.len()], None, base_pass.map(|p| 1.0 - p))) } td { (pct(&group["rate"])) } }
                }
            }
        }
        // With no baseline run there is no black line to explain.
        @if base.is_some() {
            p.keys { "The black line is the baseline run's rate; the whisker the 95% interval." }
        } @else {
            p.keys { "The whisker is the 95% interval." }
        }
    }
}

/// Colours of the groups in bars and the plot.
const COLOURS: [&str; 6] = [
    "#d1495b", "#edae49", "#00798c", "#30638e", "#8e6c8a", "#6a994e",
];

/// Failing runs per fault kind: fault kind → runs per group.
fn by_fault(groups: &[Value]) -> BTreeMap<String, Vec<u64>> {
    let mut by_fault: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (g, group) in groups.iter().enumerate() {
        for m in group["fault_mix"].as_array().into_iter().flatten() {
            let counts = by_fault
                .entry(m["fault"].as_str().unwrap_or("?").to_string())
                .or_insert_with(|| vec![0; groups.len()]);
            counts[g] += m["runs"].as_u64().unwrap_or(0);
        }
    }
    by_fault
}

/// The bar pieces of one fault kind: (group, runs, x, width), from `x0`.
fn segments(counts: &[u64], x0: f64, per_run: f64) -> Vec<(usize, u64, f64, f64)> {
    let mut x = x0;
    let mut out = Vec::new();
    for (g, n) in counts.iter().enumerate() {
        let w = per_run * *n as f64;
        if w > 0.0 {
            out.push((g, *n, x, w));
        }
        x += w;
    }
    out
}

/// Horizontal bars of failing runs per fault kind, one colour per group.
fn plot(groups: &[Value]) -> Markup {
    let by_fault = by_fault(groups);
    if by_fault.is_empty() {
        return html! {};
    }
    let max = by_fault
        .values()
        .map(|c| c.iter().sum::<u64>())
        .max()
        .unwrap_or(1)
        .max(1);
    let (label_w, bar_w, row_h) = (220.0, 420.0, 22.0);
    let height = row_h * by_fault.len() as f64 + 30.0;
    html! {
        h2 { "Failing runs by fault kind" }
        svg #plot xmlns="http://www.w3.org/2000/svg" width=(label_w + bar_w + 60.0) height=(height) role="img" aria-label="failing runs by fault kind" font-size="12" font-family="sans-serif" {
            @for (i, (fault, counts)) in by_fault.iter().enumerate() {
                @let y = i as f64 * row_h + 4.0;
                text x=(label_w - 6.0) y=(y + 13.0) text-anchor="end" { (fault) }
                @for (g, n, x, w) in segments(counts, label_w, bar_w / max as f64) {
                    rect x=(format!("{x:.1}")) y=(y) width=(format!("{w:.1}")) height=(row_h - 6.0) fill=(COLOURS[g % COLOURS.len()]) {
                        title { "group " (g + 1) ": " (count(n, "run")) }
                    }
                }
                @let total: u64 = counts.iter().sum();
                text x=(format!("{:.1}", label_w + bar_w * total as f64 / max as f64 + 4.0)) y=(y + 13.0) { (total) }
            }
            text x=(label_w) y=(height - 6.0) fill="#59636e" { "failing runs with each fault kind (colour: failure group)" }
        }
    }
}

fn summary(id: &str, r: &Value) -> Markup {
    let s = &r["summary"];
    html! {
        h1 { "Campaign " span.mono { (id) } }
        dl.kv #summary {
            dt { "case" } dd { (r["case"].as_str().unwrap_or("?")) }
            dt { "world" } dd { (r["world"].as_str().unwrap_or("?")) }
            dt { "faults from" } dd { (r["faults"]["from"].as_str().unwrap_or("?")) }
            dt { "seed" } dd { (r["seed"]) }
            dt { "runs" } dd { (s["runs"]) " (" (s["passed"]) " passed, " (s["failed"]) " failed)" }
            dt { "pass rate" } dd #pass-rate { b { (pct(&s["pass_rate"])) } " (95% interval " (pct(&s["interval"][0])) "–" (pct(&s["interval"][1])) ")" }
            @for pk in s["pass_k"].as_array().into_iter().flatten() { dt { "pass^" (pk["k"]) } dd { (pct(&pk["value"])) } }
        }
    }
}

fn group(g: usize, group: &Value) -> Markup {
    let runs = group["count"].as_u64().unwrap_or(0);
    let all = runs.max(1);
    let colour = COLOURS[g % COLOURS.len()];
    let rep = &group["reproducer"];
    let shrunk = &group["shrunk"];
    html! {
        div.group {
            h3 { span.mark style={ "background:" (colour) } { "group " (g + 1) } " " (group["signature"].as_str().unwrap_or("?")) " — " (count(runs, "run")) " (" (pct(&group["rate"])) " of all)" }
            // Why, as `fuzz` says it: what the scripted model had no reply
            // for, or the agent's own error.
            @if let Some(why) = group["unscripted"].as_str() { p.note.why { (text(why)) } }
            @if let Some(error) = group["agent_error"].as_str() { p.note.why { "the agent's error: " (text(error)) } }
            table { tbody {
                @for m in group["fault_mix"].as_array().into_iter().flatten() {
                    @let runs = m["runs"].as_u64().unwrap_or(0);
                    tr {
                        td { (m["fault"].as_str().unwrap_or("?")) }
                        td { div.bar { span style={ "width:" (format!("{:.0}", runs as f64 * 100.0 / all as f64)) "%;background:" (colour) } {} } }
                        td { (runs) " of " (all) }
                    }
                }
            } }
            @match rep["run_id"].as_str() {
                Some(run) => { p { "reproducer: " a.mono href={ "/run/" (url(run)) } { (run) } " (seed " (rep["seed"]) ")" } }
                None => { p { "reproducer: seed " (rep["seed"]) " (not kept)" } }
            }
            @if let Some(words) = shrunk["words"].as_str() {
                p { "shrunk from " (shrunk["faults_before"]) " to " (shrunk["faults_after"]) " fault(s) in " (count(shrunk["tries"].as_u64().unwrap_or(0), "run"))
                    @if shrunk["complete"] != true { " (budget ran out)" } ": " (words) }
            }
        }
    }
}

pub(crate) fn page(app: &Seen, id: &str) -> Result<Reply> {
    // Named by its id, not by its file in the store (a page showed the
    // store's absolute path).
    let mut r = campaigns::load(&app.store, id).map_err(|e| {
        let why = (e.downcast_ref::<worldline_case::error::InputError>())
            .map_or_else(|| format!("{e:#}"), |i| i.message.clone());
        super::NotFound(format!("campaign {id}: {why}"))
    })?;
    if let Some(red) = app.redactor()?.as_mut() {
        red.report(&mut r);
    }
    let groups = r["groups"].as_array().cloned().unwrap_or_default();
    let o = html! {
        (summary(id, &r))
        (against_baseline(app, &r, &groups))
        h2 { "Failure groups (" (groups.len()) ")" }
        @for (g, x) in groups.iter().enumerate() { (group(g, x)) }
        (plot(&groups))
    };
    Ok(Reply::Page(layout(&format!("campaign {id}"), o)))
}
