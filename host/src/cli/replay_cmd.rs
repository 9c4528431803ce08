//! `worldline replay RUN` (strict replay of one run) and
//! `worldline verify [RUN...]` (replay many and report the drift rate).

use super::Common;
use crate::error::{ExitCode, InputError};
use crate::log::bundle::{self, Bundle, Redacted};
use crate::replay::{self, ReplayReport, Scope, Verdict};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use serde_json::json;

#[derive(Args)]
pub struct ReplayArgs {
    /// Run id (or a unique prefix) in the store, or a bundle path.
    pub run: String,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// Runs to replay (default: every run in the store).
    pub runs: Vec<String>,
    #[command(flatten)]
    pub common: Common,
}

fn print_report(r: &ReplayReport) {
    match r.verdict {
        Verdict::Identical if r.scope == Scope::Boundary => println!(
            "{}  identical at the boundary  (boundary replay of a native agent: {} events, chain {})",
            r.run,
            r.matched,
            &r.chain_hash[..16]
        ),
        Verdict::Identical => println!(
            "{}  identical  ({} events, chain {})",
            r.run,
            r.matched,
            &r.chain_hash[..16]
        ),
        Verdict::VerifiedPrefix => println!(
            "{}  verified  ({} of {} recorded events match; the recorded run is incomplete, so there is no outcome to compare)",
            r.run, r.matched, r.recorded
        ),
        Verdict::Timeout => println!(
            "{}  timeout  (stopped by the watchdog, so not replayable; {} of {} recorded events replayed and match)",
            r.run, r.matched, r.recorded
        ),
        Verdict::Diverged => {
            let d = r
                .divergence
                .as_ref()
                .expect("a diverged replay has a divergence");
            let field = d
                .field
                .as_deref()
                .map(|f| format!(", field `{f}`"))
                .unwrap_or_default();
            println!(
                "{}  diverged at event {} ({:?}{field})",
                r.run, d.index, d.class
            );
            println!("    expected: {}", crate::canon::to_string(&d.expected));
            println!("    actual:   {}", crate::canon::to_string(&d.actual));
            for line in &r.diff {
                println!("    {line}");
            }
        }
    }
}

/// A redacted copy cannot be re-executed: say what reading it checked
/// and what no one can check from it.
fn report_redacted_copy(
    path: &std::path::Path,
    b: &Bundle,
    r: &Redacted,
    json: bool,
) -> Result<()> {
    let checked = [
        "the copy's hash chain (every event, in order)",
        "the copy's footer hash (its outcome)",
    ];
    let not_checked = [
        "that the agent makes these calls: the copy's answers are redacted, and its case and world were not exported, so it is not re-executed",
        "that the copy matches the original run: only the original's chain hash is known",
    ];
    if json {
        let doc = json!({
            "run": path.display().to_string(), "verdict": "redacted_copy",
            "events": b.events.len(), "original_run": r.original_run,
            "original_chain_hash": r.original_chain_hash, "hidden": r.hidden,
            "checked": checked, "not_checked": not_checked,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "{}  redacted copy of {} ({} events, {} values hidden)",
            path.display(),
            r.original_run,
            b.events.len(),
            r.hidden
        );
        for c in checked {
            println!("  checked: {c}");
        }
        for c in not_checked {
            println!("  cannot check: {c}");
        }
    }
    Ok(())
}

pub fn exec_replay(args: ReplayArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let path = store.resolve_run(&args.run)?;
    let b = bundle::read(&path).map_err(InputError::from)?;
    if let Some(r) = &b.header.redacted {
        report_redacted_copy(&path, &b, r, args.common.json)?;
        return Ok(ExitCode::Ok);
    }
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::compile_notice());
    let rec = replay::open(&store, &args.run)?;
    let r = replay::replay(&sandbox, &store, &rec)?;
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print_report(&r);
    }
    Ok(if r.verdict == Verdict::Diverged {
        ExitCode::Failed
    } else {
        ExitCode::Ok
    })
}

pub fn exec_verify(args: VerifyArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::compile_notice());
    let runs = if args.runs.is_empty() {
        store.run_ids()?
    } else {
        args.runs.clone()
    };
    // Bundles being created are hard-linked from a temporary file; one a
    // killed writer left is not a run.
    crate::durable::sweep(&store.runs_dir());
    let mut reports = Vec::new();
    let mut errors = Vec::new();
    // Bundles cut off before their header (killed as the run started, or
    // a full disk): incomplete runs with nothing to replay, not drift.
    let mut headless = Vec::new();
    // MCP sessions have no process to run again: read (chain checked),
    // not replayed.
    let mut sessions = Vec::new();
    for run in &runs {
        if let Ok(path) = store.resolve_run(run)
            && bundle::has_header(&path).is_ok_and(|has| !has)
        {
            headless.push(run.clone());
            continue;
        }
        if let Ok(rec) = replay::open(&store, run)
            && rec
                .bundle
                .header
                .native
                .as_ref()
                .is_some_and(|n| n.transport != "exec")
        {
            sessions.push(run.clone());
            continue;
        }
        match replay::open(&store, run).and_then(|rec| replay::replay(&sandbox, &store, &rec)) {
            Ok(r) => reports.push(r),
            Err(e) => errors.push(json!({"run": run, "error": format!("{e:#}")})),
        }
    }
    let diverged = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Diverged)
        .count();
    let total = reports.len() + errors.len();
    let drift = if total == 0 {
        0.0
    } else {
        (diverged + errors.len()) as f64 / total as f64
    };
    if args.common.json {
        let doc = json!({
            "replayed": reports.len(),
            "identical": reports.iter().filter(|r| r.verdict == Verdict::Identical && r.scope == Scope::BitForBit).count(),
            "boundary_replay": reports.iter().filter(|r| r.verdict == Verdict::Identical && r.scope == Scope::Boundary).count(),
            "mcp_sessions": sessions.len(),
            "verified_prefix": reports.iter().filter(|r| r.verdict == Verdict::VerifiedPrefix).count(),
            "timeout": reports.iter().filter(|r| r.verdict == Verdict::Timeout).count(),
            "diverged": diverged,
            "unreadable": errors.len(),
            "incomplete": headless.len(),
            "drift_rate": drift,
            "runs": reports,
            "errors": errors,
            "incomplete_runs": headless,
            "mcp_session_runs": sessions,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for r in &reports {
            print_report(r);
        }
        for run in &headless {
            println!(
                "{run}  incomplete: cut off before its header was written (killed as it started, or the disk was full); nothing to replay"
            );
        }
        for run in &sessions {
            println!(
                "{run}  MCP session: its hash chain is intact; there is no process to run again"
            );
        }
        for e in &errors {
            println!(
                "{}  unreadable: {}",
                e["run"].as_str().unwrap_or(""),
                e["error"].as_str().unwrap_or("")
            );
        }
        let boundary = reports
            .iter()
            .filter(|r| r.scope == Scope::Boundary && r.verdict != Verdict::Diverged)
            .count();
        println!(
            "{} runs: {} identical or verified ({boundary} of them boundary replays of native agents), {} diverged, {} unreadable, {} incomplete without a header, {} MCP sessions read; drift rate {:.1}%",
            total + headless.len() + sessions.len(),
            reports.len() - diverged,
            diverged,
            errors.len(),
            headless.len(),
            sessions.len(),
            drift * 100.0
        );
    }
    Ok(if diverged + errors.len() == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
