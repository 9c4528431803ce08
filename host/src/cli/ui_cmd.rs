//! `worldline ui [--store DIR] [--port P] [--open] [--read-only]
//! [--redact FILE | --unredacted] [RUN | --last-failed]`.

use super::Common;
use super::redact_opts::RedactArgs;
use crate::error::{ExitCode, InputError};
use crate::ui::{self, Start};
use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct UiArgs {
    /// Open this run's page first (id, unique prefix or bundle path).
    pub run: Option<String>,
    /// Open the newest failed (or faulted) run first.
    #[arg(long, conflicts_with = "run")]
    pub last_failed: bool,
    /// Port on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8484)]
    pub port: u16,
    /// Open the printed URL in the desktop's browser.
    #[arg(long)]
    pub open: bool,
    /// Look only: no fork or replay forms (and their requests are refused).
    #[arg(long)]
    pub read_only: bool,
    #[command(flatten)]
    pub redaction: RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: UiArgs) -> Result<ExitCode> {
    if args.common.json {
        return Err(InputError::new("--json", "`ui` serves pages; it has no JSON output").into());
    }
    let start = match (args.run, args.last_failed) {
        (Some(r), _) => Start::Run(r),
        (None, true) => Start::LastFailed,
        (None, false) => Start::Runs,
    };
    ui::serve(ui::Config {
        store: args.common.store,
        port: args.port,
        open: args.open,
        read_only: args.read_only,
        start,
        redact: args.redaction.redact,
        unredacted: args.redaction.unredacted,
        prices: project_prices()?,
    })?;
    Ok(ExitCode::Ok)
}

/// The `[prices]` of the project file found from the working folder.
fn project_prices() -> Result<crate::prices::Prices> {
    Ok(match crate::project::find(std::path::Path::new(".")) {
        Some(file) => crate::project::load(&file)?.prices,
        None => crate::prices::Prices::default(),
    })
}
