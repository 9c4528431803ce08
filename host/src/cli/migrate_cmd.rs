//! `worldline migrate`: bring a PostgreSQL store's schema up to this
//! worldline's version (an empty schema is created on first use by any
//! command; an older one only by this, once every writer is upgraded).
//! Runs stored before redacted copies were kept get theirs here.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use worldline_case::error::InputError;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: MigrateArgs) -> Result<ExitCode> {
    let address = args
        .common
        .store
        .to_str()
        .filter(|s| worldline_pgstore::url::is_postgres(s))
        .ok_or_else(|| {
            InputError::new(
                &args.common.store,
                "not a postgres:// store: a folder store has no schema to migrate",
            )
        })?;
    let store = StoreDir::open_database(address, true)?;
    let version = worldline_pgstore::VERSION;
    let copies = match store.role() {
        Some(worldline_pgstore::roles::Role::Responder) => store.fill_copies()?,
        _ => 0,
    };
    if args.common.json {
        out!(
            "{}",
            serde_json::json!({"store": store.name(), "schema_version": version, "copies_made": copies})
        )?;
    } else {
        out!("{} is at schema version {version}", store.name())?;
        if copies > 0 {
            out!("made the redacted copies of {copies} runs stored before copies were kept")?;
        }
    }
    Ok(ExitCode::Ok)
}
