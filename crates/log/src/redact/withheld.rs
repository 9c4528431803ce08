//! What a redacted view withholds whole rather than hides value by value
//! (decision 0428): a model call's token ids and log-probabilities. They
//! encode the call's text (a tokenizer decodes them back), which the
//! policy's paths and detectors read only as text, so no policy can hide
//! a value in them; and the ids of a call some of whose text was hidden
//! would not match that text anyway.

use serde_json::Value;

/// The field a model call's `model_call` record gets when a redacted view
/// withheld its token ids or log-probabilities.
pub const FIELD: &str = "tokens_withheld";

/// Take the token ids and log-probabilities out of a model call's
/// response: `model_call.tokens` (decision 0350), and what an answer
/// holds itself (`prompt_token_ids`, each choice's `token_ids` and
/// `logprobs`: the `logprobs` an agent asked for, and all three in a run
/// recorded before they were taken out). When it took any, the response's
/// `model_call` says so ([`FIELD`]).
pub(crate) fn model_call(response: &mut Value) {
    let mut took = false;
    let mut take = |v: Option<&mut Value>, key: &str| {
        if let Some(o) = v.and_then(Value::as_object_mut) {
            took |= o.remove(key).is_some();
        }
    };
    take(response.get_mut("model_call"), "tokens");
    take(response.get_mut("ok"), "prompt_token_ids");
    let choices = (response.get_mut("ok"))
        .and_then(|ok| ok.get_mut("choices"))
        .and_then(Value::as_array_mut);
    for choice in choices.into_iter().flatten() {
        take(Some(&mut *choice), "token_ids");
        take(Some(choice), "logprobs");
    }
    if took {
        response["model_call"][FIELD] = Value::Bool(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_and_logprobs_are_taken_and_said_taken() {
        let mut r = json!({
            "ok": {"prompt_token_ids": [1], "choices": [{"message": {}, "token_ids": [2], "logprobs": {"content": []}}]},
            "model_call": {"model": "m", "tokens": {"prompt_ids": [1], "completion_ids": [2]}},
        });
        model_call(&mut r);
        assert_eq!(
            r,
            json!({
                "ok": {"choices": [{"message": {}}]},
                "model_call": {"model": "m", "tokens_withheld": true},
            })
        );
    }

    #[test]
    fn a_call_without_them_is_left_as_it_is() {
        let before = json!({"ok": {"choices": [{"message": {}}]}, "model_call": {"model": "m"}});
        let mut r = before.clone();
        model_call(&mut r);
        assert_eq!(r, before);
        let mut failed = json!({"error": {"kind": "failed"}});
        model_call(&mut failed);
        assert_eq!(failed, json!({"error": {"kind": "failed"}}));
    }
}
