//! The decision records (docs/decisions/) stay true to the tree: each has a
//! status, a row in the index (docs/decisions/README.md), and a `Where:`
//! line whose paths exist: from the workspace root, or inside a crate's
//! `src/` (records name modules as `mediate/clock.rs`).

use crate::common::{files_with_suffix, workspace_root};
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
    problems.extend(links_to_missing_records(&root, &dir));
    problems.extend(records_nothing_cites(&root, &dir));
    assert!(
        problems.is_empty(),
        "decision records out of step with the tree:\n  {}",
        problems.join("\n  ")
    );
}

/// The Markdown files under docs/ (the records and their index among them)
/// and the README: every link they make to a record names a file that is
/// there (a folded record's links go to the module it was folded into).
fn links_to_missing_records(root: &Path, dir: &Path) -> Vec<String> {
    let mut docs = vec![root.join("README.md")];
    docs.extend(files_with_suffix(&root.join("docs"), ".md"));
    let mut problems = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (at, _) in text.match_indices(".md)") {
            let start = text[..at].rfind(['(', '/']).map_or(0, |i| i + 1);
            let name = &text[start..at + 3];
            let numbered = name.len() > 5 && name[..4].bytes().all(|b| b.is_ascii_digit());
            if numbered && name.as_bytes()[4] == b'-' && !dir.join(name).exists() {
                let shown = doc.strip_prefix(root).unwrap().display();
                problems.push(format!("{shown}: links to {name}, which is not a record"));
            }
        }
    }
    problems
}

/// Every record is cited by something outside docs/decisions/ (the
/// architecture, another document, a module's doc, a test): a record
/// nothing cites is either folded into the module it concerns or linked
/// from where it applies (docs/decisions/README.md, issue 44).
fn records_nothing_cites(root: &Path, dir: &Path) -> Vec<String> {
    let mut texts = vec![std::fs::read_to_string(root.join("README.md")).unwrap()];
    let mut places = files_with_suffix(&root.join("docs"), ".md");
    places.retain(|p| !p.starts_with(dir));
    for top in [
        "crates",
        "host",
        "tests",
        "examples",
        "guest-sdk",
        "service-sdk",
    ] {
        for ext in [".rs", ".py", ".sh", ".ts", ".js", ".md", ".toml"] {
            places.extend(files_with_suffix(&root.join(top), ext));
        }
    }
    texts.extend(
        places
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok()),
    );
    let mut records: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('0'))
        .collect();
    records.sort();
    records
        .into_iter()
        .filter(|name| !texts.iter().any(|t| cites(t, &name[..4])))
        .map(|name| format!("{name}: cited by nothing outside docs/decisions/"))
        .collect()
}

/// `number` stands in `text` as a word of its own (not inside a hash or a
/// longer number).
fn cites(text: &str, number: &str) -> bool {
    text.match_indices(number).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + number.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}
