//! The agent: it completes tasks of the `tasks` world.
//!
//! It has one deliberate bug, which the case `complete-overdue` catches:
//! asked to complete every overdue task, it completes only the first one
//! it finds. Make it complete each of them and `worldline test` passes.

use serde_json::{Value, json};
use worldline_guest::{Error, tools, trace};

fn run(task: Value) -> Result<Value, Error> {
    match task["goal"].as_str() {
        Some("complete") => {
            let done: Value = tools::call("complete_task", &json!({"id": task["id"]}))?;
            Ok(json!({"completed": [done["id"]]}))
        }
        Some("complete-overdue") => {
            let open: Vec<Value> = tools::call("list_tasks", &json!({"status": "open"}))?;
            let today = task["today"].as_str().unwrap_or_default();
            let overdue: Vec<&Value> = open
                .iter()
                .filter(|t| t["due"].as_str().is_some_and(|d| d < today))
                .collect();
            trace::note("plan", &format!("{} overdue task(s)", overdue.len()));
            // The bug: only the first overdue task is completed.
            let Some(first) = overdue.first() else {
                return Ok(json!({"completed": []}));
            };
            tools::call::<Value>("complete_task", &json!({"id": first["id"]}))?;
            Ok(json!({"completed": [first["id"]]}))
        }
        other => Err(Error::failed(format!("unknown goal {other:?}"))),
    }
}

worldline_guest::agent!(run);
