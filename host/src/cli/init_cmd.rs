//! `worldline init [DIR] --lang rust|python|ts`: a new project (see
//! `scaffold`), with the SDK's sources where editors and `tsc` find them
//! (`.sdk/python` for `worldline_guest` and `worldline_service`, the
//! TypeScript project's Python service included; `agent/.worldline-sdk`
//! and `agent/tsconfig.json`, as `build-js` writes them, for `worldline`).
//! Refuses to write over a file that exists.
//!
//! Why `init` writes what it writes (was decision 0196): one world (`tasks@v1`)
//! with a declarative query tool and a service tool, a case that passes and one
//! the agent fails for a stated reason, and a `build.sh`, because a user should
//! see a pass, a failure with a reason and where to fix it, both tool kinds and
//! the project file in their first minutes; a script is visible and editable,
//! where a `worldline build` command would hide three toolchains behind one
//! name. The TypeScript project's service is Python, not Rust: a TypeScript
//! user is more likely to have Python than a Rust toolchain with the wasm
//! target (and there is no JavaScript service SDK). Rust projects depend on the
//! SDK crates by path, since they are not published on git or crates.io. `init`
//! writes over nothing.

use super::Common;
use crate::cli::exit::ExitCode;
use crate::scaffold::{self, Lang};
use anyhow::Result;
use clap::{Args, ValueEnum};
use serde_json::json;
use std::path::{Path, PathBuf};
use worldline_case::error::InputError;

#[derive(Clone, Copy, ValueEnum)]
pub enum LangArg {
    Rust,
    Python,
    Ts,
}

#[derive(Args)]
pub struct InitArgs {
    /// The project's folder (default: the working folder); created when missing.
    pub dir: Option<PathBuf>,
    /// The agent's language.
    #[arg(long, value_enum)]
    pub lang: LangArg,
    /// With --lang rust: the worldline source folder whose `guest-sdk` and
    /// `service-sdk` the project depends on (default: the sources this
    /// binary was built from).
    #[arg(long)]
    pub sdk: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

/// The sources this binary was built from, when they are still there.
fn default_sdk() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    root.join("guest-sdk/Cargo.toml")
        .is_file()
        .then(|| root.to_path_buf())
}

/// The worldline source folder a Rust project's guest SDK is taken from
/// (`--sdk`, else the one this binary was built from); none for the others.
fn sdk_dir(lang: Lang, sdk: Option<&Path>) -> Result<PathBuf> {
    Ok(match (lang, sdk) {
        (Lang::Rust, Some(s)) if !s.join("guest-sdk/Cargo.toml").is_file() => {
            return Err(InputError::new(s, "has no guest-sdk/Cargo.toml; pass a worldline source folder").into());
        }
        (Lang::Rust, Some(s)) => std::path::absolute(s)?,
        (Lang::Rust, None) => default_sdk().ok_or_else(|| {
            InputError::new(
                "--sdk",
                "the worldline sources this binary was built from are gone; pass --sdk DIR (a worldline source folder)",
            )
        })?,
        (_, Some(_)) => {
            return Err(InputError::new(
                "--sdk",
                "names the worldline sources a Rust agent builds against; a Python or TypeScript project takes its SDK from this binary (drop --sdk)",
            )
            .into());
        }
        (_, None) => PathBuf::new(),
    })
}

/// What is in the way of writing `path` under `dir`, when anything is:
/// the file itself (anything there, not even a dangling symlink), or a
/// file or a symlink (dangling or not) where one of its folders must go.
fn in_the_way(dir: &Path, path: &Path) -> Option<InputError> {
    let parts: Vec<_> = path.components().collect();
    let mut at = dir.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let meta = std::fs::symlink_metadata(&at).ok()?;
        let said = if i + 1 == parts.len() {
            "exists already"
        } else if meta.is_dir() {
            continue;
        } else if meta.is_symlink() {
            "is a symbolic link where `init` makes a folder, and it writes through no link"
        } else {
            "is a file where `init` makes a folder"
        };
        return Some(InputError::new(
            at,
            format!(
                "{said}; `init` writes a new project and overwrites nothing (choose an empty folder)"
            ),
        ));
    }
    None
}

/// Write `files` into `dir`, each new: everything in the way of any of
/// them is refused before anything is written (init overwrites nothing,
/// writes through no link, and leaves no half-written project).
fn write_files(dir: &Path, files: &[(PathBuf, String, bool)]) -> Result<()> {
    if let Some(e) = files.iter().find_map(|(p, _, _)| in_the_way(dir, p)) {
        return Err(e.into());
    }
    for (path, text, executable) in files {
        let full = dir.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| InputError::new(parent, format!("cannot create the folder: {e}")))?;
        }
        worldline_case::output::write_new(&full, text.as_bytes(), "every file `init` writes")?;
        if *executable {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&full, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| InputError::new(&full, format!("cannot make it executable: {e}")))?;
        }
    }
    Ok(())
}

