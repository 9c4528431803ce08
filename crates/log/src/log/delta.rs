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
use std::borrow::Cow;
use std::sync::Arc;

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
/// conversations interleaved: an agent and its sub-agents), and how many
/// whole requests are kept put back.
const RECENT: usize = 8;

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

/// How a held model call extends an earlier one (its line's `extends`):
/// the earlier call `base`, how many of its messages it keeps, and the
/// fields it has with the same values (`same`, in the order of its chat
/// request's keys).
#[derive(Debug, Clone, PartialEq)]
pub struct Extends {
    base: u64,
    keep: usize,
    same: Vec<String>,
}

impl Extends {
    pub fn new(base: u64, keep: usize, same: Vec<String>) -> Self {
        Extends { base, keep, same }
    }

    /// How many messages of its base the call keeps.
    pub(crate) fn keep(&self) -> usize {
        self.keep
    }
}

/// A run's events with model requests held compact (decisions 0347,
/// 0380): a model call that extends one of the recent model calls before
/// it keeps only the messages it appended and the fields that changed, as
/// its bundle line does; every other field of every event is held as
/// recorded. The recorder, the bundle reader and a follower hold events
/// so: memory is the recording's compact size and a few whole requests
/// (the latest put back, those the next call extends), not the
/// conversation once per model call. [`Held::request`] puts one request
/// back whole; [`Held::whole`] every event, for a reader that wants them
/// all.
#[derive(Debug, Clone, Default)]
pub struct Held {
    /// Shared by the copies of a held recording (a fork's follower and
    /// the run it was read as, decision 0401), copied by the first that
    /// adds to it.
    events: Arc<Vec<Event>>,
    extends: Arc<Vec<Option<Extends>>>,
    /// The latest chat requests put back whole, by seq, oldest first
    /// (shared: a follower adopts the ones its run's recorder keeps).
    whole: Vec<(u64, Arc<Map<String, Value>>)>,
    /// The latest model calls' seqs, oldest first: where a request pushed
    /// looks for the one it extends.
    recent: Vec<u64>,
}

impl Held {
    /// Hold a copy of `events` (whole, in seq order) compact.
    pub fn of(events: &[Event]) -> Self {
        let mut held = Held::default();
        for e in events {
            held.push(e.clone());
        }
        held
    }

