//! Reading a world folder: every file through a capability-based handle
//! opened on the folder, so a world cannot read outside it (`../`,
//! absolute paths and symlinks that leave the folder are refused), each
//! file read noted in the manifest with its SHA-256.

use super::state::{FileData, Files};
use crate::canon;
use crate::error::InputError;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

/// Refuse paths that could leave the folder before even trying them.
pub fn check_relative(rel: &str) -> Result<(), String> {
    let p = Path::new(rel);
    if p.is_absolute() || rel.starts_with('/') || rel.starts_with('\\') {
        return Err(format!("`{rel}` is absolute; use a path inside the folder"));
    }
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!(
            "`{rel}` leaves the folder (`..`); use a path inside it"
        ));
    }
    Ok(())
}

/// The longest name of one file or folder a filesystem takes (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// Refuse a world manifest whose files could not all be written back as
/// a folder: a path outside it ([`check_relative`]), a name longer than a
/// filesystem takes, or a path that is a file and a folder at once
/// (`a.txt` and `a.txt/b`). An imported run's world was refused only as
/// each reader wrote it out, with the advice to free some space.
pub fn check_manifest(manifest: &BTreeMap<String, String>) -> Result<(), String> {
    for rel in manifest.keys() {
        check_relative(rel)?;
        if let Some(long) = rel.split('/').find(|name| name.len() > NAME_MAX) {
            return Err(format!(
                "`{}…` in `{rel}` is a name of {} bytes; a file's name is at most {NAME_MAX}",
                long.chars().take(20).collect::<String>(),
                long.len()
            ));
        }
        let inside = format!("{rel}/");
        // The paths under `rel/` sort together, from `rel/` on.
        if let Some((under, _)) = manifest
            .range::<str, _>((Bound::Included(inside.as_str()), Bound::Unbounded))
            .next()
            .filter(|(k, _)| k.starts_with(&inside))
        {
            return Err(format!(
                "`{rel}` is a file, and `{under}` makes it a folder too"
            ));
        }
    }
    Ok(())
}

/// `rel` inside `dir`, through the capability handle, without blocking
/// on a FIFO, regular files only, at most `cap` bytes.
fn read_in(dir: &Dir, rel: &str, cap: u64) -> Result<Vec<u8>, crate::bounded::Refused> {
    use cap_std::fs::OpenOptionsExt as _;
    let file = dir.open_with(
        rel,
        cap_std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK),
    )?;
    crate::bounded::read_open(file.into_std(), cap)
}

/// One world folder, read through a capability handle on it; every file
/// read goes into the manifest with its SHA-256.
pub(crate) struct Folder<'a> {
    dir: Dir,
    pub path: &'a Path,
    pub manifest: BTreeMap<String, String>,
}

impl<'a> Folder<'a> {
    pub(crate) fn open(path: &'a Path) -> Result<Self, InputError> {
        let dir = Dir::open_ambient_dir(path, ambient_authority())
            .map_err(|e| InputError::new(path, format!("cannot open world folder: {e}")))?;
        Ok(Folder {
            dir,
            path,
            manifest: BTreeMap::new(),
        })
    }

    pub(crate) fn read_text(&mut self, rel: &str) -> Result<String, InputError> {
        let file = self.path.join(rel);
        let bytes = self.read_bytes(rel, crate::bounded::DOCUMENT)?;
        InputError::utf8(&file, bytes)
    }

    /// A file of the folder, at most `cap` bytes, regular files only.
    pub(crate) fn read_bytes(&mut self, rel: &str, cap: u64) -> Result<Vec<u8>, InputError> {
        let file = self.path.join(rel);
        check_relative(rel).map_err(|m| InputError::new(&file, m))?;
        let bytes = read_in(&self.dir, rel, cap).map_err(|e| {
            let why = match e {
                // cap-std's refusal of a path out of the folder (its kind
                // is PermissionDenied, as a file this user may not read
                // is, which was called "a symlink out?" too).
                crate::bounded::Refused::Io(e) if e.to_string().contains("outside") => {
                    "it resolves outside the folder (a symlink out?)".to_string()
                }
                crate::bounded::Refused::Io(e) => e.to_string(),
                other => format!("it {other}; world files must be plain files"),
            };
            InputError::new(&file, format!("cannot read: {why}"))
        })?;
        self.manifest
            .insert(rel.to_string(), canon::sha256_hex(&bytes));
        Ok(bytes)
    }

