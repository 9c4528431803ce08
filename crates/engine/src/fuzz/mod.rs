//! Fuzzing agents with controlled nondeterminism: a campaign runs many
//! seeded variations of a case whose tools misbehave as a fault profile
//! says, reports how often the agent fails (with an interval), groups the
//! failures by signature, and shrinks each group's reproducer to the
//! fewest, smallest faults that still fail the same way.
//!
//! A run's faults are mediation-time state (`mediate::faults`);
//! `trial` (what is kept of one run) → `summary`, `stats` (what trials add
//! up to, by `grade::signature`) → `campaign` (many runs in parallel,
//! counted as they finish) → `shrink`,
//! `describe` (the smallest reproducer, in words) → `reproducer` (one kept
//! run per failure group, checked to fail the same way). `repro` runs a
//! recorded run again N times and reports how often it ends the same way.

pub mod campaign;
pub mod describe;
pub mod repro;
pub mod reproducer;
pub(crate) mod shrink;
pub mod stats;
pub mod summary;
pub mod trial;
