//! Who reads a database store, and what they see: a viewer's commands get
//! the store's redacted view and are refused what needs raw data (naming
//! the role to ask for); a responder's views are redacted with the
//! store's shared policy unless it asks for them raw, and each raw read is
//! audited first. A folder store has no roles: its reader sees what its
//! files allow.

use super::StoreDir;
use std::collections::BTreeMap;
use worldline_case::error::InputError;
use worldline_log::redact::Redactor;
use worldline_pgstore::copies::{Remake, Shared};
use worldline_pgstore::roles::Role;

/// Why a database store refuses `--redact FILE` (every reader of one:
/// `history`, `show`, `ui`, ...), and what to do instead.
pub const OWN_POLICY: &str = "a database store redacts with its own policy (kept in the database): set it with `worldline redaction --set FILE`";

impl StoreDir {
    /// The reader's role in a database store (none for a folder store).
    pub fn role(&self) -> Option<Role> {
        self.db.as_ref().map(|db| db.role)
    }

    /// Refuse `what` (which reads raw runs, their cases or worlds) to a
    /// viewer, naming the role it needs.
    pub fn require_raw(&self, what: &str) -> Result<(), InputError> {
        match &self.db {
            Some(db) if db.role == Role::Viewer => {
                Err(crate::store::db_error(db.needs(Role::Responder, what)))
            }
            _ => Ok(()),
        }
    }

    /// The store's shared policy and salt (read once per process; again
    /// when `fresh`).
    pub(super) fn shared_policy(&self, fresh: bool) -> Result<Shared, InputError> {
        let db = self.db.as_ref().expect("a database store");
        let mut cached = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if fresh || cached.is_none() {
            *cached = Some(db.shared_policy().map_err(crate::store::db_error)?);
        }
        Ok(cached.clone().expect("read above"))
    }

    /// The redactor of a database store's view for this reader: the
    /// shared policy for a responder; none for a viewer, whose runs are
    /// already the redacted copies. `None` for a folder store (its
    /// `redact.toml` applies, see [`worldline_log::redact::for_store`]).
    pub fn database_redactor(&self) -> Result<Option<Option<Redactor>>, InputError> {
        match self.role() {
            None => Ok(None),
            Some(Role::Viewer) => Ok(Some(None)),
            Some(Role::Responder) => {
                let shared = self.shared_policy(true)?;
                Ok(Some(Some(worldline_log::redact::shared(
                    &shared.policy,
                    &shared.salt,
                )?)))
            }
        }
    }

    /// Before showing `runs` raw through `command` (with the UI token
    /// `token`): refused to a viewer, noted in the audit for a responder
    /// (a read that cannot be noted does not happen). Nothing for a folder
    /// store.
    pub fn audit_raw(
        &self,
        token: Option<&str>,
        runs: &[&str],
        command: &str,
    ) -> Result<(), InputError> {
        let Some(db) = &self.db else {
            return Ok(());
        };
        self.require_raw(&format!("{command} (unredacted)"))?;
        db.audit(token, runs, command)
            .map_err(crate::store::db_error)
    }

    /// Before re-executing `runs` through `command` (`replay`, `fork`,
    /// `rerun`, `repro`, `grade`, `verify`), whose output shows raw
    /// values (a divergence's requests, a grade's failures): refused to a
    /// viewer, audited for a responder. Nothing for a folder store.
    pub fn audit_reexecution(&self, runs: &[&str], command: &str) -> Result<(), InputError> {
        match &self.db {
            None => Ok(()),
            Some(_) => self.audit_raw(None, runs, command),
        }
    }

    /// Set a database store's redaction policy to `text` (a `redact.toml`,
    /// checked first) and make every run's redacted copy (and campaign
    /// report's redacted form) again under it, in one transaction; how many copies were made. A responder's.
    pub fn set_policy(&self, text: &str) -> anyhow::Result<usize> {
        let db = self.database_of("setting the redaction policy")?;
        self.require_raw("setting the redaction policy")?;
        worldline_log::redact::Policy::parse(std::path::Path::new("the policy given"), text)?;
        let salt = self.shared_policy(true)?.salt;
        let mut remake = self.remaker(db, text, &salt)?;
        let made = db
            .set_policy(
                text,
                &worldline_case::canon::sha256_hex(text),
                &mut *remake,
                &mut super::shared::report_redactor(text, &salt),
            )
            .map_err(crate::store::db_error)?;
        self.shared_policy(true)?;
        Ok(made)
    }

