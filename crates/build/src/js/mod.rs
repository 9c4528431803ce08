//! Building a JavaScript or TypeScript agent into a WebAssembly component
//! (`worldline build-js AGENT.{js,ts} [-o agent.wasm]` renders [`build`]'s
//! result).
//!
//! The binary carries the WIT package (`wit/`) and the JS/TS guest SDK
//! (`guest-sdk/js`, imported as `worldline`); both are written into a
//! temporary folder, and a small Node driver bundles the agent with esbuild
//! (TypeScript, and the agent's pure-JavaScript npm dependencies) and builds
//! the bundle with ComponentizeJS against the `agent` world. Node.js and the
//! pinned npm packages come from the user's cache ([`toolchain`]).
//!
//! Why every `u` and `y` regular expression literal is moved to run time (was
//! decisions 0167, 0272): ComponentizeJS's engine rejects a literal with a
//! Unicode property escape (`/\P{ASCII}/u`) while it initializes the component,
//! so a bundle that merely contains one (the MCP TypeScript SDK 1.32.2 through
//! `ajv` → `fast-uri`) could not be built at all. esbuild is told the engine
//! lacks `regexp-unicode-property-escapes` and
//! `regexp-sticky-and-unicode-flags` (the first alone left an escape inside a
//! character class, `/[\p{L}\p{N}]+/gu` in the Vercel AI SDK 7, as a literal),
//! so such literals become `new RegExp(...)` calls, and only a code path that
//! uses one can fail (the MCP client's and the AI SDK's tool loop do not). A
//! shim rewriting the patterns would change their meaning; an engine with full
//! Unicode regular expressions is not in ComponentizeJS 0.23.0.
//!
//! Why `--minify` exists and is off by default (was decision 0274): the engine
//! keeps the source it loads, so the AI SDK's 6.5 MB bundle started with 136
//! MiB of linear memory (past the 128 MiB a case allows by default) and the
//! OpenAI Agents SDK's 11 MB bundle ran the engine out of memory at
//! initialization; minified (whitespace, syntax, local names; `keepNames` keeps
//! names for stacks) both fit. Minifying always would cost small agents
//! readable stack traces for no gain; raising the default memory limit would
//! hide the cost and change every case's limits. The memory reason is
//! superseded by docs/decisions/0315-build-js-source-map-string.md; the flag
//! remains.
//!
//! Why `process.env` is the case's `[env] vars`, read from
//! `wasi:cli/environment` the first time a run touches it (was decision 0316):
//! ComponentizeJS stubs out the engine's own WASI environment, so `process.env`
//! was `{}` and a case's key never reached `new OpenAI()`; reading at first use
//! keeps every run that never looks at `env` free of a new event (reading
//! eagerly would change every JavaScript history) and keeps the build, under
//! Wizer, from calling an import it cannot answer, while a `worldline` import
//! for it would not reach agents on the vendors' packages.

mod editor;
mod toolchain;
#[cfg(test)]
mod types;

pub use editor::{editor_files, write_types};

use crate::tree::write_tree;
use anyhow::{Context as _, Result};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use worldline_case::canon;
use worldline_case::error::InputError;
use worldline_case::wit;

/// The JS/TS guest SDK, by path under the build folder's `sdk/`.
pub(crate) const SDK: &[(&str, &str)] = &[
    (
        "approval.ts",
        include_str!("../../../../guest-sdk/js/approval.ts"),
    ),
    (
        "errors.ts",
        include_str!("../../../../guest-sdk/js/errors.ts"),
    ),
    (
        "files.ts",
        include_str!("../../../../guest-sdk/js/files.ts"),
    ),
    (
        "index.ts",
        include_str!("../../../../guest-sdk/js/index.ts"),
    ),
    ("json.ts", include_str!("../../../../guest-sdk/js/json.ts")),
    (
        "model.ts",
        include_str!("../../../../guest-sdk/js/model.ts"),
    ),
    (
        "runtime.ts",
        include_str!("../../../../guest-sdk/js/runtime.ts"),
    ),
    (
        "tools.ts",
        include_str!("../../../../guest-sdk/js/tools.ts"),
    ),
    (
        "trace.ts",
        include_str!("../../../../guest-sdk/js/trace.ts"),
    ),
    ("user.ts", include_str!("../../../../guest-sdk/js/user.ts")),
    (
        "wit.d.ts",
        include_str!("../../../../guest-sdk/js/wit.d.ts"),
    ),
];

