//! One index row: what `runs` shows and filters on, read from a bundle
//! (header and footer) and from the run id (its creation time).
//!
//! Why a run's age is its run id's time (was decision 0044): the row's
//! `created` comes from the run id (`YYYYMMDD-HHMMSS-…`), and `gc` and
//! `--since` use it, because bundles contain no real time (so equal runs are
//! byte-identical) and the id does. A time in the header would break byte
//! identity; the file's modification time changes with copies and imports.

use serde::Serialize;
use std::path::Path;
use worldline_log::log::bundle::{self, Footer, Header, HeldBundle};

/// A run as the index knows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub run_id: String,
    /// Unix seconds: when the run was created, from its id (real time is
    /// store metadata only; it never enters a bundle).
    pub created: i64,
    pub case: String,
    pub world: String,
    pub agent: String,
    pub case_hash: String,
    pub world_hash: String,
    pub seed: u64,
    /// How the run ended (`completed`, `errored`, `trapped`, ...), or
    /// `incomplete` (no footer) or `broken` (unreadable bundle).
    pub status: String,
    /// `passed`/`failed` when the run was graded.
    pub grade: Option<String>,
    /// What retention keys on: `passed`, `failed`, `faulted`,
    /// `incomplete` or `broken`.
    pub outcome: String,
    /// The first failure's signature (as `fuzz` groups them).
    pub signature: Option<String>,
    pub events: u64,
    /// For a fork: the parent run and the event it forks at.
    pub parent: Option<String>,
    pub fork_event: Option<u64>,
    /// Labels from the header: `fork`, `fuzz`, `redacted`.
    pub tags: Vec<String>,
    /// Bytes of the bundle file.
    pub size: u64,
    pub chain_hash: Option<String>,
    /// The rules the run ran under (decision 0423): its header's, 0 for a
    /// header without them (recorded before there were rules); none for
    /// a bundle whose header cannot be read.
    pub rules: Option<u32>,
}

/// Unix seconds of a run id `YYYYMMDD-HHMMSS-xxxxxxxx`, if it is one.
pub fn created_of_id(id: &str) -> Option<i64> {
    let b = id.as_bytes();
    if b.len() < 15 || b[8] != b'-' || !b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit) {
        return None;
    }
    let text = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &id[..4],
        &id[4..6],
        &id[6..8],
        &id[9..11],
        &id[11..13],
        &id[13..15]
    );
    worldline_case::time::parse_rfc3339(&text).map(|ns| ns.div_euclid(1_000_000_000) as i64)
}

/// When a run was created: from its id, else its bundle's modification
/// time (an id given by hand).
pub fn created_of(run_id: &str, meta: &std::fs::Metadata) -> i64 {
    created_of_id(run_id).unwrap_or_else(|| {
        meta.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() as i64)
    })
}

