//! Agents outside the sandbox: a native process or an MCP client reaches
//! the world through the same mediator as a WebAssembly agent, over a
//! transport of its own ([`loopback`]: the model APIs and MCP over HTTP;
//! [`stdio`]: MCP over stdin/stdout). Each request is the same recorded
//! call `wasi:http` makes (`mediate::boundary`), so injections, faults,
//! grading and replay at the boundary work unchanged; what a native
//! process does between its calls is not recorded, and the bundle says so
//! (`isolation = "native"`, [`NOT_GUARANTEED`]).

pub(crate) mod capture;
pub(crate) mod environment;
pub mod exec;
mod guard;
pub use guard::host_refused;
pub mod listen;
pub mod loopback;
pub mod mcp;
pub(crate) mod netns;
pub mod openenv;
pub(crate) mod rederive;
pub mod session;
pub(crate) mod signals;
pub use signals::{
    Interrupt, ends_with_this_thread, hold_sigpipe_on_this_thread, noted_in_a_worker,
    said_if_ended_early,
};
pub(crate) mod stdio;
pub(crate) mod telemetry;
mod tree;
pub(crate) mod tunnel;
mod workdir;

use worldline_case::case::Case;
use worldline_log::log::bundle::{Header, NativeAgent};
use worldline_runtime::sandbox::Sandbox;

/// What the WebAssembly sandbox guarantees that a native process does not,
/// as (what, why): the report and docs/native.md show them.
pub const NOT_GUARANTEED: &[(&str, &str)] = &[
    (
        "clock",
        "the process reads the real clock; only its calls to the world see virtual time",
    ),
    ("randomness", "the process draws real randomness"),
    (
        "files",
        "the process can read and write the machine's files; its fresh working directory is not a sandbox",
    ),
    (
        "network",
        "a request that bypasses the base URLs and the proxy reaches the network (unless --isolate-net held)",
    ),
    (
        "isolation",
        "memory and CPU are the operating system's: fuel and memory limits do not apply",
    ),
    (
        "replay",
        "replay is at the boundary: the same requests get the same answers, not the same instructions",
    ),
];

/// The header of a native run on `case`: its identity is how it reached
/// the world (transport and command).
pub fn header(sandbox: &Sandbox, case: &Case, agent: NativeAgent) -> Header {
    let mut header =
        crate::run::header_of(sandbox, &worldline_case::canon::hash_json(&agent), case);
    header.isolation = Some("native".into());
    header.native = Some(agent);
    header
}

/// Load the world's service (compiling it when the cache lacks it)
/// before the agent is started: its first call that reached the service
/// waited for the compile in real time, which a native agent's own
/// timeouts saw (an answer lost, a run ended `timeout`, a replay that
/// diverged), on the first run into a store alone.
pub fn load_service(sandbox: &Sandbox, case: &Case) -> anyhow::Result<()> {
    if let Some(source) = &case.world.service {
        sandbox.service(source)?;
    }
    Ok(())
}

/// A fresh random token (128 bits, hex) from the operating system.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(hex::encode(bytes))
}
