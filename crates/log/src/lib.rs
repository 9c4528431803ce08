//! The run log and what reads it without running anything: the events,
//! the chained recorder and the bundle format (`log/`), how an object's
//! bytes are kept (`object_codec`), and redaction at read time
//! (`redact/`). It links no WebAssembly runtime, no store and no network,
//! so a reader of runs (OpenTelemetry export, reports) builds without the
//! engine. It names the case crate's modules by their own path
//! (`worldline_case::world`).

#![deny(unreachable_pub)]

pub mod log;
pub mod object_codec;
pub mod redact;
