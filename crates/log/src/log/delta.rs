//! Model requests recorded in O(N): a `model.complete` event whose chat
//! request extends an earlier one's is written as a reference to that
//! event (`extends`), the messages it appended and the fields that
//! changed; reading the bundle puts the whole request back. The chain
//! hashes such a line as written (marked `"chained": "line"`), which
//! covers the full canonical request by induction: the line names an
//! earlier event the chain already covers and says how to extend it
//! (decision 0345), so recording and reading cost the delta, not the
//! whole request. Lines written before 0345 carry no mark and were
//! hashed over the whole event ([`Chain::Whole`]). Only the bundle's
//! text is compact: events in memory always hold whole requests.

use super::event::Event;
use serde_json::{Map, Value};

/// The event-level key of a compact model request.
const EXTENDS: &str = "extends";

/// The mark of a compact line hashed as written.
const CHAINED: &str = "chained";

/// What the chain hashes for a compact model call (decision 0345).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Chain {
    /// Its line as written, `extends` marked `"chained": "line"`: the
    /// cost of the delta.
    #[default]
    Lines,
    /// The whole event, request put back (bundles written before 0345,
    /// whose compact lines carry no mark): the cost of the whole request.
    Whole,
}

/// How many recent model calls a request is compared with (a few
/// conversations interleaved: an agent and its sub-agents).
const RECENT: usize = 8;

/// The model calls seen so far, for the writer to find a base in.
#[derive(Debug, Default)]
pub(super) struct Deltas {
    /// The latest model calls' seqs, oldest first.
    recent: Vec<u64>,
}

/// The chat request of a model call (`request.request`), when it has a
/// message list.
fn chat(event: &Event) -> Option<&Map<String, Value>> {
    if event.call != super::Kind::ModelComplete.name() {
        return None;
    }
    let chat = event.request.get("request")?.as_object()?;
    chat.get("messages")?.as_array()?;
    Some(chat)
}

