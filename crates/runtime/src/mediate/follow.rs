//! Following a recorded run: strict replay, and the replayed prefix of a
//! fork. While the mediator follows the log, each guest call must equal the
//! recorded call (name and canonical request); the services still answer,
//! so their state (clock, random streams, model script, injection counters,
//! world) moves exactly as in the recording, and the answer must equal the
//! recorded one. The first difference stops the guest and is kept as the
//! run's divergence.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use worldline_log::log::{Event, ForkPoint, Held, Status};

/// How a replay departed from its recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The guest made a different call, or the answer or its record differ.
    Mismatch,
    /// The guest stopped before making a recorded call.
    Missing,
    /// The guest made a call the recording does not have.
    Extra,
}

impl Class {
    /// The kind as documented and as `--json` writes it (`mismatch`,
    /// `missing`, `extra`).
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Mismatch => "mismatch",
            Class::Missing => "missing",
            Class::Extra => "extra",
        }
    }
}

/// The first divergence: where, what kind, expected vs actual.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    pub index: u64,
    pub class: Class,
    /// For a mismatch of an otherwise matching call: the field that differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub expected: Value,
    pub actual: Value,
}

/// A recorded run to follow.
pub struct Following {
    /// The recording, its model requests held compact (decision 0347).
    pub events: Held,
    /// Whether the recording has a footer (else it ends where it was killed).
    pub complete: bool,
    /// Events with `seq` below this are followed; from here the run is live.
    pub follow_until: u64,
    /// Edits applied when the call with their `event` arrives.
    pub fork_points: Vec<ForkPoint>,
    pub divergence: Option<Divergence>,
    /// Set when the guest was stopped at the end of an incomplete recording.
    pub reached_end: bool,
    /// The recording has the `wasi:http` plumbing calls as events of their
    /// own (made before they were folded into the call events, decision
    /// 0276): following it records them again.
    pub http_plumbing: bool,
    /// The agent is another build than the recording's (`fork --agent`):
    /// its fuel is its own, so a followed event's fuel is not compared.
    pub other_agent: bool,
    /// How the recording ended (its footer's status), when a replay
    /// follows it to its end: a stop whose status a later rule changed
    /// ends as it was recorded (decision 0417).
    pub ended: Option<Status>,
    /// The rules the recording ran under (its header's, decision 0423):
    /// the run that follows it runs under them, its live part too.
    pub rules: u32,
}

/// Whether `events` record `wasi:http` plumbing calls (every request made
/// before the fold recorded at least its `outgoing-request.new`).
fn has_http_plumbing(events: &Held) -> bool {
    (0..events.len() as u64)
        .filter_map(|seq| events.get(seq))
        .any(|e| e.call.starts_with("wasi:http/types."))
}

impl Following {
    /// Follow every event of a recording made under `rules` (strict
    /// replay).
    pub fn replay(events: Held, rules: u32, complete: bool, fork_points: Vec<ForkPoint>) -> Self {
        Following {
            rules,
            http_plumbing: has_http_plumbing(&events),
            events,
            complete,
            follow_until: u64::MAX,
            fork_points,
            divergence: None,
            reached_end: false,
            other_agent: false,
            ended: None,
        }
    }

    /// Follow events before `at` (re-applying earlier fork points), apply
    /// the last fork point's edits at `at`, then run live, under the
    /// recording's `rules`.
    pub fn fork(events: Held, rules: u32, at: u64, fork_points: Vec<ForkPoint>) -> Self {
        Following {
            rules,
            http_plumbing: has_http_plumbing(&events),
            events,
            complete: true,
            follow_until: at,
            fork_points,
            divergence: None,
            reached_end: false,
            other_agent: false,
            ended: None,
        }
    }

    pub fn call_of(call: &str, request: &Value) -> Value {
        json!({"call": call, "request": request})
    }

    pub fn diverge(&mut self, d: Divergence) {
        if self.divergence.is_none() {
            self.divergence = Some(d);
        }
    }

