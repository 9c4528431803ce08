//! `worldline check`: every case, world, fault profile and project file
//! under some paths parsed and validated (a world's tables, tools,
//! `[service]` and permissions; a case against its world), nothing run,
//! and every problem found with its file, line and column. A world's
//! service component that is not built yet is a note, not a problem: a
//! new project is checked before its first build.

use crate::case;
use crate::case::discover::{self, canonical};
use crate::error::InputError;
use crate::world::{self, Component};
use std::path::{Path, PathBuf};

/// What a checked file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Case,
    World,
    Profile,
    Project,
}

/// The outcome of a check.
#[derive(Debug, Default)]
pub struct Checked {
    /// Every file checked, in the order found, with what it is.
    pub files: Vec<(PathBuf, Kind)>,
    /// Every problem, each once, by file and line.
    pub problems: Vec<InputError>,
    /// What is fine for now but will stop a run (an unbuilt service).
    pub notes: Vec<String>,
    /// The `[service]` components of the worlds checked (directly or
    /// through a case) that are there, each once: the binary checks that
    /// each is a service, which needs what this crate does not read.
    pub services: Vec<PathBuf>,
    /// Each note about a file: its canonical path, what it says, and its
    /// place in `notes`.
    noted: Vec<(PathBuf, String, usize)>,
}

impl Checked {
    pub fn count(&self, kind: Kind) -> usize {
        self.files.iter().filter(|(_, k)| *k == kind).count()
    }

    /// The problem of the project file that governs the check (found
    /// above the paths checked, or among them), listed once with its file.
    pub fn add_project_problem(&mut self, e: InputError) {
        let file = canonical(&e.file);
        if !self.files.iter().any(|(f, _)| canonical(f) == file) {
            self.files.push((e.file.clone(), Kind::Project));
        }
        self.add_problem(e);
    }

    /// A problem found after the check (the project file's, a service
    /// component's), in its place by file and line.
    pub fn add_problem(&mut self, e: InputError) {
        self.problem(e);
        self.problems
            .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    }

    /// Keep a service component to check, once however many worlds and
    /// cases reach it.
    fn service(&mut self, file: PathBuf) {
        let seen = canonical(&file);
        if !self.services.iter().any(|f| canonical(f) == seen) {
            self.services.push(file);
        }
    }

    /// Note something about `file` once: the same note found again, under
    /// another spelling of its path (a world's own check, and a case's
    /// that reached the world from the project's folder), keeps the shorter.
    fn note(&mut self, file: &Path, message: &str) {
        let text = format!("{}: {message}", file.display());
        let key = canonical(file);
        let found = self
            .noted
            .iter()
            .find(|(f, m, _)| *m == message && *f == key)
            .map(|&(_, _, at)| at);
        match found {
            None => {
                self.noted
                    .push((key, message.to_string(), self.notes.len()));
                self.notes.push(text);
            }
            Some(at) if text.len() < self.notes[at].len() => self.notes[at] = text,
            Some(_) => {}
        }
    }

    /// Note a problem once: the same one found again, under another
    /// spelling of its file's path (a world's own check, and a case's
    /// that reached it from the project's folder), keeps the shorter.
    fn problem(&mut self, e: InputError) {
        let file = canonical(&e.file);
        let found = self
            .problems
            .iter_mut()
            .find(|a| a.line == e.line && a.message == e.message && canonical(&a.file) == file);
        match found {
            None => self.problems.push(e),
            Some(a) => {
                if e.file.as_os_str().len() < a.file.as_os_str().len() {
                    *a = e;
                }
            }
        }
    }
}

