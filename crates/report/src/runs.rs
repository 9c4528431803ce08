//! `runs` (index rows, newest first) and `index` (what bringing the index
//! up to date did, or how it differs from the bundles).

use serde::Serialize;
use std::collections::BTreeSet;
use std::io::{self, Write};
use worldline_store::index::row::Row;
use worldline_store::index::{Check, Sync};

/// One run of the `runs --json` array.
#[derive(Serialize)]
pub struct RunRow<'a> {
    pub agent: &'a str,
    pub case: &'a str,
    /// RFC 3339, from the run id.
    pub created: String,
    pub events: u64,
    pub grade: Option<&'a str>,
    pub outcome: &'a str,
    /// `<parent id>@<fork event>`.
    pub parent: Option<String>,
    pub pinned: bool,
    pub run_id: &'a str,
    pub seed: u64,
    pub signature: Option<&'a str>,
    pub size: u64,
    pub status: &'a str,
    pub tags: &'a [String],
    pub world: &'a str,
    /// Who wrote the run: on a database store only (a folder store's rows
    /// have no such key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer: Option<serde_json::Value>,
}

fn parent(r: &Row) -> Option<String> {
    r.parent
        .as_ref()
        .map(|p| format!("{p}@{}", r.fork_event.unwrap_or(0)))
}

fn created(r: &Row) -> String {
    worldline_case::time::rfc3339(i128::from(r.created) * 1_000_000_000)
}

/// The `runs --json` document.
pub fn rows<'a>(rows: &'a [Row], pinned: &BTreeSet<String>) -> Vec<RunRow<'a>> {
    rows.iter()
        .map(|r| RunRow {
            agent: &r.agent,
            case: &r.case,
            created: created(r),
            events: r.events,
            grade: r.grade.as_deref(),
            outcome: &r.outcome,
            parent: parent(r),
            pinned: pinned.contains(&r.run_id),
            run_id: &r.run_id,
            seed: r.seed,
            signature: r.signature.as_deref(),
            size: r.size,
            status: &r.status,
            tags: &r.tags,
            world: &r.world,
            writer: None,
        })
        .collect()
}

/// The `runs` table.
pub fn write(out: &mut impl Write, rows: &[Row], pinned: &BTreeSet<String>) -> io::Result<()> {
    writeln!(
        out,
        "{:<24} {:<20} {:<28} {:<12} {:<12} {:<7} {:>6}  parent",
        "run", "created", "case", "agent", "status", "grade", "events"
    )?;
    for r in rows {
        writeln!(
            out,
            "{:<24} {:<20} {:<28} {:<12} {:<12} {:<7} {:>6}  {}{}",
            r.run_id,
            created(r),
            r.case,
            r.agent.get(..12).unwrap_or(&r.agent),
            r.status,
            r.grade.as_deref().unwrap_or("-"),
            r.events,
            parent(r).unwrap_or_else(|| "-".into()),
            if pinned.contains(&r.run_id) {
                "  (pinned)"
            } else {
                ""
            },
        )?;
    }
    Ok(())
}

/// A note on stderr when the index had to be built anew.
pub fn note_rebuilt(err: &mut impl Write, s: &Sync) -> io::Result<()> {
    if s.rebuilt {
        writeln!(
            err,
            "note: the run index was missing or unreadable; rebuilt it from {} bundles",
            s.read
        )?;
    }
    Ok(())
}

/// The `index --json` document.
#[derive(Serialize)]
pub struct IndexSummary<'a> {
    pub rows: usize,
    pub sync: &'a Sync,
}

/// `index` in words.
pub fn write_index(out: &mut impl Write, rows: usize, s: &Sync) -> io::Result<()> {
    writeln!(
        out,
        "index: {rows} runs ({} read from bundles, {} dropped{})",
        s.read,
        s.dropped,
        if s.rebuilt { ", rebuilt" } else { "" }
    )?;
    Ok(())
}

/// `index --check` in words.
pub fn write_check(out: &mut impl Write, c: &Check) -> io::Result<()> {
    writeln!(
        out,
        "{} rows, {} bundles: {} missing, {} orphaned, {} stale",
        c.indexed,
        c.bundles,
        c.missing.len(),
        c.orphaned.len(),
        c.stale.len()
    )?;
    for (what, ids) in [
        ("missing", &c.missing),
        ("orphaned", &c.orphaned),
        ("stale", &c.stale),
    ] {
        for id in ids {
            writeln!(out, "  {what}: {id}")?;
        }
    }
    if !c.consistent() {
        writeln!(
            out,
            "run `worldline index` to bring the index up to date with the bundles"
        )?;
    }
    Ok(())
}
