//! Test guest: a generic tool loop over the model, for long-horizon runs.
//! Task: `{"prompt": text, "max_turns": n}`. The model sees the whole
//! conversation at every call (system, user, each reply and each tool
//! result), as a real agent sends it; the loop ends when the model answers
//! without a tool call (the answer is the output) or after `max_turns`
//! model calls (default 10,000).

use serde_json::{Value, json};
use worldline_guest::model::{self, ChatRequest, Message};
use worldline_guest::{Error, tools};

fn run(task: Value) -> Result<Value, Error> {
    let prompt = task["prompt"].as_str().unwrap_or("Read the documents.");
    let max_turns = task["max_turns"].as_u64().unwrap_or(10_000);
    let mut request = ChatRequest::new(vec![
        Message::system("You read documents one by one and summarise them."),
        Message::user(prompt.to_string()),
    ]);
    request.tools = model::tool_defs(&tools::specs());
    for turn in 1..=max_turns {
        let message = model::chat(&request)?.message();
        request.messages.push(message.clone());
        if message.tool_calls.is_empty() {
            return Ok(json!({"answer": message.content.unwrap_or_default(), "turns": turn}));
        }
        for call in &message.tool_calls {
            let content = match tools::call_json(&call.function.name, &call.function.arguments) {
                Ok(text) => text,
                Err(e) => {
                    json!({"error": {"kind": e.kind_name(), "message": e.message}}).to_string()
                }
            };
            request
                .messages
                .push(Message::tool(call.id.clone(), content));
        }
    }
    Err(Error::failed(format!(
        "no answer after {max_turns} model turns"
    )))
}

worldline_guest::agent!(run);
