//! What the readers' property tests share.

pub mod mutations;
