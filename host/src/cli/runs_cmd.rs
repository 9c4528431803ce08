//! `worldline runs` (the store's runs from the index, filtered, newest
//! first) and `worldline index` (rebuild or check the index).

use super::Common;
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use std::cell::RefCell;
use std::collections::BTreeSet;
use worldline_case::error::InputError;
use worldline_report::runs::Listing;
use worldline_store::index::Index;
use worldline_store::index::query::{Filter, parse_time, status_words};
use worldline_store::index::row::Row;
use worldline_store::store::StoreDir;

#[derive(Args)]
pub struct RunsArgs {
    /// The outcome (passed, failed), `faulted` for any agent fault, or how
    /// the run ended (`incomplete`: no footer, `broken`: an unreadable
    /// bundle); repeat or separate with commas.
    #[arg(long, value_delimiter = ',',
          value_parser = clap::builder::PossibleValuesParser::new(status_words()))]
    pub status: Vec<String>,
    /// The grade: passed, failed, or none (not graded).
    #[arg(long, value_parser = ["passed", "failed", "none"])]
    pub grade: Option<String>,
    /// Case name (`*` and `?` are wildcards).
    #[arg(long)]
    pub case: Option<String>,
    /// World reference, e.g. `incident@v4` (wildcards as for --case).
    #[arg(long)]
    pub world: Option<String>,
    /// A prefix of the agent's SHA-256.
    #[arg(long)]
    pub agent: Option<String>,
    /// Text the first failure's signature contains, e.g. `deploys/D-42`.
    #[arg(long)]
    pub signature: Option<String>,
    /// Created at or after: 2026-11-20, 2026-11-20T08:00:00Z, or an age (7d, 12h, 30m).
    #[arg(long, value_parser = time_arg)]
    pub since: Option<i64>,
    /// Created before (same forms as --since).
    #[arg(long, value_parser = time_arg)]
    pub until: Option<i64>,
    /// Forks of this run (id or unique prefix; a whole id the store does
    /// not hold names the forks that name it).
    #[arg(long)]
    pub parent: Option<String>,
    /// At most this many runs (the newest).
    #[arg(long)]
    pub limit: Option<u64>,
    /// Runs whose writer's user, host, CI job or job index contains this
    /// (a database store records who wrote each run).
    #[arg(long)]
    pub writer: Option<String>,
    #[command(flatten)]
    pub redaction: super::redact_opts::RedactArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct IndexArgs {
    /// Read every bundle again and rewrite the index.
    #[arg(long, conflicts_with = "check")]
    pub rebuild: bool,
    /// Compare the index with the bundles without repairing it; exit 1
    /// when they differ.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub common: Common,
}

/// Real time now, in Unix seconds (for ages; it only selects what is shown).
pub fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `--since`/`--until`, parsed (Unix seconds): a usage error names the
/// flag, not the store.
fn time_arg(text: &str) -> Result<i64, String> {
    parse_time(text, now_s())
}

/// Whether `id` is a whole run id as a store makes them,
/// `YYYYMMDD-HHMMSS-xxxxxxxx` (and a redacted copy's `-redacted` after it),
/// not a prefix of one.
fn whole_run_id(id: &str) -> bool {
    worldline_store::store::is_run_id(id)
        && worldline_store::index::row::created_of_id(id).is_some()
        && id.len() >= "YYYYMMDD-HHMMSS-xxxxxxxx".len()
}

/// The case name `--case C` matches: a name as `test` shows it
/// (`incident/close-denied`) or the file's path is read as its last part
/// without `.toml`, said on stderr. A folder with nothing but wildcards
/// after it (`incident/*`) is refused: it would list every run, as a
/// run knows its case's file name, not its folder.
fn case_name(c: &str) -> Result<String> {
    let name = c.rsplit_once('/').map_or(c, |(_, name)| name);
    let stem = name.strip_suffix(".toml").unwrap_or(name);
    if stem == c {
        return Ok(stem.to_string());
    }
    if stem.chars().all(|ch| ch == '*' || ch == '?') {
        return Err(InputError::new(
            "--case",
            format!(
                "{c}: a run knows its case by the file's name, not its folder, so this would list every run; give a name or a pattern of names (`close-*`)"
            ),
        )
        .into());
    }
    eprintln!(
        "note: --case {c}: a run knows its case by the file's name without `.toml`, `{stem}`; runs of any case so named are listed"
    );
    Ok(stem.to_string())
}

