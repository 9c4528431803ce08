//! `worldline grade RUN [--case FILE]`: re-grade a recorded run against the
//! same or a newer case, without re-running the agent. The final state is
//! rebuilt from the world's initial state and the writes in the bundle.

use super::Common;
use crate::case::{self, Case};
use crate::error::{ExitCode, InputError};
use crate::grade::judge::Judging;
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
    /// Ask the judge model again for `[[expect.judge]]` checks (without it,
    /// their recorded answers are used); the new grade is kept in the
    /// store beside the recorded one.
    #[arg(long)]
    pub rejudge: bool,
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

/// `grades/<run>/`: the grades `--rejudge` made of a run, `1.json`, `2.json`, …
fn regrades_dir(store: &StoreDir, run_id: &str) -> PathBuf {
    store.root.join("grades").join(run_id)
}

/// The newest grade `--rejudge` kept for a run.
fn latest_regrade(store: &StoreDir, run_id: &str) -> Option<serde_json::Value> {
    let dir = regrades_dir(store, run_id);
    let n = (1..)
        .take_while(|n| dir.join(format!("{n}.json")).is_file())
        .last()?;
    let bytes = std::fs::read(dir.join(format!("{n}.json"))).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Keep a re-judged grade as the next record (the recorded one stays in
/// the bundle; earlier re-judged ones stay too).
fn keep_regrade(store: &StoreDir, run_id: &str, g: &crate::grade::Grade) -> Result<()> {
    let dir = regrades_dir(store, run_id);
    std::fs::create_dir_all(&dir)?;
    let n = (1..)
        .find(|n| !dir.join(format!("{n}.json")).exists())
        .unwrap_or(1);
    let text = crate::canon::to_string(&serde_json::to_value(g)?);
    crate::durable::create_new(&dir.join(format!("{n}.json")), text.as_bytes())?;
    Ok(())
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
        let sandbox = crate::sandbox::Sandbox::new(Some(store.cache_dir()))?
            .on_compile(super::compile_notice());
        crate::grade::gold::for_case(&sandbox, &case)?
    };
    let run_id = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let latest = latest_regrade(&store, &run_id).or_else(|| footer.grade.clone());
    let recorded = latest.unwrap_or(serde_json::Value::Null);
    let judging = if args.rejudge {
        Judging::Live {
            case_dir: case_path.parent().unwrap_or(Path::new(".")),
            seed: b.header.seed,
        }
    } else {
        Judging::Recorded(&recorded)
    };
    let (g, warnings) = regrade(expect, &case.world, &b, footer, gold.as_deref(), &judging);
    if args.rejudge {
        keep_regrade(&store, &run_id, &g)?;
    }
    let agent_error = crate::traceback::agent_error(footer);
    if args.common.json {
        super::print_json_with_settings(&RegradeSummary {
            agent_error,
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
        report::run::print_agent_error(agent_error.as_ref(), "  ");
        report::grade::print(&g, "  ");
    }
    Ok(verdict::exit_code(footer.status, Some(&g)))
}
