//! The run log: events, the chained recorder, and the bundle file format
//! (header line, one line per event, footer line; JSON Lines).

pub mod bundle;
pub mod event;
pub mod recorder;

pub use bundle::{Bundle, Edit, Footer, ForkPoint, Header, Parent, Status};
pub use event::{Effect, Event};
pub use recorder::Recorder;
