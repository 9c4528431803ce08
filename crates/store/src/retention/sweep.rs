//! Carrying out a retention plan: delete bundles (and their index rows),
//! then objects no kept run references, extracted worlds no kept run uses,
//! and compile-cache entries unused for the policy's days. On a database
//! store the database removes its runs and objects first, keeping what a
//! live process on any machine holds or a remaining run needs
//! (`pgstore/leases.rs`); what it keeps stays in the working folder too.
//! With `dry_run` nothing is deleted and the report says what would be.

use super::policy::Policy;
use super::{pins, plan};
use crate::index::Index;
use crate::store::StoreDir;
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;
use worldline_case::canon::is_sha256_hex;

/// Objects and worlds younger than this stay whatever references them: a
/// run stores its agent, case and world before its bundle exists.
const GRACE_S: i64 = 3600;

/// One kind of thing removed.
#[derive(Debug, Default, Serialize)]
pub struct Removed {
    pub count: usize,
    pub bytes: u64,
    /// What was removed (run ids, object hashes, paths in the store).
    pub items: Vec<String>,
}

impl Removed {
    fn add(&mut self, item: String, bytes: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.items.push(item);
    }
}

/// What `gc` did (or, with `dry_run`, would do).
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub dry_run: bool,
    pub policy: Policy,
    pub kept: usize,
    /// Runs kept only because a kept run forks from them.
    pub kept_as_parents: Vec<String>,
    /// Runs kept only because they are pinned.
    pub kept_pinned: Vec<String>,
    /// Runs the policy would remove that the database keeps: a live
    /// process (on any machine) holds them, or a run stored since this
    /// machine's index was read forks from them.
    pub kept_in_use: Vec<String>,
    pub runs: Removed,
    pub objects: Removed,
    pub worlds: Removed,
    pub cache: Removed,
    pub bytes_freed: u64,
    /// Why objects were left alone, when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects_skipped: Option<String>,
}

/// Apply `policy` to the store at time `now` (Unix seconds).
pub fn gc(store: &StoreDir, policy: &Policy, now: i64, dry_run: bool) -> Result<Report> {
    // The whole pass holds the store's gate: no process adds to its lease
    // meanwhile, and what the live leases hold stays.
    let pass = crate::store::lease::begin_pass(&store.root, !dry_run)
        .with_context(|| format!("reading the leases of {}", store.root.display()))?;
    let held = &pass.held;
    let (mut rows, _) = Index::read(store, Index::all)?;
    // A row under a name that is no run id (one an older worldline
    // indexed for a file in `runs/`) is no run: its file is left in place.
    rows.retain(|r| crate::store::is_run_id(&r.run_id));
    let pinned = pins::list(store)?;
    let p = plan(&rows, &pinned, held, policy, now);
    let mut report = Report {
        dry_run,
        policy: policy.clone(),
        kept: p.keep.len(),
        kept_as_parents: p.kept_as_parents.iter().cloned().collect(),
        kept_pinned: p.kept_pinned.iter().cloned().collect(),
        ..Report::default()
    };
    // What no kept run needs: `None` when a kept run is unreadable.
    let needs = match p.keep.iter().find(|r| r.outcome == "broken") {
        Some(r) => {
            report.objects_skipped = Some(format!(
                "run {} is unreadable, so the objects it needs are unknown; objects and worlds are left alone",
                r.run_id
            ));
            None
        }
        None => Some(needed(store, &p, held)),
    };
    // A database store: the database removes the runs and objects no live
    // process on any machine holds and no remaining run needs, under its
    // gc gate (`pgstore/leases.rs`); what it keeps stays here too.
    let mut in_use = BTreeSet::new();
    let mut db_objects = Vec::new();
    if let Some(db) = store.database() {
        let candidates: Vec<String> = match &needs {
            Some((_, needed)) => db
                .objects_older_than(GRACE_S)
                .map_err(crate::store::db_error)?
                .into_iter()
                .filter(|n| !needed.contains(n))
                .collect(),
            None => Vec::new(),
        };
        let ids: Vec<String> = p.remove.iter().map(|r| r.run_id.clone()).collect();
        let collected = match dry_run {
            true => db.would_collect(&ids, &candidates, GRACE_S),
            false => db.collect(&ids, &candidates, GRACE_S),
        }
        .map_err(crate::store::db_error)?;
        in_use.extend(collected.runs_kept);
        db_objects = collected.objects;
    }
    warn_strays(store);
    let mut gone = Vec::new();
    for r in &p.remove {
        if in_use.contains(&r.run_id) {
            continue;
        }
        let path = store.bundle_path(&r.run_id);
        let bytes = std::fs::metadata(&path).map_or(r.size, |m| m.len());
        // Not a bundle worldline wrote: left where it is, and the pass
        // goes on (it stopped every pass, exit 4); a dry run says so too
        // (it counted the folder as removed).
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            folder_left(&path);
            continue;
        }
        if !dry_run {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                // Made a folder since it was looked at.
                Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
                    folder_left(&path);
                    continue;
                }
                Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
            }
            // Its re-grades go with it (they stayed, of a run no longer
            // there).
            crate::store::regrades::remove(store, &r.run_id)?;
        }
        gone.push(r.run_id.clone());
        report.runs.add(r.run_id.clone(), bytes);
    }
    report.kept += in_use.len();
    in_use.extend(p.kept_in_use.iter().cloned());
    report.kept_in_use = in_use.into_iter().collect();
    // The rows go after their bundles, which frees the space a full
    // disk's index needs; an index still unwritable is brought up to date
    // by the next command that reads it (the bundles are gone).
    if !dry_run {
        match Index::connect(store).and_then(|mut index| index.remove(&gone)) {
            Err(e) if crate::index::is_full(&e) => ::log::info!(
                "the run index was not updated ({e:#}); the next command that reads the store brings it up to date"
            ),
            other => other?,
        }
    }

    if !dry_run {
        // What a killed (or failed) writer left: a world half written out,
        // an object not renamed into place.
        for sub in ["objects", "worlds"] {
            worldline_case::durable::sweep(&store.root.join(sub));
        }
    }
    if let Some((worlds, needed)) = &needs {
        sweep_dir(
            &store.root.join("objects"),
            // What is no SHA-256 the store did not write: it stays.
            |name| is_sha256_hex(name) && !needed.contains(name),
            now - GRACE_S,
            (dry_run, Listed::ByName),
            &mut report.objects,
        )?;
        sweep_dir(
            &store.root.join("worlds"),
            |name| is_sha256_hex(name) && !worlds.contains(name),
            now - GRACE_S,
            (dry_run, Listed::ByName),
            &mut report.worlds,
        )?;
        for n in db_objects {
            if !report.objects.items.contains(&n) {
                report.objects.add(n, 0);
            }
        }
    }

    let unused_since = now - super::days_s(policy.cache.unused_days);
    for sub in sorted_entries(&store.cache_dir())? {
        if sub.is_dir() {
            let unheld = |name: &str| !name.ends_with(".lock") || !lock_held(&sub.join(name));
            let how = (dry_run, Listed::ByPath);
            sweep_dir(&sub, unheld, unused_since, how, &mut report.cache)?;
        }
    }
    let rel = |items: &mut Vec<String>| {
        for i in items.iter_mut() {
            if let Some(r) = Path::new(i.as_str())
                .strip_prefix(&store.root)
                .ok()
                .map(|p| p.display().to_string())
            {
                *i = r;
            }
        }
    };
    rel(&mut report.cache.items);
    report.bytes_freed =
        report.runs.bytes + report.objects.bytes + report.worlds.bytes + report.cache.bytes;
    Ok(report)
}

