//! What `build-js` needs besides the binary: Node.js and the pinned npm
//! packages (esbuild, ComponentizeJS), installed in one folder of the
//! user's cache that `build-js` finds by itself. Anything missing or of
//! another version is an input error naming the command that installs it.
//!
//! Beside them, in `agent-packages/`, the agent SDKs worldline is tested
//! with ([`AGENT_PACKAGES`]): a package an agent imports and its own folder
//! lacks is looked up there, so the examples and tests build without an
//! `npm install` of their own (`tests/js-packages.sh` installs both sets).
//!
//! Why the pinned agent SDKs live in this cache too, found as `NODE_PATH` (was
//! decision 0271): `tests/js-packages.sh` installs the agent SDKs worldline is
//! tested with (versions listed here, a unit test checks the script against
//! them) into `$WORLDLINE_JS_TOOLCHAIN/agent-packages` once, and `build-js`
//! gives esbuild that folder's `node_modules` as `nodePaths`. The examples and
//! end-to-end tests then build with no `npm install` of their own, a fresh
//! machine installs each set once, and an agent that brings its own
//! `node_modules` still gets its own versions first. A `package.json` and
//! `node_modules` per example would be installed by each run (230 MB each);
//! installing into the toolchain's own prefix would mix the bundler's
//! dependencies with the SDKs' in one lock file, and a version conflict between
//! them would break build-js itself.

use std::path::{Path, PathBuf};
use std::process::Command;
use worldline_case::error::InputError;

/// The npm packages `build-js` runs, at the versions worldline is tested with.
pub(super) const PACKAGES: &[(&str, &str)] = &[
    ("@bytecodealliance/componentize-js", "0.23.0"),
    ("esbuild", "0.28.2"),
];

/// The agent SDKs worldline is tested with, installed under
/// [`agent_packages`] (the examples in `examples/js-*` use them).
pub(super) const AGENT_PACKAGES: &[(&str, &str)] = &[
    ("@ai-sdk/openai", "4.0.118"),
    ("@anthropic-ai/sdk", "1.10.0"),
    ("@modelcontextprotocol/sdk", "1.32.2"),
    ("@openai/agents", "0.20.0"),
    ("ai", "7.0.173"),
    ("openai", "5.23.2"),
    ("zod", "4.6.7"),
];

/// Oldest Node.js major version ComponentizeJS runs on.
const NODE_MAJOR: u64 = 20;

/// The folder holding the packages: `--toolchain`, else
/// `$WORLDLINE_JS_TOOLCHAIN`, else `worldline/js` under the user's cache
/// (`$XDG_CACHE_HOME`, or `~/.cache`).
pub(super) fn folder(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    if let Some(dir) = std::env::var_os("WORLDLINE_JS_TOOLCHAIN").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("worldline").join("js")
}

/// Where the pinned agent SDKs of the toolchain folder `dir` live: its
/// `agent-packages/node_modules`, when it exists.
pub(super) fn agent_packages(dir: &Path) -> Option<PathBuf> {
    let modules = dir.join("agent-packages").join("node_modules");
    modules.is_dir().then_some(modules)
}

/// For an esbuild error that an import of one of [`AGENT_PACKAGES`] did
/// not resolve: where build-js looks for it and the command that puts it
/// there (toolchain folder `dir`).
pub(super) fn agent_package_hint(error: &str, dir: &Path) -> Option<String> {
    let name = error
        .strip_prefix("Could not resolve \"")?
        .split('"')
        .next()?;
    let package = match name.split('/').collect::<Vec<_>>().as_slice() {
        [scope, pkg, ..] if scope.starts_with('@') => format!("{scope}/{pkg}"),
        [pkg, ..] => pkg.to_string(),
        [] => return None,
    };
    let (_, version) = AGENT_PACKAGES.iter().find(|(n, _)| *n == package)?;
    let prefix = dir.join("agent-packages");
    Some(format!(
        "install it next to the agent (`npm install {package}@{version}`), or the pinned agent SDKs where build-js finds them with `npm install --prefix {} {}`",
        shell_word(&prefix.display().to_string()),
        AGENT_PACKAGES
            .iter()
            .map(|(n, v)| format!("{n}@{v}"))
            .collect::<Vec<_>>()
            .join(" ")
    ))
}

/// The command that installs the pinned packages into `dir`.
pub(super) fn install_command(dir: &Path) -> String {
    let pkgs: Vec<String> = PACKAGES.iter().map(|(n, v)| format!("{n}@{v}")).collect();
    format!(
        "npm install --prefix {} {}",
        shell_word(&dir.display().to_string()),
        pkgs.join(" ")
    )
}