impl Row {
    /// The row of the bundle at `path` (named `run_id`): a `broken` row
    /// when the bundle cannot be read, so `runs` still lists it; an
    /// `incomplete` one with nothing recorded when it was cut off before
    /// its header (empty, or its first line torn), as `verify` and
    /// docs/formats.md call it.
    pub fn read(run_id: &str, path: &Path) -> std::io::Result<Row> {
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            // A link that leads nowhere, or round in a loop, is a broken
            // run (it was left out of `runs`, or stopped `runs`, `gc` and
            // `index` with exit 4); only a file gone meanwhile is skipped.
            Err(e) => {
                let link = std::fs::symlink_metadata(path).map_err(|_| e.kind())?;
                let why = format!("broken: cannot read bundle: {e}");
                return Ok(Row::broken(run_id, created_of(run_id, &link), 0, why));
            }
        };
        let created = created_of(run_id, &meta);
        let headless = || bundle::has_header(path).is_ok_and(|has| !has);
        Ok(match bundle::read_held_measured(path) {
            Ok((b, read)) => Row::of_read(run_id, created, path, &b, read),
            Err(_) if headless() => Row {
                status: "incomplete".into(),
                outcome: "incomplete".into(),
                signature: Some(
                    "incomplete: cut off before its header was written (killed as it started, or the disk was full); nothing was recorded"
                        .into(),
                ),
                ..Row::broken(run_id, created, meta.len(), String::new())
            },
            Err(e) => Row::broken(run_id, created, meta.len(), format!("broken: {}", e.message)),
        })
    }

    /// The row of a bundle read back, sized by what was read of it, not
    /// by the file's size looked up before or after (the bundle may be
    /// growing: a row that took a finished run's status with the size of
    /// its bundle before the footer was never read again). A footer
    /// counts once its writer has let the bundle go (its lock, held from
    /// the bundle's creation until it is written whole): until then the
    /// row is of the lines before it, unfinished, and the next reader,
    /// finding the bundle longer, reads it again (decision 0432).
    fn of_read(
        run_id: &str,
        created: i64,
        path: &Path,
        b: &HeldBundle,
        read: bundle::Measured,
    ) -> Row {
        match b.footer {
            None => Row::of_bundle(run_id, created, read.read, b),
            Some(_) if crate::store::being_recorded(path) => Row::of_parts(
                run_id,
                created,
                read.before_footer,
                &b.header,
                None,
                b.events.len(),
            ),
            // Let go: nothing more is written to it, its newline included.
            Some(_) => {
                let size = std::fs::metadata(path).map_or(read.read, |m| m.len());
                Row::of_bundle(run_id, created, size, b)
            }
        }
    }

    /// The row of a bundle that cannot be read, saying why.
    fn broken(run_id: &str, created: i64, size: u64, signature: String) -> Row {
        Row {
            run_id: run_id.to_string(),
            created,
            case: String::new(),
            world: String::new(),
            agent: String::new(),
            case_hash: String::new(),
            world_hash: String::new(),
            seed: 0,
            status: "broken".into(),
            grade: None,
            outcome: "broken".into(),
            signature: Some(signature),
            events: 0,
            parent: None,
            fork_event: None,
            tags: Vec::new(),
            size,
            chain_hash: None,
            rules: None,
        }
    }

    /// The row of a bundle read back (held: its events are counted).
    fn of_bundle(run_id: &str, created: i64, size: u64, b: &HeldBundle) -> Row {
        Row::of_parts(
            run_id,
            created,
            size,
            &b.header,
            b.footer.as_ref(),
            b.events.len(),
        )
    }

    /// The row of a run from its header, footer and event count.
    pub fn of_parts(
        run_id: &str,
        created: i64,
        size: u64,
        h: &Header,
        f: Option<&Footer>,
        events: usize,
    ) -> Row {
        let signature = f.and_then(worldline_log::log::signature::of_footer);
        let outcome = match f {
            None => "incomplete",
            Some(f) if f.status.is_fault() => "faulted",
            Some(_) if signature.is_some() => "failed",
            Some(_) => "passed",
        };
        let mut tags = Vec::new();
        if h.parent.is_some() {
            tags.push("fork".to_string());
        }
        if h.fuzz.is_some() {
            tags.push("fuzz".to_string());
        }
        if h.redacted.is_some() {
            tags.push("redacted".to_string());
        }
        Row {
            run_id: run_id.to_string(),
            created,
            case: h.case.clone(),
            world: h.world.clone(),
            agent: h.agent_sha256.clone(),
            case_hash: h.case_hash.clone(),
            world_hash: h.world_hash.clone(),
            seed: h.seed,
            status: f.map_or("incomplete", |f| f.status.as_str()).to_string(),
            grade: f.and_then(|f| f.verdict()).map(String::from),
            outcome: outcome.to_string(),
            signature,
            events: events as u64,
            parent: h.parent.as_ref().map(|p| p.run.clone()),
            fork_event: h.parent.as_ref().map(|p| p.event),
            tags,
            size,
            chain_hash: f.map(|f| f.chain_hash.clone()),
            rules: Some(h.rules.unwrap_or(0)),
        }
    }
}

/// A row for tests: run `i` of a store, two runs to a second (ties are
/// ordered by id), cases `case-0` to `case-2`.
#[cfg(test)]
pub(crate) fn sample(i: i64) -> Row {
    Row {
        run_id: format!("20260301-000000-{i:06x}"),
        created: 1_790_000_000 + i / 2,
        case: format!("case-{}", i % 3),
        world: "demo@v1".into(),
        agent: "a".repeat(64),
        case_hash: String::new(),
        world_hash: String::new(),
        seed: i as u64,
        status: "completed".into(),
        grade: Some("passed".into()),
        outcome: "passed".into(),
        signature: None,
        events: 1,
        parent: None,
        fork_event: None,
        tags: Vec::new(),
        size: 1,
        chain_hash: None,
        rules: Some(worldline_log::log::rules::CURRENT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_carries_its_creation_time() {
        assert_eq!(created_of_id("20261121-093712-fc11fe"), Some(1_795_253_832));
        assert_eq!(created_of_id("imported-run"), None);
        assert_eq!(created_of_id("2026112x-093712-fc11fe"), None);
    }
}
