//! `worldline check [PATHS]`: validate cases, worlds, fault profiles and
//! the project file without running anything; exit 2 listing every
//! problem with its file, line and column.

use super::Common;
use crate::error::ExitCode;
use crate::report::check::{self, CheckSummary};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct CheckArgs {
    /// Files, or folders searched for `.toml` files (default: the folder
    /// of worldline.toml, else the working folder).
    pub paths: Vec<PathBuf>,
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above each case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: CheckArgs) -> Result<ExitCode> {
    let paths = match args.paths.is_empty() {
        false => args.paths.clone(),
        true => {
            // The project file is found even when it cannot be loaded, so
            // that its own problems are listed.
            let here = std::env::current_dir()?;
            let root = crate::project::find(&here)
                .and_then(|f| f.parent().map(PathBuf::from))
                .filter(|root| *root != here);
            // Shown as `./cases/...` when the project is here.
            vec![root.unwrap_or_else(|| PathBuf::from("."))]
        }
    };
    let checked = crate::check::check(&paths, args.worlds.as_deref());
    if args.common.json {
        super::print_json_with_settings(&CheckSummary::of(&checked))?;
    } else {
        check::print(&checked);
    }
    Ok(if checked.problems.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Input
    })
}
