//! `worldline export RUN -o FILE` (a portable run, or with `--format
//! trajectories` the runs as JSON Lines of training data, or with
//! `--format atif` one ATIF document per run, a line each) and
//! `worldline import FILE`.

use super::Common;
use super::redact_opts::RedactArgs;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use worldline_case::error::InputError;
use worldline_engine::export;
use worldline_log::log::bundle;
use worldline_report::trajectory::Trajectory;
use worldline_store::store::StoreDir;

/// What `export` writes.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One run and every object it needs, for `import` elsewhere.
    Worldline,
    /// JSON Lines, one run a line: case, seed, task, chat messages with
    /// tool calls and results, verdict, checks and reward.
    Trajectories,
    /// JSON Lines, one ATIF v1.8 trajectory document a line (Harbor's
    /// Agent Trajectory Interchange Format): steps, tool calls and
    /// results, token ids where recorded, verdict and reward.
    Atif,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Run id (or a unique prefix), or a bundle path; with `--format
    /// trajectories`, one or more.
    #[arg(required = true)]
    pub run: Vec<String>,
    /// The file to write.
    #[arg(short, long)]
    pub output: PathBuf,
    #[arg(long, value_enum, default_value = "worldline")]
    pub format: Format,
    /// Export a redacted copy (the store's redact.toml, or --redact FILE),
    /// labelled as such, with the agent but not the case and world.
    #[arg(long)]
    pub redacted: bool,
    #[command(flatten)]
    pub redaction: RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct ImportArgs {
    /// Files written by `worldline export`, or other stores (folders) whose
    /// runs to gather, e.g. the stores of a suite's shards.
    #[arg(required = true)]
    pub from: Vec<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

pub fn exec_export(args: ExportArgs) -> Result<ExitCode> {
    // An export is the run whole unless --redacted: `--unredacted` asks for
    // nothing more (alone it said "add --redacted", and with it, that the
    // store's redact.toml was missing).
    if args.redaction.unredacted {
        let m = match args.redacted {
            false => "an export writes the run whole unless --redacted is given: drop --unredacted",
            true => {
                "--redacted asks for a redacted copy and --unredacted for none: give one of them"
            }
        };
        return Err(InputError::new("--unredacted", m).into());
    }
    // A policy given to an export that redacts nothing: it was taken and
    // ignored, and the run's values written as they are.
    if !args.redacted
        && let Some(flag) = args.redaction.redact.as_ref().map(|_| "--redact")
    {
        let m = match args.format {
            Format::Worldline => format!(
                "{flag} is for a redacted copy: add --redacted (without it the run is exported whole)"
            ),
            _ => format!(
                "{flag}: trajectories are written as the run holds them; for a redacted one, export a redacted copy (`export RUN --redacted -o copy.jsonl`), import it, and export its trajectory"
            ),
        };
        return Err(InputError::new(flag, m).into());
    }
    let first = args.run.first().map_or("", String::as_str);
    let store = super::store_of_run(&args.common.store, first)?;
    if args.format != Format::Worldline {
        if args.redacted {
            return Err(InputError::new(
                &args.output,
                "--redacted exports a portable run; trajectories of a redacted copy: export it, import it, and export its trajectory",
            )
            .into());
        }
        return export_trajectories(&store, &args);
    }
    if args.output.as_os_str() == "-" {
        return Err(InputError::new(
            "-o",
            "a portable export is a bundle file to import: name one (`-o run.jsonl`); `-o -` writes the lines of --format trajectories or atif to stdout",
        )
        .into());
    }
    let [run] = args.run.as_slice() else {
        return Err(InputError::new(
            &args.output,
            format!(
                "a portable export holds one run ({} given); export each to its own file, or use --format trajectories",
                args.run.len()
            ),
        )
        .into());
    };
    // A bundle named by a path carries its file's name as its id: one
    // `import` refuses (a space in it) is refused here, before writing.
    let named = super::redact_opts::id_of(&store.resolve_run(run)?);
    if !worldline_store::store::is_run_id(&named) {
        return Err(InputError::new(
            run,
            format!(
                "`{named}` (the bundle's file name) is not a run id (letters, digits, `-` and `_`), so `import` would refuse the export; give the file its run's id as its name and export it again"
            ),
        )
        .into());
    }
    if worldline_engine::export::dated_after_today(&named) {
        return Err(InputError::new(
            run,
            format!(
                "`{named}` (the bundle's file name) is dated after today, so `import` would refuse the export (a run id is when its run was made); give the file its run's id as its name and export it again"
            ),
        )
        .into());
    }
    let viewer = store.role() == Some(worldline_pgstore::roles::Role::Viewer);
    let mut redactor = if args.redacted && viewer {
        // A viewer's runs are the store's redacted copies already.
        None
    } else if args.redacted {
        let id = super::redact_opts::id_of(&store.resolve_run(run)?);
        let r = args
            .redaction
            .redactor(&store, "export --redacted", &[&id])?;
        if r.is_none() && store.database().is_none() {
            return Err(InputError::new(
                store.root.join(worldline_log::redact::FILE),
                "--redacted needs a redaction policy: write this file or pass --redact FILE",
            )
            .into());
        }
        r
    } else {
        if store.role() == Some(worldline_pgstore::roles::Role::Responder) {
            let id = super::redact_opts::id_of(&store.resolve_run(run)?);
            store.audit_raw(None, &[&id], "export")?;
        }
        None
    };
    // A viewer's export is a redacted copy with or without --redacted.
    let (id, redacted) = export::export(&store, run, &args.output, redactor.as_mut())?;
    if args.common.json {
        out!(
            "{}",
            json!({"run_id": id, "file": args.output.display().to_string(), "redacted": redacted})
        )?;
    } else if redacted {
        out!("exported a redacted copy {id} to {}", args.output.display())?;
    } else {
        out!("exported {id} to {}", args.output.display())?;
    }
    Ok(ExitCode::Ok)
}

/// Each run's header and whether it passed (a group member's verdict;
/// a run of no group reads as not passed), for grouping.
fn members(paths: &[(String, PathBuf)]) -> Result<Vec<worldline_report::trajectory::Member>> {
    let mut members = Vec::new();
    for (id, path) in paths {
        let header = bundle::read_header(path).map_err(InputError::from)?;
        let passed = match header.group {
            Some(_) => {
                // The footer alone (read from the end), not the events.
                let b = worldline_log::log::prefix::read_held(path, 0).map_err(InputError::from)?;
                b.footer.as_ref().and_then(bundle::Footer::verdict) == Some("passed")
            }
            None => false,
        };
        members.push(worldline_report::trajectory::Member {
            run: id.clone(),
            header,
            passed,
        });
    }
    Ok(members)
}

/// The task from the recorded case file (null when it was collected).
/// Only `task` is read: a seed past 2^63 − 1, which a case may give as a
/// bare integer, is no value of a whole TOML table.
fn task_of(store: &StoreDir, case_hash: &str) -> serde_json::Value {
    #[derive(serde::Deserialize)]
    struct Task {
        task: Option<toml::Value>,
    }
    store
        .get_object(case_hash)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| toml::from_str::<Task>(&text).ok())
        .and_then(|t| serde_json::to_value(t.task?).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// The tools of the recorded world `world_hash` as ATIF lists them
/// (none when the store cannot give the world back).
fn world_tools(store: &StoreDir, world_hash: &str) -> Vec<serde_json::Value> {
    let Ok(world) = store.load_world(world_hash) else {
        return Vec::new();
    };
    (world.tools.iter())
        .map(|t| worldline_report::atif::tool_definition(&t.name, &t.description, &t.params))
        .collect()
}

/// `export --format trajectories` or `atif`: a JSON line per run, in the
/// order given; group members with their group (over the members given).
/// One bundle is in memory at a time: the groups are counted first, from
/// the headers and, for members of a group, the verdicts; each line is
/// written as it is made, to a file that takes its name once whole.
fn export_trajectories(store: &StoreDir, args: &ExportArgs) -> Result<ExitCode> {
    // `-o -`: the lines go to stdout (and what was exported to stderr).
    let to_stdout = args.output.as_os_str() == "-";
    if !to_stdout {
        worldline_case::output::check_file(&args.output)?;
    }
    let name = match args.format {
        Format::Atif => "atif",
        _ => "trajectories",
    };
    let mut paths = Vec::new();
    for run in &args.run {
        let path = store.resolve_run(run)?;
        if store.role() == Some(worldline_pgstore::roles::Role::Responder) {
            let id = super::redact_opts::id_of(&path);
            store.audit_raw(None, &[&id], &format!("export --format {name}"))?;
        }
        let id = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        // A run named twice (by its id and a prefix) is one trajectory:
        // its group's figures counted it twice (7 members of 6).
        if !paths.iter().any(|(_, p)| *p == path) {
            paths.push((id, path));
        }
    }
    let members = members(&paths)?;
    let groups = worldline_report::trajectory::groups(&members);
    let mut ids = Vec::new();
    // Each world's tools, loaded once, for the runs whose agent listed none.
    let mut tools: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
    let fill = |out: &mut dyn std::io::Write| -> anyhow::Result<()> {
        for ((id, path), group) in paths.into_iter().zip(groups) {
            let mut b = bundle::read_held(&path).map_err(InputError::from)?;
            // A viewer's run is a redacted copy: its trajectory goes under
            // the copy's id, as its portable export does (it went under the
            // run's own, beside the unredacted run's trajectory).
            let id = worldline_engine::export::copy_id(id, &b.header);
            let task = task_of(store, &b.header.case_hash);
            let line = match args.format {
                Format::Atif => {
                    let world_tools = |world: &str| {
                        let listed = (tools.entry(world.to_string()))
                            .or_insert_with_key(|w| world_tools(store, w));
                        listed.clone()
                    };
                    let mut doc = worldline_report::atif::document(&id, &mut b, &task, world_tools);
                    if let Some(g) = group {
                        doc["extra"]["group"] = g;
                    }
                    doc
                }
                _ => {
                    let mut t = Trajectory::of(&id, &mut b, task);
                    t.group = group;
                    serde_json::to_value(t)?
                }
            };
            serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::from)?;
            out.write_all(b"\n")?;
            ids.push(id);
        }
        Ok(())
    };
    if to_stdout {
        let mut out = std::io::stdout().lock();
        fill(&mut out)?;
        out.flush()?;
    } else {
        worldline_case::output::write_with(&args.output, fill)?;
    }
    let file = match to_stdout {
        true => "stdout".to_string(),
        false => args.output.display().to_string(),
    };
    let said = match args.common.json {
        true => json!({"runs": ids, "file": file, "format": name}).to_string(),
        false => {
            let kind = if name == "atif" { "ATIF " } else { "" };
            let noun = if ids.len() == 1 {
                "trajectory"
            } else {
                "trajectories"
            };
            format!("exported {} {kind}{noun} to {file}", ids.len())
        }
    };
    match to_stdout {
        true => eprintln!("{said}"),
        false => out!("{said}")?,
    }
    Ok(ExitCode::Ok)
}

pub fn exec_import(args: ImportArgs) -> Result<ExitCode> {
    // Nothing to import makes no store.
    let database =
        |p: &std::path::Path| p.to_str().is_some_and(worldline_pgstore::url::is_postgres);
    if let Some(gone) = (args.from.iter()).find(|f| !database(f) && f.symlink_metadata().is_err()) {
        let m = "no such file or folder: pass a file written by `worldline export`, or a store";
        return Err(InputError::new(gone, m).into());
    }
    // A folder is read as a store, never made one: a project's folder or
    // a shard's (`shard-1/` for `shard-1/.worldline`) named by mistake
    // got runs/, objects/ and cache/ written into it.
    if let Some(folder) = (args.from.iter()).find(|f| f.is_dir() && !f.join("runs").is_dir()) {
        let inside = folder.join(".worldline");
        let m = if inside.join("runs").is_dir() {
            format!(
                "is not a store (it has no runs/ folder); the store in it is {}: import that",
                inside.display()
            )
        } else {
            "is not a store (it has no runs/ folder): pass a store's folder (the one holding runs/) or a file written by `worldline export`".to_string()
        };
        return Err(InputError::new(folder, m).into());
    }
    // One export file is read before the store is opened: one refused
    // makes no store.
    let is_store = |from: &std::path::Path| {
        from.is_dir()
            || from
                .to_str()
                .is_some_and(worldline_pgstore::url::is_postgres)
    };
    let mut one = match args.from.as_slice() {
        [file] if !is_store(file) => Some(export::read(file)?),
        _ => None,
    };
    let store = StoreDir::open(&args.common.store)?;
    store.needs_writing("`import`")?;
    store.require_raw("storing runs (`import`)")?;
    let mut imported = Vec::new();
    let mut skipped = Vec::new();
    // Another store: a folder, or a database store's address.
    for from in &args.from {
        if is_store(from) {
            let given = worldline_store::store::GivenIn::argument("FROM");
            let other = StoreDir::open_source(from, &given)?;
            if other.root.canonicalize().ok() == store.root.canonicalize().ok() {
                return Err(InputError::new(from, "is the store being imported into").into());
            }
            let (done, left) = export::import_store(&store, &other)?;
            imported.extend(done);
            skipped.extend(left);
        } else if args.from.len() > 1 {
            match export::import_among(&store, from)? {
                Ok(i) => imported.push(i),
                Err(s) => skipped.push(s),
            }
        } else if let Some(read) = one.take() {
            imported.push(export::import_read(&store, read, from)?);
        }
    }
    if args.common.json {
        // `redacted`: false for a run (it was null, where `export --json`
        // says false), what it is a copy of for a redacted copy.
        let one = |i: &export::Imported| {
            json!({
                "run_id": i.run_id,
                "bundle": store.bundle_path(&i.run_id).display().to_string(),
                "redacted": i.redacted.as_ref().map_or(json!(false), |r| json!(r)),
                "new": i.new,
            })
        };
        match (args.from.as_slice(), imported.as_slice()) {
            ([file], [i]) if !is_store(file) => out!("{}", one(i))?,
            _ => out!(
                "{}",
                json!({
                    "imported": imported.iter().map(one).collect::<Vec<_>>(),
                    "skipped": skipped,
                })
            )?,
        }
    } else {
        let name = store.name();
        worldline_report::import::write(
            &mut super::human_out(),
            &mut std::io::stderr().lock(),
            &worldline_report::import::Imports {
                store: &name,
                imported: &imported,
                skipped: &skipped,
                totals: args.from.len() > 1 || args.from.iter().any(|f| is_store(f)),
            },
        )?;
    }
    Ok(if skipped.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Failed
    })
}
