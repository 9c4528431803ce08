//! `[[expect.turn]]`: the run judged as it stood when one of the user's
//! turns ended. The task's message opens turn 1; turn N ends when the
//! agent sends the user its N-th message (`user.say`), and the turn after
//! its last message ends with the run, unless the user ended the
//! conversation on that message. A turn's state is the initial state with
//! the writes of every event before its end; its calls and messages are
//! those from the run's start to its end (or, with `this_turn_only`, from
//! the previous turn's end). The grade's `turns` is the
//! world's change turn by turn (the state diff with its turn boundaries).

use super::diff::{self, StateDiff};
use super::{Assertion, Evidence, calls_check, check, state_checks::state_check};
use serde::Serialize;
use serde_json::json;
use worldline_case::case::expect::TurnCheck;
use worldline_case::world::compare::Equality;
use worldline_case::world::state::State;
use worldline_log::log::{Call, Event, Kind, rules};

/// One turn's change to the world.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnDiff {
    pub turn: u32,
    /// The event of the agent's message that ended it (none: the run's end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    pub diff: StateDiff,
}

/// Where each turn of a run ended: the index into the events of the
/// agent's message that ended it, or the number of events for the turn
/// the run ended in.
fn ends(events: &[Event]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if let Call::UserSay { response, .. } = e.typed() {
            out.push(i);
            if response.ended.is_some() {
                return out;
            }
        }
    }
    out.push(events.len());
    out
}

/// Where the user's answer to the agent's message at `end` starts: its own
/// tool calls, made in answer to that message, are recorded before the
/// message's event, and belong to the next turn (decision 0376), not to
/// the turn the message ends.
fn answer_starts(events: &[Event], end: usize) -> usize {
    let mut at = end.min(events.len());
    while at > 0 && Kind::of(&events[at - 1].call) == Some(Kind::UserToolsCall) {
        at -= 1;
    }
    at
}

/// The state at each turn's end (empty when the case checks no turn).
pub(crate) struct States<'a> {
    events: &'a [Event],
    initial: &'a State,
    /// Per turn, from turn 1: where it ended and the state then.
    turns: Vec<(usize, State)>,
}

