//! Test world service for `tests/worlds/counters`: `bump` does one `get`
//! and one `update` (the benchmark's call), `panic` panics, `spin` never
//! ends (out of fuel), `clock` answers the call's time and two random
//! numbers, `refuse` answers a typed tool error after a write (which must
//! not land), and `log` writes a world file and inserts a row.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use worldline_service::{Table, ToolError, files, now, random};

#[derive(Serialize, Deserialize)]
struct Counter {
    id: String,
    n: i64,
}

const COUNTERS: Table<Counter> = Table::new("counters");
const EVENTS: Table<Value> = Table::new("events");

fn call(tool: &str, args: Value) -> Result<Value, ToolError> {
    let id = args["id"].as_str().unwrap_or("c").to_string();
    match tool {
        "bump" => {
            let c = COUNTERS.require(&id)?;
            let c = COUNTERS.update(&id, &json!({"n": c.n + 1}))?;
            Ok(json!({"id": c.id, "n": c.n}))
        }
        "panic" => panic!("the ledger is corrupt"),
        "spin" => {
            let mut i: u64 = 0;
            loop {
                i = std::hint::black_box(i.wrapping_add(1));
            }
        }
        "clock" => Ok(json!({"now": now(), "random": [random(), random()]})),
        "refuse" => {
            COUNTERS.update(&id, &json!({"n": -1}))?;
            Err(ToolError::conflict("counter is locked"))
        }
        "log" => {
            files::write("log.txt", format!("bumped at {}", now()))?;
            let key = EVENTS.insert(&json!({"what": "log"}))?;
            Ok(json!({"event": key, "files": files::list("")}))
        }
        other => Err(ToolError::not_found(format!("no tool `{other}`"))),
    }
}

worldline_service::service!(call);
