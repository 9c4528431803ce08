//! The WIT package the host is built from (`wit/`), embedded in the binary:
//! written out for guest builds (`build-python`), and read for the
//! interfaces a world imports, so the import check follows the WIT instead
//! of a list kept by hand.
//!
//! The reading is deliberately small: one package per file, top-level
//! `interface`/`world` blocks at column 0, `use`, `import` and `include`
//! lines inside them, and `@unstable` items left out (the linker does not
//! link them). A test holds it to the host world's known imports.
//!
//! Why a reader of our own (was decision 0055): the import check cannot drift
//! from the WIT (a test pins the resulting list), and a reader of the subset of
//! WIT the repository uses is a few dozen lines, where `wit-parser` would bring
//! a second copy of that crate (the bindgen macro's) into the runtime build.

use std::collections::{BTreeMap, BTreeSet};

/// The WIT files, by path under `wit/`.
pub const FILES: &[(&str, &str)] = &[
    ("agent.wit", include_str!("../../../wit/agent.wit")),
    (
        "service/service.wit",
        include_str!("../../../wit/service/service.wit"),
    ),
    (
        "conversation.wit",
        include_str!("../../../wit/conversation.wit"),
    ),
    ("deps/cli.wit", include_str!("../../../wit/deps/cli.wit")),
    (
        "deps/clocks.wit",
        include_str!("../../../wit/deps/clocks.wit"),
    ),
    (
        "deps/filesystem.wit",
        include_str!("../../../wit/deps/filesystem.wit"),
    ),
    ("deps/http.wit", include_str!("../../../wit/deps/http.wit")),
    ("deps/io.wit", include_str!("../../../wit/deps/io.wit")),
    (
        "deps/random.wit",
        include_str!("../../../wit/deps/random.wit"),
    ),
    (
        "deps/sockets.wit",
        include_str!("../../../wit/deps/sockets.wit"),
    ),
];

/// Interfaces and worlds by qualified name (`ns:pkg/name@version`): the
/// interfaces an interface `use`s, and a world's `import`ed interfaces and
/// `include`d worlds.
#[derive(Default)]
struct Items {
    uses: BTreeMap<String, Vec<String>>,
    imports: BTreeMap<String, Vec<String>>,
    includes: BTreeMap<String, Vec<String>>,
}

/// `ns:pkg/name@version` of `target` as written in package `package`
/// (`ns:pkg@version`): a bare name is the package's own.
fn qualify(package: &str, target: &str) -> String {
    if target.contains(':') {
        return target.to_string();
    }
    match package.split_once('@') {
        Some((pkg, version)) => format!("{pkg}/{target}@{version}"),
        None => format!("{package}/{target}"),
    }
}

fn read(files: &[(&str, &str)]) -> Items {
    let mut items = Items::default();
    for (_, text) in files {
        let mut package = String::new();
        let mut block: Option<(bool, String)> = None; // (is_world, qualified name)
        let mut unstable = false;
        for line in text.lines() {
            let t = line.trim();
            if let Some(p) = line.strip_prefix("package ") {
                package = p.trim_end_matches(';').trim().to_string();
            } else if let Some(name) = line.strip_prefix("interface ") {
                let name = name.trim_end_matches('{').trim();
                block = Some((false, qualify(&package, name)));
            } else if let Some(name) = line.strip_prefix("world ") {
                let name = name.trim_end_matches('{').trim();
                block = Some((true, qualify(&package, name)));
            } else if line.starts_with('}') {
                block = None;
            } else if t.starts_with("@unstable") {
                unstable = true;
                continue;
            } else if let Some((is_world, name)) = &block
                && !unstable
            {
                let target = |rest: &str| {
                    let rest = rest.trim_end_matches(';').trim();
                    let rest = rest.split_once(".{").map_or(rest, |(t, _)| t);
                    qualify(&package, rest)
                };
                if let Some(rest) = t.strip_prefix("use ") {
                    items
                        .uses
                        .entry(name.clone())
                        .or_default()
                        .push(target(rest));
                } else if *is_world
                    && let Some(rest) = t.strip_prefix("import ")
                    && !rest.contains(": ")
                {
                    items
                        .imports
                        .entry(name.clone())
                        .or_default()
                        .push(target(rest));
                } else if *is_world && let Some(rest) = t.strip_prefix("include ") {
                    items
                        .includes
                        .entry(name.clone())
                        .or_default()
                        .push(target(rest));
                }
            }
            if !t.starts_with('@') && !t.is_empty() && !t.starts_with("///") {
                unstable = false;
            }
        }
    }
    items
}

/// Every interface `world` (`ns:pkg/world@version`) imports: its own
/// imports, those of the worlds it includes, and what they `use`.
pub fn world_imports(world: &str) -> BTreeSet<String> {
    let items = read(FILES);
    let mut worlds = vec![world.to_string()];
    let mut todo = Vec::new();
    while let Some(w) = worlds.pop() {
        todo.extend(items.imports.get(&w).into_iter().flatten().cloned());
        worlds.extend(items.includes.get(&w).into_iter().flatten().cloned());
    }
    let mut seen = BTreeSet::new();
    while let Some(iface) = todo.pop() {
        if seen.insert(iface.clone()) {
            todo.extend(items.uses.get(&iface).into_iter().flatten().cloned());
        }
    }
    seen
}
