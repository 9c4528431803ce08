//! `worldline grade RUN [--case FILE]`: re-grade a recorded run against the
//! same or a newer case, without re-running the agent. The final state is
//! rebuilt from the world's initial state and the writes in the bundle.

use super::Common;
use crate::case::{self, Case};
use crate::error::{ExitCode, InputError};
use crate::grade::regrade::regrade;
use crate::grade::verdict;
use crate::log::bundle;
use crate::report::{self, grade::RegradeSummary};
use crate::store::StoreDir;
use anyhow::Result;
use clap::Args;
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
    let files = crate::case::discover::expand(&[dir.to_path_buf()]).ok()?;
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
    let gold = if expect.gold.is_empty() {
        None
    } else {
        let sandbox = crate::sandbox::Sandbox::new(Some(store.cache_dir()))?;
        crate::grade::gold::for_case(&sandbox, &case)?
    };
    let (g, warnings) = regrade(expect, &case.world, &b, footer, gold.as_deref());
    if args.common.json {
        report::print_json(&RegradeSummary {
            bundle: path.display().to_string(),
            case: case_path.display().to_string(),
            grade: &g,
            recorded_grade: footer.verdict(),
            run_status: footer.status.as_str(),
            status: verdict::shown_status(footer.status, Some(&g)),
            warnings: &warnings,
        })?;
    } else {
        println!(
            "grade {}  {}  (against {})",
            path.display(),
            verdict::shown_status(footer.status, Some(&g)),
            case_path.display()
        );
        for w in &warnings {
            println!("  warning: {w}");
        }
        report::grade::print(&g, "  ");
    }
    Ok(verdict::exit_code(footer.status, Some(&g)))
}
