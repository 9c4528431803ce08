//! Injection vectors (`[injection_vectors]` in world.toml): named
//! placeholders (`{name}`) in a world's data where text from outside the
//! user's control lands: an email body, a transaction's subject, a review.
//! Every tool answer the agent sees has each placeholder filled: with the
//! vector's `default`, or, when a case rule or a fuzz fault injects at
//! that vector, with the attack text (AgentDojo's model: the injection
//! task's text placed at the environment's injection vectors). The world's
//! state keeps the placeholders; only what the agent is shown changes.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One vector as declared.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vector {
    /// What the placeholder holds when nothing is injected there.
    #[serde(default)]
    pub default: String,
    /// What the text is (for the reader of the world).
    #[serde(default)]
    pub description: String,
}

/// A vector's name is what its placeholder says between the braces: ASCII
/// letters, digits and `_`.
pub fn check_name(name: &str) -> Result<(), String> {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(())
    } else {
        Err(format!(
            "injection vector `{name}`: a name is ASCII letters, digits and `_` (its placeholder is `{{{name}}}`)"
        ))
    }
}

/// Check that an injection aimed at `vector` (or at every vector) has a
/// vector of the world to land at.
pub fn check_target(
    vector: Option<&str>,
    vectors: &BTreeMap<String, Vector>,
    world: &str,
) -> Result<(), String> {
    match vector {
        _ if vectors.is_empty() => Err(format!(
            "{world} declares no [injection_vectors], so an injection has nowhere to land; declare the placeholders its data holds"
        )),
        Some(v) if !vectors.contains_key(v) => Err(format!(
            "injection vector `{v}` is not one of {world}'s: {}",
            vectors.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
        _ => Ok(()),
    }
}

/// Fill the placeholders of `vectors` in every string of `value`: with
/// `attack` at the vectors it names (`None` = every vector), else with the
/// default. Returns the names of the vectors the attack text went into, in
/// the order of `vectors` (empty: the answer held none of them).
pub fn fill(
    value: &mut Value,
    vectors: &BTreeMap<String, Vector>,
    attack: Option<(Option<&str>, &str)>,
) -> Vec<String> {
    let mut hit = Vec::new();
    if !vectors.is_empty() {
        walk(value, vectors, attack, &mut hit);
    }
    vectors
        .keys()
        .filter(|k| hit.contains(k))
        .cloned()
        .collect()
}

fn walk(
    value: &mut Value,
    vectors: &BTreeMap<String, Vector>,
    attack: Option<(Option<&str>, &str)>,
    hit: &mut Vec<String>,
) {
    match value {
        Value::String(s) if s.contains('{') => {
            for (name, v) in vectors {
                let placeholder = format!("{{{name}}}");
                if !s.contains(&placeholder) {
                    continue;
                }
                let text = match attack {
                    Some((only, text)) if only.is_none_or(|o| o == name) => {
                        hit.push(name.clone());
                        text
                    }
                    _ => v.default.as_str(),
                };
                *s = s.replace(&placeholder, text);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| walk(v, vectors, attack, hit)),
        Value::Object(map) => map.values_mut().for_each(|v| walk(v, vectors, attack, hit)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vectors() -> BTreeMap<String, Vector> {
        BTreeMap::from([
            (
                "inj_subject".to_string(),
                Vector {
                    default: "Sushi dinner".into(),
                    description: String::new(),
                },
            ),
            (
                "inj_note".to_string(),
                Vector {
                    default: String::new(),
                    description: String::new(),
                },
            ),
        ])
    }

    #[test]
    fn defaults_fill_every_placeholder_and_nothing_is_injected() {
        let mut v = json!({"rows": [{"subject": "{inj_subject}", "n": 1}, {"text": "a{inj_note}b {other}"}]});
        assert!(fill(&mut v, &vectors(), None).is_empty());
        assert_eq!(
            v,
            json!({"rows": [{"subject": "Sushi dinner", "n": 1}, {"text": "ab {other}"}]})
        );
    }

    #[test]
    fn an_attack_lands_at_its_vector_only_or_at_every_one() {
        let mut one = json!(["{inj_subject}", "{inj_note}"]);
        let hit = fill(&mut one, &vectors(), Some((Some("inj_note"), "DO X")));
        assert_eq!(hit, vec!["inj_note"]);
        assert_eq!(one, json!(["Sushi dinner", "DO X"]));
        let mut all = json!(["{inj_subject}", "{inj_note}", "{inj_note}"]);
        let hit = fill(&mut all, &vectors(), Some((None, "DO X")));
        assert_eq!(hit, vec!["inj_note", "inj_subject"]);
        assert_eq!(all, json!(["DO X", "DO X", "DO X"]));
    }

    #[test]
    fn an_attack_at_a_vector_the_answer_lacks_hits_nothing() {
        let mut v = json!({"subject": "{inj_subject}"});
        assert!(fill(&mut v, &vectors(), Some((Some("inj_note"), "DO X"))).is_empty());
        assert_eq!(v, json!({"subject": "Sushi dinner"}));
    }

    #[test]
    fn names_are_what_a_placeholder_can_hold() {
        assert!(check_name("injection_bill_text").is_ok());
        assert!(check_name("a b").is_err());
        assert!(check_name("").is_err());
    }
}
