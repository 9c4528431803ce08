//! `worldline grade RUN [--case FILE]`: re-grade a recorded run against the
//! same or a newer case, without re-running the agent. The final state is
//! rebuilt from the world's initial state and the writes in the bundle.

use super::{Common, report};
use crate::case::{self, Case};
use crate::error::{ExitCode, InputError};
use crate::grade::{Evidence, grade, replay_writes};
use crate::log::bundle;
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct GradeArgs {
    /// Run id (or a unique prefix) in the store, or a bundle path.
    pub run: String,
    /// The case to grade against (default: the file under ./cases whose
    /// content is the recorded case's).
    #[arg(long)]
    pub case: Option<PathBuf>,
    /// Folder holding the worlds (default: the nearest `worlds/` above the case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

/// The case file under `dir` whose bytes hash to `hash`.
fn find_case(dir: &Path, hash: &str) -> Option<PathBuf> {
    let files = super::test_cmd::expand(&[dir.to_path_buf()]).ok()?;
    files
        .into_iter()
        .find(|f| std::fs::read(f).is_ok_and(|b| crate::canon::sha256_hex(b) == hash))
}

pub fn exec(args: GradeArgs) -> Result<ExitCode> {
    let store = StoreDir::open(&args.common.store)?;
    let path = store.resolve_run(&args.run)?;
    let b = bundle::read(&path).map_err(InputError::from)?;
    let case_path = match &args.case {
        Some(c) => c.clone(),
        None => find_case(Path::new("cases"), &b.header.case_hash).ok_or_else(|| {
            InputError::new(&path, "the recorded case is not under ./cases (it changed or lives elsewhere); pass --case FILE")
        })?,
    };
    let case: Case = case::load(&case_path, args.worlds.as_deref())?;
    let Some(expect) = &case.expect else {
        return Err(
            InputError::new(&case_path, "this case has no [expect] to grade against").into(),
        );
    };
    let Some(footer) = &b.footer else {
        return Err(InputError::new(
            &path,
            "the run is incomplete (no footer); there is no outcome to grade",
        )
        .into());
    };
    let mut warnings = Vec::new();
    if case.world.hash != b.header.world_hash {
        warnings.push(format!(
            "the world {} changed since the run; its writes are applied to the current version",
            case.world.reference()
        ));
    }
    let final_state = replay_writes(&case.world.initial, &b.events);
    if final_state.hash() != footer.final_state_hash && warnings.is_empty() {
        warnings
            .push("the rebuilt final state does not match the recorded final-state hash".into());
    }
    let g = grade(
        expect,
        &Evidence {
            status: footer.status,
            output: footer.output.as_deref(),
            events: &b.events,
            initial: &case.world.initial,
            final_state: &final_state,
        },
    );
    if args.common.json {
        let doc = json!({
            "bundle": path.display().to_string(),
            "case": case_path.display().to_string(),
            "status": report::shown_status(footer.status, Some(&g)),
            "run_status": footer.status.as_str(),
            "recorded_grade": footer.verdict(),
            "grade": g,
            "warnings": warnings,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "grade {}  {}  (against {})",
            path.display(),
            report::shown_status(footer.status, Some(&g)),
            case_path.display()
        );
        for w in &warnings {
            println!("  warning: {w}");
        }
        report::print_grade(&g, "  ");
    }
    Ok(report::exit_code(footer.status, Some(&g)))
}
