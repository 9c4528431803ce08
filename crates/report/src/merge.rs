//! `worldline merge`: the `--json` reports of a partitioned `test` or
//! `fuzz` (one per shard) checked to be shards of one partitioning and
//! combined into the report one machine would have printed ([`Merged`]),
//! which the suite's or the campaign's reporter shows (a typed result,
//! not events: decision 0327).

use serde::Serialize;
use serde_json::Value;
use std::io::{self, Write};
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_case::partition::Partition;
use worldline_case::shown;

use super::fuzz::FuzzReport;
use super::suite::SuiteSummary;

/// The shards combined: a suite's or a fuzz campaign's report. `--json`
/// writes it as the report it holds.
#[derive(Serialize)]
#[serde(untagged)]
pub enum Merged {
    /// `fuzz --json` shards: the merged campaign report.
    Campaign(Box<FuzzReport>),
    /// `test --json` shards: the merged suite.
    Suite(Box<SuiteSummary>),
}

/// How a merge ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Passed,
    Failed,
    /// A shard could not collect its cases.
    CollectionErrors,
}

impl Merged {
    pub fn ending(&self) -> Ending {
        let failed = match self {
            Merged::Campaign(m) => m.summary.failed,
            Merged::Suite(s) if !s.collection_errors.is_empty() => {
                return Ending::CollectionErrors;
            }
            // A shard a signal stopped left cases not run: the suite did
            // not pass (the merge exited 0, and a CI step on it passed).
            Merged::Suite(s) if s.interrupted.is_some() && s.skipped > 0 => {
                return Ending::Failed;
            }
            // A case a signal cut short did not pass either.
            Merged::Suite(s) => (s.failed + s.interrupted_cases) as u64,
        };
        if failed == 0 {
            Ending::Passed
        } else {
            Ending::Failed
        }
    }

    /// The text report: to `out`, and notes about the machine to `err`.
    pub fn write(&self, out: &mut impl Write, err: &mut impl Write) -> io::Result<()> {
        match self {
            Merged::Campaign(m) => super::fuzz::write(out, m),
            Merged::Suite(s) => super::suite::write_merged(out, err, s),
        }
    }
}

/// Merge `docs` (each report named by where it was read): a fuzz
/// campaign's when every one has failure groups, else a suite's.
pub fn merge(docs: Vec<(PathBuf, Value)>) -> Result<Merged, InputError> {
    // A shard that failed printed its error as JSON, not a report.
    if let Some((path, error)) = (docs.iter()).find_map(|(p, d)| Some((p, d.get("error")?))) {
        let message = error["message"].as_str().or(error.as_str()).unwrap_or("");
        return Err(InputError::new(
            path,
            format!(
                "is the error a shard printed, not its report: {}; run that shard again",
                shown::text(message)
            ),
        ));
    }
    let campaign = |d: &Value| d.get("groups").is_some();
    // Campaigns' reports among suites' (or the other way): the fewer named,
    // before their partitions are compared (a campaign's shard among three
    // suite shards was said to repeat a suite's).
    let campaigns = docs.iter().filter(|(_, d)| campaign(d)).count();
    if campaigns > 0 && campaigns < docs.len() {
        let (path, said) = match campaigns * 2 < docs.len() {
            true => (
                docs.iter().find(|(_, d)| campaign(d)),
                "is a `fuzz --json` report (it has `groups`) among reports that are not: merge the shards of one suite, or of one campaign",
            ),
            false => (
                docs.iter().find(|(_, d)| !campaign(d)),
                "is not a `fuzz --json` report (it has no `groups`), and the reports before or after it are: merge the shards of one campaign",
            ),
        };
        let (path, _) = path.expect("counted above");
        return Err(InputError::new(path, said));
    }
    check_partitions(&docs)?;
    // A whole run's report among others is no shard of theirs.
    if docs.len() > 1
        && let Some((path, d)) = (docs.iter())
            .find(|(_, d)| partition_of(d).is_none() && (campaign(d) || d.get("cases").is_some()))
    {
        let (whole, flag) = match campaign(d) {
            true => ("a whole campaign's report (it has no `partition`)", "fuzz"),
            false => ("a whole suite's report (it has no `shard`)", "test"),
        };
        return Err(InputError::new(
            path,
            format!(
                "is {whole}, not a shard's: merge only the --json reports of `{flag} --partition i/n`, each shard once"
            ),
        ));
    }
    if docs.iter().all(|(_, d)| campaign(d)) {
        let paths: Vec<PathBuf> = docs.iter().map(|(p, _)| p.clone()).collect();
        let shards = read_each::<FuzzReport>(docs, "not a `fuzz --json` report")?;
        // The report that differs, named with the first it differs from.
        for (path, s) in paths.iter().zip(&shards).skip(1) {
            if let Some(m) = super::fuzz::unlike(&shards[0], s) {
                let m = format!(
                    "is not a shard of the campaign of {}: {m}",
                    paths[0].display()
                );
                return Err(InputError::new(path, m));
            }
        }
        // A shard a signal stopped, named by its file (the error named
        // `merge`).
        if let Some((path, s)) = paths
            .iter()
            .zip(&shards)
            .find(|(_, s)| s.interrupted.is_some())
        {
            return Err(InputError::new(
                path,
                format!(
                    "is a shard interrupted by {} after {} runs: run it again, then merge",
                    s.interrupted.as_deref().unwrap_or_default(),
                    s.summary.runs
                ),
            ));
        }
        let merged = super::fuzz::merge(&shards).map_err(|m| InputError::new("merge", m))?;
        return Ok(Merged::Campaign(Box::new(merged)));
    }
    let shards = read_each::<SuiteSummary>(
        docs,
        "neither a `worldline test --json` nor a `fuzz --json` report",
    )?;
    let merged = SuiteSummary::merge(shards).map_err(|m| InputError::new("merge", m))?;
    Ok(Merged::Suite(Box::new(merged)))
}

