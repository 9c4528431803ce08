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
//! so the CLI, the tests and the benchmarks write `worldline_case::world` (or
//! `crate::log`) whichever crate holds it. The layers, in order, are in
//! docs/architecture.md.

pub mod cli;
pub mod scaffold;