/// Check everything under `paths` (files, or folders searched for `.toml`
/// files); cases find their worlds in `worlds_root`, else in the nearest
/// `worlds/` above them. A `.toml` that `test` would collect from one of
/// `collected` (the paths named on the command line, or the project's
/// `cases`: outside a `worlds/` under them) and that is no case, world,
/// fault profile or project file is a problem, as `test` says it is: a
/// misspelt `world` key, an empty file.
pub fn check(paths: &[PathBuf], worlds_root: Option<&Path>, collected: &[PathBuf]) -> Checked {
    let collected: Vec<PathBuf> = collected.iter().map(|c| canonical(c)).collect();
    let is_collected = |f: &Path| {
        let f = canonical(f);
        collected.iter().any(|c| {
            f.strip_prefix(c)
                .is_ok_and(|under| !under.components().any(|c| c.as_os_str() == "worlds"))
        })
    };
    let mut out = Checked::default();
    // Each file once, however many of the paths reach it.
    let mut seen = std::collections::BTreeSet::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            if let Err(e) = walk(p, &mut found) {
                out.problem(InputError::new(p, format!("cannot read folder: {e}")));
            } else if found.is_empty() {
                // As `test` and `validate` refuse it: a folder with nothing
                // to check did not pass (it was `ok`, exit 0).
                out.problem(InputError::new(
                    p,
                    "no .toml files (cases, worlds, fault profiles) in this folder: name the folder or files to check",
                ));
            }
            found.sort();
            for f in found {
                if seen.insert(canonical(&f)) {
                    check_file(&f, is_collected(&f), worlds_root, &mut out);
                }
            }
        } else if p.symlink_metadata().is_ok() {
            // A file, or something named that is not one (a FIFO, a
            // device, a broken link), which its reading reports.
            if seen.insert(canonical(p)) {
                check_file(p, true, worlds_root, &mut out);
            }
        } else {
            out.problem(InputError::new(p, "no such file or folder"));
        }
    }
    // By file and place: a world's problems found through a case that
    // names it sit with the world's own.
    out.problems
        .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    out
}

/// The `.toml` files under `dir`, passing over hidden folders, build
/// output, dependencies and stores. Symbolic links to folders are not
/// followed (a link to a folder above would never end).
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if e.file_type()?.is_symlink() && p.is_dir() {
            continue;
        }
        if p.is_dir() {
            if !crate::case::discover::passed_over(&p) {
                walk(&p, out)?;
            }
        } else if name.ends_with(".toml")
            && !crate::case::discover::MANIFESTS.contains(&name.as_str())
        {
            out.push(p);
        }
    }
    Ok(())
}

