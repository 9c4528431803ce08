//! A model-driven agent: the model sees the task and the world's tools,
//! chooses tool calls, the agent runs them through the host and feeds the
//! results back, until the model answers without a tool call.
//!
//! The same build runs against a scripted model (the cases in
//! `cases/model/`) or any OpenAI-compatible server
//! (`--model-set provider=openai --model-set base_url=...`).

use serde_json::{Value, json};
use worldline_guest::model::{self, ChatRequest, Message};
use worldline_guest::{Error, ErrorKind, tools, trace};

/// Most model turns before the agent gives up.
const MAX_TURNS: usize = 16;

const SYSTEM: &str = "You are the on-call engineer. Use the tools to find what caused the alert, \
fix it with the smallest safe change, record one incident note, and close the ticket only when \
the cause is fixed. Answer with a JSON object when you are done.";

fn run(task: Value) -> Result<Value, Error> {
    let mut request = ChatRequest::new(vec![
        Message::system(SYSTEM),
        Message::user(task.to_string()),
    ]);
    request.tools = model::tool_defs(&tools::specs());
    request.temperature = Some(0.0);
    for turn in 1..=MAX_TURNS {
        let response = ask(&request)?;
        let message = response.message();
        request.messages.push(message.clone());
        if message.tool_calls.is_empty() {
            let text = message.content.unwrap_or_default();
            let mut out = serde_json::from_str::<Value>(&text)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({"answer": text}));
            out["turns"] = json!(turn);
            return Ok(out);
        }
        for call in &message.tool_calls {
            let result = match call.arguments::<Value>() {
                Ok(args) => tools::call_json(&call.function.name, &args.to_string()),
                Err(e) => Err(e),
            };
            let content = match result {
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
        "no answer after {MAX_TURNS} model turns"
    )))
}

/// One model call; a provider that timed out or was unavailable gets one
/// more try before the agent gives up.
fn ask(request: &ChatRequest) -> Result<model::ChatResponse, Error> {
    match model::chat(request) {
        Err(e) if matches!(e.kind, ErrorKind::Timeout | ErrorKind::Unavailable) => {
            trace::note("model-retry", &e.to_string());
            model::chat(request)
        }
        other => other,
    }
}

worldline_guest::agent!(run);
