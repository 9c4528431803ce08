//! `verify` at scale: the whole `worldline verify` process on a store of
//! 10,000 runs, all of them and a `--sample 100`, with `--jobs 2`.
//!
//! Target: all 10,000 in at most 4 s on a 2-core machine; `--sample 100`
//! in at most 0.2 s.
//!
//! `cargo bench -p worldline --bench verify`. The agent is
//! `tests/guests/caller` (set `WORLDLINE_BENCH_CALLER` to a prebuilt .wasm
//! to skip building it); the case is the LangGraph comparison's
//! (`../shared/bench/`): 20 `list_deploys` calls and one `add_note`, graded,
//! on `tests/worlds/demo`. One run is recorded through `test`, and its
//! bundle copied under 9,999 more run ids (each replays as the original).
//! Lines starting `verify: RESULT` carry the figures (the whole store
//! once, the sample as the median of 5); docs/benchmarks.md writes them up.

#[path = "../tests/common/mod.rs"]
mod common;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use worldline_store::store::StoreDir;

const RUNS: usize = 10_000;

fn case_text() -> String {
    let mut calls = vec![r#"{ tool = "list_deploys", args = { service = "checkout" } }"#; 20];
    calls.push(
        r#"{ tool = "add_note", args = { ticket = "T-1", text = "db saturation", author = "bench" } }"#,
    );
    format!(
        "world = \"demo@v1\"\nseed = 1000\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{}] }}\n\n[expect]\nstatus = \"completed\"\n[[expect.state]]\ntable = \"notes\"\nwhere = {{ ticket = \"T-1\", author = \"bench\" }}\ncount = 1\n",
        calls.join(", ")
    )
}

fn verify(store: &Path, extra: &[&str]) -> Duration {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_worldline"))
        .arg("verify")
        .args(extra)
        .args(["--jobs", "2", "--json", "--store"])
        .arg(store)
        .output()
        .expect("running worldline verify");
    let took = t.elapsed();
    assert!(
        out.status.success(),
        "verify failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("verify --json");
    assert_eq!(doc["diverged"], 0);
    took
}

fn main() {
    let agent = common::guest_or_env("WORLDLINE_BENCH_CALLER", "caller-agent");
    let dir = tempfile::tempdir().expect("temporary folder");
    let case = common::write_case(dir.path(), "c000", &case_text());
    let store_path = dir.path().join("store");
    let worlds = common::worlds_dir();
    let out = common::worldline(
        &store_path,
        [
            OsStr::new("test"),
            case.as_os_str(),
            OsStr::new("--agent"),
            agent.as_os_str(),
            OsStr::new("--worlds"),
            worlds.as_os_str(),
        ],
    );
    assert_eq!(out.code, 0, "{out}");
    let store = StoreDir::open(&store_path).expect("the store");
    let first = store.run_ids().expect("runs").remove(0);
    let bundle = std::fs::read(store.bundle_path(&first)).expect("the bundle");
    for i in 1..RUNS {
        let id = store.new_run_id(&i.to_string());
        std::fs::write(store.bundle_path(&id), &bundle).expect("a copy");
    }
    // Warm: the compile cache and the rebuilt world are in place.
    verify(&store_path, &["--sample", "10", "--seed", "1"]);

    let all = verify(&store_path, &[]);
    println!(
        "verify: RESULT all {RUNS} runs, --jobs 2: {:.2} s ({:.3} ms per run)",
        all.as_secs_f64(),
        all.as_secs_f64() * 1000.0 / RUNS as f64
    );
    let mut sample: Vec<Duration> = (0..5u64)
        .map(|seed| {
            verify(
                &store_path,
                &["--sample", "100", "--seed", &seed.to_string()],
            )
        })
        .collect();
    sample.sort();
    println!(
        "verify: RESULT --sample 100 of {RUNS}, --jobs 2: median {:.1} ms (of 5: {:?})",
        sample[2].as_secs_f64() * 1000.0,
        sample
            .iter()
            .map(|d| (d.as_secs_f64() * 1000.0).round())
            .collect::<Vec<_>>()
    );
}
