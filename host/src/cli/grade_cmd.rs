//! `worldline grade RUN [--case FILE]`: re-grade a recorded run against the
//! same or a newer case, without re-running the agent. The final state is
//! rebuilt from the world's initial state and the writes in the bundle.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use worldline_engine::grade::verdict;
use worldline_engine::ops;
use worldline_report::grade::RegradeSummary;
use worldline_runtime::sandbox::Sandbox;

#[derive(Args)]
pub struct GradeCommand {
    /// Run id (or a unique prefix) in the store, or a bundle path.
    pub run: String,
    /// The case to grade against (default: the file under the project
    /// file's `cases`, else ./cases, whose content is the recorded case's).
    #[arg(long)]
    pub case: Option<PathBuf>,
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above the case).
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

pub fn exec(args: GradeCommand) -> Result<ExitCode> {
    let store = super::store_of_run(&args.common.store, &args.run)?;
    let path = store.resolve_run(&args.run)?;
    store.require_raw("`grade` (re-grading a run against its case)")?;
    store.audit_reexecution(&[&super::redact_opts::id_of(&path)], "grade")?;
    let graded = ops::grade::grade(
        &store,
        &ops::grade::GradeArgs {
            bundle: path.clone(),
            case: args.case,
            cases: match super::project_args::project() {
                Some(p) if !p.cases.is_empty() => p.cases.clone(),
                _ => vec![PathBuf::from("cases")],
            },
            worlds: args.worlds,
            rejudge: args.rejudge,
        },
        || Ok(Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice())),
    )?;
    let (g, footer) = (&graded.grade, &graded.footer);
    let summary = RegradeSummary {
        agent_error: worldline_engine::traceback::agent_error(footer),
        bundle: path.display().to_string(),
        case: graded.case.display().to_string(),
        grade: g,
        recorded_grade: footer.verdict(),
        run_status: footer.status.as_str(),
        status: verdict::shown_status(footer.status, Some(g)),
        warnings: &graded.warnings,
    };
    if args.common.json {
        super::print_json_with_settings(&summary)?;
    } else {
        worldline_report::grade::write_regrade(&mut super::human_out(), &summary)?;
    }
    Ok(crate::cli::exit::exit_code(footer.status, Some(g)))
}
