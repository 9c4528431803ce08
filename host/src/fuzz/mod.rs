//! Fuzzing agents with controlled nondeterminism: a campaign runs many
//! seeded variations of a case whose tools misbehave as a fault profile
//! says, reports how often the agent fails (with an interval), groups the
//! failures by signature, and shrinks each group's reproducer to the
//! fewest, smallest faults that still fail the same way.
//!
//! `faults` (what a run meets) → `campaign` (many runs in parallel) →
//! `report`, `stats` (what they add up to, by `grade::signature`) →
//! `shrink`, `describe` (the smallest reproducer, in words).

pub mod campaign;
pub mod describe;
pub mod faults;
pub mod report;
pub mod shrink;
pub mod stats;
