//! A model request read against the bytes of the one before (decision
//! 0392). An agent on a chat API sends its whole conversation at every
//! call; the host keeps the text of the latest request sent through
//! `model.complete` and where each of its messages ends. A new request
//! whose bytes up to the end of that one's last message are the same, and
//! whose bytes from its message list's `]` on are the same too, is that
//! request with messages appended: only those are parsed (two `memcmp`s
//! and the appended bytes, not the whole conversation), and it is recorded
//! and compared compact. Anything else (another conversation, an edited
//! message or field, text the scan does not follow) is parsed whole, as
//! before; the scan only has to be right about text that serde_json reads.

use serde_json::{Map, Value};

/// The latest request the agent sent through `model.complete`, as text.
pub(crate) struct Last {
    /// The model call it was recorded as.
    pub(crate) seq: u64,
    text: String,
    /// The offset just after each message of its `messages`.
    ends: Vec<usize>,
    /// The offset of its message list's `]`.
    close: usize,
    /// Its fields but `messages`, parsed.
    pub(crate) fields: Map<String, Value>,
}

/// Where a resent request's appended messages end and its list closes.
pub(crate) struct Tail {
    ends: Vec<usize>,
    close: usize,
}

impl Last {
    /// The request `text`, parsed as `chat`, recorded as model call `seq`;
    /// `None` when it is not an object with one `messages` list the scan
    /// follows.
    pub(crate) fn of(seq: u64, text: String, chat: &Value) -> Option<Last> {
        let obj = chat.as_object()?;
        let (ends, close) = scan(text.as_bytes())?;
        if ends.len() != obj.get("messages")?.as_array()?.len() {
            return None;
        }
        let fields = (obj.iter())
            .filter(|(k, _)| *k != "messages")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(Last {
            seq,
            text,
            ends,
            close,
            fields,
        })
    }

    /// How many messages it has.
    pub(crate) fn count(&self) -> usize {
        self.ends.len()
    }

    /// `text` read against this request: the messages it appended when it
    /// is the same bytes but for messages added at the end of the list
    /// (at least one message kept).
    pub(crate) fn resent(&self, text: &str) -> Option<(Vec<Value>, Tail)> {
        let (old, new) = (self.text.as_bytes(), text.as_bytes());
        let &end = self.ends.last()?;
        if new.get(..end)? != &old[..end] {
            return None;
        }
        let mut at = end;
        let mut ends = Vec::new();
        let mut appended = Vec::new();
        loop {
            at = ws(new, at);
            match new.get(at)? {
                b']' => break,
                b',' => {
                    let start = ws(new, at + 1);
                    let stop = skip(new, start)?;
                    appended.push(serde_json::from_str(&text[start..stop]).ok()?);
                    ends.push(stop);
                    at = stop;
                }
                _ => return None,
            }
        }
        if new[at..] != old[self.close..] {
            return None;
        }
        Some((appended, Tail { ends, close: at }))
    }

    /// The latest request is now `text` (read by [`Last::resent`] as
    /// `tail`), recorded as model call `seq`.
    pub(crate) fn advance(&mut self, seq: u64, text: String, tail: Tail) {
        self.seq = seq;
        self.text = text;
        self.ends.extend(tail.ends);
        self.close = tail.close;
    }
}

/// Deeper than this, the scan gives up (serde_json's own limit is 128
/// levels; a message read alone must not parse where the whole would not).
const DEPTH: usize = 100;

fn ws(b: &[u8], mut at: usize) -> usize {
    while matches!(b.get(at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        at += 1;
    }
    at
}

/// The end of the string starting at `at` (its `"`).
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The end of the JSON value starting at `at` (no leading whitespace).
fn skip(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at)? {
        b'"' => string_end(b, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match b.get(i)? {
                    b'"' => i = string_end(b, i)?,
                    b'{' | b'[' => {
                        depth += 1;
                        if depth > DEPTH {
                            return None;
                        }
                        i += 1;
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        i += 1;
                        if depth == 0 {
                            return Some(i);
                        }
                    }
                    _ => i += 1,
                }
            }
        }
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t')
            {
                i += 1;
            }
            (i > at).then_some(i)
        }
    }
}

