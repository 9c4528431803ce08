//! The store over time on 100,000 runs: the run index's update per run,
//! filtered `runs` queries, and a `gc --dry-run`.
//!
//! Target: a filtered query answers in at most 50 ms on 100,000 runs
//! (opening the index and its freshness check included).
//!
//! The 100,000 rows are generated and written to the index directly (no
//! bundles): runs spread over 120 days, 50 cases, 3 worlds, 4 agents, 70%
//! passed, 20% failed (5 signatures), 10% faulted, every 20th a fork. The
//! `runs/` folder is empty and marked as matched, so opening the index
//! takes its fast path (one `stat` of the folder), as on a store whose
//! folder has not changed since the last `runs`. The queries run first,
//! while no other connection holds the index open, so each opens it as a
//! new `worldline runs` process does; the updates follow.
//!
//! `cargo bench -p worldline --bench store -- --warm-up-time 1
//! --measurement-time 3`. Figures in docs/benchmarks.md.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use worldline_store::index::Index;
use worldline_store::index::query::Filter;
use worldline_store::index::row::Row;
use worldline_store::retention::policy::Policy;
use worldline_store::retention::sweep;
use worldline_store::store::StoreDir;

const RUNS: i64 = 100_000;
const DAY: i64 = 86_400;

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn row(i: i64, now: i64) -> Row {
    let outcome = match i % 10 {
        0..=6 => "passed",
        7 | 8 => "failed",
        _ => "faulted",
    };
    let status = match outcome {
        "faulted" => "trapped",
        _ => "completed",
    };
    Row {
        run_id: format!("{:08}-000000-{:06x}", 20_260_000 + i / 1000, i),
        created: now - 120 * DAY + i * (120 * DAY / RUNS),
        case: format!("case-{}", i % 50),
        world: format!("incident@v{}", i % 3),
        agent: format!("{:064x}", i % 4),
        case_hash: format!("{:064x}", 1000 + i % 50),
        world_hash: format!("{:064x}", 2000 + i % 3),
        seed: i as u64,
        status: status.into(),
        grade: (status == "completed").then(|| {
            if outcome == "passed" {
                "passed"
            } else {
                "failed"
            }
            .into()
        }),
        outcome: outcome.into(),
        signature: match outcome {
            "failed" => Some(format!("failed: deploys/D-{}.status equals", i % 5)),
            "faulted" => Some("trapped".into()),
            _ => None,
        },
        events: 20 + (i % 200) as u64,
        parent: (i % 20 == 19)
            .then(|| format!("{:08}-000000-{:06x}", 20_260_000 + (i - 1) / 1000, i - 1)),
        fork_event: (i % 20 == 19).then_some(5),
        tags: Vec::new(),
        size: 8000,
        chain_hash: Some(format!("{i:064x}")),
        rules: Some(worldline_log::log::rules::CURRENT),
    }
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = StoreDir::open(dir.path()).unwrap();
    let now = now();
    let rows: Vec<Row> = (0..RUNS).map(|i| row(i, now)).collect();
    let mut index = Index::connect(&store).unwrap();
    let t = std::time::Instant::now();
    index.upsert_all(&rows).unwrap();
    println!(
        "store: RESULT bulk insert of {RUNS} rows: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    // An unchanged folder: its time is settled and recorded.
    let past = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::open(store.runs_dir())
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(past))
        .unwrap();
    index.note_synced().unwrap();
    drop(index);

    let mut g = c.benchmark_group("store");
    g.sample_size(20);

    let queries = [
        (
            "query_failed_of_a_case_this_week",
            Filter {
                status: vec!["failed".into()],
                case: Some("case-17".into()),
                since: Some(now - 7 * DAY),
                ..Filter::default()
            },
        ),
        (
            "query_signature_newest_50",
            Filter {
                signature: Some("D-3.status".into()),
                limit: Some(50),
                ..Filter::default()
            },
        ),
        (
            "query_faulted_of_an_agent_world",
            Filter {
                status: vec!["faulted".into()],
                agent: Some(format!("{:060x}", 0)),
                world: Some("incident@v1".into()),
                limit: Some(100),
                ..Filter::default()
            },
        ),
        (
            "query_newest_50",
            Filter {
                limit: Some(50),
                ..Filter::default()
            },
        ),
    ];
    for (name, filter) in &queries {
        let found = Index::open(&store).unwrap().0.query(filter).unwrap().len();
        println!("store: {name} selects {found} runs");
        assert!(found > 0, "{name} selects nothing");
        g.bench_function(*name, |b| {
            b.iter(|| {
                let (index, sync) = Index::open(&store).unwrap();
                assert_eq!(sync.read + sync.dropped, 0);
                black_box(index.query(filter).unwrap())
            })
        });
    }

    let mut next = RUNS;
    // A process writing many runs (`test`, `fuzz --keep-all`) keeps its
    // connection; one writing a single run (`run`) opens and closes it.
    g.bench_function("index_update_per_run", |b| {
        b.iter(|| {
            let r = row(next, now);
            next += 1;
            worldline_store::index::save_row(&store, &r).unwrap();
        })
    });
    g.bench_function("index_open_update_close", |b| {
        b.iter(|| {
            let r = row(next, now);
            next += 1;
            Index::connect(&store).unwrap().upsert_all(&[r]).unwrap();
        })
    });

    g.bench_function("gc_dry_run", |b| {
        b.iter(|| black_box(sweep::gc(&store, &Policy::default(), now, true).unwrap()))
    });
    let report = sweep::gc(&store, &Policy::default(), now, true).unwrap();
    println!(
        "store: gc --dry-run would remove {} of {} runs ({} kept as parents)",
        report.runs.count,
        RUNS + (next - RUNS),
        report.kept_as_parents.len()
    );
    g.finish();
}

criterion_group!(store_benches, benches);
criterion_main!(store_benches);
