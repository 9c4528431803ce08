//! Python agent start-up: what a run of a CPython component (~18 MB, built
//! by componentize-py) pays before the agent works, once its compiled code
//! is in the store's cache, and what that cache saves.
//!
//! `cargo bench -p worldline --bench python`. The agent is
//! `tests/guests/python-probe/agent.py`, built with `worldline build-python`
//! (componentize-py must be installed); set `WORLDLINE_BENCH_PYTHON_AGENT`
//! to a built .wasm to skip that. The case makes 20 tool calls on the
//! `demo@v1` test world. Results are written up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::Store;
use worldline_case::case::{self, Case};
use worldline_engine::run::{new_store, run};
use worldline_log::log::Recorder;
use worldline_runtime::mediate::{Mediator, RunState};
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

/// `get_ticket` calls the case asks for; the probe adds one `not-found` call.
const CALLS: u64 = 19;

struct Fixture {
    _dir: tempfile::TempDir,
    agent: PathBuf,
    cwasm: PathBuf,
    cache: PathBuf,
    store: StoreDir,
    case: Case,
}

fn fixture() -> Fixture {
    let agent = match std::env::var_os("WORLDLINE_BENCH_PYTHON_AGENT") {
        Some(p) => PathBuf::from(p),
        None => common::python_guest("tests/guests/python-probe/agent.py"),
    };
    let dir = common::temp_dir();
    let store = StoreDir::open(&dir.path().join("store")).expect("store");
    let cache = store.cache_dir();
    let text = format!(
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ ticket = \"T-1\", calls = {CALLS} }}\n"
    );
    let case_path = common::write_case(dir.path(), "calls", &text);
    let case = case::load(&case_path, Some(&common::worlds_dir())).expect("bench case loads");
    // Fill the compile cache once (this is the slow first run).
    let t = std::time::Instant::now();
    let sandbox = Sandbox::new(Some(cache.clone())).unwrap();
    let loaded = sandbox.load_file(&agent).expect("the Python agent loads");
    eprintln!(
        "first load (compiles CPython and writes the cache): {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let check = run(&sandbox, &loaded, &case, None).unwrap();
    assert_eq!(
        check.footer.status.as_str(),
        "completed",
        "{:?}",
        check.footer.error
    );
    let tool_calls = check
        .events
        .as_held()
        .iter()
        .filter(|e| e.call == "worldline:agent/tools.call")
        .count();
    assert_eq!(tool_calls as u64, CALLS + 1, "a 20-tool-call case");
    eprintln!(
        "the case: {} events, {} tool calls, {} fuel",
        check.events.len(),
        tool_calls,
        check.footer.fuel
    );
    let cwasm = common::files_with_suffix(&cache, ".cwasm")
        .pop()
        .expect("the cache holds the compiled agent");
    Fixture {
        _dir: dir,
        agent,
        cwasm,
        cache,
        store,
        case,
    }
}

/// A store as a run makes it, with its log in memory.
fn fresh_store(sandbox: &Sandbox, case: &Case) -> Store<RunState> {
    new_store(sandbox, case, Mediator::new(case, Recorder::in_memory())).unwrap()
}

/// What `worldline run` does before the agent's first instruction: a new
/// sandbox, the agent loaded (from the compile cache) and kept in the
/// store, then instantiated.
fn start(f: &Fixture) {
    let (sandbox, agent) = load(f);
    let mut store = fresh_store(&sandbox, &f.case);
    black_box(agent.pre.instantiate(&mut store).unwrap());
}

/// A new sandbox and the agent loaded as `worldline run` loads it.
fn load(f: &Fixture) -> (Sandbox, Arc<Agent>) {
    let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
    let agent = worldline_engine::agent_file::load(&sandbox, &f.store, &f.agent).unwrap();
    (sandbox, agent)
}

fn parts(c: &mut Criterion, f: &Fixture) {
    let bytes = std::fs::read(&f.agent).unwrap();
    let cwasm = std::fs::read(&f.cwasm).unwrap();
    eprintln!(
        "component {} bytes, compiled {} bytes",
        bytes.len(),
        cwasm.len()
    );
    let mut g = c.benchmark_group("python_parts");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function("read_component", |b| {
        b.iter(|| black_box(std::fs::read(&f.agent).unwrap()))
    });
    g.bench_function("sha256_component", |b| {
        b.iter(|| black_box(worldline_case::canon::sha256_hex(&bytes)))
    });
    g.bench_function("sha256_compiled_40mb", |b| {
        b.iter(|| black_box(worldline_case::canon::sha256_hex(&cwasm)))
    });
    g.bench_function("sandbox_new", |b| {
        b.iter(|| black_box(Sandbox::new(Some(f.cache.clone())).unwrap()))
    });
    g.bench_function("cached_load", |b| b.iter(|| black_box(load(f))));
    // The same while the compiled entry is not yet trusted by its file
    // identity (written less than 2 s ago, or changed since): its keyed
    // checksum is checked in full, as the first run after a compile does.
    let check = f.cwasm.with_extension("check");
    let sum_only = std::fs::read_to_string(&check)
        .unwrap()
        .lines()
        .next()
        .map(|l| format!("{l}\n"))
        .unwrap();
    g.bench_function("cached_load_checking_the_entry", |b| {
        b.iter_batched(
            || std::fs::write(&check, &sum_only).unwrap(),
            |()| black_box(load(f)),
            criterion::BatchSize::PerIteration,
        )
    });
    // The same without the store's record of the file's hash: read the
    // 18 MB and hash it, as a run does the first time it sees the file.
    g.bench_function("cached_load_reading_the_file", |b| {
        b.iter(|| {
            let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
            let bytes = std::fs::read(&f.agent).unwrap();
            let agent = sandbox.load_bytes(&bytes, &f.agent).unwrap();
            f.store.put_hashed(&bytes, &agent.sha256).unwrap();
            black_box(agent)
        })
    });
    let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
    let agent = sandbox.load_file(&f.agent).unwrap();
    g.bench_function("instantiate", |b| {
        b.iter(|| {
            let mut store = fresh_store(&sandbox, &f.case);
            black_box(agent.pre.instantiate(&mut store).unwrap());
        })
    });
    g.bench_function("run_20_calls_loaded", |b| {
        b.iter(|| black_box(run(&sandbox, &agent, &f.case, None).unwrap()))
    });
    g.finish();
}

fn headline(c: &mut Criterion, f: &Fixture) {
    let mut g = c.benchmark_group("python_start");
    g.sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(6));
    g.bench_function("load_and_instantiate", |b| b.iter(|| start(f)));
    g.bench_function("load_instantiate_and_run_20_calls", |b| {
        b.iter(|| {
            let (sandbox, agent) = load(f);
            black_box(run(&sandbox, &agent, &f.case, None).unwrap())
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    parts(c, &f);
    headline(c, &f);
}

criterion_group!(python, benches);
criterion_main!(python);
