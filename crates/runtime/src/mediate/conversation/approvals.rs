//! Approvals: the case's `[[approve]]` rules answer a request (the agent's,
//! or the host's before a tool whose permission is `ask`); the first rule
//! that matches decides, and with none the request is denied.

use serde_json::{Value, json};
use worldline_case::case::approve::{ApproveRule, Decision, NO_RULE};

/// The recorded answer to a request of `kind` with `details`, and the
/// approver's virtual latency in milliseconds.
pub(crate) fn answer(rules: &[ApproveRule], kind: &str, details: &Value) -> (Value, u64) {
    match rules.iter().position(|r| r.matches(kind, details)) {
        Some(i) => {
            let r = &rules[i];
            let answer = match r.decision {
                Decision::Approve => json!({"approved": true, "approver": {"rule": i}}),
                Decision::Deny => json!({
                    "denied": r.reason.as_deref().unwrap_or("denied by the approver"),
                    "approver": {"rule": i},
                }),
            };
            (answer, r.latency_ms)
        }
        None => (json!({"denied": NO_RULE, "approver": {"default": true}}), 0),
    }
}

/// The denial reason of a recorded answer, `None` when approved.
pub(crate) fn denial(response: &Value) -> Option<String> {
    if response.get("approved").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    Some(
        response["denied"]
            .as_str()
            .unwrap_or("denied by the approver")
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_rule_decides_and_no_rule_denies() {
        let rules: Vec<ApproveRule> = vec![
            toml::from_str("kind = 'refund'\ndecision = 'deny'\nreason = 'over limit'").unwrap(),
            toml::from_str("decision = 'approve'\nlatency_ms = 5").unwrap(),
        ];
        let (a, ms) = answer(&rules, "refund", &json!({}));
        assert_eq!((denial(&a).as_deref(), ms), (Some("over limit"), 0));
        let (a, ms) = answer(&rules, "cancel", &json!({}));
        assert_eq!((denial(&a), ms), (None, 5));
        let (a, _) = answer(&[], "cancel", &json!({}));
        assert_eq!(denial(&a).as_deref(), Some(NO_RULE));
    }
}
