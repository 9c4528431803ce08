//! Write worldline world services in Rust.
//!
//! A service implements the tools a world declares with `op = "service"`.
//! It is a plain function from a tool name and its arguments to a JSON
//! answer, exported with [`service!`]. It reaches the world only through
//! this crate — typed [`Table`]s, [`files`], the virtual [`now`] and a
//! seeded [`random`] stream — and the host records every write in the
//! agent's tool-call event. A call that returns an error writes nothing.
//!
//! ```ignore
//! use serde::{Deserialize, Serialize};
//! use serde_json::{json, Value};
//! use worldline_service::{Table, ToolError};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Account { id: String, balance: i64 }
//! const ACCOUNTS: Table<Account> = Table::new("accounts");
//!
//! fn call(tool: &str, args: Value) -> Result<Value, ToolError> {
//!     match tool {
//!         "balance" => Ok(json!(ACCOUNTS.require(args["id"].as_str().unwrap_or(""))?.balance)),
//!         other => Err(ToolError::not_found(format!("no tool `{other}`"))),
//!     }
//! }
//! worldline_service::service!(call);
//! ```
//!
//! Build with `cargo build --target wasm32-wasip2` and name the `.wasm` in
//! the world's `[service] component`.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit/service",
        world: "worldline:service/service",
        pub_export_macro: true,
        default_bindings_module: "worldline_service::bindings",
        generate_all,
    });
}

use bindings::worldline::service::{env, state, types};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use std::fmt;
use std::marker::PhantomData;

pub use types::ErrorKind;

/// Why a tool call failed: the kind the agent branches on, and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ToolError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid_args(message: impl Into<String>) -> Self {
        ToolError::new(ErrorKind::InvalidArgs, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ToolError::new(ErrorKind::NotFound, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        ToolError::new(ErrorKind::Conflict, message)
    }

    pub fn denied(message: impl Into<String>) -> Self {
        ToolError::new(ErrorKind::Denied, message)
    }

    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::new(ErrorKind::Failed, message)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl std::error::Error for ToolError {}

impl From<types::ToolError> for ToolError {
    fn from(e: types::ToolError) -> Self {
        ToolError::new(e.kind, e.message)
    }
}

impl From<ToolError> for types::ToolError {
    fn from(e: ToolError) -> Self {
        types::ToolError {
            kind: e.kind,
            message: e.message,
        }
    }
}

/// A row that does not have the shape its table type expects is the
/// service's bug, not the agent's: it fails the call.
impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::failed(format!("json: {e}"))
    }
}

/// Parse a tool's arguments into a typed struct (`invalid-args` when they
/// do not fit; the host has already checked them against `params`).
pub fn args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::invalid_args(e.to_string()))
}

/// One table of the world, with rows of type `T`.
pub struct Table<T> {
    name: &'static str,
    row: PhantomData<fn() -> T>,
}

impl<T: Serialize + DeserializeOwned> Table<T> {
    pub const fn new(name: &'static str) -> Self {
        Table {
            name,
            row: PhantomData,
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The row with key `key`, if there is one.
    pub fn get(&self, key: &str) -> Result<Option<T>, ToolError> {
        match state::get(self.name, key)? {
            Some(text) => Ok(Some(serde_json::from_str(&text)?)),
            None => Ok(None),
        }
    }

    /// The row with key `key`, or a `not-found` error naming it.
    pub fn require(&self, key: &str) -> Result<T, ToolError> {
        self.get(key)?
            .ok_or_else(|| ToolError::not_found(format!("no {} row `{key}`", self.name)))
    }

    /// The rows whose fields equal every field of `filter` (a JSON object),
    /// in key order.
    pub fn query(&self, filter: &Value) -> Result<Vec<T>, ToolError> {
        state::query(self.name, &filter.to_string())?
            .iter()
            .map(|t| Ok(serde_json::from_str(t)?))
            .collect()
    }

    /// Every row, in key order.
    pub fn all(&self) -> Result<Vec<T>, ToolError> {
        self.query(&Value::Object(Default::default()))
    }

    /// Add a row; its key (generated by the table's `ids` scheme when the row has no
    /// key field). An existing key is a `conflict`.
    pub fn insert(&self, row: &T) -> Result<String, ToolError> {
        Ok(state::insert(self.name, &serde_json::to_string(row)?)?)
    }

    /// Set some fields of a row (a JSON object); the row after the change.
    pub fn update(&self, key: &str, fields: &Value) -> Result<T, ToolError> {
        let text = state::update(self.name, key, &fields.to_string())?;
        Ok(serde_json::from_str(&text)?)
    }

    /// Write every field `row` serializes over row `key`, as
    /// [`update`](Self::update) does: a field the stored row holds and
    /// `row` does not serialize is kept (so a `Value` of one field changes
    /// that field alone), and a key no row has is `not-found` (a new row is
    /// an insert).
    pub fn put(&self, key: &str, row: &T) -> Result<T, ToolError> {
        self.update(key, &serde_json::to_value(row)?)
    }

    /// Remove a row; whether it was there.
    pub fn delete(&self, key: &str) -> Result<bool, ToolError> {
        Ok(state::delete(self.name, key)?)
    }
}

/// The world's files.
pub mod files {
    use super::*;

    pub fn read(path: &str) -> Result<Vec<u8>, ToolError> {
        Ok(state::read_file(path)?)
    }

    pub fn read_to_string(path: &str) -> Result<String, ToolError> {
        String::from_utf8(read(path)?).map_err(|e| ToolError::failed(format!("{path}: {e}")))
    }

    pub fn write(path: &str, data: impl AsRef<[u8]>) -> Result<(), ToolError> {
        Ok(state::write_file(path, data.as_ref())?)
    }

    pub fn list(prefix: &str) -> Vec<String> {
        state::list_files(prefix)
    }
}

/// The world's virtual time (RFC 3339 UTC), as of this call.
pub fn now() -> String {
    env::now()
}

/// The next number of the service's seeded random stream.
pub fn random() -> u64 {
    env::random()
}

#[doc(hidden)]
pub fn __call<F>(tool: String, args_json: String, f: F) -> Result<String, types::ToolError>
where
    F: FnOnce(&str, Value) -> Result<Value, ToolError>,
{
    let args: Value = serde_json::from_str(&args_json)
        .map_err(|e| ToolError::invalid_args(format!("arguments are not JSON: {e}")))?;
    let out = f(&tool, args)?;
    Ok(serde_json::to_string(&out).map_err(ToolError::from)?)
}

/// Export `fn(tool: &str, args: Value) -> Result<Value, ToolError>` as the
/// service's `call`.
#[macro_export]
macro_rules! service {
    ($call:path) => {
        struct __WorldlineService;
        impl $crate::bindings::Guest for __WorldlineService {
            fn call(
                tool: String,
                args_json: String,
            ) -> Result<String, $crate::bindings::worldline::service::types::ToolError> {
                $crate::__call(tool, args_json, $call)
            }
        }
        $crate::bindings::export!(__WorldlineService with_types_in $crate::bindings);
    };
}
