//! Token ids and log-probabilities of model calls (decision 0350): taken
//! out of an OpenAI-compatible answer (vLLM's `prompt_token_ids`, the
//! first choice's `token_ids` and `logprobs`) into the call's
//! `model_call.tokens`, with the prompt written as what it adds to an
//! earlier call's prompt and completion (`prompt_from`), so a run of N
//! calls records O(N) ids; and read back whole for exports.

use super::event::Event;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// One model call's tokens, whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Tokens {
    pub prompt: Vec<u64>,
    pub completion: Vec<u64>,
    /// One per completion token, when the endpoint returned them.
    pub logprobs: Option<Vec<f64>>,
    /// The tokenizer and chat template, as the case declares them or the
    /// endpoint names them.
    pub tokenizer: Option<String>,
    pub chat_template: Option<String>,
}

fn ids(v: &Value) -> Option<Vec<u64>> {
    v.as_array()?.iter().map(Value::as_u64).collect()
}

/// Take the token fields out of `completion` (so the agent sees the
/// answer it would have had without asking for them); the first choice's
/// `logprobs` stay when the agent asked for them itself. `None` when the
/// answer lacks prompt or completion ids: under `rules` from
/// [`TOKEN_FIELDS_TAKEN_WHEN_PARTIAL`](super::rules::TOKEN_FIELDS_TAKEN_WHEN_PARTIAL)
/// the fields it has are taken out all the same; under earlier rules
/// nothing was.
pub fn take(completion: &mut Value, agent_asked_logprobs: bool, rules: u32) -> Option<Tokens> {
    let tokens = found(completion);
    if tokens.is_some() || rules >= super::rules::TOKEN_FIELDS_TAKEN_WHEN_PARTIAL {
        if let Some(choice) = completion
            .get_mut("choices")
            .and_then(|c| c.get_mut(0))
            .and_then(Value::as_object_mut)
        {
            choice.remove("token_ids");
            if !agent_asked_logprobs {
                choice.remove("logprobs");
            }
        }
        if let Some(o) = completion.as_object_mut() {
            o.remove("prompt_token_ids");
        }
    }
    tokens
}

/// The token ids and log-probabilities `completion` holds, when it holds
/// both its prompt's and its first choice's ids.
fn found(completion: &Value) -> Option<Tokens> {
    let prompt = ids(completion.get("prompt_token_ids")?)?;
    let choice = completion.get("choices")?.get(0)?;
    let done = ids(choice.get("token_ids")?)?;
    let logprobs = choice["logprobs"]["content"].as_array().and_then(|c| {
        c.iter()
            .map(|t| t["logprob"].as_f64())
            .collect::<Option<Vec<f64>>>()
    });
    Some(Tokens {
        prompt,
        completion: done,
        logprobs,
        tokenizer: None,
        chat_template: None,
    })
}

/// The writer's memory: the last call it recorded tokens for, by seq,
/// with its prompt and completion ids end to end.
#[derive(Debug, Default)]
pub struct Writer {
    last: Option<(u64, Vec<u64>)>,
}

impl Writer {
    /// The `model_call.tokens` record of the call at `seq` (`None`: a
    /// call not recorded as a `model.complete` event, written whole).
    pub fn record(&mut self, seq: Option<u64>, t: &Tokens) -> Value {
        let mut out = Map::new();
        let last = self.last.as_ref().filter(|_| seq.is_some());
        let keep = last.map_or(0, |(_, base)| {
            base.iter()
                .zip(&t.prompt)
                .take_while(|(a, b)| a == b)
                .count()
        });
        match last {
            Some((base, _)) if keep > 0 => {
                out.insert("prompt_from".into(), json!({"event": base, "keep": keep}));
                out.insert("prompt_ids".into(), json!(t.prompt[keep..]));
            }
            _ => {
                out.insert("prompt_ids".into(), json!(t.prompt));
            }
        }
        out.insert("completion_ids".into(), json!(t.completion));
        if let Some(lp) = &t.logprobs {
            out.insert("logprobs".into(), json!(lp));
        }
        if let Some(n) = &t.tokenizer {
            out.insert("tokenizer".into(), json!(n));
        }
        if let Some(n) = &t.chat_template {
            out.insert("chat_template".into(), json!(n));
        }
        if let Some(seq) = seq {
            let mut all = t.prompt.clone();
            all.extend(&t.completion);
            self.last = Some((seq, all));
        }
        Value::Object(out)
    }
}

