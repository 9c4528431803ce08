//! A native process's stdout and stderr, read as they come: the first
//! `limit` bytes kept (the rest dropped and counted, as a guest's are, the
//! last of them kept apart as a guest's stderr's are),
//! and for stdout the last line that is a JSON value, which is the run's
//! output. A line is considered only up to `limit` bytes, so memory stays
//! bounded whatever the process writes. A run stops reading when it ends
//! ([`read_until`]), whoever still holds the pipe's other end.

use std::io::{ErrorKind, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use worldline_runtime::mediate::stdio::Tail;

/// What was read from one pipe.
#[derive(Debug, Default)]
pub(crate) struct Captured {
    pub kept: Vec<u8>,
    pub dropped: u64,
    /// The last bytes dropped.
    pub tail: Tail,
    /// The last complete line that parsed as JSON (trimmed).
    pub last_json: Option<String>,
    /// The stream's last line was longer than `limit`, so not read: an
    /// answer there would be lost (an earlier JSON line taken for it).
    pub last_line_too_long: bool,
}

/// Read `pipe` to its end.
pub(crate) fn read(mut pipe: impl Read, limit: usize) -> Captured {
    let mut c = Collector::new(limit);
    let mut buf = [0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => c.push(&buf[..n]),
        }
    }
    c.finish()
}

/// Read `pipe` to its end, or, once `stop` is set, to what it holds then:
/// a process outside the run that kept the pipe's other end open cannot
/// hold the run past its end.
pub(crate) fn read_until(pipe: impl Into<OwnedFd>, limit: usize, stop: &AtomicBool) -> Captured {
    let fd: OwnedFd = pipe.into();
    let raw = fd.as_raw_fd();
    // SAFETY: setting O_NONBLOCK on a descriptor owned here.
    let nonblocking = unsafe {
        let flags = libc::fcntl(raw, libc::F_GETFL);
        flags >= 0 && libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    let mut pipe = std::fs::File::from(fd);
    if !nonblocking {
        return read(pipe, limit);
    }
    let mut c = Collector::new(limit);
    let mut buf = [0u8; 16 * 1024];
    // Once stopped, what is still coming is read for a moment at most.
    let mut drained_by: Option<Instant> = None;
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                c.push(&buf[..n]);
                if stop.load(Ordering::SeqCst)
                    && Instant::now() > *drained_by.get_or_insert_with(|| Instant::now() + DRAIN)
                {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let mut ready = libc::pollfd {
                    fd: raw,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one pollfd on the stack, for a descriptor owned here.
                unsafe {
                    libc::poll(&mut ready, 1, POLL_MS);
                }
            }
            Err(_) => break,
        }
    }
    c.finish()
}

/// How long a read waits for bytes before it looks at `stop` again.
const POLL_MS: libc::c_int = 20;

/// How long a pipe still being written is read once `stop` is set.
const DRAIN: Duration = Duration::from_millis(200);

/// What has been read so far.
struct Collector {
    out: Captured,
    limit: usize,
    line: Vec<u8>,
    line_too_long: bool,
}

impl Collector {
    fn new(limit: usize) -> Self {
        Collector {
            out: Captured::default(),
            limit,
            line: Vec::new(),
            line_too_long: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        let n = chunk.len();
        let keep = self.limit.saturating_sub(self.out.kept.len()).min(n);
        self.out.kept.extend_from_slice(&chunk[..keep]);
        self.out.tail.push(&chunk[keep..]);
        self.out.dropped += (n - keep) as u64;
        for piece in chunk.split_inclusive(|b| *b == b'\n') {
            let ends = piece.last() == Some(&b'\n');
            if !self.line_too_long {
                if self.line.len() + piece.len() > self.limit + 1 {
                    self.line_too_long = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(piece);
                }
            }
            if ends {
                if !self.line_too_long {
                    note_line(&self.line, &mut self.out.last_json);
                }
                self.note_last(self.line_too_long);
                self.line.clear();
                self.line_too_long = false;
            }
        }
    }

    /// A line ended: whether it was too long, unless it was blank (a
    /// trailing blank line is not the stream's last).
    fn note_last(&mut self, too_long: bool) {
        if too_long || !self.line.trim_ascii().is_empty() {
            self.out.last_line_too_long = too_long;
        }
    }

    fn finish(mut self) -> Captured {
        if !self.line_too_long {
            note_line(&self.line, &mut self.out.last_json);
        }
        self.note_last(self.line_too_long);
        self.out
    }
}

/// `line`, when it is JSON, as the last JSON line. A byte-order mark
/// before it is not part of it, and JSON nested deeper than the parser
/// reads (128) is JSON all the same (a guest's output of that depth is
/// taken): both made the line no output, and an earlier line the answer.
fn note_line(line: &[u8], last: &mut Option<String>) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim().trim_start_matches('\u{feff}');
    let json = match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) => true,
        Err(e) => e.to_string().starts_with("recursion limit exceeded") && balanced(text),
    };
    if !text.is_empty() && json {
        *last = Some(text.to_string());
    }
}