fn check_file(file: &Path, named: bool, worlds_root: Option<&Path>, out: &mut Checked) {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name == crate::project::FILE {
        out.files.push((file.to_path_buf(), Kind::Project));
        // Every section on its own: a problem of one key (`jobs = 0`, an
        // unknown `[model]` key) hid the others'.
        match crate::project::read(file) {
            Err(all) => all.into_iter().for_each(|e| out.problem(e)),
            // What `test` without cases takes must be there.
            Ok((project, problems)) => {
                problems.into_iter().for_each(|e| out.problem(e));
                for e in case::model::setting_problems(&project) {
                    out.problem(e);
                }
                for (cases, at) in project.missing_cases() {
                    out.problem(InputError {
                        line: at,
                        ..InputError::new(
                            file,
                            format!(
                                "cases names {}, which is not there (`worldline test` without cases stops on it): make it, or take it out of the list",
                                cases.display()
                            ),
                        )
                    });
                }
                let at = |key: &str| project.paths_at.get(key).copied();
                // The worlds every case is read against: each case was
                // told its world is not there, never why.
                if let Some(e) = project.missing_worlds() {
                    out.problem(e);
                }
                // A store that is a file: every run stops on it.
                if let Some(e) = project.store_no_folder() {
                    out.problem(e);
                }
                // A database's password written in the file, as a
                // `[model] base_url` with credentials is.
                if let Some(e) = project.store_password() {
                    out.problem(e);
                }
                // A `recording` of its own that is not there: a run stops on
                // it (`check` said there was no problem).
                for e in project_recordings(&project) {
                    out.problem(e);
                }
                out.notes.extend(project_unset_keys(&project));
                // An agent not built yet, as a service not built yet: a
                // note (`test` stops on it).
                if let Some(agent) = project.agent.as_ref().filter(|a| !a.exists()) {
                    let (l, c) = at("agent").unwrap_or((1, 1));
                    out.notes.push(format!(
                        "{}:{l}:{c}: agent {} is not built yet; build it before a run",
                        file.display(),
                        agent.display()
                    ));
                }
            }
        }
        return;
    }
    if name == "world.toml" {
        let dir = file.parent().unwrap_or(Path::new("."));
        out.files.push((file.to_path_buf(), Kind::World));
        let (problems, notes) = world::problems(dir);
        for e in problems {
            out.problem(e);
        }
        for n in notes {
            out.note(file, &format!("[openapi] {n}"));
        }
        if let Some(file) = service_component(dir) {
            if file.exists() {
                out.service(file);
            } else if unbuilt(&file) {
                out.note(&file, UNBUILT);
            }
        }
        return;
    }
    // Inside a world folder, a `.toml` is the world's data, not a case.
    if !named
        && file
            .ancestors()
            .skip(1)
            .any(|d| d.join("world.toml").is_file())
    {
        return;
    }
    let text = crate::project::read_toml_bytes(file)
        .and_then(|b| InputError::utf8(file, b))
        .and_then(|t| crate::toml_tokens::check(file, &t).map(|()| t));
    let text = match text {
        Ok(t) => t,
        Err(e) => return out.problem(e),
    };
    let keys: discover::Keys = match toml::from_str(&text) {
        Ok(k) => k,
        Err(e) => return out.problem(InputError::toml(file, &text, &e)),
    };
    if keys.world.is_some() {
        out.files.push((file.to_path_buf(), Kind::Case));
        check_case(file, text, worlds_root, out);
    } else if keys.is_profile() {
        out.files.push((file.to_path_buf(), Kind::Profile));
        // It names no world: its tools are checked against one when
        // `fuzz --faults` runs it on a case.
        match toml::from_str::<case::fuzz::ProfileToml>(&text) {
            Ok(doc) => {
                if let Err(all) = case::fuzz::check(file, &text, (&doc, None), None, "faults file")
                {
                    all.into_iter().for_each(|e| out.problem(e));
                }
            }
            Err(e) => out.problem(InputError::toml(file, &text, &e)),
        }
    } else if named || in_cases_folder(file) {
        out.problem(InputError::new(
            file,
            "not a case (no `world = \"name@vN\"`), world, fault profile or worldline.toml",
        ));
    }
}

fn in_cases_folder(file: &Path) -> bool {
    file.components().any(|c| c.as_os_str() == "cases")
}

fn check_case(file: &Path, text: String, worlds_root: Option<&Path>, out: &mut Checked) {
    let root = worlds_root
        .map(Path::to_path_buf)
        .or_else(|| case::find_worlds_root(file));
    let (mut notes, mut services) = (Vec::new(), Vec::new());
    let parsed = case::parse_all(file, text.into_bytes(), |reference| {
        let root = root.as_ref().ok_or_else(|| {
            InputError::new(
                file,
                "no `worlds/` folder found above the case; pass --worlds DIR",
            )
        })?;
        let world = world::load_with(root, reference, file, Component::MayBeUnbuilt)?;
        services.extend(world.service.as_ref().map(|s| s.file.clone()));
        if world.service.is_none() {
            let file = service_component(&world.dir).filter(|f| unbuilt(f));
            notes.extend(file.map(|f| (f, UNBUILT.to_string())));
        }
        let toml = world.dir.join("world.toml");
        notes.extend(
            world
                .openapi_notes
                .iter()
                .map(|n| (toml.clone(), format!("[openapi] {n}"))),
        );
        Ok(world)
    });
    match parsed {
        Err(all) => all.into_iter().for_each(|e| out.problem(e)),
        Ok(case) => {
            out.notes.extend(unstartable_exec(&case));
            out.notes.extend(unknown_tool_calls(&case));
            out.notes.extend(unheld_fields(&case));
            unreadable_recordings(&case)
                .into_iter()
                .for_each(|e| out.problem(e));
            out.notes.extend(unset_keys(&case));
        }
    }
    // The world's notes once, however many of its cases are checked.
    for (file, message) in notes {
        out.note(&file, &message);
    }
    services.into_iter().for_each(|f| out.service(f));
}

