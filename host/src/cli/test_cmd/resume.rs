//! `worldline test CASES --resume`: every incomplete run in the store (no
//! footer: killed) of a selected case, not resumed yet, resumed as
//! `worldline resume` would (decision 0343), one line (or JSON entry) each.
//! A run of a case is one whose recorded case has the case file's hash; a
//! run already resumed is one with a fork at the end of its recording.

use crate::cli::exit::ExitCode;
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;
use worldline_engine::fork;
use worldline_engine::grade::verdict;
use worldline_engine::replay;
use worldline_engine::suite::Entry;
use worldline_log::log::intent::Intent;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::index::{Index, query::Filter};
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
    let cases: BTreeMap<&str, &str> = entries
        .iter()
        .map(|e| (e.case.hash.as_str(), e.name.as_str()))
        .collect();
    let filter = Filter {
        status: vec!["incomplete".into()],
        ..Filter::default()
    };
    let ((incomplete, children), _) = Index::read(store, |ix| {
        let rows = ix.query(&filter)?;
        let mut children = Vec::new();
        for r in &rows {
            let forks = Filter {
                parent: Some(r.run_id.clone()),
                ..Filter::default()
            };
            children.push(ix.query(&forks)?);
        }
        Ok((rows, children))
    })?;
    // Oldest first, so a suite's runs resume in the order they ran.
    let mut todo: Vec<(&str, &worldline_store::index::row::Row)> = incomplete
        .iter()
        .zip(&children)
        .filter(|(r, forks)| !forks.iter().any(|f| f.fork_event == Some(r.events)))
        .filter_map(|(r, _)| Some((*cases.get(r.case_hash.as_str())?, r)))
        .collect();
    todo.sort_by(|a, b| (a.1.created, &a.1.run_id).cmp(&(b.1.created, &b.1.run_id)));
    let ids: Vec<&str> = todo.iter().map(|(_, r)| r.run_id.as_str()).collect();
    store.audit_reexecution(&ids, "test --resume")?;
    let sandbox = Sandbox::new(Some(store.cache_dir()))?.on_compile(super::super::compile_notice());
    let mut done = Vec::new();
    let mut code = ExitCode::Ok;
    for (case, row) in todo {
        let mut entry = Resumed {
            case: case.to_string(),
            run: row.run_id.clone(),
            event: row.events,
            run_id: None,
            status: None,
            final_state_hash: None,
            in_flight: None,
            error: None,
        };
        let resumed = replay::open(store, &row.run_id).and_then(|rec| {
            let outcome = fork::resume(&sandbox, store, &rec, &BTreeMap::new(), false)?;
            Ok((rec.bundle.in_flight, outcome))
        });
        match resumed {
            Ok((in_flight, o)) => {
                let exit = crate::cli::exit::exit_code(o.footer.status, o.grade.as_ref());
                if exit != ExitCode::Ok && code == ExitCode::Ok {
                    code = ExitCode::Failed;
                }
                entry.run_id = o.run_id.clone();
                entry.status = Some(verdict::shown_status(o.footer.status, o.grade.as_ref()));
                entry.final_state_hash = Some(o.footer.final_state_hash.clone());
                entry.in_flight = in_flight;
            }
            Err(e) => {
                code = ExitCode::Input;
                entry.error = Some(format!("{e:#}"));
            }
        }
        if !json {
            match (&entry.run_id, &entry.error) {
                (Some(id), _) => println!(
                    "{}  {} resumed at event {} as {id}: {}",
                    entry.case,
                    entry.run,
                    entry.event,
                    entry.status.unwrap_or("?")
                ),
                (None, error) => println!(
                    "{}  {} not resumed: {}",
                    entry.case,
                    entry.run,
                    error.as_deref().unwrap_or("?")
                ),
            }
        }
        done.push(entry);
    }
    if json {
        crate::cli::print_json(&serde_json::json!({ "resumed": done }))?;
    } else {
        let resumed = done.iter().filter(|d| d.run_id.is_some()).count();
        println!(
            "{resumed} of {} incomplete run(s) of the selected cases resumed",
            done.len()
        );
    }
    Ok(code)
}