    /// [`Held::of`], taking the events (each whole request is freed once
    /// it is held compact).
    pub fn from_whole(events: Vec<Event>) -> Self {
        let mut held = Held::default();
        for e in events {
            held.push(e);
        }
        held
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// The first `n` events, held as they are here (with the whole
    /// requests kept among them).
    pub(crate) fn prefix(&self, n: usize) -> Held {
        let n = n.min(self.events.len());
        Held {
            events: Arc::new(self.events[..n].to_vec()),
            extends: Arc::new(self.extends[..n].to_vec()),
            whole: (self.whole.iter())
                .filter(|(seq, _)| (*seq as usize) < n)
                .cloned()
                .collect(),
            recent: (self.recent.iter())
                .copied()
                .filter(|seq| (*seq as usize) < n)
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Event `seq` as held: everything as recorded but a compact model
    /// call's request (compare that with [`Held::matches`], read it with
    /// [`Held::request`]).
    pub fn get(&self, seq: u64) -> Option<&Event> {
        self.events.get(usize::try_from(seq).ok()?)
    }

    /// The events as held (a compact model call's request is what it
    /// appended and changed): for readers of anything but model requests.
    pub fn as_held(&self) -> &[Event] {
        &self.events
    }

    /// Every event whole, as recorded: the conversation once per model
    /// call in memory, for readers that want them all (a short run's).
    /// Borrowed when no event is held compact (a run whose model calls,
    /// if any, extend none): a grader of many short runs copies nothing.
    pub fn whole(&self) -> Cow<'_, [Event]> {
        if self.extends.iter().all(Option::is_none) {
            return Cow::Borrowed(&self.events);
        }
        let mut out: Vec<Event> = Vec::with_capacity(self.events.len());
        for (e, x) in self.events.iter().zip(self.extends.iter()) {
            let mut e = e.clone();
            if let Some(x) = x
                && let Some(base) = out.get(x.base as usize).and_then(chat)
            {
                let chat = rebuild(base, x, chat(&e).expect("a held model call"));
                set_chat(&mut e.request, chat);
            }
            out.push(e);
        }
        Cow::Owned(out)
    }

    /// Every event whole, as [`Held::whole`], taking them: moved out, not
    /// copied, when none is held compact and no other copy shares them
    /// (a bundle read whole, decision 0380).
    pub fn into_whole(self) -> Vec<Event> {
        if self.extends.iter().all(Option::is_none) {
            return Arc::try_unwrap(self.events).unwrap_or_else(|shared| (*shared).clone());
        }
        self.whole().into_owned()
    }

    /// Hold `event` (the next by seq), compact when its request extends
    /// one of the recent model calls'.
    pub fn push(&mut self, mut event: Event) {
        let seq = self.events.len() as u64;
        let extends = self.split(seq, &mut event);
        self.hold(seq, event, extends);
    }

    /// Hold a model call whose request is already compact as `x` says
    /// (decision 0392: the mediator found, from the bytes the agent sent,
    /// that it resends the latest model call's whole conversation and
    /// appends to it): what [`Held::push`] would hold of the whole request,
    /// when `x` names the latest model call ([`Held::latest_chat`]), keeps
    /// all its messages and lists every field but `messages` as `same`.
    pub fn push_extending(&mut self, event: Event, x: Extends) {
        let seq = self.events.len() as u64;
        self.hold(seq, event, Some(x));
    }

    /// The latest model call with a message list, and how many messages
    /// its whole request has: the call a request that resends its whole
    /// conversation and appends to it extends (what [`Held::push`] would
    /// find first).
    pub fn latest_chat(&self) -> Option<(u64, usize)> {
        let seq = *self.recent.last()?;
        Some((seq, self.count(seq)?))
    }

    /// Whether event `seq` is held compact exactly as `x` and `request`
    /// (a compact request) say: then its whole request is the one they
    /// describe, given that `x`'s base is the same whole request here as
    /// there. `false` says nothing: compare the whole with
    /// [`Held::matches`].
    pub fn matches_extending(&self, seq: u64, request: &Value, x: &Extends) -> bool {
        let Some(i) = usize::try_from(seq).ok().filter(|&i| i < self.events.len()) else {
            return false;
        };
        self.extends[i].as_ref() == Some(x) && self.events[i].request == *request
    }

    /// Whether event `seq`'s request is held alike here and in `other`
    /// (the same as recorded, or compact extending the same earlier call
    /// the same way): when every earlier event's whole request is the
    /// same in both, its whole request is too (two runs compared, `diff`,
    /// without putting either back). `false` says nothing: compare the
    /// requests put back.
    pub fn same_request(&self, other: &Held, seq: u64) -> bool {
        let Some(i) = usize::try_from(seq).ok() else {
            return false;
        };
        match (self.events.get(i), other.events.get(i)) {
            (Some(a), Some(b)) => self.extends[i] == other.extends[i] && a.request == b.request,
            _ => false,
        }
    }

    fn hold(&mut self, seq: u64, event: Event, extends: Option<Extends>) {
        if chat(&event).is_some() {
            if self.recent.len() == RECENT {
                self.recent.remove(0);
            }
            self.recent.push(seq);
        }
        Arc::make_mut(&mut self.events).push(event);
        Arc::make_mut(&mut self.extends).push(extends);
    }

    /// Set the chain hash of event `seq` (the recorder hashes its line
    /// once it is held).
    pub(super) fn set_hash(&mut self, seq: u64, hash: String) {
        Arc::make_mut(&mut self.events)[seq as usize].hash = hash;
    }

    /// The compact line of event `seq` (canonical JSON, with its hash when
    /// set), marked as `chain` hashes it; `None` when it is held whole.
    pub(super) fn line(&self, seq: u64, chain: Chain) -> Option<String> {
        let x = self.extends.get(seq as usize)?.as_ref()?;
        let mut extends = Map::new();
        extends.insert("event".into(), x.base.into());
        extends.insert("messages".into(), x.keep.into());
        if !x.same.is_empty() {
            let same = x.same.iter().map(|k| Value::String(k.clone())).collect();
            extends.insert("same".into(), Value::Array(same));
        }
        if chain == Chain::Lines {
            extends.insert(CHAINED.into(), "line".into());
        }
        let mut value = serde_json::to_value(&self.events[seq as usize]).expect("events serialize");
        value
            .as_object_mut()
            .expect("an event is an object")
            .insert(EXTENDS.into(), Value::Object(extends));
        Some(worldline_case::canon::to_string(&value))
    }

    /// Take a compact line's `extends` out of `value` (read from a bundle
    /// as event `len()`), checked against the events held: `None` when the
    /// line is whole; an error says what is wrong with the reference. The
    /// event read from the rest is then [`Held::push_read`].
    pub(super) fn take_extends(&self, value: &mut Value) -> Result<Option<Extends>, String> {
        let Some(obj) = value.as_object_mut() else {
            return Ok(None);
        };
        let Some(extends) = obj.remove(EXTENDS) else {
            return Ok(None);
        };
        match extends.get(CHAINED) {
            None => {}
            Some(Value::String(s)) if s == "line" => {}
            Some(other) => return Err(format!("`extends.chained` is {other}, not \"line\"")),
        }
        let base = extends["event"]
            .as_u64()
            .ok_or("`extends.event` is not an event number")?;
        let keep = extends["messages"]
            .as_u64()
            .ok_or("`extends.messages` is not a count")? as usize;
        let count = self
            .count(base)
            .ok_or_else(|| format!("`extends` names event {base}, not an earlier model call"))?;
        if keep > count {
            return Err(format!(
                "`extends` keeps {keep} messages of event {base}, which has {count}"
            ));
        }
        let chat = obj
            .get("request")
            .and_then(|r| r.get("request"))
            .and_then(Value::as_object)
            .ok_or("a compact model call without `request.request`")?;
        if !chat.get("messages").is_some_and(Value::is_array) {
            return Err("a compact model call without `request.request.messages`".into());
        }
        let mut same = Vec::new();
        if let Some(keys) = extends.get("same") {
            for key in keys.as_array().ok_or("`extends.same` is not a list")? {
                let key = key.as_str().ok_or("`extends.same` holds a non-string")?;
                if !self.has_field(base, key) {
                    return Err(format!(
                        "`extends.same` names `{key}`, which event {base} lacks"
                    ));
                }
                same.push(key.to_string());
            }
        }
        Ok(Some(Extends { base, keep, same }))
    }

    /// Hold an event read from a bundle as its line holds it: compact with
    /// `extends` (from [`Held::take_extends`]) or whole.
    pub(super) fn push_read(&mut self, event: Event, extends: Option<Extends>) {
        if extends.is_none() && chat(&event).is_some() {
            // A whole model call is a base the next may extend.
            return self.push(event);
        }
        Arc::make_mut(&mut self.events).push(event);
        Arc::make_mut(&mut self.extends).push(extends);
    }

    /// How many messages model call `seq`'s request has (`None`: not a
    /// model call).
    fn count(&self, seq: u64) -> Option<usize> {
        let i = usize::try_from(seq).ok()?;
        let held = messages(chat(self.events.get(i)?)?).len();
        Some(match &self.extends[i] {
            Some(x) => x.keep + held,
            None => held,
        })
    }

    /// Whether model call `seq`'s whole request has the field `key`: its
    /// own, or one of the `same` fields it takes from its base, each of
    /// which was checked to be in the base's whole request when it was
    /// held (so no walk back along the chain: that made reading a bundle
    /// O(N) per compact line).
    fn has_field(&self, seq: u64, key: &str) -> bool {
        let Some(held) = self.get(seq).and_then(chat) else {
            return false;
        };
        held.contains_key(key)
            || matches!(&self.extends[seq as usize], Some(x) if x.same.iter().any(|k| k == key))
    }

    /// Event `seq`'s whole request, as recorded.
    pub fn request(&mut self, seq: u64) -> Option<Cow<'_, Value>> {
        let i = usize::try_from(seq).ok()?;
        if self.extends.get(i)?.is_none() {
            return Some(Cow::Borrowed(&self.events[i].request));
        }
        let chat = self.put_back(seq).clone();
        let mut request = self.events[i].request.clone();
        set_chat(&mut request, chat);
        Some(Cow::Owned(request))
    }

    /// Event `seq` whole, as recorded: its request put back when it is
    /// held compact (one request at a time, for a reader that shows it).
    pub fn event(&mut self, seq: u64) -> Option<Cow<'_, Event>> {
        let i = usize::try_from(seq).ok()?;
        if self.extends.get(i)?.is_none() {
            return Some(Cow::Borrowed(&self.events[i]));
        }
        let request = self.request(seq)?.into_owned();
        let mut e = self.events[i].clone();
        e.request = request;
        Some(Cow::Owned(e))
    }

