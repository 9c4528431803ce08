//! The project file, `worldline.toml`: defaults for the flags a project
//! would otherwise type on every command (store, agent, worlds, cases,
//! jobs, model settings, the model that plays a model-played user), found in the working folder or the nearest
//! folder above it, as Cargo finds `Cargo.toml`. Paths in it are relative
//! to its folder. Flags given on the command line override it.

use crate::error::InputError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's name.
pub const FILE: &str = "worldline.toml";

/// `worldline.toml` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectToml {
    store: Option<toml::Spanned<String>>,
    agent: Option<toml::Spanned<String>>,
    /// A native agent: CMD and its arguments (as `--exec -- CMD`).
    exec: Option<toml::Spanned<Vec<String>>>,
    /// Variables passed through to a native agent (as `--pass-env`).
    pass_env: Option<toml::Spanned<Vec<String>>>,
    worlds: Option<toml::Spanned<String>>,
    cases: Option<toml::Spanned<Vec<toml::Spanned<String>>>>,
    /// Read as any value and checked here, so that its error says its range.
    jobs: Option<toml::Spanned<toml::Value>>,
    #[serde(default)]
    model: BTreeMap<String, toml::Spanned<toml::Value>>,
    /// `[user_model]`: keys of a model-played user's `[user.model]`.
    #[serde(default)]
    user_model: BTreeMap<String, toml::Spanned<toml::Value>>,
    prices: Option<toml::Spanned<crate::prices::Prices>>,
}

/// A loaded project file, its paths made absolute.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// The file itself.
    pub file: PathBuf,
    pub store: Option<PathBuf>,
    pub agent: Option<PathBuf>,
    /// `exec` and `pass_env`: a native agent's command (its paths made
    /// absolute) and the variables passed through to it.
    pub exec: crate::native_agent::ExecSetting,
    pub worlds: Option<PathBuf>,
    /// Case files or folders `test` and `check` take when given none.
    pub cases: Vec<PathBuf>,
    /// Where each of `cases` is written (line, column), for the error
    /// that one names nothing ([`Project::missing_case`]).
    pub cases_at: Vec<(usize, usize)>,
    /// The line of `cases` itself, when the file gives it.
    pub cases_line: Option<usize>,
    /// Where `store`, `agent` and `worlds` are written (line, column), by
    /// key, for `check`'s word on a path that names nothing.
    pub paths_at: BTreeMap<&'static str, (usize, usize)>,
    pub jobs: Option<usize>,
    /// `[model]` keys, applied as `--model-set KEY=VALUE`.
    pub model: BTreeMap<String, String>,
    /// `[user_model]` keys, applied as `--user-model-set KEY=VALUE`: the
    /// model that plays a model-played user instead of its stand-in.
    pub user_model: BTreeMap<String, String>,
    /// `[prices]`: what model calls cost, for the views that show it.
    pub prices: crate::prices::Prices,
    /// Where each `[model]` and `[user_model]` key is written, so that
    /// the case layer, which knows their keys, can place a mistake
    /// (`case::model::check_settings`).
    pub settings: Vec<Setting>,
}

/// A `[model]`-like table's key as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// `model` or `user_model`.
    pub table: &'static str,
    pub key: String,
    /// The value as its flag (`--model-set`) takes it.
    pub value: String,
    /// The key's and the value's line and column.
    pub key_at: (usize, usize),
    pub value_at: (usize, usize),
}

/// The most a project's own TOML file (the project file, a case, a fault
/// profile) may hold: far above any real one, and a bound on what a
/// misnamed file (a symlink to a device, a log) makes `check` read. The
/// cap `run` reads a case and a profile with: `check` refused a case of
/// 16 MiB that `run` took.
pub const MAX_TOML_BYTES: u64 = crate::bounded::DOCUMENT;

