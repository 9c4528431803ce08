//! Finding cases: the case files that paths name (folders searched for
//! `*.toml`, in sorted order), and the short name a case is shown by.

use crate::error::InputError;
use std::path::{Path, PathBuf};

/// Other tools' manifests, which no search for worldline's files reads.
pub(crate) const MANIFESTS: &[&str] = &[
    "Cargo.toml",
    "pyproject.toml",
    "rust-toolchain.toml",
    "rustfmt.toml",
    "clippy.toml",
    "deny.toml",
];

/// Folders no search for worldline's files enters (`check`'s and a
/// search for cases alike): hidden ones (a `.worldline` store, `.git`),
/// build output and dependencies (`target/`, `node_modules/`,
/// `__pycache__/`), and any store (a folder with `runs/` and `objects/`,
/// whose `worlds/` holds recorded worlds).
pub(crate) fn passed_over(dir: &Path) -> bool {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    name.is_some_and(|n| {
        n.starts_with('.') || matches!(n.as_str(), "target" | "node_modules" | "__pycache__")
    }) || crate::output::is_store(dir)
}

/// Folders a search for cases passes over: those [`passed_over`], and
/// `worlds/` (world.toml files are not cases).
fn not_cases(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "worlds") || passed_over(dir)
}

/// Files a search for cases passes over: a project file (`cases = ["."]`
/// collected the project's own `worldline.toml`, a nested project's too,
/// as a broken case while `check` passed it) and other tools' manifests,
/// as `check` tells them apart.
fn not_a_case(file: &Path) -> bool {
    file.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == crate::project::FILE || MANIFESTS.contains(&n))
}

/// What kind of `.toml` a file is, from its top-level keys only (`check`
/// and a folder's search for cases ask): the values are checked as their
/// kind reads them (a case's seed past 2^63 - 1 is no TOML integer, yet a
/// case takes it as `run` does).
#[derive(serde::Deserialize)]
pub struct Keys {
    pub world: Option<serde::de::IgnoredAny>,
    tools: Option<serde::de::IgnoredAny>,
    clock_skew_s: Option<serde::de::IgnoredAny>,
    user: Option<serde::de::IgnoredAny>,
}

impl Keys {
    /// A fault profile: no world, and what only a profile holds.
    pub fn is_profile(&self) -> bool {
        self.world.is_none()
            && (self.tools.is_some() || self.clock_skew_s.is_some() || self.user.is_some())
    }
}

/// Whether the file at `path` is a fault profile (`fuzz --faults`), which
/// a folder's search for cases passes over as `check` tells it apart: a
/// profile kept beside the cases it fuzzes was a collection error of
/// `test` that `check` passed. A file that cannot be read is kept, for
/// its loading to say why.
fn is_profile(path: &Path) -> bool {
    crate::bounded::read_text(path, crate::bounded::DOCUMENT)
        .ok()
        .filter(|text| crate::toml_tokens::check(path, text).is_ok())
        .and_then(|text| toml::from_str::<Keys>(&text).ok())
        .is_some_and(|k| k.is_profile())
}

/// Case files named by the arguments, folders expanded, in sorted order,
/// each once however many arguments reach it (`test DIR DIR/a.toml` ran
/// `a` twice; `--repeat` is how a case runs more than once), by its own
/// path rather than a link's. A symbolic
/// link to a folder met inside a folder is not followed (a link to a
/// folder above would never end); a folder named as an argument is.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let p = e.path();
            if e.file_type()?.is_symlink() && p.is_dir() {
                continue;
            }
            if p.is_dir() {
                if !not_cases(&p) {
                    walk(&p, out)?;
                }
            } else if p.extension().is_some_and(|x| x == "toml")
                && !not_a_case(&p)
                && !is_profile(&p)
            {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found = Vec::new();
            walk(p, &mut found)
                .map_err(|e| InputError::new(p, format!("cannot read folder: {e}")))?;
            if found.is_empty() {
                return Err(InputError::new(p, "no .toml case files in this folder"));
            }
            found.sort();
            out.extend(found);
        } else if p.symlink_metadata().is_ok() {
            // A file, or something named that is not one (a FIFO, a
            // device, a broken link), which its loading reports.
            out.push(p.clone());
        } else {
            return Err(InputError::new(p, "no such case file or folder"));
        }
    }
    // Each file once, by its own name when a link to it is met too (a
    // link that sorted first gave the case its name).
    let link = |p: &Path| {
        p.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
    };
    let mut chosen = std::collections::BTreeMap::new();
    for (i, p) in out.iter().enumerate() {
        let kept = chosen.entry(canonical(p)).or_insert(i);
        if link(&out[*kept]) && !link(p) {
            *kept = i;
        }
    }
    let kept: std::collections::BTreeSet<usize> = chosen.into_values().collect();
    Ok((out.into_iter().enumerate())
        .filter(|(i, _)| kept.contains(i))
        .map(|(_, p)| p)
        .collect())
}