/// In a request's text (valid JSON): the ends of its `messages` list's
/// elements and the list's `]`, when it is an object whose keys the scan
/// reads as written (no escapes) with one `messages` list.
fn scan(b: &[u8]) -> Option<(Vec<usize>, usize)> {
    let mut at = ws(b, 0);
    if b.get(at)? != &b'{' {
        return None;
    }
    at = ws(b, at + 1);
    let mut found = None;
    while b.get(at)? != &b'}' {
        let key_end = string_end(b, at)?;
        let key = &b[at + 1..key_end - 1];
        if key.contains(&b'\\') {
            return None;
        }
        at = ws(b, key_end);
        if b.get(at)? != &b':' {
            return None;
        }
        at = ws(b, at + 1);
        if key == b"messages" {
            if found.is_some() || b.get(at)? != &b'[' {
                return None;
            }
            let (ends, close) = elements(b, at)?;
            found = Some((ends, close));
            at = close + 1;
        } else {
            at = skip(b, at)?;
        }
        at = ws(b, at);
        match b.get(at)? {
            b',' => at = ws(b, at + 1),
            b'}' => {}
            _ => return None,
        }
    }
    (ws(b, at + 1) == b.len()).then_some(found).flatten()
}

/// The ends of the elements of the list opening at `open`, and its `]`.
fn elements(b: &[u8], open: usize) -> Option<(Vec<usize>, usize)> {
    let mut ends = Vec::new();
    let mut at = ws(b, open + 1);
    if b.get(at)? == &b']' {
        return Some((ends, at));
    }
    loop {
        let end = skip(b, at)?;
        ends.push(end);
        at = ws(b, end);
        match b.get(at)? {
            b',' => at = ws(b, at + 1),
            b']' => return Some((ends, at)),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn last(text: &str) -> Option<Last> {
        Last::of(3, text.to_string(), &serde_json::from_str(text).unwrap())
    }

    #[test]
    fn a_request_that_appends_messages_is_read_by_what_it_appended() {
        let a = r#"{"model":"m","messages":[{"role":"user","content":"a]\"}"}],"tools":[{"name":"t"}]}"#;
        let l = last(a).unwrap();
        assert_eq!((l.count(), l.fields.len()), (1, 2));
        let b = r#"{"model":"m","messages":[{"role":"user","content":"a]\"}"}, {"role":"tool","content":"[{"} ,"x"],"tools":[{"name":"t"}]}"#;
        let (appended, tail) = l.resent(b).unwrap();
        assert_eq!(
            appended,
            vec![json!({"role": "tool", "content": "[{"}), json!("x")]
        );
        let mut l = l;
        l.advance(5, b.to_string(), tail);
        assert_eq!((l.seq, l.count()), (5, 3));
        // What the scan of the whole would find.
        assert_eq!(l.ends, last(b).unwrap().ends);
        assert_eq!(l.close, last(b).unwrap().close);
    }

    #[test]
    fn anything_but_messages_appended_is_read_whole() {
        let a = r#"{"model":"m","messages":[{"role":"user","content":"ab"}],"n":1}"#;
        let l = last(a).unwrap();
        // The same request, nothing appended: read, with none.
        let same = r#"{"model":"m","messages":[{"role":"user","content":"ab"}],"n":1}"#;
        assert!(l.resent(same).unwrap().0.is_empty());
        for b in [
            // An early message's middle byte changed.
            r#"{"model":"m","messages":[{"role":"user","content":"aX"}],"n":1}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"ab"},{"x":1}],"n":2}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"ab"},{"x":1}],"n":1,"o":1}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"ab"},{"x":]],"n":1}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"ab"}{"x":1}],"n":1}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"ab"}"#,
            r#"{"model":"m","messages":[{"role":"user","content":"ab""#,
            "",
        ] {
            assert!(l.resent(b).is_none(), "{b}");
        }
        // Requests the scan does not follow are not kept.
        for a in [
            r#"{"messages":[],"messages":[{"x":1}]}"#,
            r#"{"m\u0065ssages":[{"x":1}]}"#,
            r#"{"messages":{"x":1}}"#,
            r#"[1]"#,
            r#"{"model":"m"}"#,
        ] {
            assert!(last(a).is_none(), "{a}");
        }
        let deep = format!(
            r#"{{"messages":[{}1{}]}}"#,
            "[".repeat(DEPTH + 1),
            "]".repeat(DEPTH + 1)
        );
        assert!(last(&deep).is_none());
        assert!(last(r#" { "messages" : [ 1 , "x" ] , "a" : null } "#).is_some());
    }
}
