//! End-to-end tests of the sandbox core: the real `worldline` binary on
//! real wasm32-wasip2 guests built from `tests/guests/` by the tests.
//!
//! - runs are deterministic (byte-identical bundles) and the seed reaches
//!   exactly the random sources;
//! - every kind of hostile guest ends in the right status and exit code and
//!   still leaves a complete bundle;
//! - bad input is refused with exit code 2 and a one-line cause naming the
//!   file;
//! - the compile cache in the store is reused, and two processes that miss
//!   one component at once compile it once.

use crate::common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

fn probe() -> PathBuf {
    guest("probe-agent")
}

fn hostile() -> PathBuf {
    guest("hostile-agent")
}

fn output_json(run: &CliOutput) -> Value {
    let text = run.json()["output"]
        .as_str()
        .unwrap_or_else(|| panic!("the run has no output:\n{run}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("output is not JSON ({e}): {text}"))
}

fn calls(bundle: &BundleLines) -> Vec<String> {
    bundle
        .events
        .iter()
        .map(|e| e["call"].as_str().unwrap_or_default().to_string())
        .collect()
}

// ---- determinism ----

#[test]
fn two_runs_of_the_probe_write_byte_identical_bundles() {
    let agent = probe();
    let a = run_json(shared_store(), &case("probe"), &agent);
    let b = run_json(shared_store(), &case("probe"), &agent);
    a.expect_code(0);
    b.expect_code(0);
    assert_ne!(a.bundle(), b.bundle(), "each run gets its own bundle file");

    let bytes_a = std::fs::read(a.bundle()).unwrap();
    let bytes_b = std::fs::read(b.bundle()).unwrap();
    assert!(
        bytes_a == bytes_b,
        "bundles differ:\n{}\n---\n{}",
        String::from_utf8_lossy(&bytes_a),
        String::from_utf8_lossy(&bytes_b)
    );
    let (ja, jb) = (a.json(), b.json());
    for field in [
        "output",
        "fuel",
        "events",
        "chain_hash",
        "final_state_hash",
        "status",
    ] {
        assert_eq!(ja[field], jb[field], "`{field}` differs between two runs");
    }
    assert_eq!(ja["status"], "completed");

    // The probe really touched the nondeterministic sources.
    let bundle = read_bundle(&a.bundle());
    let calls = calls(&bundle);
    for needed in [
        "wasi:clocks/wall-clock.now",
        "worldline:agent/tools.call",
        "worldline:agent/trace.note",
    ] {
        assert!(
            calls.iter().any(|c| c == needed),
            "no `{needed}` event in {calls:?}"
        );
    }
    assert!(
        calls.iter().any(|c| c.starts_with("wasi:random/")),
        "no wasi:random event in {calls:?}"
    );
    let out = output_json(&a);
    assert_eq!(out["ticket"]["id"], "T-1");
    // Exactly the virtual 250 ms plus three host calls at the case's tick
    // (1 ms): a real sleep would never land on this value.
    assert_eq!(out["slept_ns"], 253_000_000, "virtual sleep: {out}");
}

#[test]
fn another_seed_changes_the_random_draws_and_nothing_else() {
    let dir = temp_dir();
    let store = shared_store();
    let agent = probe();
    let original = std::fs::read_to_string(case("probe")).unwrap();
    assert!(
        original.contains("seed = 7"),
        "tests/cases/probe.toml changed: {original}"
    );
    let reseeded = write_case(
        dir.path(),
        "probe",
        &original.replace("seed = 7", "seed = 8"),
    );

    let a = run_json(store, &case("probe"), &agent);
    let b = worldline(
        store,
        [
            "run".as_ref(),
            reseeded.as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
            "--json".as_ref(),
        ],
    );
    a.expect_code(0);
    b.expect_code(0);
    assert_eq!(b.json()["seed"], 8);
    let (oa, ob) = (output_json(&a), output_json(&b));
    assert_ne!(
        oa["random"], ob["random"],
        "the seed must reach wasi:random"
    );
    assert_ne!(
        oa["hashmap_order"], ob["hashmap_order"],
        "the seed must reach HashMap's keys (wasi:random/insecure-seed)"
    );
    for same in ["wall_before", "wall_after", "slept_ns", "ticket"] {
        assert_eq!(oa[same], ob[same], "`{same}` must not depend on the seed");
    }
    let (ba, bb) = (read_bundle(&a.bundle()), read_bundle(&b.bundle()));
    assert_eq!(ba.events.len(), bb.events.len(), "event count");
    assert_eq!(calls(&ba), calls(&bb), "the calls made");
    let vtimes = |b: &BundleLines| {
        b.events
            .iter()
            .map(|e| e["vtime_ns"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(vtimes(&ba), vtimes(&bb), "virtual times");
    assert_eq!(a.json()["final_state_hash"], b.json()["final_state_hash"]);
    assert_ne!(a.json()["chain_hash"], b.json()["chain_hash"]);
}

// ---- hostile guests ----

/// Run `tests/cases/hostile-<mode>.toml` and check what every run must
/// leave, whatever happened: a bundle with a header, the events the summary
/// counts, and a footer agreeing with the summary.
fn hostile_run(mode: &str, status: &str, code: i32) -> (CliOutput, BundleLines) {
    let run = run_json(
        shared_store(),
        &case(&format!("hostile-{mode}")),
        &hostile(),
    );
    run.expect_code(code);
    let summary = run.json();
    assert_eq!(summary["status"], status, "{run}");
    let bundle = read_bundle(&run.bundle());
    let footer = bundle
        .footer
        .clone()
        .unwrap_or_else(|| panic!("the bundle of `{mode}` has no footer"));
    assert_eq!(footer["status"], status);
    assert_eq!(footer["events"].as_u64(), Some(bundle.events.len() as u64));
    assert_eq!(summary["events"], footer["events"]);
    assert_eq!(summary["fuel"], footer["fuel"]);
    assert_eq!(summary["chain_hash"], footer["chain_hash"]);
    assert_eq!(bundle.header["agent_sha256"], summary["agent_sha256"]);
    for (i, event) in bundle.events.iter().enumerate() {
        assert_eq!(event["seq"].as_u64(), Some(i as u64), "event order");
    }
    if status != "completed" {
        assert!(summary["error"].is_string(), "a fault says why: {run}");
    }
    (run, bundle)
}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    let (run, bundle) = hostile_run("loop", "out_of_fuel", 3);
    let s = run.json();
    assert_eq!(s["fuel"], 50_000_000u64, "all of limits.fuel is used");
    assert_eq!(
        s["replayable"], true,
        "running out of fuel is deterministic"
    );
    assert!(s["error"].as_str().unwrap().contains("limits.fuel"));
    assert!(!s["backtrace"].as_array().unwrap().is_empty());
    assert!(bundle.events.is_empty(), "the loop makes no host calls");
}

#[test]
fn running_out_of_fuel_is_deterministic() {
    let a = run_json(shared_store(), &case("hostile-loop"), &hostile());
    let b = run_json(shared_store(), &case("hostile-loop"), &hostile());
    a.expect_code(3);
    b.expect_code(3);
    assert_eq!(
        std::fs::read(a.bundle()).unwrap(),
        std::fs::read(b.bundle()).unwrap()
    );
}

#[test]
fn an_allocation_bomb_hits_the_memory_limit() {
    let (run, _) = hostile_run("alloc", "memory_limit", 3);
    let err = run.json()["error"].as_str().unwrap();
    assert!(err.contains("limits.memory_mb"), "{err}");
    assert!(
        err.contains(&(16u64 << 20).to_string()),
        "names the 16 MiB limit: {err}"
    );
}

#[test]
fn unbounded_recursion_traps_on_stack_overflow() {
    let (run, _) = hostile_run("recurse", "trapped", 3);
    let s = run.json();
    let err = s["error"].as_str().unwrap();
    assert!(err.contains("call stack exhausted"), "{err}");
    assert!(
        !err.contains("wasm trap: wasm trap"),
        "prefix said twice: {err}"
    );
    let frames = s["backtrace"].as_array().unwrap();
    assert!(
        frames
            .iter()
            .any(|f| f.as_str().unwrap().contains("recurse")),
        "{frames:?}"
    );
}

#[test]
fn a_panic_traps_with_its_message_and_a_backtrace() {
    let (run, bundle) = hostile_run("panic", "trapped", 3);
    let s = run.json();
    let err = s["error"].as_str().unwrap();
    assert!(
        err.contains("boom-42"),
        "the panic message is in the error: {err}"
    );
    assert!(!err.contains('\n'), "the error is one line: {err}");
    let frames: Vec<&str> = s["backtrace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        frames.iter().any(|f| f.contains("hostile_agent")),
        "{frames:?}"
    );
    let footer = bundle.footer.clone().unwrap();
    assert!(footer["stderr"].as_str().unwrap().contains("boom-42"));
    assert!(
        calls(&bundle).iter().any(|c| c.contains("output-stream")),
        "the panic message was written to stderr through the host"
    );
    // The text summary shows the backtrace too.
    let text = worldline(
        shared_store(),
        [
            "run".as_ref(),
            case("hostile-panic").as_os_str(),
            "--agent".as_ref(),
            hostile().as_os_str(),
        ],
    );
    text.expect_code(3);
    assert!(text.stdout.contains("guest backtrace:"), "{text}");
}

#[test]
fn a_stdout_flood_is_bounded_and_noted() {
    let (run, bundle) = hostile_run("flood", "completed", 0);
    let footer = bundle.footer.unwrap();
    let kept = footer["stdout"].as_str().unwrap().len();
    assert!(
        kept <= 4096,
        "stdout kept {kept} bytes past limits.stdout_bytes = 4096"
    );
    assert!(kept >= 4000, "stdout kept only {kept} bytes");
    let dropped = run.json()["truncated_bytes"].as_u64().unwrap();
    assert!(dropped > 0, "truncation is counted");
    assert_eq!(footer["truncated_bytes"].as_u64(), Some(dropped));
    let out = output_json(&run);
    assert_eq!(
        out["failed_writes"].as_u64(),
        Some(0),
        "past the limit bytes are dropped, and the stream stays open: {out}"
    );
    let text = worldline(
        shared_store(),
        [
            "run".as_ref(),
            case("hostile-flood").as_os_str(),
            "--agent".as_ref(),
            hostile().as_os_str(),
        ],
    );
    text.expect_code(0);
    assert!(
        text.stdout.contains("limits.stdout_bytes"),
        "the summary notes the truncation:\n{text}"
    );
}

#[test]
fn process_exit_ends_the_run_as_exited() {
    let (run, bundle) = hostile_run("exit", "exited", 3);
    let err = run.json()["error"].as_str().unwrap();
    assert!(err.contains("exit"), "{err}");
    assert!(
        calls(&bundle)
            .iter()
            .any(|c| c.starts_with("wasi:cli/exit")),
        "the exit is an event"
    );
}

#[test]
fn network_access_is_denied_and_recorded() {
    let (run, bundle) = hostile_run("network", "completed", 0);
    let out = output_json(&run);
    assert!(
        out["connect_error"].is_string(),
        "connect failed in the guest: {out}"
    );
    let denied: Vec<&Value> = bundle
        .events
        .iter()
        .filter(|e| {
            e["effect"] == "denied" && e["call"].as_str().unwrap().starts_with("wasi:sockets/")
        })
        .collect();
    assert!(
        !denied.is_empty(),
        "no denied wasi:sockets event in {:?}",
        calls(&bundle)
    );
}

#[test]
fn the_watchdog_stops_a_loop_with_fuel_to_spare() {
    // Compile the guest first, so the time below is the run's own.
    hostile_run("ok", "completed", 0);
    let started = Instant::now();
    let (run, bundle) = hostile_run("timeout", "timeout", 3);
    let elapsed = started.elapsed();
    let s = run.json();
    assert_eq!(
        s["replayable"], false,
        "a watchdog stop depends on real time"
    );
    assert_eq!(bundle.footer.unwrap()["replayable"], false);
    assert!(s["error"].as_str().unwrap().contains("limits.timeout_ms"));
    // Without the watchdog the loop would spin for years on its fuel; with
    // it the whole process ends soon after the 300 ms limit (the bound
    // leaves room for a loaded machine, not for a late watchdog).
    assert!(
        elapsed < Duration::from_secs(5),
        "timeout_ms = 300 took {elapsed:?} with the guest already compiled"
    );
}

#[test]
fn a_well_behaved_run_of_the_hostile_guest_completes() {
    let (run, _) = hostile_run("ok", "completed", 0);
    assert_eq!(output_json(&run)["ok"], true);
}

/// A suite's runs take their instances from a pool whose slots are reset,
/// not made afresh (decisions 0390, 0404): what a run leaves in its static
/// data or in memory it grew must not reach the next run in that slot,
/// even when the kernel is moving one of its pages at the run's end (the
/// scan of written pages that 0404 withdrew left such a page behind, one
/// run in several hundred on a machine that migrates pages often).
#[test]
fn a_pooled_run_finds_nothing_an_earlier_run_left_in_memory() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    for i in 0..24 {
        write_case(
            &cases,
            &format!("remnant-{i}"),
            &format!(
                "world = \"demo@v1\"\nseed = {i}\nclock = 2026-03-01T12:00:00Z\n\
                 task = {{ mode = \"remnant\" }}\n\n[expect]\nstatus = \"completed\"\n"
            ),
        );
    }
    let store = dir.path().join("store");
    for jobs in ["1", "2"] {
        let run = test_suite(&store, &cases, &hostile(), &["--jobs", jobs]);
        let failed: Vec<&str> = run
            .stdout
            .lines()
            .filter(|l| l.starts_with("FAIL") || l.contains("earlier run left"))
            .collect();
        assert!(
            failed.is_empty(),
            "on {jobs} job(s):\n{}",
            failed.join("\n")
        );
        run.expect_code(0);
    }
}

// ---- bad input ----

/// Assert exit code 2 and a one-line `error:` naming `file` and saying `what`.
#[track_caller]
fn refused(run: &CliOutput, file: &Path, what: &[&str]) {
    run.expect_code(2);
    let msg = run.stderr.trim();
    assert_eq!(msg.lines().count(), 1, "the cause is one line:\n{run}");
    assert!(msg.starts_with("error: "), "{run}");
    let name = file.display().to_string();
    assert!(msg.contains(&name), "the message names {name}:\n{run}");
    for w in what {
        assert!(msg.contains(w), "the message says `{w}`:\n{run}");
    }
    assert!(
        run.stdout.is_empty(),
        "nothing on stdout for a refused run:\n{run}"
    );
}

fn run_ok_case_with(store: &Path, agent: &Path) -> CliOutput {
    worldline(
        store,
        [
            "run".as_ref(),
            case("hostile-ok").as_os_str(),
            "--agent".as_ref(),
            agent.as_os_str(),
        ],
    )
}

#[test]
fn an_agent_importing_what_the_host_lacks_is_refused_with_the_list() {
    let alien = guest("alien-agent");
    let run = run_ok_case_with(shared_store(), &alien);
    refused(
        &run,
        &alien,
        &[
            "acme:vault/secrets@1.0.0",
            "acme:vault/audit@1.0.0",
            "does not provide",
        ],
    );
}

#[test]
fn a_component_of_another_world_is_refused() {
    let command = guest("command-guest");
    let run = run_ok_case_with(shared_store(), &command);
    refused(&run, &command, &["does not export `run`"]);
}

#[test]
fn a_missing_agent_file_is_refused() {
    let dir = temp_dir();
    let missing = dir.path().join("nowhere.wasm");
    refused(
        &run_ok_case_with(shared_store(), &missing),
        &missing,
        &["cannot read agent"],
    );
}

#[test]
fn a_text_file_as_agent_is_refused() {
    let dir = temp_dir();
    let text = dir.path().join("agent.wasm");
    std::fs::write(&text, "fn main() { println!(\"not wasm\"); }\n").unwrap();
    refused(
        &run_ok_case_with(shared_store(), &text),
        &text,
        &["not a WebAssembly file"],
    );
}

#[test]
fn a_core_module_is_refused() {
    let dir = temp_dir();
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    refused(
        &run_ok_case_with(shared_store(), &core),
        &core,
        &["core WebAssembly module", "wasm32-wasip2"],
    );
}

#[test]
fn a_broken_component_is_refused() {
    let dir = temp_dir();
    let broken = dir.path().join("broken.wasm");
    // A component header (version 0x0d, layer 1) followed by garbage.
    std::fs::write(&broken, b"\0asm\x0d\0\x01\0\xff\xff\xff\xff").unwrap();
    refused(
        &run_ok_case_with(shared_store(), &broken),
        &broken,
        &["not a valid WebAssembly component"],
    );
}

#[test]
fn a_malformed_case_names_file_line_and_column() {
    let dir = temp_dir();
    let bad = write_case(
        dir.path(),
        "bad",
        "world = \"demo@v1\"\nseed = 7\nclock = = 2026-03-01T12:00:00Z\ntask = {}\n",
    );
    let run = worldline(
        shared_store(),
        [
            "run".as_ref(),
            bad.as_os_str(),
            "--agent".as_ref(),
            hostile().as_os_str(),
            "--worlds".as_ref(),
            worlds_dir().as_os_str(),
        ],
    );
    let place = format!("{}:3:", bad.display());
    refused(&run, &bad, &[&place]);
}

#[test]
fn a_missing_case_file_is_refused() {
    let dir = temp_dir();
    let missing = dir.path().join("missing.toml");
    let run = worldline(
        shared_store(),
        [
            "run".as_ref(),
            missing.as_os_str(),
            "--agent".as_ref(),
            hostile().as_os_str(),
        ],
    );
    refused(&run, &missing, &["cannot read case"]);
}

// ---- the compile cache ----

#[test]
fn the_compile_cache_is_written_once_and_reused() {
    let store = temp_dir();
    let agent = hostile();
    let first = run_json_with(
        store.path(),
        &case("hostile-ok"),
        &agent,
        &[OWN_COMPILE_CACHE],
    );
    first.expect_code(0);
    let cache = store.path().join("cache");
    let cached = files_with_suffix(&cache, ".cwasm");
    assert_eq!(
        cached.len(),
        1,
        "one compiled component in {}: {cached:?}",
        cache.display()
    );
    let file = &cached[0];
    assert!(
        file.to_string_lossy()
            .contains(first.json()["agent_sha256"].as_str().unwrap()),
        "the cache file is named by the agent's SHA-256: {}",
        file.display()
    );
    // Backdate the file: a rewrite would give it a new modification time.
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let bytes = std::fs::read(file).unwrap();

    let second = run_json_with(
        store.path(),
        &case("hostile-ok"),
        &agent,
        &[OWN_COMPILE_CACHE],
    );
    second.expect_code(0);
    assert_eq!(
        mtime(file),
        old,
        "the second run rewrote the cache file instead of loading it"
    );
    assert_eq!(std::fs::read(file).unwrap(), bytes);
    assert_eq!(files_with_suffix(&cache, ".cwasm").len(), 1);
    assert_eq!(first.json()["chain_hash"], second.json()["chain_hash"]);
    assert_eq!(first.json()["output"], second.json()["output"]);
}

/// Two processes that miss one component at the same moment compile it
/// once: the second waits on the entry's lock and loads what the first
/// kept (`sandbox/cache.rs`). Told by each process's own CPU time: the
/// compile is nearly all of a first run's (~1 s against ~0.01 s cached).
#[test]
fn two_runs_that_miss_one_component_at_once_compile_it_once() {
    let store = temp_dir();
    let agent = hostile();
    let children = [
        start_hostile_ok(store.path(), &agent),
        start_hostile_ok(store.path(), &agent),
    ];
    let cpu: Vec<f64> = children
        .into_iter()
        .map(|child| reaped_cpu(child, "worldline run").as_secs_f64())
        .collect();
    let (low, high) = (cpu[0].min(cpu[1]), cpu[0].max(cpu[1]));
    assert!(
        low < high / 2.0,
        "one process compiled, the other loaded what it kept: CPU {cpu:?} s"
    );
    let cache = store.path().join("cache");
    assert_eq!(files_with_suffix(&cache, ".cwasm").len(), 1);
    assert_eq!(
        files_with_suffix(&cache, ".lock"),
        Vec::<PathBuf>::new(),
        "the lock file goes with its holder"
    );
}

/// A component whose bytes differ from one compiled before but whose
/// functions do not (an edited agent rebuilt, a JavaScript build, another
/// agent on the same CPython) takes each function's compiled code from
/// the compile cache's `functions/` instead of compiling it again
/// (`sandbox/functions.rs`). Told by the function files (none written
/// again) and by each process's CPU time.
#[test]
fn a_component_with_the_functions_of_one_compiled_before_reuses_them() {
    use std::os::unix::fs::MetadataExt as _;
    let store = temp_dir();
    let agent = hostile();
    // The same component with a custom section appended: other bytes (so
    // another compile cache entry), the same functions.
    let mut rebuilt = std::fs::read(&agent).unwrap();
    let (name, note) = (b"note".as_slice(), b"another build".as_slice());
    rebuilt.extend([0, (1 + name.len() + note.len()) as u8, name.len() as u8]);
    rebuilt.extend(name.iter().chain(note));
    let rebuilt_path = store.path().join("rebuilt.wasm");
    std::fs::write(&rebuilt_path, &rebuilt).unwrap();
    let run = |agent: &Path| cpu_of_run(store.path(), agent);
    let cache = store.path().join("cache");
    let functions = || -> Vec<(PathBuf, u64)> {
        files_with_suffix(&cache, "")
            .into_iter()
            .filter(|p| p.components().any(|c| c.as_os_str() == "functions"))
            .map(|p| {
                let ino = std::fs::metadata(&p).unwrap().ino();
                (p, ino)
            })
            .collect()
    };
    let first = run(&agent);
    let kept = functions();
    assert!(
        kept.len() > 100,
        "the first compile keeps its functions: {}",
        kept.len()
    );
    let second = run(&rebuilt_path);
    assert_eq!(
        files_with_suffix(&cache, ".cwasm").len(),
        2,
        "each component has its own entry"
    );
    // A function is found by a key Cranelift derives from its code; on
    // two threads a few keys also carry what the thread compiled before
    // (one thread gives the same keys every time), so not every function
    // is found, but most are, and none kept is written again.
    let now = functions();
    let new = now.iter().filter(|f| !kept.contains(f)).count();
    assert!(
        kept.iter().all(|f| now.contains(f)),
        "the functions kept are taken, not written again"
    );
    assert!(
        new * 4 < kept.len(),
        "most functions of the rebuilt component were found: {new} compiled again of {}",
        kept.len()
    );
    assert!(
        second < first * 0.7,
        "the second compile took what the first kept: CPU {first:.3} s, then {second:.3} s"
    );
    // What was taken from the functions is what compiling them gives: the
    // rebuilt component compiled in a store with an empty cache is the
    // same machine code, byte for byte.
    let fresh = temp_dir();
    cpu_of_run(fresh.path(), &rebuilt_path);
    let entry = |cache: &Path| {
        let sha = worldline_case::canon::sha256_hex(&rebuilt);
        let found: Vec<PathBuf> = files_with_suffix(cache, &format!("{sha}.cwasm"));
        assert_eq!(found.len(), 1, "{}", cache.display());
        std::fs::read(&found[0]).unwrap()
    };
    assert!(
        entry(&cache) == entry(&fresh.path().join("cache")),
        "the compiled component is the same with the functions taken or compiled"
    );
}

/// Start `worldline run` of hostile-ok with `agent`, in `store` with its
/// own compile cache, its output dropped.
fn start_hostile_ok(store: &Path, agent: &Path) -> std::process::Child {
    cli()
        .env(OWN_COMPILE_CACHE.0, OWN_COMPILE_CACHE.1)
        .arg("run")
        .arg(case("hostile-ok"))
        .arg("--agent")
        .arg(agent)
        .arg("--store")
        .arg(store)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cannot start the worldline binary")
}

/// The CPU time of [`start_hostile_ok`]'s run.
fn cpu_of_run(store: &Path, agent: &Path) -> f64 {
    reaped_cpu(start_hostile_ok(store, agent), "worldline run").as_secs_f64()
}

#[test]
fn a_corrupt_cache_entry_is_recompiled() {
    let store = temp_dir();
    let agent = hostile();
    run_json_with(
        store.path(),
        &case("hostile-ok"),
        &agent,
        &[OWN_COMPILE_CACHE],
    )
    .expect_code(0);
    let cached = files_with_suffix(&store.path().join("cache"), ".cwasm");
    assert_eq!(cached.len(), 1);
    std::fs::write(&cached[0], b"not a compiled component").unwrap();
    let again = run_json_with(
        store.path(),
        &case("hostile-ok"),
        &agent,
        &[OWN_COMPILE_CACHE],
    );
    again.expect_code(0);
    assert_eq!(again.json()["status"], "completed");
    assert_ne!(
        std::fs::read(&cached[0]).unwrap(),
        b"not a compiled component",
        "the corrupt entry is replaced"
    );
}
