//! Resume killed or limit-stopped runs (decision 0343): one the caller
//! opened (`worldline resume`), or every incomplete run of a suite's
//! cases not resumed yet (`worldline test --resume`), each outcome handed
//! to the caller as it comes.

use crate::fork;
use crate::replay::{self, RecordedRun};
use crate::run::RunOutcome;
use crate::suite::Entry;
use anyhow::Result;
use std::collections::BTreeMap;
use worldline_log::log::intent::Intent;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::index::row::Row;
use worldline_store::index::{Index, query::Filter};
use worldline_store::store::StoreDir;

/// Resume `rec` with the limits `raised` (name to new value), making a
/// tool call it was killed inside again only with `resend_in_flight`;
/// the re-execution is audited as `resume`.
pub fn resume(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    raised: &BTreeMap<String, u64>,
    resend_in_flight: bool,
) -> Result<RunOutcome> {
    store.audit_reexecution(&[&rec.id], "resume")?;
    fork::resume(sandbox, store, rec, raised, resend_in_flight)
}

/// The run a resume of `rec` goes on from, and the limits it is given
/// (`raised`, and those `rec` had raised past it): `rec`, or, when `rec`
/// is a resume killed while it still followed its parent's recording
/// (fewer events than the point it resumed at), that parent (and so on
/// up, as far as the store holds them): such a run holds nothing its
/// parent does not, and going live from its own end made the calls its
/// parent recorded after it again (a model's request sent again). With a
/// note saying so.
pub fn from_furthest(
    store: &StoreDir,
    rec: RecordedRun,
    raised: &BTreeMap<String, u64>,
) -> (RecordedRun, BTreeMap<String, u64>, Option<String>) {
    let (mut run, mut limits, mut note) = (rec, raised.clone(), None);
    while run.bundle.footer.is_none() {
        let followed = (run.bundle.header.parent.as_ref())
            .filter(|p| p.resumed && (run.event_count() as u64) < p.event);
        let Some(parent) = followed else { break };
        let Ok(furthest) = replay::open_held(store, &parent.run) else {
            break;
        };
        note = Some(format!(
            "note: {} was killed while it still followed the recording of {} (at event {} of its {}): resuming {}, which holds every event it does, with its limits",
            run.id,
            parent.run,
            run.event_count(),
            parent.event,
            parent.run
        ));
        // Both lists name the same limits in the same order.
        let before = furthest.case.limits.raisable();
        for ((name, value), (_, was)) in run.case.limits.raisable().into_iter().zip(before) {
            if let (Some(value), Some(was)) = (value, was)
                && value != was
            {
                limits.entry(name.to_string()).or_insert(value);
            }
        }
        run = furthest;
    }
    (run, limits, note)
}

/// An incomplete run of a suite's case.
pub struct Incomplete<'a> {
    /// The case's short name.
    pub case: &'a str,
    pub row: Row,
}

/// A run resumed: the call it was killed inside (made again) and the
/// new run.
pub struct Resumed {
    pub in_flight: Option<Intent>,
    pub outcome: RunOutcome,
}

/// Resume every incomplete run (no footer: killed) in the store of the
/// cases of `entries` (a run of a case is one whose recorded case has the
/// case file's hash), skipping those already resumed (a fork at the end
/// of their recording), oldest first; `each` gets every one with the call
/// it was killed inside and the new run, or why it was not resumed.
/// Each run is read held, as `worldline resume` reads it (decision 0380).
pub fn resume_suite(
    sandbox: &Sandbox,
    store: &StoreDir,
    entries: &[Entry],
    each: &mut dyn FnMut(Incomplete<'_>, Result<Resumed>) -> Result<()>,
) -> Result<()> {
    let todo = incomplete(store, entries)?;
    let ids: Vec<&str> = todo.iter().map(|i| i.row.run_id.as_str()).collect();
    store.audit_reexecution(&ids, "test --resume")?;
    for i in todo {
        let resumed = replay::open_held(store, &i.row.run_id).and_then(|rec| {
            let outcome = fork::resume(sandbox, store, &rec, &BTreeMap::new(), false)?;
            Ok(Resumed {
                in_flight: rec.bundle.in_flight,
                outcome,
            })
        });
        each(i, resumed)?;
    }
    Ok(())
}

/// The incomplete runs of `entries`' cases not resumed yet, oldest first
/// (so a suite's runs resume in the order they ran).
fn incomplete<'a>(store: &StoreDir, entries: &'a [Entry]) -> Result<Vec<Incomplete<'a>>> {
    // Two case files of the same content have the same hash: a run is
    // the case's whose name it recorded (the file's stem), else the
    // first of that hash (the last named every such run before).
    let mut named: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    let mut cases: BTreeMap<&str, &str> = BTreeMap::new();
    for e in entries {
        let hash = e.case.hash.as_str();
        named
            .entry((hash, e.case.name.as_str()))
            .or_insert(e.name.as_str());
        cases.entry(hash).or_insert(e.name.as_str());
    }
    let filter = Filter {
        status: vec!["incomplete".into()],
        ..Filter::default()
    };
    let ((rows, children), _) = Index::read(store, |ix| {
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
    // A run killed while it still followed its parent (fewer events than
    // the point it forks at) holds nothing new: it is not resumed, nor
    // does it count as its parent's resume, which is resumed itself.
    let followed = |r: &Row| r.fork_event.is_some_and(|at| r.events < at);
    let mut todo: Vec<Incomplete> = rows
        .into_iter()
        .zip(&children)
        .filter(|(r, _)| !followed(r))
        .filter(|(r, forks)| {
            !forks
                .iter()
                .any(|f| f.fork_event == Some(r.events) && !followed(f))
        })
        .filter_map(|(row, _)| {
            let hash = row.case_hash.as_str();
            let case = *(named.get(&(hash, row.case.as_str()))).or_else(|| cases.get(hash))?;
            Some(Incomplete { case, row })
        })
        .collect();
    todo.sort_by(|a, b| (a.row.created, &a.row.run_id).cmp(&(b.row.created, &b.row.run_id)));
    Ok(todo)
}
