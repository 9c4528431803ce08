//! `runs` (index rows, newest first) and `index` (what bringing the index
//! up to date did, or how it differs from the bundles).

use serde::Serialize;
use std::io::{self, Write};
use worldline_store::index::row::Row;
use worldline_store::index::{Check, Sync};

/// One run of the `runs --json` array.
#[derive(Serialize)]
struct RunRow<'a> {
    agent: &'a str,
    case: &'a str,
    /// RFC 3339, from the run id.
    created: String,
    events: u64,
    grade: Option<&'a str>,
    outcome: &'a str,
    /// `<parent id>@<fork event>`.
    parent: Option<String>,
    pinned: bool,
    /// The rules it ran under (decision 0423); null for a bundle whose
    /// header cannot be read.
    rules: Option<u32>,
    run_id: &'a str,
    seed: u64,
    signature: Option<&'a str>,
    size: u64,
    status: &'a str,
    tags: &'a [String],
    world: &'a str,
    /// Who wrote the run: on a database store only (a folder store's rows
    /// have no such key).
    #[serde(skip_serializing_if = "Option::is_none")]
    writer: Option<serde_json::Value>,
}

fn parent(r: &Row) -> Option<String> {
    r.parent
        .as_ref()
        .map(|p| format!("{p}@{}", r.fork_event.unwrap_or(0)))
}

fn created(r: &Row) -> String {
    worldline_case::time::rfc3339(i128::from(r.created) * 1_000_000_000)
}

/// `runs` written a row at a time, as the index yields them: the table,
/// or the `--json` array, the same bytes `serde_json::to_writer_pretty`
/// gives for all the rows at once. A listing of 10,000 runs held ~12 MB
/// of rows when they were gathered first.
pub struct Listing<W: Write> {
    out: W,
    json: bool,
    written: u64,
}

impl<W: Write> Listing<W> {
    /// A listing to `out`: nothing is written before its first row or its
    /// end, so an error before them leaves stdout empty.
    pub fn new(out: W, json: bool) -> Self {
        Listing {
            out,
            json,
            written: 0,
        }
    }

    fn header(&mut self) -> io::Result<()> {
        writeln!(
            self.out,
            "{:<24} {:<20} {:<28} {:<12} {:<12} {:<7} {:>6}  parent  [signature]",
            "run", "created", "case", "agent", "status", "grade", "events"
        )
    }

    /// How many rows are written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// One run; `writer` is who wrote it, on a database store (`--json`
    /// only).
    pub fn row(
        &mut self,
        r: &Row,
        pinned: bool,
        writer: Option<serde_json::Value>,
    ) -> io::Result<()> {
        if self.json {
            let row = RunRow {
                agent: &r.agent,
                case: &r.case,
                created: created(r),
                events: r.events,
                grade: r.grade.as_deref(),
                outcome: &r.outcome,
                parent: parent(r),
                pinned,
                rules: r.rules,
                run_id: &r.run_id,
                seed: r.seed,
                signature: r.signature.as_deref(),
                size: r.size,
                status: &r.status,
                tags: &r.tags,
                world: &r.world,
                writer,
            };
            let lead = if self.written == 0 { "[\n  " } else { ",\n  " };
            write!(self.out, "{lead}{}", crate::indented(&row, 2)?)?;
        } else {
            if self.written == 0 {
                self.header()?;
            }
            writeln!(
                self.out,
                "{:<24} {:<20} {:<28} {:<12} {:<12} {:<7} {:>6}  {}{}{}{}",
                r.run_id,
                created(r),
                // A line break in a case's name is `\n`: a row is one line.
                worldline_case::shown::one_line(&r.case),
                r.agent.get(..12).unwrap_or(&r.agent),
                r.status,
                r.grade.as_deref().unwrap_or("-"),
                r.events,
                parent(r).unwrap_or_else(|| "-".into()),
                if pinned { "  (pinned)" } else { "" },
                // Its tags (`redacted` for a redacted copy, as the docs
                // promise the listing says; `--json` had them).
                match r.tags.is_empty() {
                    true => String::new(),
                    false => format!("  {{{}}}", crate::bounded(&r.tags.join(", "))),
                },
                // A failure's signature, as the docs promise the listing
                // shows it (`--json` had it; the table did not).
                (r.signature.as_deref())
                    .map_or_else(String::new, |s| format!("  [{}]", crate::bounded(s))),
            )?;
        }
        self.written += 1;
        Ok(())
    }

    /// The array's end (`--json`), or the header of an empty table; then
    /// everything flushed.
    pub fn finish(mut self) -> io::Result<()> {
        match (self.json, self.written) {
            (true, 0) => self.out.write_all(b"[]\n")?,
            (true, _) => self.out.write_all(b"\n]\n")?,
            (false, 0) => self.header()?,
            (false, _) => {}
        }
        self.out.flush()
    }
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
    // Bundles without rows (a run killed before its row was written)
    // and rows without bundles are what `index` reconciles; a stale row
    // may be one at its bundle's size, which only a rebuild reads again.
    if !c.stale.is_empty() {
        writeln!(
            out,
            "run `worldline index --rebuild` to make the index again from the bundles"
        )?;
    } else if !c.consistent() {
        writeln!(
            out,
            "run `worldline index` to read the bundles the index lacks and drop the rows of bundles gone (a `test` still running, or killed, had not committed its last runs' rows: it commits them 64 at a time and when it ends)"
        )?;
    }
    Ok(())
}
