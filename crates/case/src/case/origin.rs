//! A case's `[origin]`: the recorded run (`worldline case from-run`) or the
//! OpenTelemetry trace (`case from-trace`) it was made from, with the hash
//! that says whether that source is still the one it was made from, so a
//! test can be traced back to its incident.

use serde::{Deserialize, Serialize};

/// What a case was made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreatedFrom {
    Run,
    Trace,
}

/// `[origin]` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub created_from: CreatedFrom,
    /// The source run's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The source run's chain hash (its footer's): which run, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_hash: Option<String>,
    /// The copy of the source bundle, relative to the case file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// The content hash of the world the run met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_hash: Option<String>,
    /// The source trace's id (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// SHA-256 of the trace file the case was made from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_sha256: Option<String>,
}

impl Origin {
    /// Where the case came from, in words.
    pub fn source(&self) -> String {
        match (&self.run, &self.trace_id) {
            (Some(run), _) => format!("run {run}"),
            (None, Some(t)) => format!("trace {t}"),
            (None, None) => "an unnamed source".into(),
        }
    }
}