fn filter_of(args: &RunsArgs, store: &StoreDir) -> Result<Filter> {
    if args.limit == Some(0) {
        // As `test --limit 0` is: a listing of nothing asked for is a
        // mistake, not an empty store (it printed `[]`, exit 0).
        return Err(InputError::new(
            "--limit",
            "0 lists no run: give at least 1, or leave it out",
        )
        .into());
    }
    // A parent the store does not hold (a fork imported without it) is
    // still named by its forks: a whole run id is taken as it is.
    let parent = match &args.parent {
        Some(p) => match store.resolve_run(p) {
            Ok(path) => Some(run_id_of(&path)),
            Err(_) if whole_run_id(p) => Some(p.clone()),
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    // `test` names a case by its path under the suite's folder
    // (`incident/close-denied`); a run knows its case by the file's stem,
    // so a name copied from `test`, or the file's path, found nothing.
    let case = match args.case.as_deref() {
        Some(c) => Some(case_name(c)?),
        None => None,
    };
    Ok(Filter {
        status: args.status.clone(),
        grade: args.grade.clone(),
        case,
        world: args.world.as_deref().map(world_filter),
        agent: args.agent.clone(),
        signature: args.signature.clone(),
        since: args.since,
        until: args.until,
        parent,
        limit: args.limit,
    })
}

/// `--world NAME` without a version: every version of it, with a note (a
/// run knows its world as `name@vN`, so `accounts` listed nothing, unsaid).
fn world_filter(w: &str) -> String {
    if w.contains(['@', '*', '?', '[']) {
        return w.to_string();
    }
    eprintln!(
        "note: --world {w}: a run knows its world as `{w}@vN`; runs of every version of `{w}` are listed (`--world {w}@v1` for one)"
    );
    format!("{w}@*")
}

/// The run id a bundle path names.
pub fn run_id_of(path: &std::path::Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

pub fn exec_runs(args: RunsArgs) -> Result<ExitCode> {
    let store = StoreDir::open_existing(&args.common.store)?;
    let mut filter = filter_of(&args, &store)?;
    let written_by = match (&args.writer, store.database()) {
        (None, _) => None,
        (Some(w), Some(db)) => Some(
            db.runs_written_by(w)
                .map_err(worldline_store::store::db_error)?,
        ),
        (Some(_), None) => {
            return Err(InputError::new(
                &store.root,
                "--writer: a folder store records no writers (one machine writes it); it filters a postgres:// store",
            )
            .into());
        }
    };
    // Signatures and case names through the view's policy, as `history`
    // and the UI show them (a folder store's redact.toml, a database
    // store's for a responder; a viewer's rows come from the redacted
    // copies), and matched as shown: a filter must not tell whether a
    // hidden value is there.
    let redactor = args.redaction.redactor(&store, "runs", &[])?;
    let (signature, case) = match redactor {
        Some(_) => (filter.signature.take(), filter.case.take()),
        None => (None, None),
    };
    // The index applies the filters it holds; the writer and signature
    // filters and the limit after them are applied here, a row at a time.
    let limit = filter.limit.take().unwrap_or(u64::MAX);
    let pinned = worldline_store::retention::pins::list(&store)?;
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    // The table's cells are a run's names (its case's, from a file name):
    // no control character of theirs reaches the terminal. JSON escapes
    // its own.
    let out: Box<dyn std::io::Write> = match args.common.json {
        true => Box::new(out),
        false => Box::new(worldline_case::shown::Escaped::new(out)),
    };
    let listing = Listing::new(out, args.common.json);
    let lister = RefCell::new(Lister {
        listing,
        pinned,
        database: store.database().filter(|_| args.common.json),
        pending: Vec::new(),
    });
    let keep = |r: &Row| {
        written_by
            .as_ref()
            .is_none_or(|ids| ids.contains(&r.run_id))
            && signature
                .as_ref()
                .is_none_or(|s| r.signature.as_ref().is_some_and(|x| x.contains(s.as_str())))
            && (case.as_ref()).is_none_or(|c| worldline_case::world::glob_match(c, &r.case))
    };
    let redactor = RefCell::new(redactor);
    let learnt = RefCell::new(BTreeSet::new());
    // The listing's own write failed (a full stdout), not the index.
    let unwritten = std::cell::Cell::new(false);
    let (_, sync) = Index::read(&store, |index| {
        let mut lister = lister.borrow_mut();
        lister.pending.clear();
        let read = index.each(&filter, |mut row| {
            if lister.listed() >= limit {
                return Ok(false);
            }
            if let Some(r) = redactor.borrow_mut().as_mut() {
                let signature = row.signature.take();
                row.signature =
                    store.shown_signature(r, &row.run_id, signature, &mut learnt.borrow_mut());
                row.case = r.repeated(std::mem::take(&mut row.case));
            }
            if keep(&row) {
                lister.take(row).inspect_err(|_| unwritten.set(true))?;
            }
            Ok(true)
        });
        match read {
            Err(e) if unwritten.get() => Err(e.context("writing the list of runs")),
            // Rows are out: listing them again after a rebuild would repeat them.
            Err(e) if lister.listing.written() > 0 => Err(anyhow::anyhow!(
                "the run index failed after {} runs were listed ({e:#}); run `worldline index --rebuild` and list again",
                lister.listing.written()
            )),
            other => other,
        }
    })?;
    worldline_report::runs::note_rebuilt(&mut std::io::stderr(), &sync)?;
    let mut lister = lister.into_inner();
    lister.flush()?;
    lister.listing.finish()?;
    Ok(ExitCode::Ok)
}

/// The rows of `runs` on their way out; on a database store's `--json`,
/// a batch at a time, to ask the database who wrote them.
struct Lister<'s, W: std::io::Write> {
    listing: Listing<W>,
    pinned: BTreeSet<String>,
    database: Option<&'s worldline_pgstore::Database>,
    pending: Vec<Row>,
}

/// Rows a database is asked about at once.
const BATCH: usize = 256;

impl<W: std::io::Write> Lister<'_, W> {
    fn listed(&self) -> u64 {
        self.listing.written() + self.pending.len() as u64
    }

    fn take(&mut self, row: Row) -> Result<()> {
        match self.database {
            None => {
                let pinned = self.pinned.contains(&row.run_id);
                self.listing.row(&row, pinned, None)?;
            }
            Some(_) => {
                self.pending.push(row);
                if self.pending.len() >= BATCH {
                    self.flush()?;
                }
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let Some(db) = self.database else {
            return Ok(());
        };
        let ids: Vec<String> = self.pending.iter().map(|r| r.run_id.clone()).collect();
        let writers = db
            .writers_of(&ids)
            .map_err(worldline_store::store::db_error)?;
        for row in std::mem::take(&mut self.pending) {
            let writer = Some(serde_json::json!(writers.get(&row.run_id)));
            let pinned = self.pinned.contains(&row.run_id);
            self.listing.row(&row, pinned, writer)?;
        }
        Ok(())
    }
}

pub fn exec_index(args: IndexArgs) -> Result<ExitCode> {
    let store = StoreDir::open_existing(&args.common.store)?;
    if args.check {
        store.pull()?;
        let check = Index::check_on_disk(&store)?;
        if args.common.json {
            super::print_json(&check)?;
        } else {
            worldline_report::runs::write_check(&mut std::io::stdout().lock(), &check)?;
        }
        return Ok(if check.consistent() {
            ExitCode::Ok
        } else {
            ExitCode::Failed
        });
    }
    let what = "`index` (it brings the run index on disk up to date)";
    store.needs_writing(what)?;
    worldline_store::index::needs_writing(&store, what)?;
    let (rows, sync) = if args.rebuild {
        let (index, sync) = Index::rebuild(&store)?;
        (index.query(&Filter::default())?.len(), sync)
    } else {
        // Every bundle's size compared with its row as well: a bundle
        // changed in place leaves the folder's time as it was.
        let (mut index, mut sync) = Index::open(&store)?;
        sync.read += index.refresh_changed()?;
        (index.query(&Filter::default())?.len(), sync)
    };
    if args.common.json {
        super::print_json(&worldline_report::runs::IndexSummary { rows, sync: &sync })?;
    } else {
        worldline_report::runs::write_index(&mut std::io::stdout().lock(), rows, &sync)?;
    }
    Ok(ExitCode::Ok)
}
