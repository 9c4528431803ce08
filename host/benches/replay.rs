//! Replay and fork benchmark on a scripted run of 200 tool calls:
//! recording it (bundle written to a store), replaying it strictly, and
//! forking it at event 100; plus bundle size against the number of events.
//!
//! Targets: strict replay takes at most 1.2x the recording run; a fork at
//! event 100 finishes in under 5 ms; bundle bytes grow linearly with events
//! (no full-state copy per event).
//!
//! `cargo bench -p worldline --bench replay`. The guests are built from
//! source the way the tests build them: `tests/guests/hostile` (task
//! `{"mode": "calls", "n": N}`: N `get_ticket` reads) and, for the size of
//! runs that write, `tests/guests/caller` (N `add_note` inserts, so the
//! state grows with every call). Both run in `tests/worlds/demo/v1`. Set
//! `WORLDLINE_BENCH_AGENT` to a hostile .wasm to skip its build. Results are
//! written up in docs/benchmarks.md.
//!
//! The record/replay/fork group runs twice: with the store in the temp
//! folder (`disk`), and, where `/dev/shm` exists, on tmpfs (`tmpfs`). A
//! finished bundle is `fsync`ed, and on a disk that sync is most of what
//! writing a bundle costs. The lines starting `replay: RESULT` are the
//! figures (medians of the per-iteration times criterion collected).

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use worldline_case::case::{self, Case};
use worldline_engine::fork::fork;
use worldline_engine::replay::{self, Verdict};
use worldline_engine::run::{RunOptions, run, run_with};
use worldline_log::log::bundle::Edit;
use worldline_log::log::{Held, rules};
use worldline_runtime::mediate::follow::Following;
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

/// Tool calls in the scripted run.
const CALLS: u64 = 200;
/// Where the fork departs.
const FORK_AT: u64 = 100;
/// Tool calls per run in the bundle-size series.
const SIZES: [u64; 4] = [50, 100, 200, 400];

struct Fixture {
    dir: tempfile::TempDir,
    sandbox: Sandbox,
    /// The store on the temp folder's file system (a disk here).
    store: StoreDir,
    /// A second store on tmpfs (`/dev/shm`), when there is one: the same
    /// runs without the cost of the bundle's final `fsync` reaching a disk.
    shm: Option<(tempfile::TempDir, StoreDir)>,
    hostile: Arc<Agent>,
    caller: Arc<Agent>,
}

fn agent_path() -> PathBuf {
    common::guest_or_env("WORLDLINE_BENCH_AGENT", "hostile-agent")
}

/// Load an agent and keep its bytes in the stores (replay reads it there).
fn load_agent(sandbox: &Sandbox, stores: &[&StoreDir], path: &Path) -> Arc<Agent> {
    let bytes = std::fs::read(path).expect("reading a bench agent");
    for store in stores {
        store.put_object(&bytes).unwrap();
    }
    sandbox.load_bytes(&bytes, path).expect("the agent loads")
}

impl Fixture {
    fn new() -> Self {
        let dir = common::temp_dir();
        let store = StoreDir::open(&dir.path().join("store")).expect("store");
        let shm = Path::new("/dev/shm")
            .is_dir()
            .then(|| {
                tempfile::Builder::new()
                    .prefix("worldline-bench-")
                    .tempdir_in("/dev/shm")
                    .ok()
            })
            .flatten()
            .map(|d| {
                let s = StoreDir::open(&d.path().join("store")).expect("tmpfs store");
                (d, s)
            });
        let sandbox = Sandbox::new(Some(store.cache_dir())).unwrap();
        let stores: Vec<&StoreDir> = std::iter::once(&store)
            .chain(shm.as_ref().map(|(_, s)| s))
            .collect();
        let hostile = load_agent(&sandbox, &stores, &agent_path());
        let caller = load_agent(&sandbox, &stores, &common::guest("caller-agent"));
        Fixture {
            dir,
            sandbox,
            store,
            shm,
            hostile,
            caller,
        }
    }

    /// The stores to measure in: `(label, store)`.
    fn stores(&self) -> Vec<(&'static str, &StoreDir)> {
        std::iter::once(("disk", &self.store))
            .chain(self.shm.as_ref().map(|(_, s)| ("tmpfs", s)))
            .collect()
    }

    /// Write a case into the temp folder and keep it (and its world) in
    /// the store, as `worldline run` does, so the run can be replayed.
    fn case(&self, name: &str, task: &str) -> Case {
        let text =
            format!("world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = {task}\n");
        let path = common::write_case(self.dir.path(), name, &text);
        let case = case::load(&path, Some(&common::worlds_dir())).expect("bench case loads");
        for (_, store) in self.stores() {
            store.put_object(text.as_bytes()).unwrap();
            store.put_world(&case.world).unwrap();
        }
        case
    }

