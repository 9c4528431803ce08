//! `worldline rerun RUN --agent NEW.wasm [--model recorded|live|fail]`:
//! replay the incident against a fixed agent, and say how the outcome and
//! the grade differ from the original.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_engine::grade::verdict;
use worldline_engine::ops;
use worldline_engine::replay::{self, ModelMode};
use worldline_log::log::rules;
use worldline_report::{
    rerun::{self, Original, RerunSummary},
    run::RunSummary,
};
use worldline_runtime::sandbox::Sandbox;

#[derive(Args)]
pub struct RerunCommand {
    /// Run id (or a unique prefix), or a bundle path.
    pub run: String,
    /// The new agent build.
    #[arg(long)]
    pub agent: PathBuf,
    /// Model answers: from the recording then the case's provider
    /// (`recorded`), always the provider (`live`), or the recording and stop
    /// at the first new request (`fail`).
    #[arg(long, default_value = "recorded", value_parser = model_mode())]
    pub model: ModelMode,
    #[command(flatten)]
    pub common: Common,
}

/// `--model`'s values, named as in [`ModelMode::NAMES`].
fn model_mode() -> impl clap::builder::TypedValueParser<Value = ModelMode> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(ModelMode::NAMES.map(|(name, _)| name)).map(|name| {
        ModelMode::NAMES
            .into_iter()
            .find_map(|(n, m)| (n == name).then_some(m))
            .expect("clap accepts only the listed names")
    })
}

pub fn exec(args: RerunCommand) -> Result<ExitCode> {
    let store = super::store_of_run(&args.common.store, &args.run)?;
    let sandbox =
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice());
    let rec = replay::open_held(&store, &args.run)?;
    let edits = super::fork_edits(&rec);
    if !edits.is_empty() {
        return Err(InputError::new(
            &rec.path,
            format!(
                "run {} is a fork with edits ({}): rerun runs its case from the start with the other agent, without them, so it would be compared with another run. Fork its parent with the same edits and `--agent B` instead, or make it a case (`worldline case from-run {} -o CASE.toml`) and `worldline test CASE.toml --agent B`",
                rec.id,
                edits.join("; "),
                rec.id
            ),
        )
        .into());
    }
    store.audit_reexecution(&[&rec.id], "rerun")?;
    let reran = ops::rerun::rerun(
        &sandbox,
        &store,
        &rec,
        ops::rerun::RerunArgs {
            agent: args.agent,
            model: args.model,
        },
    )?;
    super::indexed(&store);
    for note in &reran.notes {
        eprintln!("note: {note}");
    }
    let outcome = &reran.outcome;
    let original = rec.bundle.footer.as_ref();
    let changed = rerun::changed_assertions(
        original.and_then(|f| f.grade.as_ref()),
        rec.rules,
        outcome.grade.as_ref(),
    );
    let summary = RerunSummary {
        run: RunSummary::of(outcome),
        changed_assertions: &changed,
        notes: &reran.notes,
        original: Original {
            output: original.and_then(|f| f.output.as_deref()),
            rules: rec.rules,
            run: &rec.id,
            status: original.map_or("incomplete", verdict::recorded_status),
        },
        rules: rules::of_header(outcome.header.rules).unwrap_or(rules::CURRENT),
    };
    if args.common.json {
        super::print_json_with_settings(&summary)?;
    } else {
        rerun::write(
            &mut super::human_out(),
            &summary,
            outcome,
            &reran.agent_sha256,
        )?;
    }
    Ok(crate::cli::exit::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}
