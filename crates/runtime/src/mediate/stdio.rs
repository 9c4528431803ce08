//! Captured stdout and stderr, bounded: past the limit further bytes are
//! dropped and counted, and the stream stays open, so an agent that logs
//! too much keeps running (fuel still bounds a print loop). Host memory is
//! bounded by the limit, itself capped when a case is loaded. Of stderr
//! the last [`TAIL_BYTES`] dropped are kept too ([`Tail`]), so what a dying
//! agent printed last, its traceback, survives a flood of logs before it
//! (decision 0040, amended).

pub(crate) struct Capture {
    pub bytes: Vec<u8>,
    pub limit: usize,
    pub dropped: u64,
    /// For stderr: the last bytes dropped.
    pub tail: Option<Tail>,
}

impl Capture {
    /// How many more bytes are kept.
    pub(crate) fn room(&self) -> usize {
        self.limit.saturating_sub(self.bytes.len())
    }

    /// Keep what fits; returns how many bytes were dropped.
    pub(crate) fn push(&mut self, data: &[u8]) -> u64 {
        let keep = self.room().min(data.len());
        self.bytes.extend_from_slice(&data[..keep]);
        if let Some(tail) = &mut self.tail {
            tail.push(&data[keep..]);
        }
        let dropped = (data.len() - keep) as u64;
        self.dropped += dropped;
        dropped
    }

    /// What was kept, and after it, when bytes were dropped, the tail.
    pub(crate) fn text(&self) -> String {
        match &self.tail {
            Some(tail) => with_tail(&self.bytes, self.dropped, tail.bytes()),
            None => String::from_utf8_lossy(&self.bytes).into_owned(),
        }
    }
}

/// How many of the last bytes a stream dropped past its limit [`Tail`]
/// keeps.
pub const TAIL_BYTES: usize = 16 * 1024;

/// The last [`TAIL_BYTES`] of what a stream dropped; memory stays within
/// twice that.
#[derive(Default, Debug)]
pub struct Tail {
    bytes: Vec<u8>,
}

impl Tail {
    pub fn push(&mut self, dropped: &[u8]) {
        self.bytes.extend_from_slice(dropped);
        if self.bytes.len() > 2 * TAIL_BYTES {
            self.bytes.drain(..self.bytes.len() - TAIL_BYTES);
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes[self.bytes.len().saturating_sub(TAIL_BYTES)..]
    }
}

/// `kept`, and when `dropped` bytes past the limit were dropped, a line
/// saying how many, then `tail`, the last of them.
pub fn with_tail(kept: &[u8], dropped: u64, tail: &[u8]) -> String {
    let mut text = String::from_utf8_lossy(kept).into_owned();
    if dropped > 0 && !tail.is_empty() {
        let shown = tail.len();
        text.push_str(&format!(
            "\n[worldline: {dropped} bytes past limits.stdout_bytes were dropped; the last {shown} follow]\n"
        ));
        text.push_str(&String::from_utf8_lossy(tail));
    }
    text
}

pub(crate) struct Stdio {
    pub stdout: Capture,
    pub stderr: Capture,
}

impl Stdio {
    pub(crate) fn new(limit: usize) -> Self {
        let cap = |tail: Option<Tail>| Capture {
            bytes: Vec::new(),
            limit,
            dropped: 0,
            tail,
        };
        Stdio {
            stdout: cap(None),
            stderr: cap(Some(Tail::default())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_limit_bytes_are_dropped_and_counted() {
        let mut s = Stdio::new(4);
        assert_eq!(s.stdout.push(b"abc"), 0);
        assert_eq!(s.stdout.push(b"defg"), 3);
        assert_eq!(s.stdout.push(b"hi"), 2);
        assert_eq!(s.stdout.text(), "abcd");
        assert_eq!(s.stdout.dropped, 5);
        assert_eq!(s.stdout.room(), 0);
    }

    #[test]
    fn stderr_keeps_the_last_bytes_it_dropped() {
        let mut s = Stdio::new(4);
        assert_eq!(s.stderr.push(b"head"), 0);
        assert_eq!(s.stderr.text(), "head");
        let flood = vec![b'x'; 3 * TAIL_BYTES];
        s.stderr.push(&flood);
        s.stderr.push(b"Traceback: boom");
        let text = s.stderr.text();
        let marker = format!(
            "head\n[worldline: {} bytes past limits.stdout_bytes were dropped; the last {TAIL_BYTES} follow]\n",
            3 * TAIL_BYTES + 15
        );
        assert!(text.starts_with(&marker), "{}", &text[..200]);
        assert!(text.ends_with("xxTraceback: boom"));
        assert_eq!(text.len(), marker.len() + TAIL_BYTES);
        // stdout keeps its head only.
        s.stdout.push(b"abcdefgh");
        assert_eq!(s.stdout.text(), "abcd");
    }
}
