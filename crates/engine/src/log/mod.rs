//! The run log: events, the chained recorder, and the bundle file format
//! (header line, one line per event, footer line; JSON Lines); `call.rs`
//! is the vocabulary: every kind of event, named once, typed (its requests
//! and responses in `payload.rs`).

pub mod bundle;
pub mod call;
pub mod event;
pub mod payload;
pub mod recorder;

pub use bundle::{Bundle, Edit, Footer, ForkPoint, Header, Parent, Status};
pub use call::{Call, CallKind, Kind, kind};
pub use event::{Effect, Event};
pub use recorder::Recorder;
