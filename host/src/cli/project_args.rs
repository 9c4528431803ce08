//! The project file's defaults as flags: before parsing, each default the
//! command takes and the command line does not give is added to the
//! arguments (so a flag always overrides the file, and every command sees
//! one set of arguments); what was added is remembered for `--json`
//! documents, which say which file supplied what.
//!
//! Why the project file's defaults become flags before parsing (was decision
//! 0195): no command has to know about the file, and "a flag overrides the
//! file" holds by construction; `Option` fields merged in each command would
//! change every command, and a forgotten merge would silently ignore the file,
//! while clap's `env`/`default_value` hooks cannot say which file a value came
//! from. A table names the commands per key because a flag of one name can mean
//! different things (`runs --agent` filters by hash, `fork --agent` replaces
//! the agent).

use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use worldline_case::project::{self, Project};

/// Which commands take which default (`store` is global: every command).
const TAKES: &[(&str, &[&str])] = &[
    ("agent", &["run", "test", "fuzz", "rerun"]),
    ("exec", &["run", "test", "fuzz"]),
    (
        "worlds",
        &[
            "run", "test", "fuzz", "grade", "check", "validate", "mcp", "serve",
        ],
    ),
    ("jobs", &["test", "fuzz", "repro"]),
    ("model-set", &["run", "test", "fuzz", "repro"]),
    ("user-model-set", &["run", "test", "fuzz", "repro"]),
];

/// Commands that use no store: the project file's `store` is not added
/// to them (`check --json` said it supplied one), and a `--store` on
/// their command line is said to be ignored (it was taken and ignored,
/// unsaid; refused, it would break scripts that give every command one
/// `--store`); `init` writes it into the project file it makes
/// ([`store_given`]).
const NO_STORE: &[&str] = &["init", "check", "bench", "build-python", "build-js"];

/// What the project file supplied to this command.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Supplied {
    /// The project file (absent when there is none).
    pub file: Option<PathBuf>,
    /// Setting → the value the file supplied (`model.KEY` for `[model]`),
    /// as the file types it: `jobs` a number, `cases` a list, paths and
    /// model settings text.
    pub supplied: BTreeMap<String, serde_json::Value>,
    /// Settings the file has that the command line overrode.
    pub overridden: Vec<String>,
}

static PROJECT: OnceLock<Option<Project>> = OnceLock::new();
static SUPPLIED: OnceLock<Supplied> = OnceLock::new();
/// Whether the command line gave `--store` (before the file's defaults).
static STORE_GIVEN: OnceLock<bool> = OnceLock::new();
/// Why the project file did not load, for `check` (which goes on).
static REFUSED: OnceLock<worldline_case::error::InputError> = OnceLock::new();

/// Why the project file found for this process did not load, when it did
/// not (only `init` and `check` go on without it).
pub fn refused() -> Option<&'static worldline_case::error::InputError> {
    REFUSED.get()
}

/// The project file found for this process, if any (loaded by [`apply`]).
pub fn project() -> Option<&'static Project> {
    PROJECT.get().and_then(Option::as_ref)
}

/// Whether the command line gave `--store` itself (`init` writes it into
/// the project file; no default was added to a command that uses none).
pub fn store_given() -> bool {
    STORE_GIVEN.get().copied().unwrap_or(false)
}

/// What the project file supplied, for `--json` documents.
pub fn supplied() -> Supplied {
    SUPPLIED.get().cloned().unwrap_or_default()
}

/// Note a default a command applied itself (the cases of `test`).
pub fn note(setting: &str, value: serde_json::Value) -> Supplied {
    let mut s = supplied();
    s.supplied.insert(setting.to_string(), value);
    s
}

