//! WASI 0.2, virtualized, one module per interface: every function passes
//! through [`Mediator::mediate`](super::Mediator::mediate) and is recorded.
//! Each module's doc says what of its interface is virtual, what is
//! recorded and what is denied. The linker is built from all of them in one
//! place: `sandbox/mod.rs` links the generated `agent-host` world, whose
//! host traits these modules implement on [`RunState`].
//!
//! Why one module per WASI interface (was decision 0161): HTTP mediation added
//! a large interface, wasmtime files its own implementation the same way, and a
//! reader asking "what happens to a socket" finds one file (the methods of
//! resources a guest can never hold live with their interface, not in a module
//! filed by policy). Linking each interface's generated `add_to_linker` from
//! here instead would repeat the world's list of imports that `case/src/wit.rs`
//! already reads from the WIT, and the service linker needs the same set.

mod cli;
mod clocks;
mod filesystem;
mod http;
mod io;
mod random;
mod sockets;

use super::{RunState, ServiceReply};
use serde_json::{Value, json};
use worldline_log::log::Effect;

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
        self.mediated(call, request, |_| ServiceReply::read(response))
    }

    /// Whether the `wasi:http` plumbing (fields, requests, bodies, futures,
    /// responses and the streams of their bodies) is recorded call by
    /// call: only while following a recording made when it was, so such a
    /// run replays and forks identical (decision 0276). Otherwise each
    /// routed request is recorded once, as its model, tool or protocol call
    /// event, and the plumbing answers as before without an event of its own.
    fn http_plumbing(&self) -> bool {
        self.med.following.as_ref().is_some_and(|s| s.http_plumbing)
    }

    /// A plumbing call of `wasi:http` (see [`http_plumbing`](Self::http_plumbing)):
    /// recorded as [`call_fixed`](Self::call_fixed) only for a recording
    /// that has them; `request` is built only then.
    fn plumbing(
        &mut self,
        call: &str,
        request: impl FnOnce() -> Value,
        response: impl FnOnce() -> Value,
    ) -> wasmtime::Result<()> {
        if self.http_plumbing() {
            self.call_fixed(call, request(), response())?;
        }
        Ok(())
    }

    /// A call on a stream: one of an HTTP body is plumbing, any other is
    /// recorded.
    fn stream_call(
        &mut self,
        stream: &str,
        call: &str,
        request: Value,
        response: Value,
    ) -> wasmtime::Result<()> {
        if stream == "http-body" {
            self.plumbing(call, || request, || response)
        } else {
            self.call_fixed(call, request, response)?;
            Ok(())
        }
    }

    pub(super) fn denied(&mut self, call: &str, request: Value, why: &str) -> wasmtime::Result<()> {
        self.mediated(call, request, |_| {
            ServiceReply::with_effect(json!({"error": why}), Effect::Denied)
        })?;
        Ok(())
    }
}
