//! What a run is made of: the ground every layer stands on (canonical
//! bytes, bounded reads, errors and their kinds, virtual time, parallel
//! maps, partitions, durable writes, where output may go, input text made
//! safe to show, file identity, JSON integers past 64 bits, whether the
//! rules made after runs were recorded apply), the WIT package guests are
//! built against, the project file, the world, the case, and `check`,
//! which validates them without running anything. The lowest crate of the
//! workspace: it knows nothing of the sandbox, the log or the store.

#![deny(unreachable_pub)]

pub mod ahead;
pub mod bounded;
pub mod canon;
pub mod case;
pub mod check;
pub mod durable;
pub mod error;
pub mod error_kind;
pub mod file_identity;
pub mod native_agent;
mod new_rules;
pub mod output;
pub mod parallel;
pub mod partition;
pub mod path;
pub mod prices;
pub mod project;
pub(crate) mod sections;
pub mod shown;
pub mod time;
pub mod toml_tokens;
pub mod wide_integer;
pub mod wit;
pub mod world;
