//! The structured difference between two world states: rows added,
//! removed and changed per table, and files added, removed and changed. A
//! changed row lists each changed value by its path inside the row, nested
//! objects and arrays followed (`passengers[1].dob`, the syntax of
//! `worldline_case::path`), so a wrong passenger inside a reservation is named as
//! such; under strict numbers a value whose type alone changed (`2` →
//! `2.0`) says so.
//!
//! Why changed leaves are named in the path syntax of checks (was decision
//! 0145): `reservations/R-1 differs` hid which passenger; each changed leaf is
//! listed by its path in `worldline_case::path` syntax (`passengers[1].dob`), so a path
//! from a diff can be pasted into a check's `field`, and fields sort with
//! `key_order` so `[2]` comes before `[10]`. Slash paths (`passengers/1/dob`)
//! would be a second path syntax beside the one every check uses; an LCS diff
//! of arrays reports moved elements better but is costlier and harder to read
//! for the fixed-position lists benchmarks hold. The grade's diff is not
//! compared on replay, so recorded runs still replay.

use imbl::ordmap::DiffItem;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use worldline_case::world::compare::{Equality, Numbers, key_order, type_name};
use worldline_case::world::state::{Rows, State};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TableDiff {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub added: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub removed: BTreeMap<String, Value>,
    /// Row key → path in the row → `{"before", "after"}` (an absent side is
    /// `null`), plus `"types": "integer -> float"` when only the type differs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub changed: BTreeMap<String, BTreeMap<String, Value>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StateDiff {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tables: BTreeMap<String, TableDiff>,
    /// Path → `"added"`, `"removed"` or `"changed"`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, &'static str>,
}

impl StateDiff {
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.files.is_empty()
    }

    /// One line per change, for people.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (table, d) in &self.tables {
            for (k, row) in &d.added {
                out.push(format!(
                    "+ {table}/{k} {}",
                    worldline_case::canon::to_string(row)
                ));
            }
            for k in d.removed.keys() {
                out.push(format!("- {table}/{k}"));
            }
            for (k, fields) in &d.changed {
                // `[2]` before `[10]`, as rows list.
                let mut fields: Vec<_> = fields.iter().collect();
                fields.sort_by(|(a, _), (b, _)| key_order(a, b));
                for (f, c) in fields {
                    let types = c
                        .get("types")
                        .and_then(Value::as_str)
                        .map_or(String::new(), |t| format!(" ({t})"));
                    // A field not there is said so: `null -> null` was a
                    // field added with null, and every new field read as
                    // if it had held null.
                    let shown = |side: &str| {
                        c.get(side)
                            .map_or("(absent)".to_string(), |v| v.to_string())
                    };
                    out.push(format!(
                        "~ {table}/{k}.{f}: {} -> {}{types}",
                        shown("before"),
                        shown("after")
                    ));
                }
            }
        }
        for (path, what) in &self.files {
            out.push(format!(
                "{} file {path}",
                match *what {
                    "added" => "+",
                    "removed" => "-",
                    _ => "~",
                }
            ));
        }
        out
    }
}

