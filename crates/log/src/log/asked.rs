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
}
