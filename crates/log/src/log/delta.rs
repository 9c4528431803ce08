//! Model requests recorded in O(N): a `model.complete` event whose chat
//! request extends an earlier one's is written as a reference to that
//! event (`extends`), the messages it appended and the fields that
//! changed; reading the bundle puts the whole request back. The chain
//! hashes such a line as written (marked `"chained": "line"`), which
//! covers the full canonical request by induction: the line names an
//! earlier event the chain already covers and says how to extend it
//! (decision 0345), so recording and reading cost the delta, not the
//! whole request. Lines written before 0345 carry no mark and were
//! hashed over the whole event ([`Chain::Whole`]). A bundle read holds
//! whole requests; a follower (replay, fork) holds the recording compact
//! the same way ([`Held`], decision 0347) and puts back one request at a
//! time.

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

    /// The recent model call in `earlier` (by seq) whose messages share
    /// the longest prefix with `new_msgs` (ties: the latest): its seq, how
    /// many it shares, and its chat request.
    fn base<'e>(
        &self,
        new_msgs: &[Value],
        earlier: &'e [Event],
    ) -> Option<(u64, usize, &'e Map<String, Value>)> {
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
        best
    }

    /// The line to write for `event` (canonical JSON, with `event.hash`
    /// when it is set), when it extends one of the recent model calls in
    /// `earlier` (the events before it, by seq), marked as `chain` hashes
    /// it: `None` writes it whole.
    pub(super) fn compact(&self, event: &Event, earlier: &[Event], chain: Chain) -> Option<String> {
        let new = chat(event)?;
        let new_msgs = messages(new);
        let (base, keep, old) = self.base(new_msgs, earlier)?;
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

/// How a held model call extends an earlier one (its line's `extends`).
#[derive(Debug)]
struct Extends {
    base: u64,
    keep: usize,
    same: Vec<String>,
}

/// Recorded events held compact for a follower (decision 0347): a model
/// call that extends one of the recent model calls before it keeps only
/// the messages it appended and the fields that changed, as its line
/// does, and [`Held::request`] puts one request back whole when it is
/// compared or reported, from the latest whole requests it put back
/// (those the next call extends, when followed in order). Memory: the
/// recording's compact size and a few requests, not the conversation once
/// per model call.
#[derive(Debug, Default)]
pub struct Held {
    events: Vec<Event>,
    extends: Vec<Option<Extends>>,
    /// The latest chat requests put back whole, by seq, oldest first.
    whole: Vec<(u64, Map<String, Value>)>,
}

impl Held {
    /// Hold `events` (whole, in seq order) compact.
    pub fn of(events: &[Event]) -> Self {
        let mut deltas = Deltas::default();
        let mut held = Held::default();
        for (i, e) in events.iter().enumerate() {
            let compact = split(e, &events[..i], &deltas);
            deltas.note(e);
            let (event, extends) = match compact {
                Some((request, extends)) => (
                    Event {
                        request,
                        response: e.response.clone(),
                        injected: e.injected.clone(),
                        writes: e.writes.clone(),
                        call: e.call.clone(),
                        hash: e.hash.clone(),
                        ..*e
                    },
                    Some(extends),
                ),
                None => (e.clone(), None),
            };
            held.events.push(event);
            held.extends.push(extends);
        }
        held
    }

    /// [`Held::of`], compacting `events` in place: from the last to the
    /// first, so each one's bases are still whole when it is compacted
    /// and the whole requests are freed as it goes.
    pub fn from_whole(mut events: Vec<Event>) -> Self {
        let model: Vec<u64> = events
            .iter()
            .filter(|e| chat(e).is_some())
            .map(|e| e.seq)
            .collect();
        let mut extends = Vec::with_capacity(events.len());
        for i in (0..events.len()).rev() {
            let before = model.partition_point(|&s| s < i as u64);
            let deltas = Deltas {
                recent: model[before.saturating_sub(RECENT)..before].to_vec(),
            };
            let (earlier, rest) = events.split_at_mut(i);
            let e = &mut rest[0];
            match split(e, earlier, &deltas) {
                Some((request, x)) => {
                    e.request = request;
                    extends.push(Some(x));
                }
                None => extends.push(None),
            }
        }
        extends.reverse();
        Held {
            events,
            extends,
            whole: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Event `seq` as held: everything as recorded but a compact model
    /// call's request (compare that with [`Held::request`]).
    pub fn get(&self, seq: u64) -> Option<&Event> {
        self.events.get(usize::try_from(seq).ok()?)
    }

    /// Event `seq`'s whole request, as recorded.
    pub fn request(&mut self, seq: u64) -> Option<std::borrow::Cow<'_, Value>> {
        let i = usize::try_from(seq).ok()?;
        if self.extends.get(i)?.is_none() {
            return Some(std::borrow::Cow::Borrowed(&self.events[i].request));
        }
        let chat = self.put_back(seq).clone();
        let mut request = self.events[i].request.clone();
        if let Some(obj) = request.as_object_mut() {
            obj.insert("request".into(), Value::Object(chat));
        }
        Some(std::borrow::Cow::Owned(request))
    }

    /// Whether `request` is event `seq`'s whole request (as
    /// [`Held::request`] `== request`, without copying it out).
    pub fn matches(&mut self, seq: u64, request: &Value) -> bool {
        let Some(i) = usize::try_from(seq).ok().filter(|&i| i < self.events.len()) else {
            return false;
        };
        if self.extends[i].is_none() {
            return self.events[i].request == *request;
        }
        self.put_back(seq);
        let whole = &self.whole.last().expect("just put back").1;
        let (Some(held), Some(actual)) = (self.events[i].request.as_object(), request.as_object())
        else {
            return false;
        };
        held.len() == actual.len()
            && held.iter().all(|(key, value)| match key.as_str() {
                "request" => actual.get(key).and_then(Value::as_object) == Some(whole),
                _ => actual.get(key) == Some(value),
            })
    }

    /// The whole chat request of model call `seq`, put back from the
    /// nearest request along its bases that is held whole, and kept as
    /// the latest held whole.
    fn put_back(&mut self, seq: u64) -> &Map<String, Value> {
        if let Some(at) = self.whole.iter().position(|(s, _)| *s == seq) {
            let entry = self.whole.remove(at);
            self.whole.push(entry);
            return &self.whole.last().expect("just pushed").1;
        }
        let mut chain = Vec::new();
        let mut at = seq;
        let mut whole = loop {
            if let Some((_, w)) = self.whole.iter().find(|(s, _)| *s == at) {
                break w.clone();
            }
            match &self.extends[at as usize] {
                Some(x) => {
                    chain.push(at);
                    at = x.base;
                }
                None => break chat(&self.events[at as usize]).cloned().unwrap_or_default(),
            }
        };
        while let Some(at) = chain.pop() {
            let x = self.extends[at as usize].as_ref().expect("on the chain");
            let mut next = chat(&self.events[at as usize]).cloned().unwrap_or_default();
            let mut all = match whole.remove("messages") {
                Some(Value::Array(all)) => all,
                _ => Vec::new(),
            };
            all.truncate(x.keep);
            if let Some(Value::Array(appended)) = next.remove("messages") {
                all.extend(appended);
            }
            next.insert("messages".into(), Value::Array(all));
            for key in &x.same {
                if let Some(field) = whole.remove(key) {
                    next.insert(key.clone(), field);
                }
            }
            whole = next;
        }
        if self.whole.len() == RECENT {
            self.whole.remove(0);
        }
        self.whole.push((seq, whole));
        &self.whole.last().expect("just pushed").1
    }
}

/// `event`'s request held compact, when it extends one of the model calls
/// `deltas` saw in `earlier` (by seq): what it appended and changed.
fn split(event: &Event, earlier: &[Event], deltas: &Deltas) -> Option<(Value, Extends)> {
    let new = chat(event)?;
    let new_msgs = messages(new);
    let (base, keep, old) = deltas.base(new_msgs, earlier)?;
    let mut rest = Map::new();
    let mut same = Vec::new();
    for (key, value) in new {
        if key == "messages" {
            rest.insert(key.clone(), Value::Array(new_msgs[keep..].to_vec()));
        } else if old.get(key) == Some(value) {
            same.push(key.clone());
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
    Some((Value::Object(request), Extends { base, keep, same }))
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
    fn held_events_put_back_each_request_whole_in_any_order() {
        let mut events = Vec::new();
        let mut msgs = vec![json!({"role": "user", "content": "hi"})];
        for seq in 0..20u64 {
            let mut e = model(seq, Value::Array(msgs.clone()));
            if seq % 5 == 3 {
                e.request["request"]["temperature"] = json!(seq);
            }
            if seq == 11 {
                // A conversation that drops a message shares less.
                e.request["request"]["messages"] = json!([{"role": "user", "content": "hi"}]);
            }
            events.push(e);
            msgs.push(json!({"role": "tool", "content": format!("doc {seq}")}));
        }
        let whole: usize = events.iter().map(|e| e.request.to_string().len()).sum();
        assert_eq!(
            Held::from_whole(events.clone()).events,
            Held::of(&events).events
        );
        let mut held = Held::of(&events);
        let compact: usize = held
            .events
            .iter()
            .map(|e| e.request.to_string().len())
            .sum();
        assert!(compact * 3 < whole, "{compact} held against {whole}");
        for e in &events {
            assert!(held.matches(e.seq, &e.request), "event {}", e.seq);
            let mut other = e.request.clone();
            other["request"]["model"] = json!("n");
            assert!(!held.matches(e.seq, &other), "event {}", e.seq);
            assert_eq!(*held.request(e.seq).unwrap(), e.request, "event {}", e.seq);
            let h = held.get(e.seq).unwrap();
            assert_eq!((&h.response, h.seq, &h.hash), (&e.response, e.seq, &e.hash));
        }
        // Out of order, from cold: the chain of bases walked back.
        let mut cold = Held::of(&events);
        for seq in [19, 4, 12, 0, 11, 18] {
            assert_eq!(*cold.request(seq).unwrap(), events[seq as usize].request);
        }
        assert!(cold.request(20).is_none());
    }

    #[test]
    fn a_reference_to_no_model_call_is_an_error() {
        let a = model(0, json!([{"role": "user", "content": "hi"}]));
        let mut value = json!({"extends": {"event": 3, "messages": 1}, "request": {}});
        let err = expand(&mut value, &[a]).unwrap_err();
        assert!(err.contains("event 3"), "{err}");
    }
}