/// Each report read as a `T`; one that does not read is `what` it is
/// not, named by its file and, where it was edited wrong, by its field's
/// path (`cases[2].passed`, `repeat`).
fn read_each<T: serde::de::DeserializeOwned>(
    docs: Vec<(PathBuf, Value)>,
    what: &str,
) -> Result<Vec<T>, InputError> {
    (docs.into_iter())
        .map(|(path, doc)| {
            serde_path_to_error::deserialize(doc).map_err(|e| {
                let at = match e.path().to_string() {
                    at if at == "." => String::new(),
                    at => format!(" at `{at}`"),
                };
                InputError::new(path, format!("is {what}{at}: {}", e.inner()))
            })
        })
        .collect()
}

/// A report's partition: a test report's `shard.partition`, a fuzz
/// report's `partition` (`None`: a whole run's report).
fn partition_of(doc: &Value) -> Option<&str> {
    (doc["shard"]["partition"].as_str()).or_else(|| doc["partition"].as_str())
}

/// Each report's partition (a test report's `shard.partition`, a fuzz
/// report's `partition`) parsed and of the first report's partitioning,
/// each shard once; what is wrong names the report it is in. (Whether
/// every shard is there is the merge's to say: no one file is wrong.)
fn check_partitions(docs: &[(PathBuf, Value)]) -> Result<(), InputError> {
    let mut first: Option<(&PathBuf, Partition)> = None;
    let mut seen = std::collections::BTreeMap::new();
    for (path, doc) in docs {
        let Some(text) = partition_of(doc) else {
            continue;
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(docs: Vec<(&str, Value)>) -> String {
        let docs = docs
            .into_iter()
            .map(|(p, d)| (PathBuf::from(p), d))
            .collect();
        match merge(docs) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("merged"),
        }
    }

    /// A report that is no campaign's among campaigns', or a shard's
    /// error, is named: the first, valid, fuzz shard was blamed.
    #[test]
    fn the_report_that_is_wrong_is_named() {
        let shard = json!({"groups": [], "partition": "1/2"});
        let error = json!({"error": {"message": "no --agent given"}});
        let message = refused(vec![("x1.json", shard.clone()), ("x2.json", error)]);
        assert!(
            message.starts_with("x2.json: is the error a shard printed")
                && message.contains("no --agent given"),
            "{message}"
        );
        let message = refused(vec![("x1.json", shard.clone()), ("x2.json", json!({}))]);
        assert!(
            message.starts_with("x2.json: is not a `fuzz --json` report"),
            "{message}"
        );
        // A campaign's shard among suites' shards is named (it was said
        // to repeat a suite shard's partition).
        let suite = |i: u32| json!({"cases": [], "shard": {"partition": format!("hash:{i}/3")}});
        let fuzz = json!({"groups": [], "partition": "hash:1/3"});
        let message = refused(vec![
            ("s1.json", suite(1)),
            ("s2.json", suite(2)),
            ("s3.json", suite(3)),
            ("f1.json", fuzz),
        ]);
        assert!(
            message.starts_with("f1.json: is a `fuzz --json` report (it has `groups`) among"),
            "{message}"
        );
        // A whole run's report among shards, or two of them, is named
        // (the valid shard after it was blamed, or no file at all).
        let whole = json!({"groups": [], "partition": null});
        let message = refused(vec![("whole.json", whole.clone()), ("x1.json", shard)]);
        assert!(
            message.starts_with("whole.json: is a whole campaign's report"),
            "{message}"
        );
        let message = refused(vec![("w1.json", whole.clone()), ("w2.json", whole)]);
        assert!(
            message.starts_with("w1.json: is a whole campaign's report"),
            "{message}"
        );
        let suite = json!({"cases": [], "shard": null});
        let message = refused(vec![
            (
                "s1.json",
                json!({"cases": [], "shard": {"partition": "1/2"}}),
            ),
            ("single.json", suite),
        ]);
        assert!(
            message.starts_with("single.json: is a whole suite's report"),
            "{message}"
        );
    }
}
