//! End-to-end tests of replay, verify, fork, history, show, diff and
//! export/import: the real `worldline` binary (and, where a deliberately
//! broken host is needed, the library) on real guests. Each test shows one
//! thing a user relies on when they debug a run after the fact.

use crate::common;

use common::{
    CliOutput, forge_grade, guest, read_bundle, run_json, temp_dir, wl, workspace_root, worlds_dir,
    write_case,
};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TOOL_CALL: &str = "worldline:agent/tools.call";

fn careful() -> PathBuf {
    guest("careful-agent")
}

fn naive() -> PathBuf {
    guest("naive-agent")
}

fn caller() -> PathBuf {
    guest("caller-agent")
}

fn hostile() -> PathBuf {
    guest("hostile-agent")
}

/// The example suites: `cases/` at the workspace root.
fn cases_dir() -> PathBuf {
    workspace_root().join("cases")
}

fn example_case(name: &str) -> PathBuf {
    cases_dir().join(format!("{name}.toml"))
}

/// `worldline <args...> --store <store>` with paths and strings mixed.
/// Run `agent` on `case` and return the run summary (any exit code).
fn run(store: &Path, case: &Path, agent: &Path) -> CliOutput {
    let out = run_json(store, case, agent);
    assert!(out.json.is_some(), "`run` printed no summary:\n{out}");
    out
}

fn run_id(out: &CliOutput) -> String {
    out.json()["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no run_id:\n{out}"))
        .to_string()
}

/// `worldline replay RUN --json`, expecting exit code `code`.
#[track_caller]
fn replay_json(store: &Path, run: &str, code: i32) -> Value {
    let out = wl(store, &[&"replay", &run, &"--json"]);
    out.expect_code(code);
    out.json().clone()
}

/// Index of the first event satisfying `pred`.
fn index_of(events: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    events
        .iter()
        .position(pred)
        .expect("the bundle has the event looked for")
}

fn is_tool(e: &Value, tool: &str) -> bool {
    e["call"] == TOOL_CALL && e["request"]["name"] == tool
}

/// Every file and folder under `dir`, relative to it.
fn tree(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            found.insert(p.strip_prefix(dir).unwrap().to_path_buf());
            if p.is_dir() && !p.is_symlink() {
                todo.push(p);
            }
        }
    }
    found
}

// --- 1. every example run replays identical -------------------------------

#[test]
fn every_example_suite_run_replays_identical() {
    let dir = temp_dir();
    let store = dir.path();
    // The suites on declarative worlds. The payments and booking worlds run
    // a service component that is a build product (examples/run builds
    // it); services.rs builds it and replays their suites.
    let suites: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && !["payments", "booking"].iter().any(|s| p.ends_with(s)))
        .collect();
    let n_cases: usize = suites
        .iter()
        .map(|d| common::files_with_suffix(d, ".toml").len())
        .sum();
    assert!(n_cases >= 10, "the example suites have {n_cases} cases");

    let mut careful_args: Vec<&dyn AsRef<OsStr>> = vec![&"test"];
    careful_args.extend(suites.iter().map(|s| s as &dyn AsRef<OsStr>));
    let mut naive_args = careful_args.clone();
    let (careful, naive) = (careful(), naive());
    careful_args.extend([&"--agent" as &dyn AsRef<OsStr>, &careful]);
    naive_args.extend([&"--agent" as &dyn AsRef<OsStr>, &naive]);
    wl(store, &careful_args).expect_code(0);
    // The naive agent fails some cases; its runs must replay all the same.
    wl(store, &naive_args).expect_code(1);

    let out = wl(store, &[&"verify", &"--json"]);
    out.expect_code(0);
    let doc = out.json();
    let total = 2 * n_cases as u64;
    assert_eq!(doc["replayed"], total, "{out}");
    assert_eq!(doc["identical"], total, "{out}");
    assert_eq!(doc["diverged"], 0, "{out}");
    assert_eq!(doc["unreadable"], 0, "{out}");
    assert_eq!(doc["drift_rate"].as_f64(), Some(0.0), "{out}");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len() as u64, total);
    for r in runs {
        assert_eq!(r["verdict"], "identical", "{r}");
        assert_eq!(r["matched"], r["recorded"], "{r}");
        assert!(r["recorded"].as_u64().unwrap() > 0, "{r}");
    }
    // In parallel (the default is the cores), reported in run id order.
    let ids: Vec<&str> = runs.iter().map(|r| r["run"].as_str().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);

    // A seeded sample: printed, the same runs again from the same seed.
    let sampled = |seed: &str| {
        let out = wl(
            store,
            &[
                &"verify",
                &"--sample",
                &"5",
                &"--seed",
                &seed,
                &"--jobs",
                &"2",
                &"--json",
            ],
        );
        out.expect_code(0);
        let doc = out.json();
        assert_eq!(doc["replayed"], 5, "{out}");
        assert_eq!(doc["identical"], 5, "{out}");
        assert_eq!(doc["sample"]["of"], total, "{out}");
        assert_eq!(doc["sample"]["seed"].to_string(), seed, "{out}");
        let picked: Vec<Value> = doc["sample"]["runs"].as_array().unwrap().clone();
        let replayed: Vec<Value> = doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["run"].clone())
            .collect();
        assert_eq!(picked, replayed, "{out}");
        picked
    };
    let first = sampled("42");
    assert_eq!(first, sampled("42"));
    assert_ne!(first, sampled("43"));
    let text = wl(store, &[&"verify", &"--sample", &"3", &"--seed", &"42"]);
    text.expect_code(0);
    assert!(
        text.stdout.starts_with(&format!(
            "sample of 3 of {total} runs, seed 42 (`--sample 3 --seed 42` draws it again): "
        )),
        "{text}"
    );
    assert!(
        text.stdout.contains("3 runs: 3 identical or verified"),
        "{text}"
    );
}

// --- 2. host nondeterminism is caught at the right event --------------------

