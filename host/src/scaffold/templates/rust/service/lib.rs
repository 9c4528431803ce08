//! The `tasks` world's service: the tools declared with `op = "service"`
//! in worlds/tasks/v1/world.toml. It reads and writes the world's tables
//! through the host, so every read and write is recorded with the call.

use serde_json::{Value, json};
use worldline_service::{Table, ToolError, now};

const TASKS: Table<Value> = Table::new("tasks");

fn call(tool: &str, args: Value) -> Result<Value, ToolError> {
    match tool {
        "complete_task" => {
            let id = args["id"].as_str().unwrap_or_default();
            let task = TASKS.require(id)?;
            if task["status"] == "done" {
                return Err(ToolError::conflict(format!("task {id} is already done")));
            }
            TASKS.update(id, &json!({"status": "done", "completed_at": now()}))
        }
        other => Err(ToolError::not_found(format!("no tool `{other}`"))),
    }
}

worldline_service::service!(call);
