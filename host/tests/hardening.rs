//! End-to-end tests of issue 17's findings: nothing a user feeds in (a
//! damaged cache, a hostile glob, a full disk, a bad export, a flood of
//! output, a network call) may crash, hang, corrupt or lose a run. Each
//! test reproduces one finding on the real binary and real guests.

mod common;

use common::*;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn hostile() -> PathBuf {
    guest("hostile-agent")
}

/// Run the binary, failing if it takes longer than `limit` (a hang).
fn within(limit: Duration, store: &Path, args: &[&OsStr]) -> CliOutput {
    worldline_within(limit, store, args)
        .unwrap_or_else(|| panic!("worldline {args:?} still ran after {limit:?} (a hang)"))
}

/// `run CASE --agent AGENT --worlds tests/worlds --json` in the shared store.
fn run_in_demo(case: &Path, agent: &Path) -> CliOutput {
    worldline(
        shared_store(),
        [
            os("run"),
            case.as_os_str(),
            os("--agent"),
            agent.as_os_str(),
            os("--worlds"),
            worlds_dir().as_os_str(),
            os("--json"),
        ],
    )
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// A small deterministic generator (xorshift), so the damage is the same
/// on every run of the test.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

// ---- 1. a damaged compiled-code cache ----

fn the_cache_entry(store: &Path) -> PathBuf {
    let cached = files_with_suffix(&store.join("cache"), ".cwasm");
    assert_eq!(cached.len(), 1, "{cached:?}");
    cached[0].clone()
}

#[test]
fn damaged_compiled_code_is_detected_recompiled_and_replaced() {
    let store = temp_dir();
    let ok = case("hostile-ok");
    let first = run_json(store.path(), &ok, &hostile());
    first.expect_code(0);
    let entry = the_cache_entry(store.path());
    let pristine = std::fs::read(&entry).unwrap();
    let mut rng = Rng(17);
    // Random 8-byte flips (which crashed runs), and one 64-byte flip
    // (which made every run end out_of_fuel).
    let mut damages: Vec<(usize, usize)> = (0..6)
        .map(|_| (rng.below(pristine.len() as u64 - 8) as usize, 8))
        .collect();
    damages.push((pristine.len() / 2, 64));
    for (at, len) in damages {
        let mut damaged = pristine.clone();
        for b in &mut damaged[at..at + len] {
            *b ^= 0xA5;
        }
        std::fs::write(&entry, &damaged).unwrap();
        let run = run_json(store.path(), &ok, &hostile());
        run.expect_code(0);
        assert_eq!(run.json()["status"], "completed", "{run}");
        assert_eq!(
            run.json()["chain_hash"],
            first.json()["chain_hash"],
            "damage at {at}"
        );
        let warnings: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains("warning"))
            .collect();
        assert_eq!(warnings.len(), 1, "one warning line:\n{run}");
        assert!(warnings[0].contains("damaged"), "{run}");
        assert_eq!(
            std::fs::read(&entry).unwrap(),
            pristine,
            "the damaged entry is replaced by a fresh compile"
        );
        // And the next run trusts the repaired entry without a word.
        let next = run_json(store.path(), &ok, &hostile());
        next.expect_code(0);
        assert!(!next.stderr.contains("warning"), "{next}");
    }
}

#[test]
fn temporary_files_of_killed_cache_writes_are_swept() {
    let store = temp_dir();
    run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
    let entry = the_cache_entry(store.path());
    let folder = entry.parent().unwrap();
    // What a killed writer leaves: its process id is long gone.
    let left = folder.join("0123.cwasm.tmp99999999-0");
    let older = folder.join("4567.tmp99999998");
    std::fs::write(&left, vec![0u8; 4096]).unwrap();
    std::fs::write(&older, vec![0u8; 4096]).unwrap();
    std::fs::remove_file(&entry).unwrap();
    run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
    assert!(entry.is_file(), "recompiled");
    assert!(!left.exists() && !older.exists(), "stale temporaries swept");
}

// ---- 2. exponential globs ----

