//! The decision records (docs/decisions/) stay true to the tree: each has a
//! status, a row in the index (docs/decisions/README.md), and a `Where:`
//! line whose paths exist: from the workspace root, or inside a crate's
//! `src/` (records name modules as `mediate/clock.rs`).

use crate::common::workspace_root;
use std::path::Path;

#[test]
fn every_decision_record_has_a_status_an_index_row_and_places_that_exist() {
    let root = workspace_root();
    let dir = root.join("docs/decisions");
    let index = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut roots = vec![root.clone(), root.join("host"), root.join("host/src")];
    for c in std::fs::read_dir(root.join("crates")).unwrap() {
        roots.push(c.unwrap().path().join("src"));
    }
    let mut problems = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with('0'))
        .collect();
    files.sort();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        if !text.lines().take(4).any(|l| l.contains("Status:")) {
            problems.push(format!("{name}: no `Status:` in its date line"));
        }
        if !index.contains(&format!("]({name})")) {
            problems.push(format!("{name}: no row in docs/decisions/README.md"));
        }
        let Some(start) = text.find("\nWhere:") else {
            continue;
        };
        let rest = &text[start + 1..];
        let place = &rest[..rest.find("\n\n").unwrap_or(rest.len())];
        for path in place.split('`').skip(1).step_by(2) {
            let path = path.trim_end_matches('/');
            if !path.contains('/') || path.contains([' ', '*', '{']) || path.contains("::") {
                continue; // a name or a pattern, not a path
            }
            if !roots.iter().any(|r| r.join(Path::new(path)).exists()) {
                problems.push(format!("{name}: `{path}` names nothing in the tree"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "decision records out of step with the tree:\n  {}",
        problems.join("\n  ")
    );
}
