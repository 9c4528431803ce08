//! The runtime: the sandbox a guest runs in (`sandbox/`: the component,
//! its fuel, its limits) and the mediator every host call passes
//! (`mediate/`: clocks, entropy, files, HTTP, the world's tools, the
//! model, the conversation), recording each call through the log crate.
//! It is the one crate that links the WebAssembly runtime to run guests;
//! what runs on recorded runs (grade, replay, fork, fuzz, suites, the
//! store) lives in the engine above it. Like the engine, it imports the
//! case crate's modules at its root, so its code names them
//! `crate::world`, `crate::canon`.

pub mod mediate;
pub mod sandbox;

use worldline_case::{
    bounded, canon, case, durable, error, error_kind, file_identity, parallel, path, time, world,
};
use worldline_log::log;
use worldline_protocol as protocol;