/// A TOML file's bytes, refused past [`MAX_TOML_BYTES`] (read through
/// [`crate::bounded`]: a FIFO or a device is refused, never opened to wait).
pub fn read_toml_bytes(file: &Path) -> Result<Vec<u8>, InputError> {
    crate::bounded::read(file, MAX_TOML_BYTES).map_err(|e| match e {
        crate::bounded::Refused::TooLarge(_) => InputError::new(
            file,
            format!(
                "is larger than {} MiB, which no project file, case or profile is; is it the file you meant?",
                MAX_TOML_BYTES >> 20
            ),
        ),
        e => InputError::new(file, format!("cannot read: {e}")),
    })
}

/// The most jobs a command runs at once (`jobs`, `--jobs`): each is a
/// thread, and a run waiting on a model endpoint gives its core to
/// another, so more jobs than cores is useful, but not by the million.
pub const MAX_JOBS: usize = 1024;

/// The nearest `worldline.toml` in `from` or a folder above it: whatever
/// is there under that name (a FIFO, a folder or a broken link too, which
/// [`load`] then refuses, rather than a project file further up being
/// taken instead).
pub fn find(from: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(from).ok()?;
    abs.ancestors()
        .map(|d| d.join(FILE))
        .find(|f| f.symlink_metadata().is_ok())
}

/// Read and check a project file: its first problem, when it has any.
pub fn load(file: &Path) -> Result<Project, InputError> {
    match read(file) {
        Ok((project, problems)) => match problems.into_iter().next() {
            None => Ok(project),
            Some(e) => Err(e),
        },
        Err(mut all) => Err(all.remove(0)),
    }
}

