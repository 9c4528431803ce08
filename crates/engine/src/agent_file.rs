//! Loading an agent named by a file (`--agent A.wasm`) into the sandbox and
//! the store.
//!
//! An agent is identified by the SHA-256 of its bytes, which names its
//! compiled code in the cache. Reading and hashing an 18 MB Python
//! component costs ~13 ms on every run, most of a Python agent's start, so
//! the store remembers which SHA-256 a file had: `cache/agent-files/<key>`,
//! where the key hashes the file's canonical path, device, inode, size,
//! modification and status-change times. Any write to the file changes its
//! status-change time (which no program can set back) and replacing it
//! changes its inode, so a matching key means the same bytes. A record is
//! only written once the file is two seconds old, so a file rewritten
//! within the timestamp resolution of a coarse filesystem is never trusted
//! (git's "racy clean" rule). On a hit with the compiled code cached, the
//! file is not read at all.

use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use worldline_case::canon;
use worldline_case::file_identity;
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

/// Load the agent in `path` and keep its bytes in the store, where replay,
/// fork and export find them.
pub fn load(sandbox: &Sandbox, store: &StoreDir, path: &Path) -> Result<Arc<Agent>> {
    let record = record_path(store, path);
    if let Some(record) = &record
        && let Ok(sha) = std::fs::read_to_string(record)
        && canon::is_sha256_hex(&sha)
        // Held before it is looked for: gc leaves it from now on.
        && store.hold(&[&sha]).is_ok()
        && store.has_object(&sha)
        && let Some(agent) = sandbox.load_compiled(&sha, path)?
    {
        return Ok(agent);
    }
    let bytes = worldline_runtime::sandbox::read_agent(path)?;
    let agent = sandbox.load_bytes(&bytes, path)?;
    store.put_hashed(&bytes, &agent.sha256)?;
    if let Some(record) = record
        && settled(path)
    {
        // Best effort: without it the next run reads the file.
        worldline_case::durable::note(&record, agent.sha256.as_bytes());
    }
    Ok(agent)
}

/// `cache/agent-files/<key>` for the file as it is now (`None` when it
/// cannot be examined; the caller then reads it as usual).
fn record_path(store: &StoreDir, path: &Path) -> Option<PathBuf> {
    let canonical = std::fs::canonicalize(path).ok()?;
    let m = std::fs::metadata(&canonical).ok()?;
    let identity = format!("{}\n{}", canonical.display(), file_identity::of(&m));
    Some(
        store
            .cache_dir()
            .join("agent-files")
            .join(canon::sha256_hex(identity)),
    )
}

/// Whether the file was last changed long enough ago to be trusted.
fn settled(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| file_identity::settled(&m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_changes_with_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = StoreDir::open(&dir.path().join("store")).unwrap();
        let file = dir.path().join("a.wasm");
        std::fs::write(&file, b"one").unwrap();
        let first = record_path(&store, &file).unwrap();
        assert_eq!(record_path(&store, &file).unwrap(), first, "stable");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&file, b"two").unwrap();
        assert_ne!(
            record_path(&store, &file).unwrap(),
            first,
            "same size, rewritten"
        );
        assert!(!settled(&file), "a file just written is not trusted");
        assert!(record_path(&store, &dir.path().join("absent")).is_none());
    }
}
