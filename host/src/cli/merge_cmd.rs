//! `worldline merge REPORT...`: the `--json` reports of a partitioned
//! `test` (one per shard, e.g. from a CI matrix or a Kubernetes Indexed
//! Job) combined into the report one machine would have printed.

use super::Common;
use crate::error::{ExitCode, InputError};
use crate::report::{self, suite::SuiteSummary};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct MergeArgs {
    /// Shard reports: the output of `worldline test --partition i/n --json`.
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: MergeArgs) -> Result<ExitCode> {
    let mut shards = Vec::new();
    for path in &args.reports {
        let text = std::fs::read_to_string(path)
            .map_err(|e| InputError::new(path, format!("cannot read report: {e}")))?;
        let shard: SuiteSummary = serde_json::from_str(&text).map_err(|e| {
            InputError::new(
                path,
                format!("is not a `worldline test --json` report: {e}"),
            )
            .with_line(e.line())
        })?;
        shards.push(shard);
    }
    let merged = SuiteSummary::merge(shards).map_err(|m| InputError::new("merge", m))?;
    if args.common.json {
        report::print_json(&merged)?;
    } else {
        let width = merged.cases.iter().map(|c| c.case.len()).max().unwrap_or(0);
        for c in &merged.cases {
            let mark = match (c.skipped, c.passed) {
                (true, _) => "SKIP",
                (_, true) => "PASS",
                _ => "FAIL",
            };
            let reason = c.reason.as_deref().map(|r| format!("  {} — {r}", c.status));
            println!(
                "{mark}  {:width$}  {}{}",
                c.case,
                c.run_id.as_deref().unwrap_or("-"),
                reason.unwrap_or_default()
            );
        }
        println!(
            "{} passed, {} failed{}",
            merged.passed,
            merged.failed,
            match merged.skipped {
                0 => String::new(),
                n => format!(", {n} skipped"),
            }
        );
    }
    Ok(if merged.failed == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
