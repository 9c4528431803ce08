//! The `worldline` module for tsc and editors in an agent's folder: the
//! SDK's sources in `.worldline-sdk/` (refreshed when they differ from the
//! binary's) and, when the folder has none, a `tsconfig.json` that maps
//! `worldline` to them; and `build-js --typecheck`, which runs the pinned
//! TypeScript's `tsc --noEmit` on that configuration and reports every
//! error as `file:line:column`.

use anyhow::{Context as _, Result};
use std::path::Path;
use std::process::Command;
use worldline_case::error::InputError;

/// The SDK's folder inside the agent's.
pub(crate) const SDK_DIR: &str = ".worldline-sdk";

/// The TypeScript `--typecheck` runs, at the version worldline is tested with.
pub(crate) const TYPESCRIPT: (&str, &str) = ("typescript", "7.0.2");

/// The configuration written when the agent's folder has none: the SDK's
/// compiler options, `worldline` mapped to the SDK, the agent's files.
const TSCONFIG: &str = r#"{
  "//": "Written by worldline build-js: `worldline` resolves to the SDK in .worldline-sdk/ (refreshed by every build).",
  "compilerOptions": {
    "target": "es2022",
    "module": "esnext",
    "moduleResolution": "bundler",
    "lib": ["es2022", "dom"],
    "strict": true,
    "noEmit": true,
    "types": [],
    "paths": { "worldline": ["./.worldline-sdk/index.ts"] }
  },
  "include": ["*.ts", "*.mts", ".worldline-sdk/wit.d.ts"]
}
"#;

/// What [`write_types`] writes, by path inside the agent's folder: the
/// SDK's sources and the `tsconfig.json` (for `init`, which writes each
/// new, over nothing).
pub fn editor_files() -> Vec<(std::path::PathBuf, &'static str)> {
    let sdk = (super::SDK.iter()).map(|(name, text)| (Path::new(SDK_DIR).join(name), *text));
    sdk.chain([(std::path::PathBuf::from("tsconfig.json"), TSCONFIG)])
        .collect()
}

/// Write the SDK's sources into `agent_dir/.worldline-sdk/` (only the files
/// that differ) and a `tsconfig.json` when there is none.
pub fn write_types(agent_dir: &Path) -> Result<()> {
    let dir = agent_dir.join(SDK_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text) in super::SDK {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).is_ok_and(|t| t == *text) {
            continue;
        }
        worldline_case::output::write(&path, text.as_bytes())?;
    }
    let config = agent_dir.join("tsconfig.json");
    if std::fs::symlink_metadata(&config).is_err() {
        worldline_case::output::write_new(&config, TSCONFIG.as_bytes(), "tsconfig.json")?;
    }
    Ok(())
}

/// The configuration `--typecheck` runs: the agent folder's own, extended
/// with `paths` that map each package of `modules` (the toolchain's
/// `agent-packages/node_modules`) the agent's folder lacks as build-js
/// finds it: the package, and each subpath its `exports` names (tsc skips
/// `exports` for a mapped path), or else any file of it; and `worldline`
/// to the SDK, as the folder's own configuration maps it. The packages'
/// declarations are not checked (`skipLibCheck`).
fn check_config(agent_dir: &Path, modules: &Path) -> String {
    let mut paths = serde_json::Map::new();
    let sdk = agent_dir.join(SDK_DIR).join("index.ts");
    paths.insert("worldline".into(), serde_json::json!([sdk]));
    let mut packages = Vec::new();
    for entry in std::fs::read_dir(modules).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        match name.strip_prefix('@') {
            Some(_) => {
                for inner in std::fs::read_dir(entry.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                {
                    packages.push(format!("{name}/{}", inner.file_name().to_string_lossy()));
                }
            }
            None if !name.starts_with('.') => packages.push(name),
            None => {}
        }
    }
    packages.sort();
    for package in packages {
        if agent_dir.join("node_modules").join(&package).exists() {
            continue;
        }
        let dir = modules.join(&package);
        paths.insert(package.clone(), serde_json::json!([dir]));
        let manifest = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
        let exports = serde_json::from_str::<serde_json::Value>(&manifest).ok();
        let subpaths: Vec<(String, String)> = exports
            .as_ref()
            .and_then(|m| m["exports"].as_object())
            .into_iter()
            .flatten()
            .filter_map(|(key, target)| {
                let sub = key.strip_prefix("./").filter(|s| !s.is_empty())?;
                // A pattern's `types` may add `.d.ts` to a specifier that
                // ends in `.js` already; its `import` file is what tsc
                // finds the declarations beside.
                let order: &[&str] = match sub.contains('*') {
                    true => &["import", "default", "types"],
                    false => &["types", "import", "default"],
                };
                let file = export_target(target, order)?.trim_start_matches("./");
                Some((sub.to_string(), file.to_string()))
            })
            .collect();
        if subpaths.is_empty() {
            paths.insert(format!("{package}/*"), serde_json::json!([dir.join("*")]));
        }
        for (sub, target) in subpaths {
            paths.insert(
                format!("{package}/{sub}"),
                serde_json::json!([dir.join(target)]),
            );
        }
    }
    let config = serde_json::json!({
        "extends": agent_dir.join("tsconfig.json"),
        // The packages' own declarations are theirs to check: built for
        // Node, some name its modules (`http`, `ws`), which the sandbox's
        // agent never reaches.
        "compilerOptions": {"paths": paths, "skipLibCheck": true},
    });
    serde_json::to_string_pretty(&config).expect("a configuration serializes")
}

