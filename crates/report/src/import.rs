//! `import`: a line per run brought into the store (a redacted copy said
//! to be one, a run the store held already said so), the runs of another
//! store skipped and why, then the totals.

use std::io::{self, Write};
use worldline_engine::export::{Imported, Skipped};

/// What one `import` brought in and left out.
pub struct Imports<'a> {
    /// The store imported into, as named to the reader.
    pub store: &'a str,
    pub imported: &'a [Imported],
    pub skipped: &'a [Skipped],
    /// Whether to end with the totals (more than one source, or another
    /// store's runs).
    pub totals: bool,
}

/// `import`: a line per run imported to `out`, a line per run skipped to
/// `err`, then the totals when `i.totals` says.
pub fn write(out: &mut impl Write, err: &mut impl Write, i: &Imports<'_>) -> io::Result<()> {
    let store = i.store;
    for run in i.imported {
        match &run.redacted {
            Some(r) if !run.new => writeln!(
                out,
                "{} (a REDACTED copy of run {}) was already in {store}",
                run.run_id, r.original_run
            )?,
            Some(r) => writeln!(
                out,
                "imported {} into {store}: a REDACTED copy of run {} ({} values hidden); it is not the original and does not replay",
                run.run_id, r.original_run, r.hidden
            )?,
            None if !run.new => writeln!(out, "{} was already in {store}", run.run_id)?,
            None => writeln!(out, "imported {} into {store}", run.run_id)?,
        }
    }
    for s in i.skipped {
        writeln!(err, "skipped {}: {}", s.run_id, s.reason)?;
    }
    if i.totals {
        writeln!(
            out,
            "{} run(s) imported ({} new), {} skipped",
            i.imported.len(),
            i.imported.iter().filter(|r| r.new).count(),
            i.skipped.len()
        )?;
    }
    Ok(())
}
