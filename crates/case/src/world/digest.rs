//! SHA-256 of a text made of parts, kept so that a text sharing its first
//! parts with it is hashed from the first part that differs: the hasher's
//! state before each part is kept (SHA-256 is sequential, so only what
//! comes before a change can be reused), and each part's bytes, for the
//! parts after a change that come back unchanged. A world's initial state
//! is sealed with one (`state::State::seal`), so a run's final state hash
//! costs what the run changed, not the world's size
//! ([0252](../../../../docs/decisions/0252-incremental-state-hash.md)).

use sha2::{Digest as _, Sha256};
use std::sync::Arc;

/// The parts of one text, their bytes, and the hasher before each.
pub(crate) struct Parts {
    bytes: Vec<Arc<[u8]>>,
    /// `before[i]`: the hasher after parts `0..i`.
    before: Vec<Sha256>,
    hash: String,
}

/// One part of a text hashed from a [`Parts`]: the same as that one's
/// part `i`, or new bytes.
pub(crate) enum Part {
    Same(usize),
    New(Vec<u8>),
}

impl Parts {
    pub(crate) fn new(bytes: Vec<Arc<[u8]>>) -> Self {
        let mut h = Sha256::new();
        let mut before = Vec::with_capacity(bytes.len());
        for part in &bytes {
            before.push(h.clone());
            h.update(part);
        }
        Parts {
            bytes,
            before,
            hash: crate::canon::hex_of(&h.finalize()),
        }
    }

    /// SHA-256 of the whole text, as hex.
    pub(crate) fn hash(&self) -> &str {
        &self.hash
    }

    /// Part `i`'s bytes (to share with a later [`Parts`]).
    pub(crate) fn part(&self, i: usize) -> &Arc<[u8]> {
        &self.bytes[i]
    }

    /// SHA-256, as hex, of the text made of these parts before `from` and
    /// then `rest`.
    pub(crate) fn resume(&self, from: usize, rest: impl IntoIterator<Item = Part>) -> String {
        let mut h = match self.before.get(from) {
            Some(h) => h.clone(),
            None => {
                let mut h = self.before.last().cloned().unwrap_or_default();
                if let Some(last) = self.bytes.last() {
                    h.update(last);
                }
                h
            }
        };
        for part in rest {
            match part {
                Part::Same(i) => h.update(&self.bytes[i]),
                Part::New(bytes) => h.update(&bytes),
            }
        }
        crate::canon::hex_of(&h.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(texts: &[&str]) -> Parts {
        Parts::new(texts.iter().map(|t| Arc::from(t.as_bytes())).collect())
    }

    #[test]
    fn resuming_anywhere_hashes_the_whole_text() {
        let p = parts(&["{\"a\":1", ",\"b\":2", ",\"c\":3", "}"]);
        assert_eq!(
            p.hash(),
            crate::canon::sha256_hex("{\"a\":1,\"b\":2,\"c\":3}")
        );
        let changed = crate::canon::sha256_hex("{\"a\":1,\"b\":9,\"c\":3}");
        let rest = [
            Part::New(b",\"b\":9".to_vec()),
            Part::Same(2),
            Part::Same(3),
        ];
        assert_eq!(p.resume(1, rest), changed);
        assert_eq!(p.resume(4, []), p.hash());
        assert_eq!(p.resume(0, (0..4).map(Part::Same)), p.hash());
        assert_eq!(parts(&[]).hash(), crate::canon::sha256_hex(""));
    }
}
