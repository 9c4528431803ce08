//! No library crate writes to the process's streams (decision 0365): a
//! library returns what it has to say, or reports it as an event, and
//! writes only to the `impl Write` its caller hands it; the binary decides
//! what reaches stdout and stderr. Checked on the source of every crate
//! under `crates/` (comments aside). The one use of stdout left is the MCP
//! stdio transport, whose protocol is stdin and stdout.

use std::path::{Path, PathBuf};

/// What a library may not name: the printing macros and stderr.
const FORBIDDEN: &[&str] = &[
    "print!(",
    "println!(",
    "eprint!(",
    "eprintln!(",
    "dbg!(",
    "io::stderr(",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Each forbidden name on a line of `code` that is not a comment, as
/// `line: text`.
fn offences(code: &str) -> Vec<String> {
    code.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter(|(_, l)| {
            FORBIDDEN
                .iter()
                .any(|f| l.contains(f) && !l.contains(&format!("_{f}")))
        })
        .map(|(i, l)| format!("{}: {}", i + 1, l.trim()))
        .collect()
}

#[test]
fn the_check_finds_a_print_but_not_a_comment_or_a_write() {
    assert_eq!(
        offences(
            "// eprintln!(\"x\")\nlet a = 1;\n    eprintln!(\"no\");\nwriteln!(out, \"ok\")?;"
        ),
        ["3: eprintln!(\"no\");"]
    );
    assert_eq!(offences("let e = std::io::stderr();").len(), 1);
}

#[test]
fn no_library_crate_writes_to_stderr_or_prints() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("crates");
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 8,
        "the library crates are under {}",
        crates.display()
    );
    for src in dirs {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let code = std::fs::read_to_string(&file).unwrap();
            for o in offences(&code) {
                found.push(format!("{}:{o}", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "a library writes to the process's streams; return the text or report an event, \
         and let the binary print it:\n{}",
        found.join("\n")
    );
}