/// Say that the folder at `path`, in `runs/`, is left in place.
fn folder_left(path: &Path) {
    ::log::warn!(
        "{} is a folder, not a run's bundle: left in place (move it out of the store's runs/)",
        path.display()
    );
}

/// Say of each `.jsonl` entry of `runs/` whose name is no run id that it
/// is left in place: no command takes it for a run (`runs` lists none of
/// them), so no pass removes it (one copied there as `.hidden.jsonl` was
/// removed as a passing run made when it was listed).
fn warn_strays(store: &StoreDir) {
    let Ok(entries) = sorted_entries(&store.runs_dir()) else {
        return;
    };
    for path in entries {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let stray = name
            .as_deref()
            .and_then(|n| n.strip_suffix(".jsonl"))
            .is_some_and(|id| !crate::store::is_run_id(id));
        if !stray {
            continue;
        }
        match std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            true => folder_left(&path),
            false => ::log::warn!(
                "{} is not a run's bundle (its name is no run id: worldline did not write it): left in place (move it out of the store's runs/)",
                path.display()
            ),
        }
    }
}

/// The worlds the kept runs and live processes use, and every object
/// they need (agents, cases, world manifests and files).
fn needed(
    store: &StoreDir,
    p: &super::Plan,
    held: &BTreeSet<String>,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut worlds: BTreeSet<String> = p.keep.iter().map(|r| r.world_hash.clone()).collect();
    worlds.extend(held.iter().cloned());
    let mut needed: BTreeSet<String> = worlds.clone();
    for r in &p.keep {
        needed.insert(r.agent.clone());
        needed.insert(r.case_hash.clone());
    }
    for w in &worlds {
        if let Ok(bytes) = store.read_object(w)
            && let Ok(manifest) = serde_json::from_slice::<BTreeMap<String, String>>(&bytes)
        {
            needed.extend(manifest.into_values());
        }
    }
    (worlds, needed)
}

/// Whether a compile holds the lock file at `path` now (the compile cache's
/// `<sha256>.lock`): removed while held, the next process to miss the same
/// entry would lock a new file and compile it a second time beside it.
fn lock_held(path: &Path) -> bool {
    std::fs::File::open(path)
        .is_ok_and(|f| matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock)))
}

/// The entries of a folder, sorted (none when it does not exist).
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut all: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    all.sort();
    Ok(all)
}

/// How a sweep lists what it removes: the store's objects and worlds by
/// their names (hashes), the compile cache's entries by their paths (its
/// own `objects/` was listed by bare hashes, as if the store's went).
#[derive(Clone, Copy)]
enum Listed {
    ByName,
    ByPath,
}

