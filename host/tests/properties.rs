//! Property tests of every reader of user input: the case, world (and its
//! rows files) and fault-profile parsers, the bundle reader and the export reader. Inputs
//! are arbitrary bytes and random mutations of valid documents (flipped
//! bytes, cut ranges, spliced tokens, duplicated lines). Each reader must
//! return its value or an input error naming the file (with a line when
//! the input is text that fails to parse), and never panic.

use crate::common;

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use worldline::case;
use worldline::error::InputError;
use worldline::log::bundle::{self, Footer, Header, Status};
use worldline::log::{Effect, Event, Recorder};
use worldline::world::{self, World};

/// Tokens that tend to break parsers, spliced into valid documents.
const TOKENS: &[&str] = &[
    "[",
    "]",
    "[[",
    "{",
    "}",
    "\"",
    "'",
    "=",
    ",",
    "\n",
    "\\",
    "*",
    "**********",
    "..",
    "../",
    "-1",
    "0",
    "1e400",
    "18446744073709551616",
    "nan",
    "inf",
    "true",
    "\u{0}",
    "\u{feff}",
    "é",
    "\"\"\"",
    "#",
    ":",
    "null",
    "@v",
    "T",
    "Z",
    "2026-13-45T99:99:99Z",
    "[limits]\n",
    "[permissions]\n",
    "deny = [\"*\"]\n",
    "fuel = 0\n",
    "tick_us = 9223372036854775807\n",
];

/// One mutation: (kind, position, byte, token).
type Mutation = (u8, usize, u8, usize);

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec((0u8..5, any::<usize>(), any::<u8>(), 0..TOKENS.len()), 1..6)
}

fn mutate(seed: &[u8], ops: &[Mutation]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for &(kind, pos, byte, token) in ops {
        let at = if b.is_empty() { 0 } else { pos % (b.len() + 1) };
        match kind {
            0 if !b.is_empty() => {
                let i = at.min(b.len() - 1);
                b[i] ^= byte | 1;
            }
            1 => {
                let end = (at + 1 + byte as usize).min(b.len());
                b.drain(at..end);
            }
            2 => {
                let t = TOKENS[token].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            3 => {
                // Duplicate the line holding `at`.
                let start = b[..at]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |i| i + 1);
                let end = b[at..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |i| at + i + 1);
                let line = b[start..end].to_vec();
                b.splice(end..end, line);
            }
            _ => b.truncate(at),
        }
    }
    b
}

fn demo_dir() -> PathBuf {
    common::worlds_dir().join("demo").join("v1")
}

fn demo() -> &'static World {
    static DEMO: OnceLock<World> = OnceLock::new();
    DEMO.get_or_init(|| world::load_dir(&demo_dir()).expect("the demo world loads"))
}

const CASE: &str = r#"world = "demo@v1"
description = "a case to mutate"
seed = 7
clock = 2026-03-01T12:00:00Z
task = { mode = "calls", n = 2, nested = { list = [1, 2, 3] } }

[limits]
fuel = 1_000_000
stdout_bytes = 4096

[permissions]
deny = ["close_*"]

[[inject]]
tool = "get_ticket"
when = { id = "T-1" }
response = { id = "T-1", status = "stale" }

[expect]
status = "completed"
unchanged = ["tickets"]

[[expect.calls]]
tool = "get_*"
min = 1

[[fuzz.tools]]
tool = "get_ticket"
deny = 0.2
latency_ms = { p = 0.5, ms = [1, 100] }
"#;

const PROFILE: &str = r#"clock_skew_s = [-60, 60]

[[tools]]
tool = "get_ticket"
stale = { p = 0.3, age_s = [1, 100], field = "status" }
error = { timeout = 0.1 }

[[tools]]
tool = "*"
latency_ms = { p = 0.2, ms = [5, 500], dist = "log" }
"#;

/// The error is about `file`, and placed when `text` is UTF-8 that TOML
/// itself refused (the parser always knows where).
fn check_error(e: &InputError, file: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    prop_assert!(
        e.file.starts_with(file) || file.starts_with(&e.file) || e.file.ends_with("world.toml"),
        "the error names {} for input {}",
        e.file.display(),
        file.display()
    );
    if let Ok(text) = std::str::from_utf8(bytes)
        && toml::from_str::<toml::Table>(text).is_err()
        && !text.trim_start_matches('\u{feff}').is_empty()
    {
        prop_assert!(e.line.is_some(), "a TOML error without a place: {e}");
    }
    Ok(())
}

fn parse_case(bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let path = Path::new("/hostile/case.toml");
    let copy = bytes.clone();
    match case::parse(path, bytes, |reference| {
        if reference == "demo@v1" {
            Ok(demo().clone())
        } else {
            Err(InputError::new(path, format!("no world {reference}")))
        }
    }) {
        Ok(c) => prop_assert_eq!(c.world.reference(), "demo@v1"),
        Err(e) => check_error(&e, path, &copy)?,
    }
    Ok(())
}

