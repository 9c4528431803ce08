//! Test guest: `{"steps": [{"say": text} | {"approve": kind, "details": {..}}
//! | {"call": tool, "args": {..}}, ...]}` → one answer per step, in order:
//! `{"reply": text}` / `{"ended": reason, "satisfied": bool}`,
//! `{"approved": true}` / `{"denied": reason}`, `{"ok": ..}` / `{"error": kind}`.
//! With `"until_ended": true` it keeps saying its last line until the user
//! leaves.

use serde_json::{Value, json};
use worldline_guest::approval::{self, Decision};
use worldline_guest::user::{self, Turn};
use worldline_guest::{Error, tools};

fn say(text: &str) -> (Value, bool) {
    match user::say(text) {
        Turn::Reply(r) => (json!({"reply": r}), false),
        Turn::Ended { reason, satisfied } => {
            (json!({"ended": reason, "satisfied": satisfied}), true)
        }
    }
}

fn run(task: Value) -> Result<Value, Error> {
    let steps = task["steps"].as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for step in &steps {
        if let Some(text) = step["say"].as_str() {
            out.push(say(text).0);
        } else if let Some(kind) = step["approve"].as_str() {
            out.push(match approval::request(kind, &step["details"])? {
                Decision::Approved => json!({"approved": true}),
                Decision::Denied(reason) => json!({"denied": reason}),
            });
        } else if let Some(tool) = step["call"].as_str() {
            out.push(match tools::call::<Value>(tool, &step["args"]) {
                Ok(v) => json!({"ok": v}),
                Err(e) => json!({"error": e.kind_name(), "message": e.message}),
            });
        }
    }
    if task["until_ended"] == true {
        let last = steps
            .iter()
            .rev()
            .find_map(|s| s["say"].as_str())
            .unwrap_or("hello?");
        for _ in 0..50 {
            let (answer, ended) = say(last);
            out.push(answer);
            if ended {
                break;
            }
        }
    }
    Ok(json!(out))
}

worldline_guest::agent!(run);
