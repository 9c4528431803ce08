//! The store directory (default `.worldline/`): `runs/` holds one bundle per
//! run, `objects/` holds agents and case files by SHA-256 (zstd-compressed,
//! see `object_codec.rs`), `cache/` holds
//! compiled components by engine hash and agent SHA-256. What a process
//! stores or reads is held in its lease (`store/lease.rs`) so `gc` leaves it;
//! on a database store, in the database too (`pgstore/leases.rs`), so gc
//! on another machine leaves it.
//!
//! A `postgres://` store (see `pgstore/`) keeps the same folder as its
//! working copy: runs are written there as they go, then stored whole in
//! the database ([`StoreDir::publish`]); readers first bring the folder up
//! to date from it ([`StoreDir::pull`]), and objects missing from the
//! folder are read from it. Commands see one `StoreDir` either way; who
//! reads a database store, and what they may see, is `store/view.rs`;
//! what it keeps in the database instead of files beside its runs
//! (campaign reports, the retention policy, re-grades) is
//! `store/shared.rs`.

pub(crate) mod lease;
pub mod made;
pub(crate) mod regrades;
mod shared;
mod sync;

pub use sync::Finished;
mod view;
pub use view::OWN_POLICY;

use anyhow::{Context as _, Result};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use worldline_case::canon;
use worldline_pgstore::Database;

pub struct StoreDir {
    pub root: PathBuf,
    leases: crate::store::lease::Leases,
    /// The database a `postgres://` store is kept in (none: the folder is
    /// the store).
    db: Option<Database>,
    /// When this process last brought the working folder up to date.
    pulled: Mutex<Option<std::time::Instant>>,
    /// A database store's redaction policy, as this process last read it.
    shared: Mutex<Option<worldline_pgstore::copies::Shared>>,
    /// The objects of each world a run of this process was stored with
    /// (`sync.rs`).
    world_objects: Mutex<std::collections::BTreeMap<String, Vec<String>>>,
    /// The objects [`StoreDir::hold_run`] held and found in the store:
    /// held, no gc pass removes them while this process lives, so the
    /// next run of a suite does not look for them again (decision 0394).
    present: Mutex<std::collections::BTreeSet<String>>,
    /// The bundles of runs this process made that the database did not
    /// take, moved to the working folder's `unstored/` (`sync.rs`).
    set_aside: Mutex<Vec<PathBuf>>,
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Where a store's address was given: what an error about it names, and
/// how a message says where to change it.
#[derive(Debug, Clone)]
pub struct GivenIn {
    /// The file (or flag, or argument) an error names.
    pub file: PathBuf,
    /// Its line and column there.
    pub at: Option<(usize, usize)>,
    /// Where, as a message says it: `--store`, ``store` in FILE (line N)`.
    pub said: String,
    /// The folder the project file's `store` named, when it gave it: an
    /// error about that folder is blamed there too.
    pub folder: Option<PathBuf>,
}

impl GivenIn {
    /// An address given as the argument `name` (`import`'s `FROM`).
    pub fn argument(name: &str) -> GivenIn {
        GivenIn {
            file: name.into(),
            at: None,
            said: format!("the {name} argument"),
            folder: None,
        }
    }

    /// `--store` as this process was given it: the flag, or the project
    /// file's `store` when that supplied it ([`store_given_in`]).
    fn store_flag() -> GivenIn {
        STORE_GIVEN_IN.get().cloned().unwrap_or_else(|| GivenIn {
            file: "--store".into(),
            at: None,
            said: "--store".into(),
            folder: None,
        })
    }

    /// An error about the address, at where it was given.
    fn error(&self, message: impl Into<String>) -> worldline_case::error::InputError {
        let mut e = worldline_case::error::InputError::new(&self.file, message);
        e.line = self.at;
        e
    }
}

static STORE_GIVEN_IN: std::sync::OnceLock<GivenIn> = std::sync::OnceLock::new();

/// Say that this process's `--store`, `folder`, was supplied by the
/// project file `file`, written at `at`: errors about the address name it
/// there.
pub fn store_given_in(file: &Path, at: Option<(usize, usize)>, folder: &Path) {
    let said = match at {
        Some((line, _)) => format!("`store` in {} (line {line})", file.display()),
        None => format!("`store` in {}", file.display()),
    };
    let _ = STORE_GIVEN_IN.set(GivenIn {
        file: file.to_path_buf(),
        at,
        said,
        folder: Some(folder.to_path_buf()),
    });
}

/// The run index's file in a store folder (`index/` keeps it; the store
/// removes it when a viewer's copies are written over, see `sync.rs`).
pub const INDEX_FILE: &str = "index.sqlite";

/// The environment variable naming a compile cache every store shares
/// ([`StoreDir::compile_cache_dir`]).
const COMPILE_CACHE: &str = "WORLDLINE_COMPILE_CACHE";

/// Refuse a `--store` that is an address of another scheme than
/// PostgreSQL's: a mistyped one (`postgress://`, `pg://`) was a folder
/// named after it, password and all, printed in every run's path. Only
/// the scheme is said.
fn no_other_address(root: &Path) -> Result<()> {
    let text = root.to_string_lossy();
    match text.split_once("://") {
        _ if worldline_pgstore::url::is_postgres(&text) => Ok(()),
        Some((scheme, _))
            if !scheme.is_empty()
                && (scheme.chars()).all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            Err(worldline_case::error::InputError::new(
                "--store",
                format!(
                    "`{scheme}://…` is no store address: a store is a folder or a postgres:// (postgresql://) address; check the scheme"
                ),
            )
            .into())
        }
        _ => Ok(()),
    }
}

/// Check `root` as a store address without opening it (`init --store`,
/// which writes it into the project file): another scheme than
/// PostgreSQL's is refused, as [`StoreDir::open`] refuses it, and a
/// `postgres://` address must read as one.
pub fn check_address(root: &Path) -> Result<()> {
    no_other_address(root)?;
    match root
        .to_str()
        .filter(|s| worldline_pgstore::url::is_postgres(s))
    {
        Some(address) => match worldline_pgstore::url::parse(address) {
            Ok(_) => Ok(()),
            Err(m) => Err(worldline_case::error::InputError::new("--store", m).into()),
        },
        None => Ok(()),
    }
}

/// Whether a RUN argument is written as a path (a folder in it, or a
/// bundle's `.jsonl` name), not as a run id.
pub fn names_a_path(run: &str) -> bool {
    run.contains('/') || run.ends_with(".jsonl")
}

