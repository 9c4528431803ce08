//! worldline: run AI agents as WebAssembly components inside a
//! deterministic, simulated world.
//!
//! This is the `worldline` binary's crate: the CLI ([`cli`]) and `init`'s
//! scaffold ([`scaffold`]). The pipeline lives in the workspace's crates,
//! lowest first: `worldline-pgstore`, `worldline-case` (the ground, the
//! world, the case) → `worldline-protocol` (model APIs and MCP as
//! messages) → `worldline-log` (events, bundles) → `worldline-runtime`
//! (sandbox, mediation) → `worldline-store` → `worldline-engine` (grade,
//! replay, fork, fuzz, suites, `ops/`) → `worldline-otel`,
//! `worldline-report` → `worldline-ui`, with `worldline-build` on the case
//! crate alone. Nothing of theirs is re-exported here: the CLI, the
//! end-to-end tests and the benchmarks import the crate that holds what
//! they use. The crate table and the layers are in docs/architecture.md.

pub mod cli;
pub mod scaffold;