/// The project file's `[model]` and `[user_model]`, each by its table's
/// name, as `--model-set` reads their keys (a table they do not read is
/// `check`'s problem elsewhere, left out here).
fn project_models(
    project: &crate::project::Project,
) -> impl Iterator<Item = (&'static str, case::model::ModelConfig)> + '_ {
    [
        ("model", &project.model),
        ("user_model", &project.user_model),
    ]
    .into_iter()
    .filter_map(|(table, keys)| {
        let model = case::model::ModelConfig::default()
            .with_overrides(keys)
            .ok()?;
        Some((table, model))
    })
}

/// The project file's `[model]` or `[user_model]` `recording` of a
/// `recorded` provider that cannot be read (its path already made
/// relative to the file), at the value's line.
fn project_recordings(project: &crate::project::Project) -> Vec<InputError> {
    project_models(project)
        .filter_map(|(table, model)| {
            let why = model.unreadable_recording(Path::new(""), "this file")?;
            let written =
                (project.settings.iter()).find(|s| s.table == table && s.key == "recording")?;
            Some(InputError {
                file: project.file.clone(),
                line: Some(written.value_at),
                message: why.replacen("[model]", &format!("[{table}]"), 1),
                store: false,
            })
        })
        .collect()
}

/// The note of an `api_key_env` this environment does not set: `run`
/// and `test` stop on it (`check` said nothing), though another
/// machine's environment may set it.
fn unset_key_note(at: String, table: &str, var: &str) -> String {
    format!(
        "{at}: [{table}] api_key_env names `{var}`, which is not set here; `run` and `test` stop on it until it is exported"
    )
}

/// The project file's `[model]` and `[user_model]` keys not set here.
fn project_unset_keys(project: &crate::project::Project) -> Vec<String> {
    project_models(project)
        .filter_map(|(table, model)| {
            let var = model.missing_key()?;
            let written =
                (project.settings.iter()).find(|s| s.table == table && s.key == "api_key_env");
            let at = match written {
                Some(w) => format!(
                    "{}:{}:{}",
                    project.file.display(),
                    w.value_at.0,
                    w.value_at.1
                ),
                None => project.file.display().to_string(),
            };
            Some(unset_key_note(at, table, var))
        })
        .collect()
}

/// A case's providers' (`[model]`, `[user.model]`, `[expect.judge_model]`)
/// keys not set here.
fn unset_keys(case: &case::Case) -> Vec<String> {
    (case.models().into_iter())
        .filter_map(|(table, m)| {
            let var = m?.missing_key()?;
            Some(unset_key_note(case.path.display().to_string(), table, var))
        })
        .collect()
}

/// A `recorded` provider's `recording` ([model], [user.model],
/// [expect.judge_model]) that cannot be read: each run would stop on it,
/// or fail every judged check.
fn unreadable_recordings(case: &case::Case) -> Vec<InputError> {
    let dir = case.path.parent().unwrap_or(Path::new("."));
    (case.models().into_iter())
        .filter_map(|(table, m)| {
            let m = m?;
            let why = (m.unreadable_recording(dir, "the case file")?).replacen(
                "[model]",
                &format!("[{table}]"),
                1,
            );
            Some(InputError {
                line: case.recording_at(table, m.recording.as_deref()?),
                ..InputError::new(&case.path, why)
            })
        })
        .collect()
}

/// A note for each scripted model reply that calls a tool the case's
/// world does not have: a typo, unless the agent defines that tool itself
/// (a handoff, a local function), so a note rather than a problem.
/// A note for a case whose own `exec` cannot start on this machine (a
/// path not there or not runnable, a name on no `PATH`): a run of it is
/// the case's error, and `check` said nothing. A note, not a problem:
/// the command may be there where the suite runs.
fn unstartable_exec(case: &case::Case) -> Option<String> {
    let exec = &case.exec;
    let why = crate::native_agent::unstartable(exec.command.first()?)?;
    let line = match exec.line {
        0 => String::new(),
        l => format!(":{l}:1"),
    };
    Some(format!(
        "{}{line}: exec: {why} on this machine; a run of this case here is its error",
        case.path.display()
    ))
}

fn unknown_tool_calls(case: &case::Case) -> Vec<String> {
    let world = &case.world;
    let names: Vec<&str> = world.tools.iter().map(|t| t.name.as_str()).collect();
    let mut out = Vec::new();
    for (entry, at, tool) in case.model.scripted_tool_calls() {
        if names.contains(&tool) {
            continue;
        }
        // The name in its own entry (every repeat of a name was placed at
        // the first).
        let from = case::model_entry_offset(&case.source, entry).unwrap_or(0);
        let quoted = format!("\"{tool}\"");
        let offset = (case.source.get(from..))
            .and_then(|rest| rest.find(&quoted))
            .map_or(from, |o| from + o);
        let place = InputError::at(&case.path, &case.source, offset, "");
        let line = place
            .line
            .map_or_else(String::new, |(l, c)| format!(":{l}:{c}"));
        out.push(format!(
            "{}{line}: {at}: the scripted model calls tool `{tool}`, which world {} does not have (its tools: {}); unless the agent defines `{tool}` itself, that call fails",
            case.path.display(),
            world.reference(),
            names.join(", ")
        ));
    }
    out
}

/// A note for each state check naming a field no row of its table holds
/// at the start ([`case::expect::Expect::unheld_fields`]), at the field's
/// line in the check (`check` said "no problems", and the check failed
/// every run).
pub fn unheld_fields(case: &case::Case) -> Vec<String> {
    let Some(expect) = &case.expect else {
        return Vec::new();
    };
    let text = &case.source;
    let mut out = Vec::new();
    for (n, key, path) in expect.unheld_fields(&case.world) {
        let start = n.offset_in(text).unwrap_or(0);
        // Within the check's table: up to the next table header.
        let table = &text[start..];
        let table = &table[..table[1.min(table.len())..]
            .find("\n[")
            .map_or(table.len(), |e| e + 1)];
        let at = written_at(table, key, &path).map_or(start, |i| start + i);
        let place = InputError::at(&case.path, text, at, "");
        let line = place
            .line
            .map_or_else(String::new, |(l, c)| format!(":{l}:{c}"));
        out.push(format!(
            "{}{line}: {}: {}",
            case.path.display(),
            n.label(),
            n.message
        ));
    }
    out
}

/// Where a state check's `key` (`field`, `sum`, `order_by`, `where`)
/// names `path` in the check's `table` text: the value of `key = "path"`,
/// or the key `path` of `where = { ... }`; else the first `"path"`, else
/// the first `path` (its field's, a dotted key, a table of its own).
/// `order_by = "zz"` and `field = "zz"` were both placed at the first.
fn written_at(table: &str, key: &str, path: &str) -> Option<usize> {
    let quoted = |at: usize| match table[..at].ends_with(['"', '\'']) {
        true => at - 1,
        false => at,
    };
    let values = (table.match_indices(key).map(|(i, _)| i))
        .filter(|&i| {
            let before = table[..i].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || "_.\"'".contains(c))
        })
        .filter_map(|i| {
            let rest = &table[i + key.len()..];
            let value = rest.trim_start().strip_prefix('=')?;
            (!value.starts_with('=')).then(|| table.len() - value.trim_start().len())
        });
    let found = match key {
        "where" => { values }.find_map(|v| Some(quoted(v + table[v..].find(path)?))),
        _ => { values }.find(|&v| {
            let value = table[v..].trim_start_matches(['"', '\'']);
            value.starts_with(path) && value[path.len()..].starts_with(['"', '\''])
        }),
    };
    let field = path.split(['.', '[']).next().unwrap_or(path);
    (found.or_else(|| table.find(&format!("\"{path}\"")))).or_else(|| table.find(field))
}

