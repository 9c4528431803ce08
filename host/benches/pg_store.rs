//! The PostgreSQL store against the folder store, on a throwaway local
//! cluster (started as the tests start theirs, `tests/common/pg.rs`):
//!
//! - a 20-call run written to each store (the database store's run is
//!   written to its working folder, then stored whole in one transaction);
//! - a filtered `runs` query on a database store of 100,000 runs (connect,
//!   check the schema version and for runs stored or removed since the
//!   last look, then the index query);
//! - the UI's run list at that size.
//!
//! The last two run on a folder store of 100,000 runs too, for comparison.
//!
//! Targets (issue 32): the run within 2x of the folder store; the query
//! at most 50 ms; the run list under 300 ms.
//!
//! `cargo bench -p worldline --bench pg_store`. The 100,000 runs are rows
//! generated in the database (`generate_series`) and in the working
//! folder's index, which is marked up to date with them. The lines starting
//! `pg_store: RESULT` are the figures, in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt as _;
use worldline::index::Index;
use worldline::index::query::Filter;
use worldline::index::row::Row;
use worldline::run::run;
use worldline::sandbox::Sandbox;
use worldline::store::StoreDir;
use worldline::ui::{App, router};

const RUNS: i64 = 100_000;

fn big_folder_of(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("big-folder")
}

fn median(mut v: Vec<Duration>) -> Option<Duration> {
    v.sort();
    v.get(v.len() / 2).copied()
}

fn row(i: i64) -> Row {
    let failed = i % 10 >= 7;
    Row {
        run_id: format!("{:08}-000000-{:06x}", 20_260_000 + i / 1000, i),
        created: 1_790_000_000 + i * 60,
        case: format!("case-{}", i % 50),
        world: "demo@v1".into(),
        agent: format!("{:064x}", i % 4),
        case_hash: format!("{:064x}", 1000 + i % 50),
        world_hash: format!("{:064x}", 2000),
        seed: i as u64,
        status: "completed".into(),
        grade: Some(if failed { "failed" } else { "passed" }.into()),
        outcome: if failed { "failed" } else { "passed" }.into(),
        signature: failed.then(|| format!("assertion {} failed", i % 5)),
        events: 20,
        parent: None,
        fork_event: None,
        tags: Vec::new(),
        size: 4096,
        chain_hash: Some(format!("{:064x}", i)),
    }
}

fn bench(c: &mut Criterion) {
    std::fs::create_dir_all(common::store_cache()).unwrap();
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("WORLDLINE_STORE_CACHE", common::store_cache()) };
    let pg = common::pg::cluster();
    let dir = common::temp_dir();

    // A 20-call run, into a folder store and into a database store.
    let sandbox = Sandbox::new(None).unwrap();
    let agent_path = common::guest_or_env("WORLDLINE_BENCH_AGENT", "hostile-agent");
    let agent = sandbox
        .load_bytes(&std::fs::read(&agent_path).unwrap(), &agent_path)
        .unwrap();
    let case_path = common::write_case(
        dir.path(),
        "calls",
        "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 20 }\n",
    );
    let case = worldline::case::load(&case_path, Some(&common::worlds_dir())).unwrap();
    let folder = StoreDir::open(&dir.path().join("folder")).unwrap();
    let db = StoreDir::open(&pg.fresh_store()).unwrap();
    for store in [&folder, &db] {
        store
            .put_object(&std::fs::read(&agent_path).unwrap())
            .unwrap();
        store.put_case(&case).unwrap();
    }
    let mut g = c.benchmark_group("pg_store");
    g.sample_size(20);
    for (name, store) in [
        ("run_20_calls_folder", &folder),
        ("run_20_calls_postgres", &db),
    ] {
        let mut times = Vec::new();
        g.bench_function(name, |b| {
            b.iter(|| {
                let t = Instant::now();
                let out = run(&sandbox, &agent, &case, Some(store)).unwrap();
                times.push(t.elapsed());
                out.run_id
            })
        });
        println!("pg_store: RESULT {name}: median {:?}", median(times));
    }

    // 100,000 runs in a database store (and its working folder's index),
    // and in a folder store's index, for comparison.
    let schema = common::pg::fresh_schema();
    let address = pg.store_in(&schema);
    // Opening it makes the schema.
    StoreDir::open(std::path::Path::new(&address)).unwrap();
    let t = Instant::now();
    pg.psql(&format!(
        "INSERT INTO {schema}.runs (id, agent_sha256, case_hash, world_hash, chain_hash, frames, writer_user, writer_host)
         SELECT to_char(20260000 + i / 1000, 'FM00000000') || '-000000-' || lpad(to_hex(i), 6, '0'),
                lpad(to_hex(i % 4), 64, '0'), lpad(to_hex(1000 + i % 50), 64, '0'), lpad(to_hex(2000), 64, '0'),
                lpad(to_hex(i), 64, '0'), 22, 'ci', 'machine-' || (i % 8)
         FROM generate_series(0, {}) AS i",
        RUNS - 1
    ));
    println!("pg_store: {RUNS} runs written in {:?}", t.elapsed());
    for store_arg in [std::path::PathBuf::from(&address), big_folder_of(&dir)] {
        let kind = if store_arg == big_folder_of(&dir) {
            "folder"
        } else {
            "postgres"
        };
        let big = StoreDir::open(&store_arg).unwrap();
        let mut index = Index::connect(&big).unwrap();
        index
            .upsert_all(&(0..RUNS).map(row).collect::<Vec<_>>())
            .unwrap();
        // An unchanged folder: its time is settled and recorded (as in
        // benches/store.rs), so opening the index takes its fast path.
        let past = std::time::SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::open(big.runs_dir())
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(past))
            .unwrap();
        index.note_synced().unwrap();
        drop(index);
        if big.database().is_some() {
            std::fs::write(
                big.root.join("pulled.json"),
                format!("{{\"runs\":{RUNS},\"removed\":0}}"),
            )
            .unwrap();
        }
        let filter = Filter {
            status: vec!["failed".into()],
            case: Some("case-17".into()),
            limit: Some(50),
            ..Filter::default()
        };
        let name = format!("runs_filtered_100k_{kind}");
        let mut times = Vec::new();
        g.bench_function(&name, |b| {
            b.iter(|| {
                // As a fresh process: it opens the store (a database store
                // connects and looks for new runs) before answering.
                let t = Instant::now();
                let store = StoreDir::open(&store_arg).unwrap();
                let (rows, _) = Index::read(&store, |i| i.query(&filter)).unwrap();
                times.push(t.elapsed());
                rows.len()
            })
        });
        println!("pg_store: RESULT {name}: median {:?}", median(times));

        let rt = tokio::runtime::Builder::new_multi_thread().build().unwrap();
        let app = Arc::new(App::new(big, 8484, false).unwrap());
        let name = format!("ui_run_list_100k_{kind}");
        let mut times = Vec::new();
        g.bench_function(&name, |b| {
            b.iter(|| {
                let req = axum::http::Request::get(format!("/?token={}", app.secrets.token()))
                    .header("host", format!("127.0.0.1:{}", app.secrets.port))
                    .body(axum::body::Body::empty())
                    .unwrap();
                let t = Instant::now();
                let len = rt.block_on(async {
                    let resp = router(app.clone()).oneshot(req).await.unwrap();
                    assert_eq!(resp.status(), axum::http::StatusCode::OK);
                    axum::body::to_bytes(resp.into_body(), usize::MAX)
                        .await
                        .unwrap()
                        .len()
                });
                times.push(t.elapsed());
                len
            })
        });
        println!("pg_store: RESULT {name}: median {:?}", median(times));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