/// `init --store S`: the project file's `store` is S (it was taken and
/// ignored), checked as a store address. A folder is written relative to
/// the project's when it is inside it (the file's paths are read from
/// its folder), else absolute, so that it names the folder meant.
fn with_store(files: &mut [(PathBuf, String, bool)], dir: &Path, store: &Path) -> Result<()> {
    worldline_store::store::check_address(store)?;
    let text = store.to_string_lossy();
    // The file is the project's, kept in version control and read by all:
    // a database's password belongs in PGPASSWORD (never printed). The
    // rule `check` reports a project file's `store` by.
    if worldline_case::project::holds_password(&text) {
        return Err(InputError::new(
            "--store",
            "the address holds a password, which `init` would write in worldline.toml in plain text: drop it from the address (postgres://USER@HOST/DB) and set PGPASSWORD",
        )
        .into());
    }
    let written = if worldline_pgstore::url::is_postgres(&text) || store.is_absolute() {
        text.into_owned()
    } else {
        let full = std::path::absolute(store)?;
        let project = std::path::absolute(dir)?;
        match full.strip_prefix(&project) {
            Ok(inside) if !inside.as_os_str().is_empty() => inside.display().to_string(),
            _ => full.display().to_string(),
        }
    };
    let line = format!("store = {}", toml::Value::String(written));
    for (path, text, _) in files.iter_mut() {
        if path.as_path() == Path::new("worldline.toml") {
            *text = text.replacen("store = \".worldline\"", &line, 1);
        }
    }
    Ok(())
}

pub fn exec(args: InitArgs) -> Result<ExitCode> {
    let lang = match args.lang {
        LangArg::Rust => Lang::Rust,
        LangArg::Python => Lang::Python,
        LangArg::Ts => Lang::Ts,
    };
    let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if dir.exists() && !dir.is_dir() {
        return Err(InputError::new(&dir, "is not a folder; name a new or empty folder").into());
    }
    let sdk = sdk_dir(lang, args.sdk.as_deref())?;
    let name = std::path::absolute(&dir)?.file_name().map_or_else(
        || "worldline-project".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut files: Vec<(PathBuf, String, bool)> =
        scaffold::files(lang, &name, &sdk.display().to_string())
            .into_iter()
            .map(|f| (PathBuf::from(f.path), f.text, f.executable))
            .collect();
    // The SDK's sources, for editors (build-python carries its own); a
    // TypeScript agent's folder gets the JS SDK and a tsconfig.json as
    // build-js writes them, each new as every file here (the SDK's
    // sources were written over, and a tsconfig.json there kept, unsaid).
    // A TypeScript project's service is Python: its SDK too (the project
    // had no `worldline_service` for editors to resolve).
    let python_sdk = || {
        (worldline_build::python::SDK.iter())
            .map(|(path, text)| (Path::new(".sdk/python").join(path), text.to_string()))
    };
    let sdk_files: Vec<(PathBuf, String)> = match lang {
        Lang::Python => python_sdk().collect(),
        Lang::Ts => (worldline_build::js::editor_files().into_iter())
            .map(|(path, text)| (Path::new("agent").join(path), text.to_string()))
            .chain(python_sdk())
            .collect(),
        Lang::Rust => Vec::new(),
    };
    if super::project_args::store_given() {
        with_store(&mut files, &dir, &args.common.store)?;
    }
    let sdk_paths: Vec<PathBuf> = sdk_files.iter().map(|(p, _)| p.clone()).collect();
    files.extend(sdk_files.into_iter().map(|(p, t)| (p, t, false)));
    write_files(&dir, &files)?;
    // The project's own files: the SDK's sources are not listed (the
    // tsconfig.json is the project's).
    let written: Vec<String> = files
        .iter()
        .filter(|(p, _, _)| !sdk_paths.contains(p) || p.ends_with("tsconfig.json"))
        .map(|(p, _, _)| p.display().to_string())
        .collect();
    if args.common.json {
        super::print_json(&json!({
            "dir": dir.display().to_string(),
            "lang": lang.name(),
            "files": written,
            "agent": lang.agent_wasm(),
        }))?;
    } else {
        out!("created a {} project in {}:", lang.name(), dir.display())?;
        for f in &written {
            out!("  {f}")?;
        }
        // Quoted for a POSIX shell when it needs it, as `bench import`
        // quotes its command: `cd my proj` was two words, `cd it's` an
        // open quote.
        let shown = dir.to_string_lossy();
        let dir = shlex::try_quote(&shown).unwrap_or(shown.clone());
        out!("next: cd {dir} && worldline check && ./build.sh && worldline test (see README.md)")?;
    }
    Ok(ExitCode::Ok)
}