    fn calls_case(&self, n: u64) -> Case {
        self.case(
            &format!("calls{n}"),
            &format!("{{ mode = \"calls\", n = {n} }}"),
        )
    }

    fn notes_case(&self, n: u64) -> Case {
        let calls: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{{ tool = \"add_note\", args = {{ ticket = \"T-1\", text = \"note {i}\", author = \"bench\" }} }}"
                )
            })
            .collect();
        self.case(
            &format!("notes{n}"),
            &format!("{{ calls = [{}] }}", calls.join(", ")),
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    let n = v.len();
    assert!(n > 0, "no samples");
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// Time `f` once per iteration, keeping each iteration's time in `times`.
fn timed<T>(
    times: &mut Vec<Duration>,
    iters: u64,
    mut f: impl FnMut() -> (Duration, T),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let (took, out) = f();
        black_box(out);
        times.push(took);
        total += took;
    }
    total
}

fn replay_and_fork(c: &mut Criterion, f: &Fixture, label: &str, store: &StoreDir) {
    let case = f.calls_case(CALLS);

    // The recording the replay and the fork start from.
    let recorded = run(&f.sandbox, &f.hostile, &case, Some(store)).unwrap();
    assert_eq!(
        recorded.footer.status.as_str(),
        "completed",
        "{:?}",
        recorded.footer.error
    );
    let tools = recorded
        .events
        .as_held()
        .iter()
        .filter(|e| e.call == "worldline:agent/tools.call")
        .count() as u64;
    assert_eq!(tools, CALLS);
    let run_id = recorded.run_id.clone().unwrap();
    let rec = replay::open(store, &run_id).unwrap();
    let check = replay::replay(&f.sandbox, store, rec.clone()).unwrap();
    assert_eq!(check.verdict, Verdict::Identical, "{check:?}");
    let at = &rec.bundle.events[FORK_AT as usize];
    eprintln!(
        "replay: the run of {CALLS} tool calls records {} events; event {FORK_AT} is {}",
        rec.bundle.events.len(),
        at.call
    );
    // The fork answers event FORK_AT differently (a tool call's response),
    // or, if that event is not a tool call, simply runs live from there.
    let edits = || {
        if at.call == "worldline:agent/tools.call" {
            vec![Edit::Respond {
                response: json!({"id": "T-1", "status": "closed", "title": "forked"}),
            }]
        } else {
            Vec::new()
        }
    };
    let fork_check = fork(&f.sandbox, store, &rec, FORK_AT, edits(), None).unwrap();
    assert_eq!(fork_check.footer.status.as_str(), "completed");
    assert_eq!(fork_check.events.len(), rec.bundle.events.len());

    let (mut t_record, mut t_record_mem, mut t_open, mut t_replay, mut t_fork) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut t_agent, mut t_follow) = (Vec::new(), Vec::new());
    let mut g = c.benchmark_group(format!("replay_{label}"));
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("record_200_calls_to_bundle", |b| {
        b.iter_custom(|iters| {
            timed(&mut t_record, iters, || {
                let t = Instant::now();
                let o = run(&f.sandbox, &f.hostile, &case, Some(store)).unwrap();
                let took = t.elapsed();
                let _ = std::fs::remove_file(o.bundle.as_ref().unwrap());
                (took, o.footer.events)
            })
        })
    });
    g.bench_function("record_200_calls_in_memory", |b| {
        b.iter_custom(|iters| {
            timed(&mut t_record_mem, iters, || {
                let t = Instant::now();
                let o = run_with(&f.sandbox, &f.hostile, &case, RunOptions::default()).unwrap();
                (t.elapsed(), o.footer.events)
            })
        })
    });
    g.bench_function("open_bundle", |b| {
        b.iter_custom(|iters| {
            timed(&mut t_open, iters, || {
                let t = Instant::now();
                let r = replay::open(store, &run_id).unwrap();
                (t.elapsed(), r.bundle.events.len())
            })
        })
    });
    g.bench_function("strict_replay", |b| {
        b.iter_custom(|iters| {
            timed(&mut t_replay, iters, || {
                let rec = rec.clone();
                let t = Instant::now();
                let r = replay::replay(&f.sandbox, store, rec).unwrap();
                let took = t.elapsed();
                assert_eq!(r.verdict, Verdict::Identical);
                (took, r.matched)
            })
        })
    });
    // What strict replay is made of: fetching the recorded agent from the
    // store (read + hash check + in-process cache lookup), and following
    // the recording with the agent already loaded.
    g.bench_function("replay_part_recorded_agent", |b| {
        b.iter_custom(|iters| {
            timed(&mut t_agent, iters, || {
                let t = Instant::now();
                let a = replay::recorded_agent(&f.sandbox, store, &rec).unwrap();
                (t.elapsed(), a)
            })
        })
    });
    g.bench_function("replay_part_follow_recording", |b| {
        b.iter_custom(|iters| {
            timed(&mut t_follow, iters, || {
                let events = rec.bundle.events.clone();
                let t = Instant::now();
                let following =
                    Following::replay(Held::from_whole(events), rules::CURRENT, true, Vec::new());
                let o = run_with(
                    &f.sandbox,
                    &f.hostile,
                    &rec.case,
                    RunOptions {
                        following: Some(following),
                        ..RunOptions::default()
                    },
                )
                .unwrap();
                let took = t.elapsed();
                assert!(o.divergence.is_none());
                (took, o.footer.events)
            })
        })
    });
    g.bench_function("fork_at_100", |b| {
        b.iter_custom(|iters| {
            timed(&mut t_fork, iters, || {
                let edits = edits();
                let t = Instant::now();
                let o = fork(&f.sandbox, store, &rec, FORK_AT, edits, None).unwrap();
                let took = t.elapsed();
                let _ = std::fs::remove_file(o.bundle.as_ref().unwrap());
                (took, o.footer.events)
            })
        })
    });
    g.finish();

