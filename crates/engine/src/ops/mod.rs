//! The operations both the CLI and the UI offer — run, fork, replay,
//! rerun, grade — as functions over a store with typed arguments and
//! typed results. A caller parses its input (flags, a form), opens the
//! run it names (the CLI takes ids and bundle paths, the UI ids only),
//! calls one operation and renders what it returns: nothing here prints,
//! writes markup or knows which of the two called.

pub mod fork;
pub mod fuzz;
pub mod grade;
pub mod history;
pub mod replay;
pub mod rerun;
pub mod resume;
pub mod run;
mod sink;
pub mod test;
