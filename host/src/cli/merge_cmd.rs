//! `worldline merge REPORT...`: the `--json` reports of a partitioned
//! `test` or `fuzz` (one per shard, e.g. from a CI matrix or a Kubernetes
//! Indexed Job) combined into the report one machine would have printed.
//! `merge --suite ID` reads a suite's shard reports from a database store
//! instead (`test --partition` keeps them there): their redacted form, or
//! with `--unredacted` (a responder's, audited) as written.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::Value;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_report::merge::{self, Ending};

#[derive(Args)]
pub struct MergeArgs {
    /// Shard reports: the output of `worldline test --partition i/n --json`
    /// or `worldline fuzz --partition i/n --json`.
    #[arg(required_unless_present = "suite", conflicts_with = "suite")]
    pub reports: Vec<PathBuf>,
    /// Read the shards of this suite from the database store (the id
    /// `test --partition` printed, or its `--suite-id`).
    #[arg(long, value_name = "ID")]
    pub suite: Option<String>,
    /// With --suite: the reports as written, not redacted (a responder's;
    /// audited).
    #[arg(long, requires = "suite")]
    pub unredacted: bool,
    #[command(flatten)]
    pub common: Common,
}

/// The shard reports of `suite` in the database store, named by partition.
fn stored(args: &MergeArgs, suite: &str) -> Result<Vec<(PathBuf, Value)>> {
    let store = worldline_store::store::StoreDir::open_database_of(
        &args.common.store,
        "merge --suite",
        false,
    )?;
    let db = store.database_of("merge --suite")?;
    let command = format!("merge --suite {suite} --unredacted");
    if args.unredacted {
        store.require_raw(&command)?;
    }
    let shards = db
        .shards(suite, !args.unredacted)
        .map_err(worldline_store::store::db_error)?;
    if shards.is_empty() {
        return Err(InputError::new(
            "--suite",
            format!(
                "no shard of suite `{suite}` in {}: run `worldline test --partition i/n` on this store first",
                store.name()
            ),
        )
        .into());
    }
    let docs: Vec<(PathBuf, Value)> = shards
        .into_iter()
        .map(|(part, text)| {
            let name = PathBuf::from(format!("{suite} shard {part}"));
            let doc = serde_json::from_str(&text)
                .map_err(|e| InputError::json(&name, "is not a JSON report", &e))?;
            Ok((name, doc))
        })
        .collect::<Result<_>>()?;
    // Audited before anything is shown, a row for each run the raw
    // reports name (it was one row naming none).
    if args.unredacted {
        let runs: std::collections::BTreeSet<&str> = (docs.iter())
            .flat_map(|(_, doc)| doc["cases"].as_array().into_iter().flatten())
            .flat_map(|case| case["run_ids"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        let runs: Vec<&str> = runs.into_iter().collect();
        store.audit_raw(None, &runs, &command)?;
    }
    Ok(docs)
}

pub fn exec(args: MergeArgs) -> Result<ExitCode> {
    let mut docs = Vec::new();
    if let Some(suite) = &args.suite {
        docs = stored(&args, suite)?;
    }
    for path in &args.reports {
        let text = worldline_case::bounded::read_text(path, worldline_case::bounded::DOCUMENT)
            .map_err(|e| InputError::new(path, format!("cannot read report: {e}")))?;
        // A UTF-8 byte-order mark (an editor's) is passed over: it was
        // "is not a JSON report: expected value" at line 1, column 1.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let doc: Value = serde_json::from_str(text)
            .map_err(|e| InputError::json(path, "is not a JSON report", &e))?;
        docs.push((path.clone(), doc));
    }
    let merged = merge::merge(docs)?;
    if args.common.json {
        super::print_json(&merged)?;
    } else {
        merged.write(&mut super::human_out(), &mut std::io::stderr())?;
    }
    Ok(match merged.ending() {
        Ending::Passed => ExitCode::Ok,
        Ending::Failed => ExitCode::Failed,
        Ending::CollectionErrors => ExitCode::Input,
    })
}
