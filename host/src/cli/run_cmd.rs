//! `worldline run CASE --agent A.wasm`: one run, a summary, a bundle.

use super::{Common, ModelArgs, report};
use crate::case;
use crate::error::ExitCode;
use crate::run::{RunOptions, RunOutcome, run_with};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::PathBuf;

#[derive(Args)]
pub struct RunArgs {
    /// The case file (TOML).
    pub case: PathBuf,
    /// The agent component (.wasm built for wasm32-wasip2).
    #[arg(long)]
    pub agent: PathBuf,
    /// Folder holding the worlds (default: the nearest `worlds/` above the case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: RunArgs) -> Result<ExitCode> {
    let mut case = case::load(&args.case, args.worlds.as_deref())?;
    args.model.apply(&mut case)?;
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?;
    let agent = crate::agent_file::load(&sandbox, &store, &args.agent)?;
    store.put_case(&case)?;
    let outcome = run_with(
        &sandbox,
        &agent,
        &case,
        RunOptions {
            store: Some(&store),
            model_seed: args.model.model_seed,
            ..RunOptions::default()
        },
    )?;
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&summary_json(&outcome))?);
    } else {
        print_summary(&outcome);
    }
    Ok(report::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}

/// The `run --json` document. Scripts rely on these names.
pub fn summary_json(o: &RunOutcome) -> serde_json::Value {
    let f = &o.footer;
    json!({
        "run_id": o.run_id,
        "status": report::shown_status(f.status, o.grade.as_ref()),
        "run_status": f.status.as_str(),
        "grade": o.grade,
        "output": f.output,
        "error": f.error,
        "events": f.events,
        "fuel": f.fuel,
        "bundle": o.bundle.as_ref().map(|p| p.display().to_string()),
        "chain_hash": f.chain_hash,
        "final_state_hash": f.final_state_hash,
        "replayable": f.replayable,
        "truncated_bytes": f.truncated_bytes,
        "backtrace": f.backtrace,
        "traceback": traceback(f).map(|a| a.text().to_string()),
        "agent_sha256": o.header.agent_sha256,
        "case": o.header.case,
        "world": o.header.world,
        "seed": o.header.seed,
    })
}

/// The guest's account of its fault (a Python traceback, a Rust panic)
/// when it trapped.
fn traceback(f: &crate::log::Footer) -> Option<crate::traceback::Account> {
    if f.status == crate::log::Status::Trapped {
        crate::traceback::find(&f.stderr)
    } else {
        None
    }
}

pub fn print_summary(o: &RunOutcome) {
    let f = &o.footer;
    println!(
        "run {}  {}",
        o.run_id.as_deref().unwrap_or("-"),
        report::shown_status(f.status, o.grade.as_ref())
    );
    if let Some(out) = &f.output {
        println!("  output: {out}");
    }
    if let Some(err) = &f.error {
        println!("  error:  {err}");
    }
    let account = traceback(f);
    if let Some(account) = &account {
        println!("  traceback (from the guest's stderr):");
        for line in account.text().lines() {
            println!("    {line}");
        }
    }
    // A Python traceback says where the agent failed; the wasm frames
    // would only show CPython's runtime.
    let python = matches!(account, Some(crate::traceback::Account::Python(_)));
    if !f.backtrace.is_empty() && !python {
        println!("  guest backtrace:");
        for frame in f.backtrace.iter().take(12) {
            println!("    {frame}");
        }
    }
    println!(
        "  events: {}  fuel: {}  chain: {}",
        f.events,
        f.fuel,
        &f.chain_hash[..16]
    );
    if f.truncated_bytes > 0 {
        println!(
            "  note:   {} bytes of stdout/stderr were past limits.stdout_bytes and dropped",
            f.truncated_bytes
        );
    }
    if !f.replayable {
        println!("  note:   stopped by the wall-clock watchdog; not replayable");
    }
    if let Some(b) = &o.bundle {
        println!("  bundle: {}", b.display());
    }
    if let Some(g) = &o.grade {
        println!("  grade:  {}", g.verdict());
        report::print_grade(g, "    ");
    }
}