impl StoreDir {
    /// Open (and create) a store. A path that cannot hold one (a file, a
    /// folder that cannot be created) is an input error naming it.
    pub fn open(root: &Path) -> Result<Self> {
        if let Some(address) = root
            .to_str()
            .filter(|s| worldline_pgstore::url::is_postgres(s))
        {
            return Self::open_database(address, false);
        }
        no_other_address(root)?;
        Self::open_folder(root)
    }

    /// [`open`](Self::open) a store to read that is given elsewhere than
    /// in `--store` (`import`'s sources): a database store's errors say
    /// where, and a schema holding no store is refused, nothing made.
    pub fn open_source(root: &Path, given: &GivenIn) -> Result<Self> {
        match root
            .to_str()
            .filter(|s| worldline_pgstore::url::is_postgres(s))
        {
            Some(address) => Self::connect(address, false, false, given),
            None => Self::open(root),
        }
    }

    /// Open a store that is there already: for the commands that report
    /// on a whole store (`verify`, `runs`, `index`), which would otherwise
    /// make an empty store where a mistyped `--store` points and report
    /// on nothing (a `verify` passing with no run). A missing folder, or
    /// one without `runs/`, is refused, naming it, and so is a database
    /// schema holding no store (nothing made in it); anything else opens
    /// as [`open`](Self::open) opens it (a file is refused there).
    pub fn open_existing(root: &Path) -> Result<Self> {
        no_other_address(root)?;
        if let Some(address) = root
            .to_str()
            .filter(|s| worldline_pgstore::url::is_postgres(s))
        {
            // A schema that holds no store is refused, nothing made in it.
            return Self::connect(address, false, false, &GivenIn::store_flag());
        }
        // Links followed: a link to a folder without `runs/` is no store
        // either (it made an empty store there and verified it).
        let what = match (root.symlink_metadata(), root.metadata()) {
            (Err(e), _) | (Ok(_), Err(e)) if looped(&e) => Some(LOOPED),
            (Err(_), _) => Some("does not exist: no store is there"),
            (Ok(_), Err(_)) => Some("is a link to nothing: no store is there"),
            (_, Ok(m)) if m.is_dir() && !root.join("runs").is_dir() => {
                Some("is not a store (it has no runs/ folder)")
            }
            _ => None,
        };
        if let Some(what) = what {
            return Err(worldline_case::error::InputError::new(
                root,
                format!(
                    "{what}; pass --store with the folder the runs were recorded in (the first `run`, `test` or `fuzz` makes a store)"
                ),
            )
            .into());
        }
        Self::open(root)
    }

    /// Open a `postgres://` store: connect, bring an empty schema to this
    /// worldline's version (an older one too when `upgrade`), and open its
    /// working folder.
    pub fn open_database(address: &str, upgrade: bool) -> Result<Self> {
        Self::connect(address, upgrade, true, &GivenIn::store_flag())
    }

    /// [`open_database`](Self::open_database), the store made when its
    /// schema holds none only when `make`; errors say where the address
    /// was `given`.
    fn connect(address: &str, upgrade: bool, make: bool, given: &GivenIn) -> Result<Self> {
        let url = worldline_pgstore::url::parse(address).map_err(|m| given.error(m))?;
        let how = worldline_pgstore::Opening {
            upgrade,
            make,
            given_in: &given.said,
        };
        let db = Database::connect(&url, &how).map_err(crate::store::db_error)?;
        let mut store = Self::open_folder(&sync::working_folder(&url.shown))?;
        store.db = Some(db);
        Ok(store)
    }

    fn open_folder(root: &Path) -> Result<Self> {
        worldline_case::output::check_store_root(root)?;
        match (root.symlink_metadata(), root.metadata()) {
            (Err(e), _) | (Ok(_), Err(e)) if looped(&e) => {
                return Err(worldline_case::error::InputError::new(
                    root,
                    format!("{LOOPED}; pass --store with a folder"),
                )
                .into());
            }
            (Err(_), _) => made::noted(root),
            (Ok(_), Err(_)) => {
                return Err(worldline_case::error::InputError::new(
                    root,
                    "is a link to nothing: make the folder it names, or pass --store with a folder",
                )
                .into());
            }
            _ => {}
        }
        for sub in ["runs", "objects", "cache"] {
            let dir = root.join(sub);
            match std::fs::create_dir_all(&dir) {
                Ok(()) => {}
                // A store this process cannot write is read all the same,
                // whichever of its other folders it lacks (a copy of its
                // runs and objects was refused for want of `cache/`).
                Err(e) if sub != "runs" && root.join("runs").is_dir() && is_refused(e.kind()) => {}
                Err(e) => {
                    let why = format!("cannot be used as a store ({}: {e})", dir.display());
                    // The project file's `store` is blamed at its line.
                    let given = GivenIn::store_flag();
                    if given.folder.as_deref() == Some(root) {
                        return Err(given
                            .error(format!(
                                "`store` names {}, which {why}; give `store` a folder you can write, or pass --store",
                                root.display()
                            ))
                            .into());
                    }
                    return Err(worldline_case::error::InputError::new(
                        root,
                        format!("{why}; pass --store with a folder you can write"),
                    )
                    .into());
                }
            }
        }
        misplaced(root)?;
        Ok(StoreDir {
            root: root.to_path_buf(),
            leases: crate::store::lease::Leases::new(root),
            db: None,
            pulled: Mutex::new(None),
            shared: Mutex::new(None),
            world_objects: Mutex::new(std::collections::BTreeMap::new()),
            present: Mutex::new(std::collections::BTreeSet::new()),
            set_aside: Mutex::new(Vec::new()),
        })
    }

    /// The store as a user names it: its folder, or its database address
    /// without the password.
    pub fn name(&self) -> String {
        match &self.db {
            Some(db) => db.url.shown.clone(),
            None => self.root.display().to_string(),
        }
    }

    /// Whether a finished run's bundle must be synced to be kept: a folder
    /// store's bundle is the run; a database store's run is made durable
    /// by its commit (`publish_finished`), and its working folder's bundle
    /// is a copy.
    pub fn syncs_bundles(&self) -> bool {
        self.db.is_none()
    }

