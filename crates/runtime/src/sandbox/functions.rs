//! Compiled functions kept by content, shared by every component an engine
//! compiles: Cranelift's incremental cache (`functions/<aa>/<key>` beside
//! the compile cache's entries).
//!
//! Why: the compile cache is keyed by a component's bytes, and most of a
//! component's code is not its own. Every Python agent and world service
//! carries the same CPython, every JavaScript agent the same engine; a
//! build of an edited agent, or a JavaScript build (whose bytes differ from
//! build to build), was compiled whole again, up to two minutes of CPU for
//! a 20 MB service on two cores. Cranelift keys each function by its
//! content (its code with calls and other functions' places left out, and
//! the compiler's settings and version), so a function compiled once for
//! any component is taken from here by the next (decision 0409).
//!
//! A value is machine code the engine will run, so each file holds the
//! SHA-256 of its key and value before the value: a file that does not
//! match (damaged, cut short) is a miss, and the function is compiled
//! again and written over it. Files are written whole (temporary file,
//! rename), so concurrent compiles of one function agree.

use sha2::{Digest as _, Sha256};
use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// The largest value read back: a function's compiled code, relocations
/// and metadata. Larger files are not read (the function is compiled).
const MAX_VALUE: u64 = 64 << 20;

/// One engine configuration's compiled functions.
#[derive(Debug)]
pub(super) struct FunctionCache {
    dir: PathBuf,
    /// Sweeps temporary files killed writers left, once per process that
    /// writes here.
    swept: Once,
}

impl FunctionCache {
    /// The functions of the compile cache folder `engine_dir`.
    pub(super) fn new(engine_dir: &Path) -> Self {
        FunctionCache {
            dir: engine_dir.join("functions"),
            swept: Once::new(),
        }
    }

    fn path(&self, key: &[u8]) -> PathBuf {
        let hex = hex::encode(key);
        let (fan, rest) = hex.split_at(2.min(hex.len()));
        self.dir.join(fan).join(rest)
    }

    fn sum(key: &[u8], value: &[u8]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update((key.len() as u64).to_le_bytes());
        h.update(key);
        h.update(value);
        h.finalize().into()
    }

    /// A regular file of at most the bound (a FIFO or a device put there
    /// is a miss, never waited on), whose sum matches.
    fn read(&self, key: &[u8]) -> Option<Vec<u8>> {
        let mut bytes = worldline_case::bounded::read(&self.path(key), MAX_VALUE + 32).ok()?;
        let (sum, value) = bytes.split_at_checked(32)?;
        (Self::sum(key, value) == sum).then(|| {
            bytes.drain(..32);
            bytes
        })
    }

    fn write(&self, key: &[u8], value: &[u8]) -> std::io::Result<()> {
        let path = self.path(key);
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir)?;
        self.swept.call_once(|| {
            for fan in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
                worldline_case::durable::sweep(&fan.path());
            }
        });
        let mut bytes = Vec::with_capacity(32 + value.len());
        bytes.extend_from_slice(&Self::sum(key, value));
        bytes.extend_from_slice(value);
        worldline_case::durable::write(&path, &bytes)
    }
}

impl wasmtime::CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        self.read(key).map(Cow::Owned)
    }

    /// A folder that cannot be written loses nothing but time: the
    /// function is compiled again next time (the compile cache warns).
    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        self.write(key, &value).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::CacheStore as _;

    #[test]
    fn a_kept_function_is_found_and_a_damaged_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::new(dir.path());
        let key = [7u8; 32];
        assert!(cache.get(&key).is_none());
        let value: Vec<u8> = (0..5000u32).map(|i| (i * 13) as u8).collect();
        assert!(cache.insert(&key, value.clone()));
        assert_eq!(cache.get(&key).as_deref(), Some(&value[..]));
        assert!(cache.get(&[8u8; 32]).is_none(), "another key is a miss");

        let path = cache.path(&key);
        let mut damaged = std::fs::read(&path).unwrap();
        damaged[100] ^= 1;
        std::fs::write(&path, &damaged).unwrap();
        assert!(cache.get(&key).is_none(), "a flipped byte is a miss");
        std::fs::write(&path, &damaged[..20]).unwrap();
        assert!(cache.get(&key).is_none(), "a cut file is a miss");

        assert!(cache.insert(&key, value.clone()), "written over");
        assert_eq!(cache.get(&key).as_deref(), Some(&value[..]));
    }

    #[test]
    fn a_value_kept_under_one_key_is_not_taken_for_another() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::new(dir.path());
        assert!(cache.insert(&[1u8; 32], b"code of one".to_vec()));
        // The same file moved under another function's name.
        std::fs::create_dir_all(cache.path(&[2u8; 32]).parent().unwrap()).unwrap();
        std::fs::copy(cache.path(&[1u8; 32]), cache.path(&[2u8; 32])).unwrap();
        assert!(cache.get(&[2u8; 32]).is_none());
    }

    #[test]
    fn a_fifo_in_place_of_a_function_is_a_miss_not_a_wait() {
        let dir = tempfile::tempdir().unwrap();
        let cache = FunctionCache::new(dir.path());
        let path = cache.path(&[4u8; 32]);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.unwrap().success());
        assert!(cache.get(&[4u8; 32]).is_none());
    }

    #[test]
    fn a_folder_that_cannot_be_written_is_a_miss_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-folder");
        std::fs::write(&file, b"").unwrap();
        let cache = FunctionCache::new(&file);
        assert!(!cache.insert(&[3u8; 32], b"code".to_vec()));
        assert!(cache.get(&[3u8; 32]).is_none());
    }
}
