//! `wasi:random`: secure, insecure and the insecure seed.
//!
//! - virtual: every byte comes from the run's seeded ChaCha20 streams
//!   (`mediate/entropy.rs`), so a seed gives the same bytes on every run;
//! - recorded: every draw, with its bytes;
//! - denied: requests over 1 MiB per call (a trap that says so).

use super::super::bindings::wasi;
use super::super::{RunState, ServiceReply};
use super::u64_of;
use rand_core::RngCore;
use serde_json::{Value, json};

/// Largest single `get-random-bytes` request served.
const MAX_RANDOM_BYTES: u64 = 1 << 20;

fn hex_bytes(v: &Value) -> Vec<u8> {
    v.as_str()
        .and_then(|s| hex::decode(s).ok())
        .unwrap_or_default()
}

impl wasi::random::random::Host for RunState {
    fn get_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        if len > MAX_RANDOM_BYTES {
            wasmtime::bail!(
                "get-random-bytes asked for {len} bytes; at most {MAX_RANDOM_BYTES} per call"
            );
        }
        let r = self.mediated(
            "wasi:random/random.get-random-bytes",
            json!({"len": len}),
            |s| {
                let mut buf = vec![0u8; len as usize];
                s.entropy.secure.fill_bytes(&mut buf);
                ServiceReply::read(json!(hex::encode(buf)))
            },
        )?;
        Ok(hex_bytes(&r))
    }

    fn get_random_u64(&mut self) -> wasmtime::Result<u64> {
        let r = self.mediated("wasi:random/random.get-random-u64", json!({}), |s| {
            ServiceReply::read(json!(s.entropy.secure.next_u64()))
        })?;
        Ok(u64_of(&r))
    }
}

impl wasi::random::insecure::Host for RunState {
    fn get_insecure_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        if len > MAX_RANDOM_BYTES {
            wasmtime::bail!(
                "get-insecure-random-bytes asked for {len} bytes; at most {MAX_RANDOM_BYTES} per call"
            );
        }
        let r = self.mediated(
            "wasi:random/insecure.get-insecure-random-bytes",
            json!({"len": len}),
            |s| {
                let mut buf = vec![0u8; len as usize];
                s.entropy.insecure.fill_bytes(&mut buf);
                ServiceReply::read(json!(hex::encode(buf)))
            },
        )?;
        Ok(hex_bytes(&r))
    }

    fn get_insecure_random_u64(&mut self) -> wasmtime::Result<u64> {
        let r = self.mediated(
            "wasi:random/insecure.get-insecure-random-u64",
            json!({}),
            |s| ServiceReply::read(json!(s.entropy.insecure.next_u64())),
        )?;
        Ok(u64_of(&r))
    }
}

impl wasi::random::insecure_seed::Host for RunState {
    fn insecure_seed(&mut self) -> wasmtime::Result<(u64, u64)> {
        let r = self.mediated("wasi:random/insecure-seed.insecure-seed", json!({}), |s| {
            ServiceReply::read(json!([
                s.entropy.insecure_seed.0,
                s.entropy.insecure_seed.1
            ]))
        })?;
        Ok((u64_of(&r[0]), u64_of(&r[1])))
    }
}