/// What a broken host would leave behind: the guest was told the first
/// deploy is `T-1` (and asked for it in call `at`), while the log keeps
/// what the world answered (`D-2`). The honest bundle is rewritten that
/// way with a valid hash chain and footer, so only replay can tell.
fn rewrite_as_broken_host(path: &Path, at: u64) {
    use worldline_log::log::{Recorder, bundle};
    let b = bundle::read(path).unwrap();
    std::fs::remove_file(path).unwrap();
    let header = bundle::header_line(&b.header);
    let mut rec =
        Recorder::to_file(worldline_case::durable::create_new(path, header.as_bytes()).unwrap());
    for mut e in b.events {
        if e.seq == at {
            e.request["args"]["id"] = json!("T-1");
        }
        rec.append(e).unwrap();
    }
    let (file, _, head) = rec.finish().unwrap();
    let mut footer = b.footer.unwrap();
    footer.chain_hash = head;
    footer.hash = bundle::footer_hash(&footer);
    bundle::finish(file.unwrap(), &footer, true).unwrap();
}

#[test]
fn an_unrecorded_response_change_diverges_at_the_call_it_influenced() {
    use worldline_engine::replay::{self, Verdict};
    use worldline_engine::run::{RunOptions, run_with};
    use worldline_runtime::mediate::follow::Class;

    let dir = temp_dir();
    let case_path = write_case(
        dir.path(),
        "chained",
        r#"world = "demo@v1"
seed = 5
clock = 2026-03-01T12:00:00Z
task = { calls = [
  { tool = "list_deploys", args = { service = "checkout" } },
  { tool = "get_ticket", args = {}, from = { answer = 0, path = "deploys.0.id", arg = "id" } },
] }
"#,
    );
    let store_root = dir.path().join("store");
    let store = worldline_store::store::StoreDir::open(&store_root).unwrap();
    let sandbox = worldline_runtime::sandbox::Sandbox::new(Some(store.cache_dir())).unwrap();
    let wasm = caller();
    let agent = sandbox.load_file(&wasm).unwrap();
    store.put_object(&std::fs::read(&wasm).unwrap()).unwrap();
    store
        .put_object(&std::fs::read(&case_path).unwrap())
        .unwrap();
    let worlds = worlds_dir();
    let case = worldline_case::case::load(&case_path, Some(worlds.as_path())).unwrap();
    store.put_world(&case.world).unwrap();

    let record = || {
        run_with(
            &sandbox,
            &agent,
            &case,
            RunOptions {
                store: Some(&store),
                ..RunOptions::default()
            },
        )
        .unwrap()
    };

    // Control: the honest host replays identical.
    let honest = record();
    let honest_id = honest.run_id.clone().unwrap();
    let rec = replay::open(&store, &honest_id).unwrap();
    let r = replay::replay(&sandbox, &store, rec).unwrap();
    assert_eq!(r.verdict, Verdict::Identical, "{r:?}");

    // The broken host's log: the guest saw T-1 and asked for it.
    let broken = record();
    let id = broken.run_id.clone().unwrap();
    let path = broken.bundle.clone().unwrap();
    let bundle = read_bundle(&path);
    let tool_calls: Vec<usize> = (0..bundle.events.len())
        .filter(|&i| bundle.events[i]["call"] == TOOL_CALL)
        .collect();
    assert_eq!(tool_calls.len(), 2, "{:?}", bundle.events);
    let (first, at) = (tool_calls[0], tool_calls[1]);
    assert_eq!(bundle.events[at]["request"]["args"]["id"], "D-2");
    rewrite_as_broken_host(&path, at as u64);
    let bundle = read_bundle(&path);
    assert_eq!(
        bundle.events[first]["response"]["ok"]["deploys"][0]["id"], "D-2",
        "the log keeps what the world answered"
    );
    assert_eq!(bundle.events[at]["request"]["args"]["id"], "T-1");

    let rec = replay::open(&store, &id).unwrap();
    let r = replay::replay(&sandbox, &store, rec).unwrap();
    assert_eq!(r.verdict, Verdict::Diverged, "{r:?}");
    assert_eq!(r.matched, at as u64, "{r:?}");
    let d = r.divergence.as_ref().unwrap();
    assert_eq!(d.index, at as u64, "{d:?}");
    assert_eq!(d.class, Class::Mismatch, "{d:?}");
    assert_eq!(d.expected["request"]["args"]["id"], "T-1", "{d:?}");
    assert_eq!(d.actual["request"]["args"]["id"], "D-2", "{d:?}");

    // The CLI says the same: exit 1, the index, expected vs actual.
    let out = wl(&store_root, &[&"replay", &id]);
    out.expect_code(1);
    assert!(
        out.stdout
            .contains(&format!("diverged at event {at} (mismatch")),
        "{out}"
    );
    let doc = replay_json(&store_root, &id, 1);
    assert_eq!(doc["verdict"], "diverged");
    assert_eq!(doc["divergence"]["index"], at as u64);
    assert_eq!(doc["divergence"]["class"], "mismatch");
    // verify counts it as drift.
    let v = wl(&store_root, &[&"verify", &"--json"]);
    v.expect_code(1);
    assert_eq!(v.json()["diverged"], 1, "{v}");
    assert_eq!(v.json()["identical"], 1, "{v}");
}

// --- 3. tampered bundles and objects are refused ----------------------------

/// Header, event lines and footer of a bundle, each with its newline.
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .split_inclusive('\n')
        .map(str::to_string)
        .collect()
}

/// The line of `lines` that holds event `seq` on its own (consecutive
/// clock reads share a `fold` line, docs/formats.md).
fn line_of(lines: &[String], seq: usize) -> usize {
    alone(lines, seq).unwrap_or_else(|| panic!("no line holds event {seq} alone"))
}

fn alone(lines: &[String], seq: usize) -> Option<usize> {
    lines.iter().position(|l| {
        serde_json::from_str::<Value>(l)
            .is_ok_and(|v| v.get("fold").is_none() && v["seq"] == seq as u64)
    })
}