#[test]
fn globs_of_many_stars_neither_hang_a_case_nor_a_fork() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let stars = format!("{}x", "*".repeat(30));
    let text = format!(
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{ mode = \"calls\", n = 3 }}\n\n[permissions]\ndeny = [\"{stars}\"]\n"
    );
    let bad = write_case(dir.path(), "stars", &text);
    let run = within(
        Duration::from_secs(20),
        &store,
        &[
            os("run"),
            bad.as_os_str(),
            os("--agent"),
            hostile().as_os_str(),
            os("--worlds"),
            worlds_dir().as_os_str(),
        ],
    );
    run.expect_code(2);
    assert!(run.stderr.contains("names no tool"), "{run}");

    let ok = write_case(
        dir.path(),
        "calls",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 3 }\n",
    );
    let parent = within(
        Duration::from_secs(60),
        &store,
        &[
            os("run"),
            ok.as_os_str(),
            os("--agent"),
            hostile().as_os_str(),
            os("--worlds"),
            worlds_dir().as_os_str(),
            os("--json"),
        ],
    );
    parent.expect_code(0);
    let id = parent.json()["run_id"].as_str().unwrap().to_string();
    let alternating = format!("{}b", "*a".repeat(20));
    let fork = within(
        Duration::from_secs(20),
        &store,
        &[
            os("fork"),
            os(&id),
            os("--at"),
            os("0"),
            os("--deny"),
            os(&stars),
            os("--deny"),
            os(&alternating),
            os("--json"),
        ],
    );
    // Neither glob names a tool of the demo world: refused, quickly.
    fork.expect_code(2);
    assert_eq!(
        fork.stderr.trim(),
        format!(
            "error: --deny: `{stars}` matches no tool of world demo@v1 (its tools: {})",
            DEMO_TOOLS
        ),
        "{fork}"
    );
}

/// The demo world's tools, as errors list them.
const DEMO_TOOLS: &str = "get_ticket, close_ticket, list_deploys, add_note, status_page";

// ---- 3. run ids ----

#[test]
fn a_keep_all_campaign_keeps_every_run_under_its_own_id() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let text = "world = \"demo@v1\"\nseed = 3\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"calls\", n = 2 }\n\n[[fuzz.tools]]\ntool = \"*\"\nerror = { timeout = 0.3 }\n";
    let c = write_case(dir.path(), "fz", text);
    let fuzz = within(
        Duration::from_secs(300),
        &store,
        &[
            os("fuzz"),
            c.as_os_str(),
            os("--agent"),
            hostile().as_os_str(),
            os("--worlds"),
            worlds_dir().as_os_str(),
            os("--runs"),
            os("400"),
            os("--keep-all"),
            os("--json"),
        ],
    );
    // Each tool call times out with probability 0.3, drawn from the
    // campaign seed: the same 202 of 400 runs pass every time, and the
    // failure groups hold the other 198.
    fuzz.expect_code(1);
    let summary = &fuzz.json()["summary"];
    assert_eq!(
        (&summary["runs"], &summary["passed"]),
        (&400.into(), &202.into()),
        "{fuzz}"
    );
    let failed: u64 = fuzz.json()["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["count"].as_u64().unwrap())
        .sum();
    assert_eq!(failed, 198, "{fuzz}");
    let bundles = files_with_suffix(&store.join("runs"), ".jsonl");
    // A bundle for each run, and one for each failure group's shrunk
    // reproducer, each under its own id.
    let groups = fuzz.json()["groups"].as_array().unwrap();
    assert_eq!(bundles.len(), 400 + groups.len(), "{fuzz}");
    for g in groups {
        let id = g["reproducer"]["run_id"].as_str().unwrap();
        assert!(
            store.join("runs").join(format!("{id}.jsonl")).is_file(),
            "{g}"
        );
    }
}

// ---- 4 and 7. import ----

/// A recorded run of `hostile-ok` in a fresh store, exported; returns the
/// store, the export's JSON and its run id.
fn exported() -> (tempfile::TempDir, Value, String) {
    let store = temp_dir();
    let run = run_json(store.path(), &case("hostile-ok"), &hostile());
    run.expect_code(0);
    let id = run.json()["run_id"].as_str().unwrap().to_string();
    let file = store.path().join("run.json");
    worldline(
        store.path(),
        [os("export"), os(&id), os("-o"), file.as_os_str()],
    )
    .expect_code(0);
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    (store, doc, id)
}

