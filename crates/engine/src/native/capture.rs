//! A native process's stdout and stderr, read as they come: the first
//! `limit` bytes kept (the rest dropped and counted, as a guest's are),
//! and for stdout the last line that is a JSON value, which is the run's
//! output. A line is considered only up to `limit` bytes, so memory stays
//! bounded whatever the process writes.

use std::io::Read;

/// What was read from one pipe.
#[derive(Debug, Default)]
pub struct Captured {
    pub kept: Vec<u8>,
    pub dropped: u64,
    /// The last complete line that parsed as JSON (trimmed).
    pub last_json: Option<String>,
}

/// Read `pipe` to its end.
pub fn read(mut pipe: impl Read, limit: usize) -> Captured {
    let mut out = Captured::default();
    let mut line: Vec<u8> = Vec::new();
    let mut line_too_long = false;
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let keep = limit.saturating_sub(out.kept.len()).min(n);
        out.kept.extend_from_slice(&chunk[..keep]);
        out.dropped += (n - keep) as u64;
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            let ends = piece.last() == Some(&b'\n');
            if !line_too_long {
                if line.len() + piece.len() > limit + 1 {
                    line_too_long = true;
                    line.clear();
                } else {
                    line.extend_from_slice(piece);
                }
            }
            if ends {
                if !line_too_long {
                    note_line(&line, &mut out.last_json);
                }
                line.clear();
                line_too_long = false;
            }
        }
    }
    if !line_too_long {
        note_line(&line, &mut out.last_json);
    }
    out
}

fn note_line(line: &[u8], last: &mut Option<String>) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if !text.is_empty() && serde_json::from_str::<serde_json::Value>(text).is_ok() {
        *last = Some(text.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_bytes_and_the_last_json_line() {
        let text = b"starting\n{\"a\": 1}\nlog line\n{\"cause\": \"D-42\"}\ntrailing words";
        let c = read(&text[..], 20);
        assert_eq!(c.kept, &text[..20]);
        assert_eq!(c.dropped, (text.len() - 20) as u64);
        assert_eq!(c.last_json.as_deref(), Some("{\"cause\": \"D-42\"}"));
        let c = read(&b"{\"x\": 2}"[..], 100);
        assert_eq!(c.last_json.as_deref(), Some("{\"x\": 2}"));
    }

    #[test]
    fn a_line_past_the_limit_is_not_the_output() {
        let mut text = b"{\"ok\": true}\n".to_vec();
        text.extend(std::iter::repeat_n(b'[', 5000));
        text.extend(b"\n");
        let c = read(&text[..], 64);
        assert_eq!(c.last_json.as_deref(), Some("{\"ok\": true}"));
    }
}