/// Read a project file and list every problem of it, each section checked
/// on its own (`check`, which lists them all: a `jobs = 0` hid a `worlds`
/// that names nothing). The project is what reads, a key with a problem
/// left out; it is an error only when the file cannot be read at all (not
/// TOML, not UTF-8).
pub fn read(file: &Path) -> Result<(Project, Vec<InputError>), Vec<InputError>> {
    let text =
        InputError::utf8(file, read_toml_bytes(file).map_err(|e| vec![e])?).map_err(|e| vec![e])?;
    crate::toml_tokens::check(file, &text).map_err(|e| vec![e])?;
    let (doc, mut problems) = crate::sections::read::<ProjectToml>(file, &text, &[])?;
    // A `jobs` past TOML's integers is refused as the file is read: said
    // as any other `jobs` out of range is (it read as TOML's limits).
    for p in &mut problems {
        let past = (p.message.strip_prefix("jobs: invalid value: integer "))
            .and_then(|rest| rest.split_once(" is past TOML's integers"));
        if let Some((n, _)) = past {
            p.message = format!(
                "jobs must be a whole number from 1 to {MAX_JOBS}, not {}",
                n.trim_matches('`')
            );
        }
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    let path = |p: &toml::Spanned<String>| dir.join(p.get_ref());
    // An empty path would name this file's own folder: a store made in
    // the project itself, its worlds or cases read from there.
    let empty = |v: &toml::Spanned<String>| v.get_ref().trim().is_empty();
    let paths = [
        ("store", &doc.store),
        ("agent", &doc.agent),
        ("worlds", &doc.worlds),
    ];
    let named = paths
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.as_ref()?)));
    let paths_at = (named.clone())
        .filter(|(_, v)| !empty(v))
        .map(|(k, v)| (k, crate::error::line_col(&text, v.span().start)))
        .collect();
    let listed = (doc.cases.as_ref()).map_or(&[][..], |c| c.get_ref().as_slice());
    let cases = listed.iter().map(|c| ("cases", c));
    for (key, empty) in named.chain(cases).filter(|(_, v)| empty(v)) {
        problems.push(InputError::at(
            file,
            &text,
            empty.span().start,
            format!("`{key}` is empty: name a path (relative to this file), or leave the key out"),
        ));
    }
    let given = |v: &Option<toml::Spanned<String>>| v.as_ref().filter(|v| !empty(v)).map(path);
    let jobs = match &doc.jobs {
        None => None,
        Some(j) => match j
            .get_ref()
            .as_integer()
            .and_then(|n| usize::try_from(n).ok())
        {
            Some(n) if (1..=MAX_JOBS).contains(&n) => Some(n),
            _ => {
                problems.push(InputError::at(
                    file,
                    &text,
                    j.span().start,
                    format!(
                        "jobs must be a whole number from 1 to {MAX_JOBS}, not {}",
                        j.get_ref()
                    ),
                ));
                None
            }
        },
    };
    if let Some(p) = &doc.prices
        && let Err((at, m)) = p.get_ref().check(&text)
    {
        problems.push(InputError::at(file, &text, at.unwrap_or(p.span().start), m));
    }
    if let (Some(_), Some(e)) = (&doc.agent, &doc.exec) {
        problems.push(InputError::at(
            file,
            &text,
            e.span().start,
            "`agent` and `exec` both name the project's agent; give one (a case's own `exec` may still name another)",
        ));
    }
    let exec_toml = crate::native_agent::ExecToml {
        exec: doc.exec.as_ref().map(|e| e.get_ref().clone()),
        pass_env: doc.pass_env.as_ref().map(|e| e.get_ref().clone()),
    };
    let exec = exec_toml
        .resolve(dir)
        .map(|e| crate::native_agent::ExecSetting {
            line: (doc.exec.as_ref())
                .map_or(0, |e| crate::error::line_col(&text, e.span().start).0),
            ..e
        });
    let exec = exec.unwrap_or_else(|m| {
        let at = match m.starts_with("exec") {
            true => doc.exec.as_ref().map(|e| e.span().start),
            false => doc.pass_env.as_ref().map(|e| e.span().start),
        };
        problems.push(InputError::at(file, &text, at.unwrap_or(0), m));
        Default::default()
    });
    let mut written = Vec::new();
    let mut tables = BTreeMap::new();
    for (table, flag, given) in [
        ("model", "--model-set", &doc.model),
        ("user_model", "--user-model-set", &doc.user_model),
    ] {
        let read = settings((file, dir), &text, table, flag, given, &mut written);
        tables.insert(
            table,
            read.unwrap_or_else(|e| {
                problems.push(e);
                BTreeMap::new()
            }),
        );
    }
    let project = Project {
        file: file.to_path_buf(),
        // An address (a database's `postgres://...`) is taken as it is,
        // not as a folder here; the store says whether it knows the scheme.
        store: doc.store.as_ref().filter(|s| !empty(s)).map(|s| {
            if s.get_ref().contains("://") {
                PathBuf::from(s.get_ref())
            } else {
                path(s)
            }
        }),
        agent: given(&doc.agent),
        exec,
        worlds: given(&doc.worlds),
        cases: (listed.iter()).filter(|c| !empty(c)).map(path).collect(),
        cases_at: (listed.iter())
            .filter(|c| !empty(c))
            .map(|c| crate::error::line_col(&text, c.span().start))
            .collect(),
        cases_line: (doc.cases.as_ref()).map(|c| crate::error::line_col(&text, c.span().start).0),
        paths_at,
        jobs,
        model: tables.remove("model").unwrap_or_default(),
        user_model: tables.remove("user_model").unwrap_or_default(),
        prices: doc.prices.map(|p| p.into_inner()).unwrap_or_default(),
        settings: written,
    };
    Ok((project, problems))
}

impl Project {
    /// The entries of `cases` that name nothing, each with where it is
    /// written (line, column).
    pub fn missing_cases(&self) -> impl Iterator<Item = (&PathBuf, Option<(usize, usize)>)> {
        (self.cases.iter().enumerate())
            .filter(|(_, c)| c.symlink_metadata().is_err())
            .map(|(i, c)| (c, self.cases_at.get(i).copied()))
    }

