//! The retention policy: `<store>/policy.toml`, overridden by `gc` flags.
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

use crate::error::InputError;
use serde::{Deserialize, Serialize};
use std::path::Path;

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
        let source = match crate::bounded::read_text(&path, crate::bounded::DOCUMENT) {
            Ok(s) => s,
            Err(crate::bounded::Refused::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Policy::default());
            }
            Err(e) => return Err(InputError::new(&path, format!("cannot read: {e}"))),
        };
        toml::from_str(&source).map_err(|e| InputError::toml(&path, &source, &e))
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
