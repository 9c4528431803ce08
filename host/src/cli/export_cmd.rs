//! `worldline export RUN -o FILE` and `worldline import FILE`.

use super::Common;
use super::redact_opts::RedactArgs;
use crate::error::{ExitCode, InputError};
use crate::export;
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::PathBuf;

#[derive(Args)]
pub struct ExportArgs {
    /// Run id (or a unique prefix), or a bundle path.
    pub run: String,
    /// The file to write.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Export a redacted copy (the store's redact.toml, or --redact FILE),
    /// labelled as such, with the agent but not the case and world.
    #[arg(long)]
    pub redacted: bool,
    #[command(flatten)]
    pub redaction: RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct ImportArgs {
    /// A file written by `worldline export`.
    pub file: PathBuf,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec_export(args: ExportArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let mut redactor = if args.redacted {
        let r = args.redaction.redactor(&store)?;
        if r.is_none() {
            return Err(InputError::new(
                store.root.join(crate::redact::FILE),
                "--redacted needs a redaction policy: write this file or pass --redact FILE",
            )
            .into());
        }
        r
    } else {
        None
    };
    let id = export::export(&store, &args.run, &args.output, redactor.as_mut())?;
    if args.common.json {
        println!(
            "{}",
            json!({"run_id": id, "file": args.output.display().to_string(), "redacted": args.redacted})
        );
    } else if args.redacted {
        println!("exported a redacted copy {id} to {}", args.output.display());
    } else {
        println!("exported {id} to {}", args.output.display());
    }
    Ok(ExitCode::Ok)
}

pub fn exec_import(args: ImportArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let (id, redacted) = export::import(&store, &args.file)?;
    if args.common.json {
        println!(
            "{}",
            json!({"run_id": id, "bundle": store.bundle_path(&id).display().to_string(), "redacted": redacted})
        );
    } else if let Some(r) = redacted {
        println!(
            "imported {id} into {}: a REDACTED copy of run {} ({} values hidden); it is not the original and does not replay",
            store.root.display(),
            r.original_run,
            r.hidden
        );
    } else {
        println!("imported {id} into {}", store.root.display());
    }
    Ok(ExitCode::Ok)
}
