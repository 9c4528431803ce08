//! What a database store keeps in its database that a folder store keeps
//! as files beside its runs (`campaigns/`, `policy.toml`, `grades/`), so
//! every machine and the UI see them: fuzz campaign reports (raw, and
//! redacted when stored with the store's shared policy: a viewer reads
//! those), the retention policy's text (a responder sets it, anyone reads
//! it) and re-grades (raw data: a responder's). Re-grades are kept here
//! for both kinds of store (a folder store's as `grades/<run>/N.json`,
//! [`regrades`](super::regrades)), so `grade` asks the store and never
//! which kind it is; campaign reports and the retention policy keep the
//! folder store's files in `campaigns` and `retention/policy.rs`, and
//! these are the database's side.

use super::StoreDir;
use super::sync::this_writer;
use serde_json::Value;
use worldline_case::error::InputError;
use worldline_pgstore::roles::Role;

impl StoreDir {
    /// Keep campaign `id`'s report with its redacted form (under the
    /// store's policy; made again when the policy is set). A responder's.
    pub fn put_campaign(&self, id: &str, report: &Value) -> Result<(), InputError> {
        let db = self.database_of("keeping a campaign's report")?;
        self.require_raw("keeping a campaign's report (`fuzz`)")?;
        // Read now: a policy set while the campaign ran is the one to use.
        let redacted = self.redacted_report(report, true)?;
        db.put_campaign(
            id,
            &worldline_case::canon::to_string(report),
            &redacted,
            this_writer(),
        )
        .map_err(crate::store::db_error)
    }

    /// A kept report's redacted form (canonical JSON): the store's
    /// policy over it ([`Redactor::report`](worldline_log::redact::Redactor::report)),
    /// the policy read again first when `fresh`.
    pub(super) fn redacted_report(
        &self,
        report: &Value,
        fresh: bool,
    ) -> Result<String, InputError> {
        let shared = self.shared_policy(fresh)?;
        let mut redacted = report.clone();
        worldline_log::redact::shared(&shared.policy, &shared.salt)?.report(&mut redacted);
        Ok(worldline_case::canon::to_string(&redacted))
    }

    /// Every campaign kept in the database, newest first: to a viewer the
    /// redacted reports, to a responder the raw ones (which its readers
    /// redact, as they do runs). A report that does not parse is left out.
    pub fn campaigns(&self) -> Result<Vec<(String, Value)>, InputError> {
        let db = self.database_of("listing campaigns")?;
        let kept = db
            .campaigns(self.reads_redacted())
            .map_err(crate::store::db_error)?;
        Ok(kept
            .into_iter()
            .filter_map(|(id, text)| Some((id, serde_json::from_str(&text).ok()?)))
            .collect())
    }

    /// Campaign `id`'s report as [`campaigns`](Self::campaigns) reads it.
    pub fn campaign(&self, id: &str) -> Result<Value, InputError> {
        let db = self.database_of("reading a campaign")?;
        let where_ = format!("{} campaign {id}", db.url.shown);
        let text = db
            .campaign(id, self.reads_redacted())
            .map_err(crate::store::db_error)?
            .ok_or_else(|| InputError::new(&where_, "no such campaign in the store"))?;
        serde_json::from_str(&text)
            .map_err(|e| InputError::new(&where_, format!("not a campaign report: {e}")))
    }

    /// Whether this reader gets the redacted column (a viewer).
    fn reads_redacted(&self) -> bool {
        self.role() == Some(Role::Viewer)
    }

    /// The retention policy's text kept in the database, if one was set.
    pub fn retention_text(&self) -> Result<Option<String>, InputError> {
        let db = self.database_of("reading the retention policy")?;
        db.retention_policy().map_err(crate::store::db_error)
    }

    /// Keep `text` (a policy.toml its caller checked) as the store's
    /// retention policy. A responder's.
    pub fn set_retention_text(&self, text: &str) -> Result<(), InputError> {
        let db = self.database_of("setting the retention policy")?;
        self.require_raw("setting the retention policy")?;
        db.set_retention_policy(text)
            .map_err(crate::store::db_error)
    }

    /// Keep `grade` as run `run_id`'s next re-grade; its number, or `None`
    /// when a database store holds no such run (a bundle from elsewhere).
    pub fn put_regrade(&self, run_id: &str, grade: &Value) -> Result<Option<i32>, InputError> {
        if self.database().is_none() {
            return super::regrades::put(self, run_id, grade).map(Some);
        }
        let db = self.database_of("keeping a re-grade")?;
        self.require_raw("keeping a re-grade (`grade`)")?;
        db.put_regrade(
            run_id,
            &worldline_case::canon::to_string(grade),
            this_writer(),
        )
        .map_err(crate::store::db_error)
    }

    /// Run `run_id`'s re-grades kept in the store, the newest first.
    pub fn regrades(&self, run_id: &str) -> Result<Vec<Value>, InputError> {
        if self.database().is_none() {
            return Ok(super::regrades::all(self, run_id));
        }
        let db = self.database_of("reading a re-grade")?;
        self.require_raw("reading a re-grade (`grade`)")?;
        let texts = db.regrades(run_id).map_err(crate::store::db_error)?;
        texts
            .iter()
            .map(|text| {
                serde_json::from_str(text).map_err(|e| {
                    InputError::new(
                        &db.url.shown,
                        format!(
                            "run {run_id}'s re-grade is not JSON ({e}): the database was modified"
                        ),
                    )
                })
            })
            .collect()
    }
}

/// Makes a kept report's (a campaign's, a shard's) redacted form from
/// its raw text under `policy` and `salt` (when the store's policy is
/// set).
pub(super) fn report_redactor(
    policy: &str,
    salt: &str,
) -> impl FnMut(&str) -> Result<String, String> + use<> {
    let (policy, salt) = (policy.to_string(), salt.to_string());
    move |text: &str| {
        let mut doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        worldline_log::redact::shared(&policy, &salt)
            .map_err(|e| e.to_string())?
            .report(&mut doc);
        Ok(worldline_case::canon::to_string(&doc))
    }
}
