//! Where a command writes what a user asked for (`-o FILE`, `-o DIR`,
//! `--junit FILE`, `init DIR`'s files, a built component): only a new
//! path or a regular file. A symlink (dangling or not), a FIFO, a device,
//! a socket or a folder where a file is to go is refused with an error
//! naming the path (exit 2) before anything is written, so `-o /dev/null`
//! or a link planted in a shared folder never replaces or writes through
//! what is there. Every output writer goes through here.

use crate::error::InputError;
use std::io;
use std::path::Path;

/// What is at `path`, in words, unless it is nothing or a regular file.
fn refused_kind(path: &Path) -> Result<Option<&'static str>, InputError> {
    placed(path)?;
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(InputError::new(path, format!("cannot write here: {e}"))),
        Ok(m) if m.file_type().is_symlink() => Ok(Some("a symlink")),
        Ok(m) => Ok(crate::bounded::not_regular(m.file_type())),
    }
}

/// Refuse `-` as a path to write: where a command takes it for stdout
/// (`export --format atif -o -`, `otel -o -`) it says so before checking
/// the path; anywhere else it made a file or folder named `-` unsaid
/// (`test --junit -`, `bench import -o -`).
fn not_stdout(path: &Path) -> Result<(), InputError> {
    match path.as_os_str() == "-" {
        true => Err(InputError::new(
            path,
            "is not stdout here: this writes a file (or folder); give its path (`./-` for one named `-`)",
        )),
        false => Ok(()),
    }
}

/// Refuse `path` as a file to write unless it is new or a regular file.
pub fn check_file(path: &Path) -> Result<(), InputError> {
    not_stdout(path)?;
    match refused_kind(path)? {
        None => Ok(()),
        Some(kind) => Err(InputError::new(
            path,
            format!(
                "is {kind}; worldline writes only a new file or replaces a regular one: remove it or choose another path"
            ),
        )),
    }
}

/// Refuse `path` as a file to write when it is one of the command's
/// inputs (the same file, however named): `build-python agent.py -o
/// agent.py` replaced the source it had just read with the component,
/// and `test CASE --junit CASE` the case with its report, each exit 0.
pub fn check_not_input<'a>(
    path: &Path,
    inputs: impl IntoIterator<Item = &'a Path>,
    what: &str,
) -> Result<(), InputError> {
    use std::os::unix::fs::MetadataExt;
    let Ok(out) = std::fs::metadata(path) else {
        return Ok(());
    };
    let same = |input: &Path| {
        std::fs::metadata(input).is_ok_and(|m| (m.dev(), m.ino()) == (out.dev(), out.ino()))
    };
    match inputs.into_iter().find(|i| same(i)) {
        Some(input) => Err(InputError::new(
            path,
            format!(
                "is {} ({what}), which this command reads; choose another path for its output",
                input.display()
            ),
        )),
        None => Ok(()),
    }
}

/// Refuse `path` as a file to write inside one of `dirs` (however named):
/// a report written into a world's folder replaced its rows, or became a
/// table the next suite read.
pub fn check_not_inside<'a>(
    path: &Path,
    dirs: impl IntoIterator<Item = &'a Path>,
    what: &str,
) -> Result<(), InputError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Its folders that are not there yet (made when it is written) are
    // inside where their nearest one that is there is.
    let Ok(parent) = std::path::absolute(parent).map(|p| resolved(&p)) else {
        return Ok(());
    };
    let inside = |dir: &Path| std::fs::canonicalize(dir).is_ok_and(|d| parent.starts_with(d));
    match dirs.into_iter().find(|d| inside(d)) {
        Some(dir) => Err(InputError::new(
            path,
            format!(
                "is inside {} ({what}), which this command reads; choose a path outside it for its output",
                dir.display()
            ),
        )),
        None => Ok(()),
    }
}

/// What a store keeps at its top: its folders (anything under them is the
/// store's) and its files (`index.*` too). Written by `worldline-store`
/// and the engine; a crate below them, this names them to keep a user's
/// output out of them.
const STORE_FOLDERS: [&str; 8] = [
    "runs",
    "objects",
    "worlds",
    "cache",
    "leases",
    "pins",
    "grades",
    "campaigns",
];
const STORE_FILES: [&str; 6] = [
    "gc.lock",
    "policy.toml",
    "redact.toml",
    "redact.key",
    "last-test.json",
    "pulled.json",
];