impl<'a> States<'a> {
    pub(crate) fn of(ev: &Evidence<'a>, checks: &[TurnCheck]) -> States<'a> {
        let mut turns = Vec::new();
        if !checks.is_empty() {
            let answers_later = ev.rules >= rules::USER_ANSWERS_BELONG_TO_THE_NEXT_TURN;
            let mut state = ev.initial.clone();
            let mut from = 0;
            for end in ends(ev.events) {
                let cut = match answers_later {
                    true => answer_starts(ev.events, end),
                    false => end,
                };
                for e in &ev.events[from..cut] {
                    for w in &e.writes {
                        state.apply(w);
                    }
                }
                from = cut;
                turns.push((end, state.clone()));
            }
        }
        States {
            events: ev.events,
            initial: ev.initial,
            turns,
        }
    }

    /// The world's change turn by turn.
    pub(crate) fn diffs(&self, eq: Equality) -> Vec<TurnDiff> {
        let mut before = self.initial;
        let mut out = Vec::new();
        for (n, (end, state)) in (1..).zip(&self.turns) {
            out.push(TurnDiff {
                turn: n,
                ended_at: self.events.get(*end).map(|e| e.seq),
                diff: diff::diff_with(before, state, eq),
            });
            before = state;
        }
        out
    }
}

/// The assertions of one `[[expect.turn]]`, each with its weight; every
/// one fails when the run never reached the turn's end.
pub(crate) fn checks(
    t: &TurnCheck,
    ev: &Evidence,
    states: &States,
    eq: Equality,
) -> Vec<(Assertion, Option<f64>)> {
    let name = |what: &str| format!("turn {}: {what}", t.turn);
    let reached = usize::try_from(t.turn)
        .ok()
        .and_then(|n| states.turns.get(n.wrapping_sub(1)));
    let Some((end, state)) = reached else {
        let never = json!(format!(
            "the run ended in turn {} of the user's",
            states.turns.len()
        ));
        let missed = |what: String, weight| {
            let a = check(
                name(&what),
                json!(format!("turn {}", t.turn)),
                never.clone(),
                false,
            );
            (a, weight)
        };
        let state = t.state.iter().map(|c| missed(state_what(c), c.weight));
        let calls = t
            .calls
            .iter()
            .map(|c| missed(format!("calls {}", c.tool), c.weight));
        let said = t.said.iter().map(|s| missed(s.describe(), None));
        return state.chain(calls).chain(said).collect();
    };
    // The agent's message that ended the turn belongs to it, and the one
    // that ended the turn before does not.
    let from = match t.turn {
        n if t.this_turn_only && n > 1 => states.turns[n as usize - 2].0 + 1,
        _ => 0,
    };
    let upto = &ev.events[from.min(*end)..(*end + 1).min(ev.events.len())];
    let mut out = Vec::new();
    for c in &t.state {
        let mut a = state_check(c, state, (eq, ev.rules));
        a.what = name(&a.what);
        out.push((a, c.weight));
    }
    for c in &t.calls {
        let mut a = calls_check(c, upto, (eq, ev.rules));
        a.what = name(&a.what);
        out.push((a, c.weight));
    }
    let mut said = super::conversation::checks_said(&t.said, upto);
    for a in &mut said {
        a.what = name(&a.what);
    }
    out.extend(said.into_iter().map(|a| (a, None)));
    out
}

/// What a state check names, for a turn never reached.
fn state_what(c: &worldline_case::case::expect::StateCheck) -> String {
    let place = match (&c.table, &c.key, &c.file) {
        (Some(t), Some(k), _) => format!("{t}/{}", k.as_str().map_or(k.to_string(), String::from)),
        (Some(t), None, _) => t.clone(),
        (None, _, Some(f)) => f.clone(),
        _ => String::new(),
    };
    match &c.field {
        Some(f) => format!("{place}.{f}"),
        None => place,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use worldline_case::case::expect::Expect;
    use worldline_case::world::state::{Table, Write};
    use worldline_log::log::{Effect, Kind, Status, rules};

    fn event(seq: u64, kind: Kind, request: Value, response: Value) -> Event {
        Event {
            call: kind.name().into(),
            effect: Effect::Write,
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

    /// A tool call that sets row `a`'s `n`, answering `n`.
    fn set(seq: u64, n: u64) -> Event {
        let mut e = event(
            seq,
            Kind::ToolsCall,
            json!({"name": "set", "args": {"n": n}}),
            json!({"ok": n}),
        );
        e.writes.push(Write::Put {
            table: "t".into(),
            key: "a".into(),
            row: json!({"id": "a", "n": n}),
        });
        e
    }

    fn say(seq: u64, message: &str, reply: Option<&str>) -> Event {
        let response = match reply {
            Some(r) => json!({"reply": r}),
            None => json!({"ended": {"reason": "done", "satisfied": true}}),
        };
        event(seq, Kind::UserSay, json!({"message": message}), response)
    }

    fn grade(events: &[Event], expect: &str) -> Vec<(String, bool)> {
        let mut initial = State::default();
        initial.tables.insert(
            "t".into(),
            Table {
                key: "id".into(),
                rows: [("a".to_string(), json!({"id": "a", "n": 0}))]
                    .into_iter()
                    .collect(),
                ids: Default::default(),
            },
        );
        let final_state = super::super::final_state(&initial, events);
        let expect: Expect = toml::from_str(expect).unwrap();
        let ev = Evidence {
            status: Status::Completed,
            output: None,
            events,
            initial: &initial,
            final_state: &final_state,
            gold: None,
            rules: rules::CURRENT,
        };
        let g = super::super::grade(&expect, &ev);
        g.assertions
            .into_iter()
            .skip(1)
            .map(|a| (a.what, a.passed))
            .collect()
    }

    const TURNS: &str = r#"
[[turn]]
turn = 1
state = [{ table = "t", key = "a", field = "n", equals = 1 }]
calls = [{ tool = "set", result = 1, count = 1 }, { tool = "set", count = 1 }]
said = [{ contains = "one", last = true }]

[[turn]]
turn = 2
state = [{ table = "t", key = "a", field = "n", equals = 2 }]
calls = [{ tool = "set", result = 1, count = 1 }, { tool = "set", count = 2 }]
said = [{ contains = "two", last = true }]
"#;

    #[test]
    fn each_turn_is_judged_as_it_stood_when_the_agent_answered_it() {
        // Turn 1: set 1, say "one"; turn 2: set 2, say "two" (the user ends).
        let right = [
            set(0, 1),
            say(1, "one done", Some("now two")),
            set(2, 2),
            say(3, "two done", None),
        ];
        let got = grade(&right, TURNS);
        assert!(got.iter().all(|(_, ok)| *ok), "{got:?}");
        assert_eq!(got[0].0, "turn 1: t/a.n equals");
        assert_eq!(got[1].0, "turn 1: calls set answering 1 count");
        // Both writes in turn 1: the final state is the same, turn 1's is not.
        let early = [
            set(0, 1),
            set(1, 2),
            say(2, "one done", Some("now two")),
            say(3, "two done", None),
        ];
        let failed: Vec<String> = grade(&early, TURNS)
            .into_iter()
            .filter(|(_, ok)| !ok)
            .map(|(w, _)| w)
            .collect();
        assert_eq!(failed, ["turn 1: t/a.n equals", "turn 1: calls set count"]);
        // Turn 2 ends at the run's end when the agent says nothing more.
        let quiet = [set(0, 1), say(1, "one done", Some("now two")), set(2, 2)];
        let failed: Vec<String> = grade(&quiet, TURNS)
            .into_iter()
            .filter(|(_, ok)| !ok)
            .map(|(w, _)| w)
            .collect();
        assert_eq!(failed, ["turn 2: agent last message contains \"two\""]);
    }

    #[test]
    fn this_turn_only_counts_the_turns_own_calls() {
        let only = r#"
[[turn]]
turn = 2
this_turn_only = true
calls = [{ tool = "set", count = 1 }, { tool = "set", result = 1, count = 0 }]
said = [{ contains = "one done", absent = true }]
"#;
        let events = [
            set(0, 1),
            say(1, "one done", Some("now two")),
            set(2, 2),
            say(3, "two done", None),
        ];
        let got = grade(&events, only);
        assert!(got.iter().all(|(_, ok)| *ok), "{got:?}");
        // Cumulative, the same checks see turn 1's call and message.
        let got = grade(&events, &only.replace("this_turn_only = true", ""));
        assert_eq!(got.iter().filter(|(_, ok)| !ok).count(), 3, "{got:?}");
    }

    #[test]
    fn a_turn_never_reached_fails_every_check_and_the_diff_is_cut_at_turns() {
        // The user ends the conversation on the agent's first message.
        let ended = [set(0, 1), say(1, "one done", None), set(2, 2)];
        let got = grade(&ended, TURNS);
        let turn2: Vec<bool> = got
            .iter()
            .filter(|(w, _)| w.starts_with("turn 2:"))
            .map(|(_, ok)| *ok)
            .collect();
        assert_eq!(turn2, [false; 4]);
        let mut initial = State::default();
        initial.tables.insert("t".into(), Table::default());
        let final_state = super::super::final_state(&initial, &ended);
        let ev = Evidence {
            status: Status::Completed,
            output: None,
            events: &ended,
            initial: &initial,
            final_state: &final_state,
            gold: None,
            rules: rules::CURRENT,
        };
        let expect: Expect = toml::from_str(TURNS).unwrap();
        let diffs = States::of(&ev, &expect.turn).diffs(Equality::default());
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].ended_at, Some(1));
        assert_eq!(diffs[0].diff.lines(), ["+ t/a {\"id\":\"a\",\"n\":1}"]);
        // No turn checks: no turn diffs (old grades print as before).
        assert!(States::of(&ev, &[]).diffs(Equality::default()).is_empty());
    }
}
