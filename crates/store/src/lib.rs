//! Where runs are kept: the store (a folder, or a PostgreSQL database with a
//! local copy) and its bundles, sessions and leases ([`store`]); the run
//! index that lists and pages runs without opening their bundles
//! ([`index`]); what is kept and what is swept ([`retention`]); fuzz
//! campaigns' reports ([`campaigns`]). It stands on
//! the case, log and pgstore crates alone: it runs no guest and grades
//! nothing, and what it keeps of a run's grade is the row `run` writes.

#![deny(unreachable_pub)]

pub mod campaigns;
pub mod index;
pub mod retention;
pub mod store;
