//! `worldline fork RUN --at N [--respond JSON] [--deny T] [--allow T]
//! [--set PATH=JSON] [--agent NEW.wasm] [--samples K]`; with `--samples`,
//! K branches from event N recorded as a group, with pass@k and pass^k.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use worldline_case::ahead;
use worldline_engine::fork;
use worldline_engine::ops;
use worldline_engine::replay;
use worldline_report::{
    group,
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
    #[arg(long, allow_hyphen_values = true, value_parser = super::event_arg)]
    pub at: u64,
    /// Replace event N's response with this JSON (for tool calls, the
    /// result; or `{"error": {"kind", "message"}}`).
    #[arg(long)]
    pub respond: Option<String>,
    /// Deny a tool (name or glob) from event N on.
    #[arg(long)]
    pub deny: Vec<String>,
    /// Allow a tool (name or glob) from event N on: lifts the deny rule written the same; an `[[inject]]` denial stays.
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
    let store = super::store_of_run(&args.common.store, &args.run)?;
    let path = store.resolve_run(&args.run)?;
    // The sandbox made and the recorded agent loaded while the run is read
    // (decision 0401), or after it here when the other thread has not
    // begun by then (decision 0407); the run's errors come first, as before.
    let (sandbox, rec) = std::thread::scope(|s| {
        let making = ahead::spawn(s, || {
            let sandbox =
                Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice());
            if args.agent.is_none() {
                fork::preload(&sandbox, &store, &path);
            }
            anyhow::Ok(sandbox)
        });
        let rec = fork::open_at(&store, path.clone(), args.at);
        let sandbox = making.take();
        (sandbox, rec)
    });
    let rec = rec?;
    let sandbox = sandbox?;
    store.audit_reexecution(&[&rec.id], "fork")?;
    if let Some(samples) = args.samples {
        return branch(&sandbox, &store, &rec, &args, samples);
    }
    // A signal that stops a native run ends the command once the run is
    // reported, as under `run` (it ended with nothing said).
    let interrupt = (rec.bundle.header.native.is_some() && args.agent.is_none())
        .then(worldline_engine::native::Interrupt::start);
    let forked = std::thread::scope(|s| {
        // The run index opened while the fork runs (decision 0398).
        s.spawn(|| worldline_store::index::open_writer(&store));
        ops::fork::fork(
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
        )
    })?;
    super::indexed(&store);
    for note in &forked.notes {
        eprintln!("note: {note}");
    }
    let outcome = &forked.outcome;
    if args.common.json {
        super::print_json(&ForkSummary {
            run: RunSummary::of(outcome),
            notes: &forked.notes,
            parent: ForkParent {
                event: args.at,
                run: &rec.id,
            },
            rules: rec.rules,
        })?;
    } else {
        out!("fork of {} at event {}", rec.id, args.at)?;
        worldline_report::run::write(&mut super::human_out(), outcome)?;
    }
    let code = crate::cli::exit::exit_code(outcome.footer.status, outcome.grade.as_ref());
    if let Some(i) = interrupt {
        i.end();
    }
    // The fork, its recording and the sandbox (the engine, the linker, the
    // agent's mapped code), values and mappings only, are left to the
    // process's end, which frees their memory at once (decision 0395):
    // dropping them value by value took ~0.4 ms of a fork's ~12, and the
    // sandbox's ~0.3 ms more (unmapping while the index's thread lives).
    std::mem::forget(forked);
    std::mem::forget(rec);
    std::mem::forget(sandbox);
    Ok(code)
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
    super::runs_at_most("--samples", samples)?;
    if let Some(refused) = fork::key_refused(rec, "fork") {
        return Err(refused.into());
    }
    // Refused before the agent named is read and compiled (it was
    // compiled first, then the run refused).
    if let Some(refused) = fork::samples_refused(rec) {
        return Err(refused.into());
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
    let asked = group::Asked {
        parent: &rec.id,
        at: args.at,
        samples,
    };
    let mut report = group::Stream::new(std::io::stdout(), asked, args.common.json);
    let stopping = super::stopping::Stopping::start("branches");
    let branched = fork::branch(
        sandbox,
        store,
        rec,
        args.at,
        edits,
        agent,
        samples,
        &mut |made| {
            match made {
                fork::Made::Note(note) => eprintln!("note: {note}"),
                fork::Made::Member { seed, outcome } => report.member(seed, &outcome)?,
            }
            stopping.seen();
            Ok(())
        },
    );
    let replayed = match branched {
        Ok(replayed) => replayed,
        Err(err) if args.common.json && report.started() => {
            return super::ended_with(&err, |e| report.fail(e));
        }
        Err(err) => return Err(err),
    };
    let elapsed_ms = t.elapsed().as_secs_f64() * 1000.0;
    report.interrupted(stopping.seen());
    let passed = report.finish(replayed, elapsed_ms)?;
    stopping.end();
    Ok(if passed {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
