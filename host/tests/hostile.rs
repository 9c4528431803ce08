//! The hostile-input corpus (`tests/hostile/`): malformed cases, worlds,
//! fault profiles, bundles, exports and agents, each fed to the command
//! that reads it. Every one must be refused as bad input: exit 2 (never a
//! panic, a crash, a hang or an internal error), naming the file, with its
//! line and column wherever the input has lines.
//!
//! Add a file to the right folder and it is run; see tests/hostile/README.md.

use crate::common;

use common::*;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Longest any refusal may take (a hang is a failure).
const LIMIT: Duration = Duration::from_secs(30);

fn corpus() -> PathBuf {
    tests_dir().join("hostile")
}

fn files(kind: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(corpus().join(kind))
        .unwrap_or_else(|e| panic!("reading tests/hostile/{kind}: {e}"))
        .map(|e| e.unwrap().path())
        .collect();
    found.sort();
    found
}

/// One input and how to feed it.
struct Input {
    /// The file (or world folder) the refusal must name.
    names: PathBuf,
    /// Whether the input has lines (so the refusal must give one).
    has_lines: bool,
    args: Vec<OsString>,
}

struct Verdict {
    input: PathBuf,
    problem: Option<String>,
}

fn args(parts: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_owned()).collect()
}

/// Whether a file is empty or a lone byte-order mark: no lines to name.
fn has_lines(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| !b.is_empty() && b != "\u{feff}".as_bytes())
}

fn inputs(scratch: &Path) -> Vec<Input> {
    let agent = guest("hostile-agent");
    let ok_case = case("hostile-ok");
    let mut all = Vec::new();
    for f in files("cases") {
        all.push(Input {
            has_lines: has_lines(&f),
            args: args(&[&"run", &f, &"--agent", &agent, &"--worlds", &worlds_dir()]),
            names: f,
        });
    }
    let hostile_worlds = corpus().join("worlds");
    for w in files("worlds") {
        let name = w.file_name().unwrap().to_string_lossy().into_owned();
        let c = write_case(
            scratch,
            &format!("world-{name}"),
            &format!(
                "world = \"{name}@v1\"\nseed = 1\nclock = 2026-03-01T12:00:00Z\ntask = {{}}\n"
            ),
        );
        all.push(Input {
            names: w,
            has_lines: true,
            args: args(&[&"run", &c, &"--agent", &agent, &"--worlds", &hostile_worlds]),
        });
    }
    for f in files("profiles") {
        all.push(Input {
            has_lines: has_lines(&f),
            args: args(&[
                &"fuzz",
                &ok_case,
                &"--faults",
                &f,
                &"--runs",
                &"1",
                &"--agent",
                &agent,
            ]),
            names: f,
        });
    }
    for f in files("bundles") {
        all.push(Input {
            has_lines: has_lines(&f),
            args: args(&[&"replay", &f]),
            names: f,
        });
    }
    for f in files("exports") {
        all.push(Input {
            has_lines: has_lines(&f),
            args: args(&[&"import", &f]),
            names: f,
        });
    }
    for f in files("agents") {
        all.push(Input {
            has_lines: false,
            args: args(&[&"run", &ok_case, &"--agent", &f]),
            names: f,
        });
    }
    all
}

/// Whether `text` holds `<path under prefix>:<line>:<column>:`.
fn names_a_place(text: &str, prefix: &str) -> bool {
    text.match_indices(prefix).any(|(at, _)| {
        let rest = &text[at..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let mut parts = rest[..end].rsplitn(4, ':');
        let _message_start = parts.next();
        let col = parts.next().unwrap_or("");
        let line = parts.next().unwrap_or("");
        !line.is_empty()
            && !col.is_empty()
            && line.bytes().all(|b| b.is_ascii_digit())
            && col.bytes().all(|b| b.is_ascii_digit())
    })
}

fn judge(input: &Input, store: &Path) -> Option<String> {
    let Some(out) = worldline_within(LIMIT, store, &input.args) else {
        return Some(format!("hung (killed after {LIMIT:?})"));
    };
    let (code, stdout, stderr) = (out.code, out.stdout, out.stderr);
    let said = || format!("\n    stdout: {stdout}\n    stderr: {stderr}");
    if code != 2 {
        return Some(format!(
            "exit {code} (-1: killed by a signal), not 2{}",
            said()
        ));
    }
    if stderr.contains("panicked") {
        return Some(format!("panicked{}", said()));
    }
    let name = input.names.file_name().unwrap().to_string_lossy();
    if !stderr.contains(name.as_ref()) {
        return Some(format!("the refusal does not name {name}{}", said()));
    }
    let prefix = input.names.display().to_string();
    if input.has_lines && !names_a_place(&stderr, &prefix) {
        return Some(format!("no {prefix}:LINE:COLUMN in the refusal{}", said()));
    }
    None
}

#[test]
fn every_hostile_input_is_refused_with_its_place() {
    let scratch = temp_dir();
    let all = inputs(scratch.path());
    assert!(all.len() >= 100, "the corpus has {} inputs", all.len());
    let next = Mutex::new(0usize);
    let verdicts = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for worker in 0..2 {
            let (all, next, verdicts, scratch) = (&all, &next, &verdicts, scratch.path());
            s.spawn(move || {
                let store = scratch.join(format!("store-{worker}"));
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(input) = all.get(i) else { break };
                    let problem = judge(input, &store);
                    verdicts.lock().unwrap().push(Verdict {
                        input: input.names.clone(),
                        problem,
                    });
                }
            });
        }
    });
    let verdicts = verdicts.into_inner().unwrap();
    let mut bad: Vec<String> = verdicts
        .iter()
        .filter_map(|v| {
            let rel = v.input.strip_prefix(corpus()).unwrap_or(&v.input);
            v.problem
                .as_ref()
                .map(|p| format!("{}: {p}", rel.display()))
        })
        .collect();
    bad.sort();
    assert!(
        bad.is_empty(),
        "{} of {} hostile inputs were not refused properly:\n{}",
        bad.len(),
        verdicts.len(),
        bad.join("\n")
    );
}
