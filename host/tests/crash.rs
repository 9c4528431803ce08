//! `kill -9` at seeded random points of `test` (whose runs are flushed in
//! batches: a kill still loses none it finished), `fuzz --keep-all`, `fork`,
//! `import` and a Python agent's first compile, 53 trials on one store.
//! Afterwards `verify` must exit 0 (a run cut off is reported incomplete,
//! never as drift or unreadable) and every command must still work.
//!
//! The seed is fixed so a failure reproduces; set WORLDLINE_CRASH_SEED to
//! explore others.

use crate::common;

use common::*;
use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A duration in `[0, max)`.
    fn within(&mut self, max: Duration) -> Duration {
        let us = max.as_micros().max(1) as u64;
        Duration::from_micros(self.next() % us)
    }
}

fn command(store: &Path, args: &[OsString]) -> Command {
    let mut cmd = crate::common::cli();
    cmd.args(args)
        .envs([OWN_COMPILE_CACHE])
        .arg("--store")
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// How long the command takes when left alone (and that it works).
fn timed(store: &Path, args: &[OsString], codes: &[i32]) -> Duration {
    let started = Instant::now();
    let status = command(store, args).status().unwrap();
    let took = started.elapsed();
    assert!(
        codes.contains(&status.code().unwrap_or(-1)),
        "worldline {args:?} exited {status} before any kill"
    );
    took
}

/// Start the command and `kill -9` it after a random part of `typical`.
fn kill_at_random(rng: &mut Rng, store: &Path, args: &[OsString], typical: Duration) {
    let mut child = command(store, args).spawn().unwrap();
    std::thread::sleep(rng.within(typical));
    let _ = child.kill();
    let _ = child.wait();
}

fn os(parts: &[&dyn AsRef<OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_owned()).collect()
}

fn json(store: &Path, args: &[OsString]) -> (i32, Value) {
    let out = worldline_with(
        store,
        args.iter().chain([&OsString::from("--json")]),
        &[OWN_COMPILE_CACHE],
    );
    let doc = out.json.clone().unwrap_or(Value::Null);
    (out.code, doc)
}

#[test]
#[cfg_attr(
    not(worldline_tests_run),
    ignore = "needs componentize-py: run tests/run, which installs it"
)]
fn kill_9_anywhere_leaves_a_store_that_verifies_and_works() {
    let seed = std::env::var("WORLDLINE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x005e_ed17);
    let mut rng = Rng(seed);
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = guest("hostile-agent");

    // test: a small suite.
    let suite = os(&[
        &"test",
        &case("hostile-ok"),
        &case("hostile-flood"),
        &case("hostile-network"),
        &case("hostile-exit"),
        &"--agent",
        &agent,
        &"--jobs",
        &"2",
    ]);
    let t = timed(&store, &suite, &[1]);
    for _ in 0..15 {
        kill_at_random(&mut rng, &store, &suite, t);
    }
    // The suite flushes its runs in batches (decision 0263), yet a kill
    // loses nothing written: every finished run is whole, and at most the
    // two in flight per kill are cut off.
    let (code, verify) = json(&store, &os(&[&"verify"]));
    assert_eq!(code, 0, "verify after killing the suite:\n{verify:#}");
    let cut = verify["verified_prefix"].as_u64().unwrap() + verify["incomplete"].as_u64().unwrap();
    assert!(cut <= 15 * 2, "{cut} runs cut off by 15 kills:\n{verify:#}");

    // fuzz --keep-all.
    let fz = write_case(
        dir.path(),
        "fz",
        "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 3 }\n\n[[fuzz.tools]]\ntool = \"get_ticket\"\nerror = { timeout = 0.3 }\n",
    );
    let fuzz = os(&[
        &"fuzz",
        &fz,
        &"--agent",
        &agent,
        &"--worlds",
        &worlds_dir(),
        &"--runs",
        &"40",
        &"--keep-all",
    ]);
    let t = timed(&store, &fuzz, &[0, 1]);
    for _ in 0..15 {
        kill_at_random(&mut rng, &store, &fuzz, t);
    }

    // fork: of a run with a few tool calls.
    let calls = write_case(
        dir.path(),
        "calls",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 20 }\n",
    );
    let record = |store: &Path| {
        let (code, run) = json(
            store,
            &os(&[
                &"run",
                &calls,
                &"--agent",
                &agent,
                &"--worlds",
                &worlds_dir(),
            ]),
        );
        assert_eq!(code, 0, "{run}");
        run["run_id"].as_str().unwrap().to_string()
    };
    let parent_id = record(&store);
    let fork = os(&[&"fork", &parent_id, &"--at", &"5", &"--deny", &"get_ticket"]);
    let t = timed(&store, &fork, &[0, 1]);
    for _ in 0..10 {
        kill_at_random(&mut rng, &store, &fork, t);
    }

    // import: an export from another store.
    let other = dir.path().join("other");
    let exported_id = record(&other);
    let file = dir.path().join("run.json");
    worldline(&other, os(&[&"export", &exported_id, &"-o", &file])).expect_code(0);
    let import = os(&[&"import", &file]);
    let scratch = dir.path().join("scratch");
    let t = timed(&scratch, &import, &[0]);
    for _ in 0..10 {
        kill_at_random(&mut rng, &store, &import, t);
    }

    // The first compile of a Python agent (each trial with a cold cache).
    let python = python_guest("tests/guests/python-probe/agent.py");
    let py_run = os(&[&"run", &case("python-probe"), &"--agent", &python]);
    for _ in 0..3 {
        let _ = std::fs::remove_dir_all(store.join("cache"));
        let _ = std::fs::create_dir_all(store.join("cache"));
        kill_at_random(&mut rng, &store, &py_run, Duration::from_secs(6));
    }

    // The store verifies: cut-off runs are incomplete, nothing drifted.
    let (code, verify) = json(&store, &os(&[&"verify"]));
    assert_eq!(code, 0, "verify after the kills:\n{verify:#}");
    assert_eq!(verify["diverged"], 0, "{verify:#}");
    assert_eq!(verify["unreadable"], 0, "{verify:#}");

    // And every command still works on it.
    let after = |args: Vec<OsString>, codes: &[i32]| {
        let out = worldline(&store, &args);
        assert!(
            codes.contains(&out.code),
            "after the kills, worldline {args:?}:\n{out}"
        );
        out
    };
    after(suite.clone(), &[1]);
    after(fuzz.clone(), &[0, 1]);
    after(fork.clone(), &[0, 1]);
    after(import.clone(), &[0]);
    after(os(&[&"replay", &exported_id]), &[0]);
    after(py_run.clone(), &[0]);
    after(os(&[&"runs"]), &[0]);
    let (code, verify) = json(&store, &os(&[&"verify"]));
    assert_eq!(code, 0, "the final verify:\n{verify:#}");
}
