//! The layering rules of docs/architecture.md, checked on the source of
//! every crate of the workspace: a module imports only from layers below
//! its own (never up the pipeline, never a module beside it in the same
//! layer), no two files of one folder import each other, and each crate
//! holds a run of consecutive layers, in the order the crates depend on
//! each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first; modules in one entry share a layer. Keep in
/// step with "Layers" in docs/architecture.md.
const LAYERS: &[&[&str]] = &[
    &["pgstore"],
    &["shown"],
    &[
        "canon",
        "error",
        "error_kind",
        "path",
        "time",
        "parallel",
        "ahead",
        "partition",
        "durable",
        "file_identity",
        "bounded",
        "wide_integer",
        "new_rules",
        "wit",
    ],
    &["toml_tokens"],
    &["output"],
    &["prices", "native_agent", "sections"],
    &["project"],
    &["world"],
    &["case"],
    &["check"],
    &["protocol"],
    &["log"],
    &["object_codec"],
    &["redact"],
    &["mediate"],
    &["sandbox"],
    &["store"],
    &["index"],
    &["retention"],
    &["campaigns"],
    &["agent_file"],
    &["grade"],
    &["traceback"],
    &["run"],
    &["native"],
    &["replay"],
    &["lanes"],
    &["verify", "validate"],
    &["fork"],
    &["fuzz"],
    &["suite"],
    &["export"],
    &["regress"],
    &["ops"],
    &["otel"],
    &["report"],
    &["ui"],
    &["build"],
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

/// The workspace's crates, lowest first, each with its source folder and
/// the module it is when the whole crate is one module (its files sit at
/// `src/`); the others hold their modules as folders and files of `src/`.
const CRATES: &[(&str, Option<&str>)] = &[
    ("crates/pgstore", Some("pgstore")),
    ("crates/case", None),
    ("crates/protocol", Some("protocol")),
    ("crates/log", None),
    ("crates/runtime", None),
    ("crates/store", None),
    ("crates/engine", None),
    ("crates/otel", Some("otel")),
    ("crates/report", Some("report")),
    ("crates/ui", Some("ui")),
    ("crates/build", Some("build")),
    ("host", None),
];

/// One source file: where it is, and where it would be in a single crate
/// holding every module (`crates/ui/src/run.rs` → `ui/run.rs`).
struct Source {
    file: PathBuf,
    rel: PathBuf,
    krate: usize,
}

fn sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut out = Vec::new();
    for (krate, (dir, single)) in CRATES.iter().enumerate() {
        let src = root.join(dir).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let inner = file.strip_prefix(&src).unwrap().to_path_buf();
            let rel = match single {
                Some(module) if inner == Path::new("lib.rs") => Path::new(module).join("mod.rs"),
                Some(module) => Path::new(module).join(inner),
                None => inner,
            };
            out.push(Source { file, rel, krate });
        }
    }
    out
}

/// The module a file belongs to (`world/tools.rs` → `world`), or `None`
/// for a crate's root file.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let module = first.trim_end_matches(".rs").to_string();
    (module != "lib" && module != "main").then_some(module)
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

/// The modules a file's code names: `crate::world::x` and
/// `worldline_case::world::x` → `world`; `worldline_report::x` → `report`
/// (a crate that is one module, whose own `crate::x` is inside that module).
fn imported_modules(code: &str, krate: usize) -> BTreeSet<String> {
    let mut used = match CRATES[krate].1 {
        Some(module) => BTreeSet::from([module.to_string()]),
        None => names_after(code, "crate::"),
    };
    for (dir, single) in CRATES {
        let name = format!("worldline_{}::", dir.trim_start_matches("crates/"));
        match single {
            Some(module) if code.contains(&name) => {
                used.insert(module.to_string());
            }
            Some(_) => {}
            None => used.extend(names_after(code, &name)),
        }
    }
    used
}

