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