/// A bundle with a header, `n` chained events and a footer.
fn valid_bundle(n: u64) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.jsonl");
    let header = Header {
        agent_sha256: "a".repeat(64),
        case: "c".into(),
        case_hash: "b".repeat(64),
        engine_hash: "e".repeat(64),
        env: None,
        format: bundle::FORMAT.into(),
        fuzz: None,
        group: None,
        harness_version: "0.1.0".into(),
        isolation: None,
        limits: Default::default(),
        model_overrides: Default::default(),
        model_seed: None,
        native: None,
        origin: None,
        parent: None,
        redacted: None,
        seed: 7,
        world: "demo@v1".into(),
        world_hash: "d".repeat(64),
    };
    std::fs::write(&path, bundle::header_line(&header)).unwrap();
    let file = std::fs::File::options().append(true).open(&path).unwrap();
    let mut rec = Recorder::to_file(file);
    for seq in 0..n {
        rec.append(Event {
            call: "worldline:agent/tools.call".into(),
            effect: Effect::Read,
            fuel: 100 * seq,
            hash: String::new(),
            injected: None,
            request: serde_json::json!({"name": "get_ticket", "args": {"id": "T-1"}}),
            response: serde_json::json!({"ok": {"id": "T-1", "n": seq}}),
            seq,
            vtime_ns: 1000 * seq,
            writes: vec![],
        })
        .unwrap();
    }
    let (file, events, chain_hash) = rec.finish().unwrap();
    let mut footer = Footer {
        backtrace: vec![],
        chain_hash,
        error: None,
        events: events.len() as u64,
        final_state_hash: "f".repeat(64),
        fuel: 1,
        grade: None,
        hash: String::new(),
        output: Some("{}".into()),
        replayable: true,
        status: Status::Completed,
        stderr: String::new(),
        stdout: "hi\n".into(),
        truncated_bytes: 0,
    };
    footer.hash = bundle::footer_hash(&footer);
    bundle::finish(file.unwrap(), &footer, true).unwrap();
    std::fs::read(&path).unwrap()
}

fn read_bundle(bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = Path::new("/hostile/run.jsonl");
    if let Err(e) = bundle::parse(bytes, path) {
        prop_assert_eq!(&e.path, "/hostile/run.jsonl");
        prop_assert!(e.line >= 1, "a bundle error without a line: {e}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn the_case_parser_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        parse_case(bytes)?;
    }

    #[test]
    fn the_case_parser_never_panics_on_mutated_cases(ops in mutations()) {
        parse_case(mutate(CASE.as_bytes(), &ops))?;
    }

    #[test]
    fn the_bundle_reader_never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        read_bundle(&bytes)?;
    }

    #[test]
    fn the_bundle_reader_never_panics_on_mutated_bundles(ops in mutations()) {
        static VALID: OnceLock<Vec<u8>> = OnceLock::new();
        let valid = VALID.get_or_init(|| valid_bundle(4));
        read_bundle(&mutate(valid, &ops))?;
    }
}

proptest! {
    // These write files: fewer cases.
    #![proptest_config(ProptestConfig { cases: 80, ..ProptestConfig::default() })]

    #[test]
    fn the_world_loader_never_panics_on_mutated_worlds(ops in mutations()) {
        let original = std::fs::read(demo_dir().join("world.toml")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("demo").join("v1");
        copy_tree(&demo_dir(), &copy);
        let bytes = mutate(&original, &ops);
        std::fs::write(copy.join("world.toml"), &bytes).unwrap();
        if let Err(e) = world::load(dir.path(), "demo@v1", Path::new("/case.toml")) {
            prop_assert!(e.file.starts_with(&copy), "the error names {}", e.file.display());
            if let Ok(text) = std::str::from_utf8(&bytes)
                && toml::from_str::<toml::Table>(text).is_err()
            {
                prop_assert!(e.line.is_some(), "a TOML error without a place: {e}");
            }
        }
    }

    #[test]
    fn the_world_loader_never_panics_on_mutated_rows_files(ops in mutations(), which: bool) {
        // The demo world's rows: JSON Lines and a JSON array.
        let name = if which { "tickets.jsonl" } else { "deploys.json" };
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("demo").join("v1");
        copy_tree(&demo_dir(), &copy);
        let file = copy.join("data").join(name);
        let original = std::fs::read(&file).unwrap_or_default();
        std::fs::write(&file, mutate(&original, &ops)).unwrap();
        if let Err(e) = world::load(dir.path(), "demo@v1", Path::new("/case.toml")) {
            prop_assert!(e.file.starts_with(&copy), "the error names {}", e.file.display());
        }
    }

    #[test]
    fn the_profile_reader_never_panics_on_mutated_profiles(ops in mutations()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("faults.toml");
        let bytes = mutate(PROFILE.as_bytes(), &ops);
        std::fs::write(&path, &bytes).unwrap();
        if let Err(e) = case::fuzz::load_file(&path, demo()) {
            check_error(&e, &path, &bytes)?;
        }
    }

    #[test]
    fn the_export_reader_never_panics_on_mutated_exports(ops in mutations()) {
        static VALID: OnceLock<Vec<u8>> = OnceLock::new();
        let valid = VALID.get_or_init(|| {
            let bundle = String::from_utf8(valid_bundle(2)).unwrap();
            serde_json::to_vec_pretty(&serde_json::json!({
                "format": "worldline-export/1",
                "run": "20260101-000000-abcdef01",
                "bundle": bundle,
                "objects": {},
            }))
            .unwrap()
        });
        let dir = tempfile::tempdir().unwrap();
        let store = worldline::store::StoreDir::open(&dir.path().join("store")).unwrap();
        let path = dir.path().join("run.json");
        let bytes = mutate(valid, &ops);
        std::fs::write(&path, &bytes).unwrap();
        // The export lacks the run's objects: it can never be accepted.
        let err = worldline::export::import(&store, &path).unwrap_err();
        let input = err.chain().find_map(|e| e.downcast_ref::<InputError>());
        prop_assert!(input.is_some(), "not an input error: {err:#}");
        let input = input.unwrap();
        prop_assert_eq!(&input.file, &path);
        prop_assert!(input.line.is_some(), "an export error without a place: {input}");
        prop_assert!(
            std::fs::read_dir(store.runs_dir()).unwrap().next().is_none(),
            "a refused import wrote a run"
        );
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
