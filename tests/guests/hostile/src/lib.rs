//! Test guest: one component whose behaviour the task picks, so the
//! sandbox tests can check that every kind of misbehaviour ends in the
//! right status with a complete bundle.
//!
//! Task: `{"mode": M, ...}` with M one of
//! - `loop`: spin forever without host calls (fuel or the watchdog stops it);
//! - `alloc`: allocate and touch memory until something stops it;
//! - `recurse`: recurse without bound (stack overflow);
//! - `panic`: `panic!` with a recognizable message;
//! - `flood`: write `n` lines (default 10 000) of 100 bytes to stdout,
//!   counting write errors;
//! - `println`: `println!` `n` lines (default 10 000) of 100 bytes (which
//!   panics if a write fails);
//! - `exit`: `std::process::exit(code)` (default 7);
//! - `network`: `TcpStream::connect("127.0.0.1:9")`, reporting the error;
//! - `resolve`: look up `example.com:80` (`ToSocketAddrs`), reporting the
//!   error;
//! - `calls`: call `get_ticket` `n` times (default 1) — the benchmark's
//!   mediated-call loop;
//! - `notes`: write `n` trace notes (default 1) of `bytes` bytes each
//!   (default 1 MiB);
//! - `remnant`: look for what an earlier run left in this instance's
//!   memory (its static data, memory it grows), fail if anything, then
//!   leave some itself;
//! - `ok`: return `{"ok": true}`.

use serde_json::{Value, json};
use std::hint::black_box;
use std::io::Write as _;
use worldline_guest::{Error, tools};

fn run(task: Value) -> Result<Value, Error> {
    let n = |default: u64| task["n"].as_u64().unwrap_or(default);
    match task["mode"].as_str().unwrap_or("ok") {
        "loop" => spin(),
        "alloc" => allocate(),
        "recurse" => Ok(json!({"depth": recurse(task["from"].as_u64().unwrap_or(0))})),
        "panic" => panic!("hostile guest panics on purpose: boom-42"),
        "flood" => flood(n(10_000)),
        "println" => {
            let lines = n(10_000);
            for i in 0..lines {
                println!("{i:>6} {}", "y".repeat(92));
            }
            Ok(json!({"lines": lines}))
        }
        "resolve" => resolve(),
        "exit" => std::process::exit(task["code"].as_i64().unwrap_or(7) as i32),
        "network" => network(),
        "calls" => calls(n(1)),
        "notes" => notes(n(1), task["bytes"].as_u64().unwrap_or(1 << 20)),
        "remnant" => remnant(),
        "ok" => Ok(json!({"ok": true})),
        other => Err(Error::failed(format!("unknown mode `{other}`"))),
    }
}

fn spin() -> ! {
    let mut x: u64 = 1;
    loop {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

/// Static data a run dirties: a fresh instance finds it all zero.
static mut SCRATCH: [u8; 256 << 10] = [0; 256 << 10];

/// Bytes of grown memory a run asks for zeroed and then dirties.
const GROWN: usize = 4 << 20;

fn remnant() -> Result<Value, Error> {
    // SAFETY: a guest runs on one thread, and nothing else refers to SCRATCH.
    let scratch = unsafe { &mut *std::ptr::addr_of_mut!(SCRATCH) };
    let in_static = scratch.iter().filter(|b| **b != 0).count();
    scratch.fill(0xa5);
    // Zeroed memory the allocator takes fresh from `memory.grow`, which a
    // new instance's memory is.
    let grown = vec![0u8; GROWN].leak();
    let in_grown = grown.iter().filter(|b| **b != 0).count();
    grown.fill(0xa5);
    black_box(grown);
    if in_static + in_grown > 0 {
        return Err(Error::failed(format!(
            "an earlier run left {in_static} bytes in static data and {in_grown} in grown memory"
        )));
    }
    Ok(json!({"static_bytes": scratch.len(), "grown_bytes": GROWN}))
}

fn allocate() -> Result<Value, Error> {
    let mut kept: Vec<Vec<u8>> = Vec::new();
    for i in 0..4096u32 {
        let mut chunk = vec![0u8; 1 << 20];
        chunk[i as usize % (1 << 20)] = 1;
        kept.push(black_box(chunk));
    }
    Ok(json!({"allocated_mb": kept.len()}))
}

/// Recursion that lives on the wasm call stack only (no locals in linear
/// memory), so it ends in the engine's "call stack exhausted" trap. The
/// rotate keeps LLVM from turning it into a loop.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    if depth == u64::MAX {
        return 0;
    }
    recurse(depth + 1).rotate_left(1) ^ depth
}

fn flood(lines: u64) -> Result<Value, Error> {
    let line = format!("{}\n", "x".repeat(99));
    let mut out = std::io::stdout();
    let mut failed = 0u64;
    for _ in 0..lines {
        if out.write_all(line.as_bytes()).is_err() {
            failed += 1;
        }
    }
    let _ = out.flush();
    Ok(json!({"lines": lines, "failed_writes": failed}))
}

fn network() -> Result<Value, Error> {
    match std::net::TcpStream::connect("127.0.0.1:9") {
        Ok(_) => Err(Error::failed(
            "connected to 127.0.0.1:9: the sandbox let a socket through",
        )),
        Err(e) => Ok(json!({"connect_error": e.to_string()})),
    }
}

fn resolve() -> Result<Value, Error> {
    use std::net::ToSocketAddrs as _;
    match "example.com:80".to_socket_addrs() {
        Ok(addrs) => Err(Error::failed(format!(
            "resolved example.com to {:?}: the sandbox let a lookup through",
            addrs.collect::<Vec<_>>()
        ))),
        Err(e) => Ok(json!({"resolve_error": e.to_string()})),
    }
}

fn calls(n: u64) -> Result<Value, Error> {
    let mut last = Value::Null;
    for _ in 0..n {
        last = tools::call("get_ticket", &json!({"id": "T-1"}))?;
    }
    Ok(json!({"calls": n, "last": last}))
}

fn notes(n: u64, bytes: u64) -> Result<Value, Error> {
    let text = "n".repeat(bytes as usize);
    for _ in 0..n {
        worldline_guest::trace::note("big", &text);
    }
    Ok(json!({"notes": n}))
}

worldline_guest::agent!(run);
