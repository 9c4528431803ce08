//! Building a Python agent or world service into a WebAssembly component
//! with componentize-py (`worldline build-python AGENT.py [-o agent.wasm]`
//! renders [`build`]'s result and its [`Progress`]).
//!
//! The binary carries the WIT package (`wit/`) and the Python guest SDK
//! (`guest-sdk/python/worldline_guest`), so a Python user needs only
//! componentize-py: both are written into a temporary folder, and
//! componentize-py builds the agent's module against the `agent-host` world
//! with CPython inside. `--venv` and `--requirements` bundle the agent's
//! pure-Python dependencies ([`deps`]). A build of sources built before
//! gives back the same bytes ([`reuse`]).
//!
//! Why an agent module may export a plain top-level `run(task)` instead of
//! `@worldline_guest.agent` (was decision 0282): an agent written against the
//! vendors' HTTP APIs (examples/python-http-agent) should need no worldline
//! import, as the Rust and JS agents need none; the decorator would be its only
//! one, and nobody asked for another name than `run` (an `--entry` flag).

mod deps;
mod reuse;

use crate::tree::write_tree;
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use worldline_case::canon;
use worldline_case::error::InputError;
use worldline_case::wit;

/// The componentize-py release worldline is tested with (`.ci/run` installs it).
pub(crate) const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// What to run when componentize-py is missing.
fn install_hint() -> String {
    format!("install it with `pip install componentize-py=={COMPONENTIZE_PY_VERSION}`")
}

/// The Python guest SDK, by path under the build folder's `sdk/`.
pub const SDK: &[(&str, &str)] = &[
    (
        "worldline_guest/__init__.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/__init__.py"),
    ),
    (
        "worldline_guest/approval.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/approval.py"),
    ),
    (
        "worldline_guest/errors.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/errors.py"),
    ),
    (
        "worldline_guest/files.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/files.py"),
    ),
    (
        "worldline_guest/cpu_clocks.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/cpu_clocks.py"),
    ),
    (
        "worldline_guest/model.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/model.py"),
    ),
    (
        "worldline_guest/tools.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/tools.py"),
    ),
    (
        "worldline_guest/snapshot.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/snapshot.py"),
    ),
    (
        "worldline_guest/asyncio_standin.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/asyncio_standin.py"),
    ),
    (
        "worldline_guest/ssl_standin.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/ssl_standin.py"),
    ),
    (
        "worldline_guest/stdlib_http.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/stdlib_http.py"),
    ),
    (
        "worldline_guest/httpx_transport.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/httpx_transport.py"),
    ),
    (
        "worldline_guest/wasi_http.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/wasi_http.py"),
    ),
    (
        "worldline_guest/trace.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/trace.py"),
    ),
    (
        "worldline_guest/user.py",
        include_str!("../../../../guest-sdk/python/worldline_guest/user.py"),
    ),
    (
        "worldline_service/__init__.py",
        include_str!("../../../../guest-sdk/python/worldline_service/__init__.py"),
    ),
];

/// The module componentize-py is asked to build: it makes `http.client`,
/// `urllib` and httpx speak `wasi:http`, gives `ssl` a stand-in when the
/// sandbox's Python has none (`worldline_guest/ssl_standin.py`), imports
/// the agent's module with the network switched off (see
/// `worldline_guest/snapshot.py`), and takes the `WitWorld` that
/// `@wl.agent` defined there, or exports its plain `run`.
const MAIN: &str = "worldline_main";

