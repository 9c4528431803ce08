//! A timeline's events in words: the one-line summary `history` and the
//! UI show for an event, and where two timelines first differ (`diff`).

use serde_json::{Value, json};
use worldline_case::canon;
use worldline_engine::log::Event;

/// How much of each value an event's summary keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The limits as written: a line of about 120 characters (the UI,
    /// `--json`, output that is not a terminal).
    Standard,
    /// The limits scaled to a terminal this many columns wide.
    Columns(usize),
    /// Nothing cut (`--full`).
    Full,
}

/// The columns the standard limits are written for, and the narrowest
/// they shrink to.
const STANDARD_COLUMNS: usize = 120;
const NARROWEST: usize = 48;

impl Cut {
    /// `--full`, else the width of the terminal: `COLUMNS` when set (as
    /// shells and `ls` do), else stdout's size when it is a terminal, else
    /// the standard limits. `taken` columns of the line go before the
    /// summary.
    pub fn for_terminal(full: bool, taken: usize) -> Cut {
        if full {
            return Cut::Full;
        }
        let columns = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .or_else(|| {
                console::Term::stdout()
                    .size_checked()
                    .map(|(_, c)| c as usize)
            });
        match columns {
            Some(c) => Cut::Columns(c.saturating_sub(taken).max(NARROWEST)),
            None => Cut::Standard,
        }
    }

    fn limit(self, max: usize) -> usize {
        match self {
            Cut::Standard => max,
            Cut::Columns(c) => (max * c / STANDARD_COLUMNS).max(8),
            Cut::Full => usize::MAX,
        }
    }
}

fn cut(v: &Value, max: usize) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => canon::to_string(other),
    };
    if text.chars().count() > max {
        format!("{}…", text.chars().take(max).collect::<String>())
    } else {
        text
    }
}

/// One line of what an event asked and got, with the standard limits.
pub fn summary(e: &Event) -> String {
    summary_cut(e, Cut::Standard)
}

/// One line of what an event asked and got, its values cut to `how`.
pub fn summary_cut(e: &Event, how: Cut) -> String {
    let short = |v: &Value, max: usize| cut(v, how.limit(max));
    if e.call == "worldline:agent/tools.call" {
        let answer = match (e.response.get("ok"), e.response.get("error")) {
            (_, Some(err)) => format!(
                "{}: {}",
                err["kind"].as_str().unwrap_or("?"),
                short(&err["message"], 50)
            ),
            (Some(ok), _) => short(ok, 60),
            _ => short(&e.response, 60),
        };
        return format!(
            "{}({}) -> {answer}",
            e.request["name"].as_str().unwrap_or("?"),
            short(&e.request["args"], 50)
        );
    }
    if e.call == worldline_engine::mediate::model::CALL {
        // The last message the model answered, and what it chose.
        let asked = e.request["request"]["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map_or_else(String::new, |m| {
                format!(
                    "{}: {}",
                    m["role"].as_str().unwrap_or("?"),
                    short(&m["content"], 40)
                )
            });
        let message = &e.response["ok"]["choices"][0]["message"];
        let answer = match (e.response.get("error"), message["tool_calls"].as_array()) {
            (Some(err), _) => format!(
                "{}: {}",
                err["kind"].as_str().unwrap_or("?"),
                short(&err["message"], 50)
            ),
            (None, Some(calls)) if !calls.is_empty() => calls
                .iter()
                .map(|c| {
                    format!(
                        "{}({})",
                        c["function"]["name"].as_str().unwrap_or("?"),
                        short(&c["function"]["arguments"], 40)
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            _ => short(&message["content"], 60),
        };
        return format!(
            "[{}] {asked} -> {answer}",
            e.request["provider"].as_str().unwrap_or("?")
        );
    }
    if e.call == worldline_engine::mediate::conversation::SAY {
        let by = &e.response["user"]["by"];
        let by = match by.get("model") {
            Some(m) => format!(
                "model {} {}",
                short(&m["provider"], 20),
                short(&m["model"], 30)
            ),
            // A turn a fork answered has no player: the fork said it.
            None if by.is_null() => match &e.injected {
                Some(i) if i["action"] == "fork-respond" => "fork".to_string(),
                _ => "?".to_string(),
            },
            None => short(by, 40),
        };
        let answer = match (e.response.get("reply"), e.response.get("ended")) {
            (Some(r), _) => format!("user: {}", short(r, 100)),
            (None, Some(end)) => format!(
                "user ended ({}): {}",
                if end["satisfied"] == json!(true) {
                    "satisfied"
                } else {
                    "not satisfied"
                },
                short(&end["reason"], 80)
            ),
            _ => short(&e.response, 60),
        };
        return format!(
            "agent: {} -> {answer}  [{by}]",
            short(&e.request["message"], 100)
        );
    }
    if e.call == worldline_engine::mediate::conversation::APPROVAL {
        let answer = match e.response.get("denied") {
            Some(reason) => format!("denied: {}", short(reason, 60)),
            None => "approved".to_string(),
        };
        return format!(
            "{}approval {} {} -> {answer}",
            if e.request.get("by").is_some() {
                "host asks "
            } else {
                ""
            },
            short(&e.request["kind"], 30),
            short(&e.request["details"], 50)
        );
    }
    if e.call == "worldline:agent/trace.note" {
        return format!(
            "[{}] {}",
            e.request["kind"].as_str().unwrap_or(""),
            short(&e.request["text"], 100)
        );
    }
    if e.request.get("text").is_some() {
        return format!(
            "{} {}",
            e.request["stream"].as_str().unwrap_or(""),
            short(&e.request["text"], 80)
        );
    }
    format!("{} -> {}", short(&e.request, 40), short(&e.response, 50))
}

/// The index of the first event where two timelines differ in call,
/// request, response or writes (or where one ends), if any.
pub fn first_difference(a: &[Event], b: &[Event]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| match (a.get(i), b.get(i)) {
        (Some(x), Some(y)) => {
            (&x.call, &x.request, &x.response, &x.writes)
                != (&y.call, &y.request, &y.response, &y.writes)
        }
        _ => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Effect;

    #[test]
    fn a_user_turn_a_fork_answered_says_so_not_null() {
        let e = Event {
            call: crate::mediate::conversation::SAY.into(),
            effect: Effect::Read,
            fuel: 0,
            hash: String::new(),
            injected: Some(json!({"action": "fork-respond"})),
            request: json!({"message": "Shall I close T-1?"}),
            response: json!({"reply": "Yes, close it"}),
            seq: 4,
            vtime_ns: 0,
            writes: Vec::new(),
        };
        assert_eq!(
            summary(&e),
            "agent: Shall I close T-1? -> user: Yes, close it  [fork]"
        );
    }
}
