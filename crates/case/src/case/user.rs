//! The case's `[user]` table: who plays the user the agent talks to — a
//! script of rules (`scripted`: match on the agent's message text, a JSON
//! path into it, or the turn number; weighted alternatives drawn from the
//! seed; a default reply; a turn limit) or a model (`model`: a persona
//! played through the same providers as the agent's model calls). A
//! scripted rule may also make the user call their own tools (the world's
//! `[[user_tools]]`) before answering. A model-played user may keep a
//! scripted stand-in (`rules`, `default`) that plays when no model is
//! configured for it (decision 0386).

use super::model::ModelConfig;
use crate::path::JsonPath;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who answers `worldline:agent/user.say`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlayedBy {
    #[default]
    Scripted,
    Model,
}

/// The `[user]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UserConfig {
    pub played_by: PlayedBy,
    /// `scripted`: rules tried in order; the first that matches answers.
    pub rules: Vec<UserRule>,
    /// `scripted`: the reply when no rule matches (without one, the user
    /// ends the conversation).
    pub default: Option<String>,
    /// The agent's messages the user answers; the next one ends the
    /// conversation with reason `turn limit`.
    pub max_turns: Option<u32>,
    /// Virtual time the user takes to answer, in milliseconds.
    pub latency_ms: u64,
    /// `model`: who the user is and what they want (the model's system
    /// message).
    pub persona: String,
    /// `model`: the provider that plays the user (`[user.model]`, the same
    /// keys as `[model]`).
    pub model: Option<ModelConfig>,
    /// `model`: a reply containing this ends the conversation satisfied.
    pub satisfied_marker: String,
    /// `model`: a reply containing this (or any of these, given a list)
    /// ends it unsatisfied.
    pub end_marker: Markers,
    /// `model`: whether worldline's own instructions (answer as the user,
    /// the markers) follow the persona in the system message; `false` when
    /// the persona is a whole system prompt of its own (a benchmark's).
    pub append_instructions: bool,
    /// `model`: the conversation before the run, as `[agent message, user
    /// reply]` pairs the model sees first (a benchmark's greeting and the
    /// user's opening message, which the task gives the agent).
    pub prior_turns: Vec<(String, String)>,
}

/// One marker, or several (`end_marker = ["###TRANSFER###", "###OUT###"]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Markers(pub Vec<String>);

impl<'de> Deserialize<'de> for Markers {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        match OneOrMany::deserialize(d)
            .map_err(|_| serde::de::Error::custom("a marker is a string or a list of strings"))?
        {
            OneOrMany::One(m) => Ok(Markers(vec![m])),
            OneOrMany::Many(ms) => Ok(Markers(ms)),
        }
    }
}

impl Default for UserConfig {
    fn default() -> Self {
        UserConfig {
            played_by: PlayedBy::Scripted,
            rules: Vec::new(),
            default: None,
            max_turns: None,
            latency_ms: 0,
            persona: String::new(),
            model: None,
            satisfied_marker: "[SATISFIED]".into(),
            end_marker: Markers(vec!["[END]".into()]),
            append_instructions: true,
            prior_turns: Vec::new(),
        }
    }
}

/// What the user says on a turn: a reply, or the end of the conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Line {
    pub reply: Option<String>,
    /// End the conversation with this reason.
    pub end: Option<String>,
    /// With `end`: whether the user leaves satisfied.
    pub satisfied: bool,
}

/// A weighted alternative of a rule: a reply, or an end (with whether the
/// user leaves satisfied).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserAlternative {
    #[serde(default = "one")]
    pub weight: u32,
    #[serde(default)]
    pub reply: Option<String>,
    #[serde(default)]
    pub end: Option<String>,
    #[serde(default)]
    pub satisfied: bool,
}

impl UserAlternative {
    pub fn line(&self) -> Line {
        Line {
            reply: self.reply.clone(),
            end: self.end.clone(),
            satisfied: self.satisfied,
        }
    }
}

fn one() -> u32 {
    1
}