    /// The database the store is kept in, when it is not the folder.
    pub fn database(&self) -> Option<&Database> {
        self.db.as_ref()
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// Where compiled agents are kept: `$WORLDLINE_COMPILE_CACHE` when it
    /// is set, one folder every store of the machine shares (many fresh
    /// stores, as a test suite makes, then compile each agent once), else
    /// the store's own `cache/` (decision 0408).
    pub fn compile_cache_dir(&self) -> PathBuf {
        match std::env::var_os(COMPILE_CACHE).filter(|d| !d.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => self.cache_dir(),
        }
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
        self.hold(&[sha])?;
        if !self.found(sha) {
            // A new object is rare (a new agent, case or world): the time
            // to sweep what killed writers left here.
            worldline_case::durable::sweep(&self.root.join("objects"));
            self.write_object(&path, bytes)?;
            self.present
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(sha.to_string());
        }
        Ok(())
    }

    /// Whether object `sha` (held by the caller) is in the store and sound,
    /// as [`put_hashed`](Self::put_hashed) asks before writing it: a
    /// reader about to skip that write asks the same.
    pub fn has_object(&self, sha: &str) -> bool {
        self.found(sha)
    }

    /// Whether object `sha`, which this process holds, is in the store and
    /// sound: looked for once, then known (held, no gc pass removes it
    /// while this process lives; decision 0394). A file there is sound when
    /// its identity is the one noted when its bytes last matched their
    /// hash, else when they match now: a damaged one (emptied, changed) is
    /// not found, so the writer, which has the bytes, writes it again (a
    /// run was stored naming it, passed, and could not be replayed).
    fn found(&self, sha: &str) -> bool {
        if (self.present.lock().unwrap_or_else(|e| e.into_inner())).contains(sha) {
            return true;
        }
        let there = self.object_path(sha).exists()
            && (self.object_intact(sha) || self.get_object_noted(sha).is_ok());
        if there {
            (self.present.lock().unwrap_or_else(|e| e.into_inner())).insert(sha.to_string());
        }
        there
    }

    /// Write an object's bytes to `path` in the form it is kept in (see
    /// `object_codec.rs`): whole or not at all.
    fn write_object(
        &self,
        path: &Path,
        bytes: &[u8],
    ) -> Result<(), worldline_case::error::InputError> {
        let kept =
            worldline_log::object_codec::encode(bytes, worldline_log::object_codec::STORE_LEVEL);
        worldline_case::durable::write(path, &kept).map_err(|e| self.write_error(path, e))
    }

    /// Keep a world's files and its manifest (path → hash), so a run can
    /// be replayed after the world folder changes. The manifest's own hash
    /// is the world hash.
    pub fn put_world(&self, world: &worldline_case::world::World) -> Result<()> {
        let mut names: Vec<&str> = vec![world.hash.as_str(), world.manifest_hash()];
        names.extend(world.manifest.values().map(String::as_str));
        self.hold(&names)?;
        if self.found(&world.hash) && world.manifest.values().all(|sha| self.found(sha)) {
            return Ok(());
        }
        // An overlaid world: its base world, then the overlay record
        // (whose bytes hash to the overlaid world's hash).
        if let Some(record) = &world.overlaid {
            if !self.object_path(&record.world).exists() {
                self.put_manifest(world)?;
            }
            let bytes = record.bytes();
            anyhow::ensure!(
                canon::sha256_hex(&bytes) == world.hash,
                "overlay record does not hash to the world hash"
            );
            return self.put_object(bytes.as_bytes()).map(|_| ());
        }
        self.put_manifest(world)
    }

    /// Keep a world's files and its manifest (under the manifest hash).
    fn put_manifest(&self, world: &worldline_case::world::World) -> Result<()> {
        for (rel, sha) in &world.manifest {
            if !self.found(sha) {
                let bytes = worldline_case::bounded::read(
                    &world.dir.join(rel),
                    worldline_case::bounded::COMPONENT,
                )
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
            canon::sha256_hex(&manifest) == world.manifest_hash(),
            "world manifest does not hash to the world hash"
        );
        self.put_object(manifest.as_bytes())?;
        // Its folder rebuilt now, once, as a fork or replay would rebuild
        // it on its first load (best effort: that load does it otherwise).
        let _ = self.materialize(
            &self.root.join("worlds"),
            world.manifest_hash(),
            &world.manifest,
        );
        Ok(())
    }

    /// Keep what re-running a case needs: its text and its world.
    pub fn put_case(&self, case: &worldline_case::case::Case) -> Result<()> {
        self.put_object(case.source.as_bytes())?;
        self.put_world(&case.world)
    }

    /// [`put_case`](Self::put_case) for each of `cases`, their texts held
    /// in one lease write (a lease write is a lock, a write and an unlock:
    /// ~1.2 ms for a suite's 200 cases one at a time).
    pub fn put_cases(&self, cases: &[&worldline_case::case::Case]) -> Result<()> {
        let names: Vec<&str> = cases.iter().map(|c| c.hash.as_str()).collect();
        self.hold(&names)?;
        cases.iter().try_for_each(|c| self.put_case(c))
    }

    /// Hold `names` (objects, worlds, run ids) in this process's lease, so
    /// no `gc` pass on this machine starting from now removes them (see
    /// `store/lease.rs`). On a database store that is enough for what a writer
    /// uses: a gc pass on another machine cannot remove a run not yet
    /// stored, and an object a run needs that it removed is sent again
    /// with the run (`put_run`); the runs a process reads are held in the
    /// database too ([`hold_read`](Self::hold_read)).
    pub fn hold(&self, names: &[&str]) -> Result<(), worldline_case::error::InputError> {
        self.leases
            .hold(names)
            .map_err(|e| self.write_error(&self.root.join("leases"), e))
    }

    /// Hold a run of this store that this process reads to re-execute it
    /// or rebuild its state (replay, fork, verify...), so no gc pass
    /// removes it while this process lives. A run gc removed from the
    /// database since this working folder was brought up to date is
    /// removed here too, and named as gone. A bundle outside the store
    /// holds nothing.
    pub fn hold_read(&self, path: &Path) -> Result<(), worldline_case::error::InputError> {
        let Some(id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jsonl"))
            .filter(|id| is_run_id(id) && self.bundle_path(id) == path)
        else {
            return Ok(());
        };
        // A store this process cannot write is still readable.
        let _ = self.leases.hold(&[id]);
        let Some(db) = &self.db else {
            return Ok(());
        };
        if db.hold(&[id]).map_err(crate::store::db_error)?.is_empty() {
            return Ok(());
        }
        let _ = std::fs::remove_file(path);
        Err(worldline_case::error::InputError::new(
            &db.url.shown,
            format!(
                "run {id} was removed by `worldline gc` (on another machine) meanwhile; list the runs with `worldline runs`"
            ),
        ))
    }

    /// [`hold_read`](Self::hold_read) of many runs at once (one lease
    /// write, and one row each in the database's leases): those a gc pass
    /// (on another machine) removed from the database since this working
    /// folder was brought up to date are removed here too, and returned.
    pub fn hold_reads(
        &self,
        ids: &[&str],
    ) -> Result<Vec<String>, worldline_case::error::InputError> {
        self.hold(ids)?;
        let Some(db) = &self.db else {
            return Ok(Vec::new());
        };
        let gone = db.hold(ids).map_err(crate::store::db_error)?;
        for id in &gone {
            let _ = std::fs::remove_file(self.bundle_path(id));
        }
        Ok(gone)
    }

    /// Before a run's bundle is created: hold what its header names and
    /// check it is all in the store, so no run is written pointing at a
    /// missing object.
    pub fn hold_run(
        &self,
        header: &worldline_log::log::Header,
    ) -> Result<(), worldline_case::error::InputError> {
        let names = [
            header.agent_sha256.as_str(),
            header.case_hash.as_str(),
            header.world_hash.as_str(),
        ];
        self.hold(&names)?;
        for sha in names {
            if !self.found(sha) {
                return Err(worldline_case::error::InputError::new(
                    self.object_path(sha),
                    "object missing from the store before the run started (removed by hand?); run it again",
                ));
            }
        }
        Ok(())
    }

    /// Read an object (held in this process's lease first, so what a
    /// replay or fork reads stays while it writes its run) and check it
    /// still hashes to its name.
    pub fn get_object(&self, sha: &str) -> Result<Vec<u8>, worldline_case::error::InputError> {
        // A store this process cannot write is still readable; gc cannot
        // remove anything from it either.
        let _ = self.hold(&[sha]);
        self.read_object(sha)
    }

    /// The clock case `case_hash` sets (Unix nanoseconds, its runs'
    /// virtual time 0), when it sets one and this store holds it for this
    /// reader (a viewer reads no case).
    pub fn case_clock(&self, case_hash: &str) -> Option<i128> {
        let bytes = self.read_object(case_hash).ok()?;
        worldline_case::time::case_clock(std::str::from_utf8(&bytes).ok()?)
    }

    /// [`get_object`](Self::get_object) without holding it (for gc, which
    /// holds the store's gate itself).
    pub fn read_object(&self, sha: &str) -> Result<Vec<u8>, worldline_case::error::InputError> {
        let path = self.object_path(sha);
        if let Some(db) = &self.db
            && !path.is_file()
            && let Some(bytes) = db.get_object(sha).map_err(crate::store::db_error)?
        {
            if canon::sha256_hex(&bytes) != sha {
                return Err(worldline_case::error::InputError::new(
                    &db.url.shown,
                    format!("object {sha} does not match its hash (the database was modified)"),
                ));
            }
            self.write_object(&path, &bytes)?;
            return Ok(bytes);
        }
        if !path.is_file() {
            // A viewer reads only the agents: cases and worlds hold data.
            self.require_raw("reading a run's case or world")?;
        }
        let kept =
            worldline_case::bounded::read(&path, worldline_case::bounded::OBJECT).map_err(|e| {
                let what = match &e {
                    worldline_case::bounded::Refused::Io(io)
                        if io.kind() == std::io::ErrorKind::NotFound =>
                    {
                        "object missing from the store"
                    }
                    _ => "cannot read this object of the store",
                };
                worldline_case::error::InputError::new(&path, format!("{what}: {e}"))
            })?;
        worldline_log::object_codec::decode(kept, sha, worldline_case::bounded::OBJECT).map_err(
            |e| {
                worldline_case::error::InputError::new(
                    &path,
                    format!("object {e} (the store was modified)"),
                )
            },
        )
    }

    /// [`get_object`](Self::get_object), noting the identity of the
    /// object's file once its bytes matched their hash, for
    /// [`object_intact`](Self::object_intact). For objects of this store's
    /// own runs: a command that only reads another store (`import`) leaves
    /// no note in it.
    pub fn get_object_noted(
        &self,
        sha: &str,
    ) -> Result<Vec<u8>, worldline_case::error::InputError> {
        let path = self.object_path(sha);
        let before = std::fs::metadata(&path).ok();
        let bytes = self.get_object(sha)?;
        if let Some(before) = before {
            self.note_intact(sha, &path, &before);
        }
        Ok(bytes)
    }

    /// Where the identity of object `sha`'s file is noted once its bytes
    /// matched their hash (a cache: a note lost or torn only means the
    /// object is read and checked again).
    fn intact_note(&self, sha: &str) -> PathBuf {
        self.cache_dir().join("objects").join(sha)
    }

    /// Note the identity of `path`, object `sha`'s file whose bytes were
    /// just read and matched their hash, when it is the identity `before`
    /// the read and the file has settled (`file_identity::kept`).
    fn note_intact(&self, sha: &str, path: &Path, before: &std::fs::Metadata) {
        if let Some(identity) = worldline_case::file_identity::kept(before, path) {
            worldline_case::durable::note(&self.intact_note(sha), identity.as_bytes());
        }
    }

    /// Whether object `sha`'s file is the one whose bytes last matched
    /// their hash when [`get_object_noted`](Self::get_object_noted) read
    /// them (its identity unchanged since), held as [`get_object`](Self::get_object)
    /// holds it: a reader that needs only to know it intact (a fork whose
    /// agent's compiled form is cached) need not read and decompress it
    /// again.
    pub fn object_intact(&self, sha: &str) -> bool {
        let _ = self.hold(&[sha]);
        let Ok(meta) = std::fs::metadata(self.object_path(sha)) else {
            return false;
        };
        worldline_case::bounded::read(&self.intact_note(sha), 256)
            .is_ok_and(|noted| noted == worldline_case::file_identity::of(&meta).as_bytes())
    }

    /// Teach `r` what the policy's `state` paths hide in the initial state
    /// of the recorded world `world_hash`, so a view hides it where events
    /// quote it (a list's answer, before any event hid it). A world that
    /// cannot be read (its objects gone) teaches nothing.
    pub fn learn_world(&self, r: &mut worldline_log::redact::Redactor, world_hash: &str) {
        if let Ok(world) = self.load_world(world_hash) {
            r.learn_state(&world.initial);
        }
    }

    /// Teach `r` what the run `b` hides, showing nothing: its world's
    /// `state` paths, its header, events and footer, as `history` of it
    /// learns them, so a view of whole runs (`otel`) or a line that quotes
    /// the run (a listing's failure signature) hides what its views hide.
    /// `worlds`: the worlds taught already, each read once.
    pub fn learn_bundle(
        &self,
        r: &mut worldline_log::redact::Redactor,
        b: &mut worldline_log::log::bundle::HeldBundle,
        worlds: &mut std::collections::BTreeSet<String>,
    ) {
        if worlds.insert(b.header.world_hash.clone()) {
            self.learn_world(r, &b.header.world_hash);
        }
        r.whole(&b.header, &mut b.events, b.footer.as_ref());
    }

    /// [`learn_bundle`](Self::learn_bundle) of run `id`; `false` when the
    /// run cannot be read (then nothing is taught).
    pub fn learn_run(
        &self,
        r: &mut worldline_log::redact::Redactor,
        id: &str,
        worlds: &mut std::collections::BTreeSet<String>,
    ) -> bool {
        let Ok(path) = self.resolve_run_id(id) else {
            return false;
        };
        let Ok(mut b) = worldline_log::log::bundle::read_held(&path) else {
            return false;
        };
        self.learn_bundle(r, &mut b, worlds);
        true
    }

    /// Run `id`'s failure signature as `r`'s policy shows it in a listing:
    /// under a policy whose paths hide what runs hold, once the run is
    /// learnt ([`learn_run`](Self::learn_run): the signature may name a
    /// key that `history` of the run hides), and not shown when the run
    /// cannot be read to learn it; `worlds` as `learn_run` takes it.
    pub fn shown_signature(
        &self,
        r: &mut worldline_log::redact::Redactor,
        id: &str,
        signature: Option<String>,
        worlds: &mut std::collections::BTreeSet<String>,
    ) -> Option<String> {
        let signature = signature?;
        if !r.needs_the_run() {
            return Some(r.repeated(signature));
        }
        self.learn_run(r, id, worlds).then(|| r.text(&signature))
    }

    /// The recorded world `world_hash`, rebuilt from the store into
    /// `worlds/<hash>/` and loaded from there.
    pub fn load_world(
        &self,
        world_hash: &str,
    ) -> Result<std::sync::Arc<worldline_case::world::World>, worldline_case::error::InputError>
    {
        let manifest_bytes = self.get_object(world_hash)?;
        // An overlaid world's record: the case that names it applies the
        // overlay again to the base world.
        if let Some(record) = worldline_case::world::overlay::Record::parse(&manifest_bytes) {
            return self.load_world(&record.world);
        }
        let manifest: std::collections::BTreeMap<String, String> =
            serde_json::from_slice(&manifest_bytes).map_err(|e| {
                worldline_case::error::InputError::new(
                    self.object_path(world_hash),
                    format!("not a world manifest: {e}"),
                )
            })?;
        // Its files held at once (on a database store, one round trip).
        let files: Vec<&str> = manifest.values().map(String::as_str).collect();
        let _ = self.hold(&files);
        // A store that cannot be written (read-only, full) is still
        // readable: the world is then rebuilt in the system's temporary
        // folder, and checked against its hash there all the same.
        let dir = match self.materialize(&self.root.join("worlds"), world_hash, &manifest) {
            Ok(dir) => dir,
            Err(e) => {
                let spare = std::env::temp_dir().join(format!(
                    "worldline-worlds-{}",
                    // SAFETY: getuid cannot fail.
                    unsafe { libc::getuid() }
                ));
                self.materialize(&spare, world_hash, &manifest)
                    .map_err(|_| e)?
            }
        };
        let load = |dir: &Path| {
            let world = worldline_case::world::load_dir(dir)?;
            if world.hash != world_hash {
                return Err(worldline_case::error::InputError::new(
                    dir,
                    "the stored world does not hash to the recorded world hash",
                ));
            }
            Ok(world)
        };
        let refused = match load(&dir) {
            Ok(world) => return Ok(world),
            Err(e) => e,
        };
        // `worlds/` is a cache of the objects: a copy there that was
        // changed (by hand, or by a disk) is set aside and made again
        // from them, once. It was every reader's error, and `verify`
        // counted the run unreadable.
        let aside = worldline_case::durable::temp_path(&dir);
        if std::fs::rename(&dir, &aside).is_err() {
            return Err(refused);
        }
        let _ = std::fs::remove_dir_all(&aside);
        let base = dir.parent().unwrap_or(&dir);
        load(&self.materialize(base, world_hash, &manifest)?)
    }

    /// `base/<world_hash>/`, written from the store's objects unless it is
    /// there already (a temporary folder renamed into place, so a killed
    /// writer leaves no half world).
    fn materialize(
        &self,
        base: &Path,
        world_hash: &str,
        manifest: &std::collections::BTreeMap<String, String>,
    ) -> Result<PathBuf, worldline_case::error::InputError> {
        let dir = base.join(world_hash);
        if dir.join("world.toml").is_file() {
            return Ok(dir);
        }
        // A name of this call's own: threads of one process (`verify
        // --jobs`) rebuilding the same world must not write into, or
        // remove, each other's folder.
        let tmp = worldline_case::durable::temp_path(&dir);
        let io = |p: &Path, e: std::io::Error| self.write_error(p, e);
        worldline_case::world::check_manifest(manifest)
            .map_err(|m| worldline_case::error::InputError::new(self.object_path(world_hash), m))?;
        std::fs::create_dir_all(base).map_err(|e| io(base, e))?;
        worldline_case::durable::sweep(base);
        let written = (|| -> Result<(), worldline_case::error::InputError> {
            for (rel, sha) in manifest {
                let bytes = self.get_object(sha)?;
                let dest = tmp.join(rel);
                std::fs::create_dir_all(dest.parent().unwrap_or(&tmp)).map_err(|e| io(&dest, e))?;
                std::fs::write(&dest, bytes).map_err(|e| io(&dest, e))?;
            }
            Ok(())
        })();
        if let Err(e) = written {
            // Not left in `worlds/` for a later pass to find.
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
        if let Err(e) = std::fs::rename(&tmp, &dir)
            && !dir.join("world.toml").is_file()
        {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(io(&dir, e));
        }
        let _ = std::fs::remove_dir_all(&tmp);
        Ok(dir)
    }

    pub fn object_path(&self, sha: &str) -> PathBuf {
        self.root.join("objects").join(sha)
    }

    /// A fresh run id: `YYYYMMDD-HHMMSS-xxxxxxxx`. The id is a name for the
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
        let stamp = worldline_case::time::rfc3339(now.as_secs() as i128 * 1_000_000_000);
        let compact: String = stamp
            .chars()
            .filter(|c| c.is_ascii_digit() || *c == 'T')
            .collect();
        // The suffix begins with the time within the second, in 4096ths,
        // so that ids sort as their runs were made (`runs` lists the
        // newest first by id); the rest is the tag.
        let within = u64::from(now.subsec_nanos()) * 4096 / 1_000_000_000;
        format!("{}-{within:03x}{}", compact.replace('T', "-"), &tag[..5])
    }

    /// Create a new run's bundle holding `header_line`, under a fresh run
    /// id: the file appears with its whole header or not at all, and an id
    /// another writer took meanwhile is never reused (a new one is drawn).
    /// A suite's run takes its file from `spares` when one is ready.
    pub fn create_bundle(
        &self,
        salt: &str,
        header_line: &[u8],
        spares: Option<&worldline_case::durable::Spares>,
    ) -> Result<(String, PathBuf, std::fs::File)> {
        let mut tries = 0;
        loop {
            let run_id = self.new_run_id(salt);
            let path = self.bundle_path(&run_id);
            self.hold(&[&run_id])?;
            let spare = spares.and_then(|s| s.take());
            match worldline_case::durable::create_new_from(spare, &path, header_line) {
                Ok(file) => {
                    // Locked for as long as it is written (the lock goes
                    // with the file, or with the process if it is killed):
                    // what `resume` asks of a run without a footer.
                    let _ = file.try_lock();
                    return Ok((run_id, path, file));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 100 => {
                    tries += 1;
                }
                Err(e) => return Err(self.write_error(&path, e).into()),
            }
        }
    }

    /// Whether the bundle at `path` is being written by a process still
    /// running (it holds the bundle's lock from its creation until it is
    /// written whole): a run without a footer that was not killed.
    pub fn being_recorded(&self, path: &Path) -> bool {
        being_recorded(path)
    }

    /// Whether this process may write in the store's folder. A read-only
    /// store is still read: its run index is then made in memory.
    pub fn writable(&self) -> bool {
        may_write(&self.root)
    }

    /// Refuse `what` (a command that changes the store) on a store this
    /// process cannot write, naming it, before anything is tried.
    pub fn needs_writing(&self, what: &str) -> Result<(), worldline_case::error::InputError> {
        if self.writable() {
            return Ok(());
        }
        Err(worldline_case::error::InputError::new(
            &self.root,
            format!(
                "this store cannot be written here (read-only), and {what} writes into it; run it where the store can be written (the commands that only read it work here)"
            ),
        ))
    }

    /// Whether `err` is this store failing: a database store's server
    /// away or refusing ([`InputError::store`]), or a path inside the
    /// store that could not be written or read (a full disk: [`Self::write_error`]).
    /// A campaign stops on it and reports the runs it made.
    ///
    /// [`InputError::store`]: worldline_case::error::InputError::store
    pub fn failed(&self, err: &anyhow::Error) -> bool {
        let root = std::path::absolute(&self.root).unwrap_or_else(|_| self.root.clone());
        worldline_case::error::input_of(err).is_some_and(|e| {
            e.store || std::path::absolute(&e.file).is_ok_and(|f| f.starts_with(&root))
        })
    }

    /// A failed write into the store: names the store and the cause (a
    /// full disk, a read-only folder), so it is never mistaken for a
    /// graded failure.
    pub fn write_error(
        &self,
        path: &Path,
        e: impl Into<anyhow::Error>,
    ) -> worldline_case::error::InputError {
        self.write_error_of(path, e.into(), false)
    }

    /// [`write_error`](Self::write_error) of a write the caller knows
    /// failed for a full disk (SQLite's "database or disk is full", which
    /// carries no I/O error's kind).
    pub(crate) fn full_disk_error(
        &self,
        path: &Path,
        e: anyhow::Error,
    ) -> worldline_case::error::InputError {
        self.write_error_of(path, e, true)
    }

    fn write_error_of(
        &self,
        path: &Path,
        e: anyhow::Error,
        full: bool,
    ) -> worldline_case::error::InputError {
        let io = e.chain().find_map(|c| c.downcast_ref::<std::io::Error>());
        let kind = io.map(std::io::Error::kind);
        // What to do depends on why: space for a full disk, rights for a
        // folder this user may not write (it said "free some space" to
        // both), the open-file limit for too many open files (it said
        // "pass --store with a folder you can write").
        let hint = match kind {
            _ if io
                .and_then(std::io::Error::raw_os_error)
                .is_some_and(is_out_of_files) =>
            {
                OUT_OF_FILES
            }
            Some(k) if is_refused(k) => {
                "run as a user who may write there, or pass --store with a folder you can write"
            }
            Some(std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded) => {
                "free some space or pass --store with a folder you can write"
            }
            _ if full => "free some space or pass --store with a folder you can write",
            // Something in the way (a file where a folder goes, a name
            // too long): space would not help (it said so to all of them).
            _ => "pass --store with a folder you can write",
        };
        worldline_case::error::InputError::new(
            path,
            format!(
                "cannot write into the store {}: {e:#}; {hint}",
                self.root.display()
            ),
        )
    }

    pub fn bundle_path(&self, run_id: &str) -> PathBuf {
        self.runs_dir().join(format!("{run_id}.jsonl"))
    }

    /// Every run id in the store, oldest first.
    pub fn run_ids(&self) -> Result<Vec<String>> {
        self.pull()?;
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
    pub fn resolve_run(&self, arg: &str) -> Result<PathBuf, worldline_case::error::InputError> {
        let as_path = Path::new(arg);
        // A path that is there in any form is the bundle named: a FIFO, a
        // folder or a looping link is then refused by its reading, saying
        // what it is (it was "no run … in this store; pass a bundle's
        // path", the path given).
        if as_path.is_file() || (names_a_path(arg) && as_path.symlink_metadata().is_ok()) {
            // A run id as it is (no `/`, no `.jsonl`) names the store's run
            // when the store has it, whatever the current folder holds (a
            // file an export wrote with `-o ID` hid the run).
            if is_run_id(arg) {
                self.pull()?;
                let run = self.bundle_path(arg);
                if run.is_file() {
                    return Ok(run);
                }
            }
            return Ok(as_path.to_path_buf());
        }
        // A path that is not there is no run id either: said of the path
        // (it was "no run `PATH` in this store ... or pass a bundle's path").
        if names_a_path(arg) {
            return Err(worldline_case::error::InputError::new(
                as_path,
                "no such bundle (a RUN is a run id, a unique prefix of one, or the path of a bundle that is there)",
            ));
        }
        // Only here is a path an answer too (`pin` takes an id alone).
        self.find_run_id(arg, ", or pass a bundle's path")
    }

    /// A run of this store named by its id or a unique prefix of it, and
    /// nothing else: never a path (what a web page or another run's header
    /// names is resolved here).
    pub fn resolve_run_id(&self, id: &str) -> Result<PathBuf, worldline_case::error::InputError> {
        self.find_run_id(id, "")
    }

    /// [`resolve_run_id`](Self::resolve_run_id), `more` said after where
    /// to list the runs when there is none (`serve`'s `fork_of.run` says
    /// where a client finds a run id).
    pub fn resolve_run_id_saying(
        &self,
        id: &str,
        more: &str,
    ) -> Result<PathBuf, worldline_case::error::InputError> {
        self.find_run_id(id, more)
    }

    /// [`resolve_run_id`](Self::resolve_run_id), `more` said after where
    /// to list the runs when there is none.
    fn find_run_id(
        &self,
        id: &str,
        more: &str,
    ) -> Result<PathBuf, worldline_case::error::InputError> {
        let none = || {
            worldline_case::error::InputError::new(
                self.name(),
                format!("no run `{id}` in this store (list them with `worldline runs`{more})"),
            )
        };
        if !is_run_id(id) {
            return Err(self.stray(id).unwrap_or_else(none));
        }
        self.pull()?;
        let exact = self.bundle_path(id);
        if exact.is_file() {
            return Ok(exact);
        }
        let mut found = self.bundles_named(|stem| is_run_id(stem) && stem.starts_with(id));
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => Err(none()),
            n => Err(worldline_case::error::InputError::new(
                self.name(),
                format!("`{id}` matches {n} runs; give more of the id"),
            )),
        }
    }

    /// The `.jsonl` files of `runs/` whose names less the suffix (a name
    /// not UTF-8 read with its bad bytes replaced) `matches` takes, sorted;
    /// none when the folder cannot be read.
    fn bundles_named(&self, matches: impl Fn(&str) -> bool) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.runs_dir())
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name().is_some_and(|n| {
                            n.to_string_lossy()
                                .strip_suffix(".jsonl")
                                .is_some_and(&matches)
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found
    }

    /// A file in `runs/` whose name (as `run_ids` gave it, a name not
    /// UTF-8 read with its bad bytes replaced) is no run id: worldline
    /// wrote no such file, so it is named and said to be no run, not
    /// looked for again under a name it does not have.
    pub fn stray(&self, name: &str) -> Option<worldline_case::error::InputError> {
        let found = self.bundles_named(|stem| stem == name).into_iter().next()?;
        Some(worldline_case::error::InputError::new(
            &found,
            "not a run's bundle: a run's id is letters, digits, `-` and `_`, and this file's \
             name is none; worldline did not write it (move it out of the store's runs/)",
        ))
    }
}

/// What to do when a write failed for want of a file descriptor.
const OUT_OF_FILES: &str = "the limit of open files was reached (this process's, `ulimit -n`, or the system's): raise it (`ulimit -n 4096`) or run fewer workers (`--jobs`)";

/// Whether the OS error `code` is the process's (`EMFILE`) or the
/// system's (`ENFILE`) limit of open files.
fn is_out_of_files(code: i32) -> bool {
    code == libc::EMFILE || code == libc::ENFILE
}

/// A path through links that lead back to themselves.
const LOOPED: &str = "is reached through symbolic links that lead back to themselves (too many levels of links): no store is there";

/// Whether `e` is a path whose links loop (`ELOOP`): it was said to be a
/// link to nothing, or not to exist.
fn looped(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// The store's own folders and lock file, made as they are first needed:
/// one of them of the wrong type (`pins` a file, `gc.lock` a folder) is
/// named as the store opens. `runs`, `gc` and `fuzz` each met it later
/// as a bare "Not a directory", exit 4.
fn misplaced(root: &Path) -> Result<(), worldline_case::error::InputError> {
    let parts = [
        ("pins", true),
        ("leases", true),
        ("worlds", true),
        ("campaigns", true),
        ("grades", true),
        ("gc.lock", false),
    ];
    for (part, folder) in parts {
        let path = root.join(part);
        let Ok(mut meta) = path.symlink_metadata() else {
            continue;
        };
        if meta.is_symlink() {
            // A link to nothing is left to the code that makes the part.
            let Ok(to) = path.metadata() else { continue };
            meta = to;
        }
        if meta.is_dir() != folder {
            let (is, kept) = match folder {
                true => ("not a folder", "a folder"),
                false => ("a folder", "a file"),
            };
            return Err(worldline_case::error::InputError::new(
                &path,
                format!(
                    "is {is}, where the store {} keeps {kept} of its own: move it out of the store (it is made again), or pass --store with another store",
                    root.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Whether an error of `kind` is a write refused for want of rights or on
/// a read-only mount.
fn is_refused(kind: std::io::ErrorKind) -> bool {
    matches!(
        kind,
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// A database store's error as an input error, named by the server it
/// came from (shown without its password); a server that could not be
/// reached or went away is [`InputError::store`](worldline_case::error::InputError::store)
/// (`--json`'s kind `store`, the UI's 503).
pub fn db_error(e: worldline_pgstore::DbError) -> worldline_case::error::InputError {
    worldline_case::error::InputError {
        store: e.unavailable,
        ..worldline_case::error::InputError::new(&e.shown, e.message)
    }
}

/// Whether `s` can be a run id: letters, digits, `-` and `_`, at most 128
/// (no path separator, no dot: it names a file in `runs/` and nothing else).
pub fn is_run_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Whether the bundle at `path` is locked by the process writing it
/// ([`StoreDir::being_recorded`]): what the run index reads of it may
/// still grow.
pub(crate) fn being_recorded(path: &Path) -> bool {
    worldline_case::bounded::open(path).is_ok_and(|file| {
        matches!(
            file.try_lock_shared(),
            Err(std::fs::TryLockError::WouldBlock)
        )
    })
}

/// Whether this process may write `path` (`access(2)`, which a read-only
/// mount refuses even to root); a path holding a NUL byte, which no file
/// has, is not refused here.
pub(crate) fn may_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new store in a temporary folder holding the demo world.
    fn stored_demo_world() -> (
        tempfile::TempDir,
        StoreDir,
        std::sync::Arc<worldline_case::world::World>,
    ) {
        let root = tempfile::tempdir().unwrap();
        let world_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/worlds/demo/v1");
        let world = worldline_case::world::load_dir(&world_dir).unwrap();
        let store = StoreDir::open(&root.path().join("store")).unwrap();
        store.put_world(&world).unwrap();
        (root, store, world)
    }

    /// A store that cannot be written says what to do for why: rights
    /// for a folder this user may not write, space only for a full disk
    /// (it said "free some space" to every cause).
    #[test]
    fn a_write_error_says_what_to_do_for_its_cause() {
        let root = tempfile::tempdir().unwrap();
        let store = StoreDir::open(&root.path().join("store")).unwrap();
        let said = |kind: std::io::ErrorKind| {
            store
                .write_error(Path::new("x"), std::io::Error::from(kind))
                .to_string()
        };
        let denied = said(std::io::ErrorKind::PermissionDenied);
        assert!(
            denied.ends_with(
                "; run as a user who may write there, or pass --store with a folder you can write"
            ),
            "{denied}"
        );
        let full = said(std::io::ErrorKind::StorageFull);
        assert!(
            full.ends_with("; free some space or pass --store with a folder you can write"),
            "{full}"
        );
        // Too many open files: neither space nor another folder would help.
        for code in [libc::EMFILE, libc::ENFILE] {
            let out_of_files = store
                .write_error(Path::new("x"), std::io::Error::from_raw_os_error(code))
                .to_string();
            assert!(out_of_files.contains("`ulimit -n`"), "{out_of_files}");
            assert!(!out_of_files.contains("--store"), "{out_of_files}");
        }
        // A file where a folder goes: space would not help.
        let in_the_way = said(std::io::ErrorKind::AlreadyExists);
        assert!(
            in_the_way
                .ends_with(": entity already exists; pass --store with a folder you can write"),
            "{in_the_way}"
        );
    }

    /// Only where a path is an answer too does the error offer one: `pin`
    /// (an id alone) offered a bundle's path and then refused it.
    #[test]
    fn a_missing_run_offers_a_path_only_where_one_is_taken() {
        let root = tempfile::tempdir().unwrap();
        let store = StoreDir::open(&root.path().join("store")).unwrap();
        let by_id = store.resolve_run_id("nosuchrun").unwrap_err().message;
        assert_eq!(
            by_id,
            "no run `nosuchrun` in this store (list them with `worldline runs`)"
        );
        let either = store.resolve_run("nosuchrun").unwrap_err().message;
        assert_eq!(
            either,
            "no run `nosuchrun` in this store (list them with `worldline runs`, or pass a bundle's path)"
        );
    }

    /// A prefix of a run id names runs only: a file in `runs/` whose name
    /// is no run id was found by the prefix it begins with.
    #[test]
    fn a_prefix_names_no_file_whose_name_is_no_run_id() {
        let root = tempfile::tempdir().unwrap();
        let store = StoreDir::open(&root.path().join("store")).unwrap();
        std::fs::create_dir_all(store.runs_dir()).unwrap();
        std::fs::write(store.runs_dir().join("zz.copy.jsonl"), "x").unwrap();
        assert!(store.resolve_run_id("zz").is_err());
        std::fs::write(store.runs_dir().join("zz-1.jsonl"), "x").unwrap();
        assert_eq!(
            store.resolve_run_id("zz").unwrap(),
            store.bundle_path("zz-1")
        );
    }

    /// Ids made one after another sort as they were made, also within one
    /// second (`runs` lists the newest first by id): their suffix was all
    /// tag, so runs of one second were listed in a random order.
    #[test]
    fn run_ids_sort_as_they_were_made() {
        let root = tempfile::tempdir().unwrap();
        let store = StoreDir::open(&root.path().join("store")).unwrap();
        let made: Vec<String> = (0..40)
            .map(|i| {
                std::thread::sleep(std::time::Duration::from_millis(2));
                store.new_run_id(&i.to_string())
            })
            .collect();
        let mut sorted = made.clone();
        sorted.sort();
        assert_eq!(sorted, made);
        assert!(
            made.iter().all(|id| is_run_id(id) && id.len() == 24),
            "{made:?}"
        );
    }

    /// A world is rebuilt into `worlds/<hash>/` as it is stored, so the
    /// first fork or replay of a run of it loads that folder instead of
    /// writing it; one stored earlier is rebuilt by its first load.
    #[test]
    fn a_world_is_rebuilt_as_it_is_stored() {
        let (_root, store, world) = stored_demo_world();
        let rebuilt = store.root.join("worlds").join(&world.hash);
        assert!(rebuilt.join("world.toml").is_file());
        assert_eq!(store.load_world(&world.hash).unwrap().hash, world.hash);
        std::fs::remove_dir_all(store.root.join("worlds")).unwrap();
        assert_eq!(store.load_world(&world.hash).unwrap().hash, world.hash);
        assert!(rebuilt.join("world.toml").is_file());
    }

    /// Threads of one process rebuilding one recorded world at once (as
    /// `verify --jobs` does) each get the whole world: they once shared a
    /// temporary folder, and one thread's half-written world was renamed
    /// into place under another's.
    #[test]
    fn threads_rebuilding_one_world_each_load_it_whole() {
        let (_root, store, world) = stored_demo_world();
        for round in 0..20 {
            let _ = std::fs::remove_dir_all(store.root.join("worlds"));
            std::thread::scope(|s| {
                let loads: Vec<_> = (0..8)
                    .map(|_| s.spawn(|| store.load_world(&world.hash)))
                    .collect();
                for l in loads {
                    let loaded = l.join().unwrap();
                    assert!(loaded.is_ok(), "round {round}: {}", loaded.err().unwrap());
                }
            });
        }
    }

    /// An object whose bytes matched their hash when read noting it is
    /// known intact while its file is unchanged: not while it had not
    /// settled, not after a plain read, not once it was written again.
    #[test]
    fn an_object_read_whole_is_known_intact_until_its_file_changes() {
        let root = tempfile::tempdir().unwrap();
        let store = StoreDir::open(&root.path().join("store")).unwrap();
        let sha = store.put_object(b"\0asm an agent").unwrap();
        store.get_object_noted(&sha).unwrap();
        assert!(
            !store.object_intact(&sha),
            "a file just written is read again"
        );
        std::thread::sleep(
            worldline_case::file_identity::SETTLED + std::time::Duration::from_millis(100),
        );
        store.read_object(&sha).unwrap();
        assert!(!store.object_intact(&sha), "a plain read notes nothing");
        store.get_object_noted(&sha).unwrap();
        assert!(store.object_intact(&sha));
        std::fs::write(store.object_path(&sha), b"\0asm not the agent you recorded").unwrap();
        assert!(!store.object_intact(&sha), "written again");
        assert!(store.read_object(&sha).is_err());
    }
}