    /// Each event as held passed through `f`, with how many messages of
    /// its base a compact model call keeps (`None`: held whole), and held
    /// the same way: a compact call still extends the same call, keeping
    /// as many messages and the same fields. Costs what is held, not the
    /// conversation once per call. `f` must change a value wherever it
    /// appears alike (a redaction after learning the whole run): then each
    /// request put back is `f` of the one recorded.
    pub fn map_held(&self, mut f: impl FnMut(&mut Event, Option<usize>)) -> Held {
        let events = (self.events.iter().zip(self.extends.iter()))
            .map(|(e, x)| {
                let mut e = e.clone();
                f(&mut e, x.as_ref().map(|x| x.keep));
                e
            })
            .collect();
        Held {
            events: Arc::new(events),
            extends: self.extends.clone(),
            whole: Vec::new(),
            recent: self.recent.clone(),
        }
    }

    /// Model call `seq`'s messages as held: how many of its base's come
    /// before them (0 when it is held whole) and those it holds (all of
    /// them when whole, else those it appended); `None` when it is not a
    /// chat model call.
    pub fn appended(&self, seq: u64) -> Option<(usize, &[Value])> {
        let i = usize::try_from(seq).ok()?;
        let held = messages(chat(self.events.get(i)?)?);
        Some((self.extends[i].as_ref().map_or(0, |x| x.keep), held))
    }