    /// The first of `cases` that names nothing, as an error at its line in
    /// this file: a command that runs the project's cases says where the
    /// path it could not find was written, not only the path.
    pub fn missing_case(&self) -> Option<InputError> {
        let (case, at) = self.missing_cases().next()?;
        let mut err = InputError::new(
            &self.file,
            format!(
                "cases: {} does not exist: name case files or folders relative to this file",
                case.display()
            ),
        );
        err.line = at;
        Some(err)
    }

    /// A `cases` that names no case file or folder (`cases = []`), as an
    /// error at its line: a command that runs the project's cases when
    /// given none said to set `cases`, which was set.
    pub fn empty_cases(&self) -> Option<InputError> {
        let line = self.cases_line.filter(|_| self.cases.is_empty())?;
        Some(
            InputError::new(
                &self.file,
                "cases: the list is empty: name case files or folders in it (relative to this file), or on the command line",
            )
            .with_line(line),
        )
    }

    /// The `worlds` this file names, when it is no folder, as an error at
    /// its line: every case read against it would be told its world is
    /// not there, at the case's `world` key.
    pub fn missing_worlds(&self) -> Option<InputError> {
        let worlds = self.worlds.as_ref().filter(|w| !w.is_dir())?;
        Some(InputError {
            line: self.paths_at.get("worlds").copied(),
            ..InputError::new(
                &self.file,
                format!(
                    "worlds names {}, which is no folder: name the folder that holds the worlds (`NAME/vN/world.toml`), relative to this file",
                    worlds.display()
                ),
            )
        })
    }

    /// The `store` this file names, when it is there and is no folder (a
    /// file), as an error at its line: every run would stop on it.
    pub fn store_no_folder(&self) -> Option<InputError> {
        let store = (self.store.as_ref()).filter(|s| s.exists() && !s.is_dir())?;
        Some(InputError {
            line: self.paths_at.get("store").copied(),
            ..InputError::new(
                &self.file,
                format!(
                    "store names {}, which is no folder, so no run can be kept there: name a folder for the runs (the first run makes it), relative to this file, or a postgres:// address",
                    store.display()
                ),
            )
        })
    }

    /// The `store` this file names, when it is a database's address that
    /// holds a password (`postgres://USER:PASSWORD@…`, `?password=…`), as
    /// an error at its line: the password belongs in PGPASSWORD, not in a
    /// file kept with the project (the address is read as the client
    /// reads it: its credentials end at the first `@`).
    pub fn store_password(&self) -> Option<InputError> {
        let address = self.store.as_ref()?.to_str()?;
        holds_password(address).then(|| InputError {
            line: self.paths_at.get("store").copied(),
            ..InputError::new(
                &self.file,
                "store holds a password, in plain text in this file: drop it from the address (postgres://USER@HOST/DB) and set PGPASSWORD",
            )
        })
    }

    /// Whether `path` is inside the project's folder (links resolved; a
    /// path not there is not).
    pub fn holds(&self, path: &Path) -> bool {
        let dir = self
            .file
            .parent()
            .and_then(|d| std::fs::canonicalize(d).ok());
        dir.zip(std::fs::canonicalize(path).ok())
            .is_some_and(|(dir, path)| path.starts_with(dir))
    }
}

