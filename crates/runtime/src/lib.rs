//! The runtime: the sandbox a guest runs in (`sandbox/`: the component,
//! its fuel, its limits) and the mediator every host call passes
//! (`mediate/`: clocks, entropy, files, HTTP, the world's tools, the
//! model, the conversation), recording each call through the log crate.
//! It is the one crate that links the WebAssembly runtime to run guests;
//! what runs on recorded runs (grade, replay, fork, fuzz, suites, the
//! store) lives in the engine above it. It names a lower crate's module by
//! its own path (`worldline_case::world`, `worldline_log::log`).

#![deny(unreachable_pub)]

pub mod mediate;
pub mod sandbox;
