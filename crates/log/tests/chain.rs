//! Decision 0345: a model call written compact (`extends`) is chained over
//! its line as written, so recording it costs the delta; the reader checks
//! it the same way, puts the whole request back, and still reads a bundle
//! whose compact lines were hashed whole (before 0345); a changed byte in
//! any message, kept or appended, breaks the chain.

#[path = "support/valid_bundle.rs"]
mod valid_bundle;

use serde_json::{Value, json};
use std::path::Path;
use worldline_log::log::bundle;
use worldline_log::log::recorder::{CHAIN_START, chain_hash, chain_hash_of_text};
use worldline_log::log::{Chain, Effect, Event, Held, Recorder};

const CALLS: u64 = 6;

/// The `i`th model call of a conversation that appends a tool result per
/// call, its text `i` repeated.
fn call(i: u64) -> Event {
    let mut messages = vec![json!({"role": "user", "content": "read them all"})];
    for k in 0..i {
        messages.push(json!({"role": "assistant", "content": format!("call {k}")}));
        messages.push(json!({"role": "tool", "content": k.to_string().repeat(40)}));
    }
    Event {
        call: "worldline:agent/model.complete".into(),
        effect: Effect::Read,
        fuel: 10 * i,
        hash: String::new(),
        injected: None,
        request: json!({"provider": "scripted", "request": {"model": "m", "messages": messages}}),
        response: json!({"ok": {"choices": [{"message": {"content": format!("reply {i}")}}]}}),
        seq: i,
        vtime_ns: i,
        writes: vec![],
    }
}

/// A bundle of [`CALLS`] model calls chained as `chain` says: its text
/// and the events as recorded.
fn record(chain: Chain) -> (String, Vec<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.jsonl");
    let valid = String::from_utf8(valid_bundle::valid_bundle(0)).unwrap();
    let header = valid.lines().next().unwrap();
    std::fs::write(&path, format!("{header}\n")).unwrap();
    let file = std::fs::File::options().append(true).open(&path).unwrap();
    let mut rec = Recorder::to_file(file).chained(chain);
    for i in 0..CALLS {
        rec.append(call(i)).unwrap();
    }
    let (_, events, _) = rec.finish().unwrap();
    (
        std::fs::read_to_string(&path).unwrap(),
        events.whole().into_owned(),
    )
}

fn parse(text: &str) -> Result<bundle::Bundle, bundle::BundleError> {
    bundle::parse(text.as_bytes(), Path::new("b.jsonl"))
}

/// The line of event `seq` without its hash, as canonical text.
fn bare_line(text: &str, seq: usize) -> String {
    let mut v: Value = serde_json::from_str(text.lines().nth(1 + seq).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("hash");
    serde_json::to_string(&v).unwrap()
}

#[test]
fn a_compact_call_is_chained_over_its_line_and_reads_back_whole() {
    let (text, events) = record(Chain::Lines);
    let compact: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"extends\":"))
        .collect();
    assert_eq!(compact.len() as u64, CALLS - 1, "{text}");
    assert!(
        compact
            .iter()
            .all(|l| l.contains("\"extends\":{\"chained\":\"line\",")),
        "{text}"
    );
    // The hash covers the line (the delta), not the whole event.
    let mut prev = CHAIN_START.to_string();
    for (i, e) in events.iter().enumerate() {
        let expected = chain_hash_of_text(&prev, &bare_line(&text, i));
        assert_eq!(e.hash, expected, "event {i}");
        if i > 0 {
            assert_ne!(e.hash, chain_hash(&prev, e), "event {i} hashed whole");
        }
        prev.clone_from(&e.hash);
    }
    let b = parse(&text).unwrap();
    assert_eq!(b.chain, Chain::Lines);
    assert_eq!(b.events, events);
    let last = b.events.last().unwrap();
    assert_eq!(last.request, call(CALLS - 1).request, "the whole request");
    assert_eq!(bundle::to_text(&b), text, "written again byte for byte");
}

