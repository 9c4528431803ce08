//! `[fuzz.user]`: faults on the user's side of a conversation — a slow
//! user (virtual latency), a user who goes silent (ends the conversation),
//! a user who answers with one of several alternative lines instead of the
//! scripted one, and approvers who deny with a probability. A fuzz run
//! draws them like tool faults and records them against the pseudo-tools
//! `user.say` and `approval.request`, so schedules, shrinking and
//! reproducers treat them like any other fault.

use super::fuzz::LatencyFault;
use serde::{Deserialize, Serialize};

/// The pseudo-tool user turns are counted and scheduled under.
pub const USER_TURN: &str = "user.say";
/// The pseudo-tool approval requests are counted and scheduled under.
pub const APPROVAL: &str = "approval.request";

/// Another line instead of the user's own, with a probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyFault {
    pub p: f64,
    /// The lines one is drawn from (uniformly).
    pub with: Vec<String>,
}

/// The `[fuzz.user]` table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserFaults {
    /// The user takes this long to answer (virtual time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencyFault>,
    /// Probability the user goes silent: the conversation ends there.
    #[serde(default)]
    pub silent: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<ReplyFault>,
    /// Probability an approval request is denied whatever the rules say.
    #[serde(default)]
    pub deny_approvals: f64,
}

impl UserFaults {
    pub fn check(&self) -> Result<(), String> {
        let prob = |what: &str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(p)
            } else {
                Err(format!(
                    "[fuzz.user] {what} = {p} is not a probability; give a number from 0 to 1"
                ))
            }
        };
        let mut total = prob("silent", self.silent)?;
        if let Some(r) = &self.reply {
            total += prob("reply.p", r.p)?;
            if r.with.is_empty() {
                return Err("[fuzz.user] reply.with needs at least one line".into());
            }
        }
        if total > 1.0 + 1e-9 {
            return Err(format!(
                "[fuzz.user] silent and reply.p add up to {total}; at most one strikes a turn, so they must add up to 1 or less"
            ));
        }
        prob("deny_approvals", self.deny_approvals)?;
        if let Some(l) = &self.latency_ms {
            prob("latency_ms.p", l.p)?;
            if l.ms.lo < 0 || l.ms.lo > l.ms.hi {
                return Err(format!(
                    "[fuzz.user] latency_ms.ms = [{}, {}] must be a range from 0 or more",
                    l.ms.lo, l.ms.hi
                ));
            }
        }
        Ok(())
    }
}