/// A scripted user's rule: every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UserRule {
    /// Substring of the agent's message, compared case-insensitively.
    pub contains: Option<String>,
    /// Any of these substrings (case-insensitive).
    pub any_of: Vec<String>,
    /// A regular expression the message must match.
    pub regex: Option<String>,
    /// Path into the message parsed as JSON (syntax: `crate::path`).
    pub path: Option<String>,
    /// With `path`: the value there must equal this.
    pub equals: Option<Value>,
    /// The agent's n-th message (from 1).
    pub turn: Option<u32>,
    /// The user's reply ...
    pub reply: Option<String>,
    /// ... or the end of the conversation, with this reason ...
    pub end: Option<String>,
    /// ... and whether the user leaves satisfied.
    pub satisfied: bool,
    pub alternatives: Vec<UserAlternative>,
    /// Virtual time this answer takes (default: `[user] latency_ms`).
    pub latency_ms: Option<u64>,
    /// The user's own tools (`[[user_tools]]`) called, in order, before
    /// the user answers.
    pub calls: Vec<UserCall>,
}

/// A call a scripted user's rule makes of one of the user's own tools.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserCall {
    pub tool: String,
    #[serde(default = "no_args")]
    pub args: Value,
}

fn no_args() -> Value {
    Value::Object(Default::default())
}

impl Line {
    fn given(&self) -> bool {
        self.reply.is_some() || self.end.is_some()
    }

    fn check(&self) -> Result<(), String> {
        match (&self.reply, &self.end) {
            (Some(_), Some(_)) => Err("give `reply` or `end`, not both".into()),
            (None, None) => Err("needs `reply` or `end`".into()),
            (Some(_), None) if self.satisfied => Err("`satisfied` goes with `end`".into()),
            _ => Ok(()),
        }
    }
}

impl UserConfig {
    /// Check what serde cannot: each rule answers one way, paths and
    /// patterns parse, a model user has a provider.
    pub fn check(&self) -> Result<(), String> {
        match self.problem() {
            Some((_, m)) => Err(m),
            None => Ok(()),
        }
    }

    /// The first problem [`check`](Self::check) finds, with the rule (from
    /// 0) it is in, when it is in one.
    pub fn problem(&self) -> Option<(Option<usize>, String)> {
        let own = (self.only_keys_of_its_player())
            .and_then(|()| super::recorded::check_ms("[user] latency_ms", self.latency_ms));
        if let Err(m) = own {
            return Some((None, m));
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if let Err(m) = rule.check(&format!("[[user.rules]] #{}", i + 1)) {
                return Some((Some(i), m));
            }
        }
        self.check_player().err().map(|m| (None, m))
    }

    /// A model-played user's markers are given, and its model is one that
    /// can play it (a scripted one has none).
    fn check_player(&self) -> Result<(), String> {
        if self.played_by == PlayedBy::Model
            && (self.satisfied_marker.is_empty()
                || self.end_marker.0.is_empty()
                || self.end_marker.0.iter().any(String::is_empty))
        {
            return Err("[user] satisfied_marker and end_marker must not be empty".into());
        }
        match (self.played_by, &self.model) {
            (PlayedBy::Model, None) if self.has_stand_in() => Ok(()),
            (PlayedBy::Model, None) => Err(
                "[user] played_by = \"model\" needs a [user.model] table (provider, and its replies or base_url), or a scripted stand-in (`default`, [[user.rules]]) that plays when no model is configured (--user-model-set)".into(),
            ),
            (PlayedBy::Model, Some(m)) => {
                if m.calls_out() && m.model.is_none() {
                    return Err(
                        "[user.model] needs `model`: the model name the endpoint plays the user with".into(),
                    );
                }
                m.check().map_err(|e| format!("[user.model]: {e}"))
            }
            (PlayedBy::Scripted, Some(_)) => {
                Err("[user.model] is for played_by = \"model\"; this user is scripted".into())
            }
            (PlayedBy::Scripted, None) => Ok(()),
        }
    }
}

impl UserConfig {
    /// Whether a scripted stand-in is given (`rules` or `default`): for a
    /// model-played user, what plays when no model is configured.
    fn has_stand_in(&self) -> bool {
        !self.rules.is_empty() || self.default.is_some()
    }

    /// Whether the scripted stand-in plays this model-played user: no
    /// model is configured for it (neither `[user.model]` nor
    /// `--user-model-set`). Decision 0386.
    pub fn stand_in_plays(&self) -> bool {
        self.played_by == PlayedBy::Model && self.model.is_none()
    }