fn main_module(agent_module: &str, service: bool) -> String {
    if service {
        // A service imports nothing of the agent world (no network to
        // switch off either: it never had sockets).
        return format!(
            "\"\"\"Written by `worldline build-python --service`: the service module.\"\"\"\n\n\
             from {agent_module} import WitWorld  # noqa: F401\n"
        );
    }
    format!(
        "\"\"\"Written by `worldline build-python`: the agent module, imported offline,\n\
         with http.client, urllib and httpx or httpx2 (when bundled) speaking wasi:http.\"\"\"\n\n\
         import worldline_guest\n\
         from worldline_guest import asyncio_standin, httpx_transport, ssl_standin, stdlib_http\n\
         from worldline_guest.snapshot import offline\n\n\
         with offline():\n    \
             stdlib_http.install()\n    \
             ssl_standin.install()\n    \
             asyncio_standin.install()\n    \
             httpx_transport.install()\n    \
             import {agent_module} as _agent\n\n\
         WitWorld = worldline_guest.exported(_agent)\n"
    )
}

/// Module names the build itself provides; an agent module may not take them.
const RESERVED: &[&str] = &[
    MAIN,
    "wit_world",
    "worldline_guest",
    "worldline_service",
    "componentize_py_types",
    "componentize_py_runtime",
    "componentize_py_async_support",
    "poll_loop",
];

/// What to build, and with what.
pub struct PythonBuild {
    /// The agent's Python file; it defines its `run(task)` with
    /// `@worldline_guest.agent` (a service's: its tools marked
    /// `@worldline_service.tool`).
    pub agent: PathBuf,
    /// Build a world service (`worldline:service/service`) instead of an agent.
    pub service: bool,
    /// Where to write the component (default: AGENT with a `.wasm` extension).
    pub output: Option<PathBuf>,
    /// The componentize-py executable.
    pub componentize_py: PathBuf,
    /// Bundle the pure-Python packages of this virtual environment.
    pub venv: Option<PathBuf>,
    /// Bundle these requirements, installed with pip for the sandbox's Python.
    pub requirements: Option<PathBuf>,
    /// Wheels built for the sandbox's Python that `requirements` may use.
    pub wasi_wheels: Option<PathBuf>,
    /// Install exactly the packages `requirements` lists (pip's `--no-deps`).
    pub no_deps: bool,
    /// The Python whose pip installs `requirements` (default: the one beside
    /// componentize-py, else `python3`).
    pub python: Option<PathBuf>,
    /// Whether the build is asked to stop (a signal its caller noted): its
    /// helper is killed, and the build ends with [`crate::helper::Stopped`].
    pub stopped: fn() -> bool,
}

/// What a build is doing, for the caller to show: the slow steps said
/// before they start and timed after.
pub enum Progress<'a> {
    /// componentize-py is another version than the tested one.
    UntestedVersion { found: &'a str },
    /// pip is installing the requirements file for the sandbox's Python.
    Installing { requirements: &'a Path },
    /// componentize-py is building the component (a minute, several with
    /// an SDK's packages).
    Componentizing { output: &'a Path, service: bool },
    /// componentize-py finished.
    Componentized { seconds: f64 },
    /// The build could not be kept for reuse (the next build of these
    /// sources gives other bytes).
    NotKept { folder: &'a Path, error: String },
}

impl std::fmt::Display for Progress<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Progress::UntestedVersion { found } => write!(
                f,
                "warning: componentize-py {found} is not the tested {COMPONENTIZE_PY_VERSION}; if the build or the run fails, {}",
                install_hint()
            ),
            Progress::Installing { requirements } => write!(
                f,
                "installing {} with pip for the sandbox's Python",
                requirements.display()
            ),
            Progress::Componentizing { output, service } => write!(
                f,
                "building {} with componentize-py (CPython, the {} and its packages; once per sources)",
                output.display(),
                if *service { "service" } else { "agent" }
            ),
            Progress::Componentized { seconds } => {
                write!(f, "componentize-py finished in {seconds:.1} s")
            }
            Progress::NotKept { folder, error } => write!(
                f,
                "warning: could not keep the build in {} ({error}); the next build of these sources gives other bytes",
                folder.display()
            ),
        }
    }
}