#[test]
fn tampering_is_detected_and_never_replayed() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run(&store, &example_case("incident/baseline"), &careful());
    out.expect_code(0);
    let id = run_id(&out);
    let bundle = out.bundle();
    let original = lines(&bundle);
    let events = read_bundle(&bundle).events;
    assert!(events.len() >= 6, "{out}");
    assert_eq!(replay_json(&store, &id, 0)["verdict"], "identical");

    // (a) one byte of one response changed.
    let n = index_of(&events, |e| is_tool(e, "list_deploys"));
    let mut l = original.clone();
    let line = &mut l[line_of(&original, n)];
    let start = line.find("\"response\":").unwrap();
    let end = line.find("\"seq\":").unwrap();
    let pos = start + line[start..].find(|c: char| c.is_ascii_digit()).unwrap();
    assert!(pos < end, "a digit inside the response");
    let flipped = if &line[pos..=pos] == "1" { "2" } else { "1" };
    line.replace_range(pos..=pos, flipped);
    let path_a = dir.path().join("flipped.jsonl");
    std::fs::write(&path_a, l.concat()).unwrap();
    let out = wl(&store, &[&"replay", &path_a]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains(&format!("hash chain broken at event {n}")),
        "{out}"
    );
    assert!(out.stderr.contains("flipped.jsonl"), "{out}");
    assert!(out.stdout.is_empty(), "nothing replayed:\n{out}");
    wl(&store, &[&"history", &path_a]).expect_code(2);

    // (b) two events swapped.
    let mut l = original.clone();
    let s = (0..events.len() - 1)
        .find(|&s| alone(&original, s).is_some_and(|i| alone(&original, s + 1) == Some(i + 1)))
        .expect("two events on consecutive lines");
    let i = line_of(&original, s);
    l.swap(i, i + 1); // events s and s + 1
    let path_b = dir.path().join("swapped.jsonl");
    std::fs::write(&path_b, l.concat()).unwrap();
    let out = wl(&store, &[&"replay", &path_b]);
    out.expect_code(2);
    assert!(
        out.stderr
            .contains(&format!("event {} out of order (expected seq {s})", s + 1)),
        "{out}"
    );
    assert!(out.stdout.is_empty(), "nothing replayed:\n{out}");

    // (c) cut in the middle of event k's line, footer gone: a prefix.
    let k = (events.len() / 2..events.len())
        .find(|&k| alone(&original, k).is_some())
        .expect("an event on a line of its own");
    let at = line_of(&original, k);
    let torn = &original[at];
    let prefix = format!("{}{}", original[..at].concat(), &torn[..torn.len() / 2]);
    let path_c = dir.path().join("torn.jsonl");
    std::fs::write(&path_c, prefix).unwrap();
    let h = wl(&store, &[&"history", &path_c]);
    h.expect_code(0);
    assert!(h.stdout.contains("incomplete"), "{h}");
    let hj = wl(&store, &[&"history", &path_c, &"--json"]);
    hj.expect_code(0);
    assert_eq!(hj.json()["status"], "incomplete");
    assert_eq!(hj.json()["events"].as_array().unwrap().len(), k);
    let r = wl(&store, &[&"replay", &path_c]);
    r.expect_code(0);
    assert!(r.stdout.contains("verified"), "{r}");
    assert!(!r.stdout.contains("identical"), "{r}");
    let doc = replay_json(&store, path_c.to_str().unwrap(), 0);
    assert_eq!(doc["verdict"], "verified_prefix");
    assert_eq!(doc["matched"], k as u64);
    assert_eq!(doc["recorded"], k as u64);

    // The original was never touched by any of this.
    assert_eq!(lines(&bundle), original);

    // (d) the agent object overwritten in the store.
    let sha = read_bundle(&bundle).header["agent_sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let object = store.join("objects").join(&sha);
    assert!(object.is_file());
    std::fs::write(&object, b"\0asm not the agent you recorded").unwrap();
    let out = wl(&store, &[&"replay", &id]);
    out.expect_code(2);
    assert!(out.stderr.contains(&sha), "names the object:\n{out}");
    assert!(out.stderr.contains("does not match its hash"), "{out}");
    assert!(out.stdout.is_empty(), "nothing replayed:\n{out}");
}

/// A write cut short by a kill can end inside a UTF-8 character (the
/// kernel may stop a large write at a page boundary): the bundle is still
/// its readable prefix, not an unreadable file.
#[test]
fn a_bundle_torn_inside_a_character_is_still_a_readable_prefix() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "accents",
        r#"world = "demo@v1"
seed = 9
clock = 2026-03-01T12:00:00Z
task = { calls = [
  { tool = "add_note", args = { ticket = "T-1", text = "café – naïve résumé" } },
  { tool = "get_ticket", args = { id = "T-1" } },
] }
"#,
    );
    let out = wl(
        &store,
        &[
            &"run",
            &case,
            &"--agent",
            &caller(),
            &"--worlds",
            &worlds_dir(),
            &"--json",
        ],
    );
    out.expect_code(0);
    let bytes = std::fs::read(out.bundle()).unwrap();
    // Cut right after the first byte of the first multi-byte character.
    let cut = bytes.iter().position(|&b| b >= 0x80).unwrap() + 1;
    // The complete lines before the cut, less the header and the intent
    // lines written before a writing tool's call (decision 0344).
    let complete_events = bytes[..cut]
        .split(|&b| b == b'\n')
        .rev()
        .skip(1)
        .filter(|line| !line.starts_with(b"{\"intent\"") && !line.starts_with(b"{\"header\""))
        .count();
    let torn = dir.path().join("torn.jsonl");
    std::fs::write(&torn, &bytes[..cut]).unwrap();
    assert!(std::str::from_utf8(&bytes[..cut]).is_err());

    let h = wl(&store, &[&"history", &torn]);
    h.expect_code(0);
    assert!(h.stdout.contains("incomplete"), "{h}");
    let doc = replay_json(&store, torn.to_str().unwrap(), 0);
    assert_eq!(doc["verdict"], "verified_prefix", "{doc}");
    assert_eq!(doc["matched"], complete_events as u64, "{doc}");
    assert_eq!(doc["recorded"], complete_events as u64, "{doc}");
}

// --- 4. kill -9 leaves an incomplete, verifiable bundle ---------------------