    /// Every file under `[files] dir`, named by its path inside it; what
    /// is wrong with the folder, as a message for `[files]`'s place.
    pub(crate) fn read_files(&mut self, sub: &str) -> Result<Files, String> {
        check_relative(sub).map_err(|m| format!("[files] dir: {m}"))?;
        // A link out of the world's folder is said so, with what to do
        // (it was cap-std's "a path led outside of the filesystem").
        let said = |e: std::io::Error| match e.to_string().contains("outside") {
            true => format!(
                "[files] dir `{sub}`: it resolves outside the world's folder (a symlink out?); a world's files are in its folder: copy them there"
            ),
            false => format!("[files] dir `{sub}`: {e}"),
        };
        let handle = match self.dir.open_dir(sub) {
            // A recorded world's copy in a store has no folder its files
            // did not make: an empty one was not copied, and every run of
            // the world could not be shown or replayed.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !crate::new_rules::apply() => {
                return Ok(Files::new());
            }
            other => other.map_err(said)?,
        };
        let mut found = Vec::new();
        walk(&handle, "", &mut found).map_err(said)?;
        let mut files = Files::new();
        for (path, bytes) in found {
            self.manifest
                .insert(format!("{sub}/{path}"), canon::sha256_hex(&bytes));
            files.insert(path, FileData::from_bytes(bytes));
        }
        Ok(files)
    }
}

fn walk(dir: &Dir, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    let mut entries: Vec<_> = dir.entries()?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        // A name that is not UTF-8 was read back by its lossy form, which
        // names no file ("No such file or directory" of a file that is there).
        let Some(name) = e.file_name().to_str().map(String::from) else {
            return Err(std::io::Error::other(format!(
                "`{}` is not named in UTF-8, as a world's files are named in its manifest: rename it",
                e.file_name().to_string_lossy()
            )));
        };
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let ft = e.file_type()?;
        if ft.is_dir() {
            walk(&e.open_dir()?, &path, out)?;
        } else if ft.is_file() {
            let bytes = read_in(dir, &name, crate::bounded::DOCUMENT)
                .map_err(|e| std::io::Error::other(format!("`{path}` {e}")))?;
            out.push((path, bytes));
        } else {
            return Err(std::io::Error::other(format!(
                "`{path}` is a symlink or special file; world files must be plain files"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_must_stay_inside() {
        assert!(check_relative("data/rows.jsonl").is_ok());
        assert_eq!(
            check_relative("../secret").unwrap_err(),
            "`../secret` leaves the folder (`..`); use a path inside it"
        );
        assert_eq!(
            check_relative("/etc/passwd").unwrap_err(),
            "`/etc/passwd` is absolute; use a path inside the folder"
        );
    }

    #[test]
    fn a_manifest_is_refused_when_its_files_cannot_be_a_folder() {
        let of = |names: &[&str]| -> BTreeMap<String, String> {
            names
                .iter()
                .map(|n| (n.to_string(), String::new()))
                .collect()
        };
        let ok = of(&["a.txt", "a.txt-b/c", "a.txt.bak", "a.txt0", "b/c/d"]);
        assert_eq!(check_manifest(&ok), Ok(()));
        assert_eq!(
            check_manifest(&of(&["a.txt", "a.txt-b", "a.txt/sub"])).unwrap_err(),
            "`a.txt` is a file, and `a.txt/sub` makes it a folder too"
        );
        let long = format!("d/{}", "x".repeat(256));
        assert!(
            check_manifest(&of(&[&long]))
                .unwrap_err()
                .contains("is a name of 256 bytes; a file's name is at most 255")
        );
        assert!(check_manifest(&of(&["../up"])).is_err());
    }
}
