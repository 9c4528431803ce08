//! One run: the `run --json` document and the text summary.

use serde::Serialize;
use std::io::{self, Write};
use worldline_engine::grade::Grade;
use worldline_engine::grade::verdict;
use worldline_engine::run::RunOutcome;
use worldline_engine::traceback::{self, Account, AgentError};
use worldline_log::log::{Footer, Status};

/// The `run --json` document. Scripts rely on these names.
#[derive(Serialize)]
pub struct RunSummary<'a> {
    /// The agent's own error when it did not complete.
    pub agent_error: Option<AgentError>,
    pub agent_sha256: &'a str,
    pub backtrace: &'a [String],
    pub bundle: Option<String>,
    pub case: &'a str,
    pub chain_hash: &'a str,
    pub error: Option<&'a str>,
    pub events: u64,
    pub final_state_hash: &'a str,
    pub fuel: u64,
    pub grade: Option<&'a Grade>,
    /// `"native"` for an agent outside the sandbox, with what the sandbox
    /// would have guaranteed that its run does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    pub output: Option<&'a str>,
    pub replayable: bool,
    pub run_id: Option<&'a str>,
    pub run_status: &'static str,
    pub seed: u64,
    pub status: &'static str,
    pub traceback: Option<String>,
    /// Why a served episode ended without its client's `end` (decision
    /// 0429); left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<&'a str>,
    pub truncated_bytes: u64,
    /// What the run's caller should know (the case's `[origin]`, token ids
    /// asked for but not returned); left out when there are none.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub warnings: &'a [String],
    pub world: &'a str,
}

/// A native run's isolation, as `run --json` shows it.
#[derive(Serialize)]
pub struct Isolation {
    pub kind: &'static str,
    /// What kept a process's network to the world: `proxy` (the proxy
    /// variables alone) or `isolated` (a network namespace of its own);
    /// absent for an MCP session.
    pub network: Option<String>,
    /// What the WebAssembly sandbox guarantees and this run's process
    /// does not; empty for a run without a process worldline started (a
    /// served episode, an MCP session).
    pub not_guaranteed: Vec<&'static str>,
}

impl Isolation {
    fn of(o: &RunOutcome) -> Option<Self> {
        let native = o.header.native.as_ref();
        let process = native.is_some_and(|n| n.transport == "exec");
        (o.header.isolation.as_deref() == Some("native")).then(|| Isolation {
            kind: "native",
            network: native.and_then(|n| n.network.clone()),
            not_guaranteed: worldline_engine::native::NOT_GUARANTEED
                .iter()
                .filter(|_| process)
                .map(|(what, _)| *what)
                .collect(),
        })
    }
}

impl<'a> RunSummary<'a> {
    pub fn of(o: &'a RunOutcome) -> Self {
        let f = &o.footer;
        RunSummary {
            agent_error: traceback::agent_error(f),
            agent_sha256: &o.header.agent_sha256,
            backtrace: &f.backtrace,
            bundle: o.bundle.as_ref().map(|p| p.display().to_string()),
            case: &o.header.case,
            chain_hash: &f.chain_hash,
            error: f.error.as_deref(),
            events: f.events,
            final_state_hash: &f.final_state_hash,
            fuel: f.fuel,
            grade: o.grade.as_ref(),
            isolation: Isolation::of(o),
            output: f.output.as_deref(),
            replayable: f.replayable,
            run_id: o.run_id.as_deref(),
            run_status: f.status.as_str(),
            seed: o.header.seed,
            status: verdict::shown_status(f.status, o.grade.as_ref()),
            traceback: account(f).map(|a| a.text().to_string()),
            truncated: f.truncated.as_deref(),
            truncated_bytes: f.truncated_bytes,
            warnings: &[],
            world: &o.header.world,
        }
    }
}

