//! Write worldline agents in Rust.
//!
//! An agent is a plain function from a task to an output, exported with
//! [`agent!`]. Everything the agent does to the outside goes through the
//! host, which answers from the case's simulated world and records it:
//!
//! ```ignore
//! use serde_json::{json, Value};
//! use worldline_guest::{tools, Error};
//!
//! fn run(task: Value) -> Result<Value, Error> {
//!     let ticket: Value = tools::call("get_ticket", &json!({"id": task["ticket"]}))?;
//!     Ok(json!({"status": ticket["status"]}))
//! }
//! worldline_guest::agent!(run);
//! ```
//!
//! Build with `cargo build --target wasm32-wasip2`; no other tool is needed.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "worldline:agent/agent",
        pub_export_macro: true,
        default_bindings_module: "worldline_guest::bindings",
        generate_all,
    });
}

use serde::{Serialize, de::DeserializeOwned};
use std::fmt;

pub use bindings::worldline::agent::types::ErrorKind;

impl ErrorKind {
    /// The kind as the WIT names it (`denied`, `not-found`, ...); the host
    /// spells the same names (a host test checks them against the WIT).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Denied => "denied",
            ErrorKind::NotFound => "not-found",
            ErrorKind::InvalidArgs => "invalid-args",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Failed => "failed",
        }
    }
}

/// A failed host call (or agent-level failure), carrying the host's error kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// An agent-side failure (bad JSON from a tool, a plan that cannot go on).
    pub fn failed(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Failed, message)
    }

    /// The kind as the host names it (`denied`, `not-found`, ...).
    pub fn kind_name(&self) -> &'static str {
        self.kind.as_str()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind_name(), self.message)
    }
}

impl std::error::Error for Error {}

impl From<bindings::worldline::agent::types::ToolError> for Error {
    fn from(e: bindings::worldline::agent::types::ToolError) -> Self {
        Error::new(e.kind, e.message)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::failed(format!("json: {e}"))
    }
}

/// The world's tools.
pub mod tools {
    use super::*;
    use crate::bindings::worldline::agent::tools as raw;

    /// A tool as the world declares it.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Spec {
        pub name: String,
        pub description: String,
        /// JSON Schema of the arguments object.
        pub params_schema: serde_json::Value,
        pub mutates: bool,
    }

    /// The tools this agent may see, in the world's order.
    pub fn specs() -> Vec<Spec> {
        raw::specs()
            .into_iter()
            .map(|s| Spec {
                params_schema: serde_json::from_str(&s.params_schema)
                    .unwrap_or(serde_json::Value::Null),
                name: s.name,
                description: s.description,
                mutates: s.mutates,
            })
            .collect()
    }

    /// Call a tool with typed arguments and parse its JSON answer as `T`.
    pub fn call<T: DeserializeOwned>(name: &str, args: &impl Serialize) -> Result<T, Error> {
        let text = call_json(name, &serde_json::to_string(args)?)?;
        Ok(serde_json::from_str(&text)?)
    }

    /// Call a tool with raw JSON text and get raw JSON text back.
    pub fn call_json(name: &str, args_json: &str) -> Result<String, Error> {
        Ok(raw::call(name, args_json)?)
    }
}

pub mod model;

/// The world's files.
pub mod files {
    use super::*;
    use crate::bindings::worldline::agent::files as raw;

    pub fn read(path: &str) -> Result<Vec<u8>, Error> {
        Ok(raw::read(path)?)
    }

    pub fn read_to_string(path: &str) -> Result<String, Error> {
        String::from_utf8(read(path)?).map_err(|e| Error::failed(format!("{path}: {e}")))
    }

    pub fn write(path: &str, data: impl AsRef<[u8]>) -> Result<(), Error> {
        Ok(raw::write(path, data.as_ref())?)
    }

    pub fn paths(prefix: &str) -> Result<Vec<String>, Error> {
        Ok(raw::paths(prefix)?)
    }
}

/// The user the agent works for (the case's `[user]` plays them). Each
/// `say` is one recorded turn.
pub mod user {
    use crate::bindings::worldline::agent::user as raw;

    /// What came back from the user.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Turn {
        /// The user's reply.
        Reply(String),
        /// The user left the conversation (and said why); every later
        /// `say` ends the same way.
        Ended { reason: String, satisfied: bool },
    }

    impl Turn {
        /// The reply, or `None` when the user has ended the conversation.
        pub fn reply(&self) -> Option<&str> {
            match self {
                Turn::Reply(r) => Some(r),
                Turn::Ended { .. } => None,
            }
        }
    }

    /// Send the user a message and wait for their next line.
    pub fn say(message: &str) -> Turn {
        match raw::say(message) {
            raw::Turn::Reply(r) => Turn::Reply(r),
            raw::Turn::Ended(e) => Turn::Ended {
                reason: e.reason,
                satisfied: e.satisfied,
            },
        }
    }
}

/// Human approval of an action before the agent takes it (the case's
/// `[[approve]]` rules answer). Each request is one recorded event.
pub mod approval {
    use super::*;
    use crate::bindings::worldline::agent::approval as raw;

    /// The approver's answer.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Decision {
        Approved,
        /// Denied, with the approver's reason.
        Denied(String),
    }

    impl Decision {
        pub fn is_approved(&self) -> bool {
            matches!(self, Decision::Approved)
        }
    }

    /// Ask for approval of an action of `kind` (e.g. `refund`) with
    /// `details` (any serializable value, sent as JSON).
    pub fn request(kind: &str, details: &impl Serialize) -> Result<Decision, Error> {
        let details = serde_json::to_string(details)?;
        Ok(match raw::request(kind, &details) {
            raw::Decision::Approved => Decision::Approved,
            raw::Decision::Denied(reason) => Decision::Denied(reason),
        })
    }
}

/// Notes for the person debugging the run (shown next to the events).
pub mod trace {
    pub fn note(kind: &str, text: &str) {
        crate::bindings::worldline::agent::trace::note(kind, text)
    }
}

#[doc(hidden)]
pub fn __run<T, O, E, F>(task_json: String, f: F) -> Result<String, String>
where
    T: DeserializeOwned,
    O: Serialize,
    E: fmt::Display,
    F: FnOnce(T) -> Result<O, E>,
{
    let task: T = serde_json::from_str(&task_json).map_err(|e| format!("bad task: {e}"))?;
    let out = f(task).map_err(|e| e.to_string())?;
    serde_json::to_string(&out).map_err(|e| format!("bad output: {e}"))
}

/// Export a function `fn(Task) -> Result<Output, E>` as the agent's `run`.
/// `Task` is any `Deserialize` type (the case's task JSON), `Output` any
/// `Serialize` type, `E` anything `Display`.
#[macro_export]
macro_rules! agent {
    ($run:path) => {
        struct __WorldlineAgent;
        impl $crate::bindings::Guest for __WorldlineAgent {
            fn run(task_json: String) -> Result<String, String> {
                $crate::__run(task_json, $run)
            }
        }
        $crate::bindings::export!(__WorldlineAgent with_types_in $crate::bindings);
    };
}
