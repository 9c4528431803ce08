//! World-service benchmark: one service tool call that does one `get` and
//! one `update` (tool `bump`), mediated and recorded in memory, in the Rust
//! service (tests/guests/counter-service) and in the Python one
//! (tests/guests/python-service, built with `worldline build-python
//! --service`; componentize-py must be installed, or set
//! `WORLDLINE_BENCH_PYTHON_SERVICE` to a built .wasm), against the same
//! world's declarative `get`; and a run's start on a service world against
//! the same world without its service.
//!
//! `cargo bench -p worldline --bench services -- --warm-up-time 1
//! --measurement-time 3`. Results are written up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;
use std::path::Path;
use worldline_case::case::{self, Case};
use worldline_case::world::tools::AsOf;
use worldline_engine::run::run;
use worldline_log::log::{Effect, Recorder};
use worldline_runtime::mediate::service::{Runtime, run_tool};
use worldline_runtime::mediate::{Mediator, ServiceReply};
use worldline_runtime::sandbox::{Sandbox, timeout_ticks};

/// `tests/worlds/counters` as `counters` with the Rust service built from
/// source, as `pycounters` with `python_service`, and as `plain` without
/// its service tools.
fn worlds(root: &Path, python_service: &Path) {
    let src = common::workspace_root().join("tests/worlds/counters/v1");
    let toml = std::fs::read_to_string(src.join("world.toml")).unwrap();
    let rows = std::fs::read(src.join("counters.jsonl")).unwrap();
    let world = |name: &str, toml: &str, service: Option<&Path>| {
        let folder = root.join(name).join("v1");
        std::fs::create_dir_all(&folder).unwrap();
        let toml = toml.replace("name = \"counters\"", &format!("name = \"{name}\""));
        std::fs::write(folder.join("world.toml"), toml).unwrap();
        std::fs::write(folder.join("counters.jsonl"), &rows).unwrap();
        if let Some(service) = service {
            std::fs::copy(service, folder.join("service.wasm")).unwrap();
        }
    };
    world("counters", &toml, Some(&common::guest("counter-service")));
    world("pycounters", &toml, Some(python_service));
    let declarative: String = toml
        .split("\n\n")
        .filter(|block| !block.contains("op = \"service\"") && !block.starts_with("[service]"))
        .collect::<Vec<_>>()
        .join("\n\n");
    world("plain", &declarative, None);
}

/// A mediator for `case` with its world's service attached; its in-memory
/// log grows by one event per call (as a run's does).
fn mediator_with_service(sandbox: &Sandbox, case: &Case) -> Mediator {
    let service = sandbox
        .service(case.world.service.as_ref().unwrap())
        .unwrap();
    let mut med = Mediator::new(case, Recorder::in_memory());
    med.services.attach_service(Runtime::new(
        service,
        case,
        timeout_ticks(case.limits.timeout_ms),
    ));
    med
}

fn case_on(dir: &Path, world: &str) -> Case {
    let text = format!(
        "world = \"{world}@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [] }}\n"
    );
    let path = common::write_case(dir, world, &text);
    case::load(&path, Some(&dir.join("worlds"))).expect("bench case loads")
}

/// One tool call through the mediator, as `tools.call` answers it.
fn call(med: &mut Mediator, tool: &str, args: &Value) -> Value {
    let world = med.services.world().clone();
    let t = world.tool(tool).unwrap();
    med.mediate(
        "worldline:agent/tools.call",
        json!({"name": tool, "args": args}),
        |s| {
            let as_of = AsOf::now(s.now_text());
            let (out, writes) = run_tool(s, t, args, &as_of).result.unwrap();
            ServiceReply {
                effect: Effect::Write,
                writes,
                ..ServiceReply::read(json!({"ok": out}))
            }
        },
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let dir = common::temp_dir();
    let python_wasm = match std::env::var_os("WORLDLINE_BENCH_PYTHON_SERVICE") {
        Some(p) => std::path::PathBuf::from(p),
        None => common::python_service("tests/guests/python-service/counters.py"),
    };
    worlds(&dir.path().join("worlds"), &python_wasm);
    let mut svc = case_on(dir.path(), "counters");
    // One mediator answers every iteration: an optimized build makes more
    // calls in a measurement than a case's default event limit allows.
    svc.limits.max_events = 5_000_000;
    let plain = case_on(dir.path(), "plain");
    let mut py = case_on(dir.path(), "pycounters");
    py.limits.max_events = 5_000_000;
    // The compile cache outlives the bench, so CPython compiles once.
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-compile-cache");
    let sandbox = Sandbox::new(Some(cache)).unwrap();
    let agent = sandbox.load_file(&common::guest("caller-agent")).unwrap();

    let mut g = c.benchmark_group("service");
    g.sample_size(20);
    let mut med = mediator_with_service(&sandbox, &svc);
    let args = json!({"id": "c"});
    assert_eq!(call(&mut med, "bump", &args)["ok"]["n"], 1);
    g.bench_function("rust_service_call_get_update", |b| {
        b.iter(|| black_box(call(&mut med, "bump", &args)))
    });
    let mut py_med = mediator_with_service(&sandbox, &py);
    assert_eq!(call(&mut py_med, "bump", &args)["ok"]["n"], 1);
    g.bench_function("python_service_call_get_update", |b| {
        b.iter(|| black_box(call(&mut py_med, "bump", &args)))
    });
    g.bench_function("declarative_get_call", |b| {
        b.iter(|| black_box(call(&mut med, "get_counter", &args)))
    });
    g.bench_function("run_start_service_world", |b| {
        b.iter(|| black_box(run(&sandbox, &agent, &svc, None).unwrap()))
    });
    g.bench_function("run_start_declarative_world", |b| {
        b.iter(|| black_box(run(&sandbox, &agent, &plain, None).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
