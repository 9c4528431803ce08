//! The run's event log as it is written: each event is chained to the one
//! before and appended to the bundle file at once (one `write` per line, so
//! a killed process leaves every event it recorded), except consecutive
//! clock reads, held back until the next other call or the end and written
//! as one line (`fold.rs`): a killed process may lose its last clock reads,
//! which a replay or a resume reads again from the same virtual clock.
//! Before a call that goes out of the run is dispatched, its intent is
//! written (`intent.rs`), the held clock reads first. A model call written
//! compact (`delta.rs`) is hashed over its line, so appending costs the
//! delta, not the whole request (decision 0345).

use super::delta::{Chain, Deltas};
use super::event::Event;
use super::fold::Folds;
use super::intent::Intent;
use std::fs::File;
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use worldline_case::canon;

/// The hash the chain starts from.
pub const CHAIN_START: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of `event` written whole (its `hash` field ignored) chained
/// after `prev`.
pub fn chain_hash(prev: &str, event: &Event) -> String {
    let mut bare = event.clone();
    bare.hash.clear();
    chain_hash_of_text(prev, &canon::to_string(&bare))
}

/// The hash of an event's canonical text without `hash` (a whole event,
/// or a compact model call's line) chained after `prev`.
pub fn chain_hash_of_text(prev: &str, text: &str) -> String {
    let mut buf = String::with_capacity(prev.len() + 1 + text.len());
    buf.push_str(prev);
    buf.push('\n');
    buf.push_str(text);
    canon::sha256_hex(buf)
}

/// The event's canonical text with `"hash"` put in its sorted place (right
/// after `fuel`, the key before it), without serializing the event again.
fn with_hash(text: &str, hash: &str) -> String {
    let at = text
        .find("\"fuel\":")
        .map(|i| i + "\"fuel\":".len())
        .map(|i| i + text[i..].find(|c: char| !c.is_ascii_digit()).unwrap_or(0))
        .expect("an event's text has a fuel field");
    let mut line = String::with_capacity(text.len() + hash.len() + 10);
    line.push_str(&text[..at]);
    line.push_str(",\"hash\":\"");
    line.push_str(hash);
    line.push('"');
    line.push_str(&text[at..]);
    line
}

/// Where the recorder's lines go: the bundle's file, or a buffer its
/// owner reads (a fork server's prefix and branches, decision 0358).
enum Sink {
    File(File),
    Buffer(Arc<Mutex<Vec<u8>>>),
}

impl Sink {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::File(f) => f.write_all(bytes),
            Sink::Buffer(b) => {
                b.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(bytes);
                Ok(())
            }
        }
    }
}

/// Events in order, the chain head, and where they go on disk (if anywhere).
pub struct Recorder {
    events: Vec<Event>,
    head: String,
    sink: Option<Sink>,
    /// The model calls a request may extend (`delta.rs`).
    deltas: Deltas,
    /// The clock reads held back to be folded (`fold.rs`).
    folds: Folds,
    /// How a compact model call is hashed (whole only to replay a bundle
    /// written before 0345 to the same chain).
    chain: Chain,
}

impl Recorder {
    /// Record in memory only (fuzzing keeps passing runs off disk).
    pub fn in_memory() -> Self {
        Recorder {
            events: Vec::new(),
            head: CHAIN_START.to_string(),
            sink: None,
            deltas: Deltas::default(),
            folds: Folds::default(),
            chain: Chain::default(),
        }
    }

    /// Hash compact model calls as `chain` says (a replay, as its
    /// recording was hashed).
    pub fn chained(self, chain: Chain) -> Self {
        Recorder { chain, ..self }
    }

    /// Record and append each event to an open bundle file.
    pub fn to_file(file: File) -> Self {
        Recorder {
            sink: Some(Sink::File(file)),
            ..Recorder::in_memory()
        }
    }

    /// Record and append each line to `buffer` (the bytes a bundle file
    /// would get), which the caller reads.
    pub fn to_buffer(buffer: Arc<Mutex<Vec<u8>>>) -> Self {
        Recorder {
            sink: Some(Sink::Buffer(buffer)),
            ..Recorder::in_memory()
        }
    }

    /// The events whose lines are written so far (the clock reads held
    /// back to be folded are not), and the chain's hash after the last of
    /// them: where a reader of the lines written next starts.
    pub fn written(&self) -> (&[Event], &str) {
        let n = self.events.len() - self.folds.held();
        let events = &self.events[..n];
        (
            events,
            events.last().map_or(CHAIN_START, |e| e.hash.as_str()),
        )
    }

    /// Chain the event, keep it, and append it to the bundle. A model
    /// call that extends an earlier one is hashed over its compact line
    /// (unless the chain is [`Chain::Whole`]); any other event over its
    /// whole text.
    pub fn append(&mut self, mut event: Event) -> std::io::Result<()> {
        event.hash.clear();
        let compact = self.deltas.compact(&event, &self.events, self.chain);
        let whole = match (&compact, self.chain) {
            (Some(_), Chain::Lines) => None,
            _ => Some(canon::to_string(&event)),
        };
        let hashed = whole.as_ref().or(compact.as_ref()).expect("one is made");
        event.hash = chain_hash_of_text(&self.head, hashed);
        self.head.clone_from(&event.hash);
        if let Some(file) = &mut self.sink {
            let text = compact.as_ref().or(whole.as_ref()).expect("one is made");
            let lines = self.folds.offer(&event, || with_hash(text, &event.hash));
            if !lines.is_empty() {
                file.write_all(lines.as_bytes())?;
            }
        }
        self.deltas.note(&event);
        self.events.push(event);
        Ok(())
    }

    /// Write the intent of the call about to be dispatched (after the
    /// clock reads held back, which come before it). In memory, nothing
    /// (and `intent` is not made).
    pub fn intend(&mut self, intent: impl FnOnce() -> Intent) -> std::io::Result<()> {
        if let Some(file) = &mut self.sink {
            let mut lines = self.folds.flush();
            lines.push_str(&intent().line());
            file.write_all(lines.as_bytes())?;
        }
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.events.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Give back the file to write the footer to (the clock reads held
    /// back written to it first; none when recording to memory or to a
    /// buffer), and the events.
    pub fn finish(mut self) -> std::io::Result<(Option<File>, Vec<Event>, String)> {
        if let Some(sink) = &mut self.sink {
            let lines = self.folds.flush();
            if !lines.is_empty() {
                sink.write_all(lines.as_bytes())?;
            }
        }
        let file = match self.sink {
            Some(Sink::File(f)) => Some(f),
            _ => None,
        };
        Ok((file, self.events, self.head))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Effect;
    use serde_json::json;

    #[test]
    fn the_spliced_line_is_the_canonical_event() {
        let mut e = Event {
            call: crate::log::Kind::ToolsCall.name().into(),
            effect: Effect::Read,
            fuel: 1234,
            hash: String::new(),
            injected: Some(json!({"action": "stale"})),
            request: json!({"name": "x"}),
            response: json!({"ok": 1}),
            seq: 0,
            vtime_ns: 5,
            writes: vec![],
        };
        let text = canon::to_string(&e);
        e.hash = "ab".repeat(32);
        assert_eq!(with_hash(&text, &e.hash), canon::to_string(&e));
    }
}
