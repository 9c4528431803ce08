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

use std::path::{Path, PathBuf};
use worldline_case::file_identity;

/// One engine configuration's folder of compiled components.
pub(super) struct CompileCache {
    dir: PathBuf,
    engine_hash: String,
}

/// What the check file beside an entry says.
struct Check {
    sum: String,
    /// The entry's identity when it last checked out, if it was settled.
    identity: Option<String>,
}

impl CompileCache {
    pub(super) fn new(cache_dir: &Path, engine_hash: &str) -> Self {
        CompileCache {
            dir: cache_dir.join(&engine_hash[..16]),
            engine_hash: engine_hash.to_string(),
        }
    }

    /// Where the compiled component for `sha256` lives.
    pub(super) fn entry(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.cwasm"))
    }

    fn check_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.check"))
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
    /// stderr; an entry without a checksum (written by an older worldline,
    /// or cut off before its checksum) is removed silently.
    pub(super) fn verified(&self, sha256: &str) -> Option<PathBuf> {
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
                "the compiled code cached in {} is damaged (its checksum does not match); compiling the agent again",
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
    /// swept. A cache that cannot be written is not an error (the agent
    /// is compiled again next time); it is reported once as a warning (the `log` facade, which the
    /// CLI prints on stderr).
    pub(super) fn store(&self, sha256: &str, compiled: &[u8]) {
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| {
            worldline_case::durable::sweep(&self.dir);
            let check = format!("{}\n", self.sum(sha256, compiled));
            worldline_case::durable::write(&self.check_path(sha256), check.as_bytes())?;
            worldline_case::durable::write(&self.entry(sha256), compiled)
        });
        if let Err(e) = written {
            ::log::warn!(
                "cannot write the compile cache in {}: {e}; the agent will be compiled again next time",
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
        c.store(SHA, &compiled);
        assert_eq!(c.verified(SHA), Some(c.entry(SHA)));
        let mut damaged = compiled.clone();
        damaged[1000] ^= 0x40;
        std::fs::write(c.entry(SHA), &damaged).unwrap();
        assert_eq!(c.verified(SHA), None);
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
    fn an_entry_without_its_checksum_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let c = cache(dir.path());
        std::fs::create_dir_all(c.entry(SHA).parent().unwrap()).unwrap();
        std::fs::write(c.entry(SHA), b"compiled by an older worldline").unwrap();
        assert_eq!(c.verified(SHA), None);
    }
}
