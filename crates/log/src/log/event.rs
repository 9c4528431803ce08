//! One event: one mediated host call, in the order the guest made it.

use super::call::Call;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use worldline_case::world::state::Write;

/// What a call did to the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Answered without changing anything.
    Read,
    /// Changed the world (the writes are in the event).
    Write,
    /// Refused by a permission or a sandbox rule; nothing changed.
    Denied,
    /// Answered with an error; nothing changed unless the event lists writes
    /// (a partial write).
    Failed,
    /// An agent-side trace note.
    Note,
}

/// One recorded host call. Fields are declared in alphabetical order so the
/// serialized form is canonical JSON (sorted keys) without a detour through
/// `serde_json::Value`; a unit test holds that.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// `interface.function`, e.g. `worldline:agent/tools.call` or
    /// `wasi:clocks/wall-clock.now`: a [`super::Kind`]'s name, or a WASI
    /// call's. [`Event::typed`] reads it with the request and response.
    pub call: String,
    pub effect: Effect,
    /// Fuel the guest had used when it made the call.
    pub fuel: u64,
    /// Chained hash: SHA-256 of the previous event's hash and this event's
    /// canonical text without `hash`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hash: String,
    /// Set when an injection rule (or a fuzz choice) shaped the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injected: Option<Value>,
    /// The canonical request.
    pub request: Value,
    pub response: Value,
    pub seq: u64,
    /// Virtual time when the call returned, in nanoseconds since the run's
    /// start.
    pub vtime_ns: u64,
    /// World-state writes the call made, in order.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "sorted_keys"
    )]
    pub writes: Vec<Write>,
}

impl Event {
    /// The call, request and response as the log's typed vocabulary.
    pub fn typed(&self) -> Call {
        Call::read(&self.call, &self.request, &self.response)
    }

    /// What shaped the answer, when something did (`injected`).
    pub fn mark(&self) -> Option<Mark<'_>> {
        let raw = self.injected.as_ref()?;
        let action = raw.get("action");
        let by = match (raw.get("fuzz"), raw.get("rule").and_then(Value::as_u64)) {
            (Some(fault), _) => By::Fuzz(fault),
            (None, Some(i)) => By::Rule(i),
            _ if action.and_then(Value::as_str) == Some(FORK_RESPOND) => By::Fork,
            _ => By::Other,
        };
        Some(Mark { by, action, raw })
    }
}

/// The `action` of a fork's `--respond` mark.
pub const FORK_RESPOND: &str = "fork-respond";

/// An injected answer's mark, read: `{"rule": i, "action": ...}` for a
/// case rule, `{"fuzz": {tool, nth, action, latency_ms?}, "action": ...}`
/// for a fuzz fault, `{"action": "fork-respond"}` for a fork's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark<'a> {
    pub by: By<'a>,
    pub action: Option<&'a Value>,
    /// The mark as recorded.
    pub raw: &'a Value,
}

/// Who shaped an injected answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum By<'a> {
    /// The case's `[[inject]]` rule with this index.
    Rule(u64),
    /// A fuzz fault, as planned.
    Fuzz(&'a Value),
    /// A fork's `--respond`.
    Fork,
    /// A mark this host does not know.
    Other,
}

/// Writes are an internally tagged enum, whose tag serde puts first; going
/// through `Value` sorts their keys like everything else in an event.
fn sorted_keys<S: serde::Serializer>(writes: &[Write], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::Error as _;
    serde_json::to_value(writes)
        .map_err(S::Error::custom)?
        .serialize(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialized_events_are_canonical() {
        let e = Event {
            call: crate::log::Kind::ToolsCall.name().into(),
            effect: Effect::Write,
            fuel: 10,
            hash: "ab".into(),
            injected: Some(json!({"rule": 0})),
            request: json!({"name": "x", "args": {"b": 1, "a": 2}}),
            response: json!({"ok": true}),
            seq: 3,
            vtime_ns: 1000,
            writes: vec![Write::Delete {
                table: "t".into(),
                key: "k".into(),
            }],
        };
        let direct = serde_json::to_string(&e).unwrap();
        let via_value = worldline_case::canon::to_string(&serde_json::to_value(&e).unwrap());
        assert_eq!(direct, via_value);
    }
}
