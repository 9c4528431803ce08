//! Test world service for `tests/worlds/counters`: `bump` does one `get`
//! and one `update` (the benchmark's call), `panic` panics, `spin` never
//! ends (out of fuel), `clock` answers the call's time, two random
//! numbers and the WASI wall clock (`wasi_ms`), `refuse` answers a typed
//! tool error after a write (which must not land), `log` writes a world
//! file and inserts a row, and `fresh` counts the calls this instance
//! answered, in a static and on the heap; `keys` lists the counters' ids
//! as `Table::all` orders them.
//! Three tools go past the caps on what one call may read and write:
//! `reread` gets row `key` (default `big`) of `blobs` `times` times (forever
//! without it),
//! `flood_rows` and `flood_files` write `count` rows or files of `kb` KB.
//! Two answer JSON that no `serde_json::Value` holds, as a Python or JS
//! service can: `wide_answer` answers an integer past 64 bits, and
//! `wide_row` inserts a row holding one (then answers the row's key, or
//! the refusal).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use worldline_service::{Table, ToolError, bindings, files, now, random};

#[derive(Serialize, Deserialize)]
struct Counter {
    id: String,
    n: i64,
}

const COUNTERS: Table<Counter> = Table::new("counters");

/// Calls this instance has answered (a fresh instance has answered none).
static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// The same, on the heap.
static HEAP: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());
const EVENTS: Table<Value> = Table::new("events");
const BLOBS: Table<Value> = Table::new("blobs");
/// The counters as plain JSON (whatever their ids' type).
const COUNTER_ROWS: Table<Value> = Table::new("counters");

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
        "clock" => Ok(json!({"now": now(), "random": [random(), random()], "wasi_ms": wasi_ms()})),
        "refuse" => {
            COUNTERS.update(&id, &json!({"n": -1}))?;
            Err(ToolError::conflict("counter is locked"))
        }
        "log" => {
            files::write("log.txt", format!("bumped at {}", now()))?;
            let key = EVENTS.insert(&json!({"what": "log"}))?;
            Ok(json!({"event": key, "files": files::list("")}))
        }
        "fresh" => {
            let calls = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let mut heap = HEAP.lock().unwrap();
            heap.extend_from_slice(&[0; 100_000]);
            Ok(json!({"calls": calls, "heap": heap.len() / 100_000}))
        }
        "reread" => {
            let times = args["times"].as_u64().unwrap_or(u64::MAX);
            let key = args["key"].as_str().unwrap_or("big");
            let mut seen = 0;
            for _ in 0..times {
                seen += BLOBS.get(key)?.map_or(0, |row| row.to_string().len());
            }
            Ok(json!({"bytes": seen}))
        }
        "flood_rows" | "flood_files" => {
            let count = args["count"].as_u64().unwrap_or(1);
            let blob = "x".repeat(args["kb"].as_u64().unwrap_or(1) as usize * 1024);
            for i in 0..count {
                if tool == "flood_rows" {
                    BLOBS.insert(&json!({"id": format!("r{i}"), "data": blob}))?;
                } else {
                    files::write(&format!("flood/{i}.txt"), &blob)?;
                }
            }
            Ok(json!({"written": count}))
        }
        "write_path" => {
            files::write(args["path"].as_str().unwrap_or(""), "x")?;
            Ok(json!({"files": files::list("")}))
        }
        "rekey" => COUNTER_ROWS.update(&id, &json!({"id": args["new"]})),
        "keys" => Ok(COUNTER_ROWS
            .all()?
            .into_iter()
            .map(|r| r["id"].clone())
            .collect()),
        other => Err(ToolError::not_found(format!("no tool `{other}`"))),
    }
}

/// The WASI wall clock, as Rust's `SystemTime` reads it, in milliseconds
/// since the Unix epoch.
fn wasi_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as u64)
}

/// An integer no 64 bits hold, as JSON text.
const WIDE: &str = "18446744073709551616";

struct Counters;

impl bindings::Guest for Counters {
    fn call(
        tool: String,
        args_json: String,
    ) -> Result<String, bindings::worldline::service::types::ToolError> {
        match tool.as_str() {
            "wide_answer" => Ok(format!("{{\"n\": {WIDE}}}")),
            "wide_row" => {
                let row = format!("{{\"what\": \"wide\", \"n\": {WIDE}}}");
                let key = bindings::worldline::service::state::insert("events", &row)?;
                Ok(json!({"event": key}).to_string())
            }
            _ => worldline_service::__call(tool, args_json, call),
        }
    }
}

bindings::export!(Counters with_types_in bindings);