    /// Make the redacted copies runs stored before copies were kept lack
    /// (after `migrate`); how many.
    pub fn fill_copies(&self) -> anyhow::Result<usize> {
        let db = self.database_of("making redacted copies")?;
        let shared = self.shared_policy(true)?;
        let mut remake = self.remaker(db, &shared.policy, &shared.salt)?;
        Ok(db
            .fill_copies(&mut *remake)
            .map_err(crate::store::db_error)?)
    }

    /// What makes a run's redacted copy from its raw lines under `policy`
    /// and `salt` as a run's store makes it: its case's clock in the
    /// header, and what the policy's `state` paths hide in its world's
    /// state hidden where its events quote it (a get's answer). The
    /// cases and worlds of the store's runs are read first (each once):
    /// the transaction the copies are made in holds the connection they
    /// are read through.
    fn remaker(
        &self,
        db: &worldline_pgstore::Database,
        policy: &str,
        salt: &str,
    ) -> anyhow::Result<Box<Remake<'static>>> {
        let fresh = || worldline_log::redact::shared(policy, salt);
        let (cases, worlds) = db.run_inputs().map_err(crate::store::db_error)?;
        let clocks: BTreeMap<String, String> = (cases.into_iter())
            .filter_map(|h| {
                let clock = self.case_clock(&h)?;
                Some((h, worldline_case::time::rfc3339(clock)))
            })
            .collect();
        let mut learned: BTreeMap<String, Redactor> = BTreeMap::new();
        for h in worlds {
            // As a run's store learns it: a world that cannot be read
            // (its objects gone) is not learned.
            if let Ok(world) = self.load_world(&h) {
                let mut r = fresh()?;
                r.learn_state(&world.initial);
                learned.insert(h, r);
            }
        }
        let fresh = fresh()?;
        Ok(Box::new(move |id: &str, lines: &[String]| {
            let mut text = lines.join("\n");
            text.push('\n');
            let mut b =
                worldline_log::log::bundle::parse_held(text.as_bytes(), std::path::Path::new(id))
                    .map_err(|e| e.to_string())?;
            let mut r = learned.get(&b.header.world_hash).unwrap_or(&fresh).clone();
            let clock = clocks.get(&b.header.case_hash).cloned();
            let copy = worldline_log::redact::copy::of(id, &mut b, clock, &mut r);
            Ok(worldline_log::log::bundle::held_to_text(&copy)
                .lines()
                .map(String::from)
                .collect())
        }))
    }

    /// The database, or a refusal of `what` on a folder store.
    pub fn database_of(&self, what: &str) -> Result<&worldline_pgstore::Database, InputError> {
        self.db
            .as_ref()
            .ok_or_else(|| not_a_database(&self.root, what))
    }

    /// Open the store at `root` for `what`, which only a database store
    /// has (`audit`, `merge --suite`, `redaction`): a folder is refused
    /// as it is named, nothing made there; a database schema that holds
    /// no store is refused too ([`open_existing`](Self::open_existing))
    /// unless `make` (a policy set before the store's first run).
    pub fn open_database_of(
        root: &std::path::Path,
        what: &str,
        make: bool,
    ) -> anyhow::Result<Self> {
        match root
            .to_str()
            .filter(|s| worldline_pgstore::url::is_postgres(s))
        {
            None => Err(not_a_database(root, what).into()),
            Some(_) if make => Self::open(root),
            Some(_) => Self::open_existing(root),
        }
    }
}

/// Why `what` is refused on the folder store at `root`.
fn not_a_database(root: &std::path::Path, what: &str) -> InputError {
    InputError::new(
        root,
        format!(
            "{what} is for a postgres:// store, which keeps it in its database; this is a folder store"
        ),
    )
}
