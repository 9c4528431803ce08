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
    /// Files written by `worldline export`, or other stores (folders) whose
    /// runs to gather, e.g. the stores of a suite's shards.
    #[arg(required = true)]
    pub from: Vec<PathBuf>,
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
    let mut imported = Vec::new();
    let mut skipped = Vec::new();
    for from in &args.from {
        if from.is_dir() {
            let other = StoreDir::open(from)?;
            if other.root.canonicalize().ok() == store.root.canonicalize().ok() {
                return Err(InputError::new(from, "is the store being imported into").into());
            }
            let (done, left) = export::import_store(&store, &other)?;
            imported.extend(done);
            skipped.extend(left);
        } else {
            imported.push(export::import(&store, from)?);
        }
    }
    if args.common.json {
        let one = |i: &export::Imported| {
            json!({
                "run_id": i.run_id,
                "bundle": store.bundle_path(&i.run_id).display().to_string(),
                "redacted": i.redacted,
                "new": i.new,
            })
        };
        match (args.from.as_slice(), imported.as_slice()) {
            ([file], [i]) if !file.is_dir() => println!("{}", one(i)),
            _ => println!(
                "{}",
                json!({
                    "imported": imported.iter().map(one).collect::<Vec<_>>(),
                    "skipped": skipped,
                })
            ),
        }
    } else {
        for i in &imported {
            match &i.redacted {
                Some(r) => println!(
                    "imported {} into {}: a REDACTED copy of run {} ({} values hidden); it is not the original and does not replay",
                    i.run_id,
                    store.root.display(),
                    r.original_run,
                    r.hidden
                ),
                None if !i.new => println!("{} was already in {}", i.run_id, store.root.display()),
                None => println!("imported {} into {}", i.run_id, store.root.display()),
            }
        }
        for s in &skipped {
            eprintln!("skipped {}: {}", s.run_id, s.reason);
        }
        if args.from.len() > 1 || args.from.iter().any(|f| f.is_dir()) {
            println!(
                "{} run(s) imported ({} new), {} skipped",
                imported.len(),
                imported.iter().filter(|i| i.new).count(),
                skipped.len()
            );
        }
    }
    Ok(if skipped.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
