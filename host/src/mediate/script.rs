//! Following a recorded run: strict replay, and the replayed prefix of a
//! fork. While the mediator follows the log, each guest call must equal the
//! recorded call (name and canonical request); the services still answer,
//! so their state (clock, random streams, model script, injection counters,
//! world) moves exactly as in the recording, and the answer must equal the
//! recorded one. The first difference stops the guest and is kept as the
//! run's divergence.

use crate::log::{Event, ForkPoint};
use serde::Serialize;
use serde_json::{Value, json};

/// How a replay departed from its recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// The guest made a different call, or the answer or its record differ.
    Mismatch,
    /// The guest stopped before making a recorded call.
    Missing,
    /// The guest made a call the recording does not have.
    Extra,
}

/// The first divergence: where, what kind, expected vs actual.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
pub struct Script {
    pub events: Vec<Event>,
    /// Whether the recording has a footer (else it ends where it was killed).
    pub complete: bool,
    /// Events with `seq` below this are followed; from here the run is live.
    pub follow_until: u64,
    /// Edits applied when the call with their `event` arrives.
    pub fork_points: Vec<ForkPoint>,
    pub divergence: Option<Divergence>,
    /// Set when the guest was stopped at the end of an incomplete recording.
    pub reached_end: bool,
}

impl Script {
    /// Follow every event of a recording (strict replay).
    pub fn replay(events: Vec<Event>, complete: bool, fork_points: Vec<ForkPoint>) -> Self {
        Script {
            events,
            complete,
            follow_until: u64::MAX,
            fork_points,
            divergence: None,
            reached_end: false,
        }
    }

    /// Follow events before `at` (re-applying earlier fork points), apply
    /// the last fork point's edits at `at`, then run live.
    pub fn fork(events: Vec<Event>, at: u64, fork_points: Vec<ForkPoint>) -> Self {
        Script {
            events,
            complete: true,
            follow_until: at,
            fork_points,
            divergence: None,
            reached_end: false,
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
        if self.divergence.is_none() && !self.reached_end && self.follow_until == u64::MAX {
            if let Some(next) = self.events.get(made as usize) {
                self.diverge(Divergence {
                    index: made,
                    class: Class::Missing,
                    field: None,
                    expected: Script::call_of(&next.call, &next.request),
                    actual: Value::Null,
                });
            }
        }
    }
}

/// The first field two events differ in (the hash aside).
pub fn first_difference(expected: &Event, actual: &Event) -> Option<(&'static str, Value, Value)> {
    let pairs: [(&'static str, Value, Value); 7] = [
        (
            "response",
            expected.response.clone(),
            actual.response.clone(),
        ),
        ("effect", json!(expected.effect), json!(actual.effect)),
        ("writes", json!(expected.writes), json!(actual.writes)),
        ("injected", json!(expected.injected), json!(actual.injected)),
        ("vtime_ns", json!(expected.vtime_ns), json!(actual.vtime_ns)),
        ("fuel", json!(expected.fuel), json!(actual.fuel)),
        ("seq", json!(expected.seq), json!(actual.seq)),
    ];
    pairs.into_iter().find(|(_, a, b)| a != b)
}
