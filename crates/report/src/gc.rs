//! `gc`: what retention removed (or would remove) and what it kept.

use std::io::{self, Write};
use worldline_store::retention::sweep::Report;

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / f64::from(1 << 10)),
        b => format!("{b} B"),
    }
}

/// `gc` in words (`--json` prints the [`Report`] itself).
pub fn write(out: &mut impl Write, report: &Report) -> io::Result<()> {
    let verb = if report.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for (what, r) in [
        ("runs", &report.runs),
        ("objects", &report.objects),
        ("extracted worlds", &report.worlds),
        ("compile-cache entries", &report.cache),
    ] {
        writeln!(out, "{verb} {} {what} ({})", r.count, human(r.bytes))?;
        for item in &r.items {
            writeln!(out, "  {item}")?;
        }
    }
    if let Some(why) = &report.objects_skipped {
        writeln!(out, "objects: {why}")?;
    }
    writeln!(
        out,
        "kept {} runs ({} as parents of kept forks, {} pinned, {} in use by a live process); {} {}",
        report.kept,
        report.kept_as_parents.len(),
        report.kept_pinned.len(),
        report.kept_in_use.len(),
        if report.dry_run {
            "would free"
        } else {
            "freed"
        },
        human(report.bytes_freed)
    )?;
    Ok(())
}
