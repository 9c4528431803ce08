//! The engine: the sandbox a guest runs in, the mediator every host call
//! passes, the log and the store it writes, and what runs on recorded runs
//! (grade, replay, fork, fuzz, suites, export, retention, redaction,
//! incidents turned into cases). The modules below [`worldline_case`] and
//! [`worldline_protocol`] are imported at this crate's root, so code here
//! names every layer the same way (`crate::world`, `crate::log`).

pub mod agent_file;
pub mod export;
pub mod fork;
pub mod fuzz;
pub mod grade;
pub mod index;
pub mod native;
pub mod ops;
pub mod regress;
pub mod replay;
pub mod retention;
pub mod run;
pub mod store;
pub mod suite;
pub mod traceback;
pub mod validate;
pub mod verify;

use worldline_case::{
    bounded, canon, case, durable, error, error_kind, file_identity, output, parallel, partition,
    path, shown, time, world,
};
use worldline_log::{log, object_codec, redact};
use worldline_pgstore as pgstore;
use worldline_protocol as protocol;
use worldline_runtime::{mediate, sandbox};