/// The world build-js builds against (written beside the WIT package): the
/// agent's, and `wasi:cli/environment`, which `process.env` reads.
const WORLD: &str = "/// build-js's world: the agent's, and the environment process.env reads.
world agent-js {
  include agent;
  import wasi:cli/environment@0.2.12;
}
";

/// The Node program that bundles and componentizes.
const DRIVER: &str = include_str!("driver.mjs");

/// Extensions of agent files esbuild reads as JavaScript or TypeScript.
const EXTENSIONS: &[&str] = &["js", "mjs", "ts", "mts"];

/// What to build, and with what.
pub struct JsBuild {
    /// The agent's JavaScript or TypeScript file; it exports `run(task)`.
    pub agent: PathBuf,
    /// Where to write the component (default: AGENT with a `.wasm` extension).
    pub output: Option<PathBuf>,
    /// The Node.js executable.
    pub node: PathBuf,
    /// The folder holding the pinned npm packages (default:
    /// `$WORLDLINE_JS_TOOLCHAIN`, else worldline/js in the user's cache).
    pub toolchain: Option<PathBuf>,
    /// Type-check the agent first with `tsc --noEmit`.
    pub typecheck: bool,
    /// Take the bundle's whitespace out (names and lines kept).
    pub minify: bool,
    /// Keep the driver's own stderr (Node's warnings) out of the caller's
    /// stderr, for a caller that prints only JSON.
    pub quiet: bool,
    /// Whether the build is asked to stop (a signal its caller noted): its
    /// Node process is killed, and the build ends with an error.
    pub stopped: fn() -> bool,
}

/// What was built.
pub struct JsBuilt {
    /// Where the component was written.
    pub output: PathBuf,
    /// Its size in bytes.
    pub bytes: usize,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// The versions it was built with.
    pub node: String,
    pub componentize_js: String,
    pub esbuild: String,
}

