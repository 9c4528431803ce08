//! `worldline fork RUN --at N [--respond JSON] [--deny T] [--allow T]
//! [--set PATH=JSON] [--agent NEW.wasm]`.

use super::Common;
use crate::error::ExitCode;
use crate::fork;
use crate::grade::verdict;
use crate::ops;
use crate::replay;
use crate::report::{
    self,
    rerun::{ForkParent, ForkSummary},
    run::RunSummary,
};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ForkArgs {
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
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: ForkArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::compile_notice());
    let rec = replay::open(&store, &args.run)?;
    store.audit_reexecution(&[&rec.id], "fork")?;
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
        report::print_json(&ForkSummary {
            run: RunSummary::of(outcome),
            parent: ForkParent {
                event: args.at,
                run: &rec.id,
            },
        })?;
    } else {
        println!("fork of {} at event {}", rec.id, args.at);
        report::run::write(&mut std::io::stdout().lock(), outcome)?;
    }
    Ok(verdict::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}
