//! `otel`: where the spans went.

use serde::Serialize;
use std::io::{self, Write};

/// The `otel --json` document.
#[derive(Serialize)]
pub struct OtelSummary {
    /// The HTTP status the endpoint answered (none when written to a file).
    pub http_status: Option<u16>,
    pub redacted: bool,
    pub run_ids: Vec<String>,
    pub runs: usize,
    pub spans: usize,
    /// The URL posted to, or the file written.
    pub to: String,
    /// One per run, in hex, in the order of `run_ids`.
    pub trace_ids: Vec<String>,
}

/// `otel` in words.
pub fn write(out: &mut impl Write, s: &OtelSummary) -> io::Result<()> {
    writeln!(
        out,
        "exported {} spans of {} runs to {}",
        s.spans, s.runs, s.to
    )?;
    for (run, trace) in s.run_ids.iter().zip(&s.trace_ids) {
        writeln!(out, "  {run}  trace {trace}")?;
    }
    Ok(())
}
