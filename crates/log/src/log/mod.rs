//! The run log: events, the chained recorder, and the bundle file format
//! (header line, one line per event, footer line; JSON Lines); `call.rs`
//! is the vocabulary: every kind of event, named once, typed (its requests
//! and responses in `payload.rs`); `delta.rs` writes a model request that
//! extends an earlier one as what changed, reads it back whole, and
//! holds a recording so for a follower, one request put back at a time;
//! `tokens.rs` does the same for the token ids an endpoint returned;
//! `signature.rs` names the way a run failed; `fold.rs` writes
//! consecutive clock reads as one line, read back as one event per read;
//! `intent.rs` writes the call about to go out before it is answered;
//! `prefix.rs` reads a bundle's first events and its footer only;
//! `asked.rs` pairs the calls a model asked for with those the agent made;
//! `rules.rs` numbers the rules a run ran under; `clock.rs` tells when
//! each call began.

pub mod asked;
pub mod bundle;
pub mod call;
pub mod clock;
pub mod delivery;
mod delta;
pub mod event;
mod fold;
pub mod intent;
pub mod payload;
pub mod prefix;
pub mod recorder;
pub mod rendered;
pub mod rules;
pub mod signature;
pub mod size;
pub mod tokens;
pub mod usage;

pub use bundle::{Bundle, Edit, Footer, ForkPoint, Header, HeldBundle, Parent, Status};
pub use call::{Call, CallKind, Kind, kind};
pub use delta::{Chain, Extends, Held};
pub use event::{Effect, Event};
pub use recorder::Recorder;