/// Whether `dir` is a store: a folder with `runs/` and `objects/` (what a
/// search for cases passes over, and outputs stay out of).
pub fn is_store(dir: &Path) -> bool {
    dir.join("runs").is_dir() && dir.join("objects").is_dir()
}

/// The store `path` would write into, and what of it: a folder of the
/// store's own, or one of its files. Every store above `path` is asked,
/// not only the nearest: a store made by mistake inside another's
/// `runs/` does not open that folder to what the outer one keeps out.
fn store_part(path: &Path) -> Option<(std::path::PathBuf, String)> {
    // Where the path leads, links followed: a link to a store's `runs/`
    // (or to a folder inside it) wrote there.
    let full = resolved(&std::path::absolute(path).ok()?);
    full.ancestors()
        .skip(1)
        .filter(|dir| is_store(dir))
        .find_map(|store| {
            let rel = full.strip_prefix(store).ok()?;
            let first = rel.components().next()?.as_os_str().to_str()?.to_string();
            let top = rel.components().count() == 1;
            let own = STORE_FOLDERS.contains(&first.as_str())
                || (top && (STORE_FILES.contains(&first.as_str()) || first.starts_with("index.")));
            own.then(|| (store.to_path_buf(), first))
        })
}

/// `path` (absolute) with its links resolved: its deepest part that
/// exists made canonical, the parts after it (not there yet) kept.
fn resolved(path: &Path) -> std::path::PathBuf {
    path.ancestors()
        .find_map(|there| {
            let real = there.canonicalize().ok()?;
            let rest = path.strip_prefix(there).ok()?;
            Some(real.join(rest))
        })
        .unwrap_or_else(|| path.to_path_buf())
}

/// Refuse `root` as a store's folder when it is another store's own (its
/// `runs/`, `objects/`, ...): a store made there was listed as a broken
/// run of the outer one, let an export into the outer `runs/`, and one in
/// `objects/` was removed, runs and all, by the outer store's `gc`.
pub fn check_store_root(root: &Path) -> Result<(), InputError> {
    match store_part(root) {
        Some((store, part)) => Err(InputError::new(
            root,
            format!(
                "is in the {part} folder of the store {}, which worldline keeps for itself; pass --store {} (or a folder outside it)",
                store.display(),
                store.display()
            ),
        )),
        None => Ok(()),
    }
}

/// Refuse a path under a file (its folder "is a file, not a folder"),
/// and one that is a store's own (in its `runs/`, which holds only the
/// bundles of its runs, an export there was listed as a broken run; in
/// its `objects/`, where one over an object made every run of it
/// unreadable; its index, policy or salt). A folder that is not there is
/// made when the file is written ([`make_folder`]), as cargo and git make
/// an output's folders.
fn placed(path: &Path) -> Result<(), InputError> {
    if let Some((store, part)) = store_part(path) {
        let what = match STORE_FOLDERS.contains(&part.as_str()) {
            true => format!("is in the {part} folder of the store {}", store.display()),
            false => format!("is the store {}'s own {part}", store.display()),
        };
        return Err(InputError::new(
            path,
            format!(
                "{what}, which worldline keeps there; write it elsewhere (`worldline import` brings an export into a store)"
            ),
        ));
    }
    // The nearest of its folders that is there must be a folder.
    let there = path
        .ancestors()
        .skip(1)
        .filter(|d| !d.as_os_str().is_empty())
        .find(|d| d.exists());
    match there {
        Some(dir) if !dir.is_dir() => Err(InputError::new(
            path,
            format!(
                "{} is a file, not a folder: choose a path in a folder",
                dir.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// Make the folders of `path` that are not there (only those: nothing
/// beside them), just before the file is written, so that an output
/// refused or never written leaves none behind.
fn make_folder(path: &Path) -> Result<(), InputError> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => std::fs::create_dir_all(dir)
            .map_err(|e| InputError::new(dir, format!("cannot make the output's folder: {e}"))),
        _ => Ok(()),
    }
}

/// The store whose `runs/` folder `path` is in (`STORE/runs/NAME`, with
/// `STORE/objects/` beside it), if any.
pub fn store_holding(path: &Path) -> Option<&Path> {
    path.parent()
        .filter(|runs| runs.file_name() == Some("runs".as_ref()))
        .and_then(Path::parent)
        .filter(|store| is_store(store))
}

/// Refuse `path` unless nothing is there (not even a dangling symlink).
pub fn check_new(path: &Path, what: &str) -> Result<(), InputError> {
    not_stdout(path)?;
    placed(path)?;
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(InputError::new(path, format!("cannot write here: {e}"))),
        Ok(m) if m.file_type().is_symlink() => Err(InputError::new(
            path,
            format!("is a symlink; {what} must be a new path: remove it or choose another"),
        )),
        Ok(_) => Err(InputError::new(
            path,
            format!("already exists; {what} must be a new path: choose another"),
        )),
    }
}

/// Write `bytes` to `path` (new, or a regular file it replaces whole:
/// written beside it without a name, so a killed writer leaves nothing,
/// then linked or renamed into place).
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), InputError> {
    check_file(path)?;
    make_folder(path)?;
    crate::durable::write(path, bytes)
        .map_err(|e| InputError::new(path, format!("cannot write: {e}")))
}

/// [`write`] of what `fill` writes as it goes (a line per run): nothing
/// is at `path` until all of it is written, and an error of `fill`'s
/// leaves what was there. An error writing (`fill`'s writes included) is
/// an input error naming `path`; `fill`'s own errors pass through.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn io::Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    check_file(path)?;
    make_folder(path)?;
    crate::durable::write_with(path, fill).map_err(|e| match e.downcast::<io::Error>() {
        Ok(e) => InputError::new(path, format!("cannot write: {e}")).into(),
        Err(e) => e,
    })
}

