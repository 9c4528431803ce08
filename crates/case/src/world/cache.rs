//! Each world loaded once per process: a load is kept by its folder for as
//! long as every file it read (and the folders holding them) keeps its
//! identity (`file_identity`: trusted only once settled, else read
//! again), and each (world, overlay) that cases use is one shared copy
//! whose initial state is sealed for hashing once. Every case and job of
//! the process then reads the same rows; a run copies only what it writes
//! ([0253](../../../../docs/decisions/0253-world-loaded-once-per-process.md)).

use super::World;
use crate::error::InputError;
use crate::file_identity;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

/// A kept load: the identity of each file and folder it read, and the world.
struct Kept {
    identities: Vec<(PathBuf, String)>,
    world: Arc<World>,
}

/// Loads by folder and how it was loaded (what was checked).
static LOADED: Mutex<BTreeMap<(PathBuf, String), Kept>> = Mutex::new(BTreeMap::new());

/// Held while a world is loaded, by the same key as [`LOADED`].
static LOADING: Mutex<BTreeMap<(PathBuf, String), Gate>> = Mutex::new(BTreeMap::new());

/// What one load of a world holds.
type Gate = Arc<Mutex<()>>;

/// Shared worlds by (folder, hash): the hash covers the overlay.
static SHARED: Mutex<BTreeMap<(PathBuf, String), Weak<World>>> = Mutex::new(BTreeMap::new());

/// The worlds loaded or found kept (their files checked) during the
/// current pass, by folder as named and mode: while a suite loads its
/// cases ([`one_pass`]), a world that 200 cases name is checked once, not
/// 200 times (decision 0394), and loaded once even when its files are too
/// new to be kept past the pass (a folder just copied).
static PASS: Mutex<Option<Checked>> = Mutex::new(None);

/// Worlds checked in a pass, by (folder as named, mode).
type Checked = BTreeMap<(PathBuf, String), Arc<World>>;

/// Run `f` (the loading of a suite's cases) as one pass: each world it
/// names is loaded, or has its files checked, once in it.
pub fn one_pass<T>(f: impl FnOnce() -> T) -> T {
    /// Ends the pass however `f` ends, a panic too: a pass left open
    /// would serve later loads worlds checked before their files changed.
    struct Ends;
    impl Drop for Ends {
        fn drop(&mut self) {
            *PASS.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
    *PASS.lock().unwrap_or_else(|e| e.into_inner()) = Some(BTreeMap::new());
    let _ends = Ends;
    f()
}

/// The world in `dir`, kept from an earlier `load` of it the same way
/// (`mode`) when its files are unchanged, else loaded by `load` (its
/// initial state sealed, and kept when its files have settled); in a
/// pass, the one the pass loaded or checked.
pub(crate) fn load(
    dir: &Path,
    mode: &str,
    load: impl FnOnce() -> Result<World, Vec<InputError>>,
) -> Result<Arc<World>, Vec<InputError>> {
    let named = (dir.to_path_buf(), mode.to_string());
    if let Some(world) = in_pass_already(&named) {
        return Ok(world);
    }
    let key = (
        dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
        mode.to_string(),
    );
    // One load of a world at a time: a case read beside another that
    // names the same world waits for that load and keeps it, instead of
    // loading it again (a suite reads its cases on every core).
    let gate = LOADING
        .lock()
        .expect("world cache lock")
        .entry(key.clone())
        .or_default()
        .clone();
    let _loading = gate.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(world) = in_pass_already(&named) {
        return Ok(world);
    }
    if let Some(kept) = LOADED.lock().expect("world cache lock").get(&key)
        && kept
            .identities
            .iter()
            .all(|(p, id)| identity(p).as_ref() == Some(id))
    {
        in_pass(named, &kept.world);
        return Ok(kept.world.clone());
    }
    let mut world = load()?;
    world.initial.seal();
    let world = Arc::new(world);
    // A pass loads a world once even while its files are new (a folder
    // just copied, not yet trusted across passes): its cases see one load.
    in_pass(named, &world);
    if let Some(identities) = settled_identities(&world) {
        LOADED.lock().expect("world cache lock").insert(
            key,
            Kept {
                identities,
                world: world.clone(),
            },
        );
    }
    Ok(world)
}

/// The world `named` loaded or checked in the current pass, if one is
/// under way and did.
fn in_pass_already(named: &(PathBuf, String)) -> Option<Arc<World>> {
    let pass = PASS.lock().expect("world cache lock");
    pass.as_ref()?.get(named).cloned()
}

/// Note `world` as checked in the current pass, if one is under way.
fn in_pass(named: (PathBuf, String), world: &Arc<World>) {
    if let Some(pass) = PASS.lock().expect("world cache lock").as_mut() {
        pass.insert(named, world.clone());
    }
}

/// The one shared copy of `world` (same folder, same hash), its initial
/// state sealed; a copy no case holds any more is dropped.
pub(crate) fn share(mut world: Arc<World>) -> Arc<World> {
    let key = (world.dir.clone(), world.hash.clone());
    if let Some(w) = SHARED
        .lock()
        .expect("world cache lock")
        .get(&key)
        .and_then(Weak::upgrade)
    {
        return w;
    }
    if !world.initial.is_sealed() {
        Arc::make_mut(&mut world).initial.seal();
    }
    let mut shared = SHARED.lock().expect("world cache lock");
    shared.retain(|_, w| w.strong_count() > 0);
    shared.insert(key, Arc::downgrade(&world));
    world
}

fn identity(path: &Path) -> Option<String> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| file_identity::of(&m))
}

