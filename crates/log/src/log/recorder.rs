//! The run's event log as it is written: each event is chained to the one
//! before and appended to the bundle file at once (one `write` per line, so
//! a killed process leaves every event it recorded), except consecutive
//! clock reads, held back until the next other call or the end and written
//! as one line (`fold.rs`): a killed process may lose its last clock reads,
//! which a replay or a resume reads again from the same virtual clock.
//! Before a call that goes out of the run is dispatched, its intent is
//! written (`intent.rs`), the held clock reads first. A model call written
//! compact (`delta.rs`) is hashed over its line, so appending costs the
//! delta, not the whole request (decision 0345), and is kept in memory as
//! its line holds it (decision 0380): the recorder holds the conversation
//! once, not once per model call.

use super::delta::{Chain, Held};
use super::event::Event;
use super::fold::Folds;
use super::intent::Intent;
use std::fs::File;
use std::io::Write as _;
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

/// Events in order (model requests held compact), the chain head, and
/// where they go on disk (if anywhere).
pub struct Recorder {
    events: Held,
    head: String,
    sink: Option<File>,
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
            events: Held::default(),
            head: CHAIN_START.to_string(),
            sink: None,
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
            sink: Some(file),
            ..Recorder::in_memory()
        }
    }

    /// Chain the event, keep it, and append it to the bundle. A model
    /// call that extends an earlier one is held compact and hashed over
    /// its compact line (unless the chain is [`Chain::Whole`]); any other
    /// event over its whole text.
    pub fn append(&mut self, mut event: Event) -> std::io::Result<()> {
        event.hash.clear();
        let seq = self.events.len() as u64;
        let whole = (self.chain == Chain::Whole).then(|| canon::to_string(&event));
        self.events.push(event);
        let compact = self.events.line(seq, self.chain);
        let (hashed, written) = match (whole, compact) {
            (Some(whole), compact) => {
                let written = compact.unwrap_or_else(|| whole.clone());
                (whole, written)
            }
            (None, Some(line)) => (line.clone(), line),
            (None, None) => {
                let text = canon::to_string(self.events.get(seq).expect("just held"));
                (text.clone(), text)
            }
        };
        let hash = chain_hash_of_text(&self.head, &hashed);
        self.head.clone_from(&hash);
        self.events.set_hash(seq, hash);
        if let Some(file) = &mut self.sink {
            let event = self.events.get(seq).expect("just held");
            let lines = self.folds.offer(event, || with_hash(&written, &event.hash));
            if !lines.is_empty() {
                file.write_all(lines.as_bytes())?;
            }
        }
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

    /// Model call `seq`'s whole chat request, when the recorder keeps it
    /// (shared: a follower adopts it, [`Held::adopt`]).
    pub fn kept(
        &self,
        seq: u64,
    ) -> Option<std::sync::Arc<serde_json::Map<String, serde_json::Value>>> {
        self.events.kept(seq)
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Give back the file to write the footer to (the clock reads held
    /// back written to it first), the events (held compact) and the
    /// chain's last hash.
    pub fn finish(mut self) -> std::io::Result<(Option<File>, Held, String)> {
        if let Some(file) = &mut self.sink {
            let lines = self.folds.flush();
            if !lines.is_empty() {
                file.write_all(lines.as_bytes())?;
            }
        }
        Ok((self.sink, self.events, self.head))
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
