//! `worldline replay RUN` (strict replay of one run) and
//! `worldline verify [RUN...]` (replay many and report the drift rate).

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use worldline_case::error::InputError;
use worldline_engine::ops;
use worldline_engine::replay::{self, ReplayReport, Scope, Verdict};
use worldline_engine::verify;
use worldline_log::log::bundle::{self, Bundle, Redacted};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

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
    /// Replay N of them drawn at random (a nightly check of a large store);
    /// the sample and its seed are printed.
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// The seed of `--sample` (default: a fresh one, printed): the same seed
    /// on the same runs draws the same sample.
    #[arg(long, requires = "sample")]
    pub seed: Option<u64>,
    /// Runs replayed at once (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
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
                "{}  diverged at event {} ({}{field})",
                r.run,
                d.index,
                d.class.as_str()
            );
            // Where they differ first: the whole values can be long.
            for line in &r.diff {
                println!("    {line}");
            }
            println!(
                "    expected: {}",
                worldline_case::canon::to_string(&d.expected)
            );
            println!(
                "    actual:   {}",
                worldline_case::canon::to_string(&d.actual)
            );
        }
    }
    if !r.env_differs.is_empty() {
        println!(
            "    passed-through variables differ from the recording: {}",
            r.env_differs.join(", ")
        );
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
    store.require_raw("`replay` (re-executing a run)")?;
    let path = store.resolve_run(&args.run)?;
    // Only a redacted copy is read here whole: a run to replay is read
    // once, by `replay::open` (decision 0347).
    // (A header that does not read is read whole for its error.)
    if bundle::read_header(&path).map_or(true, |h| h.redacted.is_some()) {
        let b = bundle::read(&path).map_err(InputError::from)?;
        if let Some(r) = &b.header.redacted {
            report_redacted_copy(&path, &b, r, args.common.json)?;
            return Ok(ExitCode::Ok);
        }
    }
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::compile_notice());
    let rec = replay::open(&store, &args.run)?;
    store.audit_reexecution(&[&rec.id], "replay")?;
    let r = ops::replay::replay(&sandbox, &store, rec)?;
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
    store.audit_reexecution(&[], "verify")?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::compile_notice());
    let sample = args.sample.map(|size| ops::replay::Sample {
        size,
        seed: args.seed.unwrap_or_else(verify::fresh_seed),
    });
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let v = ops::replay::verify(&sandbox, &store, &args.runs, sample, jobs)?;
    let sample = v
        .sample
        .as_ref()
        .map(|s| json!({"size": s.runs.len(), "of": s.of, "seed": s.seed, "runs": s.runs}));
    if let Some(s) = &v.sample
        && !args.common.json
    {
        println!(
            "sample of {} of {} runs, seed {} (`--sample {} --seed {}` draws it again): {}",
            s.runs.len(),
            s.of,
            s.seed,
            args.sample.unwrap_or(0),
            s.seed,
            s.runs.join(" ")
        );
    }
    let sessions = &v.sessions;
    let tally = v.tally();
    let (reports, headless, diverged, drift) =
        (&v.reports, &v.headless, tally.diverged, v.drift_rate());
    let errors: Vec<serde_json::Value> = v
        .unreadable
        .iter()
        .map(|u| json!({"run": u.run, "error": u.error}))
        .collect();
    let total = reports.len() + errors.len();
    if args.common.json {
        let doc = json!({
            "replayed": reports.len(),
            "identical": tally.identical,
            "boundary_replay": tally.boundary_replay,
            "mcp_sessions": sessions.len(),
            "verified_prefix": tally.verified_prefix,
            "timeout": tally.timeout,
            "diverged": diverged,
            "unreadable": errors.len(),
            "incomplete": headless.len(),
            "drift_rate": drift,
            "runs": reports,
            "errors": errors,
            "incomplete_runs": headless,
            "sample": sample,
            "mcp_session_runs": sessions,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        for r in reports {
            print_report(r);
        }
        for run in headless {
            println!(
                "{run}  incomplete: cut off before its header was written (killed as it started, or the disk was full); nothing to replay"
            );
        }
        for run in sessions {
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
        println!(
            "{} runs: {} identical or verified ({} of them boundary replays of native agents), {} diverged, {} unreadable, {} incomplete without a header, {} MCP sessions read; drift rate {:.1}%",
            total + headless.len() + sessions.len(),
            reports.len() - diverged,
            tally.boundary_agreed,
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
