//! `worldline validate [CASES]`: every case checked without an agent (the
//! gold calls as an oracle pass, doing nothing and answering "" fail, the
//! grade is the same twice, no expected answer is shown to the agent);
//! exit 1 with a table of the cases that fail, 2 when a case does not load.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use worldline_case::case::{self, discover};
use worldline_case::error::InputError;
use worldline_engine::validate;
use worldline_report::validate::{Report, Row};
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct ValidateArgs {
    /// Case files, or folders searched for `*.toml` cases (default: `cases`
    /// in worldline.toml).
    pub cases: Vec<PathBuf>,
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above each case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    /// Cases validated at once (default: the number of cores).
    #[arg(long, value_parser = super::jobs_arg)]
    pub jobs: Option<usize>,
    /// Validate only the cases this expression selects, as `test -k` reads
    /// it: words match part of the case name (without regard to case);
    /// `tag:T`, `world:W`, `path:P`, `name:N` take `*` globs; combine with
    /// `and`, `or`, `not` and parentheses.
    #[arg(long, short = 'k', value_name = "EXPR")]
    pub filter: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

/// The case files of `paths` that `filter` selects, as `test -k` selects
/// them (read from each file's header and world.toml), with those whose
/// header does not read (their error is the report's); a filter that
/// selects none is a usage error naming near names.
fn selected(
    paths: Vec<PathBuf>,
    filter: &str,
    worlds: Option<&std::path::Path>,
) -> Result<Vec<PathBuf>> {
    use worldline_engine::suite::pick::{self, Selection};
    let selection = Selection {
        filter: Some(pick::filter(filter)?),
        ..Selection::default()
    };
    let s = pick::pick(paths.clone(), &selection, |path| {
        let h = case::header(path, worlds)?;
        Ok((Ok(()), h.world, h.tags))
    })?;
    let keep: std::collections::BTreeSet<&std::path::Path> = (s.entries.iter())
        .map(|e| e.path.as_path())
        .chain(s.broken.iter().map(|e| e.file.as_path()))
        .collect();
    Ok(paths
        .iter()
        .filter(|p| keep.contains(p.as_path()))
        .cloned()
        .collect())
}

/// Load the service of each world the cases use, once, before the cases
/// are validated on many threads: each thread that found a service not
/// yet compiled compiled it for itself (a 28 MB Python service, 54 s,
/// once per job). A service that does not load is left to each case's
/// validation to report, as before.
fn load_services(sandbox: &Sandbox, cases: &[Result<case::Case, InputError>]) {
    let services: std::collections::BTreeMap<&str, &worldline_case::world::service::ServiceSource> =
        (cases.iter())
            .flatten()
            .filter_map(|c| c.world.service.as_ref())
            .map(|s| (s.sha256.as_str(), s))
            .collect();
    for source in services.into_values() {
        let _ = sandbox.service(source);
    }
}

pub fn exec(mut args: ValidateArgs) -> Result<ExitCode> {
    if args.cases.is_empty() {
        match super::project_args::project() {
            Some(p) if !p.cases.is_empty() => {
                if let Some(err) = p.missing_case() {
                    return Err(err.into());
                }
                args.cases = p.cases.clone()
            }
            p => {
                return Err(p
                    .and_then(|p| p.empty_cases())
                    .unwrap_or_else(|| {
                        InputError::new(
                            "validate",
                            "no cases given: name case files or folders, or set `cases` in worldline.toml",
                        )
                    })
                    .into());
            }
        }
    }
    let mut paths = discover::expand(&args.cases)?;
    if let Some(filter) = &args.filter {
        paths = selected(paths, filter, args.worlds.as_deref())?;
    }
    let store = StoreDir::open(&args.common.store)?;
    let sandbox =
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::compile_notice());
    let jobs = super::jobs(args.jobs);
    let worlds = args.worlds.as_deref();
    let cases = worldline_case::parallel::par_map(paths.len(), jobs, |i| {
        Ok(case::load(&paths[i], worlds))
    })?;
    load_services(&sandbox, &cases);
    let rows = worldline_case::parallel::par_map(paths.len(), jobs, |i| {
        let path = &paths[i];
        let name = discover::display_name(path);
        let loaded = cases[i].as_ref();
        // What `check` notes of the case (a state check on a field no
        // row holds), said with the table: it is why such a case fails.
        let notes = loaded.map_or_else(|_| Vec::new(), worldline_case::check::unheld_fields);
        let result = match loaded {
            Ok(c) => validate::validate(&sandbox, c),
            Err(e) => Err(anyhow::Error::from(e.clone())),
        };
        let path = path.display().to_string();
        Ok(match result {
            Ok(v) => (Row::validated(name, path, v), notes),
            Err(e) if crate::cli::exit::exit_code_of(&e) == ExitCode::Input => {
                (Row::broken(name, path, format!("{e:#}")), notes)
            }
            Err(e) => return Err(e),
        })
    })?;
    let (rows, notes): (Vec<Row>, Vec<Vec<String>>) = rows.into_iter().unzip();
    for note in notes.iter().flatten() {
        eprintln!("note: {note}");
    }
    let report = Report::of(&rows);
    if args.common.json {
        super::print_json_with_settings(&report)?;
    } else {
        worldline_report::validate::write(&mut super::human_out(), &report)?;
    }
    Ok(if report.passed() {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