/// A `[model]`-like table's keys as the text its flag (`--model-set`)
/// takes; a value that is not a string, number or boolean is placed. A
/// `recording` path is taken relative to the file's folder `dir`, as its
/// other paths are (given as a flag, it is relative to each case).
fn settings(
    (file, dir): (&Path, &Path),
    text: &str,
    table: &'static str,
    flag: &str,
    given: &BTreeMap<String, toml::Spanned<toml::Value>>,
    written: &mut Vec<Setting>,
) -> Result<BTreeMap<String, String>, InputError> {
    let mut out = BTreeMap::new();
    for (key, value) in given {
        let shown = match value.get_ref() {
            toml::Value::String(s) if key == "recording" => dir.join(s).display().to_string(),
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) if !f.is_finite() => {
                return Err(InputError::at(
                    file,
                    text,
                    value.span().start,
                    format!("[{table}] {key}: `{f}` is not a finite number"),
                ));
            }
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            // A list or table (`responses`, `rules`) as the JSON text the
            // flag takes (`--model-set 'responses=["..."]'`).
            v @ (toml::Value::Array(_) | toml::Value::Table(_)) => {
                serde_json::to_string(v).expect("TOML values are JSON")
            }
            _ => {
                return Err(InputError::at(
                    file,
                    text,
                    value.span().start,
                    format!(
                        "[{table}] {key}: give a string, number, boolean, list or table (as {flag} takes)"
                    ),
                ));
            }
        };
        let at = value.span().start;
        written.push(Setting {
            table,
            key: key.clone(),
            value: shown.clone(),
            key_at: crate::error::line_col(text, key_start(text, at)),
            value_at: crate::error::line_col(text, at),
        });
        out.insert(key.clone(), shown);
    }
    Ok(out)
}

/// Where the key of the `key = value` line whose value starts at `value`
/// begins: that line's first character that is not a blank.
fn key_start(text: &str, value: usize) -> usize {
    let line = text[..value.min(text.len())]
        .rfind('\n')
        .map_or(0, |n| n + 1);
    line + text[line..].len() - text[line..].trim_start().len()
}

