//! `worldline check [PATHS]`: validate cases, worlds, fault profiles and
//! the project file without running anything; exit 2 listing every
//! problem with its file, line and column.

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use worldline_case::check::Kind;
use worldline_report::check::{self, CheckSummary};

#[derive(Args)]
pub struct CheckArgs {
    /// Files, or folders searched for `.toml` files (default: the folder
    /// of worldline.toml, else the working folder).
    pub paths: Vec<PathBuf>,
    /// Folder holding the worlds (default: `worlds` in worldline.toml, else
    /// the nearest `worlds/` above each case).
    #[arg(long)]
    pub worlds: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec(args: CheckArgs) -> Result<ExitCode> {
    let paths = match args.paths.is_empty() {
        false => args.paths.clone(),
        true => {
            // The project file is found even when it cannot be loaded, so
            // that its own problems are listed.
            let here = std::env::current_dir()?;
            let root = worldline_case::project::find(&here)
                .and_then(|f| f.parent().map(PathBuf::from))
                .filter(|root| *root != here);
            // Shown as `./cases/...` when the project is here.
            let root = root.unwrap_or_else(|| PathBuf::from("."));
            // And the project's `cases` outside its folder, which `test`
            // runs (`cases = ["../shared"]` was not checked at all); one
            // that is not there is the project file's problem, at its line
            // (it was said a second time, as a path named here).
            let outside = (super::project_args::project().into_iter()).flat_map(|p| {
                (p.cases.iter())
                    .filter(|c| !p.holds(c) && c.symlink_metadata().is_ok())
                    .cloned()
                    .collect::<Vec<_>>()
            });
            std::iter::once(root).chain(outside).collect()
        }
    };
    // A project file that did not load still names its worlds, when its
    // `worlds` key reads: its cases are checked against them, not each
    // told that no worlds were found.
    let refused = super::project_args::refused();
    let worlds = (args.worlds.clone()).or_else(|| refused.and_then(|e| worlds_of(&e.file)));
    // What `test` collects: the paths named, else the project's `cases`
    // (inside its folder too: a misspelt case outside it passed `check`
    // and stopped `test`).
    let collected = match args.paths.is_empty() {
        false => args.paths.clone(),
        true => (super::project_args::project().into_iter())
            .flat_map(|p| p.cases.iter().cloned())
            .collect(),
    };
    let mut checked = worldline_case::check::check(&paths, worlds.as_deref(), &collected);
    if let Some(e) = refused {
        checked.add_project_problem(e.clone());
    }
    for e in unfit_services(&checked) {
        checked.add_problem(e);
    }
    checked
        .notes
        .extend(origin_warnings(&checked, worlds.as_deref()));
    if args.common.json {
        super::print_json_with_settings(&CheckSummary::of(&checked))?;
    } else {
        check::write(&mut super::human_out(), &checked)?;
    }
    Ok(if checked.problems.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Input
    })
}

/// The `[service]` components checked that are no world service (not a
/// component, or importing what a service may not), as a run would refuse
/// them before it starts; read, not compiled. One that cannot be read is
/// the world's own problem, already listed.
fn unfit_services(
    checked: &worldline_case::check::Checked,
) -> Vec<worldline_case::error::InputError> {
    (checked.services.iter())
        .filter_map(|file| {
            let bytes =
                worldline_case::bounded::read(file, worldline_case::bounded::COMPONENT).ok()?;
            worldline_runtime::sandbox::unfit_service(&bytes, file).err()
        })
        .collect()
}

/// The `worlds` folder a project file that did not load names, when the
/// file is TOML and the key a string.
fn worlds_of(file: &Path) -> Option<PathBuf> {
    let bytes = worldline_case::project::read_toml_bytes(file).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    worldline_case::toml_tokens::check(file, text).ok()?;
    let doc: toml::Table = toml::from_str(text).ok()?;
    let worlds = doc.get("worlds")?.as_str()?;
    Some(file.parent()?.join(worlds))
}

/// The `[origin]` warnings of the cases that loaded and carry one: a case
/// made from a run whose bundle copy is gone or no longer that run, or
/// whose world changed since.
fn origin_warnings(checked: &worldline_case::check::Checked, worlds: Option<&Path>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, kind) in &checked.files {
        let has_origin = *kind == Kind::Case
            && worldline_case::project::read_toml_bytes(path)
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains("[origin]"));
        if !has_origin || checked.problems.iter().any(|p| p.file == *path) {
            continue;
        }
        if let Ok(case) = worldline_case::case::load(path, worlds) {
            out.extend(
                worldline_engine::regress::origin_warnings(&case)
                    .into_iter()
                    .map(|w| format!("{}: {w}", path.display())),
            );
        }
    }
    out
}
