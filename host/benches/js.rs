//! JavaScript agent start-up: what a run of a ComponentizeJS component
//! (~12 MB, the StarlingMonkey engine inside) pays before the agent works,
//! once its compiled code is in the store's cache.
//!
//! `cargo bench --profile dev -p worldline --bench js -- --warm-up-time 1
//! --measurement-time 3`. The agent is `tests/guests/js-probe/agent.ts`,
//! built with `worldline build-js` (Node.js and the pinned npm packages
//! must be installed); set `WORLDLINE_BENCH_JS_AGENT` to a built .wasm to
//! skip that. The case is `tests/cases/js-probe.toml`. Results are written
//! up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use worldline_case::case::{self, Case};
use worldline_engine::run::{new_store, run};
use worldline_log::log::Recorder;
use worldline_runtime::mediate::Mediator;
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

struct Fixture {
    _dir: tempfile::TempDir,
    agent: PathBuf,
    cache: PathBuf,
    store: StoreDir,
    case: Case,
}

fn fixture() -> Fixture {
    let agent = match std::env::var_os("WORLDLINE_BENCH_JS_AGENT") {
        Some(p) => PathBuf::from(p),
        None => common::js_guest("tests/guests/js-probe/agent.ts"),
    };
    let dir = common::temp_dir();
    let store = StoreDir::open(&dir.path().join("store")).expect("store");
    let cache = store.cache_dir();
    let case = case::load(&common::case("js-probe"), Some(&common::worlds_dir()))
        .expect("the probe case loads");
    // Fill the compile cache once (this is the slow first run).
    let t = std::time::Instant::now();
    let sandbox = Sandbox::new(Some(cache.clone())).unwrap();
    let loaded = sandbox.load_file(&agent).expect("the JS agent loads");
    eprintln!(
        "first load (compiles the JS engine and writes the cache): {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let check = run(&sandbox, &loaded, &case, None).unwrap();
    assert_eq!(
        check.footer.status.as_str(),
        "completed",
        "{:?}",
        check.footer.error
    );
    eprintln!(
        "the case: {} events, {} fuel; component {} bytes",
        check.events.len(),
        check.footer.fuel,
        std::fs::metadata(&agent).unwrap().len()
    );
    let f = Fixture {
        _dir: dir,
        agent,
        cache,
        store,
        case,
    };
    // The first `worldline run` of a file reads and hashes it, and records
    // its hash by file identity; the runs measured here are the later ones.
    load(&f);
    f
}

/// A new sandbox and the agent loaded as `worldline run` loads it.
fn load(f: &Fixture) -> (Sandbox, Arc<Agent>) {
    let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
    let agent = worldline_engine::agent_file::load(&sandbox, &f.store, &f.agent).unwrap();
    (sandbox, agent)
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    let mut g = c.benchmark_group("js_start");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("cached_load", |b| b.iter(|| black_box(load(&f))));
    let sandbox = Sandbox::new(Some(f.cache.clone())).unwrap();
    let agent = sandbox.load_file(&f.agent).unwrap();
    g.bench_function("instantiate", |b| {
        b.iter(|| {
            let mut store = new_store(
                &sandbox,
                &f.case,
                Mediator::new(&f.case, Recorder::in_memory()),
            )
            .unwrap();
            black_box(agent.pre.instantiate(&mut store).unwrap());
        })
    });
    // What `worldline run` pays before the agent's first instruction.
    g.bench_function("load_and_instantiate", |b| {
        b.iter(|| {
            let (sandbox, agent) = load(&f);
            let mut store = new_store(
                &sandbox,
                &f.case,
                Mediator::new(&f.case, Recorder::in_memory()),
            )
            .unwrap();
            black_box(agent.pre.instantiate(&mut store).unwrap());
        })
    });
    g.bench_function("load_instantiate_and_run_the_probe", |b| {
        b.iter(|| {
            let (sandbox, agent) = load(&f);
            black_box(run(&sandbox, &agent, &f.case, None).unwrap())
        })
    });
    g.finish();
}

criterion_group!(js, benches);
criterion_main!(js);