/// A source that imports only the other kind's SDK (an agent built with
/// `--service`, a service without it), refused naming the flag: the build
/// failed after componentize-py's run with an ImportError from inside
/// the SDK.
fn other_kind(source: &Path, service: bool) -> Result<()> {
    // Read within the cap on a document (a source past it is not looked
    // into: componentize-py says what it says of it).
    let bytes = worldline_case::bounded::read(source, worldline_case::bounded::DOCUMENT)
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let imports = |module: &str| {
        text.lines().any(|l| {
            let l = l.trim_start();
            [format!("import {module}"), format!("from {module}")]
                .iter()
                .any(|head| {
                    l.strip_prefix(head.as_str())
                        .is_some_and(|rest| rest.starts_with([' ', '.', ',']) || rest.is_empty())
                })
        })
    };
    let (agent, world_service) = (imports("worldline_guest"), imports("worldline_service"));
    let why = match (service, agent, world_service) {
        (true, true, false) => {
            "imports worldline_guest, the agent SDK, so it is an agent: build it without --service"
        }
        (false, false, true) => {
            "imports worldline_service, the service SDK, so it is a world service: build it with --service"
        }
        _ => return Ok(()),
    };
    Err(InputError::new(source, why).into())
}

/// componentize-py's failure as the Python traceback it carries (not its
/// own script's frames around it, nor its `Caused by:` repeat), and the
/// file of the agent's folder (mounted at `/0/`) and line it ends in, if
/// it ends in one: a syntax error is placed at its line.
fn python_error(said: &str) -> (&str, Option<Place>) {
    let start = said
        .find("AssertionError: Traceback")
        .map_or(0, |i| i + "AssertionError: ".len());
    let text = &said[start..];
    let text = text[..text.find("\n\nCaused by:").unwrap_or(text.len())].trim_end();
    let lines: Vec<&str> = text.lines().collect();
    let place = (0..lines.len()).rev().find_map(|i| {
        let rest = lines[i].trim_start().strip_prefix("File \"/0/")?;
        let (file, rest) = rest.split_once("\", line ")?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        // A syntax error's caret, under its line printed without its
        // indent (the column was always 1).
        let caret = match (lines.get(i + 1), lines.get(i + 2)) {
            (Some(code), Some(marks)) if marks.trim_start().starts_with('^') => {
                let indent = code.len() - code.trim_start().len();
                marks.find('^').and_then(|c| c.checked_sub(indent))
            }
            _ => None,
        };
        Some(Place {
            file: file.to_string(),
            line: digits.parse().ok()?,
            caret,
        })
    });
    (text, place)
}

/// Where a Python error is placed in the agent's sources.
#[derive(Debug, PartialEq)]
struct Place {
    /// Relative to the agent's folder.
    file: String,
    line: usize,
    /// A syntax error's caret: characters after the line's own indent.
    caret: Option<usize>,
}

impl Place {
    /// The error at its line, and at its column when the caret says it
    /// (the line's indent read from `path`, which Python's message leaves
    /// out).
    fn error(&self, path: PathBuf, message: String) -> InputError {
        let column = self.caret.and_then(|c| {
            let source =
                worldline_case::bounded::read_text(&path, worldline_case::bounded::DOCUMENT)
                    .ok()?;
            let line = source.lines().nth(self.line.checked_sub(1)?)?;
            let indent = line.chars().take_while(|c| c.is_whitespace()).count();
            Some(indent + c + 1)
        });
        let e = InputError::new(path, message).with_line(self.line);
        match (e.line, column) {
            (Some((line, _)), Some(column)) => InputError {
                line: Some((line, column)),
                ..e
            },
            _ => e,
        }
    }
}

/// What was built.
pub struct PythonBuilt {
    /// Where the component was written.
    pub output: PathBuf,
    /// Its size in bytes.
    pub bytes: usize,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// The componentize-py version it was built with.
    pub componentize_py: String,
    /// The bytes of an earlier build of the same sources.
    pub reused: bool,
}