/// The arguments with the project's defaults added. `commands` are the
/// subcommand names, to find which one runs. A project file that cannot
/// be read is an error, except for `init` and `check` (which report it).
pub fn apply(
    argv: Vec<OsString>,
    commands: &[String],
) -> Result<Vec<OsString>, worldline_case::error::InputError> {
    let command = find_command(&argv, commands);
    let lenient = matches!(command.as_deref(), Some("init" | "check"));
    let _ = STORE_GIVEN.set(flag_given(&argv, "store"));
    if let Some(c) = (command.as_deref()).filter(|c| NO_STORE.contains(c) && *c != "init")
        && store_given()
    {
        eprintln!("note: --store: `worldline {c}` uses no store; it is ignored");
    }
    let file = std::env::current_dir().ok().and_then(|d| project::find(&d));
    let loaded = match &file {
        None => None,
        Some(f) => match project::load(f)
            .and_then(|p| worldline_case::case::model::check_settings(&p).map(|()| p))
        {
            Ok(p) => Some(p),
            Err(e) if lenient => {
                let _ = REFUSED.set(e);
                None
            }
            Err(e) => return Err(e),
        },
    };
    // A `worlds` the file gave that is no folder is the file's mistake, at
    // its line (each case was told its world is not there), for every
    // command that reads cases against it (`check` reports it itself).
    let runs = matches!(
        command.as_deref(),
        Some("run" | "test" | "fuzz" | "grade" | "validate" | "mcp" | "serve")
    );
    if let Some(e) = (loaded.as_ref()).and_then(|p| p.missing_worlds().filter(|_| runs))
        && !flag_given(&argv, "worlds")
    {
        return Err(e);
    }
    // So is a `--worlds` that is no folder, the flag's (`check` too).
    let reads_worlds = runs || command.as_deref() == Some("check");
    if reads_worlds
        && let Some(worlds) = flag_value(&argv, "worlds").filter(|w| !Path::new(w).is_dir())
    {
        return Err(worldline_case::error::InputError::new(
            "--worlds",
            format!(
                "{} is no folder: name the folder that holds the worlds (`NAME/vN/world.toml`)",
                worldline_case::shown::text(&worlds.to_string_lossy())
            ),
        ));
    }
    let (argv, supplied) = match (&loaded, command) {
        (Some(p), Some(c)) => with_defaults(argv, p, &c),
        _ => (argv, Supplied::default()),
    };
    // A store address the file gave is blamed on the file, at its line.
    if let Some(p) = &loaded
        && let Some(folder) = &p.store
        && supplied.supplied.contains_key("store")
    {
        let at = p.paths_at.get("store").copied();
        worldline_store::store::store_given_in(&p.file, at, folder);
    }
    let _ = PROJECT.set(loaded);
    let _ = SUPPLIED.set(Supplied { file, ..supplied });
    Ok(argv)
}

/// The subcommand: the first argument that is not a flag (the global
/// `--store` takes a value, which is skipped), when it names one (not
/// `help`, which would read the next word as a subcommand).
fn find_command(argv: &[OsString], commands: &[String]) -> Option<String> {
    let mut skip = false;
    for a in argv.iter().skip(1) {
        if std::mem::take(&mut skip) {
            continue;
        }
        let a = a.to_string_lossy();
        if a == "--store" {
            skip = true;
        } else if !a.starts_with('-') {
            return commands.iter().find(|c| **c == a).cloned();
        }
    }
    None
}

/// The value the command line gives `--FLAG` (`--FLAG VALUE` or
/// `--FLAG=VALUE`), the last when it is given twice.
fn flag_value(argv: &[OsString], flag: &str) -> Option<OsString> {
    let long = format!("--{flag}");
    let mut value = None;
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        let text = a.to_string_lossy();
        if text == "--" {
            break;
        } else if text == long {
            value = args.next().cloned();
        } else if let Some(v) = text.strip_prefix(&format!("{long}=")) {
            value = Some(v.into());
        }
    }
    value
}

/// Whether the command line gives `--FLAG` (or `--FLAG=VALUE`).
fn flag_given(argv: &[OsString], flag: &str) -> bool {
    argv.iter().any(|a| {
        let a = a.to_string_lossy();
        a == format!("--{flag}") || a.starts_with(&format!("--{flag}="))
    })
}