    /// Apply `--user-model-set KEY=VALUE` overrides to a model-played
    /// user's `[user.model]` (made from them when the case has none, so the
    /// model plays instead of the stand-in); `false` for a scripted user,
    /// which takes no model and is left as it is.
    pub fn override_model(
        &mut self,
        overrides: &std::collections::BTreeMap<String, String>,
    ) -> Result<bool, String> {
        if self.played_by != PlayedBy::Model || overrides.is_empty() {
            return Ok(false);
        }
        let model = self
            .model
            .clone()
            .unwrap_or_default()
            .with_overrides(overrides)
            .map_err(|m| {
                m.replace("--model-set", "--user-model-set")
                    .replace("[model]", "[user.model]")
            })?;
        self.model = Some(model);
        self.check()?;
        Ok(true)
    }

    /// Every rule's `calls` name a tool of `user_tools` (the world's
    /// `[[user_tools]]`) with an arguments object; else the first rule
    /// that does not (its index, for its place) and why.
    pub fn check_calls(&self, user_tools: &[&str]) -> Result<(), (usize, String)> {
        for (i, rule) in self.rules.iter().enumerate() {
            for c in &rule.calls {
                let at = format!("[[user.rules]] #{}: calls `{}`", i + 1, c.tool);
                if !user_tools.contains(&c.tool.as_str()) {
                    return Err((
                        i,
                        if user_tools.is_empty() {
                            format!(
                                "{at}, but the world has no [[user_tools]]; declare the user's tools in its world.toml"
                            )
                        } else {
                            format!(
                                "{at}, which is not one of the world's [[user_tools]] ({})",
                                user_tools.join(", ")
                            )
                        },
                    ));
                }
                if !c.args.is_object() {
                    return Err((i, format!("{at}: `args` must be a table")));
                }
            }
        }
        Ok(())
    }

    /// Refuse a scripted user's model keys (a scripted user with a
    /// `persona` would silently ignore it), naming the keys it takes. A
    /// model-played user takes every key: its `rules` and `default` are
    /// the stand-in that plays when no model is configured (decision 0386).
    fn only_keys_of_its_player(&self) -> Result<(), String> {
        if self.played_by == PlayedBy::Model {
            return Ok(());
        }
        let d = UserConfig::default();
        let given = [
            ("persona", !self.persona.is_empty()),
            (
                "satisfied_marker",
                self.satisfied_marker != d.satisfied_marker,
            ),
            ("end_marker", self.end_marker != d.end_marker),
            (
                "append_instructions",
                self.append_instructions != d.append_instructions,
            ),
            ("prior_turns", !self.prior_turns.is_empty()),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some((key, _)) => Err(format!(
                "[user] `{key}` is for played_by = \"model\"; this user takes: played_by, rules, default, max_turns, latency_ms"
            )),
            None => Ok(()),
        }
    }
}

impl UserRule {
    /// It answers one way, its path and pattern parse, its turn counts
    /// from 1; `at` names it in the error (`[[user.rules]] #2`).
    fn check(&self, at: &str) -> Result<(), String> {
        if let Some(ms) = self.latency_ms {
            super::recorded::check_ms("latency_ms", ms).map_err(|m| format!("{at}: {m}"))?;
        }
        let line = self.line();
        match (line.given() || self.satisfied, self.alternatives.is_empty()) {
            (true, false) => {
                return Err(format!(
                    "{at}: give `reply`/`end` or `alternatives`, not both"
                ));
            }
            (false, true) => {
                return Err(format!("{at}: needs `reply`, `end` or `alternatives`"));
            }
            (true, true) => line.check().map_err(|m| format!("{at}: {m}"))?,
            (false, false) => {
                for (j, a) in self.alternatives.iter().enumerate() {
                    a.line()
                        .check()
                        .map_err(|m| format!("{at} alternative #{}: {m}", j + 1))?;
                }
                if self.alternatives.iter().all(|a| a.weight == 0) {
                    return Err(format!("{at}: every alternative has weight 0"));
                }
            }
        }
        if let Some(p) = &self.path {
            JsonPath::parse(p).map_err(|m| format!("{at}: path `{p}`: {m}"))?;
        } else if self.equals.is_some() {
            return Err(format!("{at}: `equals` needs a `path`"));
        }
        if let Some(r) = &self.regex {
            regex::Regex::new(r)
                .map_err(|e| format!("{at}: {}", crate::error::regex_error(r, &e)))?;
        }
        if self.turn == Some(0) {
            return Err(format!("{at}: turns count from 1"));
        }
        Ok(())
    }

    /// The rule's own line (when it has no alternatives).
    pub fn line(&self) -> Line {
        Line {
            reply: self.reply.clone(),
            end: self.end.clone(),
            satisfied: self.satisfied,
        }
    }

