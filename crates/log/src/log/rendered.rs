//! The body an `openai` model call sent its endpoint (decision 0430):
//! from rules 11 a `model.complete` event records it as what the provider
//! changed in the agent's request (`model_call.rendered_changes`: the
//! keys it set and those it removed), since the event's request already
//! holds the conversation; under earlier rules, and for a call recorded
//! elsewhere (a judge's, a simulated user's), whole (`model_call.rendered`).
//! A reader that shows one event whole (`show --at`, the UI's event
//! page) puts `rendered` back ([`put_back`]); the bundle, the events a
//! follower and every other reader hold, keep the changes as recorded
//! (their lines are hashed so), so a run of N calls records O(N) bytes.

use super::event::Event;
use serde_json::{Map, Value};

/// The whole body, as recorded before rules 11.
const RENDERED: &str = "rendered";
/// What the body changed in the request, from rules 11.
const CHANGES: &str = "rendered_changes";

/// What `rendered` changes in `request` (the agent's chat request):
/// `{"set": {key: value}, "removed": [key]}`, `removed` left out when
/// empty. `None` when either is no object: record the body whole.
pub fn changes(request: &Value, rendered: &Value) -> Option<Value> {
    let (request, body) = (request.as_object()?, rendered.as_object()?);
    let set: Map<String, Value> = (body.iter())
        .filter(|(k, v)| request.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let removed: Vec<Value> = (request.keys())
        .filter(|k| !body.contains_key(*k))
        .map(|k| Value::String(k.clone()))
        .collect();
    let mut out = Map::new();
    out.insert("set".into(), Value::Object(set));
    if !removed.is_empty() {
        out.insert("removed".into(), Value::Array(removed));
    }
    Some(Value::Object(out))
}

/// The body `changes` describes: `request` with its keys removed and set.
fn apply(request: &Value, changes: &Value) -> Option<Value> {
    let mut body = request.as_object()?.clone();
    for key in changes
        .get("removed")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        body.remove(key.as_str()?);
    }
    for (key, value) in changes.get("set")?.as_object()? {
        body.insert(key.clone(), value.clone());
    }
    Some(Value::Object(body))
}

/// Whether `event` records its body as changes (it needs [`put_back`]).
pub(super) fn is_changes(event: &Event) -> bool {
    event
        .response
        .get("model_call")
        .is_some_and(|m| m.get(CHANGES).is_some())
}

/// Put `model_call.rendered` back whole in `event` (its request whole)
/// when it records `rendered_changes`: the event as a run before rules 11
/// recorded it. An event that does not is left as it is.
pub fn put_back(event: &mut Event) {
    if !is_changes(event) {
        return;
    }
    let Some(request) = event.request.get("request") else {
        return;
    };
    let call = &event.response["model_call"];
    let Some(body) = apply(request, &call[CHANGES]) else {
        return;
    };
    if let Some(call) = event
        .response
        .get_mut("model_call")
        .and_then(Value::as_object_mut)
    {
        call.remove(CHANGES);
        call.insert(RENDERED.into(), body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Effect, Kind};
    use serde_json::json;

    #[test]
    fn changes_put_back_are_the_body_sent() {
        let request = json!({"messages": [{"role": "user", "content": "hi"}], "stream": true, "model": "a", "n": 1});
        let rendered = json!({"messages": [{"role": "user", "content": "hi"}], "model": "b", "n": 1, "logprobs": true});
        let recorded = changes(&request, &rendered).unwrap();
        assert_eq!(
            recorded,
            json!({"set": {"model": "b", "logprobs": true}, "removed": ["stream"]})
        );
        let mut event = Event {
            call: Kind::ModelComplete.name().into(),
            effect: Effect::Read,
            fuel: 1,
            hash: String::new(),
            injected: None,
            request: json!({"provider": "openai", "request": request}),
            response: json!({"ok": {}, "model_call": {"provider": "openai", "rendered_changes": recorded}}),
            seq: 0,
            vtime_ns: 1,
            writes: vec![],
        };
        put_back(&mut event);
        assert_eq!(
            event.response["model_call"],
            json!({"provider": "openai", "rendered": rendered})
        );
        let before = event.clone();
        put_back(&mut event);
        assert_eq!(event, before, "a whole body is left as it is");
        assert_eq!(changes(&json!("text"), &rendered), None);
    }
}
