//! `worldline retention [--set FILE]`: the store's retention policy, the
//! one `gc` follows (a folder store's policy.toml; a database store's is
//! kept in its database, so every machine's `gc` follows the same). `--set`
//! checks a policy.toml and makes it the store's (on a database store, a
//! responder's).

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_store::retention::policy::{Policy, Source};
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct RetentionArgs {
    /// Make this policy.toml the store's retention policy.
    #[arg(long, value_name = "FILE")]
    pub set: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: RetentionArgs) -> Result<ExitCode> {
    // A policy may be set before the store's first run; one is shown of a
    // store that is there.
    let store = match args.set {
        Some(_) => StoreDir::open(&args.common.store)?,
        None => super::store_there(&args.common.store)?,
    };
    let Some(file) = &args.set else {
        return show(&store, args.common.json);
    };
    store.needs_writing("`retention --set`")?;
    let text = worldline_case::bounded::read_text(file, worldline_case::bounded::DOCUMENT)
        .map_err(|e| InputError::new(file, format!("cannot read the retention policy: {e}")))?;
    let policy = Policy::set(&store, file, &text)?;
    if args.common.json {
        super::print_json(&serde_json::json!({
            "store": store.name(), "set_from": file.display().to_string(), "policy": policy,
        }))?;
    } else {
        out!(
            "{}: retention policy set from {}",
            store.name(),
            file.display()
        )?;
    }
    Ok(ExitCode::Ok)
}

/// The store's policy: where it comes from, and its values.
fn show(store: &StoreDir, json: bool) -> Result<ExitCode> {
    let (policy, source) = Policy::of_store(store)?;
    let (from, text) = match &source {
        Source::File(path, text) => (path.display().to_string(), Some(text.as_str())),
        Source::Database(text) => ("the database".to_string(), Some(text.as_str())),
        Source::Defaults => ("the defaults".to_string(), None),
    };
    if json {
        super::print_json(&serde_json::json!({
            "store": store.name(), "from": from, "policy": policy, "text": text,
        }))?;
    } else {
        out!("# the retention policy of {} (from {from})", store.name())?;
        print!("{}", toml::to_string(&policy)?);
    }
    Ok(ExitCode::Ok)
}