#[test]
fn a_killed_run_leaves_an_incomplete_bundle_that_replays_as_a_prefix() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let agent = hostile();
    // Compile (and cache) the agent first, so the killed run starts at once.
    let warm = wl(
        &store,
        &[
            &"run",
            &common::case("hostile-ok"),
            &"--agent",
            &agent,
            &"--json",
        ],
    );
    warm.expect_code(0);
    let warm_bundle = warm.bundle();

    let case = write_case(
        dir.path(),
        "endless",
        r#"world = "demo@v1"
seed = 11
clock = 2026-03-01T12:00:00Z
task = { mode = "calls", n = 1_000_000_000_000 }

[limits]
fuel = 1_000_000_000_000_000_000
max_events = 5_000_000
timeout_ms = 86_400_000
"#,
    );
    let mut child = crate::common::cli()
        .args([OsStr::new("run"), case.as_os_str(), OsStr::new("--agent")])
        .arg(&agent)
        .arg("--worlds")
        .arg(worlds_dir())
        .arg("--store")
        .arg(&store)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting worldline run");
    let deadline = Instant::now() + Duration::from_secs(20);
    let bundle = loop {
        let found = common::files_with_suffix(&store.join("runs"), ".jsonl")
            .into_iter()
            .filter(|p| *p != warm_bundle)
            .find(|p| {
                std::fs::read(p).is_ok_and(|b| b.iter().filter(|&&c| c == b'\n').count() > 51)
            });
        if let Some(p) = found {
            break p;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the endless run did not write 50 events within 20 s (or it ended)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    child.kill().expect("SIGKILL"); // std sends SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success(), "the run was killed: {status:?}");

    let text = std::fs::read_to_string(&bundle).unwrap();
    let complete = text.split_inclusive('\n').filter(|l| l.ends_with('\n'));
    let complete_events = complete.count() - 1; // the header
    assert!(complete_events >= 50, "{complete_events} events");
    assert!(!text.contains("{\"footer\""), "a killed run has no footer");
    let id = bundle.file_stem().unwrap().to_str().unwrap().to_string();

    let h = wl(&store, &[&"history", &id]);
    h.expect_code(0);
    assert!(h.stdout.contains("incomplete"), "{h}");
    let runs = wl(&store, &[&"runs", &"--json"]);
    runs.expect_code(0);
    let row = runs
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(row["status"], "incomplete", "{row}");

    let doc = replay_json(&store, &id, 0);
    assert_eq!(doc["verdict"], "verified_prefix", "{doc}");
    assert_eq!(doc["matched"], complete_events as u64, "{doc}");
    assert_eq!(doc["recorded"], complete_events as u64, "{doc}");
    assert!(doc.get("divergence").is_none(), "{doc}");
}

// --- 5. a fork at the stale event fixes the failing case -------------------

struct StaleFork {
    store: tempfile::TempDir,
    original: String,
    original_bundle: PathBuf,
    original_bytes: Vec<u8>,
    fork: String,
    fork_bundle: PathBuf,
    /// The stale `list_deploys` event the fork answers afresh.
    at: usize,
}

/// The naive agent fails `incident/stale-deploys`; fork it at the stale
/// deploy list with the fresh one.
fn stale_fork() -> StaleFork {
    let store_dir = temp_dir();
    let store = store_dir.path();
    let out = run(store, &example_case("incident/stale-deploys"), &naive());
    out.expect_code(1);
    assert_eq!(out.json()["status"], "failed", "{out}");
    let original = run_id(&out);
    let original_bundle = out.bundle();
    let original_bytes = std::fs::read(&original_bundle).unwrap();
    let events = read_bundle(&original_bundle).events;
    let at = index_of(&events, |e| {
        is_tool(e, "list_deploys") && e["injected"]["action"] == "stale"
    });

    // The fresh answer: the same call at the same moment with nothing
    // injected (the baseline case has the same world and clock).
    let base = run(store, &example_case("incident/baseline"), &naive());
    let base_events = read_bundle(&base.bundle()).events;
    let b = index_of(&base_events, |e| is_tool(e, "list_deploys"));
    assert_eq!(b, at, "the baseline asks at the same event");
    assert!(base_events[b].get("injected").is_none());
    let fresh = base_events[b]["response"].clone();
    let ids = |r: &Value| -> Vec<String> {
        r["ok"]["deploys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(ids(&fresh).contains(&"D-42".to_string()), "{fresh}");
    assert!(!ids(&events[at]["response"]).contains(&"D-42".to_string()));

    let fresh_text = fresh.to_string();
    let f = wl(
        store,
        &[
            &"fork",
            &original,
            &"--at",
            &at.to_string(),
            &"--respond",
            &fresh_text,
            &"--json",
        ],
    );
    f.expect_code(0);
    assert_eq!(f.json()["status"], "passed", "{f}");
    assert_eq!(f.json()["parent"], json!({"run": original, "event": at}));
    let fork = run_id(&f);
    let fork_bundle = f.bundle();
    StaleFork {
        store: store_dir,
        original,
        original_bundle,
        original_bytes,
        fork,
        fork_bundle,
        at,
    }
}

#[test]
fn a_fork_with_the_fresh_answer_turns_the_stale_failure_into_a_pass() {
    let s = stale_fork();
    let store = s.store.path();
    assert_eq!(
        std::fs::read(&s.original_bundle).unwrap(),
        s.original_bytes,
        "the parent bundle is never rewritten"
    );
    let parent = read_bundle(&s.original_bundle);
    let fork = read_bundle(&s.fork_bundle);
    let p = &fork.header["parent"];
    assert_eq!(p["run"], s.original.as_str());
    assert_eq!(p["event"], s.at as u64);
    assert_eq!(
        p["chain_hash"],
        parent.footer.as_ref().unwrap()["chain_hash"]
    );
    // Before the fork point the fork is the parent, event for event.
    assert_eq!(fork.events[..s.at], parent.events[..s.at]);
    assert_eq!(fork.events[s.at]["injected"]["action"], "fork-respond");
    assert_ne!(fork.events[s.at]["hash"], parent.events[s.at]["hash"]);
    // The agent acted on the fresh list.
    let rollback = index_of(&fork.events, |e| is_tool(e, "rollback_deploy"));
    assert_eq!(fork.events[rollback]["request"]["args"]["id"], "D-42");

    let doc = replay_json(store, &s.fork, 0);
    assert_eq!(doc["verdict"], "identical", "{doc}");
    assert_eq!(doc["matched"], fork.events.len() as u64);
    // The parent still replays identical too.
    assert_eq!(replay_json(store, &s.original, 0)["verdict"], "identical");

    // A fork of the fork: deny the incident note from its call on.
    let at2 = index_of(&fork.events, |e| is_tool(e, "add_incident_note"));
    assert!(at2 > s.at);
    let fork_bytes = std::fs::read(&s.fork_bundle).unwrap();
    let f2 = wl(
        store,
        &[
            &"fork",
            &s.fork,
            &"--at",
            &at2.to_string(),
            &"--deny",
            &"add_incident_note",
            &"--json",
        ],
    );
    f2.expect_code(1); // the note is required, so the case now fails
    assert_eq!(f2.json()["status"], "failed", "{f2}");
    assert_eq!(std::fs::read(&s.fork_bundle).unwrap(), fork_bytes);
    let f2_id = run_id(&f2);
    let second = read_bundle(&f2.bundle());
    let p2 = &second.header["parent"];
    assert_eq!(p2["run"], s.fork.as_str());
    assert_eq!(p2["event"], at2 as u64);
    assert_eq!(p2["earlier"][0]["event"], s.at as u64, "{p2}");
    assert_eq!(second.events[..at2], fork.events[..at2]);
    assert_eq!(second.events[at2]["effect"], "denied");
    let doc = replay_json(store, &f2_id, 0);
    assert_eq!(doc["verdict"], "identical", "{doc}");

    // Everything in the store still verifies.
    let v = wl(store, &[&"verify", &"--json"]);
    v.expect_code(0);
    assert_eq!(v.json()["identical"], 4, "{v}");
}

// --- 6. export and import --------------------------------------------------

#[test]
fn an_exported_run_replays_in_another_store_and_hostile_exports_are_refused() {
    let dir = temp_dir();
    let store_a = dir.path().join("a");
    let out = run(&store_a, &example_case("incident/baseline"), &careful());
    out.expect_code(0);
    let id = run_id(&out);
    let file = dir.path().join("run.export.json");
    let e = wl(&store_a, &[&"export", &id, &"-o", &file, &"--json"]);
    e.expect_code(0);
    assert_eq!(e.json()["run_id"], id.as_str());

    let store_b = dir.path().join("b");
    let i = wl(&store_b, &[&"import", &file, &"--json"]);
    i.expect_code(0);
    assert_eq!(i.json()["run_id"], id.as_str());
    assert_eq!(
        std::fs::read(common::bundle_in(&store_b, &id)).unwrap(),
        std::fs::read(out.bundle()).unwrap()
    );
    let doc = replay_json(&store_b, &id, 0);
    assert_eq!(doc["verdict"], "identical", "{doc}");

    // Crafted exports, each imported into a fresh store nested in its own
    // folder: refused with exit 2, and nothing written anywhere.
    let good: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let agent_sha = read_bundle(&out.bundle()).header["agent_sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let mut evil_run = good.clone();
    evil_run["run"] = json!("../../evil");
    let mut evil_object = good.clone();
    evil_object["objects"]["../x"] = json!("aGVsbG8="); // "hello"
    let mut evil_abs = good.clone();
    evil_abs["objects"]["/tmp/x"] = json!("aGVsbG8=");
    let mut wrong_bytes = good.clone();
    wrong_bytes["objects"][&agent_sha] = json!("aGVsbG8=");
    let crafted = [
        ("run-id", evil_run, "is not a plain name"),
        ("object-name", evil_object, "is not a SHA-256"),
        ("absolute-object", evil_abs, "is not a SHA-256"),
        ("object-bytes", wrong_bytes, "does not match its hash"),
    ];
    for (name, doc, message) in crafted {
        let outer = dir.path().join(format!("import-{name}"));
        let store = outer.join("nest").join("store");
        std::fs::create_dir_all(&store).unwrap();
        let export = outer.join("crafted.json");
        std::fs::write(&export, serde_json::to_vec(&doc).unwrap()).unwrap();
        let before = tree(&outer);
        let out = wl(&store, &[&"import", &export]);
        out.expect_code(2);
        assert!(out.stderr.contains(message), "{name}:\n{out}");
        let after = tree(&outer);
        let outside: Vec<&PathBuf> = after
            .difference(&before)
            .filter(|p| !p.starts_with("nest/store"))
            .collect();
        assert!(outside.is_empty(), "{name}: written outside: {outside:?}");
        for sub in ["runs", "objects"] {
            let left = tree(&store.join(sub));
            assert!(left.is_empty(), "{name}: {sub}/ has {left:?}");
        }
        assert!(!dir.path().join("evil.jsonl").exists());
    }
}

// --- 7. diff and show ------------------------------------------------------

/// Objects are kept as zstd frames in the store and in exports; a store
/// or an export written before that (raw bytes, `worldline-export/1`) is
/// still read, replayed and imported.
#[test]
fn compressed_objects_and_stores_and_exports_from_before_them() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    const MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
    let dir = temp_dir();
    let store_a = dir.path().join("a");
    let out = run(&store_a, &example_case("incident/baseline"), &careful());
    out.expect_code(0);
    let id = run_id(&out);
    let agent_sha = read_bundle(&out.bundle()).header["agent_sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let kept = std::fs::read(store_a.join("objects").join(&agent_sha)).unwrap();
    let agent = std::fs::read(careful()).unwrap();
    assert!(kept.starts_with(&MAGIC), "the agent is kept compressed");
    assert!(
        kept.len() < agent.len() / 2,
        "{} of {}",
        kept.len(),
        agent.len()
    );

    // An export carries the objects compressed.
    let file = dir.path().join("run.export.json");
    wl(&store_a, &[&"export", &id, &"-o", &file]).expect_code(0);
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(doc["format"], "worldline-export/2");
    let carried = b64
        .decode(doc["objects"][&agent_sha].as_str().unwrap())
        .unwrap();
    assert!(carried.starts_with(&MAGIC) && carried.len() < agent.len() / 2);

    // The store as an older worldline left it: every object raw, no world
    // rebuilt yet. Every run still verifies.
    for e in std::fs::read_dir(store_a.join("objects")).unwrap() {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        if bytes.starts_with(&MAGIC) {
            std::fs::write(&path, zstd::decode_all(&bytes[..]).unwrap()).unwrap();
        }
    }
    assert_eq!(
        std::fs::read(store_a.join("objects").join(&agent_sha)).unwrap(),
        agent
    );
    let _ = std::fs::remove_dir_all(store_a.join("worlds"));
    let v = wl(&store_a, &[&"verify", &"--json"]);
    v.expect_code(0);
    assert_eq!(v.json()["identical"], 1, "{v}");

    // An export as an older worldline wrote it: objects as base64 of their
    // bytes. It imports, the objects land compressed, and the run replays.
    doc["format"] = json!("worldline-export/1");
    for (sha, data) in doc["objects"].as_object_mut().unwrap() {
        let carried = b64.decode(data.as_str().unwrap()).unwrap();
        let raw = if carried.starts_with(&MAGIC) {
            zstd::decode_all(&carried[..]).unwrap()
        } else {
            carried
        };
        assert_eq!(worldline_case::canon::sha256_hex(&raw), *sha);
        *data = json!(b64.encode(raw));
    }
    let old = dir.path().join("old.export.json");
    std::fs::write(&old, serde_json::to_vec(&doc).unwrap()).unwrap();
    assert!(std::fs::metadata(&old).unwrap().len() > std::fs::metadata(&file).unwrap().len());
    let store_b = dir.path().join("b");
    wl(&store_b, &[&"import", &old]).expect_code(0);
    let landed = std::fs::read(store_b.join("objects").join(&agent_sha)).unwrap();
    assert!(landed.starts_with(&MAGIC));
    let doc = replay_json(&store_b, &id, 0);
    assert_eq!(doc["verdict"], "identical", "{doc}");
}

#[test]
fn diff_names_the_fork_point_and_show_gives_the_state_after_an_event() {
    let s = stale_fork();
    let store = s.store.path();

    let d = wl(store, &[&"diff", &s.original, &s.fork, &"--json"]);
    d.expect_code(1);
    let doc = d.json();
    assert_eq!(doc["first_divergence"]["index"], s.at as u64, "{d}");
    assert_eq!(doc["a"], s.original.as_str());
    assert_eq!(doc["b"], s.fork.as_str());
    assert_eq!(
        doc["final_state_diff"]["tables"]["deploys"]["changed"]["D-42"]["status"],
        json!({"before": "live", "after": "rolled_back"}),
        "{d}"
    );
    let t = wl(store, &[&"diff", &s.original, &s.fork]);
    t.expect_code(1);
    assert!(
        t.stdout
            .contains(&format!("first difference at event {}", s.at)),
        "{t}"
    );
    // A run against itself: no difference, exit 0.
    let same = wl(store, &[&"diff", &s.fork, &s.fork, &"--json"]);
    same.expect_code(0);
    assert!(same.json()["first_divergence"].is_null(), "{same}");

    // The rollback of D-42 in the fork shows in the state after its event
    // and not before.
    let events = read_bundle(&s.fork_bundle).events;
    let w = index_of(&events, |e| is_tool(e, "rollback_deploy"));
    assert_eq!(events[w]["effect"], "write");
    let status_after = |n: usize| -> Value {
        let out = wl(
            store,
            &[&"show", &s.fork, &"--at", &n.to_string(), &"--json"],
        );
        out.expect_code(0);
        assert_eq!(out.json()["event"]["seq"], n as u64);
        out.json()["state_after"]["tables"]["deploys"]["rows"]["D-42"]["status"].clone()
    };
    assert_eq!(status_after(w - 1), "live");
    assert_eq!(status_after(w), "rolled_back");
    let text = wl(store, &[&"show", &s.fork, &"--at", &w.to_string()]);
    text.expect_code(0);
    assert!(
        text.stdout.contains(&format!("world after event {w}")),
        "{text}"
    );
    // An event past the end is an input error.
    let past = wl(
        store,
        &[&"show", &s.fork, &"--at", &events.len().to_string()],
    );
    past.expect_code(2);
}

/// A failed run's grade forged into a pass, its footer sealed again as a
/// forger would, replays `diverged` at its grade and fails `verify`, as
/// does one check's verdict forged alone: both replayed `identical` and
/// verified, since the grade is not among what the hashes cover
/// (decision 0424). The run itself replays `identical`.
#[test]
fn a_forged_grade_diverges_in_replay_and_fails_verify() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run(&store, &example_case("incident/stale-deploys"), &naive());
    out.expect_code(1);
    let id = run_id(&out);
    assert_eq!(replay_json(&store, &id, 0)["verdict"], "identical");
    wl(&store, &[&"verify", &id]).expect_code(0);
    let failed = read_bundle(&out.bundle()).footer.unwrap()["grade"].clone();
    let checks = failed["assertions"].as_array().unwrap();
    let first_failed = checks.iter().position(|a| a["passed"] == false).unwrap();

    let passed = dir.path().join("passed.jsonl");
    forge_grade(&out.bundle(), &passed, |g| {
        g["passed"] = true.into();
        g["reward"] = 1.0.into();
        for a in g["assertions"].as_array_mut().unwrap() {
            a["passed"] = true.into();
        }
    });
    let one = dir.path().join("one-check.jsonl");
    forge_grade(&out.bundle(), &one, |g| {
        g["assertions"][first_failed]["passed"] = true.into();
    });
    for (forged, diff) in [
        (&passed, "$.passed: true → false"),
        (
            &one,
            &*format!("$.assertions[{first_failed}].passed: true → false"),
        ),
    ] {
        let doc = replay_json(&store, forged.to_str().unwrap(), 1);
        assert_eq!(doc["verdict"], "diverged", "{doc}");
        assert_eq!(doc["divergence"]["field"], "grade", "{doc}");
        let lines: Vec<&str> = (doc["diff"].as_array().unwrap().iter())
            .map(|l| l.as_str().unwrap())
            .collect();
        assert!(lines.contains(&diff), "{doc}");
        let v = wl(&store, &[&"verify", forged, &"--json"]);
        v.expect_code(1);
        assert_eq!(v.json()["diverged"], 1, "{v}");
    }
}
/// The footer holds the header's hash, so an edited header (the case's
/// name, the seed, the parent a fork names) is refused by every reader,
/// whole or a page of it: the hash chain starts from a constant, and such
/// an edit replayed `identical`, was listed, imported and verified.
#[test]
fn an_edited_header_is_refused_as_tampering() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let out = run(&store, &example_case("incident/baseline"), &careful());
    out.expect_code(0);
    let original = lines(&out.bundle());
    let mut header: Value = serde_json::from_str(&original[0]).unwrap();
    assert!(
        read_bundle(&out.bundle()).footer.unwrap()["header_hash"].is_string(),
        "{out}"
    );
    header["header"]["case"] = "evil-case".into();
    header["header"]["seed"] = 77.into();
    let mut l = original.clone();
    l[0] = format!("{}\n", worldline_case::canon::to_string(&header));
    let path = dir.path().join("edited.jsonl");
    std::fs::write(&path, l.concat()).unwrap();
    for args in [
        vec!["replay"],
        vec!["history"],
        vec!["history", "-n", "1"],
        vec!["show", "--at", "1"],
        vec!["verify"],
    ] {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = args.iter().map(|a| a as _).collect();
        all.insert(1, &path);
        let out = wl(&store, &all);
        assert!(out.code == 2 || out.code == 1, "{args:?}: {out}");
        assert!(
            format!("{}{}", out.stdout, out.stderr)
                .contains("the header was changed after the run"),
            "{args:?}: {out}"
        );
    }
}

/// `verify` writes each replay's line as it comes, not all of them at the
/// end: with three runs of a second's compute each, the first line is
/// read while `verify` still runs (every line came when the last replay
/// was done, through a pipe or a file).
#[test]
fn verify_writes_each_replay_as_it_comes() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "work",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\n\
         task = { work = 150_000_000, calls = [{ tool = \"get_ticket\", args = { id = \"T-1\" } }] }\n\
         [limits]\nfuel = 100_000_000_000\n",
    );
    for _ in 0..3 {
        let agent = caller();
        let worlds = worlds_dir();
        wl(
            &store,
            &[&"run", &case, &"--agent", &agent, &"--worlds", &worlds],
        )
        .expect_code(0);
    }
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_worldline"))
        .args(["verify", "--jobs", "1", "--store"])
        .arg(&store)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let first = lines.next().unwrap().unwrap();
    let first_at = started.elapsed();
    let still_running = child.try_wait().unwrap().is_none();
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let all_at = started.elapsed();
    assert!(child.wait().unwrap().success());
    assert!(first.contains("identical"), "{first}");
    assert!(
        still_running && first_at < all_at.mul_f64(0.8),
        "the first line came at {first_at:?}, all of them at {all_at:?}: {rest:?}"
    );
}

/// `run CASE --agent AGENT --worlds tests/worlds --json` (any exit code).
fn run_demo(store: &Path, case: &Path, agent: &Path) -> CliOutput {
    common::run_in(store, case, agent, &worlds_dir())
}

/// A case on `world` whose hostile agent loops until a limit stops it.
fn looping(dir: &Path, name: &str, world: &str, limits: &str) -> PathBuf {
    write_case(
        dir,
        name,
        &format!(
            "world = \"{world}\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = {{ mode = \"loop\" }}\n[limits]\n{limits}\n"
        ),
    )
}

/// A case whose hostile agent loops until the watchdog stops it.
fn watched(dir: &Path) -> PathBuf {
    looping(
        dir,
        "watched",
        "demo@v1",
        "fuel = 1_000_000_000_000_000\ntimeout_ms = 300",
    )
}

/// Two runs of the same events and final state that ended otherwise (one
/// out of fuel, the other stopped by the watchdog) differ: `diff` says
/// how each ended (text, `--json` `status` and `outcomes`, the UI's page)
/// and exits 1 (it said "same events", "final states: identical", exit
/// 0), with a note that they are runs of different cases; runs of
/// different worlds get a note saying so (a long state diff came without
/// a word).
#[test]
fn diff_says_how_two_runs_ended_and_of_what_cases_and_worlds() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let fuel = looping(dir.path(), "fuel", "demo@v1", "fuel = 50_000_000");
    let a = run_demo(&store, &fuel, &hostile());
    a.expect_code(3);
    let b = run_demo(&store, &watched(dir.path()), &hostile());
    b.expect_code(3);
    assert_eq!(a.json()["status"], "out_of_fuel", "{a}");
    assert_eq!(b.json()["status"], "timeout", "{b}");
    let (a, b) = (run_id(&a), run_id(&b));

    let d = wl(&store, &[&"diff", &a, &b, &"--json"]);
    d.expect_code(1);
    let doc = d.json();
    assert!(doc["first_divergence"].is_null(), "{d}");
    assert_eq!(doc["status"], json!(["out_of_fuel", "timeout"]), "{d}");
    assert_eq!(doc["outcomes"], json!(["out_of_fuel", "timeout"]), "{d}");
    let notes = doc["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 1, "{d}");
    assert!(
        notes[0]
            .as_str()
            .unwrap()
            .contains("different cases: a `fuel`, b `watched`"),
        "{d}"
    );
    let t = wl(&store, &[&"diff", &a, &b]);
    t.expect_code(1);
    assert!(
        t.stdout.contains("note: the runs are of different cases"),
        "{t}"
    );
    assert!(
        t.stdout
            .contains("endings differ:\n  a: out_of_fuel\n  b: timeout\n"),
        "{t}"
    );
    // A run against itself ends as itself: no difference.
    wl(&store, &[&"diff", &a, &a]).expect_code(0);

    // A run of another world: a note says so.
    let support = looping(
        dir.path(),
        "fuel-support",
        "support@v1",
        "fuel = 50_000_000",
    );
    let c = common::run_in(
        &store,
        &support,
        &hostile(),
        &workspace_root().join("worlds"),
    );
    c.expect_code(3);
    let c = run_id(&c);
    let w = wl(&store, &[&"diff", &a, &c]);
    w.expect_code(1);
    assert!(
        w.stdout
            .contains("note: the runs are of different worlds: a `demo@v1`, b `support@v1`"),
        "{w}"
    );

    // The UI's diff page says the endings and the note too.
    let server = crate::ui_support::Server::start(&store, &[]);
    let page = server.get(&format!("/diff?a={a}&b={b}"));
    assert_eq!(page.status, 200);
    assert!(page.body.contains("id=\"ending-diff\""), "{}", page.body);
    assert!(page.body.contains("different cases"), "{}", page.body);
}

/// The UI's diff page shows a run that returned nothing as having no
/// output (it showed the string "(none)", quoted as an output of that
/// text is).
#[test]
fn the_ui_diff_shows_a_missing_output_as_none() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let fuel = looping(dir.path(), "fuel", "demo@v1", "fuel = 50_000_000");
    let a = run_demo(&store, &fuel, &hostile());
    a.expect_code(3);
    let done = write_case(
        dir.path(),
        "done",
        "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = { calls = [] }\n",
    );
    let e = run_demo(&store, &done, &caller());
    e.expect_code(0);
    assert!(e.json()["output"].is_string(), "{e}");
    let (a, e) = (run_id(&a), run_id(&e));
    let server = crate::ui_support::Server::start(&store, &[]);
    let page = server.get(&format!("/diff?a={a}&b={e}"));
    assert_eq!(page.status, 200);
    assert!(page.body.contains("id=\"output-diff\""), "{}", page.body);
    assert!(page.body.contains("no output"), "{}", page.body);
    assert!(!page.body.contains("(none)"), "{}", page.body);
}

/// A line of `diff`'s state diff is cut at 16 KiB, as `run` and `grade`
/// cut one (a note of 40,000 characters was printed whole); `--json`
/// holds it whole.
#[test]
fn diff_cuts_a_long_state_diff_line_as_run_does() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let long = "x".repeat(40_000);
    let noted = write_case(
        dir.path(),
        "noted",
        &format!(
            "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = {{ calls = [{{tool=\"add_note\", args={{ticket=\"T-1\", text=\"{long}\", author=\"a\"}}}}] }}\n"
        ),
    );
    let plain = write_case(
        dir.path(),
        "plain",
        "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = { calls = [] }\n",
    );
    let a = run_demo(&store, &plain, &caller());
    a.expect_code(0);
    let b = run_demo(&store, &noted, &caller());
    b.expect_code(0);
    let (a, b) = (run_id(&a), run_id(&b));
    let t = wl(&store, &[&"diff", &a, &b, &"--full"]);
    t.expect_code(1);
    let longest = t.stdout.lines().map(str::len).max().unwrap();
    assert!(longest < 17 * 1024, "a line of {longest} bytes");
    assert!(
        t.stdout.contains("bytes more; `--json` holds it whole)"),
        "{t}"
    );
    let j = wl(&store, &[&"diff", &a, &b, &"--json"]);
    assert!(j.stdout.contains(&long), "--json holds it whole");
}

/// `verify`'s text says the runs the watchdog stopped apart from those
/// identical or verified, as `--json` does (it counted them among
/// those: `2 runs: 2 identical or verified` with one a timeout).
#[test]
fn verify_says_the_runs_the_watchdog_stopped_apart() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let done = write_case(
        dir.path(),
        "done",
        "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = { calls = [] }\n",
    );
    let t = run_demo(&store, &watched(dir.path()), &hostile());
    t.expect_code(3);
    assert_eq!(t.json()["status"], "timeout", "{t}");
    run_demo(&store, &done, &caller()).expect_code(0);
    let v = wl(&store, &[&"verify"]);
    v.expect_code(0);
    assert!(
        v.stdout.contains("2 runs: 1 identical or verified ("),
        "{v}"
    );
    assert!(
        v.stdout.contains("), 1 timeout (stopped by the watchdog"),
        "{v}"
    );
    let j = wl(&store, &[&"verify", &"--json"]);
    assert_eq!(j.json()["timeout"], 1, "{j}");
}

