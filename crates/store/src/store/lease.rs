//! Leases: how a process that writes or reads runs keeps `worldline gc`
//! from removing what it uses.
//!
//! A process holds names (object hashes, world hashes, run ids) in its own
//! lease file, `<store>/leases/<pid>-<n>.lease`, one name a line, which it
//! keeps locked (an exclusive `flock`) for as long as it lives. Adding names
//! takes `<store>/gc.lock` shared; a gc pass takes it exclusively for the
//! whole pass, so a name is either in a lease before the pass reads the
//! leases, or added after the pass has finished deleting (and the writer
//! then finds the object gone and stores it again). A lease whose lock can
//! be taken belongs to a process that has ended: the pass removes it.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The folder of lease files in a store.
const DIR: &str = "leases";

/// The file gc passes lock exclusively and lease holders shared.
const GATE: &str = "gc.lock";

/// The most a lease file is read: the ids of the runs one process holds,
/// a line each.
const LEASE_BYTES: u64 = 256 << 20;

static NEXT: AtomicU64 = AtomicU64::new(0);

/// This process's lease on one store.
pub(crate) struct Leases {
    root: PathBuf,
    own: Mutex<Option<Own>>,
    /// `gc.lock`, opened at the first hold and kept: a suite holds a new
    /// run id for every run, and opening it each time cost an `openat` and
    /// a `close` a run (decision 0394).
    gate: Mutex<Option<File>>,
}

/// The lease file once created: kept open (and locked) until dropped.
struct Own {
    file: File,
    path: PathBuf,
    held: BTreeSet<String>,
}

impl Leases {
    /// The leases of the store at `root` (nothing is created until a name
    /// is held).
    pub(crate) fn new(root: &Path) -> Leases {
        Leases {
            root: root.to_path_buf(),
            own: Mutex::new(None),
            gate: Mutex::new(None),
        }
    }

    /// Hold `names` until this process ends: no gc pass that starts after
    /// this returns removes them. Waits while a pass is running.
    pub(crate) fn hold(&self, names: &[&str]) -> io::Result<()> {
        let mut own = self.own.lock().unwrap_or_else(|e| e.into_inner());
        let new: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !n.is_empty() && !own.as_ref().is_some_and(|o| o.held.contains(*n)))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        let mut gate = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        if gate.is_none() {
            *gate = Some(open_gate(&self.root)?);
        }
        let gate = gate.as_ref().expect("opened above");
        gate.lock_shared()?;
        let written = (|| {
            if own.is_none() {
                *own = Some(self.create()?);
            }
            let o = own.as_mut().expect("created above");
            let mut lines = String::new();
            for n in &new {
                lines.push_str(n);
                lines.push('\n');
            }
            o.file.write_all(lines.as_bytes())?;
            o.held.extend(new.iter().map(|n| n.to_string()));
            Ok(())
        })();
        gate.unlock()?;
        written
    }

    fn create(&self) -> io::Result<Own> {
        let dir = self.root.join(DIR);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!(
            "{}-{}.lease",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let file = File::options().append(true).create_new(true).open(&path)?;
        file.lock()?;
        Ok(Own {
            file,
            path,
            held: BTreeSet::new(),
        })
    }
}

impl Drop for Leases {
    fn drop(&mut self) {
        let own = self.own.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(o) = own.take() {
            let _ = std::fs::remove_file(&o.path);
            drop(o.file);
        }
    }
}

fn open_gate(root: &Path) -> io::Result<File> {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(root.join(GATE))
}

/// A gc pass: while it lives, no process can add names to its lease.
pub(crate) struct Pass {
    _gate: File,
    /// Every name a live process holds.
    pub held: BTreeSet<String>,
}

/// Begin a gc pass on the store at `root`: wait for the exclusive lock,
/// read the live leases and, when `sweep` (not a dry run, which removes
/// nothing), remove the ones whose process has ended.
pub(crate) fn begin_pass(root: &Path, sweep: bool) -> io::Result<Pass> {
    let gate = open_gate(root)?;
    gate.lock()?;
    let mut held = BTreeSet::new();
    let entries = match std::fs::read_dir(root.join(DIR)) {
        Ok(rd) => rd.filter_map(Result::ok).map(|e| e.path()).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    for path in entries {
        // Not opened in a way that waits on a FIFO; a lease is a file.
        let Ok(file) = worldline_case::bounded::open(&path) else {
            continue;
        };
        match file.try_lock() {
            // Its process has ended (the lock went with it).
            Ok(()) if sweep => {
                let _ = std::fs::remove_file(&path);
            }
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let bytes = worldline_case::bounded::read_open(file, LEASE_BYTES)
                    .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
                let text = String::from_utf8_lossy(&bytes).into_owned();
                held.extend(text.lines().map(String::from));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
    Ok(Pass { _gate: gate, held })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_sees_live_leases_and_removes_ended_ones() {
        let dir = tempfile::tempdir().unwrap();
        let live = Leases::new(dir.path());
        live.hold(&["aa", "bb"]).unwrap();
        live.hold(&["bb", "cc"]).unwrap();
        let ended = Leases::new(dir.path());
        ended.hold(&["dd"]).unwrap();
        // An ended process: its file stays, its lock is gone.
        let left = ended.own.lock().unwrap().take().unwrap();
        drop(left.file);
        let dry = begin_pass(dir.path(), false).unwrap();
        assert!(left.path.exists(), "a dry run removes no lease");
        drop(dry);
        let pass = begin_pass(dir.path(), true).unwrap();
        let held: Vec<&str> = pass.held.iter().map(String::as_str).collect();
        assert_eq!(held, ["aa", "bb", "cc"]);
        assert!(!left.path.exists(), "the ended lease is removed");
        drop(pass);
        drop(live);
        assert_eq!(std::fs::read_dir(dir.path().join(DIR)).unwrap().count(), 0);
    }
}
