//! `worldline gc` (retention), `worldline pin` and `worldline unpin`.

use super::Common;
use super::runs_cmd::{now_s, run_id_of};
use crate::cli::exit::ExitCode;
use anyhow::Result;
use clap::Args;
use serde_json::json;
use worldline_case::error::InputError;
use worldline_store::retention::policy::Policy;
use worldline_store::retention::{pins, sweep};

#[derive(Args)]
pub struct GcArgs {
    /// Say what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Days to keep passed runs, `7` or `7d` (default: the store's policy's [keep] passed, else 7).
    #[arg(long, value_name = "DAYS", value_parser = days_arg)]
    pub keep_passed: Option<u64>,
    /// Days to keep failed runs (default: the store's policy's [keep] failed, else 90).
    #[arg(long, value_name = "DAYS", value_parser = days_arg)]
    pub keep_failed: Option<u64>,
    /// Days to keep runs the agent faulted in (default: the store's policy's [keep] faulted, else 90).
    #[arg(long, value_name = "DAYS", value_parser = days_arg)]
    pub keep_faulted: Option<u64>,
    /// Days to keep incomplete or unreadable runs (default: the store's policy's [keep] incomplete, else 90).
    #[arg(long, value_name = "DAYS", value_parser = days_arg)]
    pub keep_incomplete: Option<u64>,
    /// Remove compiled agents not used for this many days (default 30).
    #[arg(long, value_name = "DAYS", value_parser = days_arg)]
    pub cache_days: Option<u64>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct PinArgs {
    /// Run id (or a unique prefix).
    pub run: String,
    /// Why it is pinned (kept in the pin; without it, a pinned run's note
    /// stays as it was).
    #[arg(long)]
    pub note: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct UnpinArgs {
    /// Run id (or a unique prefix; a pin of a run already removed by id).
    pub run: String,
    #[command(flatten)]
    pub common: Common,
}

/// A number of days: `7`, or `7d` as `runs --since` writes an age (`gc
/// --keep-passed 7d` said "invalid digit found in string").
fn days_arg(s: &str) -> Result<u64, String> {
    let digits = s.strip_suffix('d').unwrap_or(s);
    digits.parse().map_err(|_| {
        format!("`{s}` is not a number of days: give whole days, as `7` or `7d` (gc keeps runs by the day)")
    })
}

pub fn exec_gc(args: GcArgs) -> Result<ExitCode> {
    let store = super::store_there(&args.common.store)?;
    store.require_raw("`gc` (removing runs)")?;
    store.needs_writing("`gc` (a dry run too: it holds the store's gate while it plans)")?;
    let (mut policy, _) = Policy::of_store(&store)?;
    let set = |v: Option<u64>, into: &mut u64| {
        if let Some(v) = v {
            *into = v;
        }
    };
    set(args.keep_passed, &mut policy.keep.passed);
    set(args.keep_failed, &mut policy.keep.failed);
    set(args.keep_faulted, &mut policy.keep.faulted);
    set(args.keep_incomplete, &mut policy.keep.incomplete);
    set(args.cache_days, &mut policy.cache.unused_days);
    let report = sweep::gc(&store, &policy, now_s(), args.dry_run)?;
    if args.common.json {
        super::print_json(&report)?;
    } else {
        worldline_report::gc::write(&mut super::human_out(), &report)?;
    }
    Ok(ExitCode::Ok)
}

pub fn exec_pin(args: PinArgs) -> Result<ExitCode> {
    let store = super::store_there(&args.common.store)?;
    store.require_raw("`pin`")?;
    store.needs_writing("`pin`")?;
    let id = run_id_of(&store.resolve_run_id(by_id("pin", &args.run)?)?);
    pins::pin(&store, &id, args.note.as_deref())?;
    if args.common.json {
        out!("{}", json!({"run_id": id, "pinned": true}))?;
    } else {
        out!("pinned {id}")?;
    }
    Ok(ExitCode::Ok)
}

/// A run of the store, by its id: a bundle's path elsewhere is no run the
/// store keeps (`pin` pinned one by its file's name; `unpin /etc/passwd`
/// said "passwd was not pinned").
fn by_id<'a>(command: &str, run: &'a str) -> Result<&'a str, InputError> {
    match worldline_store::store::is_run_id(run) {
        true => Ok(run),
        false => Err(InputError::new(
            run,
            format!(
                "{command} names a run of the store by its id (or a unique prefix of it), not a path"
            ),
        )),
    }
}

pub fn exec_unpin(args: UnpinArgs) -> Result<ExitCode> {
    let store = super::store_there(&args.common.store)?;
    store.require_raw("`unpin`")?;
    store.needs_writing("`unpin`")?;
    let id = match store.resolve_run_id(by_id("unpin", &args.run)?) {
        Ok(path) => run_id_of(&path),
        // A pinned run whose bundle is gone is unpinned by its whole id;
        // anything else names no run, as `pin` says.
        Err(_) if pins::list(&store)?.contains(&args.run) => args.run.clone(),
        Err(e) => return Err(e.into()),
    };
    let was = pins::unpin(&store, &id)?;
    if args.common.json {
        out!("{}", json!({"run_id": id, "was_pinned": was}))?;
    } else if was {
        out!("unpinned {id}")?;
    } else {
        out!("{id} was not pinned")?;
    }
    Ok(ExitCode::Ok)
}

#[cfg(test)]
mod tests {
    use super::days_arg;

    /// Days are a number, with or without the `d` of an age; any other
    /// unit or text is refused saying what is taken.
    #[test]
    fn days_are_a_number_with_or_without_d() {
        assert_eq!(days_arg("7"), Ok(7));
        assert_eq!(days_arg("7d"), Ok(7));
        for bad in ["12h", "d", "-1", "seven"] {
            let e = days_arg(bad).unwrap_err();
            assert!(e.contains("give whole days, as `7` or `7d`"), "{bad}: {e}");
        }
    }
}
