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

    /// The reply for `request`, or why there is none.
    pub(crate) fn choose(&mut self, request: &Value) -> Result<Chosen, String> {
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
            None => Err(format!(
                "the scripted model has no reply for this request: no [[model.rules]] matched and all {} of [model] responses are used",
                self.responses.len()
            )),
        }
    }
}

/// The longest part of the agent's message an `unscripted` run's error
/// shows.
const SHOWN: usize = 300;

/// Why the run stops when the script has no reply (`why`, from
/// [`Scripted::choose`]), with the agent's last user or tool message, cut
/// to [`SHOWN`] characters.
pub(crate) fn unmatched(why: &str, request: &Value) -> String {
    let text = chat::last_input(request).map_or_else(String::new, |(t, _)| t);
    let mut shown: String = text.chars().take(SHOWN).collect();
    if text.chars().count() > SHOWN {
        shown.push('…');
    }
    format!(
        "scripted model: no rule matched the last message ({}); the message: {}",
        why.strip_prefix("the scripted model has no reply for this request: ")
            .unwrap_or(why),
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
        s.choose(&req).map(|c| json!([c.reply, c.source]))
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