/// Open `path` (new, or a regular file it truncates) to write as things
/// happen (`--events FILE`: a line per event, followed while it grows).
pub fn create(path: &Path) -> Result<std::fs::File, InputError> {
    check_file(path)?;
    make_folder(path)?;
    std::fs::File::create(path).map_err(|e| InputError::new(path, format!("cannot write: {e}")))
}

/// Create `path` holding `bytes`; it must not exist.
pub fn write_new(path: &Path, bytes: &[u8], what: &str) -> Result<(), InputError> {
    check_new(path, what)?;
    make_folder(path)?;
    crate::durable::create_new(path, bytes)
        .map(drop)
        .map_err(|e| InputError::new(path, format!("cannot write: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-` is refused as a file or folder to write, naming stdout; `./-`
    /// is a path like any other (`test --junit -` wrote a file `-`).
    #[test]
    fn a_dash_is_refused_as_a_path_to_write() {
        for e in [check_file(Path::new("-")), check_new(Path::new("-"), "-o")] {
            let e = e.unwrap_err().to_string();
            assert!(e.starts_with("-: is not stdout here"), "{e}");
        }
        check_file(Path::new("./-")).unwrap();
    }

    /// A path under a file says the file is no folder (it said the folder
    /// "is not there"), and one under a missing folder says so.
    #[test]
    fn a_path_under_a_file_says_the_file_is_no_folder() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("afile");
        std::fs::write(&file, "").unwrap();
        let e = check_file(&file.join("j.xml")).unwrap_err().to_string();
        assert!(e.contains("afile is a file, not a folder"), "{e}");
        let e = check_file(&file.join("deeper/j.xml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("afile is a file, not a folder"), "{e}");
    }

    /// A path whose folders are not there is taken, and writing it makes
    /// them (it was refused: "its folder ... is not there: make it
    /// first"); a refused one makes none.
    #[test]
    fn writing_a_path_makes_its_missing_folders() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b/x.toml");
        check_new(&out, "-o").unwrap();
        assert!(!dir.path().join("a").exists());
        write_new(&out, b"x", "-o").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"x");
        write(&dir.path().join("c/r.xml"), b"r").unwrap();
        assert!(dir.path().join("c/r.xml").is_file());
        let store = dir.path().join("s");
        for sub in ["runs", "objects"] {
            std::fs::create_dir_all(store.join(sub)).unwrap();
        }
        assert!(write(&store.join("runs/new/x.jsonl"), b"x").is_err());
        assert!(!store.join("runs/new").exists());
    }

    /// A missing folder inside a folder the command reads is inside it.
    #[test]
    fn a_missing_folder_inside_an_input_folder_is_inside_it() {
        let dir = tempfile::tempdir().unwrap();
        let worlds = dir.path().join("worlds");
        std::fs::create_dir_all(&worlds).unwrap();
        let e = check_not_inside(&worlds.join("new/r.xml"), [worlds.as_path()], "the worlds")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is inside"), "{e}");
    }

    /// A store's own folders and files are not a user's output: an export
    /// over an object made every run of its agent unreadable, one over
    /// `policy.toml` broke `gc`. Beside them, and anywhere else, is fine.
    #[test]
    fn a_store_s_own_folders_and_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s");
        for sub in ["runs", "objects", "cache/x"] {
            std::fs::create_dir_all(store.join(sub)).unwrap();
        }
        for own in [
            "runs/a.jsonl",
            "objects/5e26",
            "cache/x/y",
            "policy.toml",
            "redact.key",
            "index.sqlite",
            "leases/1.lease",
        ] {
            let e = check_file(&store.join(own)).unwrap_err().to_string();
            assert!(e.contains(&format!("{}", store.display())), "{own}: {e}");
            assert!(
                e.contains("which worldline keeps there; write it elsewhere"),
                "{own}: {e}"
            );
        }
        let e = check_file(&store.join("objects/5e26"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is in the objects folder of the store"), "{e}");
        let e = check_file(&store.join("policy.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("'s own policy.toml"), "{e}");
        for fine in ["export.json", "notes/policy.toml"] {
            std::fs::create_dir_all(store.join("notes")).unwrap();
            check_file(&store.join(fine)).unwrap();
        }
        check_file(&dir.path().join("policy.toml")).unwrap();
    }

    #[test]
    fn an_input_is_never_an_output() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("agent.py");
        std::fs::write(&source, "def run(task): pass\n").unwrap();
        let e = check_not_input(&source, [source.as_path()], "the agent's source")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("(the agent's source), which this command reads"),
            "{e}"
        );
        // The same file by another name.
        let link = dir.path().join("again.py");
        std::fs::hard_link(&source, &link).unwrap();
        assert!(check_not_input(&link, [source.as_path()], "a case").is_err());
        let other = dir.path().join("agent.wasm");
        check_not_input(&other, [source.as_path()], "the agent's source").unwrap();
        std::fs::write(&other, "x").unwrap();
        check_not_input(&other, [source.as_path()], "the agent's source").unwrap();
    }

    #[test]
    fn a_store_inside_another_s_own_folder_opens_nothing_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path().join("s");
        // A store made inside the outer one's runs/ before the guard.
        for sub in ["runs/runs", "runs/objects", "objects"] {
            std::fs::create_dir_all(outer.join(sub)).unwrap();
        }
        // Once let through: the nearest store above it was the inner one.
        let e = check_file(&outer.join("runs/x.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is in the runs folder of the store"), "{e}");
        for inner in ["runs", "objects", "cache/c", "worlds"] {
            let e = check_store_root(&outer.join(inner))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("pass --store {}", outer.display())),
                "{e}"
            );
        }
        check_store_root(&outer).unwrap();
        check_store_root(&dir.path().join("elsewhere")).unwrap();
    }

    #[test]
    fn only_new_paths_and_regular_files_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        write(&file, b"one").unwrap();
        write(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");

        let target = dir.path().join("target");
        std::fs::write(&target, "kept").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = write(&link, b"x").unwrap_err();
        assert!(e.message.starts_with("is a symlink"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(write(&dangling, b"x").is_err());
        assert!(!dir.path().join("nowhere").exists());

        let e = write(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(e.message.starts_with("is a character device"), "{e}");
        let e = write(dir.path(), b"x").unwrap_err();
        assert!(e.message.starts_with("is a folder"), "{e}");

        assert!(check_new(&file, "-o").is_err());
        assert!(check_new(&dangling, "-o").is_err());
        assert!(check_new(&dir.path().join("new"), "-o").is_ok());
        write_new(&dir.path().join("new"), b"n", "-o").unwrap();
        assert!(write_new(&dir.path().join("new"), b"n", "-o").is_err());
    }
}
