//! `worldline fork RUN --at N [--respond JSON] [--deny T] [--allow T]
//! [--set PATH=JSON] [--agent NEW.wasm] [--samples K]`; with `--samples`,
//! K branches from event N recorded as a group, with pass@k and pass^k.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_engine::fork;
use worldline_engine::fuzz::stats::{pass_at_k, pass_hat_k};
use worldline_engine::fuzz::summary::PassK;
use worldline_engine::grade::verdict;
use worldline_engine::ops;
use worldline_engine::replay;
use worldline_engine::run::RunOutcome;
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
    let g = Group::of(samples, &outcomes);
    if args.common.json {
        super::print_json(&group_json(rec, args.at, &outcomes, &g, elapsed_ms))?;
    } else {
        write_group(
            &mut std::io::stdout().lock(),
            rec,
            args.at,
            &outcomes,
            &g,
            elapsed_ms,
        )?;
    }
    Ok(if g.passes == g.size {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}

/// A group of branches: how many passed, pass@k and pass^k for each k.
struct Group {
    /// Branches asked for (`--samples`).
    samples: u64,
    /// Branches made.
    size: u64,
    passes: u64,
    pass_at: Vec<PassK>,
    pass_hat: Vec<PassK>,
    /// The group's id: its first member's run.
    id: Option<String>,
}

impl Group {
    fn of(samples: u64, outcomes: &[RunOutcome]) -> Group {
        let passed = |o: &RunOutcome| {
            crate::cli::exit::exit_code(o.footer.status, o.grade.as_ref()) == ExitCode::Ok
        };
        let c = outcomes.iter().filter(|o| passed(o)).count() as u64;
        let n = outcomes.len() as u64;
        let per_k = |f: &dyn Fn(u64) -> f64| -> Vec<PassK> {
            (1..=n).map(|k| PassK { k, value: f(k) }).collect()
        };
        Group {
            samples,
            size: n,
            passes: c,
            pass_at: per_k(&|k| pass_at_k(c, n, k)),
            pass_hat: per_k(&|k| pass_hat_k(&[c], n, k)),
            id: outcomes.first().and_then(|o| o.run_id.clone()),
        }
    }
}

/// `fork --samples K --json`: the parent, the group and each member.
fn group_json(
    rec: &replay::RecordedRun,
    at: u64,
    outcomes: &[RunOutcome],
    g: &Group,
    elapsed_ms: f64,
) -> serde_json::Value {
    let members: Vec<_> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| {
            json!({
                "member": i,
                "model_seed": fork::branch_seed(rec, at, i as u64),
                "reward": o.footer.reward(),
                "verdict": o.footer.verdict(),
                "run": RunSummary::of(o),
            })
        })
        .collect();
    json!({
        "parent": {"run": rec.id, "event": at},
        "group": {"id": g.id, "size": g.samples, "passes": g.passes, "pass_at_k": g.pass_at, "pass_hat_k": g.pass_hat},
        "members": members,
        "elapsed_ms": elapsed_ms,
    })
}

/// `fork --samples K`: a line per branch, then the group's rates.
fn write_group(
    out: &mut impl Write,
    rec: &replay::RecordedRun,
    at: u64,
    outcomes: &[RunOutcome],
    g: &Group,
    elapsed_ms: f64,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{} branches of {} at event {at} (group {})",
        g.samples,
        rec.id,
        g.id.as_deref().unwrap_or("-")
    )?;
    for (i, o) in outcomes.iter().enumerate() {
        writeln!(
            out,
            "  {i}  {}  {}",
            o.run_id.as_deref().unwrap_or("-"),
            verdict::shown_status(o.footer.status, o.grade.as_ref())
        )?;
    }
    let last = |v: &[PassK]| v.last().map_or(0.0, |p| p.value * 100.0);
    let (c, n) = (g.passes, g.size);
    writeln!(
        out,
        "{c}/{n} passed, pass@1 {:.1}%, pass@{n} {:.1}%, pass^{n} {:.1}% ({:.0} ms)",
        g.pass_at.first().map_or(0.0, |p| p.value * 100.0),
        last(&g.pass_at),
        last(&g.pass_hat),
        elapsed_ms
    )
}