#[test]
fn no_import_runs_up_a_layer() {
    let mut wrong = Vec::new();
    for source in sources() {
        let Some(module) = module_of(&source.rel) else {
            continue;
        };
        let own = layer_of(&module);
        for used in imported_modules(
            &code(&std::fs::read_to_string(&source.file).unwrap()),
            source.krate,
        ) {
            if used == module {
                continue;
            }
            let theirs = layer_of(&used);
            if theirs >= own {
                wrong.push(format!(
                    "{} imports crate::{used} (layer {theirs}), but `{module}` is in layer {own}",
                    source.file.display()
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
fn each_crate_holds_consecutive_layers_in_crate_order() {
    // layer → the crates holding a module of it.
    let mut crates_of: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for source in sources() {
        if let Some(module) = module_of(&source.rel) {
            crates_of
                .entry(layer_of(&module))
                .or_default()
                .insert(source.krate);
        }
    }
    let mut last = 0;
    for (layer, crates) in &crates_of {
        assert_eq!(
            crates.len(),
            1,
            "layer {layer} ({:?}) is split over crates {crates:?}",
            LAYERS[*layer]
        );
        let krate = *crates.first().unwrap();
        assert!(
            krate >= last,
            "layer {layer} ({:?}) is in {}, below a lower layer's crate {}",
            LAYERS[*layer],
            CRATES[krate].0,
            CRATES[last].0
        );
        last = krate;
    }
}

#[test]
fn no_two_files_of_a_folder_import_each_other() {
    // folder → file stem → the siblings it imports.
    let mut edges: BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for source in sources() {
        let folder = source.rel.parent().unwrap().to_path_buf();
        let stem = source
            .rel
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .to_string();
        if folder.as_os_str().is_empty() || stem == "mod" {
            continue;
        }
        let siblings: BTreeSet<String> = std::fs::read_dir(source.file.parent().unwrap())
            .unwrap()
            .map(|e| {
                let p = e.unwrap().path();
                p.file_stem().unwrap().to_string_lossy().to_string()
            })
            .filter(|s| s != "mod" && s != "lib" && *s != stem)
            .collect();
        let text = code(&std::fs::read_to_string(&source.file).unwrap());
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

/// docs/architecture.md's crate table, as (crate, the crates it says it
/// depends on) in the table's order; `all` names every crate above it.
fn crate_table() -> Vec<(String, BTreeSet<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let table = doc
        .split("### Crates")
        .nth(1)
        .expect("docs/architecture.md has a `### Crates` section");
    let mut rows: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in table.lines().skip_while(|l| !l.starts_with('|')) {
        let Some(row) = line.strip_prefix("| `worldline") else {
            if line.starts_with('|') {
                continue;
            }
            break;
        };
        let cells: Vec<&str> = row.split(" | ").collect();
        let name = format!("worldline{}", cells[0].trim_end_matches('`'));
        let deps = cells.last().unwrap().trim_end_matches('|').trim();
        let deps = match deps {
            "—" => BTreeSet::new(),
            "all" => rows.iter().map(|(n, _)| n.clone()).collect(),
            list => list
                .split(", ")
                .map(|d| format!("worldline-{}", d.trim()))
                .collect(),
        };
        rows.push((name, deps));
    }
    rows
}

#[test]
fn the_crate_table_is_cargo_metadata_in_dependency_order() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut actual = BTreeMap::new();
    for package in meta["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        if !name.starts_with("worldline") || package["source"].is_string() {
            continue;
        }
        // The crate's own dependencies on the workspace's crates, as built
        // into it (not its tests' or build script's).
        let deps: BTreeSet<String> = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null() && d["path"].is_string())
            .map(|d| d["name"].as_str().unwrap().to_string())
            .collect();
        actual.insert(name.to_string(), deps);
    }
    // Guests and examples are crates of the workspace too, but not of the
    // harness: the table lists the harness's crates, the ones under crates/ and host/.
    actual.retain(|name, _| CRATES.iter().any(|(dir, _)| crate_name(dir) == *name));
    let table = crate_table();
    let documented: BTreeMap<String, BTreeSet<String>> = table.iter().cloned().collect();
    assert_eq!(
        documented, actual,
        "docs/architecture.md's crate table (left) must say what each crate's Cargo.toml depends on (right)"
    );
    for (at, (name, deps)) in table.iter().enumerate() {
        for dep in deps {
            let below = table[..at].iter().any(|(n, _)| n == dep);
            assert!(
                below,
                "{name} depends on {dep}, which the table lists above it"
            );
        }
    }
}

/// The package name of a crate folder of [`CRATES`] (`crates/ui` → `worldline-ui`).
fn crate_name(dir: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
    let doc: toml::Table = manifest.parse().unwrap();
    doc["package"]["name"].as_str().unwrap().to_string()
}

/// What reads runs or builds guests compiles no WebAssembly runtime: the
/// crates below `worldline-runtime` and beside it (otel, build) have no
/// path to wasmtime in their normal dependencies (issue 44's "`cargo build
/// -p worldline-otel` does not compile wasmtime"; decisions 0317, 0323).
#[test]
fn only_the_runtime_and_what_stands_on_it_compile_wasmtime() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for krate in [
        "worldline-case",
        "worldline-protocol",
        "worldline-log",
        "worldline-otel",
        "worldline-build",
    ] {
        let out = std::process::Command::new(&cargo)
            .args([
                "tree",
                "-p",
                krate,
                "-e",
                "normal",
                "--offline",
                "--prefix",
                "none",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo tree runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tree = String::from_utf8_lossy(&out.stdout);
        let runtime: Vec<&str> = tree
            .lines()
            .filter(|l| l.starts_with("wasmtime ") || l.starts_with("cranelift"))
            .collect();
        assert!(
            runtime.is_empty(),
            "{krate} compiles a WebAssembly runtime: {runtime:?}"
        );
    }
}
