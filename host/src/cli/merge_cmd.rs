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
use worldline_case::partition::Partition;
use worldline_case::shown;
use worldline_report::suite::SuiteSummary;

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
    let store = worldline_store::store::StoreDir::open(&args.common.store)?;
    let db = store.database_of("merge --suite")?;
    if args.unredacted {
        store.audit_raw(None, &[], &format!("merge --suite {suite} --unredacted"))?;
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
    shards
        .into_iter()
        .map(|(part, text)| {
            let name = PathBuf::from(format!("{suite} shard {part}"));
            let doc = serde_json::from_str(&text)
                .map_err(|e| InputError::new(&name, format!("is not a JSON report: {e}")))?;
            Ok((name, doc))
        })
        .collect()
}

/// Each report's partition (a test report's `shard.partition`, a fuzz
/// report's `partition`) parsed and of the first report's partitioning,
/// each shard once; what is wrong names the report it is in. (Whether
/// every shard is there is the merge's to say: no one file is wrong.)
fn check_partitions(docs: &[(PathBuf, Value)]) -> Result<(), InputError> {
    let mut first: Option<(&PathBuf, Partition)> = None;
    let mut seen = std::collections::BTreeMap::new();
    for (path, doc) in docs {
        let text = doc["shard"]["partition"]
            .as_str()
            .or_else(|| doc["partition"].as_str());
        let Some(text) = text else { continue };
        let p = Partition::parse(text).map_err(|m| {
            InputError::new(
                path,
                format!("its partition is impossible: {}", shown::text(&m)),
            )
        })?;
        let (shard, total) = p.shard_of();
        match &first {
            None => first = Some((path, p)),
            Some((f, q))
                if q.shard_of().1 != total
                    || std::mem::discriminant(q) != std::mem::discriminant(&p) =>
            {
                return Err(InputError::new(
                    path,
                    format!(
                        "the reports are shards of different partitionings ({q} and {p}): this is {p}, {} is {q}; merge the shards of one `--partition KIND:i/n`",
                        f.display()
                    ),
                ));
            }
            Some(_) => {}
        }
        if let Some(other) = seen.insert(shard, path) {
            return Err(InputError::new(
                path,
                format!(
                    "shard {p} is in two reports (this and {}); merge each shard once",
                    other.display()
                ),
            ));
        }
    }
    Ok(())
}

pub fn exec(args: MergeArgs) -> Result<ExitCode> {
    let mut docs = Vec::new();
    if let Some(suite) = &args.suite {
        docs = stored(&args, suite)?;
    }
    for path in &args.reports {
        let text = worldline_case::bounded::read_text(path, worldline_case::bounded::DOCUMENT)
            .map_err(|e| InputError::new(path, format!("cannot read report: {e}")))?;
        let doc: Value = serde_json::from_str(&text).map_err(|e| {
            InputError::new(path, format!("is not a JSON report: {e}")).with_line(e.line())
        })?;
        docs.push((path.clone(), doc));
    }
    check_partitions(&docs)?;
    if docs.iter().all(|(_, d)| d.get("groups").is_some()) {
        let shards: Vec<Value> = docs.into_iter().map(|(_, d)| d).collect();
        let merged =
            worldline_report::fuzz::merge(&shards).map_err(|m| InputError::new("merge", m))?;
        let failed = merged["summary"]["failed"].as_u64().unwrap_or(0);
        if args.common.json {
            super::print_json(&merged)?;
        } else {
            worldline_report::fuzz::write_merged(&mut std::io::stdout().lock(), &merged)?;
        }
        return Ok(if failed == 0 {
            ExitCode::Ok
        } else {
            ExitCode::Failed
        });
    }
    let mut shards = Vec::new();
    for (path, doc) in docs {
        let shard: SuiteSummary = serde_json::from_value(doc).map_err(|e| {
            InputError::new(
                path,
                format!("is neither a `worldline test --json` nor a `fuzz --json` report: {e}"),
            )
        })?;
        shards.push(shard);
    }
    let merged = SuiteSummary::merge(shards).map_err(|m| InputError::new("merge", m))?;
    if args.common.json {
        super::print_json(&merged)?;
    } else {
        worldline_report::suite::write_merged(
            &mut std::io::stdout().lock(),
            &mut std::io::stderr(),
            &merged,
        )?;
    }
    Ok(if !merged.collection_errors.is_empty() {
        ExitCode::Input
    } else if merged.failed == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
