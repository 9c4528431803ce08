//! Captured stdout and stderr, bounded: past the limit further bytes are
//! dropped and counted, and the stream stays open, so an agent that logs
//! too much keeps running (fuel still bounds a print loop). Host memory is
//! bounded by the limit, itself capped when a case is loaded.

pub(crate) struct Capture {
    pub bytes: Vec<u8>,
    pub limit: usize,
    pub dropped: u64,
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
        let dropped = (data.len() - keep) as u64;
        self.dropped += dropped;
        dropped
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

pub(crate) struct Stdio {
    pub stdout: Capture,
    pub stderr: Capture,
}

impl Stdio {
    pub(crate) fn new(limit: usize) -> Self {
        let cap = || Capture {
            bytes: Vec::new(),
            limit,
            dropped: 0,
        };
        Stdio {
            stdout: cap(),
            stderr: cap(),
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
}
