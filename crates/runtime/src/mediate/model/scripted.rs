//! The scripted provider: rules matched against the last user/tool message
//! (first match wins), then the case's replies in order. A rule with
//! weighted alternatives picks one with the run's model seed, so another
//! seed gives another trajectory and the same seed the same one.
//!
//! Why a fuzz campaign's model faults come from weighted replies (was decision
//! 0278): alternatives such as `error = "unavailable"` with `status = 429` need
//! no new fault-profile key, since the scripted model already draws from the
//! model seed (which a campaign varies with the run seed), and a retry, being
//! the same request, matches the same rule and draws again, as a flaky API
//! does. A `[[fuzz.model]]` table of error probabilities (recorded and shrunk
//! like tool faults) is for when cases with live or recorded providers need
//! model faults.

use super::chat;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use serde_json::{Value, json};
use worldline_case::case::model::{ModelConfig, Reply, Rule};
use worldline_case::path::JsonPath;
use worldline_log::log::rules;

pub(crate) struct Scripted {
    rules: Vec<(Rule, Option<JsonPath>)>,
    responses: Vec<Reply>,
    next: usize,
    rng: ChaCha20Rng,
}

/// The reply chosen for a call and where it came from (recorded).
pub(crate) struct Chosen {
    pub reply: Reply,
    pub source: Value,
}

impl Scripted {
    pub(crate) fn new(config: &ModelConfig, rng: ChaCha20Rng) -> Self {
        Scripted {
            rules: config
                .rules
                .iter()
                .map(|r| {
                    (
                        r.clone(),
                        r.path.as_deref().and_then(|p| JsonPath::parse(p).ok()),
                    )
                })
                .collect(),
            responses: config.responses.clone(),
            next: 0,
            rng,
        }
    }

    /// Draws for alternatives come from this stream from now on.
    pub(crate) fn reseed(&mut self, rng: ChaCha20Rng) {
        self.rng = rng;
    }

    /// The reply for `request`, or why there is none (worded as the run's
    /// `rules` say).
    pub(crate) fn choose(&mut self, request: &Value, rules: u32) -> Result<Chosen, String> {
        let input = chat::last_input(request);
        let hit = self
            .rules
            .iter()
            .position(|(rule, path)| matches(rule, path.as_ref(), input.as_ref()));
        if let Some(i) = hit {
            let rule = &self.rules[i].0;
            if let Some(reply) = &rule.reply {
                return Ok(Chosen {
                    reply: reply.clone(),
                    source: json!({"rule": i}),
                });
            }
            let total: u64 = rule.alternatives.iter().map(|a| u64::from(a.weight)).sum();
            let mut draw = self.rng.next_u64() % total;
            let (j, alt) = rule
                .alternatives
                .iter()
                .enumerate()
                .find(|(_, a)| {
                    let w = u64::from(a.weight);
                    if draw < w {
                        true
                    } else {
                        draw -= w;
                        false
                    }
                })
                .expect("the draw is below the total weight");
            return Ok(Chosen {
                reply: alt.reply.clone(),
                source: json!({"rule": i, "alternative": j}),
            });
        }
        match self.responses.get(self.next) {
            Some(reply) => {
                self.next += 1;
                Ok(Chosen {
                    reply: reply.clone(),
                    source: json!({"response": self.next - 1}),
                })
            }
            None => Err(format!("{NO_REPLY}{}", self.none_left(rules))),
        }
    }

    /// Why no reply is left, as the run's `rules` word it: from rules 10
    /// by what the case scripts ([`rules::UNSCRIPTED_SAYS_WHAT_THE_CASE_SCRIPTS`]).
    fn none_left(&self, rules: u32) -> String {
        let n = self.responses.len();
        if rules < rules::UNSCRIPTED_SAYS_WHAT_THE_CASE_SCRIPTS {
            return format!("no [[model.rules]] matched and all {n} of [model] responses are used");
        }
        let used = match n {
            0 => "the case has no [[model.responses]]".to_string(),
            1 => "the case's one [[model.responses]] entry is used".to_string(),
            n => format!("all {n} of the case's [[model.responses]] are used"),
        };
        match (self.rules.is_empty(), n) {
            (true, 0) => "the case scripts no replies: give its [model] [[model.responses]] (or [[model.rules]])".to_string(),
            (true, _) => used,
            (false, _) => format!("no [[model.rules]] matched and {used}"),
        }
    }
}

/// How [`Scripted::choose`]'s reason starts.
const NO_REPLY: &str = "the scripted model has no reply for this request: ";

/// The longest part of the agent's message an `unscripted` run's error
/// shows.
const SHOWN: usize = 300;

