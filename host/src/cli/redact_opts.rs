//! The redaction options of the commands that show or export run content
//! (`history`, `show`, `diff`, `export`, `otel`, `merge`, `runs`, `ui`). On a
//! database store the store's shared policy applies: a viewer sees the
//! redacted copies and cannot ask for more; a responder's `--unredacted`
//! read is audited before anything is shown.

use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use worldline_log::redact::{self, Redactor};
use worldline_store::store::StoreDir;

#[derive(Args, Clone, Default)]
pub struct RedactArgs {
    /// Redact with this policy (default: the store's redact.toml, when it
    /// has one; a database store's own policy cannot be replaced).
    #[arg(long, value_name = "FILE")]
    pub redact: Option<PathBuf>,
    /// Show everything, whatever the store's redaction policy (on a
    /// database store: a responder's, and audited).
    #[arg(long, conflicts_with = "redact")]
    pub unredacted: bool,
}

impl RedactArgs {
    /// This view's redactor (none without a policy or with --unredacted)
    /// for `command` reading `runs`.
    pub fn redactor(
        &self,
        store: &StoreDir,
        command: &str,
        runs: &[&str],
    ) -> Result<Option<Redactor>> {
        let Some(view) = store.database_redactor()? else {
            return redact::for_store(&store.root, self.redact.as_deref(), self.unredacted);
        };
        if let Some(file) = &self.redact {
            return Err(worldline_case::error::InputError::new(
                file,
                worldline_store::store::OWN_POLICY,
            )
            .into());
        }
        if self.unredacted {
            store.audit_raw(None, runs, &format!("{command} --unredacted"))?;
            return Ok(None);
        }
        Ok(view)
    }
}

/// The run id of a bundle path (its file name without `.jsonl`).
pub fn id_of(path: &std::path::Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}