fn with_defaults(argv: Vec<OsString>, p: &Project, command: &str) -> (Vec<OsString>, Supplied) {
    let given = |flag: &str| flag_given(&argv, flag);
    let takes = |flag: &str| {
        TAKES
            .iter()
            .any(|(f, cmds)| *f == flag && cmds.contains(&command))
    };
    let mut added: Vec<OsString> = Vec::new();
    let mut s = Supplied::default();
    // Without a `store` key the project's store is `.worldline/` beside
    // its file, from whatever folder of it a command runs (each folder
    // made a store of its own, and the project's runs were split).
    let uses_store = !NO_STORE.contains(&command);
    if p.store.is_none()
        && uses_store
        && !given("store")
        && let Some(dir) = p.file.parent()
    {
        added.push("--store".into());
        added.push(dir.join(".worldline").into_os_string());
    }
    // The flag's argument, and the value as the file gave it.
    let mut offer = |flag: &str, value: Option<(String, serde_json::Value)>, s: &mut Supplied| {
        let Some((arg, value)) = value else { return };
        if given(flag) {
            s.overridden.push(flag.to_string());
        } else {
            added.push(format!("--{flag}").into());
            added.push(arg.into());
            s.supplied.insert(flag.to_string(), value);
        }
    };
    let shown = |p: &Option<PathBuf>| {
        p.as_ref()
            .map(|p| (p.display().to_string(), p.display().to_string().into()))
    };
    if uses_store {
        offer("store", shown(&p.store), &mut s);
    }
    if takes("agent") {
        // `--exec` names the agent too: the file's `agent` is then
        // overridden, not supplied (it was said to be both used and not).
        if given("exec") && p.agent.is_some() {
            s.overridden.push("agent".into());
        } else {
            offer("agent", shown(&p.agent), &mut s);
        }
    }
    // `exec` and `pass_env` are read by the agent's choice, not passed as
    // flags: said here, as the other settings are (they were left out).
    if takes("exec") {
        if !p.exec.command.is_empty() {
            match given("exec") || given("agent") {
                true => s.overridden.push("exec".into()),
                false => {
                    s.supplied
                        .insert("exec".into(), p.exec.command.clone().into());
                }
            }
        }
        if let Some(names) = &p.exec.pass_env {
            match given("pass-env") {
                true => s.overridden.push("pass_env".into()),
                false => {
                    s.supplied.insert("pass_env".into(), names.clone().into());
                }
            }
        }
    }
    if takes("worlds") {
        offer("worlds", shown(&p.worlds), &mut s);
    }
    if takes("jobs") {
        offer("jobs", p.jobs.map(|j| (j.to_string(), j.into())), &mut s);
    }
    for (flag, table, keys) in [
        ("model-set", "model", &p.model),
        ("user-model-set", "user_model", &p.user_model),
    ] {
        if !takes(flag) {
            continue;
        }
        // A key the command line sets itself is overridden; the others
        // are added before it, so later (command-line) values win.
        let set_on_line: Vec<String> = argv
            .windows(2)
            .filter(|w| w[0].to_string_lossy() == format!("--{flag}"))
            .filter_map(|w| Some(w[1].to_string_lossy().split_once('=')?.0.to_string()))
            .collect();
        for (key, value) in keys {
            let setting = format!("{table}.{key}");
            if set_on_line.contains(key) {
                s.overridden.push(setting);
            } else {
                added.push(format!("--{flag}").into());
                added.push(format!("{key}={value}").into());
                s.supplied.insert(setting, value.clone().into());
            }
        }
    }
    // Added where flags are still read: before a `--`, if there is one.
    let at = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    let mut out = argv;
    out.splice(at..at, added);
    (out, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> Project {
        Project {
            file: "/p/worldline.toml".into(),
            store: Some("/p/.worldline".into()),
            agent: Some("/p/agent.wasm".into()),
            exec: Default::default(),
            worlds: None,
            cases: Vec::new(),
            cases_at: Vec::new(),
            cases_line: None,
            paths_at: Default::default(),
            jobs: Some(2),
            model: [("provider".to_string(), "openai".to_string())].into(),
            user_model: [("model".to_string(), "sim".to_string())].into(),
            prices: Default::default(),
            settings: Vec::new(),
        }
    }

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn defaults_fill_what_the_command_line_leaves_out() {
        let (out, s) = with_defaults(
            args(&["wl", "test", "c", "--jobs", "4"]),
            &project(),
            "test",
        );
        assert_eq!(
            out,
            args(&[
                "wl",
                "test",
                "c",
                "--jobs",
                "4",
                "--store",
                "/p/.worldline",
                "--agent",
                "/p/agent.wasm",
                "--model-set",
                "provider=openai",
                "--user-model-set",
                "model=sim"
            ])
        );
        assert_eq!(s.overridden, ["jobs"]);
        assert_eq!(s.supplied["agent"], "/p/agent.wasm");
        assert_eq!(s.supplied["model.provider"], "openai");
        let (_, s) = with_defaults(args(&["wl", "test", "c"]), &project(), "test");
        assert_eq!(s.supplied["jobs"], 2);
        // `runs --agent` filters by hash: it takes no agent default.
        let (out, _) = with_defaults(args(&["wl", "runs"]), &project(), "runs");
        assert_eq!(out, args(&["wl", "runs", "--store", "/p/.worldline"]));
        // `check` uses no store: none added, none said to be supplied.
        let (out, s) = with_defaults(args(&["wl", "check"]), &project(), "check");
        assert_eq!(out, args(&["wl", "check"]));
        assert!(!s.supplied.contains_key("store"), "{s:?}");
        let commands = ["test".to_string(), "run".to_string()];
        assert_eq!(
            find_command(&args(&["wl", "--store", "test", "run"]), &commands),
            Some("run".into())
        );
        assert_eq!(
            find_command(&args(&["wl", "help", "test"]), &commands),
            None
        );
    }
}
