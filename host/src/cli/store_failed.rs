//! A command the store's error stopped (a database store's server gone):
//! `test` and `fuzz` report the runs they made, then the error and every
//! run the database did not take, which the working folder keeps.

use super::exit::{ExitCode, exit_code_of};
use std::path::PathBuf;

/// `doc` (the command's `--json` report) with the error that stopped it
/// and the bundles set aside, as `fork --samples --json` ends a document
/// with its error.
pub(super) fn add_to_json(doc: &mut serde_json::Value, err: &anyhow::Error, set_aside: &[PathBuf]) {
    if let Some(map) = doc.as_object_mut() {
        map.insert("set_aside".into(), serde_json::json!(set_aside));
        let code = exit_code_of(err);
        map.insert("error".into(), super::error_json(code, err)["error"].take());
    }
}

/// Say the error on stderr, then every run the database did not take
/// (the error names the one it is about; runs under way when the server
/// went away set theirs aside too), and `again`: what to run again.
/// Gives the error's exit code.
pub(super) fn report(err: &anyhow::Error, set_aside: &[PathBuf], again: &str) -> ExitCode {
    super::print_error(err);
    if !set_aside.is_empty() {
        eprintln!(
            "note: {} run(s) were not stored and are set aside (once the server is back, the next command that reads the store removes those it holds after all; {again}):",
            set_aside.len()
        );
        for path in set_aside {
            eprintln!(
                "  {}",
                worldline_case::shown::message(&path.display().to_string())
            );
        }
    }
    exit_code_of(err)
}