/// Build `job.agent` into a component at its output; the bundler's or
/// ComponentizeJS's errors are one input error naming each file and line.
pub fn build(job: &JsBuild) -> Result<JsBuilt> {
    check_agent_file(&job.agent)?;
    let agent = std::path::absolute(&job.agent).context("resolving the agent's path")?;
    let agent_dir = agent.parent().unwrap_or(Path::new("/")).to_path_buf();
    let output = job
        .output
        .clone()
        .unwrap_or_else(|| job.agent.with_extension("wasm"));
    // `-o build/agent.wasm` in a fresh project: make the folder now, not
    // fail after the whole build.
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| InputError::new(dir, format!("cannot create the output folder: {e}")))?;
    }
    worldline_case::output::check_file(&output)?;
    worldline_case::output::check_not_input(&output, [job.agent.as_path()], "the agent's source")?;
    let node_version = toolchain::node_version(&job.node)?;
    let tools = toolchain::folder(job.toolchain.as_deref());
    toolchain::check_packages(&tools)?;
    // The `worldline` module's types, for tsc and editors in the agent's folder.
    editor::write_types(&agent_dir)?;
    if job.typecheck {
        editor::typecheck(&job.node, &tools, &agent_dir, job.stopped)?;
    }

    let work = tempfile::Builder::new()
        .prefix("worldline-build-js-")
        .tempdir()
        .context("creating a temporary build folder")?;
    write_tree(&work.path().join("wit"), wit::FILES)?;
    write_tree(&work.path().join("wit"), &[("agent-js.wit", WORLD)])?;
    write_tree(&work.path().join("sdk"), SDK)?;
    write_tree(work.path(), &[("driver.mjs", DRIVER)])?;
    let built = work.path().join("agent.wasm");
    let stem = agent
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("agent");
    let config = json!({
        "toolchain": std::path::absolute(&tools)?,
        "agent": agent,
        "agentDir": agent_dir,
        "sdk": work.path().join("sdk"),
        "wit": work.path().join("wit"),
        "work": work.path(),
        "bundleName": format!("{stem}.js"),
        "out": built,
        "agentPackages": toolchain::agent_packages(&std::path::absolute(&tools)?),
        "minify": job.minify,
    });
    let mut driver = Command::new(&job.node);
    driver
        .arg(work.path().join("driver.mjs"))
        .arg(config.to_string());
    let out = match job.quiet {
        true => crate::helper::output(&mut driver, &job.stopped),
        false => crate::helper::output_showing_stderr(&mut driver, &job.stopped),
    }
    .with_context(|| format!("running {}", job.node.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Option<Value> = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok());
    let result = match result {
        Some(r) if out.status.success() => r,
        _ => {
            anyhow::bail!(
                "the build driver failed ({}):\n{}{}",
                out.status,
                stdout.trim_end(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            )
        }
    };
    if let Some(errors) = result.get("errors").and_then(Value::as_array) {
        let errors: Vec<Value> = errors
            .iter()
            .map(|e| {
                let mut e = e.clone();
                let text = e["text"].as_str().unwrap_or("");
                if let Some(hint) = toolchain::agent_package_hint(text, &tools) {
                    e["text"] = Value::String(format!("{text}: {hint}"));
                }
                e
            })
            .collect();
        return Err(build_error(&job.agent, &agent_dir, &errors).into());
    }
    let bytes = std::fs::read(&built).context("reading the built component")?;
    worldline_case::output::write(&output, &bytes)?;
    Ok(JsBuilt {
        output,
        bytes: bytes.len(),
        sha256: canon::sha256_hex(&bytes),
        node: node_version,
        componentize_js: result["componentize_js"].as_str().unwrap_or("").into(),
        esbuild: result["esbuild"].as_str().unwrap_or("").into(),
    })
}

/// Refuse what is not an existing `.js`/`.mjs`/`.ts`/`.mts` file.
fn check_agent_file(agent: &Path) -> Result<(), InputError> {
    crate::agent_file(
        agent,
        ".js or .ts",
        &["agent.ts", "agent.js", "agent.mts", "agent.mjs"],
    )?;
    let ext = agent.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !EXTENSIONS.contains(&ext) {
        return Err(InputError::new(
            agent,
            "is not a .js, .mjs, .ts or .mts file",
        ));
    }
    Ok(())
}

/// The bundler's or ComponentizeJS's errors as one input error at the first
/// error's file and line, listing every error as `file:line:column: text`.
fn build_error(agent: &Path, agent_dir: &Path, errors: &[Value]) -> InputError {
    let place = |e: &Value| -> (PathBuf, Option<(usize, usize)>) {
        let file = e["file"]
            .as_str()
            .map(|f| {
                let p = Path::new(f);
                let full = agent_dir.join(p);
                // Shown as the user named the agent's folder, when it is under it.
                match (full.strip_prefix(agent_dir), agent.parent()) {
                    (Ok(rel), Some(dir)) => dir.join(rel),
                    _ => full,
                }
            })
            .unwrap_or_else(|| agent.to_path_buf());
        let line = e["line"]
            .as_u64()
            .map(|l| (l as usize, e["column"].as_u64().unwrap_or(1) as usize));
        (file, line)
    };
    let lines: Vec<String> = errors
        .iter()
        .map(|e| {
            let (file, line) = place(e);
            let at = line.map_or(String::new(), |(l, c)| format!(":{l}:{c}"));
            format!(
                "  {}{at}: {}",
                file.display(),
                e["text"].as_str().unwrap_or("")
            )
        })
        .collect();
    let (file, line) = errors.first().map_or((agent.to_path_buf(), None), place);
    let said = lines.join("\n");
    let what = crate::top_level_host_call(&said)
        .unwrap_or_else(|| "the agent does not build (fix what is named)".into());
    InputError {
        file,
        line,
        message: format!("{what}:\n{said}"),
        store: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sdk_file_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .parent()
            .unwrap();
        let mut on_disk: Vec<String> = std::fs::read_dir(root.join("guest-sdk/js"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".ts"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = SDK.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            embedded, on_disk,
            "add the new SDK file to SDK in crates/build/src/js/mod.rs"
        );
    }

    #[test]
    fn agent_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let py = dir.path().join("agent.py");
        std::fs::write(&py, "").unwrap();
        let err = check_agent_file(&py).unwrap_err().to_string();
        assert!(err.contains("is not a .js"), "{err}");
        let err = check_agent_file(&dir.path().join("absent.ts"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no such file"), "{err}");
        let ts = dir.path().join("agent.ts");
        std::fs::write(&ts, "").unwrap();
        assert!(check_agent_file(&ts).is_ok());
    }

    #[test]
    fn build_errors_name_the_first_file_and_line() {
        let errors = vec![
            json!({"file": "lib/util.ts", "line": 3, "column": 7, "text": "Expected \";\""}),
            json!({"file": null, "line": null, "column": null, "text": "second"}),
        ];
        let err = build_error(Path::new("agents/a.ts"), Path::new("/w/agents"), &errors);
        assert_eq!(err.file, Path::new("agents/lib/util.ts"));
        assert_eq!(err.line, Some((3, 7)));
        assert!(
            err.message
                .contains("agents/lib/util.ts:3:7: Expected \";\""),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("agents/a.ts: second"),
            "{}",
            err.message
        );
    }
}