/// The guest's account of its fault (a Python traceback, a Rust panic)
/// when it trapped.
fn account(f: &Footer) -> Option<Account> {
    if f.status == Status::Trapped {
        traceback::find(&f.stderr)
    } else {
        None
    }
}

/// The JSON value written over several lines that ends `stdout`
/// (`json.dumps(x, indent=2)`), if it ends with one: of the last 200
/// lines of its last 64 KiB that open an object or an array, the nearest
/// the end from which the rest reads as one value.
fn spread_json_at_end(stdout: &str) -> Option<serde_json::Value> {
    let text = stdout.trim_end();
    if !(text.ends_with('}') || text.ends_with(']')) {
        return None;
    }
    let mut from = text.len().saturating_sub(64 << 10);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let tail = &text[from..];
    let starts = std::iter::once(0).chain(tail.match_indices('\n').map(|(i, _)| i + 1));
    let opening: Vec<usize> = starts
        .filter(|&i| tail[i..].trim_start().starts_with(['{', '[']))
        .collect();
    opening.iter().rev().take(200).find_map(|&i| {
        let value = &tail[i..];
        value
            .trim()
            .contains('\n')
            .then(|| serde_json::from_str(value).ok())?
    })
}

/// A guest's frames as a reader wants them: demangled (Rust's
/// `_RNvNtCs…unwrap_failed` is `core::result::unwrap_failed`), the panic
/// machinery above the frame that panicked left out (the first twelve
/// frames shown were all of it, and the agent's own never was).
fn guest_frames(frames: &[String]) -> impl Iterator<Item = String> + '_ {
    let shown: Vec<String> = frames
        .iter()
        .map(|f| format!("{:#}", rustc_demangle::demangle(f)))
        .collect();
    let machinery = |f: &str| {
        [
            "std::panicking::",
            "core::panicking::",
            "std::rt::",
            "__rustc::",
            "rust_begin_unwind",
            "rust_panic",
            "std::sys::backtrace::",
            "core::result::unwrap_failed",
            "core::option::unwrap_failed",
            "core::option::expect_failed",
            "core::result::expect_failed",
            "abort",
            "std::process::abort",
        ]
        .iter()
        .any(|m| f.starts_with(m) || f.contains(&format!("::{m}")))
    };
    let skip = shown.iter().position(|f| !machinery(f)).unwrap_or(0);
    shown.into_iter().skip(skip)
}

/// The frames of the guest's backtrace a run's summary shows (the
/// `run` command's and the UI's run page), innermost first, the panic
/// machinery skipped, at most 12; none where they say nothing of the
/// agent: a Python traceback or a JavaScript stack (`account`) says where
/// it failed, the wasm frames only the interpreter's runtime, and a run
/// stopped because the case's script ran out did nothing wrong.
pub fn backtrace_shown(f: &Footer, account: Option<&Account>) -> Vec<String> {
    let interpreted = matches!(account, Some(Account::Python(_) | Account::JavaScript(_)));
    if f.backtrace.is_empty() || interpreted || f.status == Status::Unscripted {
        return Vec::new();
    }
    guest_frames(&f.backtrace).take(12).collect()
}

/// The agent's own error, when it has one, as lines under a run.
pub fn write_agent_error(
    out: &mut impl Write,
    e: Option<&AgentError>,
    indent: &str,
) -> io::Result<()> {
    for l in e.iter().flat_map(|e| e.lines()) {
        writeln!(out, "{indent}{l}")?;
    }
    Ok(())
}

