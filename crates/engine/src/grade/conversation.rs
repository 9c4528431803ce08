//! Grading the conversation (`[expect.conversation]`) from the recorded
//! user turns and approvals: what the agent said, how many turns it took,
//! whether it asked approval before the tool calls that need it, and how
//! the user left.

use super::{Assertion, check};
use serde_json::json;
use worldline_case::case::expect_conversation::{ConversationCheck, SaidCheck};
use worldline_case::world::glob_match;
use worldline_log::log::call::Ending;
use worldline_log::log::{Call, Event};

/// The agent's messages to the user, in order.
fn messages(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e.typed() {
            Call::UserSay { request, .. } => Some(request.message),
            _ => None,
        })
        .collect()
}

fn said_check(s: &SaidCheck, messages: &[String]) -> Assertion {
    let looked_at: Vec<&str> = if s.last {
        messages.last().map(String::as_str).into_iter().collect()
    } else {
        messages.iter().map(String::as_str).collect()
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

/// The assertions of `said` checks over the agent's messages in `events`.
pub(super) fn checks_said(checks: &[SaidCheck], events: &[Event]) -> Vec<Assertion> {
    let said = messages(events);
    checks.iter().map(|s| said_check(s, &said)).collect()
}

/// How the user left, once a turn ended the conversation.
fn ending(events: &[Event]) -> Option<Ending> {
    events.iter().find_map(|e| match e.typed() {
        Call::UserSay { response, .. } => response.ended,
        _ => None,
    })
}

/// Calls of `tool` not preceded by an approval the agent asked for and
/// got since the tool's previous call: their event numbers.
fn unapproved_calls(tool: &str, events: &[Event]) -> Vec<u64> {
    let mut approved = false;
    let mut out = Vec::new();
    for e in events {
        match e.typed() {
            Call::ApprovalRequest { request, response } if request.by.is_none() => {
                approved = response.approved == Some(true);
            }
            Call::ToolsCall { request, .. } if glob_match(tool, &request.name) => {
                if !approved {
                    out.push(e.seq);
                }
                approved = false;
            }
            _ => {}
        }
    }
    out
}

/// The assertions of `[expect.conversation]`.
pub(crate) fn checks(c: &ConversationCheck, events: &[Event]) -> Vec<Assertion> {
    let said = messages(events);
    let mut out = checks_said(&c.said, events);
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
        let got = ended.as_ref().is_some_and(Ending::satisfied);
        // Said as it is expected: a check that the user did not leave
        // satisfied read "ok user ended satisfied" when it passed.
        let what = match want {
            true => "user ended satisfied",
            false => "user did not end satisfied",
        };
        out.push(check(
            what.into(),
            json!(want),
            ended.map_or(json!("the user never ended the conversation"), |e| json!(e)),
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
    use serde_json::Value;
    use worldline_log::log::Effect;
    use worldline_runtime::mediate::conversation::APPROVAL;

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
                worldline_log::log::Kind::ToolsCall.name(),
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

    #[test]
    fn a_check_that_the_user_left_unsatisfied_says_so() {
        let check = |satisfied| ConversationCheck {
            max_turns: None,
            satisfied: Some(satisfied),
            approval_before: Vec::new(),
            said: Vec::new(),
        };
        let [unsatisfied] = &checks(&check(false), &[])[..] else {
            panic!("one check")
        };
        assert!(unsatisfied.passed);
        assert_eq!(unsatisfied.what, "user did not end satisfied");
        assert_eq!(checks(&check(true), &[])[0].what, "user ended satisfied");
    }
}
