//! The layering rules of docs/architecture.md, checked on the source: a
//! module imports only from layers below its own (never up the pipeline,
//! never a module beside it in the same layer), and no two files of one
//! folder import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first; modules in one entry share a layer. Keep in
/// step with "Layers" in docs/architecture.md.
const LAYERS: &[&[&str]] = &[
    &[
        "canon",
        "error",
        "error_kind",
        "path",
        "time",
        "parallel",
        "partition",
        "durable",
        "file_identity",
        "bounded",
        "lease",
    ],
    &["project"],
    &["world"],
    &["case"],
    &["check"],
    &["log"],
    &["store"],
    &["protocol"],
    &["mediate"],
    &["sandbox"],
    &["agent_file"],
    &["grade"],
    &["index"],
    &["redact"],
    &["traceback"],
    &["run"],
    &["native"],
    &["replay"],
    &["fork"],
    &["fuzz"],
    &["suite"],
    &["export"],
    &["retention"],
    &["otel"],
    &["regress"],
    &["report"],
    &["ui"],
    &["scaffold"],
    &["cli"],
];

fn layer_of(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&module))
        .unwrap_or_else(|| {
            panic!("module `{module}` is in no layer: add it to LAYERS and docs/architecture.md")
        })
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without comments (doc comments name other modules in
/// links, which is not an import).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every identifier that follows `prefix` in `code` (`crate::world::x` →
/// `world` for prefix `crate::`).
fn names_after(code: &str, prefix: &str) -> BTreeSet<String> {
    code.match_indices(prefix)
        .filter(|(i, _)| {
            !code[..*i]
                .chars()
                .last()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
        })
        .map(|(i, _)| {
            code[i + prefix.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

#[test]
fn no_import_runs_up_a_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let own = layer_of(&module);
        for used in names_after(&code(&std::fs::read_to_string(f).unwrap()), "crate::") {
            if used == module {
                continue;
            }
            let theirs = layer_of(&used);
            if theirs >= own {
                wrong.push(format!(
                    "{} imports crate::{used} (layer {theirs}), but `{module}` is in layer {own}",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that run up a layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_two_files_of_a_folder_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    // folder → file stem → the siblings it imports.
    let mut edges: BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let folder = rel.parent().unwrap().to_path_buf();
        let stem = rel.file_stem().unwrap().to_string_lossy().to_string();
        if folder.as_os_str().is_empty() || stem == "mod" {
            continue;
        }
        let siblings: BTreeSet<String> = std::fs::read_dir(src.join(&folder))
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                p.file_stem().unwrap().to_string_lossy().to_string()
            })
            .filter(|s| s != "mod" && *s != stem)
            .collect();
        let text = code(&std::fs::read_to_string(f).unwrap());
        let crate_prefix = format!("crate::{}::", folder.to_string_lossy().replace('/', "::"));
        let used: BTreeSet<String> = names_after(&text, "super::")
            .into_iter()
            .chain(names_after(&text, &crate_prefix))
            .filter(|n| siblings.contains(n))
            .collect();
        edges.entry(folder).or_default().insert(stem, used);
    }
    let mut cycles = Vec::new();
    for (folder, files) in &edges {
        for (a, uses) in files {
            for b in uses {
                if a < b && files.get(b).is_some_and(|u| u.contains(a)) {
                    cycles.push(format!("{}: {a}.rs and {b}.rs", folder.display()));
                }
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "files that import each other:\n{}",
        cycles.join("\n")
    );
}
