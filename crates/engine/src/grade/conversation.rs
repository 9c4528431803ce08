//! Grading the conversation (`[expect.conversation]`) from the recorded
//! user turns and approvals: what the agent said, how many turns it took,
//! whether it asked approval before the tool calls that need it, and how
//! the user left.

use super::{Assertion, check};
use crate::case::expect_conversation::{ConversationCheck, SaidCheck};
use crate::log::Event;
use crate::mediate::conversation::{APPROVAL, SAY};
use crate::world::glob_match;
use serde_json::{Value, json};

/// The agent's messages to the user, in order.
fn messages(events: &[Event]) -> Vec<&str> {
    events
        .iter()
        .filter(|e| e.call == SAY)
        .filter_map(|e| e.request["message"].as_str())
        .collect()
}

fn said_check(s: &SaidCheck, messages: &[&str]) -> Assertion {
    let looked_at: Vec<&str> = if s.last {
        messages.last().copied().into_iter().collect()
    } else {
        messages.to_vec()
    };
    let hit = looked_at.iter().find(|m| s.says(m));
    let actual = match (hit, s.last) {
        (Some(m), _) => json!(m),
        (None, true) => json!(looked_at.first()),
        (None, false) => json!(format!("{} messages, none matching", looked_at.len())),
    };
    check(
        s.describe(),
        json!(!s.absent),
        actual,
        hit.is_some() != s.absent,
    )
}

/// How the user left: `Some(satisfied)` once a turn ended the conversation.
fn ending(events: &[Event]) -> Option<&Value> {
    events
        .iter()
        .filter(|e| e.call == SAY)
        .find_map(|e| e.response.get("ended"))
}

/// Calls of `tool` not preceded by an approval the agent asked for and
/// got since the tool's previous call: their event numbers.
fn unapproved_calls(tool: &str, events: &[Event]) -> Vec<u64> {
    let mut approved = false;
    let mut out = Vec::new();
    for e in events {
        if e.call == APPROVAL && e.request.get("by").is_none() {
            approved = e.response.get("approved").and_then(Value::as_bool) == Some(true);
        } else if e.call == "worldline:agent/tools.call"
            && e.request["name"]
                .as_str()
                .is_some_and(|n| glob_match(tool, n))
        {
            if !approved {
                out.push(e.seq);
            }
            approved = false;
        }
    }
    out
}

/// The assertions of `[expect.conversation]`.
pub fn checks(c: &ConversationCheck, events: &[Event]) -> Vec<Assertion> {
    let said = messages(events);
    let mut out: Vec<Assertion> = c.said.iter().map(|s| said_check(s, &said)).collect();
    if let Some(max) = c.max_turns {
        let n = said.len() as u64;
        out.push(check(
            "conversation turns at most".into(),
            json!(max),
            json!(n),
            n <= max,
        ));
    }
    if let Some(want) = c.satisfied {
        let ended = ending(events);
        let got = ended.is_some_and(|e| e["satisfied"] == json!(true));
        out.push(check(
            "user ended satisfied".into(),
            json!(want),
            ended
                .cloned()
                .unwrap_or(json!("the user never ended the conversation")),
            got == want,
        ));
    }
    for tool in &c.approval_before {
        let bad = unapproved_calls(tool, events);
        out.push(check(
            format!("approval asked before every {tool} call"),
            json!([]),
            json!({"unapproved_calls_at_events": bad}),
            bad.is_empty(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Effect;

    fn event(seq: u64, call: &str, request: Value, response: Value) -> Event {
        Event {
            call: call.into(),
            effect: Effect::Read,
            fuel: 0,
            hash: String::new(),
            injected: None,
            request,
            response,
            seq,
            vtime_ns: 0,
            writes: Vec::new(),
        }
    }

    #[test]
    fn approvals_count_only_when_asked_by_the_agent_and_granted() {
        let tool = |seq| {
            event(
                seq,
                "worldline:agent/tools.call",
                json!({"name": "refund"}),
                json!({}),
            )
        };
        let ask = |seq, ok: bool, by_host: bool| {
            let mut req = json!({"kind": "refund", "details": {}});
            if by_host {
                req["by"] = json!("host");
            }
            let resp = if ok {
                json!({"approved": true})
            } else {
                json!({"denied": "no"})
            };
            event(seq, APPROVAL, req, resp)
        };
        let events = vec![
            ask(0, true, false),
            tool(1),
            tool(2),
            ask(3, false, false),
            tool(4),
            ask(5, true, true),
            tool(6),
        ];
        assert_eq!(unapproved_calls("refund", &events), vec![2, 4, 6]);
    }
}
