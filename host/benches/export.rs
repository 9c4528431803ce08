//! The size of an export of one run of a Python agent, and of that agent in
//! the store, objects kept as zstd frames (decision 0261) against what the
//! same run took as `worldline-export/1` (objects as base64 of their bytes).
//!
//! Target: the export at most 8 MB (41 MB before).
//!
//! `cargo bench -p worldline --bench export`. The agent is
//! `tests/guests/python-probe/agent.py`, built with `worldline build-python`
//! (componentize-py must be installed); set `WORLDLINE_BENCH_PYTHON_AGENT`
//! to a built .wasm to skip that. The case makes 19 tool calls on the
//! `demo@v1` test world. Lines starting `export: RESULT` carry the figures;
//! docs/benchmarks.md writes them up.

#[path = "../tests/common/mod.rs"]
mod common;

use base64::Engine as _;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::time::Instant;

const MB: f64 = 1e6;

fn main() {
    let agent = match std::env::var_os("WORLDLINE_BENCH_PYTHON_AGENT") {
        Some(p) => PathBuf::from(p),
        None => common::python_guest("tests/guests/python-probe/agent.py"),
    };
    let dir = common::temp_dir();
    let store = dir.path().join("store");
    let case = common::write_case(
        dir.path(),
        "calls",
        "world = \"demo@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = { ticket = \"T-1\", calls = 19 }\n",
    );
    let out = common::run_json(&store, &case, &agent);
    assert_eq!(out.code, 0, "{out}");
    let id = out.json()["run_id"].as_str().expect("a run id").to_string();
    let file = dir.path().join("run.export.json");
    let t = Instant::now();
    let e = common::worldline(
        &store,
        [
            OsStr::new("export"),
            OsStr::new(&id),
            OsStr::new("-o"),
            file.as_os_str(),
        ],
    );
    let took = t.elapsed();
    assert_eq!(e.code, 0, "{e}");

    // The same export as worldline-export/1 carried it: every object as
    // base64 of its bytes.
    let b64 = base64::engine::general_purpose::STANDARD;
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("the export")).expect("JSON");
    let mut old = doc.clone();
    old["format"] = "worldline-export/1".into();
    for data in old["objects"]
        .as_object_mut()
        .expect("objects")
        .values_mut()
    {
        let kept = b64.decode(data.as_str().expect("base64")).expect("base64");
        let raw = if kept.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
            zstd::decode_all(&kept[..]).expect("a zstd frame")
        } else {
            kept
        };
        *data = b64.encode(raw).into();
    }
    let old_size = serde_json::to_vec(&old).expect("JSON").len() as f64;
    let new_size = std::fs::metadata(&file).expect("the export").len() as f64;
    let agent_size = std::fs::metadata(&agent).expect("the agent").len() as f64;
    let sha = common::read_bundle(&out.bundle()).header["agent_sha256"]
        .as_str()
        .expect("agent hash")
        .to_string();
    let kept = std::fs::metadata(store.join("objects").join(&sha))
        .expect("the agent object")
        .len() as f64;
    println!(
        "export: RESULT one Python-agent run: {:.2} MB (worldline-export/1: {:.2} MB, {:.1}x smaller), written in {:.2} s",
        new_size / MB,
        old_size / MB,
        old_size / new_size,
        took.as_secs_f64()
    );
    println!(
        "export: RESULT the agent ({:.2} MB) kept in the store as {:.2} MB",
        agent_size / MB,
        kept / MB
    );

    // It imports into another store and replays there.
    let other = dir.path().join("other");
    common::worldline(&other, [OsStr::new("import"), file.as_os_str()]).expect_code(0);
    common::replays_identical(&other, &id);
}
