//! A benchmark's agreement check, shared by `bench_tau2.rs` and
//! `bench_bfcl.rs`: trajectories written as cases (`CASE--VARIANT`) run
//! here with the `caller` guest, each verdict compared with the one the
//! benchmark's own grader gave; a table per variant, the oracle always,
//! ≥ 99.5% overall.

use super::{guest, worldline};
use std::collections::BTreeMap;
use std::path::Path;

/// The trajectories in `agree` run against the imported project `dir`,
/// compared with `theirs` (case → passed by `grader`); `what` names the
/// benchmark in the printed table. Worldline's verdicts, by case.
pub fn agreement(
    what: &str,
    grader: &str,
    store: &Path,
    dir: &Path,
    agree: &Path,
    theirs: &BTreeMap<String, bool>,
) -> BTreeMap<String, bool> {
    let ran = worldline(
        store,
        [
            "test".as_ref(),
            agree.as_os_str(),
            "--agent".as_ref(),
            guest("caller-agent").as_os_str(),
            "--worlds".as_ref(),
            dir.join("worlds").as_os_str(),
            "--json".as_ref(),
        ],
    );
    let ours: BTreeMap<String, bool> = ran.json()["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["case"].as_str().unwrap();
            let name = name.rsplit('/').next().unwrap().to_string();
            (name, c["passed"].as_bool().unwrap())
        })
        .collect();
    assert_eq!(ours.len(), theirs.len(), "{ran}");
    // variant -> (trajectories, agreeing, passed here, passed there)
    let mut table: BTreeMap<&str, (u32, u32, u32, u32)> = BTreeMap::new();
    let mut disagree = Vec::new();
    for (case, &there) in theirs {
        let variant = case.split("--").nth(1).unwrap();
        let here = ours[case];
        let row = table.entry(variant).or_default();
        row.0 += 1;
        row.1 += u32::from(here == there);
        row.2 += u32::from(here);
        row.3 += u32::from(there);
        if here != there {
            disagree.push(format!("{case}: worldline {here}, {grader} {there}"));
        }
    }
    let mut shown = format!(
        "| trajectory | count | agree | pass (worldline) | pass ({grader}) |\n|---|---|---|---|---|\n"
    );
    for (v, (n, ok, here, there)) in &table {
        shown.push_str(&format!("| {v} | {n} | {ok} | {here} | {there} |\n"));
    }
    eprintln!("{what}:\n{shown}\ndisagreements:\n{}", disagree.join("\n"));
    let (n, ok) = table
        .values()
        .fold((0, 0), |(n, ok), r| (n + r.0, ok + r.1));
    assert_eq!(
        table["oracle"].1, table["oracle"].0,
        "{shown}\n{disagree:#?}"
    );
    assert!(
        f64::from(ok) / f64::from(n) >= 0.995,
        "{shown}\n{disagree:#?}"
    );
    ours
}

/// The cases of `variant` (`CASE--VARIANT`) on which `ours` and `theirs`
/// disagree: none, for a variant that must agree on every trajectory.
pub fn disagreeing(
    variant: &str,
    ours: &BTreeMap<String, bool>,
    theirs: &BTreeMap<String, bool>,
) -> Vec<String> {
    theirs
        .iter()
        .filter(|(case, there)| {
            case.split("--").nth(1) == Some(variant) && ours.get(*case) != Some(there)
        })
        .map(|(case, _)| case.clone())
        .collect()
}
