//! `[[approve]]` rules: who answers the agent's approval requests (and the
//! host's, for world tools whose permission is `ask`). A rule matches on
//! the request's kind (a name or glob) and its details (a JSON path and
//! value, or a substring of the details' JSON text) and approves or denies
//! with a reason, optionally after a virtual delay. The first rule that
//! matches answers; a rule without conditions is the default; when no rule
//! matches the request is denied.

use crate::path::JsonPath;
use crate::world::glob_match;
use serde::Deserialize;
use serde_json::Value;

/// What an approver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Approve,
    Deny,
}

/// One `[[approve]]` rule.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproveRule {
    /// The request's kind, a name or glob (`refund`, `tool`, `*`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Path into the details (e.g. `$.amount`, or `$.tool` for a tool call
    /// the host asks about).
    #[serde(default)]
    pub path: Option<String>,
    /// With `path`: the value there must equal this.
    #[serde(default)]
    pub equals: Option<Value>,
    /// Substring of the details' canonical JSON text.
    #[serde(default)]
    pub contains: Option<String>,
    pub decision: Decision,
    /// The reason given with a denial (default: "denied by the approver").
    #[serde(default)]
    pub reason: Option<String>,
    /// Virtual time the approver takes, in milliseconds.
    #[serde(default)]
    pub latency_ms: u64,
}

/// The reason when no rule matches.
pub const NO_RULE: &str = "no [[approve]] rule matched this request";

impl ApproveRule {
    pub fn check(&self) -> Result<(), String> {
        match (&self.path, &self.equals) {
            (Some(p), _) => JsonPath::parse(p)
                .map(drop)
                .map_err(|m| format!("path `{p}`: {m}")),
            (None, Some(_)) => Err("`equals` needs a `path`".into()),
            (None, None) => Ok(()),
        }?;
        if self.decision == Decision::Approve && self.reason.is_some() {
            return Err("`reason` goes with decision = \"deny\"".into());
        }
        super::recorded::check_ms("latency_ms", self.latency_ms)
    }

    /// Whether the rule answers a request of `kind` with `details`.
    pub fn matches(&self, kind: &str, details: &Value) -> bool {
        if self.kind.as_ref().is_some_and(|k| !glob_match(k, kind)) {
            return false;
        }
        if let Some(c) = &self.contains
            && !crate::canon::to_string(details).contains(c.as_str())
        {
            return false;
        }
        if let Some(p) = &self.path {
            let found = JsonPath::parse(p)
                .ok()
                .and_then(|p| p.get(details).cloned());
            match (&found, &self.equals) {
                (None, _) => return false,
                (Some(f), Some(want)) if f != want => return false,
                _ => {}
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_match_kind_globs_paths_and_text() {
        let r: ApproveRule =
            toml::from_str("kind = 'ref*'\npath = '$.amount'\nequals = 20\ndecision = 'approve'")
                .unwrap();
        assert!(r.matches("refund", &json!({"amount": 20})));
        assert!(!r.matches("refund", &json!({"amount": 25})));
        assert!(!r.matches("cancel", &json!({"amount": 20})));
        let r: ApproveRule = toml::from_str("contains = 'A-1'\ndecision = 'deny'").unwrap();
        assert!(r.matches("tool", &json!({"args": {"order": "A-1"}})));
        assert!(!r.matches("tool", &json!({"args": {"order": "A-2"}})));
        let bad: ApproveRule = toml::from_str("equals = 1\ndecision = 'deny'").unwrap();
        assert_eq!(bad.check().unwrap_err(), "`equals` needs a `path`");
        let bad: ApproveRule = toml::from_str("decision = 'approve'\nreason = 'x'").unwrap();
        assert!(bad.check().unwrap_err().contains("deny"));
    }
}
