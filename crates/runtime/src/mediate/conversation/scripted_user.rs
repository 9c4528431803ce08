//! The scripted user: the case's `[[user.rules]]` in order (the first that
//! matches the agent's message and turn answers), a weighted alternative
//! drawn from the run's user stream, then the default reply.

use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use serde_json::{Value, json};
use worldline_case::case::user::{Line, UserCall, UserConfig};

pub(crate) struct ScriptedUser {
    config: UserConfig,
    rng: ChaCha20Rng,
}

impl ScriptedUser {
    pub(crate) fn new(config: &UserConfig, rng: ChaCha20Rng) -> Self {
        ScriptedUser {
            config: config.clone(),
            rng,
        }
    }

    /// The calls of the user's own tools the rule answering the agent's
    /// `turn`-th message `text` makes first (none when no rule matches).
    pub(crate) fn calls(&self, text: &str, turn: u32) -> &[UserCall] {
        self.config
            .rules
            .iter()
            .find(|r| r.matches(text, turn))
            .map_or(&[], |r| &r.calls)
    }

    /// The line for the agent's `turn`-th message `text`, where it came
    /// from (recorded), and the virtual latency in milliseconds.
    pub(crate) fn answer(&mut self, text: &str, turn: u32) -> (Line, Value, u64) {
        let latency = self.config.latency_ms;
        let Some(i) = self.config.rules.iter().position(|r| r.matches(text, turn)) else {
            let line = match &self.config.default {
                Some(reply) => Line {
                    reply: Some(reply.clone()),
                    ..Line::default()
                },
                None => Line {
                    end: Some("the user has nothing to say to that".into()),
                    ..Line::default()
                },
            };
            return (line, json!({"default": true}), latency);
        };
        let rule = &self.config.rules[i];
        let latency = rule.latency_ms.unwrap_or(latency);
        if rule.alternatives.is_empty() {
            return (rule.line(), json!({"rule": i}), latency);
        }
        let total: u64 = rule.alternatives.iter().map(|a| u64::from(a.weight)).sum();
        let mut draw = self.rng.next_u64() % total;
        for (j, a) in rule.alternatives.iter().enumerate() {
            let w = u64::from(a.weight);
            if draw < w {
                return (a.line(), json!({"rule": i, "alternative": j}), latency);
            }
            draw -= w;
        }
        unreachable!("the draw is below the total weight")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mediate::entropy::stream;

    fn user() -> UserConfig {
        toml::from_str(
            r#"
default = "Sorry?"
[[rules]]
contains = "confirm"
alternatives = [{reply = "yes"}, {end = "changed my mind"}]
[[rules]]
turn = 1
reply = "hello"
"#,
        )
        .unwrap()
    }

    #[test]
    fn rules_then_default_and_alternatives_follow_the_seed() {
        let mut u = ScriptedUser::new(&user(), stream(1, "user"));
        let (line, source, _) = u.answer("Hi, how can I help?", 1);
        assert_eq!(
            (line.reply.as_deref(), source),
            (Some("hello"), json!({"rule": 1}))
        );
        let (line, source, _) = u.answer("What now?", 2);
        assert_eq!(
            (line.reply.as_deref(), source),
            (Some("Sorry?"), json!({"default": true}))
        );
        let picks = |seed| {
            let mut u = ScriptedUser::new(&user(), stream(seed, "user"));
            (0..16)
                .map(|t| u.answer("Please CONFIRM", t + 2).1)
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(3), picks(3));
        assert_ne!(picks(3), picks(4));
    }
}