/// Remove the entries of `dir` that `unwanted` names and that were last
/// used (accessed or modified) before `before` (Unix seconds), unless a
/// dry run; each listed in `out` as `listed` says.
fn sweep_dir(
    dir: &Path,
    unwanted: impl Fn(&str) -> bool,
    before: i64,
    (dry_run, listed): (bool, Listed),
    out: &mut Removed,
) -> Result<()> {
    for path in sorted_entries(dir)? {
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        // A writer's temporary file (a dead writer's are swept by the
        // writers themselves, see `durable.rs`).
        if !unwanted(&name) || name.contains(".tmp") {
            continue;
        }
        // Gone meanwhile (another pass, or a writer's rename).
        let Some((used, bytes)) = usage(&path)? else {
            continue;
        };
        if used >= before {
            continue;
        }
        if !dry_run {
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            match removed {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                // Written into as it was removed (a compile filling the
                // cache): in use, so what is left stays. Its files are
                // each checked when read, so a part removed is a miss.
                Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => continue,
                Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
            }
        }
        let item = match listed {
            Listed::ByName => name,
            Listed::ByPath => path.display().to_string(),
        };
        out.add(item, bytes);
    }
    Ok(())
}

/// When an entry was last used (latest access or modification of it or,
/// for a folder, of anything in it; Unix seconds) and its size in bytes;
/// `None` when it is gone.
fn usage(path: &Path) -> Result<Option<(i64, u64)>> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let secs = |t: std::io::Result<std::time::SystemTime>| {
        t.ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64)
    };
    // A folder's own access time moves whenever it is listed (by this
    // sweep too: a dry run would keep the real one from removing it), so
    // a folder is as recently used as its files, or as changed.
    let mut used = if m.is_dir() {
        secs(m.modified())
    } else {
        secs(m.accessed()).max(secs(m.modified()))
    };
    let mut bytes = m.len();
    if m.is_dir() {
        bytes = 0;
        for child in sorted_entries(path)? {
            if let Some((u, b)) = usage(&child)? {
                used = used.max(u);
                bytes += b;
            }
        }
    }
    Ok(Some((used, bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn set(path: &Path, accessed: SystemTime, modified: SystemTime) {
        std::fs::File::open(path)
            .unwrap()
            .set_times(
                std::fs::FileTimes::new()
                    .set_accessed(accessed)
                    .set_modified(modified),
            )
            .unwrap();
    }

    /// A folder a writer fills while the pass removes it is kept, not a
    /// failure: `gc` beside a `test` compiling into the cache exited 4 on
    /// `Directory not empty`. The writer here writes old files (so the
    /// folder stays old enough to remove), at most `FILES` of them, and
    /// stops when the passes end, however they end.
    #[test]
    fn a_folder_written_into_as_it_is_removed_is_kept() {
        use std::sync::atomic::{AtomicBool, Ordering};
        const FILES: u64 = 20_000;
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let old = SystemTime::now() - Duration::from_secs(40 * 86_400);
        let before = (SystemTime::now() - Duration::from_secs(86_400))
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let stop = AtomicBool::new(false);
        let folder = dir.path().join("entry");
        let failed = std::thread::scope(|scope| {
            scope.spawn(|| {
                for n in 0..FILES {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let sub = folder.join(format!("{:02x}", n % 16));
                    let file = sub.join(n.to_string());
                    if std::fs::create_dir_all(&sub).is_ok()
                        && std::fs::write(&file, b"code").is_ok()
                    {
                        let times = std::fs::FileTimes::new()
                            .set_accessed(old)
                            .set_modified(old);
                        for p in [&file, &sub, &folder] {
                            let _ = std::fs::File::open(p).and_then(|f| f.set_times(times));
                        }
                    }
                }
            });
            let _stop = Stop(&stop);
            let started = std::time::Instant::now();
            while started.elapsed() < Duration::from_secs(3) && !stop.load(Ordering::SeqCst) {
                let mut out = Removed::default();
                let how = (false, Listed::ByPath);
                if let Err(e) = sweep_dir(dir.path(), |_| true, before, how, &mut out) {
                    return Some(e);
                }
            }
            None
        });
        assert!(failed.is_none(), "{failed:?}");
    }

    #[test]
    fn a_folder_listed_since_its_files_were_used_is_as_old_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("functions");
        std::fs::create_dir_all(folder.join("ab")).unwrap();
        std::fs::write(folder.join("ab").join("cd"), b"code").unwrap();
        let old = SystemTime::now() - Duration::from_secs(40 * 86_400);
        for p in [folder.join("ab").join("cd"), folder.join("ab")] {
            set(&p, old, old);
        }
        // Listed a moment ago (a dry run's sweep), changed 40 days ago.
        set(&folder, SystemTime::now(), old);
        let (used, bytes) = usage(&folder).unwrap().unwrap();
        let old_s = old.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
        assert!(used <= old_s + 1, "used {used}, files used {old_s}");
        assert_eq!(bytes, 4);
    }
}
