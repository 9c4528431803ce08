//! Finding your way in a long run from its page: jump to event N (`?at=N`
//! answers with the page holding it, scrolled to its row), the model call
//! before and after the page shown, and a text search over the events'
//! requests and answers (`?find=TEXT`, case-insensitive, the first
//! [`MATCHES`] listed, each linking to its event).

use super::calls::is_model_call;
use super::html::url;
use super::timeline::{PER_PAGE, hidden_row};
use anyhow::Result;
use maud::{Markup, html};
use std::collections::BTreeMap;
use std::ops::Range;
use worldline_case::canon;
use worldline_log::log::Event;

/// How many matching events a search lists.
pub(crate) const MATCHES: usize = 100;

/// Where `?at=N` goes: the page holding event N, at its row; an N that is
/// not an event of the run is bad input.
pub(crate) fn jump(
    id: &str,
    events: &[Event],
    q: &BTreeMap<String, String>,
) -> Result<Option<String>> {
    let Some(at) = q.get("at").filter(|a| !a.trim().is_empty()) else {
        return Ok(None);
    };
    let count = events.len();
    match at.trim().parse::<usize>() {
        Ok(n) if n < count => Ok(Some(to_row(id, events, n))),
        _ => Err(worldline_case::error::InputError::new(
            id,
            format!(
                "no event {at:?} to jump to: the run has {}",
                worldline_engine::fork::check::numbered(count)
            ),
        )
        .into()),
    }
}

/// The run page holding event `n`, scrolled to its row (a model call's:
/// never hidden).
pub(crate) fn to_event(id: &str, n: usize) -> String {
    format!("/run/{}?page={}#e{n}", url(id), n / PER_PAGE + 1)
}

/// [`to_event`] for any event of `events`: the runtime's own events shown
/// (`noise=1`) when its row is one of those hidden until they are (a jump
/// to a clock read landed on a hidden row).
pub(crate) fn to_row(id: &str, events: &[Event], n: usize) -> String {
    if !hidden_row(events, n) {
        return to_event(id, n);
    }
    format!("/run/{}?page={}&noise=1#e{n}", url(id), n / PER_PAGE + 1)
}

