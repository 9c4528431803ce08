//! worldline: run AI agents as WebAssembly components inside a
//! deterministic, simulated world.
//!
//! The pipeline a run flows through, one module each:
//! [`case`]/[`world`] (load, validate) → [`sandbox`] (engine, linker, limits)
//! → [`mediate`] (the one place host calls pass) → [`log`] (bundle write and
//! read) → [`run`] (one run, start to footer) → [`grade`], [`replay`],
//! [`fork`], [`fuzz`] → [`cli`]. Beside them, [`store`] and [`index`]
//! (the store's catalogue of runs, which [`run`] updates as it writes
//! bundles), [`retention`] (what `gc` keeps), [`redact`] (what a reader
//! is shown) and [`otel`] (runs as OpenTelemetry traces). The layers, in
//! order, are in docs/architecture.md.

pub mod agent_file;
pub mod bounded;
pub mod canon;
pub mod case;
pub mod check;
pub mod cli;
pub mod durable;
pub mod error;
pub mod error_kind;
pub mod export;
pub mod file_identity;
pub mod fork;
pub mod fuzz;
pub mod grade;
pub mod index;
pub mod lease;
pub mod log;
pub mod mediate;
pub mod native;
pub mod otel;
pub mod parallel;
pub mod partition;
pub mod path;
pub mod project;
pub mod protocol;
pub mod redact;
pub mod regress;
pub mod replay;
pub mod report;
pub mod retention;
pub mod run;
pub mod sandbox;
pub mod scaffold;
pub mod store;
pub mod suite;
pub mod time;
pub mod traceback;
pub mod ui;
pub mod world;