/// Whether `text`'s brackets and braces close, each as it opened, outside
/// its strings: a line past the parser's depth is taken for JSON only
/// then (200 `[` and nothing after were).
fn balanced(text: &str) -> bool {
    let (mut open, mut in_string, mut escaped) = (Vec::new(), false, false);
    for c in text.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (true, false, '"') => in_string = false,
            (true, false, _) => {}
            (false, _, '"') => in_string = true,
            (false, _, '[' | '{') => open.push(c),
            (false, _, ']') if open.pop() != Some('[') => return false,
            (false, _, '}') if open.pop() != Some('{') => return false,
            _ => {}
        }
    }
    open.is_empty() && !in_string
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A last line that is JSON is the output though a byte-order mark
    /// comes before it or it is nested past the parser's depth (an
    /// earlier JSON line was taken for the output, unsaid).
    #[test]
    fn a_json_line_behind_a_bom_or_nested_deep_is_the_output() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let text = format!("{{\"first\": true}}\n{deep}\n");
        assert_eq!(
            read(text.as_bytes(), 10_000).last_json.as_deref(),
            Some(&deep[..])
        );
        let text = "{\"first\": true}\n\u{feff}{\"answer\": 1}\n";
        assert_eq!(
            read(text.as_bytes(), 100).last_json.as_deref(),
            Some("{\"answer\": 1}")
        );
        let unclosed = format!("{{\"first\": true}}\n{}\n", "[".repeat(200));
        assert_eq!(
            read(unclosed.as_bytes(), 10_000).last_json.as_deref(),
            Some("{\"first\": true}")
        );
        let broken = "{\"first\": true}\n{\"answer\": \n";
        assert_eq!(
            read(broken.as_bytes(), 100).last_json.as_deref(),
            Some("{\"first\": true}")
        );
    }

    #[test]
    fn keeps_the_first_bytes_and_the_last_json_line() {
        let text = b"starting\n{\"a\": 1}\nlog line\n{\"cause\": \"D-42\"}\ntrailing words";
        let c = read(&text[..], 20);
        assert_eq!(c.kept, &text[..20]);
        assert_eq!(c.dropped, (text.len() - 20) as u64);
        assert_eq!(c.last_json.as_deref(), Some("{\"cause\": \"D-42\"}"));
        let c = read(&b"{\"x\": 2}"[..], 100);
        assert_eq!(c.last_json.as_deref(), Some("{\"x\": 2}"));
        assert!(!c.last_line_too_long);
        // A last line too long to read: the earlier JSON line is no answer.
        let long = format!(
            "{{\"progress\": 1}}\n{{\"answer\": \"{}\"}}\n\n",
            "x".repeat(64)
        );
        let c = read(long.as_bytes(), 40);
        assert!(c.last_line_too_long);
        let c = read(format!("{long}done\n").as_bytes(), 40);
        assert!(!c.last_line_too_long);
    }

    #[test]
    fn a_pipe_someone_still_holds_is_read_to_what_it_holds_once_stopped() {
        use std::io::Write;
        let (reader, mut writer) = std::io::pipe().unwrap();
        writer.write_all(b"{\"done\": true}\n").unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let read = std::thread::spawn(move || read_until(reader, 100, &stopped));
        std::thread::sleep(Duration::from_millis(60));
        stop.store(true, Ordering::SeqCst);
        let c = read.join().unwrap();
        assert_eq!(c.last_json.as_deref(), Some("{\"done\": true}"));
        drop(writer);
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
