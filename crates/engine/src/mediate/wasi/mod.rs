//! WASI 0.2, virtualized, one module per interface: every function passes
//! through [`Mediator::mediate`](super::Mediator::mediate) and is recorded.
//! Each module's doc says what of its interface is virtual, what is
//! recorded and what is denied. The linker is built from all of them in one
//! place: `sandbox/mod.rs` links the generated `agent-host` world, whose
//! host traits these modules implement on [`RunState`].

mod cli;
mod clocks;
mod filesystem;
mod http;
mod io;
mod random;
mod sockets;

use super::{Answer, RunState};
use crate::log::Effect;
use serde_json::{Value, json};

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// For the methods of resources a guest can never hold (descriptors,
/// sockets, name lookups): the component model only lets a guest pass
/// handles it was given, so these are unreachable, and trap if called.
fn never<T, E: From<wasmtime::Error>>() -> Result<T, E> {
    Err(wasmtime::Error::msg("this resource cannot exist in a worldline run").into())
}

impl RunState {
    /// Mediate a call whose answer is fixed (plumbing such as handles).
    pub(super) fn call_fixed(
        &mut self,
        call: &str,
        request: Value,
        response: Value,
    ) -> wasmtime::Result<Value> {
        self.mediated(call, request, |_| Answer::read(response))
    }

    pub(super) fn denied(&mut self, call: &str, request: Value, why: &str) -> wasmtime::Result<()> {
        self.mediated(call, request, |_| {
            Answer::with_effect(json!({"error": why}), Effect::Denied)
        })?;
        Ok(())
    }
}
