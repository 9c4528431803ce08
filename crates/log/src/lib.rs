//! The run log and what reads it without running anything: the events,
//! the chained recorder and the bundle format (`log/`), how an object's
//! bytes are kept (`object_codec`), and redaction at read time
//! (`redact/`). It links no WebAssembly runtime, no store and no network,
//! so a reader of runs (OpenTelemetry export, reports) builds without the
//! engine. Like the engine, it imports the case crate's modules at its
//! root, so its code names them `crate::world`, `crate::canon`.

pub mod log;
pub mod object_codec;
pub mod redact;

use worldline_case::{bounded, canon, case, error, parallel, world};