    /// Whether the rule answers the agent's `turn`-th message `text`.
    pub fn matches(&self, text: &str, turn: u32) -> bool {
        if self.turn.is_some_and(|t| t != turn) {
            return false;
        }
        let lower = text.to_lowercase();
        if let Some(c) = &self.contains
            && !lower.contains(&c.to_lowercase())
        {
            return false;
        }
        if !self.any_of.is_empty()
            && !self
                .any_of
                .iter()
                .any(|c| lower.contains(&c.to_lowercase()))
        {
            return false;
        }
        if let Some(r) = &self.regex
            && !regex::Regex::new(r).is_ok_and(|re| re.is_match(text))
        {
            return false;
        }
        if let Some(p) = &self.path {
            let parsed: Option<Value> = serde_json::from_str(text).ok();
            let found = JsonPath::parse(p)
                .ok()
                .and_then(|p| parsed.as_ref().and_then(|v| p.get(v).cloned()));
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

    fn user(src: &str) -> UserConfig {
        toml::from_str(src).unwrap()
    }

    #[test]
    fn rules_are_checked_when_the_case_loads() {
        let ok = user("default = 'hm'\n[[rules]]\ncontains = 'order'\nreply = 'A-1'");
        assert_eq!(ok.check(), Ok(()));
        let both = user("[[rules]]\nreply = 'a'\nend = 'b'");
        assert_eq!(
            both.check().unwrap_err(),
            "[[user.rules]] #1: give `reply` or `end`, not both"
        );
        let none = user("[[rules]]\ncontains = 'x'");
        assert_eq!(
            none.check().unwrap_err(),
            "[[user.rules]] #1: needs `reply`, `end` or `alternatives`"
        );
        let bad = user("[[rules]]\nregex = '('\nreply = 'a'");
        assert!(
            bad.check()
                .unwrap_err()
                .starts_with("[[user.rules]] #1: regex `(`")
        );
        let model = user("played_by = 'model'");
        assert!(model.check().unwrap_err().contains("[user.model]"));
        let persona = user("persona = 'a frequent flyer'\ndefault = 'ok'");
        assert_eq!(
            persona.check().unwrap_err(),
            "[user] `persona` is for played_by = \"model\"; this user takes: played_by, rules, default, max_turns, latency_ms"
        );
        // A model-played user's rules are its stand-in, which plays while
        // no model is configured; `--user-model-set` configures one.
        let mut stand_in = user("played_by = 'model'\npersona = 'p'\n[[rules]]\nreply = 'a'");
        assert_eq!(stand_in.check(), Ok(()));
        assert!(stand_in.stand_in_plays());
        let set = |kv: &[(&str, &str)]| {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        assert!(
            stand_in
                .override_model(&set(&[("provider", "openai")]))
                .unwrap_err()
                .contains("[user.model] provider `openai` needs `base_url`")
        );
        let live = set(&[
            ("provider", "openai"),
            ("base_url", "http://127.0.0.1:9/v1"),
            ("model", "m"),
        ]);
        assert_eq!(stand_in.override_model(&live), Ok(true));
        assert!(!stand_in.stand_in_plays());
        let mut scripted = user("default = 'ok'");
        assert_eq!(scripted.override_model(&live), Ok(false));
        assert_eq!(scripted.model, None);
        let markers = user("played_by = 'model'\ndefault = 'x'\nend_marker = ['A', 'B']");
        assert_eq!(markers.end_marker, Markers(vec!["A".into(), "B".into()]));
    }

    #[test]
    fn rules_match_text_case_insensitively_paths_and_turns() {
        let r: UserRule = toml::from_str("contains = 'Order Number'\nreply = 'x'").unwrap();
        assert!(r.matches("What is your order number?", 1));
        assert!(!r.matches("What is your name?", 1));
        let r: UserRule = toml::from_str("path = '$.ask'\nequals = 'id'\nreply = 'x'").unwrap();
        assert!(r.matches(r#"{"ask": "id"}"#, 1));
        assert!(!r.matches(r#"{"ask": "name"}"#, 1));
        assert!(!r.matches("not json", 1));
        let r: UserRule = toml::from_str("turn = 2\nregex = '^Shall'\nreply = 'x'").unwrap();
        assert!(r.matches("Shall I?", 2));
        assert!(!r.matches("Shall I?", 1));
        assert!(!r.matches("I shall", 2));
    }
}
