//! Sandbox benchmark: what loading an agent costs (compile from scratch vs
//! loading the compiled component from the store's cache), instantiating
//! it, and one mediated, recorded tool call.
//!
//! `cargo bench -p worldline --bench sandbox`. The guest
//! (`tests/guests/hostile`, task `{"mode": "calls", "n": N}`) is built from
//! source the way the tests build it; set `WORLDLINE_BENCH_AGENT` to a
//! .wasm to skip that build. Results are written up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use worldline_case::case::{self, Case};
use worldline_engine::run::{new_store, run};
use worldline_log::log::Recorder;
use worldline_runtime::mediate::Mediator;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// Tool calls per run in the call benchmark.
const CALLS: u64 = 2_000;

struct Fixture {
    _dir: tempfile::TempDir,
    bytes: Vec<u8>,
    origin: PathBuf,
    cache: PathBuf,
    store: StoreDir,
    ok: Case,
    calls_0: Case,
    calls_n: Case,
}

fn agent_path() -> PathBuf {
    common::guest_or_env("WORLDLINE_BENCH_AGENT", "hostile-agent")
}

fn write_case(dir: &Path, name: &str, task: &str) -> Case {
    let text =
        format!("world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {task}\n");
    let path = common::write_case(dir, name, &text);
    case::load(&path, Some(&common::worlds_dir())).expect("bench case loads")
}

fn fixture() -> Fixture {
    let origin = agent_path();
    let bytes = std::fs::read(&origin).expect("reading the bench agent");
    let dir = common::temp_dir();
    let store = StoreDir::open(&dir.path().join("store")).expect("store");
    let cache = store.cache_dir();
    // Fill the compile cache once.
    Sandbox::new(Some(cache.clone()))
        .unwrap()
        .load_bytes(&bytes, &origin)
        .expect("the bench agent loads");
    Fixture {
        ok: write_case(dir.path(), "ok", "{ mode = \"ok\" }"),
        calls_0: write_case(dir.path(), "calls0", "{ mode = \"calls\", n = 0 }"),
        calls_n: write_case(
            dir.path(),
            "callsn",
            &format!("{{ mode = \"calls\", n = {CALLS} }}"),
        ),
        _dir: dir,
        bytes,
        origin,
        cache,
        store,
    }
}

fn load(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("load");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    g.bench_function("compile_from_scratch", |b| {
        b.iter(|| {
            let sandbox = Sandbox::new(None).unwrap();
            black_box(sandbox.load_bytes(&f.bytes, &f.origin).unwrap());
        })
    });
    g.sample_size(50).measurement_time(Duration::from_secs(4));
    g.bench_function("sandbox_new", |b| {
        b.iter(|| black_box(Sandbox::new(Some(f.cache.clone())).unwrap()))
    });
    g.bench_function("cached_load", |b| {
        b.iter(|| {
            let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
            black_box(sandbox.load_bytes(&f.bytes, &f.origin).unwrap());
        })
    });
    g.bench_function("cached_load_and_empty_run", |b| {
        b.iter(|| {
            let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
            let agent = sandbox.load_bytes(&f.bytes, &f.origin).unwrap();
            black_box(run(&sandbox, &agent, &f.ok, None).unwrap());
        })
    });
    g.finish();
}

fn instantiate(c: &mut Criterion, f: &Fixture) {
    let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
    let agent = sandbox.load_bytes(&f.bytes, &f.origin).unwrap();
    let mut g = c.benchmark_group("instantiate");
    g.sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function("instantiate", |b| {
        b.iter(|| {
            let med = Mediator::new(&f.ok, Recorder::in_memory());
            let mut store = new_store(&sandbox, &f.ok, med).unwrap();
            black_box(agent.pre.instantiate(&mut store).unwrap());
        })
    });
    g.bench_function("empty_run", |b| {
        b.iter(|| black_box(run(&sandbox, &agent, &f.ok, None).unwrap()))
    });
    g.finish();
}

fn tool_call(c: &mut Criterion, f: &Fixture) {
    let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
    let agent = sandbox.load_bytes(&f.bytes, &f.origin).unwrap();
    // The runs must do what the benchmark assumes.
    let check = run(&sandbox, &agent, &f.calls_n, None).unwrap();
    assert_eq!(
        check.footer.status.as_str(),
        "completed",
        "{:?}",
        check.footer.error
    );
    let tool_events = check
        .events
        .as_held()
        .iter()
        .filter(|e| e.call == "worldline:agent/tools.call")
        .count();
    assert_eq!(tool_events as u64, CALLS);
    let empty = run(&sandbox, &agent, &f.calls_0, None).unwrap();
    eprintln!(
        "tool_call: a run of {CALLS} calls records {} events, one of 0 calls {}",
        check.events.len(),
        empty.events.len()
    );

    // Per call: (time of a run with CALLS calls - time of one with none) / CALLS.
    let per_call = |store: Option<&StoreDir>, iters: u64| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let t = Instant::now();
            let n = black_box(run(&sandbox, &agent, &f.calls_n, store).unwrap());
            let with = t.elapsed();
            let t = Instant::now();
            let z = black_box(run(&sandbox, &agent, &f.calls_0, store).unwrap());
            let without = t.elapsed();
            total += with.saturating_sub(without) / CALLS as u32;
            for b in [n.bundle, z.bundle].into_iter().flatten() {
                let _ = std::fs::remove_file(b);
            }
        }
        total
    };
    let mut g = c.benchmark_group("tool_call");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    g.bench_function("recorded_in_memory", |b| {
        b.iter_custom(|iters| per_call(None, iters))
    });
    g.bench_function("recorded_to_bundle", |b| {
        b.iter_custom(|iters| per_call(Some(&f.store), iters))
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    load(c, &f);
    instantiate(c, &f);
    tool_call(c, &f);
}

criterion_group!(sandbox, benches);
criterion_main!(sandbox);
