//! A runner's events go to a sink (the `--events` file, a progress bar)
//! while the runs go on: the first error the sink returns is kept, not
//! raised mid-run, and once the runner ends it fails the operation naming
//! the events file.

use anyhow::Result;
use std::path::Path;
use std::sync::Mutex;
use worldline_case::error::InputError;

/// The first error a sink returned.
pub(crate) struct FirstError(Mutex<Option<std::io::Error>>);

impl FirstError {
    pub(crate) fn new() -> Self {
        FirstError(Mutex::new(None))
    }

    /// Keeps `result`'s error if it is the first.
    pub(crate) fn keep(&self, result: std::io::Result<()>) {
        if let Err(err) = result
            && let Ok(mut first) = self.0.lock()
        {
            first.get_or_insert(err);
        }
    }

    /// An error naming `file` if the sink failed while writing it.
    pub(crate) fn into_result(self, file: Option<&Path>) -> Result<()> {
        let error = self.0.into_inner().unwrap_or_else(|e| e.into_inner());
        match (file, error) {
            (Some(path), Some(err)) => {
                Err(InputError::new(path, format!("cannot write: {err}")).into())
            }
            _ => Ok(()),
        }
    }
}
