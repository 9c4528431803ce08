//! The long-horizon case family (issue 40): a world of documents, each
//! 2 KB of distinct text, and a case whose scripted model asks for them
//! one by one (`n` model calls: `n - 1` tool calls, then an answer), for
//! the `looper-agent` guest, which sends the whole conversation at every
//! call. Used by `long_horizon.rs` and `benches/long_horizon.rs`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Bytes of each document's text (each tool result is a little more:
/// its JSON around the text).
pub const DOC_BYTES: usize = 2048;

const WORLD: &str = r#"name = "library"
version = 1
description = "Documents to read one by one"

[tables.docs]
key = "id"
rows = "data/docs.jsonl"

[permissions]
default = "allow"

[[tools]]
name = "get_doc"
description = "Fetch one document by id"
params = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
op = "get"
table = "docs"
"#;

/// Document `i`'s text: `DOC_BYTES` of words that no other document
/// repeats (its number in every word), so the conversation's unique
/// content grows by a whole document per call.
pub fn doc_text(i: usize) -> String {
    let mut text = String::with_capacity(DOC_BYTES + 16);
    let mut w = 0;
    while text.len() < DOC_BYTES {
        let _ = write!(text, "d{i}w{w} ");
        w += 1;
    }
    text.truncate(DOC_BYTES);
    text
}

/// Write the world (`n` documents) under `root/worlds` and the case of
/// `n` model calls as `root/long-<n>.toml`; returns the worlds folder
/// and the case.
pub fn write(root: &Path, n: usize) -> (PathBuf, PathBuf) {
    write_task(root, n, "")
}

/// [`write`] with more keys in the task (`extra`: TOML inline-table
/// entries after the prompt, e.g. `clock_reads = 30`).
pub fn write_task(root: &Path, n: usize, extra: &str) -> (PathBuf, PathBuf) {
    let mut rows = String::new();
    for i in 0..n {
        let row = serde_json::json!({"id": format!("D-{i}"), "text": doc_text(i)});
        rows.push_str(&row.to_string());
        rows.push('\n');
    }
    let worlds = super::write_world(root, "library", WORLD, &[("data/docs.jsonl", &rows)]);
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!(", {extra}")
    };
    let mut case = format!(
        "world = \"library@v1\"\nseed = 40\nclock = 2026-03-01T12:00:00Z\ntask = {{ prompt = \"Read every document.\"{extra} }}\n\n[limits]\nfuel = 1_000_000_000_000\nmemory_mb = 1024\ntimeout_ms = 3_600_000\nmax_events = 5_000_000\n",
    );
    for i in 0..n.saturating_sub(1) {
        let _ = write!(
            case,
            "\n[[model.responses]]\ntool_calls = [{{ name = \"get_doc\", arguments = {{ id = \"D-{i}\" }} }}]\n"
        );
    }
    case.push_str("\n[[model.responses]]\ncontent = \"All read.\"\n");
    let case = super::write_case(root, &format!("long-{n}"), &case);
    (worlds, case)
}

/// The conversation's unique content after `n` model calls: the
/// documents the model read (the bound the recording is held to is a
/// multiple of this).
pub fn unique_bytes(n: usize) -> u64 {
    (n.saturating_sub(1) * DOC_BYTES) as u64
}

/// `run` of the family's `case` in `worlds` by the `looper-agent` guest,
/// [`measured`]: its wall time, peak RSS (KiB) and `--json` document;
/// the run must complete.
pub fn record(
    store: &Path,
    worlds: &Path,
    case: &Path,
) -> (std::time::Duration, u64, serde_json::Value) {
    let agent = super::guest("looper-agent");
    let (took, kib, out) = measured(
        store,
        &[
            "run",
            case.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
            "--worlds",
            worlds.to_str().unwrap(),
            "--json",
        ],
    );
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["run_status"], "completed", "{out}");
    (took, kib, doc)
}

/// One command's wall time, its peak RSS (KiB) and its stdout; it must
/// exit 0. The peak is the command's own, measured by `/usr/bin/time`
/// (`%M`): `ru_maxrss` of a child spawned by this process would count
/// this process's own resident memory too (Linux carries the high-water
/// mark of the address space a child shares until it calls `exec`), so
/// a test holding a bundle whole would inflate the next command's figure.
pub fn measured(store: &Path, args: &[&str]) -> (std::time::Duration, u64, String) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let rss_file = std::env::temp_dir().join(format!("worldline-rss-{}-{n}", std::process::id()));
    let start = std::time::Instant::now();
    let out = std::process::Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss_file)
        .arg(env!("CARGO_BIN_EXE_worldline"))
        .args(args)
        .arg("--store")
        .arg(store)
        .env("WORLDLINE_STORE_CACHE", super::store_cache())
        .current_dir(env!("CARGO_TARGET_TMPDIR"))
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("starting worldline under /usr/bin/time (the `time` package)");
    let elapsed = start.elapsed();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "worldline {args:?} exited with {}: {stdout}",
        out.status
    );
    let text = std::fs::read_to_string(&rss_file).unwrap();
    let _ = std::fs::remove_file(&rss_file);
    let kib = text
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("/usr/bin/time wrote {text:?}"));
    (elapsed, kib, stdout)
}