fn sha256_hex(bytes: &[u8]) -> String {
    worldline::canon::sha256_hex(bytes)
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The export with its bundle's header changed by `edit`.
fn with_header(doc: &Value, edit: impl FnOnce(&mut Value)) -> Value {
    let mut doc = doc.clone();
    let bundle = doc["bundle"].as_str().unwrap().to_string();
    let (first, rest) = bundle.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(first).unwrap();
    edit(&mut header["header"]);
    doc["bundle"] = json!(format!("{}\n{rest}", worldline::canon::to_string(&header)));
    doc
}

fn import(doc: &Value) -> (tempfile::TempDir, CliOutput) {
    let target = temp_dir();
    let file = target.path().join("in.json");
    std::fs::write(&file, serde_json::to_vec(doc).unwrap()).unwrap();
    let out = worldline(
        &target.path().join("store"),
        [os("import"), file.as_os_str()],
    );
    (target, out)
}

#[test]
fn imports_that_could_not_be_replayed_are_refused() {
    let (_src, doc, _) = exported();
    let header: Value =
        serde_json::from_str(doc["bundle"].as_str().unwrap().lines().next().unwrap()).unwrap();
    let world_hash = header["header"]["world_hash"].as_str().unwrap().to_string();

    // Missing the world manifest.
    let mut missing = doc.clone();
    missing["objects"]
        .as_object_mut()
        .unwrap()
        .remove(&world_hash);
    let (_t, out) = import(&missing);
    out.expect_code(2);
    assert!(out.stderr.contains(&world_hash), "{out}");

    // A manifest naming a file outside the world.
    let evil =
        br#"{"../../outside":"0000000000000000000000000000000000000000000000000000000000000000"}"#;
    let evil_sha = sha256_hex(evil);
    let mut escaping = with_header(&doc, |h| h["world_hash"] = json!(evil_sha));
    escaping["objects"][&evil_sha] = json!(b64(evil));
    let (_t, out) = import(&escaping);
    out.expect_code(2);
    assert!(out.stderr.contains("outside"), "{out}");

    // An agent that is not WebAssembly.
    let fake = b"#!/bin/sh\necho not an agent\n";
    let fake_sha = sha256_hex(fake);
    let mut not_wasm = with_header(&doc, |h| h["agent_sha256"] = json!(fake_sha));
    not_wasm["objects"][&fake_sha] = json!(b64(fake));
    let (t, out) = import(&not_wasm);
    out.expect_code(2);
    assert!(out.stderr.contains("WebAssembly"), "{out}");
    assert!(
        files_with_suffix(&t.path().join("store").join("runs"), ".jsonl").is_empty(),
        "nothing was imported"
    );
}

#[test]
fn re_importing_repairs_a_torn_object() {
    let (_src, doc, id) = exported();
    let (target, out) = import(&doc);
    out.expect_code(0);
    let store = target.path().join("store");
    let agent_sha = {
        let header: Value =
            serde_json::from_str(doc["bundle"].as_str().unwrap().lines().next().unwrap()).unwrap();
        header["header"]["agent_sha256"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let object = store.join("objects").join(&agent_sha);
    let whole = std::fs::read(&object).unwrap();
    // What an import killed mid-write used to leave.
    std::fs::write(&object, &whole[..whole.len() * 3 / 4]).unwrap();
    let file = target.path().join("in.json");
    worldline(&store, [os("import"), file.as_os_str()]).expect_code(0);
    assert_eq!(std::fs::read(&object).unwrap(), whole, "repaired");
    worldline(&store, [os("replay"), os(&id)]).expect_code(0);
}

// ---- 5. bundles cut off before their header ----

#[test]
fn bundles_without_a_header_are_incomplete_runs_not_drift() {
    let store = temp_dir();
    run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
    let runs = store.path().join("runs");
    std::fs::write(runs.join("20260101-000000-empty000.jsonl"), b"").unwrap();
    std::fs::write(
        runs.join("20260101-000000-torn0000.jsonl"),
        br#"{"header":{"agent_sha256":"ab"#,
    )
    .unwrap();
    let verify = worldline(store.path(), [os("verify"), os("--json")]);
    verify.expect_code(0);
    let doc = verify.json();
    assert_eq!(doc["incomplete"], 2, "{verify}");
    assert_eq!(doc["unreadable"], 0, "{verify}");
    assert_eq!(doc["drift_rate"], 0.0, "{verify}");
    let text = worldline(store.path(), [os("verify")]);
    text.expect_code(0);
    assert!(text.stdout.contains("incomplete"), "{text}");
}

// ---- 6. infrastructure errors ----

/// Run worldline with files limited to `max_bytes` (as on a full disk:
/// writes past it fail with "File too large" instead of killing it).
fn with_file_limit(max_bytes: u64, store: &Path, args: &[&OsStr]) -> CliOutput {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_worldline"));
    cmd.args(args)
        .arg("--store")
        .arg(store)
        .current_dir(env!("CARGO_TARGET_TMPDIR"));
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: max_bytes,
                rlim_max: max_bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    CliOutput::of(cmd.output().expect("starting worldline"))
}

#[test]
fn a_full_disk_is_an_error_naming_the_cause_not_a_failed_suite() {
    let store = temp_dir();
    // Agent, case, world and compiled code in place; then the disk fills.
    run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
    let suite = [case("hostile-ok"), case("hostile-flood")];
    let agent = hostile();
    let mut args = vec![os("test")];
    args.extend(suite.iter().map(|c| c.as_os_str()));
    args.extend([os("--agent"), agent.as_os_str()]);
    let full = with_file_limit(700, store.path(), &args);
    full.expect_code(2);
    assert!(!full.stdout.contains("FAIL"), "{full}");
    assert!(
        full.stderr.contains("cannot write into the store"),
        "{full}"
    );
    assert!(full.stderr.contains("File too large"), "{full}");
    // What the full disk left is readable: incomplete runs, no drift.
    let verify = worldline(store.path(), [os("verify"), os("--json")]);
    verify.expect_code(0);
}

#[test]
fn verify_reads_a_store_whose_worlds_folder_cannot_be_written() {
    let store = temp_dir();
    run_json(store.path(), &case("hostile-ok"), &hostile()).expect_code(0);
    let worlds = store.path().join("worlds");
    let _ = std::fs::remove_dir_all(&worlds);
    // A folder not even root can create files in.
    std::os::unix::fs::symlink("/proc/self/fdinfo", &worlds).unwrap();
    let verify = worldline(store.path(), [os("verify"), os("--json")]);
    verify.expect_code(0);
    assert_eq!(verify.json()["identical"], 1, "{verify}");
}

#[test]
fn a_store_path_that_is_a_file_is_an_input_error() {
    let dir = temp_dir();
    let file = dir.path().join("not-a-store");
    std::fs::write(&file, b"x").unwrap();
    let out = worldline(&file, [os("runs")]);
    out.expect_code(2);
    assert!(out.stderr.contains("cannot be used as a store"), "{out}");
    let json = worldline(&file, [os("runs"), os("--json")]);
    json.expect_code(2);
    assert_eq!(json.json()["error"]["kind"], "input", "{json}");
}

// ---- 7. worlds whose name and version disagree with their folder ----

#[test]
fn a_world_named_unlike_its_folder_is_refused_at_its_line() {
    let dir = temp_dir();
    let world = dir.path().join("worlds").join("shop").join("v2");
    std::fs::create_dir_all(&world).unwrap();
    let toml = "name = \"shop\"\nversion = 3\n\n[[tools]]\nname = \"noop\"\ndescription = \"x\"\nparams = { type = \"object\" }\nop = \"respond\"\nresponse = { ok = true }\n";
    std::fs::write(world.join("world.toml"), toml).unwrap();
    let c = write_case(
        dir.path(),
        "shop",
        "world = \"shop@v2\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n",
    );
    let out = worldline(
        &dir.path().join("store"),
        [
            os("run"),
            c.as_os_str(),
            os("--agent"),
            hostile().as_os_str(),
        ],
    );
    out.expect_code(2);
    assert!(
        out.stderr.contains("world.toml:2:11"),
        "the version's place:\n{out}"
    );
    assert!(out.stderr.contains("disagrees with the folder"), "{out}");
}

// ---- 8. network calls are denied, recorded and catchable ----

#[test]
fn a_rust_name_lookup_is_denied_and_recorded() {
    let dir = temp_dir();
    let c = write_case(
        dir.path(),
        "resolve",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"resolve\" }\n",
    );
    let run = run_in_demo(&c, &hostile());
    run.expect_code(0);
    let out: Value = serde_json::from_str(run.json()["output"].as_str().unwrap()).unwrap();
    assert!(out["resolve_error"].is_string(), "{out}");
    let bundle = read_bundle(&run.bundle());
    assert!(
        bundle.events.iter().any(
            |e| e["call"] == "wasi:sockets/ip-name-lookup.resolve-addresses"
                && e["effect"] == "denied"
        ),
        "the lookup is a denied event"
    );
}

#[test]
fn python_network_calls_are_denied_and_catchable() {
    let agent = python_guest("tests/guests/python-hostile/agent.py");
    let dir = temp_dir();
    let c = write_case(
        dir.path(),
        "py-net",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"network\" }\n",
    );
    let run = run_in_demo(&c, &agent);
    run.expect_code(0);
    assert_eq!(run.json()["status"], "completed", "{run}");
    let out: Value = serde_json::from_str(run.json()["output"].as_str().unwrap()).unwrap();
    for attempt in [
        "getaddrinfo",
        "gethostbyname",
        "create_connection",
        "urlopen",
    ] {
        assert!(
            out[attempt]["error"].is_string(),
            "{attempt} raised an exception the agent caught: {out}"
        );
    }
    let bundle = read_bundle(&run.bundle());
    assert!(
        bundle
            .events
            .iter()
            .any(|e| e["effect"] == "denied" && e["call"].as_str().unwrap().contains("sockets")),
        "the attempts are denied events"
    );
}

// ---- 9. output floods ----

#[test]
fn println_past_the_output_cap_keeps_the_guest_running() {
    let dir = temp_dir();
    let c = write_case(
        dir.path(),
        "println",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"println\", n = 2000 }\n",
    );
    let run = run_in_demo(&c, &hostile());
    run.expect_code(0);
    assert_eq!(run.json()["status"], "completed", "{run}");
    // 2000 lines of 100 bytes, 64 KiB kept by default.
    assert_eq!(run.json()["truncated_bytes"], 200_000 - 65_536, "{run}");
}

#[test]
fn python_print_past_the_output_cap_keeps_the_agent_running() {
    let agent = python_guest("tests/guests/python-hostile/agent.py");
    let dir = temp_dir();
    let c = write_case(
        dir.path(),
        "py-flood",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { mode = \"flood\", n = 3000 }\n\n[limits]\nstdout_bytes = 10_000\n",
    );
    let run = run_in_demo(&c, &agent);
    run.expect_code(0);
    assert_eq!(run.json()["status"], "completed", "{run}");
    assert_eq!(run.json()["truncated_bytes"], 300_000 - 10_000, "{run}");
}

#[test]
fn an_output_cap_that_would_hold_gigabytes_is_refused_at_its_line() {
    let dir = temp_dir();
    let c = write_case(
        dir.path(),
        "big",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n[limits]\nstdout_bytes = 2_000_000_000\n",
    );
    let out = worldline(
        &dir.path().join("store"),
        [
            os("run"),
            c.as_os_str(),
            os("--agent"),
            hostile().as_os_str(),
            os("--worlds"),
            worlds_dir().as_os_str(),
        ],
    );
    out.expect_code(2);
    assert!(out.stderr.contains("big.toml:7:16"), "{out}");
}

// ---- 10. the smaller items ----

#[test]
fn test_of_a_folder_skips_the_store_inside_it() {
    let dir = temp_dir();
    let cases = dir.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::copy(case("hostile-ok"), cases.join("ok.toml")).unwrap();
    let store = dir.path().join(".worldline");
    let (agent, worlds) = (hostile(), worlds_dir());
    let args = [
        os("test"),
        dir.path().as_os_str(),
        os("--agent"),
        agent.as_os_str(),
        os("--worlds"),
        worlds.as_os_str(),
        os("--json"),
    ];
    worldline(&store, args).expect_code(0);
    // The store now holds worlds/<hash>/world.toml; a second walk of the
    // same folder must not take it for a case.
    let again = worldline(&store, args);
    again.expect_code(0);
    assert_eq!(again.json()["total"], 1, "{again}");
}

#[test]
fn input_errors_under_json_are_json() {
    let dir = temp_dir();
    let c = write_case(dir.path(), "broken", "world = \"demo@v1\"\nseed = \n");
    let out = worldline(
        &dir.path().join("store"),
        [
            os("run"),
            c.as_os_str(),
            os("--agent"),
            hostile().as_os_str(),
            os("--json"),
        ],
    );
    out.expect_code(2);
    let e = &out.json()["error"];
    assert_eq!(e["kind"], "input", "{out}");
    assert_eq!(e["line"], 2, "{out}");
    assert!(
        e["file"].as_str().unwrap().ends_with("broken.toml"),
        "{out}"
    );
}
