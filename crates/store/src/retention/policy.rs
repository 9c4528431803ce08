//! The retention policy: `<store>/policy.toml` (a database store keeps
//! its text in the database, for every machine: `store/shared.rs`),
//! overridden by `gc` flags; `worldline retention` shows and sets it.
//!
//! ```toml
//! [keep]          # days a run is kept, by outcome
//! passed = 7
//! failed = 90
//! faulted = 90    # agent faults: trapped, out of fuel, memory, timeout, exit
//! incomplete = 90 # no footer (the process died), or an unreadable bundle
//!
//! [cache]
//! unused_days = 30  # compiled agents not used for this long are removed
//! ```

use crate::store::StoreDir;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use worldline_case::error::InputError;

/// The policy file inside a store.
pub const FILE: &str = "policy.toml";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Keep {
    pub passed: u64,
    pub failed: u64,
    pub faulted: u64,
    pub incomplete: u64,
}

impl Default for Keep {
    fn default() -> Self {
        Keep {
            passed: 7,
            failed: 90,
            faulted: 90,
            incomplete: 90,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cache {
    pub unused_days: u64,
}

impl Default for Cache {
    fn default() -> Self {
        Cache { unused_days: 30 }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    pub keep: Keep,
    pub cache: Cache,
}

impl Policy {
    /// The store's policy file, or the defaults when there is none.
    pub fn load(store_root: &Path) -> Result<Policy, InputError> {
        let path = store_root.join(FILE);
        match read(&path)? {
            Some(source) => Policy::parse(&path, &source),
            None => Ok(Policy::default()),
        }
    }

    /// The policy `source` holds (`path` names it in errors, with the line).
    pub fn parse(path: &Path, source: &str) -> Result<Policy, InputError> {
        worldline_case::toml_tokens::check(path, source)?;
        toml::from_str(source).map_err(|e| InputError::toml(path, source, &e))
    }

    /// The store's policy and where it comes from: a database store's from
    /// its database, a folder store's from its policy.toml; the defaults
    /// when none was set.
    pub fn of_store(store: &StoreDir) -> Result<(Policy, Source), InputError> {
        if store.database().is_some() {
            let name = PathBuf::from(format!("{} (retention policy)", store.name()));
            return Ok(match store.retention_text()? {
                Some(text) => (Policy::parse(&name, &text)?, Source::Database(text)),
                None => (Policy::default(), Source::Defaults),
            });
        }
        let path = store.root.join(FILE);
        Ok(match read(&path)? {
            Some(text) => (Policy::parse(&path, &text)?, Source::File(path, text)),
            None => (Policy::default(), Source::Defaults),
        })
    }

    /// Check the policy `text` read from `file` (errors name it and the
    /// line) and make it the store's: a folder store's policy.toml, or a
    /// database store's row (a responder's).
    pub fn set(store: &StoreDir, file: &Path, text: &str) -> Result<Policy, InputError> {
        let policy = Policy::parse(file, text)?;
        if store.database().is_some() {
            store.set_retention_text(text)?;
        } else {
            let path = store.root.join(FILE);
            worldline_case::durable::write(&path, text.as_bytes())
                .map_err(|e| store.write_error(&path, e))?;
        }
        Ok(policy)
    }

    /// Days a run with this outcome (an index row's `outcome`) is kept.
    pub fn days(&self, outcome: &str) -> u64 {
        match outcome {
            "passed" => self.keep.passed,
            "failed" => self.keep.failed,
            "faulted" => self.keep.faulted,
            _ => self.keep.incomplete,
        }
    }
}

/// Where a store's policy comes from, with its text.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    File(PathBuf, String),
    Database(String),
    Defaults,
}

/// A policy file's text; `None` when there is none.
fn read(path: &Path) -> Result<Option<String>, InputError> {
    match worldline_case::bounded::read_text(path, worldline_case::bounded::DOCUMENT) {
        Ok(s) => Ok(Some(s)),
        Err(worldline_case::bounded::Refused::Io(e))
            if e.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(InputError::new(path, format!("cannot read: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_file_overrides_some_defaults_and_names_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Policy::load(dir.path()).unwrap(), Policy::default());
        std::fs::write(dir.path().join(FILE), "[keep]\npassed = 1\n").unwrap();
        let p = Policy::load(dir.path()).unwrap();
        assert_eq!((p.days("passed"), p.days("failed")), (1, 90));
        std::fs::write(dir.path().join(FILE), "[keep]\npassed = 1\nfialed = 3\n").unwrap();
        let e = Policy::load(dir.path()).unwrap_err();
        assert_eq!(e.line.map(|l| l.0), Some(3), "{e}");
        assert!(e.to_string().contains("fialed"), "{e}");
    }
}
