//! Fuzz campaign throughput on a scripted case of 20 tool calls.
//!
//! Target: at least 2,000 runs per second on a 2-core machine, passing
//! runs kept in memory only.
//!
//! `cargo bench -p worldline --bench fuzz`. The agent is
//! `tests/guests/caller` (built from source as the tests build it; set
//! `WORLDLINE_BENCH_CALLER` to a prebuilt .wasm to skip that), whose task
//! lists 20 calls: `get_ticket` and `list_deploys` in turn, on
//! `tests/worlds/demo/v1`. Each call is two events (a trace note, then the
//! call), so a run records 40 events. The case's `[fuzz]` profile makes a
//! third of the deploy lists stale, delays a third of the ticket reads and
//! times out one call in twenty; `[expect]` grades every run.
//!
//! Figures (medians of criterion's per-iteration times; lines starting
//! `fuzz: RESULT`): one run on one thread, from cloning the case to the
//! grade; the same with no profile (what the faults cost); and a campaign
//! of 1,000 runs through `Campaign::run` with 1 and with 2 jobs. Results
//! are written up in docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::time::{Duration, Instant};
use worldline_case::case::fuzz::FaultSource;
use worldline_case::case::{self, Case};
use worldline_engine::fuzz::campaign::{Campaign, execute};
use worldline_engine::run::RunOptions;
use worldline_runtime::sandbox::{Agent, Sandbox};

/// Tool calls per run.
const CALLS: usize = 20;
/// Runs per measured campaign.
const CAMPAIGN: u64 = 1_000;

fn case_text() -> String {
    let calls: Vec<serde_json::Value> = (0..CALLS)
        .map(|i| {
            if i % 2 == 0 {
                json!({"tool": "get_ticket", "args": {"id": "T-1"}})
            } else {
                json!({"tool": "list_deploys", "args": {"service": "api"}})
            }
        })
        .collect();
    let task = toml::to_string(&json!({"task": {"calls": calls}})).expect("task as TOML");
    format!(
        r#"world = "demo@v1"
seed = 5
clock = 2026-03-01T12:00:00Z
{task}
[fuzz]
[[fuzz.tools]]
tool = "list_deploys"
stale = {{ p = 0.3, age_s = [60, 3600], field = "at" }}
error = {{ timeout = 0.05 }}

[[fuzz.tools]]
tool = "get_ticket"
error = {{ timeout = 0.05 }}
latency_ms = {{ p = 0.3, ms = [1, 5000], dist = "log" }}

[expect]
unchanged = ["tickets", "deploys"]
"#
    )
}

struct Fixture {
    _dir: tempfile::TempDir,
    sandbox: Sandbox,
    agent: std::sync::Arc<Agent>,
    case: Case,
    faults: FaultSource,
}

impl Fixture {
    fn new() -> Self {
        let dir = common::temp_dir();
        let path = common::write_case(dir.path(), "fuzz-bench", &case_text());
        let case = case::load(&path, Some(&common::worlds_dir())).expect("the bench case loads");
        let faults = FaultSource::Profile(case.fuzz.clone().expect("the case has [fuzz]"));
        let sandbox = Sandbox::new(None).expect("sandbox");
        let wasm = common::guest_or_env("WORLDLINE_BENCH_CALLER", "caller-agent");
        let bytes = std::fs::read(&wasm).expect("reading the caller guest");
        let agent = sandbox.load_bytes(&bytes, &wasm).expect("the caller loads");
        Fixture {
            _dir: dir,
            sandbox,
            agent,
            case,
            faults,
        }
    }

    fn campaign(&self, jobs: usize) -> Campaign<'_> {
        Campaign {
            sandbox: &self.sandbox,
            agent: self.agent.as_ref(),
            case: &self.case,
            faults: self.faults.clone(),
            seed: 1,
            runs: CAMPAIGN,
            repeat: 1,
            jobs,
            keep_all: None,
            partition: None,
            every_fault: false,
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench(c: &mut Criterion) {
    let f = Fixture::new();
    let probe = execute(
        &f.sandbox,
        f.agent.as_ref(),
        &f.case,
        3,
        RunOptions {
            faults: Some(f.faults.clone()),
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        probe.footer.events,
        2 * CALLS as u64,
        "{:?}",
        probe.footer.error
    );
    assert!(probe.grade.as_ref().unwrap().passed);

    let mut g = c.benchmark_group("fuzz");
    g.sample_size(30).measurement_time(Duration::from_secs(6));
    let mut one_run = Vec::new();
    let mut seed = 0u64;
    g.bench_function("one run, faults drawn, graded, in memory", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                seed += 1;
                black_box(
                    execute(
                        &f.sandbox,
                        f.agent.as_ref(),
                        &f.case,
                        seed,
                        // As a campaign's trial: counted and dropped.
                        RunOptions {
                            faults: Some(f.faults.clone()),
                            counted: true,
                            ..RunOptions::default()
                        },
                    )
                    .unwrap(),
                );
            }
            let d = t.elapsed();
            one_run.push(d.as_secs_f64() / iters as f64);
            d
        })
    });
    let mut plain = Vec::new();
    g.bench_function("one run, no profile", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                let counted = RunOptions {
                    counted: true,
                    ..RunOptions::default()
                };
                black_box(execute(&f.sandbox, f.agent.as_ref(), &f.case, 1, counted).unwrap());
            }
            let d = t.elapsed();
            plain.push(d.as_secs_f64() / iters as f64);
            d
        })
    });
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    let mut per_jobs: Vec<(usize, Vec<f64>)> = Vec::new();
    for jobs in [1, 2] {
        let campaign = f.campaign(jobs);
        let mut times = Vec::new();
        g.bench_function(
            format!("campaign of {CAMPAIGN} runs, {jobs} jobs, threads"),
            |b| {
                b.iter_custom(|iters| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        let (tally, ran) = campaign.run(Vec::new(), &|_| {});
                        ran.unwrap();
                        black_box(tally);
                    }
                    let d = t.elapsed();
                    times.push(d.as_secs_f64() / iters as f64);
                    d
                })
            },
        );
        per_jobs.push((jobs, times));
    }
    g.finish();

    println!(
        "fuzz: RESULT one run (20 calls, 40 events), faults drawn: {:.1} µs",
        median(one_run) * 1e6
    );
    println!(
        "fuzz: RESULT one run, no profile: {:.1} µs",
        median(plain) * 1e6
    );
    for (jobs, times) in per_jobs {
        let m = median(times);
        println!(
            "fuzz: RESULT campaign of {CAMPAIGN} runs, {jobs} jobs: {:.1} ms = {:.0} runs/s",
            m * 1e3,
            CAMPAIGN as f64 / m
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
