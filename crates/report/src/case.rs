//! `case from-run` and `case from-trace`: what was written (the case, its
//! recorded model calls and faults, what could not be carried), and the
//! agent runs a trace file holds (`--list`). A trace's ids and tool names
//! are its own: shown escaped.

use std::io::{self, Write};
use worldline_case::shown;
use worldline_engine::regress::from_run::FromRun;
use worldline_engine::regress::from_trace::{FromTrace, Listed};

/// `case from-run`: the case written and what the run had that it cannot
/// carry.
pub fn write_from_run(out: &mut impl Write, made: &FromRun) -> io::Result<()> {
    writeln!(
        out,
        "wrote {} from run {} ({} [[inject]] rule(s), {} recorded model call(s); bundle copy {})",
        made.case.display(),
        made.run_id,
        made.injects,
        made.model_calls,
        made.bundle_copy.display()
    )?;
    for n in &made.not_carried {
        writeln!(out, "  not carried: {n}")?;
    }
    Ok(())
}

/// `case from-trace --list`: a line per agent run of the trace file, then
/// how many.
pub fn write_trace_runs(out: &mut impl Write, runs: &[Listed]) -> io::Result<()> {
    for r in runs {
        let tools: Vec<String> = r.tools.iter().map(|t| shown::text(t)).collect();
        writeln!(
            out,
            "{}  {} model call(s), {} tool call(s)  {}",
            shown::text(&r.trace_id),
            r.model_calls,
            r.tool_calls,
            if tools.is_empty() {
                "no tools".to_string()
            } else {
                format!("tools: {}", tools.join(", "))
            }
        )?;
    }
    writeln!(out, "{} agent run(s)", runs.len())
}

/// `case from-trace`: the case written from one agent run of a trace.
pub fn write_from_trace(out: &mut impl Write, made: &FromTrace) -> io::Result<()> {
    writeln!(
        out,
        "wrote {} from trace {} ({} model call(s), {} tool call(s), {} recorded result(s) pinned, {}{}); read {}",
        made.case.display(),
        shown::text(&made.trace_id),
        made.model_calls,
        made.tool_calls,
        made.pinned,
        match made.user_turns {
            0 => String::new(),
            n => format!("{n} user turn(s) scripted, "),
        },
        if made.tools.is_empty() {
            "no tools".to_string()
        } else {
            format!("tools: {}", shown::list(&made.tools))
        },
        made.dir.join("README.md").display()
    )
}
