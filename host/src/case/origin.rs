//! A case's `[origin]`: the recorded run it was made from (`worldline case
//! from-run`), named by run id and chain hash, with the copy of its bundle
//! kept beside the case, so a test can be traced back to its incident.

use serde::{Deserialize, Serialize};

/// What a case was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreatedFrom {
    Run,
}

/// `[origin]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub created_from: CreatedFrom,
    /// The source run's id.
    pub run: String,
    /// The source run's chain hash (its footer's): which run, exactly.
    pub chain_hash: String,
    /// The copy of the source bundle, relative to the case file.
    pub bundle: String,
    /// The content hash of the world the run met.
    pub world_hash: String,
}
