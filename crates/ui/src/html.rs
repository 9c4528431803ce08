//! The building blocks of the UI's pages, as maud templates: the page
//! layout (stylesheet, script and key help compiled into the binary),
//! badges, pretty JSON with long strings folded (and, for a diff, the
//! values that differ from the other side marked), and URL escaping.
//! What a page shows of one value is bounded ([`SHOWN`] items of a list or
//! keys of an object, [`FOLDED`] characters of a string): a run's own
//! numbers (a 10,000-row answer, a 20,000-call task) never make a page of
//! megabytes; `worldline show` prints them whole.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;
use std::fmt::Write as _;

const STYLE: &str = include_str!("assets/style.css");
const SCRIPT: &str = include_str!("assets/keys.js");

/// Text made safe for a URL path segment or query value.
pub(crate) fn url(text: &str) -> String {
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

/// The layout of a whole page: title, navigation, body, the key help
/// (`?`) and script.
pub(crate) fn layout(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · worldline" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                nav {
                    a.brand href="/" { "worldline" } " "
                    a href="/" { "runs" } " "
                    a href="/campaigns" { "campaigns" } " "
                    a href="/diff" { "diff" }
                    span.navhelp { "press " kbd { "?" } " for keys" }
                }
                main { (body) }
                (super::keys::help())
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
    .into_string()
}

/// The first 12 characters of a hash.
pub(crate) fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// A status or grade as a coloured badge.
pub(crate) fn badge(text: &str) -> Markup {
    let class = match text {
        "passed" | "completed" | "identical" | "verified_prefix" => "ok",
        "failed" | "diverged" => "bad",
        "trapped" | "out_of_fuel" | "memory_limit" | "timeout" | "exited" | "errored"
        | "broken" => "fault",
        // The case's script ran out: not the agent's failure.
        "unscripted" => "script",
        _ => "plain",
    };
    html! { span class={ "badge " (class) } { (text) } }
}

/// Virtual time as seconds with milliseconds.
pub(crate) fn vtime(ns: u64) -> String {
    format!("{}.{:03}s", ns / 1_000_000_000, ns / 1_000_000 % 1000)
}

/// The page's error: a message in a box.
pub(crate) fn error_box(message: &str) -> Markup {
    html! { p.error role="alert" { (message) } }
}

/// Strings longer than this are folded in JSON views.
const FOLD: usize = 160;

/// Most characters of a folded string a page holds.
const FOLDED: usize = 16 * 1024;

/// Most items of a list (rows of a table, keys of an object) a page shows.
pub(crate) const SHOWN: usize = 200;

/// When a run was recorded (Unix seconds), as UTC to the second.
pub(crate) fn recorded(secs: i64) -> String {
    let text = worldline_case::time::rfc3339(i128::from(secs) * 1_000_000_000);
    format!("{} UTC", text.replacen('T', " ", 1).trim_end_matches('Z'))
}

/// `n` and `word`, plural unless `n` is one ("1 runs" read wrong).
pub(crate) fn count(n: u64, word: &str) -> String {
    match n {
        1 => format!("1 {word}"),
        n => format!("{n} {word}s"),
    }
}

/// The line under a list cut at [`SHOWN`]: how many more there are.
pub(crate) fn more(hidden: usize, what: &str) -> String {
    format!("… {hidden} more {what} not shown (`worldline show` prints them all)")
}

/// At most [`FOLDED`] characters of `s`, then how many more there are:
/// a task, an output, a table's cell or a line of a state's difference
/// (a 2M-character output made the run page 12 MB).
pub(crate) fn text(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(FOLDED) {
        None => s.into(),
        Some((at, _)) => {
            let hidden = s[at..].chars().count();
            format!("{} {}", &s[..at], more(hidden, "chars")).into()
        }
    }
}

/// Pretty JSON, strings longer than [`FOLD`] characters folded into a
/// `<details>` that shows the whole text.
pub(crate) fn json(v: &Value) -> Markup {
    json_against(v, None, "")
}

/// Pretty JSON of `v` with every value that differs from `other` (or is
/// missing there) marked with `<mark class="{class}">`.
pub(crate) fn json_against(v: &Value, other: Option<&Value>, class: &str) -> Markup {
    let mut out = String::new();
    Json {
        out: &mut out,
        class,
    }
    .value(v, other.map(Some), 0);
    html! { pre.json { (PreEscaped(out)) } }
}

/// The JSON printer: `other` is `None` when there is nothing to compare
/// with, `Some(None)` when the other side lacks the value.
struct Json<'a> {
    out: &'a mut String,
    class: &'a str,
}