/// The bar above the timeline: the jump and search forms, the model
/// calls either side of the page `range` shows, and a search's matches.
pub(crate) fn bar(
    id: &str,
    events: &[Event],
    range: &Range<usize>,
    q: &BTreeMap<String, String>,
) -> Markup {
    let before = events[..range.start].iter().rposition(is_model_call);
    let after = events
        .iter()
        .skip(range.end)
        .position(is_model_call)
        .map(|i| i + range.end);
    let text = q.get("find").map(|t| t.trim()).filter(|t| !t.is_empty());
    html! {
        div.find {
            form #jump method="get" action={ "/run/" (url(id)) } {
                label { "event " input #jump-at name="at" type="number" min="0" max=(events.len().saturating_sub(1)) size="6"; }
                " " button type="submit" { "jump" }
            }
            " "
            form #search method="get" action={ "/run/" (url(id)) } {
                label { "find " input #find name="find" value=(text.unwrap_or("")) size="24"; }
                " " button type="submit" { "search" }
            }
            " "
            @match before {
                Some(i) => { a #prev-model href=(to_event(id, i)) { "⇤ model call (" (i) ")" } }
                None => { span.keys { "⇤ model call" } }
            }
            " "
            @match after {
                Some(i) => { a #next-model href=(to_event(id, i)) { "model call ⇥ (" (i) ")" } }
                None => { span.keys { "model call ⇥" } }
            }
        }
        @if let Some(text) = text { (found(id, events, text)) }
    }
}

/// The events whose call, request or answer holds `text` (any case), each
/// as its row reads it (`Held::shown`): a model call's request by the
/// messages it added to the conversation, so a message is found at the
/// call that first sent it, not again at every later call that resends
/// it (each request put back whole and searched made a long run's search
/// quadratic in its length: 74 s for 400 calls).
fn found(id: &str, events: &[Event], text: &str) -> Markup {
    let needle = text.to_lowercase();
    let mut total = 0usize;
    let mut shown = Vec::new();
    for e in events {
        let hay = format!(
            "{} {} {}",
            e.call,
            canon::to_string(&e.request),
            canon::to_string(&e.response)
        );
        let (lower, starts) = lowered(&hay);
        if let Some(at) = lower.find(&needle) {
            total += 1;
            if shown.len() < MATCHES {
                // Quoted from the event as it is (it was quoted lower-cased).
                let from = starts[at];
                let to = starts
                    .get(at + needle.len())
                    .map_or(hay.len(), |&e| e.max(from));
                shown.push((e.seq, e.call.clone(), snippet(&hay, from, to - from)));
            }
        }
    }
    html! {
        section #found {
            h3 { (total) " events hold “" (text) "”"
                @if total > shown.len() { small { " (the first " (shown.len()) " listed)" } } }
            ul {
                @for (seq, call, around) in &shown {
                    li { a href={ "/run/" (url(id)) "/event/" (seq) } { "event " (seq) } " "
                        span.mono { (call) } " " span.mono { "…" (around) "…" } }
                }
            }
        }
    }
}

/// `hay` lower-cased, and for each of its bytes the byte of `hay` where
/// the character it comes from starts (lower-casing may change a
/// character's length).
fn lowered(hay: &str) -> (String, Vec<usize>) {
    let mut lower = String::with_capacity(hay.len());
    let mut starts = Vec::with_capacity(hay.len());
    for (i, c) in hay.char_indices() {
        for l in c.to_lowercase() {
            lower.push(l);
            starts.extend(std::iter::repeat_n(i, l.len_utf8()));
        }
    }
    (lower, starts)
}

/// Up to 40 characters either side of the match at byte `at`.
fn snippet(hay: &str, at: usize, len: usize) -> String {
    let start = hay[..at].char_indices().rev().nth(39).map_or(0, |(i, _)| i);
    let end = hay[at + len..]
        .char_indices()
        .nth(40)
        .map_or(hay.len(), |(i, _)| at + len + i);
    hay[start..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_match_is_quoted_as_the_text_has_it() {
        let hay = "Price lookup at 2026-03-01T11:50:00Z, İstanbul";
        let (lower, starts) = lowered(hay);
        let at = lower.find("price").unwrap();
        let (from, to) = (starts[at], starts[at + "price".len()]);
        assert_eq!(&hay[from..to], "Price");
        assert!(snippet(hay, from, to - from).contains("T11:50:00Z"));
        let at = lower.find("stanbul").unwrap();
        assert_eq!(&hay[starts[at]..], "stanbul");
    }

    #[test]
    fn a_jump_goes_to_the_page_holding_the_event_and_refuses_one_past_the_end() {
        let q = |at: &str| BTreeMap::from([("at".to_string(), at.to_string())]);
        let events: Vec<Event> = (0..450u64)
            .map(|seq| {
                serde_json::from_value(serde_json::json!({
                    "call": if seq == 300 { "wasi:clocks/monotonic-clock.now" } else { "worldline:agent/tools.call" },
                    "effect": "read", "fuel": 0, "seq": seq, "vtime_ns": seq,
                    "request": {}, "response": {},
                }))
                .unwrap()
            })
            .collect();
        let events = events.as_slice();
        assert_eq!(
            jump("r1", events, &q("250")).unwrap().as_deref(),
            Some("/run/r1?page=2#e250")
        );
        assert_eq!(
            jump("r1", events, &q("0")).unwrap().as_deref(),
            Some("/run/r1?page=1#e0")
        );
        // A clock read's row is hidden until the runtime's events show.
        assert_eq!(
            jump("r1", events, &q("300")).unwrap().as_deref(),
            Some("/run/r1?page=2&noise=1#e300")
        );
        assert_eq!(jump("r1", events, &BTreeMap::new()).unwrap(), None);
        assert_eq!(jump("r1", events, &q(" ")).unwrap(), None);
        for bad in ["450", "-1", "x"] {
            let e = jump("r1", events, &q(bad)).unwrap_err();
            assert!(worldline_case::error::is_input(&e), "{bad}");
            assert!(format!("{e:#}").contains("numbered 0 to 449"), "{e:#}");
        }
    }

    #[test]
    fn a_snippet_keeps_whole_characters_around_the_match() {
        let hay = format!("{}needle{}", "é".repeat(60), "ü".repeat(60));
        let at = hay.find("needle").unwrap();
        let s = snippet(&hay, at, "needle".len());
        assert_eq!(s, format!("{}needle{}", "é".repeat(40), "ü".repeat(40)));
        assert_eq!(snippet("needle", 0, 6), "needle");
    }
}
