//! Captured stdout and stderr, bounded: past the limit the stream reports
//! closed to the guest and the dropped bytes are counted.

pub struct Capture {
    pub bytes: Vec<u8>,
    pub limit: usize,
    pub dropped: u64,
}

impl Capture {
    /// Keep what fits; `false` once the stream is full (it is then closed).
    pub fn push(&mut self, data: &[u8]) -> bool {
        let room = self.limit.saturating_sub(self.bytes.len());
        let keep = room.min(data.len());
        self.bytes.extend_from_slice(&data[..keep]);
        self.dropped += (data.len() - keep) as u64;
        keep == data.len()
    }

    pub fn is_full(&self) -> bool {
        self.dropped > 0
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

pub struct Stdio {
    pub stdout: Capture,
    pub stderr: Capture,
}

impl Stdio {
    pub fn new(limit: usize) -> Self {
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
