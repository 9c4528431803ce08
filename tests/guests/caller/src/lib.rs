//! Test guest: makes the tool calls its task lists, in order, and returns
//! every answer (`{"ok": value}` or `{"error": {"kind", "message"}}`), so a
//! test can see exactly what the host answered. Also reads world files when
//! a call names the tool `files.read`, and writes a trace note per call.

use serde_json::{Value, json};
use worldline_guest::{Error, files, tools, trace};

fn answer(result: Result<Value, Error>) -> Value {
    match result {
        Ok(v) => json!({"ok": v}),
        Err(e) => json!({"error": {"kind": e.kind_name(), "message": e.message}}),
    }
}

fn run(task: Value) -> Result<Value, Error> {
    let mut answers = Vec::new();
    for call in task["calls"].as_array().cloned().unwrap_or_default() {
        let tool = call["tool"].as_str().unwrap_or_default().to_string();
        trace::note("call", &tool);
        let result = match tool.as_str() {
            "files.read" => files::read_to_string(call["args"]["path"].as_str().unwrap_or_default()).map(Value::String),
            "files.write" => files::write(
                call["args"]["path"].as_str().unwrap_or_default(),
                call["args"]["content"].as_str().unwrap_or_default(),
            )
            .map(|()| Value::Null),
            _ => tools::call::<Value>(&tool, &call["args"]),
        };
        answers.push(answer(result));
    }
    Ok(json!(answers))
}

worldline_guest::agent!(run);
