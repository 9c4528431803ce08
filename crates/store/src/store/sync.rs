//! A database-kept store's working folder and the database: a finished
//! run is stored whole (objects, row, lines and its redacted copy in one
//! transaction), and a reader brings the folder up to date (runs written
//! or removed since it last looked) before it lists or resolves runs; a
//! viewer's folder gets the redacted copies only.

use super::{StoreDir, is_run_id};
use anyhow::{Context as _, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_log::log::bundle;
use worldline_pgstore::roles::Role;
use worldline_pgstore::writer::Writer;
use worldline_pgstore::{Copy, RunRow, Stored};

/// The working folder of the database store shown as `shown`:
/// `$WORLDLINE_STORE_CACHE` (else the user's cache folder)
/// `/worldline/stores/pg-<hash of the address>`.
pub(super) fn working_folder(shown: &str) -> PathBuf {
    let base = std::env::var_os("WORLDLINE_STORE_CACHE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .map(|c| c.join("worldline").join("stores"))
        })
        .unwrap_or_else(|| std::env::temp_dir().join("worldline-stores"));
    base.join(format!(
        "pg-{}",
        &worldline_case::canon::sha256_hex(shown)[..16]
    ))
}

/// The writer this process is (read from its environment once).
pub(super) fn this_writer() -> &'static Writer {
    static WRITER: std::sync::OnceLock<Writer> = std::sync::OnceLock::new();
    WRITER.get_or_init(|| Writer::from_env(|k| std::env::var(k).ok()))
}

/// The working folder's note of how far it is up to date.
const PULLED: &str = "pulled.json";

/// Where runs that could not be stored in the database are kept.
const UNSTORED: &str = "unstored";

#[derive(serde::Serialize, serde::Deserialize, Default)]
struct Pulled {
    runs: i64,
    removed: i64,
    /// What the folder holds: `raw` runs, or a viewer's `redacted` copies
    /// (a folder whose reader's role changed is emptied first).
    #[serde(default)]
    view: String,
}

/// A run this process finished: the parts its bundle was written from.
#[derive(Clone, Copy)]
pub struct Finished<'a> {
    pub header: &'a bundle::Header,
    pub events: &'a [worldline_log::log::Event],
    pub footer: Option<&'a bundle::Footer>,
}

/// The view a role's working folder holds.
fn view_of(role: Role) -> &'static str {
    match role {
        Role::Responder => "raw",
        Role::Viewer => "redacted",
    }
}

impl StoreDir {
    /// The objects a run needs: agent, case, world manifest (and an
    /// overlaid world's record) and world files, sorted. A world's are
    /// found once per process (a suite's runs share it).
    pub fn run_objects(&self, header: &bundle::Header) -> Result<Vec<String>> {
        let mut shas = vec![header.agent_sha256.clone(), header.case_hash.clone()];
        shas.extend(self.world_objects(&header.world_hash)?);
        shas.sort();
        shas.dedup();
        Ok(shas)
    }

