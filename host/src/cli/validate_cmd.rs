//! `worldline validate [CASES]`: every case checked without an agent (the
//! gold calls as an oracle pass, doing nothing and answering "" fail, the
//! grade is the same twice, no expected answer is shown to the agent);
//! exit 1 with a table of the cases that fail, 2 when a case does not load.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use worldline_case::case::{self, discover};
use worldline_case::error::InputError;
use worldline_engine::validate::{self, Probe, Validated};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct ValidateArgs {
    /// Case files, or folders searched for `*.toml` cases (default: `cases`
    /// in worldline.toml).
    pub cases: Vec<PathBuf>,
    /// Folder holding the worlds (default: the nearest `worlds/` above each case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    /// Cases validated at once (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub common: Common,
}

/// One case's line of the report.
#[derive(Serialize)]
struct Row {
    case: String,
    path: String,
    /// `ok`, `failing`, or `broken` (the case did not load, or its gold
    /// calls fail on its world).
    verdict: &'static str,
    #[serde(flatten)]
    validated: Option<Validated>,
    /// Why a broken case is broken.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
struct Report<'a> {
    cases: usize,
    ok: usize,
    failing: usize,
    broken: usize,
    results: &'a [Row],
}

pub fn exec(mut args: ValidateArgs) -> Result<ExitCode> {
    if args.cases.is_empty() {
        match super::project_args::project() {
            Some(p) if !p.cases.is_empty() => args.cases = p.cases.clone(),
            _ => {
                return Err(InputError::new(
                    "validate",
                    "no cases given: name case files or folders, or set `cases` in worldline.toml",
                )
                .into());
            }
        }
    }
    let paths = discover::expand(&args.cases)?;
    let store = StoreDir::open(&args.common.store)?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::compile_notice());
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let worlds = args.worlds.as_deref();
    let rows = worldline_case::parallel::par_map(paths.len(), jobs, |i| {
        let path = &paths[i];
        let name = discover::display_name(path);
        let loaded = case::load(path, worlds).map_err(anyhow::Error::from);
        let result = loaded.and_then(|c| validate::validate(&sandbox, &c));
        Ok(match result {
            Ok(v) => Row {
                case: name,
                path: path.display().to_string(),
                verdict: if v.ok { "ok" } else { "failing" },
                validated: Some(v),
                error: None,
            },
            Err(e) if crate::cli::exit::exit_code_of(&e) == ExitCode::Input => Row {
                case: name,
                path: path.display().to_string(),
                verdict: "broken",
                validated: None,
                error: Some(format!("{e:#}")),
            },
            Err(e) => return Err(e),
        })
    })?;
    let count = |v: &str| rows.iter().filter(|r| r.verdict == v).count();
    let report = Report {
        cases: rows.len(),
        ok: count("ok"),
        failing: count("failing"),
        broken: count("broken"),
        results: &rows,
    };
    if args.common.json {
        super::print_json_with_settings(&report)?;
    } else {
        print(&report);
    }
    Ok(if report.failing + report.broken == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}

/// `pass`/`fail` as a probe ended, `-` when it did not run.
fn shown(p: Option<&Probe>) -> &'static str {
    match p {
        None => "-",
        Some(p) if p.status == "not run" => "-",
        Some(p) if p.passed => "pass",
        Some(_) => "fail",
    }
}

fn print(r: &Report) {
    let width = r.results.iter().map(|x| x.case.len()).max().unwrap_or(4);
    println!(
        "{:width$}  {:7} {:10} {:12} {:5} {:5}  verdict",
        "case", "oracle", "do-nothing", "empty-answer", "same", "leaks"
    );
    for row in r.results {
        let v = row.validated.as_ref();
        let same = match v {
            Some(v) if v.deterministic => "yes",
            Some(_) => "NO",
            None => "-",
        };
        println!(
            "{:width$}  {:7} {:10} {:12} {:5} {:5}  {}",
            worldline_case::shown::message(&row.case),
            shown(v.and_then(|v| v.oracle.as_ref())),
            shown(v.map(|v| &v.do_nothing)),
            shown(v.map(|v| &v.empty_answer)),
            same,
            v.map_or("-".to_string(), |v| v.leaks.len().to_string()),
            row.verdict
        );
    }
    let failing: Vec<&Row> = r.results.iter().filter(|x| x.verdict != "ok").collect();
    if !failing.is_empty() {
        println!("\nfailing cases:");
        for row in failing {
            println!(
                "  {} ({})",
                worldline_case::shown::message(&row.case),
                row.path
            );
            if let Some(e) = &row.error {
                println!("    {}", worldline_case::shown::message(e));
            }
            for p in row.validated.iter().flat_map(|v| &v.problems) {
                println!("    {}", worldline_case::shown::message(p));
            }
        }
    }
    // Each note once, with the cases it applies to.
    let mut notes: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for row in r.results {
        for n in row.validated.iter().flat_map(|v| &v.notes) {
            notes.entry(n).or_default().push(&row.case);
        }
    }
    if !notes.is_empty() {
        println!("\nnot fully validated:");
        for (note, cases) in notes {
            println!("  {note} ({} cases):", cases.len());
            println!("    {}", worldline_case::shown::message(&cases.join(", ")));
        }
    }
    println!(
        "\nvalidate: {} cases, {} ok, {} failing, {} broken",
        r.cases, r.ok, r.failing, r.broken
    );
}