fn messages(chat: &Map<String, Value>) -> &[Value] {
    chat.get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

impl Deltas {
    /// Note a recorded event (after [`Deltas::compact`]).
    pub(super) fn note(&mut self, event: &Event) {
        if chat(event).is_some() {
            if self.recent.len() == RECENT {
                self.recent.remove(0);
            }
            self.recent.push(event.seq);
        }
    }

    /// The line to write for `event` (canonical JSON, with `event.hash`
    /// when it is set), when it extends one of the recent model calls in
    /// `earlier` (the events before it, by seq), marked as `chain` hashes
    /// it: `None` writes it whole.
    pub(super) fn compact(&self, event: &Event, earlier: &[Event], chain: Chain) -> Option<String> {
        let new = chat(event)?;
        let new_msgs = messages(new);
        let mut best: Option<(u64, usize, &Map<String, Value>)> = None;
        for &seq in self.recent.iter().rev() {
            let Some(base) = earlier.get(seq as usize).filter(|b| b.seq == seq) else {
                continue;
            };
            let Some(old) = chat(base) else { continue };
            let old_msgs = messages(old);
            let keep = old_msgs
                .iter()
                .zip(new_msgs)
                .take_while(|(a, b)| a == b)
                .count();
            if keep > best.map_or(0, |b| b.1) {
                best = Some((seq, keep, old));
            }
            if keep == old_msgs.len() && keep > 0 {
                break;
            }
        }
        let (base, keep, old) = best?;
        let mut rest = Map::new();
        let mut same = Vec::new();
        for (key, value) in new {
            if key == "messages" {
                rest.insert(key.clone(), Value::Array(new_msgs[keep..].to_vec()));
            } else if old.get(key) == Some(value) {
                same.push(Value::String(key.clone()));
            } else {
                rest.insert(key.clone(), value.clone());
            }
        }
        let mut request = Map::new();
        for (key, value) in event.request.as_object()? {
            match key.as_str() {
                "request" => request.insert(key.clone(), Value::Object(std::mem::take(&mut rest))),
                _ => request.insert(key.clone(), value.clone()),
            };
        }
        let mut extends = Map::new();
        extends.insert("event".into(), base.into());
        extends.insert("messages".into(), keep.into());
        if !same.is_empty() {
            extends.insert("same".into(), Value::Array(same));
        }
        if chain == Chain::Lines {
            extends.insert(CHAINED.into(), "line".into());
        }
        let line = Event {
            request: Value::Object(request),
            response: event.response.clone(),
            injected: event.injected.clone(),
            writes: event.writes.clone(),
            call: event.call.clone(),
            hash: event.hash.clone(),
            ..*event
        };
        let mut value = serde_json::to_value(&line).expect("events serialize");
        value
            .as_object_mut()
            .expect("an event is an object")
            .insert(EXTENDS.into(), Value::Object(extends));
        Some(worldline_case::canon::to_string(&value))
    }
}

/// Whether a line read as `value` is compact, and if so how the chain
/// hashed it (by its mark).
pub(super) fn chain_of(value: &Value) -> Option<Chain> {
    let extends = value.get(EXTENDS)?;
    Some(match extends.get(CHAINED) {
        Some(_) => Chain::Lines,
        None => Chain::Whole,
    })
}

/// Put back the whole request of a line read as `value` (in place), when
/// it is compact; `earlier` are the events read before it (by seq). An
/// error says what is wrong with the reference.
pub(super) fn expand(value: &mut Value, earlier: &[Event]) -> Result<(), String> {
    let Some(obj) = value.as_object_mut() else {
        return Ok(());
    };
    let Some(extends) = obj.remove(EXTENDS) else {
        return Ok(());
    };
    match extends.get(CHAINED) {
        None => {}
        Some(Value::String(s)) if s == "line" => {}
        Some(other) => return Err(format!("`extends.chained` is {other}, not \"line\"")),
    }
    let seq = extends["event"]
        .as_u64()
        .ok_or("`extends.event` is not an event number")?;
    let keep = extends["messages"]
        .as_u64()
        .ok_or("`extends.messages` is not a count")? as usize;
    let base = earlier
        .get(seq as usize)
        .and_then(chat)
        .ok_or_else(|| format!("`extends` names event {seq}, not an earlier model call"))?;
    let base_msgs = messages(base);
    if keep > base_msgs.len() {
        return Err(format!(
            "`extends` keeps {keep} messages of event {seq}, which has {}",
            base_msgs.len()
        ));
    }
    let chat = obj
        .get_mut("request")
        .and_then(|r| r.get_mut("request"))
        .and_then(Value::as_object_mut)
        .ok_or("a compact model call without `request.request`")?;
    let appended = match chat.get_mut("messages").map(Value::take) {
        Some(Value::Array(appended)) => appended,
        _ => return Err("a compact model call without `request.request.messages`".into()),
    };
    let mut all = Vec::with_capacity(keep + appended.len());
    all.extend_from_slice(&base_msgs[..keep]);
    all.extend(appended);
    chat.insert("messages".into(), Value::Array(all));
    if let Some(same) = extends.get("same") {
        for key in same.as_array().ok_or("`extends.same` is not a list")? {
            let key = key.as_str().ok_or("`extends.same` holds a non-string")?;
            let field = base
                .get(key)
                .ok_or_else(|| format!("`extends.same` names `{key}`, which event {seq} lacks"))?;
            chat.insert(key.into(), field.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Effect, Kind};
    use serde_json::json;

    fn model(seq: u64, messages: Value) -> Event {
        Event {
            call: Kind::ModelComplete.name().into(),
            effect: Effect::Read,
            fuel: 7,
            hash: String::new(),
            injected: None,
            request: json!({"provider": "scripted", "request": {"model": "m", "tools": [{"name": "t"}], "messages": messages}}),
            response: json!({"ok": {"choices": []}}),
            seq,
            vtime_ns: 1,
            writes: vec![],
        }
    }

    #[test]
    fn a_compact_line_reads_back_whole() {
        let a = model(0, json!([{"role": "user", "content": "hi"}]));
        let mut b = model(
            1,
            json!([{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]),
        );
        b.request["request"]["temperature"] = json!(0.5);
        let mut writer = Deltas::default();
        assert_eq!(writer.compact(&a, &[], Chain::Lines), None);
        writer.note(&a);
        let line = writer
            .compact(&b, std::slice::from_ref(&a), Chain::Lines)
            .unwrap();
        assert!(
            line.contains(
                "\"extends\":{\"chained\":\"line\",\"event\":0,\"messages\":1,\"same\":[\"model\",\"tools\"]}"
            ),
            "{line}"
        );
        assert!(!line.contains("hi"));
        let mut value: Value = serde_json::from_str(&line).unwrap();
        expand(&mut value, std::slice::from_ref(&a)).unwrap();
        assert_eq!(serde_json::from_value::<Event>(value).unwrap(), b);
    }

    #[test]
    fn a_reference_to_no_model_call_is_an_error() {
        let a = model(0, json!([{"role": "user", "content": "hi"}]));
        let mut value = json!({"extends": {"event": 3, "messages": 1}, "request": {}});
        let err = expand(&mut value, &[a]).unwrap_err();
        assert!(err.contains("event 3"), "{err}");
    }
}
