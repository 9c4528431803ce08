//! A timeline's events in words: the one-line summary `history` and the
//! UI show for an event, and where two timelines first differ (`diff`).
//!
//! Why values are cut to the terminal, and `--full` cuts nothing (was decision
//! 0193): a fixed cut wastes a wide terminal and wraps a narrow one; scaling
//! each field's limit keeps the line's shape (`tool(args) -> answer`), where
//! cutting the whole line at the width would lose its end, the answer, first.
//! `--json`, the UI and output that is not a terminal use `Standard`, so a
//! script's output does not change with the window. The width comes from
//! `COLUMNS` or `console` (already in the build through indicatif), not one
//! more dependency (`terminal_size`).

use serde_json::Value;
use worldline_case::canon;
use worldline_log::log::call::{Call, CallError};
use worldline_log::log::{Event, Kind};

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
    cut_at(text, max)
}

/// A line of text cut as `how` cuts a line of about 120 characters.
pub(crate) fn cut_text(text: &str, how: Cut) -> String {
    cut_at(text.to_string(), how.limit(120))
}

fn cut_at(text: String, max: usize) -> String {
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

/// A call's name as a timeline shows it: the function without its
/// interface (`tools.call`, `monotonic-clock.now`).
pub fn short_call(call: &str) -> &str {
    call.rsplit_once('/').map_or(call, |(_, c)| c)
}

/// What an event wrote, as one line cut as `how` says (`[]` for none).
pub fn writes_cut(e: &Event, how: Cut) -> String {
    cut(
        &serde_json::to_value(&e.writes).expect("writes serialize"),
        how.limit(100),
    )
}

/// One line of what an event asked and got, its values cut to `how`.
pub fn summary_cut(e: &Event, how: Cut) -> String {
    let short = |v: &Value, max: usize| cut(v, how.limit(max));
    let failed = |err: &CallError| format!("{}: {}", err.kind, short(err.message(), 50));
    match e.typed() {
        Call::ToolsCall { request, response } | Call::UserToolsCall { request, response } => {
            let answer = match (&response.ok, &response.error) {
                (_, Some(err)) => failed(err),
                (Some(ok), _) => short(ok, 60),
                _ => short(&e.response, 60),
            };
            // The user's own tools are marked as the user's.
            let side = if Kind::of(&e.call) == Some(Kind::UserToolsCall) {
                "user calls "
            } else {
                ""
            };
            format!(
                "{side}{}({}) -> {answer}",
                request.name,
                short(request.args(), 50)
            )
        }
        Call::ModelComplete { request, response } => {
            // The last message the model answered, and what it chose.
            let asked = request
                .messages()
                .and_then(|m| m.last())
                .map_or_else(String::new, |m| {
                    format!(
                        "{}: {}",
                        m["role"].as_str().unwrap_or("?"),
                        short(&m["content"], 40)
                    )
                });
            let message = response.message().unwrap_or(&Value::Null);
            let answer = match (&response.error, message["tool_calls"].as_array()) {
                (Some(err), _) => failed(err),
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
            format!("[{}] {asked} -> {answer}", request.provider)
        }
        Call::UserSay { request, response } => {
            let by = response.user.and_then(|u| u.by).unwrap_or(Value::Null);
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
                // A model-played user's scripted stand-in (no model was
                // configured for it, decision 0386).
                None if by["stand_in"] == true => {
                    let mut rule = by.clone();
                    if let Some(o) = rule.as_object_mut() {
                        o.remove("stand_in");
                    }
                    format!("stand-in {}", short(&rule, 40))
                }
                None => short(&by, 40),
            };
            let answer = match (response.reply, response.ended) {
                (Some(r), _) => format!("user: {}", short(&Value::String(r), 100)),
                (None, Some(end)) => format!(
                    "user ended ({}): {}",
                    if end.satisfied() {
                        "satisfied"
                    } else {
                        "not satisfied"
                    },
                    short(end.reason(), 80)
                ),
                _ => short(&e.response, 60),
            };
            format!(
                "agent: {} -> {answer}  [{by}]",
                short(&Value::String(request.message), 100)
            )
        }
        Call::ApprovalRequest { request, response } => {
            let answer = match &response.denied {
                Some(reason) => format!("denied: {}", short(reason, 60)),
                None => "approved".to_string(),
            };
            format!(
                "{}approval {} {} -> {answer}",
                if request.by.is_some() {
                    "host asks "
                } else {
                    ""
                },
                short(&request.kind, 30),
                short(&request.details, 50)
            )
        }
        Call::TraceNote { request, .. } => format!(
            "[{}] {}",
            request.kind,
            short(&Value::String(request.text), 100)
        ),
        // Output the guest wrote (a WASI stream), and any other call.
        _ if e.request.get("text").is_some() => format!(
            "{} {}",
            e.request["stream"].as_str().unwrap_or(""),
            short(&e.request["text"], 80)
        ),
        _ => format!("{} -> {}", short(&e.request, 40), short(&e.response, 50)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use worldline_log::log::Effect;

    #[test]
    fn a_user_turn_a_fork_answered_says_so_not_null() {
        let e = Event {
            call: worldline_log::log::call::Kind::UserSay.name().into(),
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
