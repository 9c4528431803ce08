//! The compile cache: compiled components (`<sha256>.cwasm`) in a folder
//! per engine configuration, each with a keyed checksum (`<sha256>.check`).
//!
//! Compiled code is machine code that wasmtime maps and runs without
//! validating it, so a damaged entry would crash or misbehave silently.
//! Each entry is therefore written atomically (temporary file, rename) with
//! the SHA-256 of the engine hash, the component's SHA-256 and the compiled
//! bytes beside it. Checking that sum costs ~22 ms on a 40 MB Python
//! entry, more than a cached start may take, so once an entry has checked
//! out and is [settled](worldline_case::file_identity::settled), its file identity
//! is recorded in the check file too: while the identity is unchanged (no
//! write has touched the file) the entry is trusted without reading it. A
//! damaged entry is removed with one warning and compiled again.
//!
//! Why a compile is locked: processes and threads that
//! share the folder and miss the same entry at once compiled it each, up to
//! two minutes of CPU apiece for a 20 MB service on two cores. The first
//! to miss now holds an exclusive lock on `<sha256>.lock` while it compiles;
//! the others wait for it and load what it kept (as cargo waits for its
//! package cache's lock). The kernel drops the lock of a killed holder, a
//! wait is bounded, and a folder without locks compiles as before.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use worldline_case::file_identity;

/// The longest a compile waits for another holder of its entry's lock
/// before compiling without it (a holder stopped, not killed, would
/// otherwise hold it forever). The largest service takes about two
/// minutes to compile on two loaded cores.
const COMPILE_WAIT: Duration = Duration::from_secs(600);

/// How often a waiting compile tries the lock again.
const COMPILE_POLL: Duration = Duration::from_millis(20);

/// The right to compile one entry, held until dropped: the lock file is
/// removed, then closed (which releases the lock). A waiter that opened
/// the removed file takes its lock next, finds the entry and loads it.
pub(super) struct Compiling {
    path: PathBuf,
    file: std::fs::File,
}

