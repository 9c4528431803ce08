//! Property tests of `merge`'s readers: the honest shard reports of a
//! generated suite, then edited (a case's index moved by up to 2^40, a
//! name changed, a case dropped, a partition made impossible or huge, a
//! count forged), and generated fuzz reports. A merge never panics; it
//! accepts the honest shards and refuses every edit that makes them not
//! the suite's.

use crate::fuzz;
use crate::suite::{Shard, SuiteSummary};
use proptest::prelude::*;
use serde_json::{Value, json};

/// The `test --partition count:i/k --json` reports of a suite of `names`
/// (case `j` at index `indices[j]`), every case passing once.
fn shards(names: &[String], indices: &[usize], k: u64) -> Vec<Value> {
    let selection = Shard::of(
        String::new(),
        indices
            .iter()
            .copied()
            .zip(names.iter().map(String::as_str)),
    );
    (1..=k)
        .map(|i| {
            let cases: Vec<Value> = names
                .iter()
                .zip(indices)
                .enumerate()
                .filter(|(pos, _)| *pos as u64 % k == i - 1)
                .map(|(_, (name, index))| {
                    json!({
                        "case": name, "index": index, "elapsed_ms": 1.0, "passed": true,
                        "passes": 1, "path": "x.toml", "run_ids": ["r"], "runs": 1,
                        "skipped": false, "status": "passed",
                    })
                })
                .collect();
            let n = cases.len();
            json!({
                "cases": cases, "elapsed_ms": 1.0, "failed": 0, "passed": n,
                "repeat": 1, "skipped": 0, "total": n,
                "shard": {
                    "partition": format!("count:{i}/{k}"),
                    "selected": selection.selected,
                    "selection": selection.selection,
                },
            })
        })
        .collect()
}

fn merge(docs: &[Value]) -> Result<SuiteSummary, String> {
    let shards = docs
        .iter()
        .map(|d| serde_json::from_value(d.clone()).map_err(|e| e.to_string()))
        .collect::<Result<Vec<SuiteSummary>, _>>()?;
    SuiteSummary::merge(shards)
}

/// An edit of honest shards that makes them not the suite's.
#[derive(Debug, Clone)]
enum Edit {
    MoveIndex(prop::sample::Index, u64),
    Rename(prop::sample::Index, String),
    Drop(prop::sample::Index),
    Partition(String),
    Count(i64),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<prop::sample::Index>(), 1u64..=(1 << 40)).prop_map(|(i, by)| Edit::MoveIndex(i, by)),
        (any::<prop::sample::Index>(), "\\PC{1,8}|\u{1b}\\[31m")
            .prop_map(|(i, n)| Edit::Rename(i, n)),
        any::<prop::sample::Index>().prop_map(Edit::Drop),
        prop_oneof![
            Just("count:3/2".to_string()),
            Just("0/0".to_string()),
            Just("count:1/18446744073709551615".to_string()),
            Just("hash:1/99999999999999999999".to_string()),
            "\\PC{0,12}",
        ]
        .prop_map(Edit::Partition),
        any::<i64>().prop_map(Edit::Count),
    ]
}

/// Apply `e` to one of `docs`; false when it changed nothing.
fn apply(docs: &mut [Value], e: &Edit) -> bool {
    let all: Vec<(usize, usize)> = docs
        .iter()
        .enumerate()
        .flat_map(|(d, doc)| (0..doc["cases"].as_array().map_or(0, Vec::len)).map(move |c| (d, c)))
        .collect();
    let pick = |i: &prop::sample::Index| (!all.is_empty()).then(|| all[i.index(all.len())]);
    match e {
        Edit::MoveIndex(i, by) => {
            let Some((d, c)) = pick(i) else { return false };
            let index = docs[d]["cases"][c]["index"].as_u64().unwrap();
            docs[d]["cases"][c]["index"] = (index + by).into();
        }
        Edit::Rename(i, name) => {
            let Some((d, c)) = pick(i) else { return false };
            if docs[d]["cases"][c]["case"] == name.as_str() {
                return false;
            }
            docs[d]["cases"][c]["case"] = name.as_str().into();
        }
        Edit::Drop(i) => {
            let Some((d, c)) = pick(i) else { return false };
            docs[d]["cases"].as_array_mut().unwrap().remove(c);
            docs[d]["total"] = (docs[d]["total"].as_u64().unwrap() - 1).into();
            docs[d]["passed"] = (docs[d]["passed"].as_u64().unwrap() - 1).into();
        }
        Edit::Partition(p) => docs[0]["shard"]["partition"] = p.as_str().into(),
        Edit::Count(n) => {
            if docs[0]["passed"] == *n {
                return false;
            }
            docs[0]["passed"] = (*n).into();
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn merge_takes_the_honest_shards_of_a_suite_and_no_edit_of_them(
        names in prop::collection::btree_set("[a-z]{1,6}", 1..8),
        gaps in prop::collection::vec(0usize..3, 8),
        k in 1u64..4,
        e in edit(),
    ) {
        let names: Vec<String> = names.into_iter().collect();
        let mut index = 0;
        let indices: Vec<usize> = gaps[..names.len()]
            .iter()
            .map(|g| {
                index += g;
                let at = index;
                index += 1;
                at
            })
            .collect();
        let mut docs = shards(&names, &indices, k);
        let merged = merge(&docs);
        prop_assert!(merged.is_ok(), "{:?}", merged.err());
        prop_assert_eq!(merged.unwrap().total, names.len());
        let p = match &e { Edit::Partition(p) => Some(p.clone()), _ => None };
        if apply(&mut docs, &e) && p.as_deref().is_none_or(|p| p != format!("count:1/{k}") && p != format!("1/{k}")) {
            let merged = merge(&docs);
            prop_assert!(merged.is_err(), "{:?} accepted", e);
        }
    }

    #[test]
    fn fuzz_merge_never_panics_on_generated_reports(
        reports in prop::collection::vec(
            (
                "\\PC{0,12}|count:1/2|hash:2/2|count:1/18446744073709551615",
                prop_oneof![0u64..20, any::<u64>()],
                prop_oneof![0u64..4, any::<u64>()],
                prop::collection::vec(prop_oneof![0u64..8, any::<u64>()], 0..5),
            ),
            0..4,
        ),
    ) {
        let docs: Vec<Value> = reports
            .iter()
            .map(|(partition, seeds, repeat, tally)| {
                json!({
                    "case": "c", "world": "w@v1", "seed": 1, "seeds": seeds,
                    "repeat": repeat, "faults": {"from": "c", "profile": {"tools": []}},
                    "agent_sha256": "a", "partition": partition, "groups": [],
                    "summary": {"runs": 0, "passed": 0, "failed": 0, "pass_rate": 0.0, "interval": [0.0, 1.0]},
                    "timing": {"elapsed_ms": 1.0, "runs_per_s": 0.0},
                    "tally": {"repeat": repeat, "runs": tally.first(), "passed": tally.get(1),
                              "seeds_by_passes": tally.get(2..), "failures": {}},
                })
            })
            .collect();
        // Read as `merge` reads them (each typed), then merged.
        let shards: Result<Vec<fuzz::FuzzReport>, _> =
            docs.into_iter().map(serde_json::from_value).collect();
        if let Ok(shards) = shards {
            let _ = fuzz::merge(&shards);
        }
    }
}