/// The file an `exports` entry gives under the first of `order`'s
/// conditions it has (conditions nested), or the entry itself.
fn export_target<'v>(target: &'v serde_json::Value, order: &[&str]) -> Option<&'v str> {
    match target {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Object(m) => order
            .iter()
            .find_map(|k| m.get(*k).and_then(|t| export_target(t, order))),
        _ => None,
    }
}

/// `tsc --noEmit -p agent_dir` with the toolchain's TypeScript; every
/// error as `file:line:column: message` in one input error.
pub(crate) fn typecheck(
    node: &Path,
    toolchain: &Path,
    agent_dir: &Path,
    stopped: fn() -> bool,
) -> Result<()> {
    let (name, version) = TYPESCRIPT;
    let tsc = toolchain.join("node_modules").join(name).join("bin/tsc");
    let installed = std::fs::read_to_string(
        toolchain
            .join("node_modules")
            .join(name)
            .join("package.json"),
    )
    .ok()
    .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    .and_then(|v| v["version"].as_str().map(str::to_string));
    if installed.as_deref() != Some(version) || !tsc.is_file() {
        return Err(InputError::new(
            toolchain,
            format!(
                "--typecheck needs TypeScript {version} there; install it with `npm install --prefix {} {name}@{version}`",
                toolchain.display()
            ),
        )
        .into());
    }
    // The pinned SDKs build-js takes from the toolchain, found by tsc too
    // (it has no NODE_PATH: `openai` was "Cannot find module").
    let work = tempfile::Builder::new()
        .prefix("worldline-typecheck-")
        .tempdir()
        .context("creating a temporary folder for tsc's configuration")?;
    let config = match super::toolchain::agent_packages(toolchain) {
        Some(modules) => {
            let config = work.path().join("tsconfig.json");
            worldline_case::output::write(&config, check_config(agent_dir, &modules).as_bytes())?;
            config
        }
        None => agent_dir.to_path_buf(),
    };
    let mut tsc_run = Command::new(node);
    tsc_run
        .arg(&tsc)
        .args(["--noEmit", "--pretty", "false", "-p"])
        .arg(&config)
        .current_dir(agent_dir);
    let out = crate::helper::output(&mut tsc_run, &stopped)
        .with_context(|| format!("running {} {}", node.display(), tsc.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let errors: Vec<InputError> = text.lines().filter_map(|l| parse(l, agent_dir)).collect();
    let Some(first) = errors.first() else {
        anyhow::bail!("tsc failed ({}):\n{}", out.status, text.trim_end());
    };
    let listed: Vec<String> = errors.iter().map(|e| format!("  {e}")).collect();
    Err(InputError {
        file: first.file.clone(),
        line: first.line,
        message: format!(
            "the agent does not type-check ({} error(s)):\n{}",
            errors.len(),
            listed.join("\n")
        ),
        store: false,
    }
    .into())
}

/// One line of tsc's plain output, `file(line,col): error TS2322: text`,
/// as an error at its place (the file relative to `dir`).
fn parse(line: &str, dir: &Path) -> Option<InputError> {
    let (head, message) = line.split_once(": error ")?;
    let (file, at) = match head.rsplit_once('(') {
        Some((file, place)) => {
            let (l, c) = place.strip_suffix(')')?.split_once(',')?;
            (file, Some((l.parse().ok()?, c.parse().ok()?)))
        }
        None => (head, None),
    };
    Some(InputError {
        file: dir.join(file),
        line: at,
        message: message.to_string(),
        store: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_lines_become_places() {
        let dir = Path::new("/a");
        let e = parse(
            "agent.ts(4,7): error TS2322: Type 'number' is not assignable to type 'string'.",
            dir,
        )
        .unwrap();
        assert_eq!(
            e.to_string(),
            "/a/agent.ts:4:7: TS2322: Type 'number' is not assignable to type 'string'."
        );
        assert_eq!(parse("  the next line of a message", dir), None);
    }
}