/// Why the run stops when the script has no reply (`why`, from
/// [`Scripted::choose`]), with the agent's last user or tool message, cut
/// to [`SHOWN`] characters; from rules 10 it says no reply was left, not
/// that no rule matched (the case may have none).
pub(crate) fn unmatched(why: &str, request: &Value, rules: u32) -> String {
    let text = chat::last_input(request).map_or_else(String::new, |(t, _)| t);
    let mut shown: String = text.chars().take(SHOWN).collect();
    if text.chars().count() > SHOWN {
        shown.push('…');
    }
    let lead = if rules < rules::UNSCRIPTED_SAYS_WHAT_THE_CASE_SCRIPTS {
        "no rule matched the last message"
    } else {
        "no reply for the last message"
    };
    format!(
        "scripted model: {lead} ({}); the message: {}",
        why.strip_prefix(NO_REPLY).unwrap_or(why),
        worldline_case::canon::to_string(&Value::String(shown))
    )
}

fn matches(rule: &Rule, path: Option<&JsonPath>, input: Option<&(String, Value)>) -> bool {
    if rule.contains.is_none() && path.is_none() {
        return true;
    }
    let Some((text, message)) = input else {
        return false;
    };
    if let Some(needle) = &rule.contains
        && !text.contains(needle.as_str())
    {
        return false;
    }
    if let Some(path) = path {
        let Some(found) = path.get(message) else {
            return false;
        };
        if let Some(want) = &rule.equals
            && found != want
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use worldline_case::case::model::Alternative;

    fn config() -> ModelConfig {
        ModelConfig {
            rules: vec![
                Rule {
                    path: Some("$.content.status".into()),
                    equals: Some(json!("open")),
                    alternatives: vec![
                        Alternative {
                            weight: 1,
                            reply: Reply::Text("a".into()),
                        },
                        Alternative {
                            weight: 1,
                            reply: Reply::Text("b".into()),
                        },
                    ],
                    ..Rule::default()
                },
                Rule {
                    contains: Some("hello".into()),
                    reply: Some(Reply::Text("hi".into())),
                    ..Rule::default()
                },
            ],
            responses: vec![Reply::Text("first".into())],
            ..ModelConfig::default()
        }
    }

    fn ask(s: &mut Scripted, role: &str, content: &str) -> Result<Value, String> {
        let req = json!({"messages": [{"role": role, "content": content}]});
        s.choose(&req, rules::CURRENT)
            .map(|c| json!([c.reply, c.source]))
    }

    #[test]
    fn rules_first_then_replies_in_order_then_a_clear_miss() {
        let mut s = Scripted::new(&config(), ChaCha20Rng::seed_from_u64(1));
        assert_eq!(
            ask(&mut s, "user", "well hello").unwrap(),
            json!(["hi", {"rule": 1}])
        );
        assert_eq!(
            ask(&mut s, "user", "other").unwrap(),
            json!(["first", {"response": 0}])
        );
        assert!(
            ask(&mut s, "user", "other")
                .unwrap_err()
                .contains("no reply")
        );
    }

    /// From rules 10 the miss says what the case scripts; under 9 it said
    /// "all 0 of [model] responses are used" of a case with none.
    #[test]
    fn a_miss_says_what_the_case_scripts_from_rules_10() {
        let req = json!({"messages": [{"role": "user", "content": "hi"}]});
        let why = |config: &ModelConfig, rules| {
            let mut s = Scripted::new(config, ChaCha20Rng::seed_from_u64(1));
            (0..config.responses.len()).for_each(|_| drop(s.choose(&req, rules)));
            s.choose(&req, rules).err().unwrap()
        };
        let none = ModelConfig::default();
        assert_eq!(
            why(&none, 9),
            "the scripted model has no reply for this request: no [[model.rules]] matched and all 0 of [model] responses are used"
        );
        assert_eq!(
            why(&none, 10),
            "the scripted model has no reply for this request: the case scripts no replies: give its [model] [[model.responses]] (or [[model.rules]])"
        );
        let two = ModelConfig {
            responses: vec![Reply::Text("a".into()), Reply::Text("b".into())],
            ..ModelConfig::default()
        };
        assert!(why(&two, 10).ends_with(": all 2 of the case's [[model.responses]] are used"));
        let ruled = ModelConfig {
            rules: vec![Rule {
                contains: Some("never".into()),
                reply: Some(Reply::Text("x".into())),
                ..Rule::default()
            }],
            ..ModelConfig::default()
        };
        assert!(
            why(&ruled, 10)
                .ends_with(": no [[model.rules]] matched and the case has no [[model.responses]]")
        );
        let stop = unmatched(&why(&none, 10), &req, 10);
        assert!(
            stop.starts_with(
                "scripted model: no reply for the last message (the case scripts no replies"
            ),
            "{stop}"
        );
        assert!(
            unmatched(&why(&none, 9), &req, 9)
                .starts_with("scripted model: no rule matched the last message (")
        );
    }

    #[test]
    fn alternatives_follow_the_seed() {
        let picks = |seed| {
            let mut s = Scripted::new(&config(), ChaCha20Rng::seed_from_u64(seed));
            (0..16)
                .map(|_| ask(&mut s, "tool", "{\"status\":\"open\"}").unwrap()[0].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(7), picks(7));
        assert_ne!(picks(7), picks(8));
        assert!(picks(7).contains(&json!("a")) && picks(7).contains(&json!("b")));
    }
}
