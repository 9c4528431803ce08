//! The store directory (default `.worldline/`): `runs/` holds one bundle per
//! run, `objects/` holds agents and case files by SHA-256, `cache/` holds
//! compiled components by engine hash and agent SHA-256.

use crate::canon;
use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub struct StoreDir {
    pub root: PathBuf,
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

impl StoreDir {
    /// Open (and create) a store.
    pub fn open(root: &Path) -> Result<Self> {
        for sub in ["runs", "objects", "cache"] {
            let dir = root.join(sub);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("creating the store folder {}", dir.display()))?;
        }
        Ok(StoreDir {
            root: root.to_path_buf(),
        })
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// Keep bytes under their SHA-256; returns the hash.
    pub fn put_object(&self, bytes: &[u8]) -> Result<String> {
        let sha = canon::sha256_hex(bytes);
        let path = self.object_path(&sha);
        if !path.exists() {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(sha)
    }

    pub fn object_path(&self, sha: &str) -> PathBuf {
        self.root.join("objects").join(sha)
    }

    /// A fresh run id: `YYYYMMDD-HHMMSS-xxxxxx`. The id is a name for the
    /// bundle file only; real time never enters a bundle's content.
    pub fn new_run_id(&self, salt: &str) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let n = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tag = canon::sha256_hex(format!(
            "{}:{}:{}:{n}:{salt}",
            now.as_nanos(),
            std::process::id(),
            self.root.display()
        ));
        let stamp = crate::case::time::rfc3339(now.as_secs() as i128 * 1_000_000_000);
        let compact: String = stamp
            .chars()
            .filter(|c| c.is_ascii_digit() || *c == 'T')
            .collect();
        format!("{}-{}", compact.replace('T', "-"), &tag[..6])
    }

    pub fn bundle_path(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(format!("{run_id}.jsonl"))
    }

    /// A run named by its id (or a unique prefix of it), or a path to a
    /// bundle file.
    pub fn resolve_run(&self, arg: &str) -> Result<PathBuf, crate::error::InputError> {
        let as_path = Path::new(arg);
        if as_path.is_file() {
            return Ok(as_path.to_path_buf());
        }
        let exact = self.bundle_path(arg);
        if exact.is_file() {
            return Ok(exact);
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.runs_dir())
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with(arg))
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(crate::error::InputError::new(
                &self.root,
                format!(
                    "no run `{arg}` in this store (list them with `worldline runs`, or pass a bundle path)"
                ),
            )),
            n => Err(crate::error::InputError::new(
                &self.root,
                format!("`{arg}` matches {n} runs; give more of the id"),
            )),
        }
    }
}
