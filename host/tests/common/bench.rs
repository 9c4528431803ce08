//! What the benchmark tests (`bench_tau2.rs`, `bench_bfcl.rs`,
//! `bench_agentdojo.rs`) share besides the agreement check (`agree.rs`):
//! the Python holding a benchmark's pinned package, two imports compared
//! byte for byte, and the stride of the tasks a quick run takes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The Python with the pinned `package`, from `$var` (tests/NAME.sh sets
/// it), or `None` (with a note) when `$skip` is set; unset otherwise is a
/// failure saying how to install it.
pub fn pinned_python(var: &str, skip: &str, package: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var) {
        return Some(PathBuf::from(p));
    }
    if std::env::var_os(skip).is_some() {
        eprintln!("skipped: {skip} is set, so {package} is not installed");
        return None;
    }
    panic!(
        "{var} is not set: source tests/{name}.sh and run `ensure_{name} target` \
         (tests/run does), or set {skip}=1 to skip the {name} tests"
    );
}

/// Every file under `dir`, by relative path, with its bytes.
pub fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The files of two imports `a` and `b`, which must be the same bytes
/// (a conversion is deterministic); `a`'s.
#[track_caller]
pub fn same_imports(a: &Path, b: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let (fa, fb) = (files(a), files(b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (path, bytes) in &fa {
        assert!(
            fb[path] == *bytes,
            "{} differs between two imports",
            path.display()
        );
    }
    fa
}

/// Every `quick`-th task (every task with `WORLDLINE_BENCH_FULL`).
pub fn stride(quick: usize) -> usize {
    if std::env::var_os("WORLDLINE_BENCH_FULL").is_some() {
        1
    } else {
        quick
    }
}
