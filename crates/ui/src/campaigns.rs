//! The campaigns pages: the fuzz campaigns kept in the store, and one
//! campaign's pass rate with its interval, pass^k, failure groups with
//! their fault mix as bars, the shrink result in words, reproducer links,
//! and an SVG plot of the failing runs by fault kind.

use super::html::{esc, page as frame, url};
use super::{App, Reply};
use anyhow::Result;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use worldline_engine::fuzz::saved;

fn pct(x: &Value) -> String {
    x.as_f64()
        .map_or("?".into(), |v| format!("{:.1}%", v * 100.0))
}

pub fn list(app: &App) -> Result<Reply> {
    let mut o = String::from("<h1>Campaigns</h1>");
    let ids = saved::ids(&app.store);
    if ids.is_empty() {
        o.push_str("<p>No campaign in the store yet: <code>worldline fuzz CASE --agent A.wasm</code> keeps its report here.</p>");
    }
    o.push_str("<table id=\"campaigns\"><thead><tr><th>campaign</th><th>case</th><th>world</th><th>runs</th><th>pass rate</th><th>95% interval</th><th>groups</th></tr></thead><tbody>");
    let mut redactor = app.redactor()?;
    for id in ids {
        let Ok(mut r) = saved::load(&app.store, &id) else {
            continue;
        };
        if let Some(red) = redactor.as_mut() {
            red.json(&mut r);
        }
        let s = &r["summary"];
        let _ = write!(
            o,
            "<tr><td class=\"mono\"><a href=\"/campaign/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}–{}</td><td>{}</td></tr>",
            url(&id),
            esc(&id),
            esc(r["case"].as_str().unwrap_or("?")),
            esc(r["world"].as_str().unwrap_or("?")),
            s["runs"],
            pct(&s["pass_rate"]),
            pct(&s["interval"][0]),
            pct(&s["interval"][1]),
            r["groups"].as_array().map_or(0, Vec::len)
        );
    }
    o.push_str("</tbody></table>");
    Ok(Reply::Page(frame("campaigns", &o)))
}

/// Colours of the groups in bars and the plot.
const COLOURS: [&str; 6] = [
    "#d1495b", "#edae49", "#00798c", "#30638e", "#8e6c8a", "#6a994e",
];

/// Horizontal bars of failing runs per fault kind, one colour per group.
fn plot(groups: &[Value]) -> String {
    // fault kind → runs per group.
    let mut by_fault: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (g, group) in groups.iter().enumerate() {
        for m in group["fault_mix"].as_array().into_iter().flatten() {
            let counts = by_fault
                .entry(m["fault"].as_str().unwrap_or("?").to_string())
                .or_insert_with(|| vec![0; groups.len()]);
            counts[g] += m["runs"].as_u64().unwrap_or(0);
        }
    }
    if by_fault.is_empty() {
        return String::new();
    }
    let max = by_fault
        .values()
        .map(|c| c.iter().sum::<u64>())
        .max()
        .unwrap_or(1)
        .max(1);
    let (label_w, bar_w, row_h) = (220.0, 420.0, 22.0);
    let height = row_h * by_fault.len() as f64 + 30.0;
    let mut svg = format!(
        "<svg id=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"failing runs by fault kind\" font-size=\"12\" font-family=\"sans-serif\">",
        label_w + bar_w + 60.0
    );
    for (i, (fault, counts)) in by_fault.iter().enumerate() {
        let y = i as f64 * row_h + 4.0;
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y + 13.0,
            esc(fault)
        );
        let mut x = label_w;
        for (g, n) in counts.iter().enumerate() {
            let w = bar_w * *n as f64 / max as f64;
            if w > 0.0 {
                let _ = write!(
                    svg,
                    "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"><title>group {}: {n} runs</title></rect>",
                    row_h - 6.0,
                    COLOURS[g % COLOURS.len()],
                    g + 1
                );
            }
            x += w;
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\">{}</text>",
            x + 4.0,
            y + 13.0,
            counts.iter().sum::<u64>()
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{label_w}\" y=\"{}\" fill=\"#59636e\">failing runs with each fault kind (colour: failure group)</text></svg>",
        height - 6.0
    );
    svg
}

