//! What a campaign keeps of one run while it counts it: its place in the
//! campaign, its seeds, its failure signature and the faults it met, and
//! whether an injection reached the agent and its attack succeeded.

use serde::{Deserialize, Serialize};
use worldline_case::case::fuzz::Schedule;

/// What a campaign keeps of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// The variation's place in the whole campaign (seed index × repeat +
    /// repetition), so shards can be merged back in order.
    pub index: u64,
    pub seed: u64,
    pub model_seed: Option<u64>,
    /// `None` when the run passed.
    pub signature: Option<String>,
    /// The faults the run met (kept for failures only, unless the
    /// campaign keeps every run's: `Campaign::every_fault`).
    pub faults: Schedule,
    /// An injected text reached the agent (a fault placed it at a vector).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub injected: bool,
    /// `[expect.attack]`'s goal was reached.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub attacked: bool,
}

impl crate::lanes::Answer for Trial {
    fn index(&self) -> u64 {
        self.index
    }
}