    /// The model call compact event `seq` extends and how many of its
    /// messages it keeps; `None` when the event is held whole.
    pub fn extends(&self, seq: u64) -> Option<(u64, usize)> {
        let x = self.extends.get(usize::try_from(seq).ok()?)?.as_ref()?;
        Some((x.base, x.keep))
    }

    /// How compact event `seq` extends its base (base, messages kept, the
    /// fields it has the same): what a copy holding it compact again
    /// records ([`crate::log::Recorder::append_extending`]); `None` when
    /// the event is held whole.
    pub(crate) fn extending(&self, seq: u64) -> Option<&Extends> {
        self.extends.get(usize::try_from(seq).ok()?)?.as_ref()
    }

    /// Event `seq` as a summary of it reads it (a timeline's row, a
    /// span's or a price's model name): every field whole but a compact
    /// model call's messages, of which it holds those it appended, or the
    /// last it sent when it appended none. Costs the fields it kept from
    /// its base (`model`, `tools`), not the conversation.
    pub fn shown(&mut self, seq: u64) -> Option<Cow<'_, Event>> {
        let i = usize::try_from(seq).ok()?;
        let Some(x) = self.extends.get(i)?.clone() else {
            return Some(Cow::Borrowed(&self.events[i]));
        };
        let held = chat(&self.events[i]).expect("a held model call");
        let mut chat = held.clone();
        if messages(held).is_empty() && x.keep > 0 {
            let last = messages(self.put_back(seq)).last().cloned();
            chat.insert("messages".into(), Value::Array(last.into_iter().collect()));
        }
        for key in &x.same {
            if let Some(value) = self.field(x.base, key) {
                chat.insert(key.clone(), value.clone());
            }
        }
        let mut e = self.events[i].clone();
        set_chat(&mut e.request, chat);
        Some(Cow::Owned(e))
    }

    /// Field `key` of model call `seq`'s whole chat request, found along
    /// its bases (without putting the request back).
    fn field(&self, mut seq: u64, key: &str) -> Option<&Value> {
        loop {
            let held = chat(self.events.get(seq as usize)?)?;
            if let Some(value) = held.get(key) {
                return Some(value);
            }
            match &self.extends[seq as usize] {
                Some(x) if x.same.iter().any(|k| k == key) => seq = x.base,
                _ => return None,
            }
        }
    }

    /// Whether `request` is event `seq`'s whole request (as
    /// [`Held::request`] `== request`), compared part by part with what
    /// is held (the messages it shares with its base, those it appended,
    /// the fields it changed and those it kept) without putting it back.
    pub fn matches(&mut self, seq: u64, request: &Value) -> bool {
        let Some(i) = usize::try_from(seq).ok().filter(|&i| i < self.events.len()) else {
            return false;
        };
        let Some(x) = self.extends[i].clone() else {
            return self.events[i].request == *request;
        };
        let (Some(held), Some(actual)) = (self.events[i].request.as_object(), request.as_object())
        else {
            return false;
        };
        let outer = held.len() == actual.len()
            && held
                .iter()
                .all(|(key, value)| key == "request" || actual.get(key) == Some(value));
        let Some(actual) = actual.get("request").and_then(Value::as_object) else {
            return false;
        };
        let held = chat(&self.events[i]).expect("a held model call");
        let appended = messages(held);
        let sent = messages(actual);
        let own = outer
            && actual.len() == held.len() + x.same.len()
            && sent.len() == x.keep + appended.len()
            && sent[x.keep..] == *appended
            && held
                .iter()
                .all(|(key, value)| key == "messages" || actual.get(key) == Some(value));
        if !own {
            return false;
        }
        let base = self.put_back(x.base);
        messages(base).get(..x.keep) == Some(&sent[..x.keep])
            && x.same.iter().all(|key| actual.get(key) == base.get(key))
    }

    /// The recent model call whose messages share the longest prefix with
    /// `new_msgs` (ties: the latest): its seq and how many it shares.
    fn base(&mut self, new_msgs: &[Value]) -> Option<(u64, usize)> {
        let mut best: Option<(u64, usize)> = None;
        for seq in self.recent.clone().into_iter().rev() {
            let old_msgs = messages(self.put_back(seq));
            let keep = old_msgs
                .iter()
                .zip(new_msgs)
                .take_while(|(a, b)| a == b)
                .count();
            let all = keep == old_msgs.len();
            if keep > best.map_or(0, |b| b.1) {
                best = Some((seq, keep));
            }
            if all && keep > 0 {
                break;
            }
        }
        best
    }

    /// Make `event` (seq `seq`) compact when it extends a recent model
    /// call: its chat request becomes what it appended and the fields that
    /// changed, and the whole one is kept put back (the next call likely
    /// extends it).
    fn split(&mut self, seq: u64, event: &mut Event) -> Option<Extends> {
        let new_msgs = messages(chat(event)?);
        let (base, keep) = self.base(new_msgs)?;
        let old = self.put_back(base);
        let new = chat(event).expect("a model call");
        let same: Vec<String> = new
            .iter()
            .filter(|(key, value)| *key != "messages" && old.get(key.as_str()) == Some(value))
            .map(|(key, _)| key.clone())
            .collect();
        let mut compact = Map::new();
        for (key, value) in new {
            if key == "messages" {
                compact.insert(key.clone(), Value::Array(messages(new)[keep..].to_vec()));
            } else if !same.contains(key) {
                compact.insert(key.clone(), value.clone());
            }
        }
        let whole = set_chat(&mut event.request, compact).expect("a model call");
        self.keep_whole(seq, Arc::new(whole));
        Some(Extends { base, keep, same })
    }

    /// The whole chat request of model call `seq` when it is kept put
    /// back (shared, not copied).
    pub fn kept(&self, seq: u64) -> Option<Arc<Map<String, Value>>> {
        let (_, chat) = self.whole.iter().find(|(s, _)| *s == seq)?;
        Some(chat.clone())
    }

    /// Keep `chat` as model call `seq`'s whole chat request, put back (a
    /// follower adopts what its run's recorder kept of the call it just
    /// matched: the base the next call extends).
    pub fn adopt(&mut self, seq: u64, chat: Arc<Map<String, Value>>) {
        let compact = self.extends.get(seq as usize).is_some_and(Option::is_some);
        if compact && !self.whole.iter().any(|(s, _)| *s == seq) {
            self.keep_whole(seq, chat);
        }
    }

    /// Keep `chat` as the latest whole request put back.
    fn keep_whole(&mut self, seq: u64, chat: Arc<Map<String, Value>>) {
        if self.whole.len() == RECENT {
            self.whole.remove(0);
        }
        self.whole.push((seq, chat));
    }

    /// The whole chat request of model call `seq`: its own when held
    /// whole, else put back from the nearest request along its bases that
    /// is held or kept whole, and kept as the latest put back.
    fn put_back(&mut self, seq: u64) -> &Map<String, Value> {
        if let Some(at) = self.whole.iter().position(|(s, _)| *s == seq) {
            let entry = self.whole.remove(at);
            self.whole.push(entry);
            return &self.whole.last().expect("just pushed").1;
        }
        if self.extends[seq as usize].is_none() {
            return chat(&self.events[seq as usize]).expect("a model call");
        }
        let mut chain = Vec::new();
        let mut at = seq;
        loop {
            match &self.extends[at as usize] {
                Some(x) if !self.whole.iter().any(|(s, _)| *s == at) => {
                    chain.push(at);
                    at = x.base;
                }
                _ => break,
            }
        }
        // From the nearest whole request, each step keeps its base's first
        // messages and appends its own, in one list: the cost of the
        // request put back and the lines on the way, not of a whole
        // request per step.
        let root = match self.whole.iter().find(|(s, _)| *s == at) {
            Some((_, w)) => w.as_ref(),
            None => chat(&self.events[at as usize]).expect("a model call"),
        };
        let mut msgs: Vec<Value> = messages(root).to_vec();
        let mut fields: Map<String, Value> = (root.iter())
            .filter(|(k, _)| *k != "messages")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        while let Some(next) = chain.pop() {
            let x = self.extends[next as usize].as_ref().expect("on the chain");
            let held = chat(&self.events[next as usize]).expect("a model call");
            msgs.truncate(x.keep);
            msgs.extend_from_slice(messages(held));
            let mut own = Map::new();
            for (key, value) in held {
                if key != "messages" {
                    own.insert(key.clone(), value.clone());
                }
            }
            for key in &x.same {
                if let Some(field) = fields.remove(key) {
                    own.insert(key.clone(), field);
                }
            }
            fields = own;
        }
        let mut whole = fields;
        whole.insert("messages".into(), Value::Array(msgs));
        self.keep_whole(seq, Arc::new(whole));
        &self.whole.last().expect("just pushed").1
    }
}