#[test]
fn a_bundle_hashed_whole_before_0345_still_reads_and_writes_the_same() {
    let (text, events) = record(Chain::Whole);
    assert!(text.contains("\"extends\":{\"event\":"), "{text}");
    assert!(!text.contains("chained"), "{text}");
    let mut prev = CHAIN_START.to_string();
    for e in &events {
        assert_eq!(e.hash, chain_hash(&prev, e));
        prev.clone_from(&e.hash);
    }
    let b = parse(&text).unwrap();
    assert_eq!(b.chain, Chain::Whole);
    assert_eq!(b.events, events);
    assert_eq!(bundle::to_text(&b), text);
}

#[test]
fn a_changed_message_kept_or_appended_breaks_the_chain() {
    let (text, _) = record(Chain::Lines);
    // Appended by the last call: its own line.
    let last = (CALLS - 2).to_string().repeat(40);
    let changed = text.replace(&last, &"x".repeat(40));
    let e = parse(&changed).unwrap_err();
    assert!(
        e.message
            .contains(&format!("hash chain broken at event {}", CALLS - 1)),
        "{e}"
    );
    // Kept from the first call by every later one: the first call's line.
    let changed = text.replacen("read them all", "read them none", 1);
    let e = parse(&changed).unwrap_err();
    assert!(e.message.contains("hash chain broken at event 0"), "{e}");
    assert_eq!(e.line, 2);
}

#[test]
fn a_compact_line_stripped_of_its_mark_is_refused() {
    let (text, _) = record(Chain::Lines);
    let lines: Vec<&str> = text.lines().collect();
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        // The third line (event 1) loses its mark: hashed whole, it breaks.
        let l = if i == 2 {
            l.replace("\"chained\":\"line\",", "")
        } else {
            l.to_string()
        };
        out.push_str(&l);
        out.push('\n');
    }
    let e = parse(&out).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    // The mark with another value.
    let odd = text.replacen("\"chained\":\"line\"", "\"chained\":\"all\"", 1);
    let e = parse(&odd).unwrap_err();
    assert!(e.message.contains("extends.chained"), "{e}");
}

/// Decision 0358: a fork server's branch sends only the lines it wrote
/// after the prefix; its parent reads them on from the prefix's events
/// (`Recorder::written`), compact model calls expanded against the
/// prefix, and the chain checked from the prefix's last hash. A changed
/// byte, or lines read on from another prefix, is refused.
#[test]
fn a_continuation_is_read_on_from_its_prefix() {
    let buffer = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut rec = Recorder::to_buffer(buffer.clone());
    for i in 0..3 {
        rec.append(call(i)).unwrap();
    }
    let (prefix, head) = rec.written();
    assert_eq!(head, prefix.as_held().last().unwrap().hash);
    let cut = buffer.lock().unwrap().len();
    for i in 3..CALLS {
        rec.append(call(i)).unwrap();
    }
    let (file, events, _) = rec.finish().unwrap();
    assert!(file.is_none(), "a buffer is not a file");
    let suffix = buffer.lock().unwrap()[cut..].to_vec();
    assert!(
        String::from_utf8_lossy(&suffix).contains("\"extends\""),
        "the continuation's model calls are written compact"
    );
    let path = Path::new("(branch 0 of 1)");
    let (all, footer) = bundle::continued(prefix.clone(), &suffix, path).unwrap();
    assert_eq!(all.whole(), events.whole());
    assert!(footer.is_none());

    let mut changed = suffix.clone();
    let at = changed.iter().rposition(|&b| b == b'5').unwrap();
    changed[at] = b'6';
    let err = bundle::continued(prefix.clone(), &changed, path).unwrap_err();
    assert!(err.to_string().contains("hash chain broken"), "{err}");
    let shorter = Held::from_whole(prefix.whole()[..2].to_vec());
    let err = bundle::continued(shorter, &suffix, path).unwrap_err();
    assert!(err.to_string().starts_with("(branch 0 of 1):1: "), "{err}");
}
