//! Suite benchmark: the real `worldline test` binary on 100 cases of the
//! example worlds with the careful agent and `--jobs 2`, timed from process
//! start to exit. Target: under 2 s on a 2-core machine.
//!
//! `cargo bench -p worldline --bench suite`. The 100 cases are the example
//! cases in `cases/` (incident and accounts) copied round-robin with new
//! seeds into a temporary `cases/` folder; they find their worlds through
//! `--worlds <workspace>/worlds`. The careful agent is built from source the
//! way the tests build their guests; set `WORLDLINE_BENCH_CAREFUL` to a
//! .wasm to skip that build. Results are written up in docs/benchmarks.md.
//!
//! Two figures: a cold run (empty store, so the component is compiled) and
//! warm runs (compile cache filled once, runs folder emptied between
//! iterations). The median of the warm runs is the one the target is about.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Cases in the generated suite.
const CASES: usize = 100;
/// Parallel jobs, as in the target (a 2-core machine).
const JOBS: &str = "2";
/// Cold runs (each with an empty store).
const COLD_RUNS: usize = 3;

struct Fixture {
    _dir: tempfile::TempDir,
    cases: PathBuf,
    agent: PathBuf,
    worlds: PathBuf,
    store: PathBuf,
}

fn agent_path() -> PathBuf {
    common::guest_or_env("WORLDLINE_BENCH_CAREFUL", "careful-agent")
}

/// The example cases, sorted: `(group, stem, text)`.
fn example_cases() -> Vec<(String, String, String)> {
    let root = common::workspace_root().join("cases");
    let mut found = Vec::new();
    for group in ["incident", "accounts"] {
        let dir = root.join(group);
        for entry in std::fs::read_dir(&dir).expect("reading the example cases") {
            let path = entry.expect("a folder entry").path();
            if path.extension().is_some_and(|x| x == "toml") {
                let stem = path.file_stem().unwrap().to_string_lossy().to_string();
                let text = std::fs::read_to_string(&path).expect("reading a case");
                found.push((group.to_string(), stem, text));
            }
        }
    }
    found.sort();
    assert!(
        !found.is_empty(),
        "no example cases under {}",
        root.display()
    );
    found
}

/// The case text with its `seed = N` line replaced by `seed = new`.
fn reseed(text: &str, new: u64) -> String {
    let mut replaced = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            if !replaced && l.trim_start().starts_with("seed") && l.contains('=') {
                replaced = true;
                format!("seed = {new}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(replaced, "an example case has no `seed = ` line");
    out.join("\n") + "\n"
}

/// Write CASES case files under `dir/cases/<group>/`.
fn generate(dir: &Path) -> PathBuf {
    let examples = example_cases();
    let cases = dir.join("cases");
    for i in 0..CASES {
        let (group, stem, text) = &examples[i % examples.len()];
        let round = i / examples.len();
        let seed = 10_000 + i as u64 * 7_919;
        let folder = cases.join(group);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("{stem}-{round:02}.toml")),
            reseed(text, seed),
        )
        .unwrap();
    }
    cases
}

fn fixture() -> Fixture {
    let dir = common::temp_dir();
    let cases = generate(dir.path());
    Fixture {
        cases,
        agent: agent_path(),
        worlds: common::workspace_root().join("worlds"),
        store: dir.path().join("store"),
        _dir: dir,
    }
}

/// `worldline test <cases> --agent … --worlds … --store … --jobs 2`, timed
/// from spawn to exit. Returns the time and the `N passed, M failed` line.
fn suite_once(f: &Fixture, store: &Path) -> (Duration, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_worldline"));
    cmd.arg("test")
        .arg(&f.cases)
        .arg("--agent")
        .arg(&f.agent)
        .arg("--worlds")
        .arg(&f.worlds)
        .arg("--store")
        .arg(store)
        .args(["--jobs", JOBS]);
    let t = Instant::now();
    let out = cmd.output().expect("starting the worldline binary");
    let took = t.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    assert!(
        matches!(out.status.code(), Some(0 | 1)) && summary.contains("passed"),
        "worldline test failed to run the suite: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    (took, summary)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn suite(c: &mut Criterion) {
    let f = fixture();
    eprintln!(
        "suite: {CASES} cases in {}, binary {}, agent {}",
        f.cases.display(),
        env!("CARGO_BIN_EXE_worldline"),
        f.agent.display()
    );

    // Cold: an empty store each time, so the run includes compiling the
    // component and filling the store's objects.
    let mut cold = Vec::new();
    for i in 0..COLD_RUNS {
        let store = f.store.with_extension(format!("cold{i}"));
        let (took, summary) = suite_once(&f, &store);
        eprintln!("suite: cold run {i}: {:.0} ms ({summary})", ms(took));
        cold.push(took);
        let _ = std::fs::remove_dir_all(&store);
    }
    let cold_median = median(&mut cold);

    // Warm the compile cache (and the store's objects) once.
    let (took, summary) = suite_once(&f, &f.store);
    eprintln!("suite: warming run: {:.0} ms ({summary})", ms(took));

    let runs = f.store.join("runs");
    let mut warm: Vec<Duration> = Vec::new();
    let mut g = c.benchmark_group("suite");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function("worldline_test_100_cases_jobs2_warm", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // Same work every iteration: no bundles left from the last.
                let _ = std::fs::remove_dir_all(&runs);
                let (took, _) = suite_once(&f, &f.store);
                warm.push(took);
                total += took;
            }
            total
        })
    });
    g.finish();

    // The first measured run is criterion's warm-up; drop it.
    let measured = if warm.len() > 1 {
        &mut warm[1..]
    } else {
        &mut warm[..]
    };
    let n = measured.len();
    let (lo, hi) = (
        measured.iter().min().copied().unwrap_or_default(),
        measured.iter().max().copied().unwrap_or_default(),
    );
    let warm_median = median(measured);
    eprintln!(
        "suite: RESULT cold median {:.0} ms over {COLD_RUNS} runs; warm median {:.0} ms over {n} runs (min {:.0}, max {:.0}); target < 2000 ms warm: {}",
        ms(cold_median),
        ms(warm_median),
        ms(lo),
        ms(hi),
        if warm_median < Duration::from_secs(2) {
            "met"
        } else {
            "MISSED"
        }
    );
}

criterion_group!(benches, suite);
criterion_main!(benches);