pub fn page(app: &App, id: &str) -> Result<Reply> {
    let mut r = saved::load(&app.store, id).map_err(|e| super::NotFound(format!("{e:#}")))?;
    if let Some(red) = app.redactor()?.as_mut() {
        red.json(&mut r);
    }
    let s = &r["summary"];
    let mut o = format!(
        "<h1>Campaign <span class=\"mono\">{}</span></h1><dl class=\"kv\" id=\"summary\"><dt>case</dt><dd>{}</dd><dt>world</dt><dd>{}</dd><dt>faults from</dt><dd>{}</dd><dt>seed</dt><dd>{}</dd><dt>runs</dt><dd>{} ({} passed, {} failed)</dd><dt>pass rate</dt><dd id=\"pass-rate\"><b>{}</b> (95% interval {}–{})</dd>",
        esc(id),
        esc(r["case"].as_str().unwrap_or("?")),
        esc(r["world"].as_str().unwrap_or("?")),
        esc(r["faults"]["from"].as_str().unwrap_or("?")),
        r["seed"],
        s["runs"],
        s["passed"],
        s["failed"],
        pct(&s["pass_rate"]),
        pct(&s["interval"][0]),
        pct(&s["interval"][1]),
    );
    for pk in s["pass_k"].as_array().into_iter().flatten() {
        let _ = write!(o, "<dt>pass^{}</dt><dd>{}</dd>", pk["k"], pct(&pk["value"]));
    }
    o.push_str("</dl>");
    let groups = r["groups"].as_array().cloned().unwrap_or_default();
    let _ = write!(o, "<h2>Failure groups ({})</h2>", groups.len());
    for (g, group) in groups.iter().enumerate() {
        let count = group["count"].as_u64().unwrap_or(0).max(1);
        let _ = write!(
            o,
            "<div class=\"group\"><h3><span class=\"mark\" style=\"background:{}\">group {}</span> {} — {} runs ({} of all)</h3><table><tbody>",
            COLOURS[g % COLOURS.len()],
            g + 1,
            esc(group["signature"].as_str().unwrap_or("?")),
            group["count"],
            pct(&group["rate"])
        );
        for m in group["fault_mix"].as_array().into_iter().flatten() {
            let runs = m["runs"].as_u64().unwrap_or(0);
            let share = runs as f64 / count as f64;
            let _ = write!(
                o,
                "<tr><td>{}</td><td><div class=\"bar\"><span style=\"width:{:.0}%;background:{}\"></span></div></td><td>{runs} of {count}</td></tr>",
                esc(m["fault"].as_str().unwrap_or("?")),
                share * 100.0,
                COLOURS[g % COLOURS.len()]
            );
        }
        o.push_str("</tbody></table>");
        let rep = &group["reproducer"];
        match rep["run_id"].as_str() {
            Some(run) => {
                let _ = write!(
                    o,
                    "<p>reproducer: <a href=\"/run/{}\" class=\"mono\">{}</a> (seed {})</p>",
                    url(run),
                    esc(run),
                    rep["seed"]
                );
            }
            None => {
                let _ = write!(o, "<p>reproducer: seed {} (not kept)</p>", rep["seed"]);
            }
        }
        if let Some(words) = group["shrunk"]["words"].as_str() {
            let _ = write!(
                o,
                "<p>shrunk from {} to {} faults in {} tries{}: {}</p>",
                group["shrunk"]["faults_before"],
                group["shrunk"]["faults_after"],
                group["shrunk"]["tries"],
                if group["shrunk"]["complete"] == true {
                    ""
                } else {
                    " (budget ran out)"
                },
                esc(words)
            );
        }
        o.push_str("</div>");
    }
    let chart = plot(&groups);
    if !chart.is_empty() {
        let _ = write!(o, "<h2>Failing runs by fault kind</h2>{chart}");
    }
    Ok(Reply::Page(frame(&format!("campaign {id}"), &o)))
}
