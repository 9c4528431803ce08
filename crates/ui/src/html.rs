//! HTML building blocks of the UI's pages: escaping, the page layout (with
//! the stylesheet and script embedded in the binary), pretty JSON with long
//! strings folded, and links that keep the page's query.

use serde_json::Value;
use std::fmt::Write as _;

const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/keys.js");

/// Text made safe for HTML content and attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Text made safe for a URL query value.
pub fn url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A whole page: title, navigation and body.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{} · worldline</title><style>{STYLE}</style></head>\
<body><nav><a href=\"/\" class=\"brand\">worldline</a> <a href=\"/\">runs</a> \
<a href=\"/campaigns\">campaigns</a> <a href=\"/diff\">diff</a></nav>\
<main>{body}</main><script>{SCRIPT}</script></body></html>",
        esc(title)
    )
}

/// The first 12 characters of a hash.
pub fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// Strings longer than this are folded in JSON views.
const FOLD: usize = 160;

/// Pretty JSON as HTML, strings longer than [`FOLD`] characters folded
/// into a `<details>` that shows the whole text.
pub fn json(v: &Value) -> String {
    let mut out = String::from("<pre class=\"json\">");
    write_json(&mut out, v, 0);
    out.push_str("</pre>");
    out
}

fn write_json(out: &mut String, v: &Value, depth: usize) {
    let pad = |n: usize| "  ".repeat(n);
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push_str("{\n");
            for (i, (k, x)) in m.iter().enumerate() {
                let _ = write!(
                    out,
                    "{}<span class=\"k\">{}</span>: ",
                    pad(depth + 1),
                    esc(&Value::String(k.clone()).to_string())
                );
                write_json(out, x, depth + 1);
                out.push_str(if i + 1 < m.len() { ",\n" } else { "\n" });
            }
            let _ = write!(out, "{}}}", pad(depth));
        }
        Value::Array(a) if !a.is_empty() => {
            out.push_str("[\n");
            for (i, x) in a.iter().enumerate() {
                out.push_str(&pad(depth + 1));
                write_json(out, x, depth + 1);
                out.push_str(if i + 1 < a.len() { ",\n" } else { "\n" });
            }
            let _ = write!(out, "{}]", pad(depth));
        }
        Value::String(s) if s.chars().count() > FOLD => {
            let head: String = s.chars().take(FOLD).collect();
            let _ = write!(
                out,
                "<details class=\"fold\"><summary><span class=\"s\">{}…</span> ({} chars)</summary><span class=\"s\">{}</span></details>",
                esc(&Value::String(head).to_string()),
                s.chars().count(),
                esc(&v.to_string())
            );
        }
        Value::String(_) => {
            let _ = write!(out, "<span class=\"s\">{}</span>", esc(&v.to_string()));
        }
        other => out.push_str(&esc(&other.to_string())),
    }
}

/// A status or grade as a coloured badge.
pub fn badge(text: &str) -> String {
    let class = match text {
        "passed" | "completed" | "identical" | "verified_prefix" => "ok",
        "failed" | "diverged" => "bad",
        "trapped" | "out_of_fuel" | "memory_limit" | "timeout" | "exited" | "errored"
        | "broken" => "fault",
        _ => "plain",
    };
    format!("<span class=\"badge {class}\">{}</span>", esc(text))
}

/// Virtual time as seconds with milliseconds.
pub fn vtime(ns: u64) -> String {
    format!("{}.{:03}s", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}

/// The page's error: a message in a box.
pub fn error_box(message: &str) -> String {
    format!("<p class=\"error\" role=\"alert\">{}</p>", esc(message))
}
