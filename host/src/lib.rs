//! worldline: run AI agents as WebAssembly components inside a
//! deterministic, simulated world.
//!
//! This is the `worldline` binary's crate: the CLI ([`cli`]) and `init`'s
//! scaffold ([`scaffold`]). The pipeline lives in the workspace's crates,
//! lowest first: `worldline-case` (the ground, the world, the case) →
//! `worldline-protocol` (model APIs and MCP as messages) →
//! `worldline-engine` (sandbox → mediate → log → store → grade, replay,
//! fork, fuzz) → `worldline-otel`, `worldline-report` → `worldline-ui` → this
//! crate. Every module of those crates is re-exported here under one name,
//! so the CLI, the tests and the benchmarks write `worldline::world` (or
//! `crate::log`) whichever crate holds it. The layers, in order, are in
//! docs/architecture.md.

pub mod cli;
pub mod scaffold;

pub use worldline_case::{
    bounded, canon, case, check, durable, error, error_kind, file_identity, native_agent, output,
    parallel, partition, path, prices, project, shown, time, world,
};
pub use worldline_engine::{
    agent_file, export, fork, fuzz, grade, index, native, ops, regress, replay, retention, run,
    store, suite, traceback, validate, verify,
};
pub use worldline_log::{log, object_codec, redact};
pub use worldline_otel as otel;
pub use worldline_pgstore as pgstore;
pub use worldline_protocol as protocol;
pub use worldline_report as report;
pub use worldline_runtime::{mediate, sandbox};
pub use worldline_ui as ui;