/// The whole chat request of a compact one (`held`) that extends `base`
/// (whole) as `x` says.
fn rebuild(
    base: &Map<String, Value>,
    x: &Extends,
    held: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in held {
        if key == "messages" {
            let base_msgs = messages(base);
            let appended = messages(held);
            let mut all = Vec::with_capacity(x.keep + appended.len());
            all.extend_from_slice(&base_msgs[..x.keep.min(base_msgs.len())]);
            all.extend_from_slice(appended);
            out.insert(key.clone(), Value::Array(all));
        } else {
            out.insert(key.clone(), value.clone());
        }
    }
    for key in &x.same {
        if let Some(field) = base.get(key) {
            out.insert(key.clone(), field.clone());
        }
    }
    out
}

/// Put `chat` in a model call's request (`request.request`), giving back
/// the one it held.
fn set_chat(request: &mut Value, chat: Map<String, Value>) -> Option<Map<String, Value>> {
    let obj = request.as_object_mut()?;
    match obj.insert("request".into(), Value::Object(chat)) {
        Some(Value::Object(old)) => Some(old),
        _ => None,
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
        let mut writer = Held::default();
        writer.push(a.clone());
        assert_eq!(writer.line(0, Chain::Lines), None);
        writer.push(b.clone());
        let line = writer.line(1, Chain::Lines).unwrap();
        assert!(
            line.contains(
                "\"extends\":{\"chained\":\"line\",\"event\":0,\"messages\":1,\"same\":[\"model\",\"tools\"]}"
            ),
            "{line}"
        );
        assert!(!line.contains("hi"));
        let mut value: Value = serde_json::from_str(&line).unwrap();
        let mut reader = Held::default();
        reader.push_read(a.clone(), None);
        let x = reader.take_extends(&mut value).unwrap();
        assert!(x.is_some());
        reader.push_read(serde_json::from_value(value).unwrap(), x);
        assert_eq!(reader.whole().into_owned(), vec![a, b]);
    }

    #[test]
    fn events_taken_whole_are_those_read_whole_held_compact_or_shared() {
        let msgs = |n: usize| {
            Value::Array(
                (0..n)
                    .map(|i| json!({"role": "user", "content": i}))
                    .collect(),
            )
        };
        let extending: Vec<Event> = (0..4)
            .map(|seq| model(seq, msgs(seq as usize + 1)))
            .collect();
        let compact = Held::of(&extending);
        assert!(compact.extends.iter().any(Option::is_some));
        assert_eq!(compact.into_whole(), extending);
        // None held compact: the events themselves, whether or not a copy
        // shares them.
        let alone: Vec<Event> = (0..3)
            .map(|seq| model(seq, json!([{"role": "user", "content": format!("q{seq}")}])))
            .collect();
        let held = Held::of(&alone);
        assert!(held.extends.iter().all(Option::is_none));
        let shared = held.clone();
        assert_eq!(held.into_whole(), alone);
        assert_eq!(shared.whole().into_owned(), alone);
        assert_eq!(shared.into_whole(), alone);
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
        assert_eq!(Held::of(&events).whole().into_owned(), events);
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
            // A message changed where it is shared with the base, or where
            // it was appended, or one more: each is another request.
            let last = e.request["request"]["messages"].as_array().unwrap().len() - 1;
            for (at, push) in [(0, false), (last, false), (0, true)] {
                let mut other = e.request.clone();
                let msgs = other["request"]["messages"].as_array_mut().unwrap();
                match push {
                    true => msgs.push(json!("more")),
                    false => msgs[at] = json!("changed"),
                }
                assert!(!held.matches(e.seq, &other), "event {} at {at}", e.seq);
            }
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
    fn a_reader_gets_each_event_whole_or_as_its_row_reads_it() {
        let mut events = Vec::new();
        let mut msgs = vec![json!({"role": "user", "content": "hi"})];
        for seq in 0..12u64 {
            let mut e = model(seq, Value::Array(msgs.clone()));
            if seq == 7 {
                // Appends nothing, changes a field: its row shows the last
                // message it sent all the same.
                e.request["request"]["messages"] = events.last().map_or(json!([]), |l: &Event| {
                    l.request["request"]["messages"].clone()
                });
                e.request["request"]["temperature"] = json!(1);
            } else {
                msgs.push(json!({"role": "tool", "content": format!("doc {seq}")}));
            }
            events.push(e);
        }
        let mut held = Held::of(&events);
        for e in &events {
            let whole = &e.request["request"];
            let sent = whole["messages"].as_array().unwrap();
            assert_eq!(*held.event(e.seq).unwrap(), *e, "event {}", e.seq);
            let (keep, appended) = held.appended(e.seq).unwrap();
            assert_eq!(keep + appended.len(), sent.len(), "event {}", e.seq);
            assert_eq!(appended, &sent[keep..], "event {}", e.seq);
            let shown = held.shown(e.seq).unwrap();
            let chat = &shown.request["request"];
            assert_eq!(chat["messages"].as_array().unwrap().last(), sent.last());
            for key in ["model", "tools", "temperature"] {
                assert_eq!(chat.get(key), whole.get(key), "event {} {key}", e.seq);
            }
            assert_eq!((&shown.response, shown.seq), (&e.response, e.seq));
        }
        let compact = held.shown(11).unwrap().request["request"]["messages"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(compact, 1, "a row holds what the call appended");
    }

    #[test]
    fn a_reference_to_no_model_call_is_an_error() {
        let mut held = Held::default();
        held.push(model(0, json!([{"role": "user", "content": "hi"}])));
        let mut value = json!({"extends": {"event": 3, "messages": 1}, "request": {}});
        let err = held.take_extends(&mut value).unwrap_err();
        assert!(err.contains("event 3"), "{err}");
        let mut value = json!({"extends": {"event": 0, "messages": 2}, "request": {}});
        let err = held.take_extends(&mut value).unwrap_err();
        assert!(err.contains("which has 1"), "{err}");
        // `same` names fields the base has, held or taken from its own
        // base; not one it lacks.
        let line = |same: Value, base: u64| json!({"extends": {"event": base, "messages": 1, "same": same}, "request": {"request": {"messages": []}}});
        let mut value = line(json!(["model"]), 0);
        let x = held.take_extends(&mut value).unwrap();
        held.push_read(serde_json::from_value(json!({"call": Kind::ModelComplete.name(), "effect": "read", "fuel": 1, "hash": "", "request": value["request"], "response": {}, "seq": 1, "vtime_ns": 1, "writes": []})).unwrap(), x);
        // Event 1 took `model` from event 0, not `tools`.
        for (same, base, has) in [
            ("model", 1, true),
            ("tools", 0, true),
            ("tools", 1, false),
            ("nope", 0, false),
            ("nope", 1, false),
        ] {
            let err = held.take_extends(&mut line(json!([same]), base)).err();
            assert_eq!(err.is_none(), has, "{same} of {base}: {err:?}");
        }
    }
}
