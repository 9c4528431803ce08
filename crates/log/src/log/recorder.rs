//! The run's event log as it is written: each event is chained to the one
//! before and appended to the bundle file. An event that must survive a
//! kill (a write to the world, or a call with an intent: its answer came
//! from outside the run) is written at once, with the lines held before
//! it; the lines of events the run makes again identically (reads, notes,
//! stdout) are held until then, [`HELD_BYTES`] or the end (decision 0389:
//! one `write` for many lines, not one per line). Consecutive clock reads
//! are held back and written as one line (`fold.rs`). A killed process
//! may lose its last reads, which a replay or a resume makes again from
//! the same world and virtual clock; a session whose client cannot be
//! started again writes each line at once (decision 0416). Before a call
//! that goes out of the run is dispatched, its intent is written
//! (`intent.rs`), the held lines first. A model call written
//! compact (`delta.rs`) is hashed over its line, so appending costs the
//! delta, not the whole request (decision 0345), and is kept in memory as
//! its line holds it (decision 0380): the recorder holds the conversation
//! once, not once per model call.

use super::delta::{Chain, Extends, Held};
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
    chain_hash_of_parts(prev, &[text.as_bytes()])
}

/// [`chain_hash_of_text`] of the text `parts` make one after another: a
/// line read with its `"hash"` cut out, hashed without joining the rest.
pub(super) fn chain_hash_of_parts(prev: &str, parts: &[&[u8]]) -> String {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    hasher.update(prev);
    hasher.update(b"\n");
    for part in parts {
        hasher.update(part);
    }
    canon::hex_of(&hasher.finalize())
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

/// At most this many bytes of lines are held before they are written.
pub const HELD_BYTES: usize = 64 * 1024;

/// Events in order (model requests held compact), the chain head, and
/// where they go on disk (if anywhere).
pub struct Recorder {
    events: Held,
    head: String,
    sink: Option<Sink>,
    /// Lines of events the run makes again identically, not yet written
    /// (a file sink only; a buffer gets each line at once).
    held: String,
    /// The clock reads held back to be folded (`fold.rs`).
    folds: Folds,
    /// How a compact model call is hashed (whole only to replay a bundle
    /// written before 0345 to the same chain).
    chain: Chain,
    /// Start the file's writeback after each write: a run that flushes
    /// its own bundle at its end then waits for its last lines only
    /// (decision 0402).
    writeback: bool,
    /// Hash each event into the chain (all but [`Recorder::unhashed`]).
    hashed: bool,
    /// Write every line at once, holding none (a session whose client
    /// cannot be started again, decision 0416).
    each_line: bool,
    /// The bytes of the events' lines so far, each with room for an
    /// intent (see [`Recorder::bytes`]).
    bytes: u64,
}

impl Recorder {
    /// Record in memory only (fuzzing keeps passing runs off disk).
    pub fn in_memory() -> Self {
        Recorder {
            events: Held::default(),
            head: CHAIN_START.to_string(),
            sink: None,
            held: String::new(),
            folds: Folds::default(),
            chain: Chain::default(),
            writeback: false,
            hashed: true,
            each_line: false,
            bytes: 0,
        }
    }

    /// Record in memory without the chain: a run counted and dropped (a
    /// campaign's trial), whose events no one reads by hash. Their
    /// `hash` stays empty, and so does the chain's last hash.
    pub fn unhashed() -> Self {
        let mut recorder = Recorder::in_memory();
        recorder.hashed = false;
        recorder.head.clear();
        recorder
    }

    /// Hash compact model calls as `chain` says (a replay, as its
    /// recording was hashed).
    pub fn chained(self, chain: Chain) -> Self {
        let mut recorder = self;
        recorder.chain = chain;
        recorder
    }

    /// Record and append each event to an open bundle file.
    pub fn to_file(file: File) -> Self {
        let mut recorder = Recorder::in_memory();
        recorder.sink = Some(Sink::File(file));
        recorder
    }

    /// Start the file's writeback after each write (a run that flushes its
    /// own bundle at its end; a suite's batch starts its runs' itself).
    pub fn writing_back(self) -> Self {
        let mut recorder = self;
        recorder.writeback = true;
        recorder
    }

    /// Write every line at once, the reads too: a session whose client is
    /// outside worldline (an MCP client, a served episode), which `resume`
    /// cannot start again to make its reads again, so a kill must not lose
    /// a read its client already got (decision 0416).
    pub fn writing_each_line(self) -> Self {
        let mut recorder = self;
        recorder.each_line = true;
        recorder
    }

    /// Record and append each line to `buffer` (the bytes a bundle file
    /// would get), which the caller reads.
    pub fn to_buffer(buffer: Arc<Mutex<Vec<u8>>>) -> Self {
        let mut recorder = Recorder::in_memory();
        recorder.sink = Some(Sink::Buffer(buffer));
        recorder
    }

    /// The events whose lines are written so far (the clock reads held
    /// back to be folded are not; a buffer sink gets every other line at
    /// once), and the chain's hash after the last of
    /// them: where a reader of the lines written next starts.
    pub fn written(&self) -> (Held, String) {
        let events = self.events.prefix(self.events.len() - self.folds.held());
        let head =
            (events.as_held().last()).map_or_else(|| CHAIN_START.to_string(), |e| e.hash.clone());
        (events, head)
    }

    /// Chain the event, keep it, and write it to the bundle at once, with
    /// the lines held before it. A model call that extends an earlier one
    /// is held compact and hashed over its compact line (unless the chain
    /// is [`Chain::Whole`]); any other event over its whole text.
    pub fn append(&mut self, event: Event) -> std::io::Result<()> {
        self.record(event, true)
    }

    /// [`append`](Self::append) an event the run makes again identically
    /// (a read), its line held until a line that must survive a kill,
    /// [`HELD_BYTES`], or the end.
    pub fn append_redoable(&mut self, event: Event) -> std::io::Result<()> {
        self.record(event, false)
    }

    /// [`append`](Self::append) (`now`) or
    /// [`append_redoable`](Self::append_redoable) a model call whose
    /// request is already compact as `x` says (decision 0392; see
    /// [`Held::push_extending`]): the same line and hash as the whole
    /// request would have. Only when [`Recorder::latest_chat`] is `Some`.
    pub fn append_extending(&mut self, event: Event, x: Extends, now: bool) -> std::io::Result<()> {
        self.record_as(event, Some(x), now)
    }

    /// The latest model call and how many messages its whole request has
    /// (see [`Held::latest_chat`]); `None` when the chain hashes whole
    /// requests (a replay of a bundle written before 0345), which a
    /// compact request cannot be hashed as.
    pub fn latest_chat(&self) -> Option<(u64, usize)> {
        (self.chain == Chain::Lines)
            .then(|| self.events.latest_chat())
            .flatten()
    }

    fn record(&mut self, event: Event, now: bool) -> std::io::Result<()> {
        self.record_as(event, None, now)
    }

    fn record_as(
        &mut self,
        mut event: Event,
        x: Option<Extends>,
        now: bool,
    ) -> std::io::Result<()> {
        event.hash.clear();
        let seq = self.events.len() as u64;
        let whole = (self.hashed && self.chain == Chain::Whole).then(|| canon::to_string(&event));
        match x {
            Some(x) => self.events.push_extending(event, x),
            None => self.events.push(event),
        }
        if !self.hashed {
            return Ok(());
        }
        // The line written, and the text hashed: the same one unless the
        // chain hashes a compact model call whole.
        let written = match (self.events.line(seq, self.chain), &whole) {
            (Some(line), _) => line,
            (None, Some(whole)) => whole.clone(),
            (None, None) => canon::to_string(self.events.get(seq).expect("just held")),
        };
        self.bytes += written.len() as u64 + super::size::LINE;
        let hash = chain_hash_of_text(&self.head, whole.as_deref().unwrap_or(&written));
        self.head.clone_from(&hash);
        self.events.set_hash(seq, hash);
        if self.sink.is_some() {
            let event = self.events.get(seq).expect("just held");
            let lines = self.folds.offer(event, || with_hash(&written, &event.hash));
            self.put(&lines, now)?;
        }
        Ok(())
    }

    /// Write the intent of the call about to be dispatched (after the
    /// clock reads held back, which come before it). In memory, nothing
    /// (and `intent` is not made).
    pub fn intend(&mut self, intent: impl FnOnce() -> Intent) -> std::io::Result<()> {
        if self.sink.is_some() {
            let mut lines = self.folds.flush();
            lines.push_str(&intent().line());
            self.put(&lines, true)?;
        }
        Ok(())
    }

    /// Hold `lines` after the lines held before, and write them all when
    /// `now`, when they pass [`HELD_BYTES`], when the recorder writes each
    /// line, or when the sink is a buffer.
    fn put(&mut self, lines: &str, now: bool) -> std::io::Result<()> {
        let Some(sink) = &mut self.sink else {
            return Ok(());
        };
        if let Sink::Buffer(_) = sink {
            return if lines.is_empty() {
                Ok(())
            } else {
                sink.write_all(lines.as_bytes())
            };
        }
        self.held.push_str(lines);
        if (now || self.each_line || self.held.len() >= HELD_BYTES) && !self.held.is_empty() {
            sink.write_all(self.held.as_bytes())?;
            self.held.clear();
            if let (true, Sink::File(file)) = (self.writeback, sink) {
                worldline_case::durable::start_writeback(file);
            }
        }
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.events.len() as u64
    }

    /// The bytes the events' lines take so far (the line hashed), each
    /// with [`super::size::LINE`] more for its hash and an intent before
    /// it: the same in memory, in a buffer and on disk, so a run and its
    /// replay meet the record's cap at the same call (decision 0421). An
    /// unhashed recorder (a campaign's trial) makes no lines and counts
    /// nothing.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Event `seq` as held ([`Held::get`]).
    pub fn get(&self, seq: u64) -> Option<&Event> {
        self.events.get(seq)
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
    /// back written to it first; none when recording to memory or to a
    /// buffer), the events (held compact) and the chain's last hash.
    pub fn finish(mut self) -> std::io::Result<(Option<File>, Held, String)> {
        let lines = self.folds.flush();
        self.put(&lines, true)?;
        let file = match self.sink.take() {
            Some(Sink::File(f)) => Some(f),
            _ => None,
        };
        Ok((
            file,
            std::mem::take(&mut self.events),
            std::mem::take(&mut self.head),
        ))
    }
}

/// A recorder dropped without [`finish`](Recorder::finish) (a run that
/// stopped on an error) still writes the lines it held.
impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.put("", true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::Effect;
    use serde_json::json;

    fn read(seq: u64) -> Event {
        Event {
            call: crate::log::Kind::ToolsCall.name().into(),
            effect: Effect::Read,
            fuel: 10 + seq,
            hash: String::new(),
            injected: None,
            request: json!({"name": "get", "args": {"n": seq}}),
            response: json!({"ok": seq}),
            seq,
            vtime_ns: seq,
            writes: vec![],
        }
    }

    #[test]
    fn held_lines_wait_for_one_that_must_survive_a_kill_and_are_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let len = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
        let mut each = Recorder::to_file(File::create(&a).unwrap());
        let mut held = Recorder::to_file(File::create(&b).unwrap());
        for seq in 0..3 {
            each.append(read(seq)).unwrap();
            held.append_redoable(read(seq)).unwrap();
        }
        assert!(len(&a) > 0);
        assert_eq!(len(&b), 0, "three reads held");
        each.append(read(3)).unwrap();
        held.append(read(3)).unwrap();
        assert_eq!(len(&b), len(&a), "written with the fourth");
        held.append_redoable(read(4)).unwrap();
        drop(held);
        each.append(read(4)).unwrap();
        drop(each.finish().unwrap());
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "a dropped recorder writes what it held"
        );
    }

    /// A recorder that starts its file's writeback after each write
    /// writes the same bytes at the same moments.
    #[test]
    fn writing_back_changes_no_byte_nor_when_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let len = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
        let mut plain = Recorder::to_file(File::create(&a).unwrap());
        let mut back = Recorder::to_file(File::create(&b).unwrap()).writing_back();
        for seq in 0..400 {
            plain.append_redoable(read(seq)).unwrap();
            back.append_redoable(read(seq)).unwrap();
            assert_eq!(len(&a), len(&b), "after event {seq}");
        }
        assert!(len(&a) >= HELD_BYTES as u64, "written as it went");
        plain.append(read(400)).unwrap();
        back.append(read(400)).unwrap();
        drop((plain.finish().unwrap(), back.finish().unwrap()));
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    }

    /// An unhashed recorder holds the events a hashing one holds, each
    /// without its hash, and ends with no chain hash.
    #[test]
    fn an_unhashed_recorder_holds_the_same_events_without_hashes() {
        let mut hashed = Recorder::in_memory();
        let mut unhashed = Recorder::unhashed();
        for seq in 0..5 {
            hashed.append(read(seq)).unwrap();
            unhashed.append_redoable(read(seq)).unwrap();
        }
        let (_, hashed, head) = hashed.finish().unwrap();
        let (_, unhashed, none) = unhashed.finish().unwrap();
        assert_eq!(head.len(), 64);
        assert_eq!(none, "");
        assert_eq!(hashed.len(), unhashed.len());
        for (h, u) in hashed.as_held().iter().zip(unhashed.as_held()) {
            assert!(!h.hash.is_empty());
            assert!(u.hash.is_empty());
            assert_eq!(
                Event {
                    hash: String::new(),
                    ..h.clone()
                },
                *u
            );
        }
    }

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
