//! Retention (`worldline gc`): which runs the store keeps, and what no kept
//! run needs any more.
//!
//! `plan` decides from the index alone: a run is kept while it is younger
//! than its outcome's limit (`policy`), when it is pinned (`pins`), or
//! when a kept run forks from it (however far up). `sweep` then deletes
//! the other bundles, the objects no kept run references, the extracted
//! worlds no kept run uses, and compile-cache entries unused for the
//! policy's number of days. A run's age is its creation time from its id:
//! real time is store metadata, never part of a bundle. Whatever a live
//! process holds in its lease (`store/lease.rs`: the runs it writes, the objects
//! and worlds it stored or read) stays too.
//!
//! Why retention decides from the index, then touches files (was decision
//! 0045): `plan` is a pure function of the rows, the pins and the policy, so it
//! can be unit-tested (ages, pins, fork chains) and shown (`gc --dry-run`)
//! without touching the store; deleting while scanning would be untestable, and
//! a fork's parent could go before its child is considered. Objects younger
//! than an hour are spared because a run puts its objects before its bundle
//! exists, so a concurrent `gc` would otherwise remove them. Pins are files
//! (`pins/<id>`), not index rows, so a rebuild of the index cannot lose them.

pub mod pins;
pub mod policy;
pub mod sweep;

use crate::index::row::Row;
use policy::Policy;
use std::collections::{BTreeMap, BTreeSet};

/// What to remove and why the rest stays.
#[derive(Debug, Default)]
pub struct Plan<'a> {
    /// Runs to delete, oldest first.
    pub remove: Vec<&'a Row>,
    /// Runs kept.
    pub keep: Vec<&'a Row>,
    /// Kept only because a kept run forks from them.
    pub kept_as_parents: BTreeSet<String>,
    /// Kept only because they are pinned.
    pub kept_pinned: BTreeSet<String>,
    /// Kept only because a live process holds them (its lease names them).
    pub kept_in_use: BTreeSet<String>,
}

/// Decide which of `rows` stay at time `now` (Unix seconds). Runs a live
/// process holds (`held`, from the leases) stay as young runs do.
pub fn plan<'a>(
    rows: &'a [Row],
    pins: &BTreeSet<String>,
    held: &BTreeSet<String>,
    policy: &Policy,
    now: i64,
) -> Plan<'a> {
    let young = |r: &Row| now.saturating_sub(r.created) < days_s(policy.days(&r.outcome));
    let mut keep: BTreeSet<&str> = BTreeSet::new();
    let mut p = Plan::default();
    for r in rows {
        if young(r) {
            keep.insert(&r.run_id);
        } else if held.contains(&r.run_id) {
            keep.insert(&r.run_id);
            p.kept_in_use.insert(r.run_id.clone());
        } else if pins.contains(&r.run_id) {
            keep.insert(&r.run_id);
            p.kept_pinned.insert(r.run_id.clone());
        }
    }
    let parents: BTreeMap<&str, &str> = rows
        .iter()
        .filter_map(|r| r.parent.as_deref().map(|p| (r.run_id.as_str(), p)))
        .collect();
    let kept: Vec<&str> = keep.iter().copied().collect();
    for id in kept {
        let mut at = id;
        while let Some(&parent) = parents.get(at) {
            if !keep.insert(parent) {
                break;
            }
            p.kept_as_parents.insert(parent.to_string());
            at = parent;
        }
    }
    for r in rows {
        if keep.contains(r.run_id.as_str()) {
            p.keep.push(r);
        } else {
            p.remove.push(r);
        }
    }
    p
}

fn days_s(days: u64) -> i64 {
    i64::try_from(days.saturating_mul(86_400)).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, created: i64, outcome: &str, parent: Option<&str>) -> Row {
        Row {
            run_id: id.into(),
            created,
            case: "c".into(),
            world: "w@v1".into(),
            agent: "a".into(),
            case_hash: String::new(),
            world_hash: String::new(),
            seed: 0,
            status: "completed".into(),
            grade: None,
            outcome: outcome.into(),
            signature: None,
            events: 0,
            parent: parent.map(String::from),
            fork_event: parent.map(|_| 3),
            tags: Vec::new(),
            size: 0,
            chain_hash: None,
            rules: None,
        }
    }

    #[test]
    fn outcome_age_pins_and_fork_ancestry_decide() {
        let day = 86_400;
        let now = 1_000 * day;
        let rows = vec![
            row("old-pass", now - 8 * day, "passed", None),
            row("new-pass", now - 6 * day, "passed", None),
            row("old-fail", now - 91 * day, "failed", None),
            row("mid-fail", now - 30 * day, "faulted", None),
            row("grandparent", now - 200 * day, "passed", None),
            row("parent", now - 100 * day, "passed", Some("grandparent")),
            row("fork", now - day, "failed", Some("parent")),
            row("pinned", now - 300 * day, "passed", None),
            row("held", now - 300 * day, "passed", None),
        ];
        let pins = BTreeSet::from(["pinned".to_string()]);
        let held = BTreeSet::from(["held".to_string()]);
        let p = plan(&rows, &pins, &held, &Policy::default(), now);
        let removed: Vec<&str> = p.remove.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(removed, ["old-pass", "old-fail"]);
        assert_eq!(
            p.kept_as_parents,
            BTreeSet::from(["grandparent".to_string(), "parent".to_string()])
        );
        assert_eq!(p.kept_pinned, pins);
        assert_eq!(p.kept_in_use, held);
        assert_eq!(p.keep.len(), 7);
    }
}
