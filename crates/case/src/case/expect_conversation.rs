//! `[expect.conversation]`: what the agent must have said to the user
//! (contains / any_of / regex, case-sensitive or not, over all its messages
//! or the last one), how many turns it may take, which tool calls it must
//! have asked approval for first, and whether the user must end satisfied.

use crate::world::{self, World};
use serde::Deserialize;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConversationCheck {
    /// The most messages the agent may send the user.
    pub max_turns: Option<u64>,
    /// The user must have ended the conversation satisfied (`true`), or
    /// must not have (`false`).
    pub satisfied: Option<bool>,
    /// Tools (names or globs) every call of which must follow an approval
    /// the agent asked for and got, since the tool's previous call.
    pub approval_before: Vec<String>,
    pub said: Vec<SaidCheck>,
}

/// A check on the agent's messages to the user.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SaidCheck {
    pub contains: Option<String>,
    pub any_of: Vec<String>,
    pub regex: Option<String>,
    /// Compare text ignoring case (`contains`, `any_of`, `regex`).
    pub case_insensitive: bool,
    /// Look only at the agent's last message (default: any message).
    pub last: bool,
    /// The agent must NOT have said it.
    pub absent: bool,
}

impl ConversationCheck {
    /// What is wrong with the check, with the number (from 0) of the
    /// `said` check it is in, if it is in one.
    pub fn check(&self, world: &World) -> Result<(), (Option<usize>, String)> {
        for t in &self.approval_before {
            if !world::names_a_tool(t, &world.tools) {
                return Err((
                    None,
                    format!(
                        "conversation.approval_before: `{t}` names no tool of {}",
                        world.reference()
                    ),
                ));
            }
        }
        for (i, s) in self.said.iter().enumerate() {
            s.check()
                .map_err(|m| (Some(i), format!("conversation.said #{}: {m}", i + 1)))?;
        }
        Ok(())
    }
}

impl SaidCheck {
    pub(super) fn check(&self) -> Result<(), String> {
        let tests = [
            self.contains.is_some(),
            !self.any_of.is_empty(),
            self.regex.is_some(),
        ];
        if tests.iter().filter(|t| **t).count() != 1 {
            return Err("needs exactly one of contains, any_of, regex".into());
        }
        if self.regex.is_some() {
            self.pattern().map(drop)?;
        }
        Ok(())
    }

    /// The compiled `regex`, honouring `case_insensitive`.
    pub fn pattern(&self) -> Result<Option<regex::Regex>, String> {
        let Some(r) = &self.regex else {
            return Ok(None);
        };
        regex::RegexBuilder::new(r)
            .case_insensitive(self.case_insensitive)
            .build()
            .map(Some)
            .map_err(|e| crate::error::regex_error(r, &e))
    }

    /// Whether one message says what the check looks for.
    pub fn says(&self, message: &str) -> bool {
        let fold = |s: &str| {
            if self.case_insensitive {
                s.to_lowercase()
            } else {
                s.to_string()
            }
        };
        let text = fold(message);
        if let Some(c) = &self.contains {
            return text.contains(&fold(c));
        }
        if !self.any_of.is_empty() {
            return self.any_of.iter().any(|c| text.contains(&fold(c)));
        }
        matches!(self.pattern(), Ok(Some(re)) if re.is_match(message))
    }

    /// How the check reads in a grade (`said contains "refund"`).
    pub fn describe(&self) -> String {
        let what = if let Some(c) = &self.contains {
            format!("contains {c:?}")
        } else if let Some(r) = &self.regex {
            format!("matches /{r}/")
        } else {
            format!("any of {:?}", self.any_of)
        };
        format!(
            "agent {}{} {what}{}",
            if self.last { "last message" } else { "said" },
            if self.absent { " never" } else { "" },
            if self.case_insensitive {
                " (any case)"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_checks_fold_case_when_asked() {
        let s: SaidCheck = toml::from_str("contains = 'Refund'").unwrap();
        assert!(s.says("Refund issued"));
        assert!(!s.says("refund issued"));
        let s: SaidCheck = toml::from_str("contains = 'Refund'\ncase_insensitive = true").unwrap();
        assert!(s.says("refund issued"));
        let s: SaidCheck =
            toml::from_str("regex = 'order [A-Z]-\\d+'\ncase_insensitive = true").unwrap();
        assert!(s.says("Which ORDER a-12?"));
        let s: SaidCheck = toml::from_str("any_of = ['confirm', 'sure']").unwrap();
        assert!(s.says("are you sure?"));
        let two: SaidCheck = toml::from_str("contains = 'a'\nregex = 'b'").unwrap();
        assert!(two.check().is_err());
    }
}
