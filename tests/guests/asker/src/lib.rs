//! Test guest: `{"requests": [<chat request>, ...]}` → for each request,
//! `{"content": …, "model": …, "finish_reason": …}` or `{"error": <kind>}`.

use serde_json::{Value, json};
use worldline_guest::model::{self, ChatResponse};

fn run(task: Value) -> Result<Value, String> {
    let requests = task["requests"].as_array().cloned().unwrap_or_default();
    let answers: Vec<Value> = requests
        .iter()
        .map(|r| match model::complete::<ChatResponse>(r) {
            Ok(resp) => json!({
                "content": resp.content(),
                "model": resp.model,
                "finish_reason": resp.finish_reason(),
                "tool_calls": resp.tool_calls().iter().map(|c| c.function.name.clone()).collect::<Vec<_>>(),
            }),
            Err(e) => json!({"error": e.kind_name(), "message": e.message}),
        })
        .collect();
    Ok(json!(answers))
}

worldline_guest::agent!(run);