impl Json<'_> {
    fn value(&mut self, v: &Value, other: Option<Option<&Value>>, depth: usize) {
        let differs = match other {
            None => false,
            Some(None) => true,
            Some(Some(o)) => {
                !matches!(
                    (v, o),
                    (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_))
                ) && v != o
            }
        };
        if differs {
            let _ = write!(self.out, "<mark class=\"{}\">", self.class);
            self.plain(v, None, depth);
            self.out.push_str("</mark>");
        } else {
            self.plain(v, other.flatten(), depth);
        }
    }

    fn plain(&mut self, v: &Value, other: Option<&Value>, depth: usize) {
        let pad = |n: usize| "  ".repeat(n);
        match v {
            Value::Object(m) if !m.is_empty() => {
                self.out.push_str("{\n");
                let last = m.len().min(SHOWN);
                for (i, (k, x)) in m.iter().take(SHOWN).enumerate() {
                    let key = Value::String(k.clone()).to_string();
                    let _ = write!(
                        self.out,
                        "{}<span class=\"k\">{}</span>: ",
                        pad(depth + 1),
                        esc(&key)
                    );
                    self.value(x, other.map(|o| o.get(k)), depth + 1);
                    self.out.push_str(if i + 1 < last { ",\n" } else { "\n" });
                }
                self.cut(m.len(), "keys", depth);
                let _ = write!(self.out, "{}}}", pad(depth));
            }
            Value::Array(a) if !a.is_empty() => {
                self.out.push_str("[\n");
                let last = a.len().min(SHOWN);
                for (i, x) in a.iter().take(SHOWN).enumerate() {
                    self.out.push_str(&pad(depth + 1));
                    self.value(x, other.map(|o| o.get(i)), depth + 1);
                    self.out.push_str(if i + 1 < last { ",\n" } else { "\n" });
                }
                self.cut(a.len(), "items", depth);
                let _ = write!(self.out, "{}]", pad(depth));
            }
            Value::String(s) if s.chars().count() > FOLD => {
                let head: String = s.chars().take(FOLD).collect();
                let chars = s.chars().count();
                let whole: String = s.chars().take(FOLDED).collect();
                let fold = html! {
                    details.fold {
                        summary { span.s { (Value::String(head).to_string()) "…" } " (" (chars) " chars)" }
                        span.s { (Value::String(whole).to_string()) }
                        @if chars > FOLDED { " " span.more { (more(chars - FOLDED, "chars")) } }
                    }
                };
                self.out.push_str(&fold.into_string());
            }
            Value::String(_) => {
                let _ = write!(self.out, "<span class=\"s\">{}</span>", esc(&v.to_string()));
            }
            other => self.out.push_str(&esc(&other.to_string())),
        }
    }

    /// The line saying how many of `len` items past [`SHOWN`] were left out.
    fn cut(&mut self, len: usize, what: &str, depth: usize) {
        if len > SHOWN {
            let line = html! { span.more { (more(len - SHOWN, what)) } };
            let _ = writeln!(self.out, "{}{}", "  ".repeat(depth + 1), line.into_string());
        }
    }
}

/// Text made safe for HTML (the JSON printer writes text, not templates).
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let _ = maud::Escaper::new(&mut out).write_str(text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_count_of_one_is_singular_and_a_time_is_utc_to_the_second() {
        assert_eq!(count(1, "run"), "1 run");
        assert_eq!(count(0, "call"), "0 calls");
        assert_eq!(count(2, "model call"), "2 model calls");
        assert_eq!(recorded(1_772_366_700), "2026-03-01 12:05:00 UTC");
    }

    #[test]
    fn only_the_values_that_differ_are_marked() {
        let a = json!({"ok": [{"id": "D-42"}, {"id": "D-41"}], "same": 1});
        let b = json!({"ok": [{"id": "D-41"}], "same": 1});
        let shown = json_against(&a, Some(&b), "del").into_string();
        assert!(
            shown.contains("<mark class=\"del\"><span class=\"s\">&quot;D-42&quot;</span></mark>"),
            "{shown}"
        );
        // The second deploy is missing on b: marked whole.
        assert!(shown.contains("<mark class=\"del\">{"), "{shown}");
        assert!(!shown.contains("<mark class=\"del\">1</mark>"), "{shown}");
        assert!(!json(&a).into_string().contains("<mark"));
    }

    /// A task, an output, a cell or a line of a state's difference shows
    /// at most [`FOLDED`] characters (a 2M-character output was a page of
    /// 12 MB, a world table's cell one of 6 MB).
    #[test]
    fn a_long_text_is_cut_saying_how_much_more_there_is() {
        assert_eq!(text("short"), "short");
        let long = "é".repeat(FOLDED + 5);
        let shown = text(&long);
        assert!(shown.starts_with(&"é".repeat(FOLDED)), "the head is kept");
        assert!(
            shown.ends_with(&more(5, "chars")),
            "{}",
            &shown[shown.len() - 80..]
        );
        let rows = json!([{"id": "a", "note": "y".repeat(2_000_000)}]);
        let table = super::super::table::rows_or_json(&rows).into_string();
        assert!(table.len() < 40_000, "{} bytes", table.len());
        assert!(table.contains(&more(2_000_000 - FOLDED, "chars")));
    }

    #[test]
    fn a_long_list_a_wide_object_and_a_long_string_are_cut() {
        let list: Vec<u64> = (0..1000).collect();
        let object: serde_json::Map<String, Value> =
            (0..1000).map(|i| (format!("k{i:04}"), json!(i))).collect();
        let text = "x".repeat(100_000);
        let shown = json(&json!({"list": list, "object": object, "text": text})).into_string();
        assert!(shown.contains("  199\n"), "the first items are shown");
        assert!(
            !shown.contains(" 200\n") && !shown.contains("k0200"),
            "no more"
        );
        assert!(
            shown.contains("… 800 more items not shown"),
            "{}",
            &shown[..400]
        );
        assert!(shown.contains("… 800 more keys not shown"));
        assert!(shown.contains(&more(100_000 - FOLDED, "chars")));
        assert!(shown.len() < 40_000, "{} bytes", shown.len());
    }
}
