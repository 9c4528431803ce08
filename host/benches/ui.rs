//! Server time to first render of the UI's two heaviest pages: the runs
//! page of a store with 100,000 runs (issue 32's size), and the page of a
//! run with 10,000 events. Target: under 300 ms each (median).
//!
//! Each iteration is one whole request through the app's router (token and
//! Host checks included) up to the complete HTML body, without a socket.
//! The 100,000 runs are index rows written directly (no bundles; the runs
//! page reads only the index), spread as in the store benchmark; the
//! 10,000-event run is a real run of `tests/guests/hostile` (task
//! `{"mode": "calls", "n": 10000}`) recorded by the `worldline` binary.
//!
//! `cargo bench -p worldline --bench ui -- --warm-up-time 1
//! --measurement-time 3`. Figures in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use criterion::{Criterion, criterion_group, criterion_main};
use std::sync::Arc;
use tower::ServiceExt as _;
use worldline_store::index::Index;
use worldline_store::index::row::Row;
use worldline_store::store::StoreDir;
use worldline_ui::{App, router};

const RUNS: i64 = 100_000;
const EVENTS: u64 = 10_000;

fn row(i: i64) -> Row {
    let outcome = match i % 10 {
        0..=6 => "passed",
        7 | 8 => "failed",
        _ => "faulted",
    };
    let status = if outcome == "faulted" {
        "trapped"
    } else {
        "completed"
    };
    Row {
        run_id: format!("{:08}-000000-{:06x}", 20_260_000 + i / 1000, i),
        created: 1_790_000_000 + i * 60,
        case: format!("case-{}", i % 50),
        world: format!("incident@v{}", i % 3),
        agent: format!("{:064x}", i % 4),
        case_hash: format!("{:064x}", 1000 + i % 50),
        world_hash: format!("{:064x}", 2000 + i % 3),
        seed: i as u64,
        status: status.into(),
        grade: (status == "completed").then(|| outcome.to_string()),
        outcome: outcome.into(),
        signature: (outcome == "failed").then(|| format!("assertion {} failed", i % 5)),
        events: 20 + (i % 30) as u64,
        parent: (i % 20 == 0 && i > 0)
            .then(|| format!("{:08}-000000-{:06x}", 20_260_000 + (i - 1) / 1000, i - 1)),
        fork_event: (i % 20 == 0 && i > 0).then_some(3),
        tags: if i % 20 == 0 && i > 0 {
            vec!["fork".into()]
        } else {
            Vec::new()
        },
        size: 4096,
        chain_hash: Some(format!("{:064x}", i)),
        rules: Some(worldline_log::log::rules::CURRENT),
    }
}

/// One request through the router; the body's length.
fn render(rt: &tokio::runtime::Runtime, app: &Arc<App>, path: &str) -> usize {
    let sep = if path.contains('?') { '&' } else { '?' };
    let req = Request::get(format!("{path}{sep}token={}", app.secrets.token()))
        .header(header::HOST, format!("127.0.0.1:{}", app.secrets.port))
        .body(Body::empty())
        .unwrap();
    rt.block_on(async {
        let resp = router(app.clone()).oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
        axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
            .len()
    })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().build().unwrap();

    // 100,000 runs in the index.
    let dir = common::temp_dir();
    let runs_store = StoreDir::open(&dir.path().join("runs-store")).unwrap();
    std::fs::create_dir_all(runs_store.runs_dir()).unwrap();
    let mut index = Index::connect(&runs_store).unwrap();
    index
        .upsert_all(&(0..RUNS).map(row).collect::<Vec<_>>())
        .unwrap();
    index.note_synced().unwrap();
    drop(index);
    let runs_app = Arc::new(App::new(runs_store, 8484, false).unwrap());
    let bytes = render(&rt, &runs_app, "/");
    println!("ui: runs page of {RUNS} runs: {bytes} bytes of HTML");

    // A run of 10,000 events.
    let case = common::write_case(
        dir.path(),
        "many",
        &format!(
            "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = {{ mode = \"calls\", n = {EVENTS} }}\n[limits]\nmax_events = {}\n",
            EVENTS * 2
        ),
    );
    let store_path = dir.path().join("events-store");
    let out = common::worldline_raw([
        "run".as_ref(),
        case.as_os_str(),
        "--agent".as_ref(),
        common::guest_or_env("WORLDLINE_BENCH_AGENT", "hostile-agent").as_os_str(),
        "--worlds".as_ref(),
        common::worlds_dir().as_os_str(),
        "--store".as_ref(),
        store_path.as_os_str(),
        "--json".as_ref(),
    ]);
    let run_id = out.json()["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    let events = out.json()["events"].as_u64().unwrap();
    assert!(events >= EVENTS, "{events} events:\n{out}");
    let events_app = Arc::new(App::new(StoreDir::open(&store_path).unwrap(), 8484, false).unwrap());
    let run_page = format!("/run/{run_id}");
    let bytes = render(&rt, &events_app, &run_page);
    println!("ui: page of a run of {events} events: {bytes} bytes of HTML");

    let mut g = c.benchmark_group("ui");
    g.sample_size(10);
    g.bench_function("runs_page_100000_runs", |b| {
        b.iter(|| render(&rt, &runs_app, "/"))
    });
    g.bench_function("runs_page_100000_runs_filtered", |b| {
        b.iter(|| render(&rt, &runs_app, "/?status=failed&case=case-1*"))
    });
    g.bench_function("run_page_10000_events", |b| {
        b.iter(|| render(&rt, &events_app, &run_page))
    });
    g.bench_function("run_page_10000_events_last_page", |b| {
        b.iter(|| render(&rt, &events_app, &format!("{run_page}?page=50")))
    });
    // The floor under the run page: reading and checking the bundle.
    let bundle = out.bundle();
    g.bench_function("bundle_read_10000_events", |b| {
        b.iter(|| {
            worldline_log::log::bundle::read(&bundle)
                .unwrap()
                .events
                .len()
        })
    });
    g.bench_function("event_page_of_10000", |b| {
        b.iter(|| render(&rt, &events_app, &format!("/run/{run_id}/event/9000")))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
