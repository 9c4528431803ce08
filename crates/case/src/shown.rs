//! Text that came from an input (a trace, a report, a document, a
//! command-line argument) made safe to show or to name a file with: control
//! characters (terminal escape sequences among them) and the characters
//! that reorder text are written as `\u{..}`, long text is cut, long lists
//! say how many were left out, and a file name keeps only letters, digits,
//! `-` and `_`. Every message or file name built from input goes through
//! here.

/// The most characters of one input string shown.
pub const MAX_CHARS: usize = 200;
/// The most items of a list shown.
pub const MAX_ITEMS: usize = 10;

/// Whether `c` must not reach a terminal as it is: C0 and C1 controls,
/// DEL, and the bidirectional overrides and isolates that reorder text.
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every unsafe character escaped, at most [`MAX_CHARS`]
/// characters of it (then `…`).
pub fn text(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == MAX_CHARS {
            out.push('…');
            break;
        }
        if unsafe_char(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// A whole message (which may hold lines and tabs of its own) with every
/// other unsafe character escaped; not cut.
pub fn message(s: &str) -> String {
    if !s.chars().any(|c| unsafe_char(c) && c != '\n' && c != '\t') {
        return s.to_string();
    }
    s.chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if unsafe_char(c) => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// `s` as one field of a report's line: each line break written `\n`, so
/// that text a run recorded (an agent's error, its output, a tool's
/// answer) cannot begin a line of the report's own, such as a forged
/// `PASS` line in a suite's report. The other controls are escaped where
/// the report is written ([`Escaped`]).
pub fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains('\n') {
        s.replace('\n', "\\n").into()
    } else {
        s.into()
    }
}

/// At most [`MAX_ITEMS`] of `items`, each through [`text`], joined with
/// `, `, then how many more there are.
pub fn list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let mut shown = Vec::new();
    let mut more = 0usize;
    for item in items {
        if shown.len() < MAX_ITEMS {
            shown.push(text(item.as_ref()));
        } else {
            more += 1;
        }
    }
    let mut out = shown.join(", ");
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    out
}

/// A part of a file name made from `s`: its ASCII letters and digits, `-`
/// and `_` (anything else dropped), at most `max` of them; `None` when
/// nothing is left.
pub fn file_part(s: &str, max: usize) -> Option<String> {
    let part: String = s
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .take(max)
        .collect();
    (!part.is_empty()).then_some(part)
}

/// A writer that escapes, on their way to `W`, what [`message`] escapes:
/// for a report whose lines carry text a run recorded (an agent's tool
/// names, notes and errors), so that none of it reaches a terminal as a
/// control sequence, however the report builds its lines.
pub struct Escaped<W: std::io::Write> {
    inner: W,
    /// The start of a character a write cut off, kept for the next.
    tail: Vec<u8>,
}

impl<W: std::io::Write> Escaped<W> {
    pub fn new(inner: W) -> Self {
        Escaped {
            inner,
            tail: Vec::new(),
        }
    }
}

impl<W: std::io::Write> std::io::Write for Escaped<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut bytes = std::mem::take(&mut self.tail);
        bytes.extend_from_slice(buf);
        let mut out = Vec::with_capacity(bytes.len());
        let mut chunks = bytes.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            for c in chunk.valid().chars() {
                match c {
                    '\n' | '\t' => out.push(c as u8),
                    c if unsafe_char(c) => {
                        out.extend_from_slice(c.escape_unicode().to_string().as_bytes())
                    }
                    c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                }
            }
            // Bytes that are not UTF-8 are no character a terminal reads
            // as a control, but a character's start at the very end may
            // be one, cut: it waits for the rest.
            let invalid = chunk.invalid();
            let last = chunks.peek().is_none();
            if last && !invalid.is_empty() && invalid.len() < 4 && invalid[0] >= 0xc2 {
                self.tail = invalid.to_vec();
            } else {
                out.extend_from_slice(invalid);
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let tail = std::mem::take(&mut self.tail);
        self.inner.write_all(&tail)?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_bidi_overrides_are_written_out() {
        assert_eq!(text("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(text("x\u{202e}y\u{9b}"), "x\\u{202e}y\\u{9b}");
        assert_eq!(text("line\nnext"), "line\\u{a}next");
        assert_eq!(message("one\ntwo\u{7}"), "one\ntwo\\u{7}");
        assert_eq!(text("héllo"), "héllo");
    }

    #[test]
    fn an_escaped_writer_escapes_what_a_message_does_even_cut_between_writes() {
        use std::io::Write as _;
        let mut out = Escaped::new(Vec::new());
        write!(out, "tool `list\u{1b}]0;PWNED\u{7}` é\tok\r\n").unwrap();
        // U+009B (CSI) cut between two writes, then bytes that are no UTF-8.
        out.write_all(&[b'a', 0xc2]).unwrap();
        out.write_all(&[0x9b, b'b', 0xff, b'\n']).unwrap();
        out.flush().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.inner),
            "tool `list\\u{1b}]0;PWNED\\u{7}` é\tok\\u{d}\na\\u{9b}b\u{fffd}\n"
        );
    }

    #[test]
    fn long_text_and_long_lists_are_cut() {
        let long = "x".repeat(1000);
        assert_eq!(text(&long).chars().count(), MAX_CHARS + 1);
        let many: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
        let l = list(&many);
        assert!(l.ends_with("and 99990 more"), "{l}");
        assert!(l.len() < 100);
    }

    #[test]
    fn file_parts_keep_only_safe_characters() {
        assert_eq!(file_part("../../x/", 8).as_deref(), Some("x"));
        assert_eq!(file_part("ééééé", 8), None);
        assert_eq!(
            file_part("0123456789abcdef", 8).as_deref(),
            Some("01234567")
        );
        assert_eq!(file_part("a/b\\c.d", 8).as_deref(), Some("abcd"));
    }
}