    /// The world `world_hash`'s objects: its manifest (and an overlaid
    /// world's record and base manifest) and its files.
    fn world_objects(&self, world_hash: &str) -> Result<Vec<String>> {
        let mut known = self.world_objects.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shas) = known.get(world_hash) {
            return Ok(shas.clone());
        }
        let mut shas = vec![world_hash.to_string()];
        let mut world = self.get_object(world_hash)?;
        // An overlaid world: its record, and the base world's manifest.
        if let Some(record) = worldline_case::world::overlay::Record::parse(&world) {
            shas.push(record.world.clone());
            world = self.get_object(&record.world)?;
        }
        let manifest: BTreeMap<String, String> =
            serde_json::from_slice(&world).context("reading the world manifest")?;
        shas.extend(manifest.into_values());
        known.insert(world_hash.to_string(), shas.clone());
        Ok(shas)
    }

    /// Store the finished run `run_id` of the working folder in the
    /// database, whole or not at all (nothing to do for a folder store).
    /// A run the database did not take is moved out of `runs/` (to
    /// `unstored/`), so no reader takes it for a stored run.
    /// Whether the run is new to the database (false: another writer
    /// stored it first; a folder store's runs are always new). A run the
    /// database could not take is an error marked
    /// [`InputError::store`].
    pub fn publish(&self, run_id: &str) -> Result<bool> {
        self.publish_parts(run_id, None)
    }

    /// [`publish`](Self::publish) for a run this process just finished,
    /// whose parts it holds: its bundle's lines are read, not parsed again.
    pub fn publish_finished(&self, run_id: &str, run: Finished) -> Result<bool> {
        self.publish_parts(run_id, Some(run))
    }

    fn publish_parts(&self, run_id: &str, given: Option<Finished>) -> Result<bool> {
        let Some(db) = &self.db else {
            return Ok(true);
        };
        if db.role == Role::Viewer {
            return Err(crate::store::db_error(db.needs(Role::Responder, "storing a run")).into());
        }
        let path = self.bundle_path(run_id);
        let stored = (|| -> Result<bool> {
            let text = worldline_case::bounded::read_text(&path, worldline_case::bounded::BUNDLE)
                .map_err(|e| InputError::new(&path, format!("cannot read the run: {e}")))?;
            let parsed;
            let b = match given {
                Some(run) => run,
                None => {
                    parsed = bundle::parse(text.as_bytes(), &path).map_err(InputError::from)?;
                    Finished {
                        header: &parsed.header,
                        events: &parsed.events,
                        footer: parsed.footer.as_ref(),
                    }
                }
            };
            let footer = b.footer.filter(|_| text.ends_with('\n')).ok_or_else(|| {
                InputError::new(
                    &path,
                    "the run has no footer: an unfinished run is not stored",
                )
            })?;
            // A redacted copy brings its agent only (see `export.rs`).
            let shas = match b.header.redacted {
                Some(_) => vec![b.header.agent_sha256.clone()],
                None => self.run_objects(b.header)?,
            };
            let mut objects = db
                .missing_objects(&shas)
                .map_err(crate::store::db_error)?
                .into_iter()
                .map(|sha| Ok((sha.clone(), self.read_object(&sha)?)))
                .collect::<Result<Vec<_>, InputError>>()?;
            let lines: Vec<&str> = text.lines().collect();
            let row = RunRow {
                id: run_id,
                agent_sha256: &b.header.agent_sha256,
                case_hash: &b.header.case_hash,
                world_hash: &b.header.world_hash,
                chain_hash: &footer.chain_hash,
                writer: this_writer(),
                parent: b.header.parent.as_ref().map(|p| p.run.as_str()),
                objects: &shas,
            };
            // The copy is made under the policy this process read; one
            // changed meanwhile is read again and the copy made again.
            // Objects gc (on another machine) removed since they were
            // asked about are sent with the run.
            let clock = (self.case_clock(&b.header.case_hash)).map(worldline_case::time::rfc3339);
            let mut fresh = false;
            for _ in 0..5 {
                let shared = self.shared_policy(fresh)?;
                let mut redactor = worldline_log::redact::shared(&shared.policy, &shared.salt)?;
                self.learn_world(&mut redactor, &b.header.world_hash);
                let copy = worldline_log::redact::copy::of_parts(
                    run_id,
                    b.header,
                    b.events,
                    b.footer,
                    clock.clone(),
                    &mut redactor,
                );
                let copy = bundle::held_to_text(&copy);
                let copy = Copy {
                    policy_sha256: &shared.policy_sha256,
                    lines: copy.lines().collect(),
                };
                match db.put_run(&row, &lines, &objects, &copy)? {
                    Stored::PolicyChanged => fresh = true,
                    Stored::Missing(missing) => {
                        for sha in missing {
                            if !objects.iter().any(|(s, _)| *s == sha) {
                                let bytes = self.read_object(&sha)?;
                                objects.push((sha, bytes));
                            }
                        }
                    }
                    Stored::New => return Ok(true),
                    Stored::Same => return Ok(false),
                }
            }
            Err(InputError::new(
                &db.url.shown,
                "the store kept changing while the run was stored (its redaction policy, or gc removing what it needs); run it again",
            )
            .into())
        })();
        let e = match stored {
            Ok(new) => return Ok(new),
            Err(e) => e,
        };
        let aside = self.root.join(UNSTORED).join(format!("{run_id}.jsonl"));
        let kept = std::fs::create_dir_all(aside.parent().unwrap_or(&self.root))
            .and_then(|()| std::fs::rename(&path, &aside))
            .is_ok();
        if kept {
            (self.set_aside.lock().unwrap_or_else(|e| e.into_inner())).push(aside.clone());
        }
        let lost = (e.chain()).any(|c| {
            c.downcast_ref::<worldline_pgstore::DbError>()
                .is_some_and(|d| d.lost)
        });
        // The database's own error already names its address: named once.
        let said_by_db = e
            .downcast_ref::<InputError>()
            .filter(|i| i.file.as_os_str() == db.url.shown.as_str());
        let from_db =
            said_by_db.is_some() || (e.chain()).any(|c| c.is::<worldline_pgstore::DbError>());
        let mut message = said_by_db.map_or_else(|| format!("{e:#}"), |i| i.message.clone());
        match (kept, lost) {
            // The server may have taken it before the connection ended:
            // told to run it again, a user stored it twice.
            (true, true) => message.push_str(&format!(
                "; the connection ended as the run was being stored, so the database may hold it: its bundle is kept at {}, and once the server is back the next command that reads the store removes that copy if the database has the run (`worldline runs` then lists it); run it again only if it does not",
                aside.display()
            )),
            // Run again, a native or a model's run is another run: the one
            // made can be stored as it is (its copy goes once it is).
            (true, false) if from_db => message.push_str(&format!(
                "; the run was not stored (its bundle is kept at {0}); once the server is back, run it again, or store the run as it was made: `worldline export {0} -o run.json`, then `worldline import run.json` into this store",
                aside.display()
            )),
            (true, false) => message.push_str(&format!(
                "; the run was not stored (its bundle is kept at {})",
                aside.display()
            )),
            (false, _) => {}
        }
        Err(InputError {
            store: from_db,
            ..InputError::new(&db.url.shown, message)
        }
        .into())
    }

    /// The bundles of the runs this process made that the database did
    /// not take, in the order they were set aside (in the working
    /// folder's `unstored/`): a suite stopped by its server going away
    /// names them all, not only the one its error is about.
    pub fn set_aside(&self) -> Vec<PathBuf> {
        (self.set_aside.lock().unwrap_or_else(|e| e.into_inner())).clone()
    }

    /// The bundles the working folder's `unstored/` holds now (none for a
    /// folder store): a command some of whose runs other processes make
    /// (a campaign's workers, whose [`set_aside`](Self::set_aside) it
    /// does not see) names those set aside while it ran by what it held
    /// before.
    pub fn unstored(&self) -> std::collections::BTreeSet<PathBuf> {
        if self.db.is_none() {
            return Default::default();
        }
        let Ok(dir) = std::fs::read_dir(self.root.join(UNSTORED)) else {
            return Default::default();
        };
        (dir.filter_map(|e| Some(e.ok()?.path())))
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect()
    }

    /// Bring the working folder up to date with the database (at most once
    /// a second: a command resolving many runs asks once, a long-lived UI
    /// sees what writers add): bundles of runs stored since the last pull are written,
    /// bundles of runs removed since are deleted (the index follows the
    /// folder). Nothing to do for a folder store.
    pub fn pull(&self) -> Result<(), InputError> {
        let Some(db) = &self.db else {
            return Ok(());
        };
        let mut last = self.pulled.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1)) {
            return Ok(());
        }
        let mark_path = self.root.join(PULLED);
        let mut mark: Pulled =
            worldline_case::bounded::read(&mark_path, worldline_case::bounded::DOCUMENT)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default();
        let view = view_of(db.role);
        // Folders made before roles held raw runs.
        if mark.view.is_empty() {
            mark.view = view_of(Role::Responder).to_string();
        }
        if mark.view != view {
            self.empty_working_folder(db.role)?;
            mark = Pulled {
                view: view.to_string(),
                ..Pulled::default()
            };
        }
        let fresh = db.runs_after(mark.runs).map_err(crate::store::db_error)?;
        // A viewer's copies are made again when the policy changes: those
        // are written over the old ones (and the index made again).
        let copies = db.role == Role::Viewer;
        let wanted: Vec<String> = fresh
            .iter()
            .map(|(_, id)| id.clone())
            .filter(|id| is_run_id(id) && (copies || !self.bundle_path(id).is_file()))
            .collect();
        let mut replaced = false;
        for chunk in wanted.chunks(500) {
            for (id, lines) in db.lines_of(chunk).map_err(crate::store::db_error)? {
                let mut text = lines.join("\n");
                text.push('\n');
                let path = self.bundle_path(&id);
                replaced |= path.is_file();
                worldline_case::durable::write(&path, text.as_bytes())
                    .map_err(|e| self.write_error(&path, e))?;
            }
        }
        if replaced {
            self.drop_index();
        }
        // A run set aside as not stored that the database does hold (the
        // connection ended after the server took it, or it was imported
        // since): its copy goes.
        for (_, id) in &fresh {
            let aside = self.root.join(UNSTORED).join(format!("{id}.jsonl"));
            if aside.is_file() && self.bundle_path(id).is_file() {
                let _ = std::fs::remove_file(&aside);
                ::log::info!(
                    "run {id} was stored after all (the connection ended as it was being stored, or it was imported since): its copy in {} is removed",
                    self.root.join(UNSTORED).display()
                );
            }
        }
        if let Some((seq, _)) = fresh.last() {
            mark.runs = *seq;
        }
        for (seq, id) in db
            .removed_after(mark.removed)
            .map_err(crate::store::db_error)?
        {
            if is_run_id(&id) && !fresh.iter().any(|(_, f)| *f == id) {
                let _ = std::fs::remove_file(self.bundle_path(&id));
            }
            mark.removed = seq;
        }
        let bytes = serde_json::to_vec(&mark).expect("marks serialize");
        worldline_case::durable::write(&mark_path, &bytes)
            .map_err(|e| self.write_error(&mark_path, e))?;
        *last = Some(std::time::Instant::now());
        Ok(())
    }

    /// Empty a working folder whose reader's role changed to `role`: its
    /// runs, the objects and worlds read from the database, and the index
    /// (a viewer never finds a responder's raw runs where it reads); for a
    /// viewer, the runs this user could not store too.
    fn empty_working_folder(&self, role: Role) -> Result<(), InputError> {
        let unstored = match role {
            Role::Viewer => Some(UNSTORED),
            Role::Responder => None,
        };
        for sub in ["runs", "objects", "worlds"].into_iter().chain(unstored) {
            let dir = self.root.join(sub);
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(|e| self.write_error(&dir, e))?;
            }
        }
        for sub in ["runs", "objects"] {
            let dir = self.root.join(sub);
            std::fs::create_dir_all(&dir).map_err(|e| self.write_error(&dir, e))?;
        }
        self.drop_index();
        Ok(())
    }

    /// Remove the run index, which the next reader makes again from the
    /// folder (rows of copies written over are stale).
    fn drop_index(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(self.root.join(format!("{}{suffix}", super::INDEX_FILE)));
        }
    }

    /// Keep a shard's `test --json` report (`report`) in the database
    /// under `suite` and its partition, with its redacted form (the
    /// store's policy's detectors on every string), for `merge --suite`.
    pub fn put_shard(
        &self,
        suite: &str,
        part: &str,
        selection: &str,
        report: &serde_json::Value,
    ) -> Result<u64, InputError> {
        let db = self.database_of("keeping a shard's report")?;
        self.require_raw("storing a shard's report")?;
        let redacted = self.redacted_report(report, false)?;
        db.put_shard(
            &worldline_pgstore::shards::ShardReport {
                suite,
                part,
                selection,
                report: &worldline_case::canon::to_string(report),
                redacted: &redacted,
            },
            this_writer(),
        )
        .map_err(crate::store::db_error)
    }
}
