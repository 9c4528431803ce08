//! Live-model concurrency: 64 runs of `cases/model/rollback.toml` with the
//! model-driven agent against an OpenAI-compatible server on loopback that
//! answers every request after 200 ms (first a `list_deploys` tool call,
//! then, once a tool result is in the conversation, a final answer: two
//! model calls per run). Runs wait on the endpoint, not the CPU, so
//! `--jobs` beyond the cores should approach the ideal: with `jobs` runs at
//! once, 64 runs take `ceil(64 / jobs) × 2 × 200 ms`.
//!
//! `cargo bench -p worldline --bench live_suite`. Prints, per `--jobs`,
//! the median wall time of the suite (in process, as `worldline test` runs
//! it) and its throughput as a share of the ideal. Target: `--jobs 64`
//! reaches ≥ 85% of the ideal. Results are in docs/benchmarks.md.
//! `WORLDLINE_BENCH_JOBS=64` measures only the `--jobs` values listed
//! (`WORLDLINE_BENCH_JOBS=` none: only the CPU-bound comparison).

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use worldline_case::case::model::parse_overrides;
use worldline_engine::suite::{Entry, Suite};
use worldline_store::store::StoreDir;

const CASES: usize = 64;
const LATENCY: Duration = Duration::from_millis(200);
const CALLS_PER_RUN: u32 = 2;
const SAMPLES: usize = 5;

/// A completion: a tool call until the conversation has a tool result.
fn answer(request: &str) -> String {
    let message = if request.contains("\"role\":\"tool\"") {
        serde_json::json!({"role": "assistant", "content": "{\"done\": true}"})
    } else {
        serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "list_deploys", "arguments": "{\"service\":\"checkout\"}"}
        }]})
    };
    serde_json::json!({
        "id": "bench", "object": "chat.completion", "created": 0, "model": "bench",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
    .to_string()
}

/// Read one HTTP request, wait, answer, close.
fn serve(conn: TcpStream) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone the stream"));
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    std::thread::sleep(LATENCY);
    let text = answer(&String::from_utf8_lossy(&body));
    let mut conn = conn;
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
}

fn start_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || serve(conn));
        }
    });
    format!("http://{addr}/v1")
}

fn main() {
    let base_url = start_server();
    let dir = common::temp_dir();
    let store = StoreDir::open(&dir.path().join("store")).unwrap();
    let sandbox = worldline_runtime::sandbox::Sandbox::new(Some(store.cache_dir())).unwrap();
    let wasm: PathBuf = common::guest_or_env("WORLDLINE_BENCH_MODEL_AGENT", "model-agent");
    let agent = worldline_engine::agent_file::load(&sandbox, &store, &wasm).unwrap();
    let path = common::workspace_root().join("cases/model/rollback.toml");
    let overrides = parse_overrides(&[
        "provider=openai".into(),
        format!("base_url={base_url}"),
        "model=bench".into(),
        "retries=0".into(),
    ])
    .unwrap();
    let entries = copies(&path, Some(&overrides));
    store.put_case(&entries[0].case).unwrap();
    println!(
        "{CASES} runs x {CALLS_PER_RUN} model calls, endpoint latency {} ms, median of {SAMPLES}",
        LATENCY.as_millis()
    );
    // `WORLDLINE_BENCH_JOBS=64,128` measures only those (for profiling).
    let all_jobs: Vec<usize> = match std::env::var("WORLDLINE_BENCH_JOBS") {
        Ok(list) => list
            .split(',')
            .filter(|j| !j.trim().is_empty())
            .map(|j| {
                j.trim()
                    .parse()
                    .expect("WORLDLINE_BENCH_JOBS is a list of numbers")
            })
            .collect(),
        Err(_) => vec![1, 8, 32, 64, 128],
    };
    for jobs in all_jobs {
        let samples = if jobs == 1 { 1 } else { SAMPLES };
        let median = median_suite(&sandbox, &agent, &store, &entries, jobs, samples);
        let waves = CASES.div_ceil(jobs) as u32;
        let ideal = LATENCY * CALLS_PER_RUN * waves;
        println!(
            "--jobs {jobs:>3}: median {:>7.1} ms, ideal {:>6.0} ms, {:>5.1}% of ideal throughput",
            median.as_secs_f64() * 1000.0,
            ideal.as_secs_f64() * 1000.0,
            100.0 * ideal.as_secs_f64() / median.as_secs_f64()
        );
    }

    // The same suite with the case's scripted model: CPU-bound runs, which
    // a large --jobs must not slow down.
    let scripted = copies(&path, None);
    // The two settings take turns, sample by sample, so a change in the
    // machine's load meanwhile falls on both alike.
    const CPU_SAMPLES: usize = 15;
    println!(
        "the same {CASES} runs with the scripted model (CPU-bound), median of {CPU_SAMPLES}, taking turns"
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (mut few, mut many) = (Vec::new(), Vec::new());
    for _ in 0..CPU_SAMPLES {
        few.push(median_suite(&sandbox, &agent, &store, &scripted, cores, 1));
        many.push(median_suite(&sandbox, &agent, &store, &scripted, 64, 1));
    }
    few.sort();
    many.sort();
    let (few, many) = (few[CPU_SAMPLES / 2], many[CPU_SAMPLES / 2]);
    println!(
        "--jobs {cores:>3}: median {:>7.1} ms",
        few.as_secs_f64() * 1000.0
    );
    println!(
        "--jobs  64: median {:>7.1} ms, {:.2}x the time at --jobs {cores}",
        many.as_secs_f64() * 1000.0,
        many.as_secs_f64() / few.as_secs_f64()
    );
}

/// `CASES` copies of the case at `path`, seeds 0.., with `overrides` of
/// its `[model]` when given.
fn copies(path: &Path, overrides: Option<&BTreeMap<String, String>>) -> Vec<Entry> {
    (0..CASES)
        .map(|i| {
            let mut case = worldline_case::case::load(path, None).unwrap();
            case.seed = i as u64;
            if let Some(o) = overrides {
                case.override_model(o.clone()).unwrap();
            }
            Entry {
                index: i,
                name: format!("rollback-{i}"),
                path: path.to_path_buf(),
                case,
            }
        })
        .collect()
}

/// The median wall time of `samples` runs of the suite at `jobs`.
fn median_suite(
    sandbox: &worldline_runtime::sandbox::Sandbox,
    agent: &worldline_runtime::sandbox::Agent,
    store: &StoreDir,
    entries: &[Entry],
    jobs: usize,
    samples: usize,
) -> Duration {
    let mut times = Vec::new();
    for _ in 0..samples {
        let t = Instant::now();
        let done = Suite {
            group: false,
            sandbox,
            agent,
            cases: entries,
            store,
            model_seed: None,
            repeat: 1,
            jobs,
            fail_fast: false,
            collection_errors: &[],
            compiles: &[],
        }
        .run(&|_| {})
        .expect("the store can be written");
        times.push(t.elapsed());
        let completed = done
            .cases
            .iter()
            .filter(|c| {
                c.attempts[0]
                    .outcome
                    .as_ref()
                    .is_ok_and(|o| o.footer.status.as_str() == "completed" || o.grade.is_some())
            })
            .count();
        assert_eq!(completed, entries.len(), "every run reached the end");
        let _ = std::fs::remove_dir_all(store.runs_dir());
        std::fs::create_dir_all(store.runs_dir()).unwrap();
    }
    times.sort();
    times[times.len() / 2]
}
