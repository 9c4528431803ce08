//! Property tests of the readers of a user's files: the case, world (and
//! its rows files) and fault-profile parsers. Inputs are arbitrary bytes
//! and random mutations of valid documents; each reader must return its
//! value or an input error naming the file (with a line when the input is
//! text that fails to parse), and never panic.

mod support;

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use support::mutations::{mutate, mutations};
use worldline_case::case;
use worldline_case::error::InputError;
use worldline_case::world::{self, World};

fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/worlds/demo/v1")
}

fn demo() -> &'static Arc<World> {
    static DEMO: OnceLock<Arc<World>> = OnceLock::new();
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
        if let Err(e) = case::fuzz::load_file(&path, demo(), true) {
            check_error(&e, &path, &bytes)?;
        }
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