impl Drop for Compiling {
    fn drop(&mut self) {
        // Only while the path still names this file: a waiter that took the
        // lock of a file already removed leaves the next holder's alone.
        use std::os::unix::fs::MetadataExt as _;
        let same =
            |a: &std::fs::Metadata, b: &std::fs::Metadata| (a.dev(), a.ino()) == (b.dev(), b.ino());
        if let (Ok(held), Ok(named)) = (self.file.metadata(), std::fs::metadata(&self.path))
            && same(&held, &named)
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The variable that names one compile cache for every store (the
/// store's `compile_cache_dir`), named by a warning about a cache it gave.
const VARIABLE: &str = "WORLDLINE_COMPILE_CACHE";

/// One engine configuration's folder of compiled components.
pub(super) struct CompileCache {
    dir: PathBuf,
    engine_hash: String,
    /// [`VARIABLE`] gave the folder: its warnings name it.
    from_variable: bool,
}

/// What the check file beside an entry says.
struct Check {
    sum: String,
    /// The entry's identity when it last checked out, if it was settled.
    identity: Option<String>,
}

impl CompileCache {
    pub(super) fn new(cache_dir: &Path, engine_hash: &str) -> Self {
        let from_variable = std::env::var_os(VARIABLE).is_some_and(|v| Path::new(&v) == cache_dir);
        CompileCache {
            dir: cache_dir.join(&engine_hash[..16]),
            engine_hash: engine_hash.to_string(),
            from_variable,
        }
    }

    /// The folder of this engine configuration's entries.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the compiled component for `sha256` lives.
    pub(super) fn entry(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.cwasm"))
    }

    fn check_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.check"))
    }

    /// Wait until no other process or thread compiles the entry for
    /// `sha256` into this folder, then hold that right (see the module's
    /// doc). `None` when the lock cannot be taken (a folder that cannot be
    /// written, a file system without locks) or the wait passed
    /// [`COMPILE_WAIT`]: the caller compiles without it.
    pub(super) fn compiling(&self, sha256: &str) -> Option<Compiling> {
        std::fs::create_dir_all(&self.dir).ok()?;
        let path = self.dir.join(format!("{sha256}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        let deadline = Instant::now() + COMPILE_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Some(Compiling { path, file }),
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(COMPILE_POLL);
                }
                Err(_) => return None,
            }
        }
    }

    fn sum(&self, sha256: &str, compiled: &[u8]) -> String {
        use sha2::{Digest as _, Sha256};
        let mut h = Sha256::new();
        h.update(self.engine_hash.as_bytes());
        h.update(b"\n");
        h.update(sha256.as_bytes());
        h.update(b"\n");
        h.update(compiled);
        hex::encode(h.finalize())
    }

    fn read_check(&self, sha256: &str) -> Option<Check> {
        let text = std::fs::read_to_string(self.check_path(sha256)).ok()?;
        let mut lines = text.lines();
        let sum = lines.next()?.to_string();
        Some(Check {
            sum,
            identity: lines.next().map(String::from),
        })
    }

    /// The entry for `sha256` when it is there and intact. A damaged entry
    /// (its bytes do not match its checksum) is removed with a warning on
    /// stderr, naming `what` it compiles again (an agent, a world service);
    /// an entry without a checksum (written by an older worldline, or cut
    /// off before its checksum) is removed silently.
    pub(super) fn verified(&self, sha256: &str, what: &str) -> Option<PathBuf> {
        let path = self.entry(sha256);
        let meta = std::fs::metadata(&path).ok()?;
        let Some(check) = self.read_check(sha256) else {
            self.remove(sha256);
            return None;
        };
        if check.identity.as_deref() == Some(file_identity::of(&meta).as_str()) {
            return Some(path);
        }
        let intact = std::fs::read(&path)
            .ok()
            .is_some_and(|bytes| self.sum(sha256, &bytes) == check.sum);
        if !intact {
            ::log::warn!(
                "the compiled code cached in {} is damaged (its checksum does not match); compiling the {what} again",
                path.display()
            );
            self.remove(sha256);
            return None;
        }
        // Read again: the identity must be the one of the bytes just checked.
        if let Some(identity) = file_identity::kept(&meta, &path) {
            let text = format!("{}\n{}\n", check.sum, identity);
            let _ = worldline_case::durable::write(&self.check_path(sha256), text.as_bytes());
        }
        Some(path)
    }

    fn remove(&self, sha256: &str) {
        let _ = std::fs::remove_file(self.entry(sha256));
        let _ = std::fs::remove_file(self.check_path(sha256));
    }

    /// Keep `compiled` as the entry for `sha256`: the checksum first, then
    /// the entry, each written atomically, so an entry never appears
    /// without its checksum. Temporary files that killed writers left are
    /// swept. A cache that cannot be written is not an error (the
    /// component, `what` is compiled, is compiled again next time); it is
    /// reported once as a warning (the `log` facade, which the CLI prints
    /// on stderr), naming [`VARIABLE`] when it named the folder.
    pub(super) fn store(&self, sha256: &str, compiled: &[u8], what: &str) {
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| {
            worldline_case::durable::sweep(&self.dir);
            let check = format!("{}\n", self.sum(sha256, compiled));
            worldline_case::durable::write(&self.check_path(sha256), check.as_bytes())?;
            worldline_case::durable::write(&self.entry(sha256), compiled)
        });
        if let Err(e) = written {
            let (named, fix) = match self.from_variable {
                true => (
                    format!(" (named by {VARIABLE})"),
                    format!(" (set {VARIABLE} to a folder worldline can write, or unset it)"),
                ),
                false => Default::default(),
            };
            ::log::warn!(
                "cannot write the compile cache in {}{named}: {e}; the {what} will be compiled again next time{fix}",
                self.dir.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12";

    fn cache(dir: &Path) -> CompileCache {
        CompileCache::new(dir, &"e".repeat(64))
    }

    #[test]
    fn an_intact_entry_is_found_and_a_flipped_byte_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path());
        let compiled: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        c.store(SHA, &compiled, "agent");
        assert_eq!(c.verified(SHA, "agent"), Some(c.entry(SHA)));
        let mut damaged = compiled.clone();
        damaged[1000] ^= 0x40;
        std::fs::write(c.entry(SHA), &damaged).unwrap();
        assert_eq!(c.verified(SHA, "agent"), None);
        assert!(!c.entry(SHA).exists(), "the damaged entry is removed");
    }

    #[test]
    fn the_sum_is_keyed_by_engine_and_component() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path());
        let other = CompileCache::new(dir.path(), &"f".repeat(64));
        assert_ne!(c.sum(SHA, b"x"), other.sum(SHA, b"x"));
        assert_ne!(c.sum(SHA, b"x"), c.sum(&"cd".repeat(32), b"x"));
    }

    #[test]
    fn a_second_compile_waits_for_the_first_and_the_lock_file_goes() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path());
        let first = c.compiling(SHA).expect("the lock is free");
        let lock = c.dir.join(format!("{SHA}.lock"));
        assert!(lock.exists());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| tx.send(c.compiling(SHA).is_some()).unwrap());
            assert!(
                rx.recv_timeout(Duration::from_millis(300)).is_err(),
                "the second compile waits while the first holds the lock"
            );
            drop(first);
            assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
        });
        assert!(!lock.exists(), "the last holder removes the lock file");
    }

    #[test]
    fn an_entry_without_its_checksum_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path());
        std::fs::create_dir_all(c.entry(SHA).parent().unwrap()).unwrap();
        std::fs::write(c.entry(SHA), b"compiled by an older worldline").unwrap();
        assert_eq!(c.verified(SHA, "agent"), None);
    }
}