/// The tokens of every model call of `events` that recorded them, by seq,
/// whole. A call whose `prompt_from` names no earlier call with tokens
/// (a damaged bundle) is left out.
pub fn read(events: &[Event]) -> BTreeMap<u64, Tokens> {
    let mut out: BTreeMap<u64, Tokens> = BTreeMap::new();
    for e in events {
        if e.call != super::Kind::ModelComplete.name() {
            continue;
        }
        let r = &e.response["model_call"]["tokens"];
        let (Some(tail), Some(completion)) = (ids(&r["prompt_ids"]), ids(&r["completion_ids"]))
        else {
            continue;
        };
        let prompt = match r.get("prompt_from") {
            None => tail,
            Some(from) => {
                let base = from["event"].as_u64().and_then(|s| out.get(&s));
                let keep = from["keep"].as_u64().map(|k| k as usize);
                match (base, keep) {
                    (Some(b), Some(k)) if k <= b.prompt.len() + b.completion.len() => {
                        let mut p: Vec<u64> = b
                            .prompt
                            .iter()
                            .chain(&b.completion)
                            .take(k)
                            .copied()
                            .collect();
                        p.extend(tail);
                        p
                    }
                    _ => continue,
                }
            }
        };
        let text = |k: &str| r[k].as_str().map(str::to_string);
        out.insert(
            e.seq,
            Tokens {
                prompt,
                completion,
                logprobs: r["logprobs"]
                    .as_array()
                    .and_then(|a| a.iter().map(Value::as_f64).collect()),
                tokenizer: text("tokenizer"),
                chat_template: text("chat_template"),
            },
        );
    }
    out
}

/// The warning for a run that asked for token ids: how many of its
/// answered model calls came back without them, or `None` when all had
/// them (or none was answered).
pub fn missing(events: &[Event]) -> Option<String> {
    let answered: Vec<&Event> = events
        .iter()
        .filter(|e| e.call == super::Kind::ModelComplete.name() && e.response.get("ok").is_some())
        .collect();
    let without = answered
        .iter()
        .filter(|e| e.response["model_call"].get("tokens").is_none())
        .count();
    (without > 0).then(|| {
        format!(
            "[model] token_ids = true, but {without} of {} model calls came back without token ids (the endpoint returned no `prompt_token_ids` and choice `token_ids`: serve the model with vLLM, which returns them when asked with `return_token_ids`); their trajectories carry messages only",
            answered.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Effect, Kind};

    fn event(seq: u64, tokens: Value) -> Event {
        Event {
            call: Kind::ModelComplete.name().into(),
            effect: Effect::Read,
            fuel: 1,
            hash: String::new(),
            injected: None,
            request: json!({}),
            response: json!({"ok": {}, "model_call": {"tokens": tokens}}),
            seq,
            vtime_ns: 0,
            writes: vec![],
        }
    }

    fn tokens(prompt: &[u64], completion: &[u64]) -> Tokens {
        Tokens {
            prompt: prompt.to_vec(),
            completion: completion.to_vec(),
            logprobs: None,
            tokenizer: None,
            chat_template: None,
        }
    }

    #[test]
    fn a_prompt_that_extends_the_last_call_is_written_as_its_tail_and_read_whole() {
        let mut w = Writer::default();
        let a = tokens(&[1, 2, 3], &[7, 8]);
        let b = tokens(&[1, 2, 3, 7, 8, 9, 4], &[5]);
        let ra = w.record(Some(2), &a);
        let rb = w.record(Some(5), &b);
        assert_eq!(rb["prompt_from"], json!({"event": 2, "keep": 5}));
        assert_eq!(rb["prompt_ids"], json!([9, 4]));
        let read = read(&[event(2, ra), event(5, rb)]);
        assert_eq!(read[&2], a);
        assert_eq!(read[&5], b);
    }

    #[test]
    fn an_answer_without_ids_keeps_its_token_fields_only_under_rules_before_7() {
        let partial = json!({"prompt_token_ids": [1], "choices": [{"logprobs": {"content": []}}]});
        let mut old = partial.clone();
        assert_eq!(take(&mut old, false, 6), None);
        assert_eq!(old, partial);
        let mut new = partial.clone();
        assert_eq!(take(&mut new, false, 7), None);
        assert_eq!(new, json!({"choices": [{}]}));
    }

    #[test]
    fn a_reference_to_no_earlier_call_is_left_out() {
        let bad = json!({"prompt_from": {"event": 9, "keep": 1}, "prompt_ids": [1], "completion_ids": [2]});
        assert!(read(&[event(3, bad)]).is_empty());
    }
}
