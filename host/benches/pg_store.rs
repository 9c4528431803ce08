//! The PostgreSQL store against the folder store, on a throwaway local
//! cluster (started as the tests start theirs, `tests/common/pg.rs`, but
//! syncing to disk at each commit as PostgreSQL ships, `fsync=on`: the
//! folder store syncs each bundle, so both sides are durable):
//!
//! - a 20-call run written to each store (the database store's run is
//!   written to its working folder, then stored whole in one transaction);
//! - a filtered `runs` on a database store of 100,000 runs: in this
//!   process (connect, check the schema version and for runs stored or
//!   removed since the last look, then the index query), and as the real
//!   command (a process of the `worldline` binary, `--json`);
//! - the UI's run list at that size (the router's `GET /`, first page, last
//!   page, SQL-filtered, and the free-text filter the index cannot apply).
//!
//! The last two run on a folder store of 100,000 runs too, for comparison.
//!
//! Targets (issue 32): the run within 2x of the folder store; the query
//! at most 50 ms; the run list under 300 ms.
//!
//! `cargo bench -p worldline --bench pg_store -- --warm-up-time 1
//! --measurement-time 3`. The 100,000 runs are rows generated in the
//! database (`generate_series`) and in the working folder's index, which
//! is marked up to date with them. The lines starting `pg_store: RESULT`
//! are the figures, in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt as _;
use worldline_engine::run::run;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::index::Index;
use worldline_store::index::query::Filter;
use worldline_store::index::row::Row;
use worldline_store::store::StoreDir;
use worldline_ui::{App, router};

const RUNS: i64 = 100_000;

fn big_folder_of(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("big-folder")
}

fn median(mut v: Vec<Duration>) -> Option<Duration> {
    v.sort();
    v.get(v.len() / 2).copied()
}

/// Time `f` under criterion as `name`, and print the median of every call
/// (a `RESULT` line).
fn timed<T>(g: &mut BenchmarkGroup<WallTime>, name: &str, mut f: impl FnMut() -> T) {
    let mut times = Vec::new();
    g.bench_function(name, |b| {
        b.iter(|| {
            let t = Instant::now();
            let out = f();
            times.push(t.elapsed());
            out
        })
    });
    println!("pg_store: RESULT {name}: median {:?}", median(times));
}

/// The UI's run list (`/?token=...` and `query`) through the router: its
/// HTML.
fn get(rt: &tokio::runtime::Runtime, app: &Arc<App>, query: &str) -> String {
    let req = axum::http::Request::get(format!("/?token={}{query}", app.secrets.token()))
        .header("host", format!("127.0.0.1:{}", app.secrets.port))
        .body(axum::body::Body::empty())
        .unwrap();
    rt.block_on(async {
        let resp = router(app.clone()).oneshot(req).await.unwrap();
        assert_eq!(resp.status(), axum::http::StatusCode::OK);
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    })
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
        rules: Some(worldline_log::log::rules::CURRENT),
    }
}

fn bench(c: &mut Criterion) {
    std::fs::create_dir_all(common::store_cache()).unwrap();
    // SAFETY: set before any thread of this process reads the environment.
    unsafe { std::env::set_var("WORLDLINE_STORE_CACHE", common::store_cache()) };
    let pg = common::pg::own_durable_cluster();
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
    let case = worldline_case::case::load(&case_path, Some(&common::worlds_dir())).unwrap();
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
        timed(&mut g, name, || {
            run(&sandbox, &agent, &case, Some(store)).unwrap().run_id
        });
    }

    // Ten samples for the slow figures (seconds each before issue 32's fix).
    g.sample_size(10);
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
        // As a fresh process: it opens the store (a database store
        // connects and looks for new runs) before answering.
        timed(&mut g, &format!("runs_filtered_100k_{kind}"), || {
            let store = StoreDir::open(&store_arg).unwrap();
            Index::read(&store, |i| i.query(&filter)).unwrap().0.len()
        });
        // The real command, as a user runs it: a process of the binary.
        let runs = |extra: &[&str]| {
            let mut args = vec!["runs", "--store", store_arg.to_str().unwrap(), "--json"];
            args.extend_from_slice(extra);
            let out = common::worldline_raw(&args);
            out.expect_code(0);
            out.json().as_array().map_or(0, Vec::len)
        };
        let limited = ["--status", "failed", "--case", "case-17", "--limit", "50"];
        assert_eq!(runs(&limited), 50);
        timed(
            &mut g,
            &format!("runs_command_filtered_100k_{kind}"),
            || runs(&limited),
        );
        let since = [
            "--status",
            "failed",
            "--case",
            "case-17",
            "--since",
            "2026-11-01",
        ];
        println!(
            "pg_store: `runs {}` lists {} runs",
            since.join(" "),
            runs(&since)
        );
        timed(
            &mut g,
            &format!("runs_command_filtered_unlimited_100k_{kind}"),
            || runs(&since),
        );

        let rt = tokio::runtime::Builder::new_multi_thread().build().unwrap();
        let app = Arc::new(App::new(big, 8484, false).unwrap());
        let page = |query: &str| get(&rt, &app, query);
        assert!(page("").contains("(100000 matching)"));
        assert!(page("&page=1000").contains("page 1000 of 1000"));
        assert!(page("&q=case-17").contains("(2000 matching)"));
        for (what, query) in [
            ("", ""),
            ("_last_page", "&page=1000"),
            ("_failed_of_a_case", "&status=failed&case=case-17"),
            ("_text", "&q=case-17"),
        ] {
            timed(&mut g, &format!("ui_run_list_100k_{kind}{what}"), || {
                page(query).len()
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
