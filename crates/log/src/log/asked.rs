//! The tool calls a model's answer asked for, and which of them a tool
//! call the agent then made answers: the asked call of its name and
//! arguments, else the first of its name, whatever order the agent ran
//! them in (the exports, ATIF's results, trajectories' tool messages and
//! OTel's tool spans, name each result by the call it answers).

use serde_json::Value;

/// One call an answer asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// The model's id for the call.
    pub id: String,
    pub name: String,
    /// Its arguments read as JSON (`null` when their text is no JSON).
    pub args: Value,
}

/// The calls an assistant message asks for (`tool_calls`), those with an
/// id, in its order.
pub fn asked(message: &Value) -> Vec<Asked> {
    (message["tool_calls"].as_array().into_iter().flatten())
        .filter_map(|c| {
            let args = match &c["function"]["arguments"] {
                Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
                other => other.clone(),
            };
            Some(Asked {
                id: c["id"].as_str()?.to_string(),
                name: c["function"]["name"].as_str().unwrap_or("").to_string(),
                args,
            })
        })
        .collect()
}

/// The asked call a tool call of `name` with `args` answers, taken out of
/// `pending`: the one of its name and arguments, else the first of its
/// name; `None` when none of its name is pending.
pub fn take(pending: &mut Vec<Asked>, name: &str, args: &Value) -> Option<Asked> {
    let i = (pending.iter())
        .position(|a| a.name == name && a.args == *args)
        .or_else(|| pending.iter().position(|a| a.name == name))?;
    Some(pending.remove(i))
}

/// The calls of `pending` that a model request's `messages` answer with
/// a `role: "tool"` message by its `tool_call_id`: the function tools the
/// agent ran itself (no tool call of the world answered them), each with
/// the message that carries its result, taken out of `pending` in the
/// messages' order (ATIF's observations and OTel's tool spans read them).
pub fn answered_in<'m>(
    pending: &mut Vec<Asked>,
    messages: Option<&'m Vec<Value>>,
) -> Vec<(Asked, &'m Value)> {
    let mut ran = Vec::new();
    for m in (messages.into_iter().flatten()).filter(|m| m["role"] == "tool") {
        let Some(i) =
            (m["tool_call_id"].as_str()).and_then(|id| pending.iter().position(|a| a.id == id))
        else {
            continue;
        };
        ran.push((pending.remove(i), m));
    }
    ran
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_call_is_matched_by_name_and_arguments_then_by_name() {
        let message = json!({"tool_calls": [
            {"id": "a", "function": {"name": "get", "arguments": "{\"id\": 1}"}},
            {"id": "b", "function": {"name": "get", "arguments": "{\"id\": 2}"}},
            {"function": {"name": "no_id", "arguments": "{}"}},
        ]});
        let mut pending = asked(&message);
        assert_eq!(pending.len(), 2);
        assert_eq!(
            take(&mut pending, "get", &json!({"id": 2})).unwrap().id,
            "b"
        );
        assert_eq!(
            take(&mut pending, "get", &json!({"id": 9})).unwrap().id,
            "a"
        );
        assert_eq!(take(&mut pending, "get", &json!({})), None);
    }

    #[test]
    fn a_tool_message_answers_the_pending_call_of_its_id() {
        let mut pending = asked(&json!({"tool_calls": [
            {"id": "a", "function": {"name": "lookup", "arguments": "{}"}},
            {"id": "b", "function": {"name": "lookup", "arguments": "{}"}},
        ]}));
        let messages = vec![
            json!({"role": "assistant", "content": "x"}),
            json!({"role": "tool", "tool_call_id": "b", "content": "rb-2"}),
            json!({"role": "tool", "tool_call_id": "z", "content": "none asked"}),
        ];
        let ran = answered_in(&mut pending, Some(&messages));
        assert_eq!(ran.len(), 1);
        assert_eq!(
            (ran[0].0.id.as_str(), &ran[0].1["content"]),
            ("b", &json!("rb-2"))
        );
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].id, "a");
    }
}