/// `path` with links and `.`/`..` resolved, when it can be (a missing
/// file's by its folder's): what tells two spellings of one file apart
/// from two files.
pub(crate) fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| {
        // A file not there (yet): its folder's path, when that is there.
        let dir = match path.parent() {
            Some(d) if d.as_os_str().is_empty() => Path::new("."),
            Some(d) => d,
            None => return path.to_path_buf(),
        };
        match (std::fs::canonicalize(dir), path.file_name()) {
            (Ok(dir), Some(name)) => dir.join(name),
            _ => path.to_path_buf(),
        }
    })
}

/// `path` with its `.` and `..` parts taken as written (`a/b/../c` is
/// `a/c`), links left alone.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `incident/stale-deploy` for `.../cases/incident/stale-deploy.toml`,
/// whatever the working folder and however the path is spelt (`.`, `..`:
/// read from the path made absolute, links left as they are).
pub fn display_name(path: &Path) -> String {
    let stem = lexical(
        &std::path::absolute(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .with_extension(""),
    );
    let parts: Vec<String> = (stem.components())
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    match parts.iter().rposition(|p| p == "cases") {
        Some(i) if i + 1 < parts.len() => parts[i + 1..].join("/"),
        _ => parts.last().cloned().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_relative_to_the_cases_folder() {
        assert_eq!(
            display_name(Path::new("/x/cases/incident/stale.toml")),
            "incident/stale"
        );
        assert_eq!(display_name(Path::new("elsewhere/one.toml")), "one");
        // Spelt with `..`, or from inside the cases folder: the same name
        // (`incident/../incident/stale`, and `stale` from `cases/`).
        assert_eq!(
            display_name(Path::new("/x/cases/incident/../incident/stale.toml")),
            "incident/stale"
        );
    }

    #[test]
    fn a_case_reached_twice_is_listed_once() {
        let dir = tempfile::tempdir().unwrap();
        let cases = dir.path().join("cases");
        std::fs::create_dir_all(&cases).unwrap();
        for name in ["a.toml", "b.toml"] {
            std::fs::write(cases.join(name), "").unwrap();
        }
        let again = dir.path().join("cases/../cases/a.toml");
        let found = expand(&[cases.join("a.toml"), cases.clone(), again]).unwrap();
        assert_eq!(found, [cases.join("a.toml"), cases.join("b.toml")]);
    }

    /// A link to a case beside it is the same case, listed by the file's
    /// own name (the link, sorted first, took the name: `complete-one`
    /// ran as `alias`, and `-k complete-one` selected nothing).
    #[test]
    fn a_case_and_a_link_to_it_are_listed_once_by_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let cases = dir.path().join("cases");
        std::fs::create_dir_all(&cases).unwrap();
        std::fs::write(cases.join("one.toml"), "").unwrap();
        std::os::unix::fs::symlink("one.toml", cases.join("alias.toml")).unwrap();
        let lone = dir.path().join("lone.toml");
        std::fs::write(&lone, "").unwrap();
        std::os::unix::fs::symlink(&lone, cases.join("a-link.toml")).unwrap();
        let found = expand(std::slice::from_ref(&cases)).unwrap();
        assert_eq!(found, [cases.join("a-link.toml"), cases.join("one.toml")]);
    }
}