/// A path one step deeper: `.field` (no dot at the top) or `[i]`.
fn step(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// Every difference between `before` and `after` (values at `path`) into
/// `out`: objects by key and arrays by index are followed down; anything
/// else that differs is one change.
fn changes(
    path: &str,
    before: Option<&Value>,
    after: Option<&Value>,
    eq: Equality,
    out: &mut BTreeMap<String, Value>,
) {
    match (before, after) {
        (Some(Value::Object(b)), Some(Value::Object(a))) => {
            let keys: std::collections::BTreeSet<&String> = b.keys().chain(a.keys()).collect();
            for k in keys {
                changes(&step(path, k), b.get(k), a.get(k), eq, out);
            }
        }
        (Some(Value::Array(b)), Some(Value::Array(a))) if !path.is_empty() => {
            for i in 0..b.len().max(a.len()) {
                changes(&format!("{path}[{i}]"), b.get(i), a.get(i), eq, out);
            }
        }
        (Some(b), Some(a)) if eq.same(b, a) => {}
        (None, None) => {}
        (b, a) => {
            // A side that is absent is left out (`null` is a value).
            let mut change = serde_json::Map::new();
            for (side, v) in [("before", b), ("after", a)] {
                if let Some(v) = v {
                    change.insert(side.into(), v.clone());
                }
            }
            let mut change = Value::Object(change);
            if let (Some(b), Some(a)) = (b, a)
                && (Equality {
                    numbers: Numbers::ByValue,
                    ..eq
                })
                .same(b, a)
            {
                change["types"] = json!(format!("{} -> {}", type_name(b), type_name(a)));
            }
            out.insert(path.to_string(), change);
        }
    }
}

/// What changed from `before` to `after`, numbers compared by value and
/// text as written.
pub fn diff(before: &State, after: &State) -> StateDiff {
    diff_with(before, after, Equality::new(Numbers::ByValue, false))
}

/// What changed from `before` to `after`, numbers compared as `numbers` says.
/// Rows are compared through the maps' shared structure: a run's final
/// state shares every row it did not write with the initial state, so
/// this costs the rows that changed, not the world's size.
pub fn diff_with(before: &State, after: &State, eq: Equality) -> StateDiff {
    let mut out = StateDiff::default();
    let none = Rows::new();
    for (name, table) in &after.tables {
        let old = before.tables.get(name).map_or(&none, |t| &t.rows);
        let mut d = TableDiff::default();
        for item in old.diff(&table.rows) {
            match item {
                DiffItem::Add(k, row) => {
                    d.added.insert(k.clone(), row.clone());
                }
                DiffItem::Remove(k, row) => {
                    d.removed.insert(k.clone(), row.clone());
                }
                DiffItem::Update {
                    old: (k, prev),
                    new: (_, row),
                } => {
                    if !eq.same(prev, row) {
                        let mut fields = BTreeMap::new();
                        changes("", Some(prev), Some(row), eq, &mut fields);
                        d.changed.insert(k.clone(), fields);
                    }
                }
            }
        }
        if d != TableDiff::default() {
            out.tables.insert(name.clone(), d);
        }
    }
    for item in before.files.diff(&after.files) {
        let (path, what) = match item {
            DiffItem::Add(p, _) => (p, "added"),
            DiffItem::Remove(p, _) => (p, "removed"),
            DiffItem::Update { old: (p, _), .. } => (p, "changed"),
        };
        out.files.insert(path.clone(), what);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use worldline_case::world::state::{FileData, Table, Write};

    #[test]
    fn diff_lists_added_removed_and_changed_fields() {
        let mut before = State::default();
        let rows = [
            ("A", json!({"id": "A", "s": "open"})),
            ("B", json!({"id": "B"})),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        before.tables.insert(
            "t".into(),
            Table {
                key: "id".into(),
                rows,
                ..Default::default()
            },
        );
        let mut after = before.clone();
        after.apply(&Write::Put {
            table: "t".into(),
            key: "A".into(),
            row: json!({"id": "A", "s": "closed"}),
        });
        after.apply(&Write::Delete {
            table: "t".into(),
            key: "B".into(),
        });
        after.apply(&Write::Put {
            table: "t".into(),
            key: "C".into(),
            row: json!({"id": "C"}),
        });
        after.apply(&Write::File {
            path: "n.md".into(),
            data: FileData::Text("x".into()),
        });
        let d = diff(&before, &after);
        let t = &d.tables["t"];
        assert_eq!(
            t.changed["A"]["s"],
            json!({"before": "open", "after": "closed"})
        );
        assert!(t.removed.contains_key("B"));
        assert!(t.added.contains_key("C"));
        assert_eq!(d.files["n.md"], "added");
        assert_eq!(d.lines().len(), 4);
        assert!(diff(&before, &before).is_empty());
    }

    #[test]
    fn changes_deep_in_a_row_are_named_by_their_path_and_a_type_change_by_its_types() {
        let mut before = State::default();
        let row = json!({"id": "R-1", "bags": 2, "passengers": [{"name": "Ana", "dob": "1990-01-01"}, {"name": "Ben"}]});
        before.tables.insert(
            "reservations".into(),
            Table {
                key: "id".into(),
                rows: [("R-1".to_string(), row)].into_iter().collect(),
                ..Default::default()
            },
        );
        let mut after = before.clone();
        after.apply(&Write::Put {
            table: "reservations".into(),
            key: "R-1".into(),
            row: json!({"id": "R-1", "bags": 2.0, "passengers": [{"name": "Ana", "dob": "1991-01-01"}, {"name": "Ben"}, {"name": "Cy"}]}),
        });
        assert_eq!(
            diff(&before, &after).lines(),
            [
                "~ reservations/R-1.passengers[0].dob: \"1990-01-01\" -> \"1991-01-01\"",
                "~ reservations/R-1.passengers[2]: (absent) -> {\"name\":\"Cy\"}",
            ]
        );
        // A field added with null is not a field that held null.
        let mut nulled = before.clone();
        nulled.apply(&Write::Put {
            table: "reservations".into(),
            key: "R-1".into(),
            row: json!({"id": "R-1", "bags": 2, "passengers": [{"name": "Ana", "dob": "1990-01-01"}, {"name": "Ben"}], "extra": null}),
        });
        assert_eq!(
            diff(&before, &nulled).lines(),
            ["~ reservations/R-1.extra: (absent) -> null"]
        );
        let strict = diff_with(&before, &after, Equality::new(Numbers::Strict, false));
        assert_eq!(
            strict.lines()[0],
            "~ reservations/R-1.bags: 2 -> 2.0 (integer -> float)"
        );
        assert_eq!(
            strict.tables["reservations"].changed["R-1"]["bags"]["types"],
            "integer -> float"
        );
    }
}