    let (record, record_mem, open, replayed, forked) = (
        median(&t_record),
        median(&t_record_mem),
        median(&t_open),
        median(&t_replay),
        median(&t_fork),
    );
    let (agent, follow) = (median(&t_agent), median(&t_follow));
    let ratio = replayed.as_secs_f64() / record.as_secs_f64();
    let ratio_open = (open + replayed).as_secs_f64() / record.as_secs_f64();
    eprintln!(
        "replay: RESULT [{label}] medians: record (to bundle) {:.3} ms [{} samples], record (in memory) {:.3} ms, open {:.3} ms, strict replay {:.3} ms, fork at {FORK_AT} {:.3} ms",
        ms(record),
        t_record.len(),
        ms(record_mem),
        ms(open),
        ms(replayed),
        ms(forked)
    );
    eprintln!(
        "replay: RESULT [{label}] replay parts: recorded agent {:.3} ms, following the recording {:.3} ms",
        ms(agent),
        ms(follow)
    );
    eprintln!(
        "replay: RESULT [{label}] replay/record = {ratio:.3} (target <= 1.2: {}); (open + replay)/record = {ratio_open:.3}; fork at {FORK_AT} < 5 ms: {}",
        if ratio <= 1.2 { "met" } else { "MISSED" },
        if forked < Duration::from_millis(5) {
            "met"
        } else {
            "MISSED"
        }
    );
}

/// Bundle size against events, for reads (state unchanged) and for inserts
/// (state grows by a row per call).
fn bundle_sizes(f: &Fixture) {
    for (label, agent, make) in [
        (
            "get_ticket reads",
            &f.hostile,
            &(|n| f.calls_case(n)) as &dyn Fn(u64) -> Case,
        ),
        ("add_note inserts", &f.caller, &|n| f.notes_case(n)),
    ] {
        let mut last: Option<(u64, u64)> = None;
        for n in SIZES {
            let case = make(n);
            let o = run(&f.sandbox, agent, &case, Some(&f.store)).unwrap();
            assert_eq!(
                o.footer.status.as_str(),
                "completed",
                "{:?}",
                o.footer.error
            );
            let bytes = std::fs::metadata(o.bundle.as_ref().unwrap()).unwrap().len();
            let events = o.footer.events;
            let marginal = last.map_or(String::from("-"), |(b0, e0)| {
                format!("{:.1}", (bytes - b0) as f64 / (events - e0) as f64)
            });
            eprintln!(
                "replay: RESULT size {label}: {n} calls -> {events} events, {bytes} bytes, {:.1} bytes/event, marginal {marginal} bytes/event",
                bytes as f64 / events as f64
            );
            last = Some((bytes, events));
        }
    }
}

fn benches(c: &mut Criterion) {
    let f = Fixture::new();
    bundle_sizes(&f);
    for (label, store) in f.stores() {
        replay_and_fork(c, &f, label, store);
    }
}

criterion_group!(replay_benches, benches);
criterion_main!(replay_benches);