fn shell_word(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-~+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The installed versions of [`PACKAGES`] in `dir`, or an error naming the
/// install command when one is missing or of another version.
pub(super) fn check_packages(dir: &Path) -> Result<(), InputError> {
    for (name, want) in PACKAGES {
        let manifest = dir.join("node_modules").join(name).join("package.json");
        let version = std::fs::read_to_string(&manifest).ok().and_then(|t| {
            serde_json::from_str::<serde_json::Value>(&t)
                .ok()?
                .get("version")?
                .as_str()
                .map(str::to_string)
        });
        let problem = match version {
            None => format!("{name} is not installed there"),
            Some(v) if v != *want => format!("{name} there is {v}, not the tested {want}"),
            Some(_) => continue,
        };
        return Err(InputError::new(
            dir,
            format!(
                "{problem}; build-js needs it: install with `{}`",
                install_command(dir)
            ),
        ));
    }
    Ok(())
}

/// `node --version` (`v20.20.2`), or an error saying how to install Node.js.
pub(super) fn node_version(node: &Path) -> Result<String, InputError> {
    let hint = format!(
        "build-js runs Node.js {NODE_MAJOR} or later: install it (`apt-get install nodejs npm`, or from https://nodejs.org) or pass --node"
    );
    let out = Command::new(node)
        .arg("--version")
        .output()
        .map_err(|e| InputError::new(node, format!("cannot run node ({e}); {hint}")))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let major = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse::<u64>().ok());
    match major {
        Some(m) if out.status.success() && m >= NODE_MAJOR => Ok(version),
        _ => Err(InputError::new(
            node,
            format!("is Node.js `{version}`; {hint}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_install_command_names_the_pinned_versions_and_the_folder() {
        let cmd = install_command(Path::new("/home/a b/.cache/worldline/js"));
        assert_eq!(
            cmd,
            "npm install --prefix '/home/a b/.cache/worldline/js' @bytecodealliance/componentize-js@0.23.0 esbuild@0.28.2"
        );
    }

    #[test]
    fn missing_and_other_versions_are_refused_with_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let err = check_packages(dir.path()).unwrap_err().to_string();
        assert!(err.contains("componentize-js is not installed"), "{err}");
        assert!(err.contains("npm install --prefix"), "{err}");
        for (name, version) in [
            ("@bytecodealliance/componentize-js", "0.23.0"),
            ("esbuild", "0.1.0"),
        ] {
            let d = dir.path().join("node_modules").join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("package.json"),
                format!("{{\"version\":\"{version}\"}}"),
            )
            .unwrap();
        }
        let err = check_packages(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("esbuild there is 0.1.0, not the tested 0.28.2"),
            "{err}"
        );
    }

    #[test]
    fn the_install_script_pins_the_same_versions() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .parent()
            .unwrap();
        let script = std::fs::read_to_string(root.join("tests/js-packages.sh")).unwrap();
        let list = |var: &str| -> Vec<String> {
            let line = script
                .lines()
                .find(|l| l.starts_with(&format!("{var}=")))
                .unwrap_or_else(|| panic!("{var} is not in tests/js-packages.sh"));
            let mut pkgs: Vec<String> = line[var.len() + 1..]
                .trim_matches('"')
                .split_whitespace()
                .map(String::from)
                .collect();
            pkgs.sort();
            pkgs
        };
        let pinned = |pkgs: &[(&str, &str)]| -> Vec<String> {
            let mut v: Vec<String> = pkgs.iter().map(|(n, v)| format!("{n}@{v}")).collect();
            v.sort();
            v
        };
        let mut toolchain = PACKAGES.to_vec();
        toolchain.push(super::super::editor::TYPESCRIPT);
        assert_eq!(list("JS_TOOLCHAIN_PACKAGES"), pinned(&toolchain));
        assert_eq!(list("JS_AGENT_PACKAGES"), pinned(AGENT_PACKAGES));
    }

    #[test]
    fn an_unresolved_agent_sdk_names_where_to_install_it() {
        let dir = Path::new("/c/js");
        let hint = agent_package_hint(
            "Could not resolve \"@modelcontextprotocol/sdk/client/index.js\"",
            dir,
        )
        .unwrap();
        assert!(
            hint.contains("npm install @modelcontextprotocol/sdk@1.32.2"),
            "{hint}"
        );
        assert!(hint.contains("--prefix /c/js/agent-packages"), "{hint}");
        assert_eq!(
            agent_package_hint("Could not resolve \"left-pad\"", dir),
            None
        );
        assert_eq!(agent_package_hint("Expected \";\"", dir), None);
    }

    #[test]
    fn agent_packages_are_found_beside_the_toolchain_when_installed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(agent_packages(dir.path()), None);
        let modules = dir.path().join("agent-packages/node_modules");
        std::fs::create_dir_all(&modules).unwrap();
        assert_eq!(agent_packages(dir.path()), Some(modules));
    }

    #[test]
    fn a_missing_node_names_the_install() {
        let err = node_version(Path::new("/nonexistent/node"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("install it"), "{err}");
    }
}
