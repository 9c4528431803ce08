//! A world's service: the WebAssembly component (`[service]` in
//! `world.toml`) that implements the tools declared with `op = "service"`.
//!
//! The world only reads the component's bytes (into its manifest, so the
//! world hash covers them and the store keeps them with the world); the
//! sandbox compiles, checks and pre-instantiates it before a run.
//!
//! Why the service's bytes are part of the world (was decision 0071):
//! `[service] component` is read through the world folder's capability handle
//! into the manifest, so the world hash covers it and `store.put_world` keeps
//! it; replay, verify, export/import and re-grading then use the recorded bytes
//! even after the folder's copy is rebuilt or removed (a test removes it and
//! verifies). A component referenced by path would let a rebuild change what a
//! replay runs. The example services' `.wasm` files are build products
//! (gitignored; `examples/run` builds them): builds are not reproducible byte
//! for byte across toolchains, so checking them in would pin nothing.

use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

/// `[service]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceToml {
    /// The component, a path inside the world folder.
    pub component: String,
    /// Fuel each call may burn (default [`DEFAULT_FUEL`]).
    #[serde(default)]
    pub fuel: Option<u64>,
    /// Linear memory each call may use, in MiB (default 256).
    #[serde(default)]
    pub memory_mb: Option<u64>,
}

/// Fuel a service call may burn unless `[service] fuel` says otherwise:
/// enough for a Python service's interpreter, small enough that a loop
/// stops within seconds.
pub const DEFAULT_FUEL: u64 = 2_000_000_000;

/// A loaded `[service]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceSource {
    /// The component's path inside the world folder.
    pub component: String,
    /// The component's full path (for messages).
    pub file: PathBuf,
    pub bytes: Arc<Vec<u8>>,
    pub sha256: String,
    pub fuel: u64,
    pub memory_mb: u64,
}

impl ServiceToml {
    /// Why its limits can never run a call (no fuel, no memory) or ask for
    /// more memory than a wasm32 service can address, if they do.
    pub fn out_of_range(&self) -> Option<String> {
        if self.fuel == Some(0) {
            return Some(
                "[service] fuel = 0 lets no call run; leave it out (2,000,000,000) or give more"
                    .into(),
            );
        }
        match self.memory_mb {
            Some(mb) if !(1..=4096).contains(&mb) => Some(format!(
                "[service] memory_mb = {mb} is out of range; give 1 to 4096 (a wasm32 service addresses 4 GiB), or leave it out (256)"
            )),
            _ => None,
        }
    }

    pub fn resolve(&self, file: PathBuf, bytes: Vec<u8>) -> ServiceSource {
        ServiceSource {
            component: self.component.clone(),
            file,
            sha256: crate::canon::sha256_hex(&bytes),
            bytes: Arc::new(bytes),
            fuel: self.fuel.unwrap_or(DEFAULT_FUEL),
            memory_mb: self.memory_mb.unwrap_or(256),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Limits no call can run under, or past what a wasm32 service
    /// addresses, are refused (every call failed `memory limit`, naming
    /// the case's limit).
    #[test]
    fn limits_no_call_can_run_under_are_refused() {
        let service = |fuel, memory_mb| ServiceToml {
            component: "service.wasm".into(),
            fuel,
            memory_mb,
        };
        assert!(
            service(Some(0), None)
                .out_of_range()
                .unwrap()
                .contains("fuel = 0")
        );
        for mb in [0, 4097, 99_999_999_999] {
            let m = service(None, Some(mb)).out_of_range().unwrap();
            assert!(
                m.contains(&format!("memory_mb = {mb} is out of range")),
                "{m}"
            );
        }
        for (fuel, mb) in [(None, None), (Some(1), Some(1)), (None, Some(4096))] {
            assert_eq!(service(fuel, mb).out_of_range(), None);
        }
    }
}
