//! `worldline audit [--run ID] [--since TIME]`: a database store's
//! unredacted reads, oldest first (who, when, which run, which command or
//! UI route). A responder's: a viewer can neither read nor write the audit.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use worldline_case::error::InputError;
use worldline_pgstore::audit::Filter;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct AuditArgs {
    /// Only reads of this run (an id or a prefix of one).
    #[arg(long)]
    pub run: Option<String>,
    /// Only reads at or after this time: 2026-11-26, 2026-11-26T08:00:00Z,
    /// or an age (7d, 12h, 30m).
    #[arg(long)]
    pub since: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: AuditArgs) -> Result<ExitCode> {
    let store = StoreDir::open_database_of(&args.common.store, "`audit`", false)?;
    let db = store.database_of("`audit`")?;
    store.require_raw("reading the audit")?;
    let since = args
        .since
        .as_deref()
        .map(|t| worldline_store::index::query::parse_time(t, super::runs_cmd::now_s()))
        .transpose()
        .map_err(|m| InputError::new("--since", m))?;
    let reads = db
        .audited(&Filter {
            run: args.run.clone(),
            since,
        })
        .map_err(worldline_store::store::db_error)?;
    if args.common.json {
        super::print_json(&reads)?;
        return Ok(ExitCode::Ok);
    }
    if reads.is_empty() {
        out!("no unredacted reads in {}", store.name())?;
    }
    for r in &reads {
        let who = match &r.token {
            Some(t) => format!("{} (token {t})", r.db_user),
            None => r.db_user.clone(),
        };
        out!(
            "{}  {who}  {}  {}",
            r.at,
            r.run_id.as_deref().unwrap_or("-"),
            r.command
        )?;
    }
    Ok(ExitCode::Ok)
}