    /// After the guest stopped: recorded events it never reached are a
    /// `missing` divergence (not while forking, nor at the end of an
    /// incomplete recording).
    pub fn finish(&mut self, made: u64) {
        if self.divergence.is_none()
            && !self.reached_end
            && self.follow_until == u64::MAX
            && let Some(call) = self.events.get(made).map(|next| next.call.clone())
            && let Some(request) = self.events.request(made)
        {
            let expected = Following::call_of(&call, &request);
            self.diverge(Divergence {
                index: made,
                class: Class::Missing,
                field: None,
                expected,
                actual: Value::Null,
            });
        }
    }
}

/// The first field two events differ in (the hash aside, and the fuel
/// unless `fuel`). Fields are compared as JSON, as they are recorded; the
/// typed comparison first is only a shortcut, so nothing is cloned or
/// converted while events match.
pub fn first_difference(
    expected: &Event,
    actual: &Event,
    fuel: bool,
) -> Option<(&'static str, Value, Value)> {
    fn differs<T: PartialEq + Serialize>(
        field: &'static str,
        expected: &T,
        actual: &T,
    ) -> Option<(&'static str, Value, Value)> {
        if expected == actual {
            return None;
        }
        let (expected, actual) = (json!(expected), json!(actual));
        (expected != actual).then_some((field, expected, actual))
    }
    let (e, a) = (expected, actual);
    differs("response", &e.response, &a.response)
        .or_else(|| differs("effect", &e.effect, &a.effect))
        .or_else(|| differs("writes", &e.writes, &a.writes))
        .or_else(|| differs("injected", &e.injected, &a.injected))
        .or_else(|| differs("vtime_ns", &e.vtime_ns, &a.vtime_ns))
        .or_else(|| fuel.then(|| differs("fuel", &e.fuel, &a.fuel)).flatten())
        .or_else(|| differs("seq", &e.seq, &a.seq))
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::world::state::Write;
    use worldline_log::log::Effect;

    fn event() -> Event {
        Event {
            call: worldline_log::log::Kind::ToolsCall.name().into(),
            effect: Effect::Write,
            fuel: 10,
            hash: String::new(),
            injected: None,
            request: json!({"name": "close", "args": {"id": "T-1"}}),
            response: json!({"ok": {"id": "T-1"}}),
            seq: 3,
            vtime_ns: 1_000,
            writes: vec![Write::Put {
                table: "tickets".into(),
                key: "T-1".into(),
                row: json!({"id": "T-1", "status": "closed"}),
            }],
        }
    }

    #[test]
    fn the_first_differing_field_is_named_with_both_values() {
        let recorded = event();
        assert_eq!(first_difference(&recorded, &event(), true), None);
        // The hash is not compared.
        let mut e = event();
        e.hash = "ab".into();
        assert_eq!(first_difference(&recorded, &e, true), None);

        let mut e = event();
        e.response = json!({"ok": {"id": "T-2"}});
        e.fuel = 11;
        assert_eq!(
            first_difference(&recorded, &e, true),
            Some(("response", recorded.response.clone(), e.response.clone()))
        );
        let mut e = event();
        e.writes.clear();
        assert_eq!(
            first_difference(&recorded, &e, true),
            Some(("writes", json!(recorded.writes), json!([])))
        );
        let mut e = event();
        e.fuel = 11;
        assert_eq!(
            first_difference(&recorded, &e, true),
            Some(("fuel", json!(10), json!(11)))
        );
        // Another build's fuel is its own.
        assert_eq!(first_difference(&recorded, &e, false), None);
    }

    #[test]
    fn fields_are_compared_as_recorded_json() {
        // `Some(null)` is written as `null`, which reads back as `None`.
        let mut e = event();
        e.injected = Some(Value::Null);
        assert_eq!(first_difference(&event(), &e, true), None);
        let mut e = event();
        e.injected = Some(json!({"rule": 0}));
        assert_eq!(
            first_difference(&event(), &e, true),
            Some(("injected", Value::Null, json!({"rule": 0})))
        );
    }
}
