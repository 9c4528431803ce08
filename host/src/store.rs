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
        self.put_hashed(bytes, &sha)?;
        Ok(sha)
    }

    /// [`put_object`](Self::put_object) for bytes whose SHA-256 the caller
    /// just computed (hashing an 18 MB Python agent twice costs ~10 ms).
    pub fn put_hashed(&self, bytes: &[u8], sha: &str) -> Result<()> {
        let path = self.object_path(sha);
        if !path.exists() {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }

    /// Keep a world's files and its manifest (path → hash), so a run can
    /// be replayed after the world folder changes. The manifest's own hash
    /// is the world hash.
    pub fn put_world(&self, world: &crate::world::World) -> Result<()> {
        if self.object_path(&world.hash).exists() {
            return Ok(());
        }
        for (rel, sha) in &world.manifest {
            if !self.object_path(sha).exists() {
                let bytes = std::fs::read(world.dir.join(rel))
                    .with_context(|| format!("reading {}/{rel}", world.dir.display()))?;
                anyhow::ensure!(
                    canon::sha256_hex(&bytes) == *sha,
                    "{}/{rel} changed while it was being stored",
                    world.dir.display()
                );
                self.put_object(&bytes)?;
            }
        }
        let manifest = canon::to_string(&world.manifest);
        anyhow::ensure!(
            canon::sha256_hex(&manifest) == world.hash,
            "world manifest does not hash to the world hash"
        );
        self.put_object(manifest.as_bytes())?;
        Ok(())
    }

    /// Keep what re-running a case needs: its text and its world.
    pub fn put_case(&self, case: &crate::case::Case) -> Result<()> {
        self.put_object(case.source.as_bytes())?;
        self.put_world(&case.world)
    }

    /// Read an object and check it still hashes to its name.
    pub fn get_object(&self, sha: &str) -> Result<Vec<u8>, crate::error::InputError> {
        let path = self.object_path(sha);
        let bytes = std::fs::read(&path).map_err(|e| {
            crate::error::InputError::new(&path, format!("object missing from the store: {e}"))
        })?;
        if canon::sha256_hex(&bytes) != sha {
            return Err(crate::error::InputError::new(
                &path,
                "object does not match its hash (the store was modified)",
            ));
        }
        Ok(bytes)
    }

    /// The recorded world `world_hash`, rebuilt from the store into
    /// `worlds/<hash>/` and loaded from there.
    pub fn load_world(
        &self,
        world_hash: &str,
    ) -> Result<crate::world::World, crate::error::InputError> {
        let manifest_bytes = self.get_object(world_hash)?;
        let manifest: std::collections::BTreeMap<String, String> =
            serde_json::from_slice(&manifest_bytes).map_err(|e| {
                crate::error::InputError::new(
                    self.object_path(world_hash),
                    format!("not a world manifest: {e}"),
                )
            })?;
        let dir = self.root.join("worlds").join(world_hash);
        if !dir.join("world.toml").is_file() {
            let tmp = self
                .root
                .join("worlds")
                .join(format!("{world_hash}.tmp{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            for (rel, sha) in &manifest {
                crate::world::check_relative(rel)
                    .map_err(|m| crate::error::InputError::new(self.object_path(world_hash), m))?;
                let bytes = self.get_object(sha)?;
                let dest = tmp.join(rel);
                let io = |e: std::io::Error| crate::error::InputError::new(&dest, e.to_string());
                std::fs::create_dir_all(dest.parent().unwrap_or(&tmp)).map_err(io)?;
                std::fs::write(&dest, bytes).map_err(io)?;
            }
            if let Err(e) = std::fs::rename(&tmp, &dir)
                && !dir.join("world.toml").is_file()
            {
                return Err(crate::error::InputError::new(&dir, e.to_string()));
            }
        }
        let world = crate::world::load_dir(&dir)?;
        if world.hash != world_hash {
            return Err(crate::error::InputError::new(
                &dir,
                "the stored world does not hash to the recorded world hash",
            ));
        }
        Ok(world)
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
        let stamp = crate::time::rfc3339(now.as_secs() as i128 * 1_000_000_000);
        let compact: String = stamp
            .chars()
            .filter(|c| c.is_ascii_digit() || *c == 'T')
            .collect();
        format!("{}-{}", compact.replace('T', "-"), &tag[..6])
    }

    pub fn bundle_path(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(format!("{run_id}.jsonl"))
    }

    /// Every run id in the store, oldest first.
    pub fn run_ids(&self) -> Result<Vec<String>> {
        let mut ids: Vec<String> = std::fs::read_dir(self.runs_dir())
            .with_context(|| format!("reading {}", self.runs_dir().display()))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                e.file_name()
                    .to_string_lossy()
                    .strip_suffix(".jsonl")
                    .map(String::from)
            })
            .collect();
        ids.sort();
        Ok(ids)
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
