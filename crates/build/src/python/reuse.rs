//! Same sources, same bytes: a build is kept under the SHA-256 of
//! everything it was made from, and a later build of the same sources
//! gives back the kept bytes instead of asking componentize-py again.
//!
//! componentize-py's output differs from build to build of one source
//! (measured: from the same folders, with or without `PYTHONHASHSEED`):
//! it snapshots CPython after importing the module (component-init), with
//! randomness and clocks answered by the host and the guest's variables
//! set by itself, so the interpreter's string-hash seed and `random` state
//! (the likely cause) differ, and with them the snapshot's heap. Paths,
//! file times and archive order play no part: the folders are mapped as
//! `/0`, `/1`, ... and nothing is zipped. So equal bytes come from reusing
//! a build, keyed by content
//! (docs/decisions/0313-build-python-reuses-builds-by-content.md).

use anyhow::{Context as _, Result};
use sha2::{Digest, Sha256};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use worldline_case::error::InputError;

/// What a build's bytes depend on, hashed in a fixed order.
pub(super) struct Key(Sha256);

impl Key {
    /// A key for componentize-py `version` building `what` (the agent or
    /// service module and the kind of build).
    pub(super) fn new(version: &str, what: &str) -> Self {
        let mut h = Sha256::new();
        h.update(b"worldline build-python 1\0");
        for part in [version, what] {
            h.update(part.as_bytes());
            h.update(b"\0");
        }
        Key(h)
    }

    /// Add a file's name (under `label`) and bytes.
    fn file(&mut self, label: &str, rel: &str, bytes: &[u8]) {
        self.name(label, rel, bytes.len() as u64);
        self.0.update(bytes);
    }

    /// Add a file's name (under `label`) and length: its bytes follow.
    fn name(&mut self, label: &str, rel: &str, len: u64) {
        for part in [label.as_bytes(), rel.as_bytes()] {
            self.0.update(part);
            self.0.update(b"\0");
        }
        self.0.update(len.to_le_bytes());
    }

    /// Add embedded files (the WIT, the SDK, the main module).
    pub(super) fn embedded(&mut self, label: &str, files: &[(&str, &str)]) {
        let mut sorted: Vec<&(&str, &str)> = files.iter().collect();
        sorted.sort();
        for (rel, text) in sorted {
            self.file(label, rel, text.as_bytes());
        }
    }

    /// Add every file under `dir` that Python could import or read, in
    /// path order: hidden entries, `__pycache__`, build output
    /// (`target`, `node_modules`) and components (`.wasm`, such as the
    /// build's own output beside the agent) are left out.
    pub(super) fn folder(&mut self, label: &str, dir: &Path) -> Result<()> {
        self.folder_into(label, dir, None)
    }

    /// [`Key::folder`], each file also written at its place under `into`
    /// when given: the build reads the copy, so what is hashed is what is
    /// built, and what the build writes beside its sources (CPython's
    /// `__pycache__/`) lands in the copy, not the user's folder.
    pub(super) fn folder_into(
        &mut self,
        label: &str,
        dir: &Path,
        into: Option<&Path>,
    ) -> Result<()> {
        let mut files = Vec::new();
        walk(dir, dir, &mut files, &mut Vec::new())?;
        files.sort();
        for (rel, path) in files {
            let unreadable = |e: std::io::Error| {
                InputError::new(
                    &path,
                    format!(
                        "cannot read it ({e}): a build hashes and copies every file of the agent's folder; make it readable, or move it out of the folder (a name starting with `.` is left out)"
                    ),
                )
            };
            let mut file = std::fs::File::open(&path).map_err(unreadable)?;
            let len = file.metadata().map_err(unreadable)?.len();
            let mut copy = match into {
                Some(into) => {
                    let copy = into.join(&rel);
                    if let Some(parent) = copy.parent() {
                        std::fs::create_dir_all(parent)
                            .with_context(|| format!("creating {}", parent.display()))?;
                    }
                    let made = std::fs::File::create(&copy)
                        .with_context(|| format!("writing {}", copy.display()))?;
                    Some((made, copy))
                }
                None => None,
            };
            // Read a piece at a time: a large file beside the agent (data,
            // a log) is hashed and copied without being held whole.
            self.name(label, &rel, len);
            let mut piece = vec![0u8; 1 << 16];
            let mut read = 0u64;
            loop {
                let n = file.read(&mut piece).map_err(unreadable)?;
                if n == 0 {
                    break;
                }
                read += n as u64;
                self.0.update(&piece[..n]);
                if let Some((made, at)) = copy.as_mut() {
                    made.write_all(&piece[..n])
                        .with_context(|| format!("writing {}", at.display()))?;
                }
            }
            if read != len {
                return Err(InputError::new(
                    &path,
                    "changed while the build read it: build again once nothing writes it",
                )
                .into());
            }
        }
        Ok(())
    }

