//! `worldline test CASES --resume`: every incomplete run in the store (no
//! footer: killed) of a selected case, not resumed yet, resumed as
//! `worldline resume` would (decision 0343), one line (or JSON entry) each.
//! A run of a case is one whose recorded case has the case file's hash; a
//! run already resumed is one with a fork at the end of its recording.

use crate::cli::exit::ExitCode;
use anyhow::Result;
use serde::Serialize;
use worldline_engine::grade::verdict;
use worldline_engine::ops::{self, resume::Incomplete};
use worldline_engine::suite::Entry;
use worldline_log::log::intent::Intent;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// One incomplete run and what resuming it gave.
#[derive(Serialize)]
struct Resumed {
    case: String,
    /// The incomplete run.
    run: String,
    /// Where its recording ended (the resumed run went live there).
    event: u64,
    /// The new run, its status (as `run` shows it) and final state, when
    /// it was resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    final_state_hash: Option<String>,
    /// The call the run was killed inside, made again.
    #[serde(skip_serializing_if = "Option::is_none")]
    in_flight: Option<Intent>,
    /// Why it was not resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Resume the incomplete runs of `entries`' cases; exit 2 when one could
/// not be, 1 when a resumed run failed, else 0 (also when none was found).
pub fn exec(store: &StoreDir, entries: &[Entry], json: bool) -> Result<ExitCode> {
    let sandbox =
        Sandbox::new(Some(store.compile_cache_dir()))?.on_compile(super::super::compile_notice());
    let mut done = Vec::new();
    let mut code = ExitCode::Ok;
    ops::resume::resume_suite(&sandbox, store, entries, &mut |i, resumed| {
        let entry = shown(i, resumed, &mut code);
        if !json {
            print_line(&entry)?;
        }
        done.push(entry);
        Ok(())
    })?;
    if json {
        crate::cli::print_json(&serde_json::json!({ "resumed": done }))?;
    } else {
        let resumed = done.iter().filter(|d| d.run_id.is_some()).count();
        out!(
            "{resumed} of {} incomplete run(s) of the selected cases resumed",
            done.len()
        )?;
    }
    Ok(code)
}

/// What resuming one run gave, as shown; `code` worsened by it.
fn shown(i: Incomplete<'_>, resumed: Result<ops::resume::Resumed>, code: &mut ExitCode) -> Resumed {
    let mut entry = Resumed {
        case: i.case.to_string(),
        run: i.row.run_id,
        event: i.row.events,
        run_id: None,
        status: None,
        final_state_hash: None,
        in_flight: None,
        error: None,
    };
    match resumed {
        Ok(ops::resume::Resumed {
            in_flight,
            outcome: o,
        }) => {
            let exit = crate::cli::exit::exit_code(o.footer.status, o.grade.as_ref());
            if exit != ExitCode::Ok && *code == ExitCode::Ok {
                *code = ExitCode::Failed;
            }
            entry.run_id = o.run_id.clone();
            entry.status = Some(verdict::shown_status(o.footer.status, o.grade.as_ref()));
            entry.final_state_hash = Some(o.footer.final_state_hash.clone());
            entry.in_flight = in_flight;
        }
        Err(e) => {
            *code = ExitCode::Input;
            entry.error = Some(format!("{e:#}"));
        }
    }
    entry
}

fn print_line(entry: &Resumed) -> std::io::Result<()> {
    match (&entry.run_id, &entry.error) {
        (Some(id), _) => out!(
            "{}  {} resumed at event {} as {id}: {}",
            entry.case,
            entry.run,
            entry.event,
            entry.status.unwrap_or("?")
        ),
        (None, error) => out!(
            "{}  {} not resumed: {}",
            entry.case,
            entry.run,
            error.as_deref().unwrap_or("?")
        ),
    }
}
