//! `worldline export RUN -o FILE` and `worldline import FILE`.

use super::Common;
use crate::error::ExitCode;
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
    let id = export::export(&store, &args.run, &args.output)?;
    if args.common.json {
        println!(
            "{}",
            json!({"run_id": id, "file": args.output.display().to_string()})
        );
    } else {
        println!("exported {id} to {}", args.output.display());
    }
    Ok(ExitCode::Ok)
}

pub fn exec_import(args: ImportArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let id = export::import(&store, &args.file)?;
    if args.common.json {
        println!(
            "{}",
            json!({"run_id": id, "bundle": store.bundle_path(&id).display().to_string()})
        );
    } else {
        println!("imported {id} into {}", store.root.display());
    }
    Ok(ExitCode::Ok)
}