/// The identity of the world's folder, its `world.toml`, every file in
/// its manifest and each folder between; `None` when one has not
/// settled (or is gone).
fn settled_identities(world: &World) -> Option<Vec<(PathBuf, String)>> {
    let mut paths: BTreeSet<PathBuf> =
        BTreeSet::from([world.dir.clone(), world.dir.join("world.toml")]);
    for rel in world.manifest.keys() {
        let mut p = world.dir.join(rel);
        while p.starts_with(&world.dir) && paths.insert(p.clone()) {
            p.pop();
        }
    }
    paths
        .into_iter()
        .map(|p| {
            let m = std::fs::symlink_metadata(&p).ok()?;
            file_identity::settled(&m).then(|| (p, file_identity::of(&m)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass is the process's: the tests that look at what is shared
    /// run one at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    fn world_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("world.toml"),
            "name = \"w\"\nversion = 1\n[tables.t]\nkey = \"id\"\nrows = \"t.jsonl\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("t.jsonl"), "{\"id\": \"a\"}\n").unwrap();
        dir
    }

    /// Cases read on two threads at once that name one world: one loads
    /// it, the other waits and takes the kept load.
    #[test]
    fn a_world_two_threads_need_at_once_is_loaded_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = world_dir();
        std::thread::sleep(file_identity::SETTLED + std::time::Duration::from_millis(100));
        let loads = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    load(dir.path(), "two threads", || {
                        loads.fetch_add(1, Ordering::SeqCst);
                        // Long enough for the other thread to ask meanwhile.
                        std::thread::sleep(std::time::Duration::from_millis(100));
                        crate::world::load_dir(dir.path())
                            .map(Arc::unwrap_or_clone)
                            .map_err(|e| vec![e])
                    })
                    .unwrap();
                });
            }
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    }

    /// A world whose files are too new to be kept (a folder just copied,
    /// as a bench or a CI job does before its suite) is loaded once in a
    /// pass, not once per case; after the pass, again.
    #[test]
    fn a_pass_loads_a_world_just_written_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = world_dir();
        let loads = AtomicUsize::new(0);
        let counted = || {
            load(dir.path(), "just written", || {
                loads.fetch_add(1, Ordering::SeqCst);
                crate::world::load_dir(dir.path())
                    .map(Arc::unwrap_or_clone)
                    .map_err(|e| vec![e])
            })
            .unwrap()
        };
        one_pass(|| {
            for _ in 0..3 {
                counted();
            }
        });
        assert_eq!(loads.load(Ordering::SeqCst), 1, "loaded once per case");
        counted();
        assert_eq!(loads.load(Ordering::SeqCst), 2, "kept past its pass");
    }

    #[test]
    fn a_settled_world_is_read_once_and_a_changed_one_again() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = world_dir();
        let fresh = crate::world::load_dir(dir.path()).unwrap();
        let again = crate::world::load_dir(dir.path()).unwrap();
        assert!(
            !again.initial.tables["t"].shares(&fresh.initial.tables["t"]),
            "files just written are read again"
        );
        std::thread::sleep(file_identity::SETTLED + std::time::Duration::from_millis(100));
        let first = crate::world::load_dir(dir.path()).unwrap();
        let kept = crate::world::load_dir(dir.path()).unwrap();
        assert!(kept.initial.tables["t"].shares(&first.initial.tables["t"]));
        std::fs::write(dir.path().join("t.jsonl"), "{\"id\": \"b\"}\n").unwrap();
        let changed = crate::world::load_dir(dir.path()).unwrap();
        assert!(changed.initial.row("t", "b").is_some());
        assert_ne!(changed.hash, first.hash);
    }

    /// A pass ends however its loading ends: after one that panicked, a
    /// changed world is read again, not served from the pass.
    #[test]
    fn a_pass_that_panicked_is_over() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = world_dir();
        // Settled files, so the pass keeps the world it loads.
        std::thread::sleep(file_identity::SETTLED + std::time::Duration::from_millis(100));
        let panicked = std::panic::catch_unwind(|| {
            one_pass(|| {
                crate::world::load_dir(dir.path()).unwrap();
                panic!("a case that does not load");
            })
        });
        assert!(panicked.is_err());
        std::fs::write(dir.path().join("t.jsonl"), "{\"id\": \"b\"}\n").unwrap();
        let after = crate::world::load_dir(dir.path()).unwrap();
        assert!(
            after.initial.row("t", "b").is_some(),
            "served from a pass left open"
        );
    }

    #[test]
    fn cases_of_one_world_and_overlay_share_one_copy() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let dir = world_dir();
        let a = share(crate::world::load_dir(dir.path()).unwrap());
        let b = share(crate::world::load_dir(dir.path()).unwrap());
        assert!(Arc::ptr_eq(&a, &b));
        let overlay: Vec<crate::world::overlay::Overlay> =
            vec![serde_json::from_str(r#"{"table": "t", "remove": ["a"]}"#).unwrap()];
        let c = share(
            crate::world::overlay::apply(crate::world::load_dir(dir.path()).unwrap(), &overlay)
                .unwrap(),
        );
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(c.initial.tables["t"].rows.is_empty());
        assert!(a.initial.row("t", "a").is_some());
    }
}