/// Build `job.agent` into a component at its output, telling `progress`
/// what it is doing.
pub fn build(job: &PythonBuild, progress: &mut dyn FnMut(Progress)) -> Result<PythonBuilt> {
    let module = module_name(&job.agent)?;
    other_kind(&job.agent, job.service)?;
    let agent_dir = match job.agent.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let output = job
        .output
        .clone()
        .unwrap_or_else(|| job.agent.with_extension("wasm"));
    // `-o build/agent.wasm` in a fresh project: the folder made now, as
    // `build-js` makes it, not a failure after the whole build.
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| InputError::new(dir, format!("cannot create the output folder: {e}")))?;
    }
    // Checked before the build; componentize-py writes into the build
    // folder, and the component is moved to `output` from there.
    worldline_case::output::check_file(&output)?;
    worldline_case::output::check_not_input(&output, [job.agent.as_path()], "the agent's source")?;
    let version = componentize_py_version(&job.componentize_py)?;
    if version != COMPONENTIZE_PY_VERSION {
        progress(Progress::UntestedVersion { found: &version });
    }

    let work = tempfile::Builder::new()
        .prefix("worldline-build-python-")
        .tempdir()
        .context("creating a temporary build folder")?;
    let built = work.path().join("agent.wasm");
    write_tree(&work.path().join("wit"), wit::FILES)?;
    write_tree(&work.path().join("sdk"), SDK)?;
    let main = main_module(&module, job.service);
    write_tree(
        &work.path().join("sdk"),
        &[(&format!("{MAIN}.py"), main.as_str())],
    )?;

    let deps = work.path().join("deps");
    std::fs::create_dir_all(&deps).context("creating the dependency folder")?;
    if let Some(venv) = &job.venv {
        deps::from_venv(venv, &deps)?;
    }
    if let Some(file) = &job.requirements {
        let python = job
            .python
            .clone()
            .unwrap_or_else(|| deps::python_beside(&job.componentize_py));
        progress(Progress::Installing { requirements: file });
        deps::from_requirements(
            file,
            &python,
            job.wasi_wheels.as_deref(),
            job.no_deps,
            &deps,
            job.stopped,
        )?;
    }

    let mut key = reuse::Key::new(&version, &format!("{module} service={}", job.service));
    key.embedded("wit", wit::FILES);
    key.embedded("sdk", SDK);
    key.embedded("main", &[(&format!("{MAIN}.py"), main.as_str())]);
    // componentize-py is given a copy of the agent's folder (mapped at
    // `/0` as the folder was): its CPython wrote each imported module's
    // bytecode into `__pycache__/` beside the source.
    let sources = work.path().join("agent");
    std::fs::create_dir_all(&sources).context("creating the build's source folder")?;
    key.folder_into("agent", &agent_dir, Some(&sources))?;
    key.folder("deps", &deps)?;
    let key = key.hex();
    if let Some(bytes) = reuse::kept(&key) {
        worldline_case::output::write(&output, &bytes)?;
        return Ok(built_at(output, &bytes, version, true));
    }

    let mut componentize = Command::new(&job.componentize_py);
    if job.service {
        componentize
            .arg("-d")
            .arg(work.path().join("wit").join("service"))
            .args(["-w", "service"]);
    } else {
        // The host's world: the agent's interfaces and WASI with
        // `wasi:http`, its two `types` interfaces told apart by name.
        componentize
            .arg("-d")
            .arg(work.path().join("wit"))
            .args(["-w", "agent-host"])
            .args([
                "--import-interface-name",
                "worldline:agent/types@0.1.0=types",
            ])
            .args([
                "--import-interface-name",
                "wasi:http/types@0.2.12=http_types",
            ]);
    }
    // The one slow step: said before, timed after.
    progress(Progress::Componentizing {
        output: &output,
        service: job.service,
    });
    let started = std::time::Instant::now();
    componentize
        // Its Rust backtrace says nothing of the agent's error.
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0")
        .args(["componentize", MAIN, "-p"])
        .arg(&sources)
        .arg("-p")
        .arg(&deps)
        .arg("-p")
        .arg(work.path().join("sdk"))
        .arg("-o")
        .arg(&built);
    let out = crate::helper::output(&mut componentize, &job.stopped)
        .with_context(|| format!("running {}", job.componentize_py.display()))?;
    if !out.status.success() {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let what = crate::top_level_host_call(&said).unwrap_or_else(|| {
            "componentize-py could not build it (fix the Python error it names)".into()
        });
        // A service source that marks no tool defines no `WitWorld`, and
        // the import componentize-py makes of it failed with no word of
        // the decorator.
        if job.service && said.contains("cannot import name 'WitWorld'") {
            return Err(InputError::new(
                &job.agent,
                "marks no tool: a world service exports each function marked @worldline_service.tool (`import worldline_service as ws`, then `@ws.tool` above `def NAME(...)`)",
            )
            .into());
        }
        let (traceback, place) = python_error(&said);
        let error = match place {
            Some(place) => {
                let own = job.agent.file_name().is_some_and(|n| *n == *place.file);
                let path = if own {
                    job.agent.clone()
                } else {
                    agent_dir.join(&place.file)
                };
                place.error(path, format!("{what}:\n{traceback}"))
            }
            None => InputError::new(&job.agent, format!("{what}:\n{traceback}")),
        };
        return Err(error.into());
    }
    progress(Progress::Componentized {
        seconds: started.elapsed().as_secs_f64(),
    });
    let bytes = std::fs::read(&built)
        .with_context(|| format!("reading the built component {}", built.display()))?;
    let (bytes, kept) = reuse::keep_first(&key, bytes);
    worldline_case::output::write(&output, &bytes)?;
    if let Err(error) = kept {
        progress(Progress::NotKept {
            folder: &reuse::folder(),
            error: error.to_string(),
        });
    }
    Ok(built_at(output, &bytes, version, false))
}

