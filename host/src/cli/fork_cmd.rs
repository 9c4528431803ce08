//! `worldline fork RUN --at N [--respond JSON] [--deny T] [--allow T]
//! [--set PATH=JSON] [--agent NEW.wasm] [--samples K]`; with `--samples`,
//! K branches from event N recorded as a group, with pass@k and pass^k.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_engine::fork;
use worldline_engine::fuzz::stats::{pass_at_k, pass_hat_k};
use worldline_engine::fuzz::summary::PassK;
use worldline_engine::grade::verdict;
use worldline_engine::ops;
use worldline_engine::replay;
use worldline_report::{
    rerun::{ForkParent, ForkSummary},
    run::RunSummary,
};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct ForkCommand {
    /// Run id (or a unique prefix) in the store, or a bundle path.
    pub run: String,
    /// The event to fork at: earlier events replay from the log.
    #[arg(long)]
    pub at: u64,
    /// Replace event N's response with this JSON (for tool calls, the
    /// result; or `{"error": {"kind", "message"}}`).
    #[arg(long)]
    pub respond: Option<String>,
    /// Deny a tool (name or glob) from event N on.
    #[arg(long)]
    pub deny: Vec<String>,
    /// Allow a tool (name or glob) from event N on.
    #[arg(long)]
    pub allow: Vec<String>,
    /// Patch the world at N: `table/key=JSON` (a row) or `table/key.field=JSON`.
    /// The patch is recorded as the first writes of event N: event N itself
    /// is answered from the world before the patch; event N+1 on see it.
    #[arg(long)]
    pub set: Vec<String>,
    /// Continue with another agent build.
    #[arg(long)]
    pub agent: Option<PathBuf>,
    /// Branch K continuations from event N, each drawing the model from its
    /// own seed from there on, recorded and exported as a group.
    #[arg(long, value_name = "K")]
    pub samples: Option<u64>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: ForkCommand) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::compile_notice());
    let rec = fork::open(&store, &args.run, args.at)?;
    store.audit_reexecution(&[&rec.id], "fork")?;
    if let Some(samples) = args.samples {
        return branch(&sandbox, &store, &rec, &args, samples);
    }
    let forked = ops::fork::fork(
        &sandbox,
        &store,
        &rec,
        ops::fork::ForkArgs {
            at: args.at,
            edits: fork::check::EditText {
                respond: args.respond,
                allow: args.allow,
                deny: args.deny,
                set: args.set,
            },
            agent: args.agent,
        },
    )?;
    for note in &forked.notes {
        eprintln!("note: {note}");
    }
    let outcome = &forked.outcome;
    if args.common.json {
        super::print_json(&ForkSummary {
            run: RunSummary::of(outcome),
            parent: ForkParent {
                event: args.at,
                run: &rec.id,
            },
        })?;
    } else {
        println!("fork of {} at event {}", rec.id, args.at);
        worldline_report::run::write(&mut std::io::stdout().lock(), outcome)?;
    }
    Ok(crate::cli::exit::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}

/// `fork --samples K`: the branches, a line each (or `--json`), then the
/// group's pass@k and pass^k; exit 1 unless every branch passed.
fn branch(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &replay::RecordedRun,
    args: &ForkCommand,
    samples: u64,
) -> Result<ExitCode> {
    if samples == 0 {
        return Err(InputError::new("--samples", "must be at least 1").into());
    }
    let edits = fork::check::EditText {
        respond: args.respond.clone(),
        allow: args.allow.clone(),
        deny: args.deny.clone(),
        set: args.set.clone(),
    }
    .parse()?;
    let agent = match &args.agent {
        Some(path) => Some(worldline_engine::agent_file::load(sandbox, store, path)?),
        None => None,
    };
    let t = std::time::Instant::now();
    let outcomes = fork::branch(sandbox, store, rec, args.at, edits, agent, samples)?;
    let elapsed_ms = t.elapsed().as_secs_f64() * 1000.0;
    let passed = |o: &worldline_engine::run::RunOutcome| {
        crate::cli::exit::exit_code(o.footer.status, o.grade.as_ref()) == ExitCode::Ok
    };
    let c = outcomes.iter().filter(|o| passed(o)).count() as u64;
    let n = outcomes.len() as u64;
    let per_k = |f: &dyn Fn(u64) -> f64| -> Vec<PassK> {
        (1..=n).map(|k| PassK { k, value: f(k) }).collect()
    };
    let pass_at = per_k(&|k| pass_at_k(c, n, k));
    let pass_hat = per_k(&|k| pass_hat_k(&[c], n, k));
    let id = outcomes.first().and_then(|o| o.run_id.clone());
    if args.common.json {
        let members: Vec<_> = outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| {
                json!({
                    "member": i,
                    "model_seed": fork::branch_seed(rec, args.at, i as u64),
                    "reward": o.footer.reward(),
                    "verdict": o.footer.verdict(),
                    "run": RunSummary::of(o),
                })
            })
            .collect();
        super::print_json(&json!({
            "parent": {"run": rec.id, "event": args.at},
            "group": {"id": id, "size": samples, "passes": c, "pass_at_k": pass_at, "pass_hat_k": pass_hat},
            "members": members,
            "elapsed_ms": elapsed_ms,
        }))?;
    } else {
        println!(
            "{samples} branches of {} at event {} (group {})",
            rec.id,
            args.at,
            id.as_deref().unwrap_or("-")
        );
        for (i, o) in outcomes.iter().enumerate() {
            println!(
                "  {i}  {}  {}",
                o.run_id.as_deref().unwrap_or("-"),
                verdict::shown_status(o.footer.status, o.grade.as_ref())
            );
        }
        let last = |v: &[PassK]| v.last().map_or(0.0, |p| p.value * 100.0);
        println!(
            "{c}/{n} passed, pass@1 {:.1}%, pass@{n} {:.1}%, pass^{n} {:.1}% ({:.0} ms)",
            pass_at.first().map_or(0.0, |p| p.value * 100.0),
            last(&pass_at),
            last(&pass_hat),
            elapsed_ms
        );
    }
    Ok(if c == n {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
