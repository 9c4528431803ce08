//! The engine: the sandbox a guest runs in, the mediator every host call
//! passes, the log and the store it writes, and what runs on recorded runs
//! (grade, replay, fork, fuzz, suites, export, retention, redaction,
//! incidents turned into cases). Code here names a lower crate's module by
//! its own path (`worldline_case::world`, `worldline_log::log`): no module
//! of another crate is aliased at this crate's root.

#![deny(unreachable_pub)]

pub mod agent_file;
pub mod export;
pub mod fork;
pub mod fuzz;
pub mod grade;
pub mod lanes;
pub mod native;
pub mod ops;
pub mod regress;
pub mod replay;
pub mod run;
pub mod suite;
pub mod traceback;
pub mod validate;
pub mod verify;
