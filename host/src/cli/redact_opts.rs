//! The redaction options of the commands that show or export run content
//! (`history`, `show`, `diff`, `export --redacted`, `otel`, `ui`).

use crate::redact::{self, Redactor};
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Clone, Default)]
pub struct RedactArgs {
    /// Redact with this policy (default: the store's redact.toml, when it has one).
    #[arg(long, value_name = "FILE")]
    pub redact: Option<PathBuf>,
    /// Show everything, whatever the store's redaction policy.
    #[arg(long, conflicts_with = "redact")]
    pub unredacted: bool,
}

impl RedactArgs {
    /// This view's redactor (none without a policy or with --unredacted).
    pub fn redactor(&self, store: &StoreDir) -> Result<Option<Redactor>> {
        redact::for_store(&store.root, self.redact.as_deref(), self.unredacted)
    }
}