/// Whether `address` is a database's (`postgres://`, `postgresql://`)
/// that holds a password: in its credentials (`USER:PASSWORD@`, read as
/// the client reads them: they end at the first `@`) or its query
/// (`?password=…`). Such an address is never written in a project file,
/// which is kept with the project: `init --store` refuses it, and `check`
/// reports a `store` holding one.
pub fn holds_password(address: &str) -> bool {
    let Some(rest) =
        (address.strip_prefix("postgres://")).or_else(|| address.strip_prefix("postgresql://"))
    else {
        return false;
    };
    let in_credentials = rest
        .split_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .is_some_and(|(_, password)| !password.is_empty());
    let in_query = rest
        .split_once('?')
        .is_some_and(|(_, query)| query.split('&').any(|pair| pair.starts_with("password=")));
    in_credentials || in_query
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One rule for `init --store` and `check`: a password in the
    /// credentials or the query, an empty one in the credentials none.
    #[test]
    fn an_address_holds_a_password_in_its_credentials_or_its_query() {
        assert!(holds_password("postgres://u:pw@h/db"));
        assert!(holds_password(
            "postgresql://u@h/db?sslmode=require&password=pw"
        ));
        assert!(!holds_password("postgres://u@h/db?sslmode=require"));
        assert!(!holds_password("postgres://u:@h/db"));
        assert!(!holds_password(".worldline"));
    }

    /// A `[model]` or `[user_model]` `recording` is a path of the
    /// project file's, not of each case's folder (a case in `cases/` read
    /// `cases/recs`, which was not there).
    #[test]
    fn a_recording_is_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        let text = "[model]\nprovider = \"recorded\"\nrecording = \"recs\"\n[user_model]\nrecording = \"/abs/u.jsonl\"\n";
        std::fs::write(&file, text).unwrap();
        let p = load(&file).unwrap();
        let recs = dir.path().join("recs").display().to_string();
        assert_eq!(p.model["recording"], recs);
        assert_eq!(p.model["provider"], "recorded");
        assert_eq!(p.user_model["recording"], "/abs/u.jsonl");
    }

    #[test]
    fn paths_are_relative_to_the_file_and_mistakes_are_placed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        std::fs::write(
            &file,
            "agent = \"build/agent.wasm\"\ncases = [\"cases\"]\njobs = 3\n[model]\nprovider = \"openai\"\nmax_connections = 2\n",
        )
        .unwrap();
        let p = load(&file).unwrap();
        assert_eq!(p.agent, Some(dir.path().join("build/agent.wasm")));
        assert_eq!(p.cases, [dir.path().join("cases")]);
        assert_eq!(p.jobs, Some(3));
        assert_eq!(p.model["max_connections"], "2");
        let below = dir.path().join("a/b");
        std::fs::create_dir_all(&below).unwrap();
        assert_eq!(find(&below), Some(file.clone()));

        std::fs::write(&file, "agent = \"a.wasm\"\njobz = 2\n").unwrap();
        let e = load(&file).unwrap_err();
        assert_eq!(e.line, Some((2, 1)), "{e}");
        std::fs::write(&file, "jobs = 0\n").unwrap();
        let big = dir.path().join("big.toml");
        // A case `run` takes, `check` reads (it refused past 16 MiB).
        std::fs::write(&big, vec![b'#'; 17 << 20]).unwrap();
        assert_eq!(read_toml_bytes(&big).unwrap().len(), 17 << 20);
        // Sparse: refused by its size, never read.
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_TOML_BYTES + 1)
            .unwrap();
        assert!(
            read_toml_bytes(&big)
                .unwrap_err()
                .message
                .contains("larger than 256 MiB")
        );
        assert!(
            load(&file)
                .unwrap_err()
                .to_string()
                .contains(":1:8: jobs must be a whole number from 1 to 1024, not 0")
        );
        // Of another type, still its range (a string said the range of a
        // `usize`, 0 to 18446744073709551615).
        std::fs::write(&file, "jobs = \"4\"\n").unwrap();
        let e = load(&file).unwrap_err().to_string();
        assert!(
            e.ends_with(":1:8: jobs must be a whole number from 1 to 1024, not \"4\""),
            "{e}"
        );
        // Past TOML's integers, the same (it said TOML's limits instead).
        std::fs::write(&file, "jobs = 99999999999999999999\n").unwrap();
        let e = load(&file).unwrap_err().to_string();
        assert!(
            e.ends_with(
                ":1:8: jobs must be a whole number from 1 to 1024, not 99999999999999999999"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_setting_that_is_not_a_finite_number_is_refused_at_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        std::fs::write(&file, "[model]\ntimeout_ms = nan\n").unwrap();
        let e = load(&file).unwrap_err().to_string();
        assert!(
            e.ends_with(":2:14: [model] timeout_ms: `NaN` is not a finite number"),
            "{e}"
        );
    }

    #[test]
    fn an_empty_path_is_refused_at_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        for (text, key, line) in [
            ("jobs = 2\nstore = \"\"\n", "store", 2),
            ("agent = \" \"\n", "agent", 1),
            ("worlds = \"w\"\ncases = [\"c\", \"\"]\n", "cases", 2),
        ] {
            std::fs::write(&file, text).unwrap();
            let e = load(&file).unwrap_err().to_string();
            assert!(e.contains(&format!(":{line}:")), "{e}");
            assert!(e.contains(&format!("`{key}` is empty")), "{e}");
        }
    }

    #[test]
    fn a_native_agent_is_named_by_exec_and_pass_env() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE);
        std::fs::create_dir(dir.path().join("agent")).unwrap();
        std::fs::write(dir.path().join("agent/run.sh"), "").unwrap();
        std::fs::write(
            &file,
            "exec = [\"agent/run.sh\", \"fast\"]\npass_env = [\"OPENAI_KEY\"]\n",
        )
        .unwrap();
        let p = load(&file).unwrap();
        let script = dir.path().join("agent/run.sh").display().to_string();
        assert_eq!(p.exec.command, [script, "fast".to_string()]);
        assert_eq!(p.exec.pass_env, Some(vec!["OPENAI_KEY".to_string()]));
        std::fs::write(&file, "agent = \"a.wasm\"\nexec = [\"x\"]\n").unwrap();
        let e = load(&file).unwrap_err();
        assert_eq!(e.line, Some((2, 8)), "{e}");
        assert!(e.message.contains("give one"), "{e}");
    }
}
