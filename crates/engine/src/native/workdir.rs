//! A native run's working folder in the system's temporary folder, and
//! the sweep of those a killed worldline left. A run removes its folder
//! when it ends; one killed outright (SIGKILL) cannot, so its folder
//! stayed behind for good. Each folder is locked (`flock`) by the run that
//! owns it from before it has its name until it is removed, and the lock
//! goes with the process that held it, however it ended: a worldline
//! starting a native run removes the folders of that name it can lock,
//! which no live run owns. A folder takes its name by a rename once
//! locked, so no sweep ever meets a live run's folder unlocked.

use anyhow::{Context as _, Result};
use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// The name a run's folder has once locked (what the sweep looks for).
const PREFIX: &str = "worldline-agent-";

/// The name it is made with, before it is locked and renamed.
const MAKING: &str = ".worldline-agent-making-";

/// A run's working folder: locked while the value lives, removed when it
/// is dropped.
pub(super) struct Workdir {
    path: PathBuf,
    /// The folder opened, holding its lock.
    _lock: File,
}

impl Workdir {
    /// Sweep the folders killed runs left in the temporary folder, then
    /// make this run's.
    pub(super) fn make() -> Result<Workdir> {
        let tmp = std::env::temp_dir();
        sweep(&tmp);
        let made = tempfile::Builder::new()
            .prefix(MAKING)
            .tempdir_in(&tmp)
            .with_context(|| format!("creating the run's working folder in {}", tmp.display()))?;
        let lock = File::open(made.path())?;
        if !locked(&lock) {
            anyhow::bail!(
                "cannot lock the run's working folder {}",
                made.path().display()
            );
        }
        let name = made
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let path = tmp.join(name.replacen(MAKING, PREFIX, 1));
        std::fs::rename(made.path(), &path)
            .with_context(|| format!("naming the run's working folder {}", path.display()))?;
        let _made = made.keep();
        Ok(Workdir { path, _lock: lock })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        // Removed while still locked: no sweep takes a folder half gone.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Take the folder's lock without waiting (`flock`, which std's
/// `try_lock` is on Linux): false when another process holds it (or it
/// cannot be taken).
fn locked(dir: &File) -> bool {
    dir.try_lock().is_ok()
}

/// Remove the run folders in `tmp` that this user owns and no live
/// process holds locked. Nothing here stops a run: a folder that cannot
/// be read or removed is left as it is.
fn sweep(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(PREFIX))
        {
            continue;
        }
        let path = entry.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if !ours {
            continue;
        }
        if let Ok(dir) = File::open(&path)
            && locked(&dir)
        {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder whose lock is held is left; one whose holder is gone (its
    /// lock dropped with it) is removed.
    #[test]
    fn the_sweep_removes_only_unlocked_run_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let (live, left) = (
            tmp.path().join(format!("{PREFIX}live")),
            tmp.path().join(format!("{PREFIX}left")),
        );
        for dir in [&live, &left] {
            std::fs::create_dir(dir).unwrap();
        }
        // Another open file description: as another process's lock.
        let holder = File::open(&live).unwrap();
        assert!(locked(&holder));
        sweep(tmp.path());
        assert!(live.is_dir() && !left.exists());
        drop(holder);
        sweep(tmp.path());
        assert!(!live.exists());
    }
}