/// The text summary of one run.
pub fn write(out: &mut impl Write, o: &RunOutcome) -> io::Result<()> {
    let f = &o.footer;
    writeln!(
        out,
        "run {}  {}",
        o.run_id.as_deref().unwrap_or("-"),
        verdict::shown_status(f.status, o.grade.as_ref())
    )?;
    if let Some(output) = &f.output {
        writeln!(out, "  output: {}", super::field(output))?;
    }
    // A native agent's answer printed over several lines is not its
    // output (the last line that is JSON is, docs/native.md): said, as a
    // pretty-printed answer became `2`, its last line that was JSON. The
    // output is parsed only then (a component's can be tens of kB).
    if Isolation::of(o).is_some()
        && let Some(spread) = spread_json_at_end(&f.stdout)
        && f.output
            .as_deref()
            .and_then(|o| serde_json::from_str::<serde_json::Value>(o).ok())
            != Some(spread)
    {
        writeln!(
            out,
            "  note:   stdout ends with JSON written over several lines, which is not the output (the last line of stdout that is JSON is): print the answer on one line (json.dumps without indent)"
        )?;
    }
    if let Some(err) = &f.error {
        writeln!(out, "  error:  {}", super::field(err))?;
    }
    let account = account(f);
    if let Some(account) = &account {
        writeln!(out, "  traceback (from the guest's stderr):")?;
        for line in account.text().lines() {
            writeln!(out, "    {line}")?;
        }
    }
    let frames = backtrace_shown(f, account.as_ref());
    if !frames.is_empty() {
        writeln!(out, "  guest backtrace:")?;
        for frame in frames {
            writeln!(out, "    {frame}")?;
        }
    }
    writeln!(
        out,
        "  events: {}  fuel: {}  chain: {}",
        f.events,
        f.fuel,
        &f.chain_hash[..16]
    )?;
    if f.truncated_bytes > 0 {
        writeln!(
            out,
            "  note:   {} bytes of stdout/stderr were past limits.stdout_bytes and dropped",
            f.truncated_bytes
        )?;
    }
    if !f.replayable {
        // The watchdog only ends a run `timeout`; a run stopped otherwise
        // (a signal, a served episode ended) was blamed on it.
        let why = match f.status {
            worldline_log::log::bundle::Status::Timeout => "stopped by the wall-clock watchdog",
            _ => "stopped before it ended (a signal, or the command ending it)",
        };
        writeln!(out, "  note:   {why}; not replayable")?;
    }
    if let Some(why) = &f.truncated {
        writeln!(
            out,
            "  note:   an episode its client left without `end`: {why}"
        )?;
    }
    if let Some(isolation) = Isolation::of(o) {
        writeln!(
            out,
            "  isolation: native (the boundary is recorded and replayed, not the process)"
        )?;
        match isolation.network.as_deref() {
            Some("isolated") => writeln!(
                out,
                "  network:  a namespace of its own: only the run's server was reachable"
            )?,
            Some(_) => writeln!(
                out,
                "  network:  the proxy variables only: a request that ignored them could reach the network"
            )?,
            None => {}
        }
        if !isolation.not_guaranteed.is_empty() {
            writeln!(out, "  not guaranteed:")?;
            for (what, why) in worldline_engine::native::NOT_GUARANTEED {
                writeln!(out, "    {what}: {why}")?;
            }
        }
    }
    if let Some(b) = &o.bundle {
        writeln!(out, "  bundle: {}", b.display())?;
    }
    if let Some(g) = &o.grade {
        writeln!(out, "  grade:  {}", g.verdict())?;
        super::grade::write(out, g, "    ")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::guest_frames;

    #[test]
    fn a_guest_backtrace_is_demangled_from_the_frame_that_panicked() {
        let frames: Vec<String> = [
            "__rustc::rust_begin_unwind",
            "_RNvNtCs9pv848UzQwQ_4core9panicking9panic_fmt",
            "_RNvNtCs9pv848UzQwQ_4core6result13unwrap_failed",
            "_RNvCs1a2b3c4d5e6_5probe3run",
            "wasi:cli/run@0.2.0#run",
        ]
        .map(String::from)
        .to_vec();
        let shown: Vec<String> = guest_frames(&frames).collect();
        assert_eq!(shown, ["probe::run", "wasi:cli/run@0.2.0#run"]);
    }
}