/// The note for a world's `[service]` component that is not there yet.
const UNBUILT: &str = "the [service] component is not built yet; build it before a run";

/// Whether nothing is at `file` yet (a link to a file not built is not
/// built either); one that is there but does not read (a link to itself)
/// is the world's problem, which says so.
fn unbuilt(file: &Path) -> bool {
    matches!(std::fs::metadata(file), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// The file of the `[service]` component the world in `dir` declares, when
/// it declares one inside its folder.
fn service_component(dir: &Path) -> Option<PathBuf> {
    let file = dir.join("world.toml");
    let text = String::from_utf8(crate::project::read_toml_bytes(&file).ok()?).ok()?;
    crate::toml_tokens::check(&file, &text).ok()?;
    let doc: toml::Table = toml::from_str(&text).ok()?;
    let component = doc.get("service")?.get("component")?.as_str()?;
    world::check_relative(component).ok()?;
    Some(dir.join(component))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`super::check`] of `paths`, all of them collected from (`named`,
    /// as on a command line) or none.
    fn check(paths: &[PathBuf], worlds_root: Option<&Path>, named: bool) -> Checked {
        super::check(paths, worlds_root, if named { paths } else { &[] })
    }

    /// A folder with no `.toml` file is a problem, as `test` and
    /// `validate` refuse it (it checked as `ok`).
    #[test]
    fn a_folder_with_nothing_to_check_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let checked = check(&[dir.path().to_path_buf()], None, true);
        assert_eq!(checked.problems.len(), 1, "{:?}", checked.problems);
        assert!(
            (checked.problems[0].message).contains("no .toml files"),
            "{:?}",
            checked.problems
        );
    }

    #[test]
    fn a_link_to_a_folder_above_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let cases = dir.path().join("cases");
        std::fs::create_dir_all(&cases).unwrap();
        std::os::unix::fs::symlink(dir.path(), cases.join("loop")).unwrap();
        std::fs::write(cases.join("bad.toml"), "world = \n").unwrap();
        let checked = check(&[dir.path().to_path_buf()], None, false);
        assert_eq!(checked.problems.len(), 1, "{:?}", checked.problems);
        assert_eq!(checked.problems[0].line, Some((1, 9)));
    }

    /// A file reached by two paths is checked once, and a world's problem
    /// found by its own check and by a case's (the world named through
    /// another spelling of its folder) is listed once, by the shorter path.
    #[test]
    fn a_problem_is_listed_once_however_its_file_is_reached() {
        let dir = tempfile::tempdir().unwrap();
        let (cases, world) = (dir.path().join("cases"), dir.path().join("worlds/w/v1"));
        std::fs::create_dir_all(&cases).unwrap();
        std::fs::create_dir_all(&world).unwrap();
        std::fs::write(world.join("world.toml"), "name = 5\n").unwrap();
        std::fs::write(
            cases.join("a.toml"),
            "world = \"w@v1\"\ntask = \"t\"\nclock = 2026-03-01T12:05:00Z\n",
        )
        .unwrap();
        let twice = dir.path().join("worlds/../cases");
        let checked = check(
            &[cases.clone(), twice, dir.path().join("worlds")],
            Some(&dir.path().join("./worlds")),
            false,
        );
        assert_eq!(checked.count(Kind::Case), 1, "{:?}", checked.files);
        assert_eq!(checked.problems.len(), 1, "{:?}", checked.problems);
        assert_eq!(checked.problems[0].file, world.join("world.toml"));
    }

    /// A world's unbuilt service is noted once, by the shorter spelling of
    /// its path, though the world's own check and its case's reach it by
    /// two (it was noted twice: a missing file has no canonical path).
    #[test]
    fn an_unbuilt_service_is_noted_once_however_its_world_is_reached() {
        let (dir, cases) = world_w_and_cases();
        let toml = dir.path().join("worlds/w/v1/world.toml");
        let text = std::fs::read_to_string(&toml).unwrap();
        std::fs::write(&toml, format!("{text}[service]\ncomponent = \"s.wasm\"\n[[tools]]\nname = \"go\"\nop = \"service\"\n")).unwrap();
        std::fs::write(
            cases.join("a.toml"),
            "world = \"w@v1\"\ntask = \"t\"\nclock = 2026-03-01T12:05:00Z\n",
        )
        .unwrap();
        let checked = check(
            &[cases, dir.path().join("worlds")],
            Some(&dir.path().join("cases/../worlds")),
            false,
        );
        assert!(checked.problems.is_empty(), "{:?}", checked.problems);
        let s = dir.path().join("worlds/w/v1/s.wasm");
        assert_eq!(checked.notes, [format!("{}: {UNBUILT}", s.display())]);
    }

    /// A `[service]` component that is a link to itself is the world's
    /// problem alone: it was also noted as not built yet.
    #[test]
    fn a_service_link_to_itself_is_a_problem_not_an_unbuilt_note() {
        let (dir, cases) = world_w_and_cases();
        let toml = dir.path().join("worlds/w/v1/world.toml");
        let text = std::fs::read_to_string(&toml).unwrap();
        std::fs::write(&toml, format!("{text}[service]\ncomponent = \"s.wasm\"\n[[tools]]\nname = \"go\"\nop = \"service\"\n")).unwrap();
        std::os::unix::fs::symlink("s.wasm", dir.path().join("worlds/w/v1/s.wasm")).unwrap();
        std::fs::write(
            cases.join("a.toml"),
            "world = \"w@v1\"\ntask = \"t\"\nclock = 2026-03-01T12:05:00Z\n",
        )
        .unwrap();
        let checked = check(&[cases, dir.path().join("worlds")], None, false);
        assert!(!checked.problems.is_empty(), "the loop is a problem");
        assert!(checked.notes.is_empty(), "{:?}", checked.notes);
    }

    /// A project file whose `worlds` names no folder is a problem at its
    /// line (each case was told its world is not there, never why), one
    /// whose `cases` names nothing too, and an agent not built yet a note.
    #[test]
    fn a_project_file_s_paths_that_name_nothing_are_told_at_their_lines() {
        let (dir, _cases) = world_w_and_cases();
        let file = dir.path().join(crate::project::FILE);
        std::fs::write(
            &file,
            "agent = \"build/a.wasm\"\nworlds = \"worldz\"\ncases = [\"cases\", \"gone\"]\n",
        )
        .unwrap();
        let checked = check(std::slice::from_ref(&file), None, true);
        let at: Vec<(Option<(usize, usize)>, &str)> = (checked.problems.iter())
            .map(|p| (p.line, p.message.split(',').next().unwrap()))
            .collect();
        let gone = dir.path().join("gone");
        let worldz = dir.path().join("worldz");
        assert_eq!(
            at,
            [
                (
                    Some((2, 10)),
                    format!("worlds names {}", worldz.display()).as_str()
                ),
                (
                    Some((3, 19)),
                    format!("cases names {}", gone.display()).as_str()
                ),
            ],
            "{:?}",
            checked.problems
        );
        let agent = dir.path().join("build/a.wasm");
        assert_eq!(
            checked.notes,
            [format!(
                "{}:1:9: agent {} is not built yet; build it before a run",
                file.display(),
                agent.display()
            )]
        );
    }

    /// A temporary folder with `worlds/w/v1` (one table, one row) and an
    /// empty `cases/`.
    fn world_w_and_cases() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let (cases, world) = (dir.path().join("cases"), dir.path().join("worlds/w/v1"));
        std::fs::create_dir_all(&cases).unwrap();
        std::fs::create_dir_all(world.join("data")).unwrap();
        std::fs::write(
            world.join("world.toml"),
            "name = \"w\"\nversion = 1\n[tables.t]\nkey = \"id\"\nrows = \"data/t.jsonl\"\n",
        )
        .unwrap();
        std::fs::write(world.join("data/t.jsonl"), "{\"id\": \"a\"}\n").unwrap();
        (dir, cases)
    }

    /// A folder named to `check` is read as `test` reads it: a file with a
    /// misspelt `world` key, or an empty one, is not a case (`test` said
    /// so; `check` passed both over). Its `worlds/` holds no cases.
    #[test]
    fn a_named_folder_s_file_that_is_no_case_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("f5");
        std::fs::create_dir_all(folder.join("worlds/w/v1")).unwrap();
        std::fs::write(folder.join("typo.toml"), "wrold = \"w@v1\"\n").unwrap();
        std::fs::write(folder.join("empty.toml"), "").unwrap();
        std::fs::write(folder.join("worlds/w/v1/extra.toml"), "").unwrap();
        let named = check(std::slice::from_ref(&folder), None, true);
        let files: Vec<String> = (named.problems.iter())
            .map(|p| p.file.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files, ["empty.toml", "typo.toml"], "{:?}", named.problems);
        assert!(
            named.problems[0].message.starts_with("not a case"),
            "{:?}",
            named.problems
        );
        assert!(check(&[folder], None, false).problems.is_empty());
    }

    /// A `recorded` provider whose recording is not there is a problem
    /// at the line naming it, for the case and for a model-played user:
    /// `check` said "no problems", and every run then stopped on it.
    #[test]
    fn a_recording_that_is_not_there_is_a_problem() {
        let (dir, cases) = world_w_and_cases();
        let case = "world = \"w@v1\"\nclock = 2026-03-01T12:00:00Z\ntask = {}\n\n[model]\nprovider = \"recorded\"\nrecording = \"gone.jsonl\"\n";
        std::fs::write(cases.join("c.toml"), case).unwrap();
        let checked = check(&[dir.path().to_path_buf()], None, false);
        assert_eq!(checked.problems.len(), 1, "{:?}", checked.problems);
        let p = &checked.problems[0];
        assert_eq!(p.line, Some((7, 13)), "{p:?}");
        assert!(
            p.message.contains("[model] recording `gone.jsonl`"),
            "{p:?}"
        );
        // A run's bundle begins with its header (an empty file is none).
        std::fs::write(cases.join("gone.jsonl"), "{\"header\":{}}\n").unwrap();
        assert!(
            check(&[dir.path().to_path_buf()], None, false)
                .problems
                .is_empty()
        );
    }

    /// A section of the wrong type is one problem among the file's others:
    /// `seed = -1` was the only problem listed, whatever else was wrong,
    /// and each line keeps its place. A required key of the wrong type
    /// still ends the reading.
    #[test]
    fn a_section_of_the_wrong_type_is_one_problem_among_the_others() {
        let (dir, cases) = world_w_and_cases();
        let case = "world = \"w@v1\"\nseed = -1\nclock = 2026-03-01\ntask = {}\n[limits]\nfuel = 0\n\
                    [model]\nprovider = \"scripted\"\ncolour = \"red\"\n[[inject]]\ntool = \"nope\"\nerror = \"timeout\"\n";
        std::fs::write(cases.join("c.toml"), case).unwrap();
        let checked = check(
            std::slice::from_ref(&cases),
            Some(&dir.path().join("worlds")),
            false,
        );
        let at: Vec<(usize, usize)> = checked.problems.iter().filter_map(|p| p.line).collect();
        assert_eq!(
            at,
            [(2, 8), (3, 9), (6, 8), (9, 1), (10, 1)],
            "{:?}",
            checked.problems
        );
        // The clock (a key no case is read without) of the wrong type:
        // the reading ends there.
        std::fs::write(
            cases.join("c.toml"),
            case.replace("clock = 2026-03-01", "clock = \"noon\""),
        )
        .unwrap();
        let checked = check(&[cases], Some(&dir.path().join("worlds")), false);
        let at: Vec<(usize, usize)> = checked.problems.iter().filter_map(|p| p.line).collect();
        assert_eq!(at, [(3, 9)], "{:?}", checked.problems);
    }

    /// The project's `cases` that are not there are problems: `check`
    /// said "no problems", and `test` then stopped on them.
    #[test]
    fn a_project_s_cases_that_are_not_there_are_problems() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("cases")).unwrap();
        std::fs::write(
            dir.path().join(crate::project::FILE),
            "cases = [\"cases\", \"nope\"]\n",
        )
        .unwrap();
        let checked = check(&[dir.path().to_path_buf()], None, false);
        assert_eq!(checked.problems.len(), 1, "{:?}", checked.problems);
        assert!(
            checked.problems[0].message.contains("nope"),
            "{:?}",
            checked.problems
        );
    }
}
