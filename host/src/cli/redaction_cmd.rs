//! `worldline redaction [--set FILE]`: a database store's shared redaction
//! policy (what a viewer sees, and a responder by default). `--set`
//! replaces it (a responder's) and makes every run's redacted copy again
//! in the same transaction; viewers' working folders take the new copies
//! on their next read.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct RedactionArgs {
    /// Replace the store's policy with this redact.toml.
    #[arg(long, value_name = "FILE")]
    pub set: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: RedactionArgs) -> Result<ExitCode> {
    // Only a new policy may make the store (set before its first run); a
    // mistyped schema is not an empty store whose policy is the default.
    let store = StoreDir::open_database_of(&args.common.store, "`redaction`", args.set.is_some())?;
    let db = store.database_of("`redaction`")?;
    store.require_raw("the store's redaction policy")?;
    let Some(file) = &args.set else {
        let shared = db
            .shared_policy()
            .map_err(worldline_store::store::db_error)?;
        if args.common.json {
            super::print_json(&serde_json::json!({
                "store": store.name(), "policy": shared.policy, "policy_sha256": shared.policy_sha256,
            }))?;
        } else if shared.policy.trim().is_empty() {
            out!(
                "{}: the default policy (every built-in detector, no paths)",
                store.name()
            )?;
        } else {
            print!("{}", shared.policy);
        }
        return Ok(ExitCode::Ok);
    };
    let text = worldline_log::redact::Policy::read(file)?;
    worldline_log::redact::Policy::parse(file, &text)?;
    let made = store.set_policy(&text)?;
    if args.common.json {
        super::print_json(&serde_json::json!({
            "store": store.name(), "policy_sha256": worldline_case::canon::sha256_hex(&text), "copies_made": made,
        }))?;
    } else {
        out!(
            "{}: policy set from {}; {made} redacted copies made again",
            store.name(),
            file.display()
        )?;
    }
    Ok(ExitCode::Ok)
}
