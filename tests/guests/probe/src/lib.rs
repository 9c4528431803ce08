//! Test guest: reads the clock, sleeps, draws random numbers, builds a
//! `HashMap` and reports its iteration order, writes to stdout, and calls
//! a tool. Everything it saw goes into its output, so two runs can be
//! compared field by field.

use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use worldline_guest::{Error, tools, trace};

fn run(task: Value) -> Result<Value, Error> {
    let wall_before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mono = Instant::now();
    std::thread::sleep(Duration::from_millis(250));
    let slept_ns = mono.elapsed().as_nanos() as u64;
    let wall_after = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;

    let mut bytes = [0u8; 8];
    std::io::Read::read_exact(&mut RandomReader, &mut bytes).ok();
    let map: HashMap<String, u32> = (0..12).map(|i| (format!("key{i}"), i)).collect();
    let order: Vec<&String> = map.keys().collect();

    println!("probe says hello; order = {order:?}");
    trace::note("plan", "probe is about to call a tool");
    let ticket: Value = tools::call("get_ticket", &json!({"id": task["ticket"]}))?;

    Ok(json!({
        "wall_before": wall_before,
        "wall_after": wall_after,
        "slept_ns": slept_ns,
        "random": random_u64(),
        "hashmap_order": order,
        "ticket": ticket,
    }))
}

/// `std` has no public RNG; draw through a `HashMap`'s per-instance keys
/// (seeded from `wasi:random`) to get a value that depends on the seed.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(42u64)
}

struct RandomReader;

impl std::io::Read for RandomReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let v = random_u64().to_le_bytes();
        let n = buf.len().min(8);
        buf[..n].copy_from_slice(&v[..n]);
        Ok(n)
    }
}

worldline_guest::agent!(run);
