//! `otel`: where the spans went.

use serde::Serialize;
use std::io::{self, Write};

/// The `otel --json` document.
#[derive(Serialize)]
pub struct OtelSummary {
    /// The HTTP status the endpoint answered (none when written to a file).
    pub http_status: Option<u16>,
    /// The spans the endpoint rejected, by its OTLP partial success (0:
    /// none; none when written to a file).
    pub rejected_spans: Option<u64>,
    /// What the endpoint said with its partial success, if anything.
    pub partial_success_message: Option<String>,
    pub redacted: bool,
    /// The OTLP requests the spans went in (batches: at most 512 spans and
    /// 4 MiB each), posted one after another or written one after another.
    pub requests: usize,
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
        "exported {} spans of {} runs to {}{}{}",
        s.spans,
        s.runs,
        s.to,
        match s.requests {
            0 | 1 => String::new(),
            n => format!(" in {n} requests"),
        },
        match s.rejected_spans {
            Some(n) if n > 0 => format!(", which rejected {n} of them"),
            _ => String::new(),
        }
    )?;
    for (run, trace) in s.run_ids.iter().zip(&s.trace_ids) {
        writeln!(out, "  {run}  trace {trace}")?;
    }
    Ok(())
}
