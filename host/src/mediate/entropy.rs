//! Seeded randomness for `wasi:random`: three independent ChaCha20 streams
//! (secure, insecure, insecure-seed) derived from the case seed, so a
//! different seed changes every draw and the same seed repeats them.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

pub struct Entropy {
    pub secure: ChaCha20Rng,
    pub insecure: ChaCha20Rng,
    pub insecure_seed: (u64, u64),
}

/// A ChaCha20 stream for one purpose, derived from the seed.
pub fn stream(seed: u64, purpose: &str) -> ChaCha20Rng {
    let mut h = Sha256::new();
    h.update(b"worldline/");
    h.update(purpose.as_bytes());
    h.update(seed.to_le_bytes());
    ChaCha20Rng::from_seed(h.finalize().into())
}

impl Entropy {
    pub fn new(seed: u64) -> Self {
        let mut s = stream(seed, "insecure-seed");
        Entropy {
            secure: stream(seed, "secure"),
            insecure: stream(seed, "insecure"),
            insecure_seed: (s.next_u64(), s.next_u64()),
        }
    }
}