fn built_at(output: PathBuf, bytes: &[u8], componentize_py: String, reused: bool) -> PythonBuilt {
    PythonBuilt {
        output,
        bytes: bytes.len(),
        sha256: canon::sha256_hex(bytes),
        componentize_py,
        reused,
    }
}

/// The Python module name of the agent file (`agent.py` → `agent`).
fn module_name(agent: &Path) -> Result<String> {
    crate::agent_file(agent, ".py", &["agent.py"])?;
    let stem = agent
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|_| agent.extension().is_some_and(|e| e == "py"))
        .ok_or_else(|| InputError::new(agent, "is not a .py file"))?;
    let identifier = stem
        .chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && stem.chars().all(|c| c == '_' || c.is_ascii_alphanumeric());
    if !identifier {
        return Err(InputError::new(
            agent,
            format!("`{stem}` is not a Python module name; rename the file (letters, digits, `_`)"),
        )
        .into());
    }
    if RESERVED.contains(&stem) {
        return Err(InputError::new(
            agent,
            format!("`{stem}` is a module the build provides; rename the file"),
        )
        .into());
    }
    Ok(stem.to_string())
}

/// `componentize-py --version`'s version, or an input error saying how to
/// install it.
fn componentize_py_version(exe: &Path) -> Result<String> {
    let out = match Command::new(exe).arg("--version").output() {
        Ok(out) if out.status.success() => out,
        Ok(out) => {
            return Err(InputError::new(
                exe,
                format!(
                    "`--version` failed ({}); {}",
                    String::from_utf8_lossy(&out.stderr).trim(),
                    install_hint()
                ),
            )
            .into());
        }
        Err(e) => {
            return Err(InputError::new(
                exe,
                format!(
                    "cannot run componentize-py ({e}): it builds Python agents; {}",
                    install_hint()
                ),
            )
            .into());
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.split_whitespace().last().unwrap_or("").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file under `root` with extension `ext`, relative, sorted.
    fn files(root: &Path, ext: &str) -> Vec<String> {
        let mut found = Vec::new();
        let mut dirs = vec![root.to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == ext) {
                    let rel = path.strip_prefix(root).unwrap();
                    found.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        found.sort();
        found
    }

    fn embedded(list: &[(&str, &str)]) -> Vec<String> {
        let mut names: Vec<String> = list.iter().map(|(n, _)| n.to_string()).collect();
        names.sort();
        names
    }

    #[test]
    fn every_wit_and_sdk_file_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .parent()
            .unwrap();
        assert_eq!(embedded(wit::FILES), files(&root.join("wit"), "wit"));
        assert_eq!(
            embedded(SDK),
            files(&root.join("guest-sdk/python"), "py"),
            "add the new SDK file to SDK in build_python_cmd.rs"
        );
    }

    #[test]
    fn module_names_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, "").unwrap();
            p
        };
        assert_eq!(module_name(&write("my_agent.py")).unwrap(), "my_agent");
        let refused = |p: &Path| module_name(p).unwrap_err().to_string();
        for (bad, why) in [
            ("my-agent.py", "`my-agent` is not a Python module name"),
            ("1agent.py", "`1agent` is not a Python module name"),
            ("wit_world.py", "`wit_world` is a module the build provides"),
            ("agent.txt", "is not a .py file"),
        ] {
            let err = refused(&write(bad));
            assert!(err.contains(why), "{bad}: {err}");
        }
        let err = refused(&dir.path().join("absent.py"));
        assert!(err.contains("no such file"), "{err}");
    }

    #[test]
    fn a_python_error_is_its_traceback_placed_in_the_agent_s_file() {
        let said = "Traceback (most recent call last):\n  File \"/x/bin/componentize-py\", line 8, in <module>\n    sys.exit(script())\nAssertionError: Traceback (most recent call last):\n  File \"/2/worldline_main.py\", line 13, in <module>\n    import agent as _agent\n  File \"/0/agent.py\", line 5\n    x = (1,\n        ^\nSyntaxError: '(' was never closed\n\n\nCaused by:\n    SyntaxError: '(' was never closed (agent.py, line 5)\n";
        let (text, place) = python_error(said);
        assert!(
            text.starts_with("Traceback (most recent call last):\n  File \"/2/"),
            "{text}"
        );
        assert!(
            text.ends_with("SyntaxError: '(' was never closed"),
            "{text}"
        );
        let place = place.unwrap();
        assert_eq!((place.file.as_str(), place.line), ("agent.py", 5));
        assert_eq!(python_error("something else").1, None);
        // The caret's column, the line's indent read from the file (it was
        // always column 1).
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent.py");
        std::fs::write(&agent, "def run(t):\n    pass\n\n\n    x = (1,\n").unwrap();
        let e = place.error(agent, "m".into());
        assert_eq!(e.line, Some((5, 9)), "{e}");
    }

    #[test]
    fn a_source_of_the_other_kind_is_refused_naming_the_flag() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let agent = write(
            "a.py",
            "import worldline_guest as wl\n\n@wl.agent\ndef run(t):\n    pass\n",
        );
        let service = write("s.py", "import json\nfrom worldline_service import tool\n");
        let plain = write(
            "p.py",
            "import worldline_services_extra\ndef run(t):\n    pass\n",
        );
        let said = |p: &Path, service: bool| other_kind(p, service).unwrap_err().to_string();
        assert!(said(&agent, true).contains("build it without --service"));
        assert!(said(&service, false).contains("build it with --service"));
        assert!(other_kind(&agent, false).is_ok() && other_kind(&service, true).is_ok());
        assert!(other_kind(&plain, false).is_ok() && other_kind(&plain, true).is_ok());
    }
}