/// `repro` of a run the watchdog stopped says a timeout is the wall
/// clock's (it said that nothing in the case draws from the model seed,
/// of a run that is not replayable).
#[test]
fn repro_of_a_timeout_says_it_is_the_wall_clock_s() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let t = run_demo(&store, &watched(dir.path()), &hostile());
    t.expect_code(3);
    assert_eq!(t.json()["status"], "timeout", "{t}");
    let r = wl(&store, &[&"repro", &run_id(&t), &"--times", &"2"]);
    r.expect_code(0);
    assert!(
        !r.stdout
            .contains("nothing in this case draws from the model seed"),
        "{r}"
    );
    assert!(
        r.stdout
            .contains("a `timeout` is the wall-clock watchdog's"),
        "{r}"
    );
}

/// A native run the watchdog stopped is no boundary replay among the
/// identical or verified: `verify` said `0 identical or verified (1 of
/// them boundary replays of native agents, …), 1 timeout`.
#[test]
fn verify_counts_a_native_timeout_apart_from_its_boundary_replays() {
    let dir = temp_dir();
    let store = dir.path().join("store");
    let case = write_case(
        dir.path(),
        "sleeps",
        "world = \"demo@v1\"\nseed = 7\nclock = 2026-03-01T12:00:00Z\ntask = {}\n[limits]\ntimeout_ms = 300\n",
    );
    // The store before the agent: what follows `--exec --` is its command.
    let t = common::worldline_raw([
        "run".as_ref(),
        case.as_os_str(),
        "--worlds".as_ref(),
        worlds_dir().as_os_str(),
        "--json".as_ref(),
        "--store".as_ref(),
        store.as_os_str(),
        "--exec".as_ref(),
        "--".as_ref(),
        "python3".as_ref(),
        "-c".as_ref(),
        OsStr::new("import time; time.sleep(5)"),
    ]);
    assert_eq!(t.json()["status"], "timeout", "{t}");
    let v = wl(&store, &[&"verify"]);
    v.expect_code(0);
    assert!(
        v.stdout.contains(
            "1 runs: 0 identical or verified (0 of them boundary replays of native agents, 0 of those MCP sessions), 1 timeout"
        ),
        "{v}"
    );
}
