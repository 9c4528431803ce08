//! `worldline rerun RUN --agent NEW.wasm [--model recorded|live|fail]`:
//! replay the incident against a fixed agent, and say how the outcome and
//! the grade differ from the original.

use super::{Common, report, run_cmd};
use crate::error::ExitCode;
use crate::replay::{self, ModelMode};
use crate::sandbox::Sandbox;
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Args)]
pub struct RerunArgs {
    /// Run id (or a unique prefix), or a bundle path.
    pub run: String,
    /// The new agent build.
    #[arg(long)]
    pub agent: PathBuf,
    /// Model answers: from the recording then the case's provider
    /// (`recorded`), always the provider (`live`), or the recording and stop
    /// at the first new request (`fail`).
    #[arg(long, value_enum, default_value = "recorded")]
    pub model: ModelMode,
    #[command(flatten)]
    pub common: Common,
}

/// `what → passed` of a recorded or fresh grade.
fn verdicts(grade: Option<&Value>) -> Vec<(String, bool)> {
    grade
        .and_then(|g| g["assertions"].as_array())
        .map(|a| {
            a.iter()
                .map(|x| {
                    (
                        x["what"].as_str().unwrap_or("").to_string(),
                        x["passed"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn exec(args: RerunArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?;
    let rec = replay::open(&store, &args.run)?;
    let agent = crate::agent_file::load(&sandbox, &store, &args.agent)?;
    let outcome = replay::rerun(&sandbox, &store, &rec, &agent, args.model)?;

    let original = rec.bundle.footer.as_ref();
    let before = verdicts(original.and_then(|f| f.grade.as_ref()));
    let after_grade = outcome
        .grade
        .as_ref()
        .map(|g| serde_json::to_value(g).expect("grades serialize"));
    let after = verdicts(after_grade.as_ref());
    let changed: Vec<Value> = after
        .iter()
        .filter_map(|(what, now)| {
            let was = before.iter().find(|(w, _)| w == what).map(|(_, p)| *p);
            (was != Some(*now)).then(|| json!({"what": what, "before": was, "after": now}))
        })
        .collect();
    let original_status = original.map_or("incomplete", report::recorded_status);
    let new_status = report::shown_status(outcome.footer.status, outcome.grade.as_ref());
    if args.common.json {
        let mut doc = run_cmd::summary_json(&outcome);
        doc["original"] = json!({"run": rec.id, "status": original_status, "output": original.and_then(|f| f.output.clone())});
        doc["changed_assertions"] = json!(changed);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("rerun of {} with agent {}", rec.id, &agent.sha256[..12]);
        run_cmd::print_summary(&outcome);
        println!("  original: {original_status}  ->  rerun: {new_status}");
        for c in &changed {
            println!(
                "  changed: {}: {} -> {}",
                c["what"].as_str().unwrap_or(""),
                c["before"],
                c["after"]
            );
        }
    }
    Ok(report::exit_code(
        outcome.footer.status,
        outcome.grade.as_ref(),
    ))
}