    pub(super) fn hex(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// The files under `dir` (of `root`) a build takes; a folder reached
/// through a link is walked as Python imports from it (it was left out,
/// and its package said to be missing), once (`seen`: the folders on the
/// way, so a link to one of them is no loop).
fn walk(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, PathBuf)>,
    seen: &mut Vec<PathBuf>,
) -> Result<()> {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if seen.contains(&real) {
        return Ok(());
    }
    seen.push(real);
    let entries = std::fs::read_dir(dir).map_err(|e| {
        InputError::new(
            dir,
            format!("cannot read the folder ({e}): a build hashes and copies every file of the agent's folder; make it readable, or move it out"),
        )
    })?;
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type()?;
        if name.starts_with('.')
            || matches!(name.as_str(), "__pycache__" | "target" | "node_modules")
        {
            continue;
        }
        if kind.is_dir() || (kind.is_symlink() && path.is_dir()) {
            walk(root, &path, out, seen)?;
        } else if !(name.ends_with(".wasm") || name.ends_with(".pyc")) && path.is_file() {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push((rel.to_string_lossy().replace('\\', "/"), path));
        }
    }
    seen.pop();
    Ok(())
}

/// Where builds are kept: `$WORLDLINE_BUILD_CACHE`, else
/// `worldline/build-python` under the user's cache (`$XDG_CACHE_HOME`, or
/// `~/.cache`).
pub(super) fn folder() -> PathBuf {
    if let Some(dir) = std::env::var_os("WORLDLINE_BUILD_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"))
        .join("worldline")
        .join("build-python")
}

/// The kept build for `key`, if there is one whose bytes are whole (its
/// name is its key; its SHA-256 is checked against the one kept beside).
pub(super) fn kept(key: &str) -> Option<Vec<u8>> {
    let dir = folder();
    let bytes = std::fs::read(dir.join(format!("{key}.wasm"))).ok()?;
    let sha = std::fs::read_to_string(dir.join(format!("{key}.sha256"))).ok()?;
    (worldline_case::canon::sha256_hex(&bytes) == sha.trim()).then_some(bytes)
}

/// Keep `bytes` as the build for `key`, unless another build of the same
/// sources (two at once) kept its own first: the bytes kept, which the
/// caller writes, so two builds of the same sources give the same bytes
/// (the last to end replaced the first's, and the first's output was
/// never seen again). One process at a time holds the key's lock file
/// while it looks and keeps. A cache that cannot be written is the
/// caller's to report (the second of what this returns): it is not an
/// error of the build, whose own bytes are returned then.
pub(crate) fn keep_first(key: &str, bytes: Vec<u8>) -> (Vec<u8>, std::io::Result<()>) {
    let dir = folder();
    let lock = std::fs::create_dir_all(&dir).and_then(|()| {
        let file = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!(".{key}.lock")))?;
        use std::os::fd::AsRawFd as _;
        // SAFETY: flock(2) of a file this process opened; the lock goes
        // with the file when it is closed.
        match unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } {
            0 => Ok(file),
            _ => Err(std::io::Error::last_os_error()),
        }
    });
    let _held = match lock {
        Ok(file) => file,
        Err(e) => return (bytes, Err(e)),
    };
    if let Some(first) = kept(key) {
        return (first, Ok(()));
    }
    let done = keep(key, &bytes);
    (bytes, done)
}

/// Keep `bytes` as the build for `key` (written whole or not at all).
fn keep(key: &str, bytes: &[u8]) -> std::io::Result<()> {
    let dir = folder();
    for (ext, data) in [
        ("wasm", bytes.to_vec()),
        (
            "sha256",
            worldline_case::canon::sha256_hex(bytes).into_bytes(),
        ),
    ] {
        let tmp = dir.join(format!(".{key}.{ext}.{}", std::process::id()));
        std::fs::write(&tmp, &data)?;
        std::fs::rename(&tmp, dir.join(format!("{key}.{ext}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_the_sources_not_the_output_or_caches() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("agent.py"), "x = 1\n").unwrap();
        let key = || {
            let mut k = Key::new("0.25.1", "agent");
            k.folder("agent", dir.path()).unwrap();
            k.hex()
        };
        let first = key();
        std::fs::write(dir.path().join("agent.wasm"), "output").unwrap();
        std::fs::create_dir(dir.path().join("__pycache__")).unwrap();
        std::fs::write(dir.path().join("__pycache__/agent.pyc"), "c").unwrap();
        assert_eq!(key(), first);
        std::fs::write(dir.path().join("agent.py"), "x = 2\n").unwrap();
        assert_ne!(key(), first);
    }
}
