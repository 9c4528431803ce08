//! The structured difference between two world states: rows added,
//! removed and changed per table (changed rows list their changed fields),
//! and files added, removed and changed.

use crate::canon::same;
use crate::world::state::{FileData, State};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TableDiff {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub added: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub removed: BTreeMap<String, Value>,
    /// Row key → field → `{"before", "after"}`.
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
                out.push(format!("+ {table}/{k} {}", crate::canon::to_string(row)));
            }
            for k in d.removed.keys() {
                out.push(format!("- {table}/{k}"));
            }
            for (k, fields) in &d.changed {
                for (f, c) in fields {
                    out.push(format!(
                        "~ {table}/{k}.{f}: {} -> {}",
                        c["before"], c["after"]
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

fn field_changes(before: &Value, after: &Value) -> BTreeMap<String, Value> {
    let empty = serde_json::Map::new();
    let b = before.as_object().unwrap_or(&empty);
    let a = after.as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = b.keys().chain(a.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| match (b.get(*k), a.get(*k)) {
            (Some(x), Some(y)) => !same(x, y),
            (x, y) => x != y,
        })
        .map(|k| (k.clone(), json!({"before": b.get(k), "after": a.get(k)})))
        .collect()
}

/// What changed from `before` to `after`.
pub fn diff(before: &State, after: &State) -> StateDiff {
    let mut out = StateDiff::default();
    for (name, table) in &after.tables {
        let old = before.tables.get(name);
        let mut d = TableDiff::default();
        for (k, row) in &table.rows {
            match old.and_then(|t| t.rows.get(k)) {
                None => {
                    d.added.insert(k.clone(), row.clone());
                }
                Some(prev) if !same(prev, row) => {
                    d.changed.insert(k.clone(), field_changes(prev, row));
                }
                Some(_) => {}
            }
        }
        if let Some(old) = old {
            for (k, row) in &old.rows {
                if !table.rows.contains_key(k) {
                    d.removed.insert(k.clone(), row.clone());
                }
            }
        }
        if d != TableDiff::default() {
            out.tables.insert(name.clone(), d);
        }
    }
    let files: BTreeMap<&String, (Option<&FileData>, Option<&FileData>)> = before
        .files
        .keys()
        .chain(after.files.keys())
        .map(|p| (p, (before.files.get(p), after.files.get(p))))
        .collect();
    for (path, (b, a)) in files {
        let what = match (b, a) {
            (None, Some(_)) => "added",
            (Some(_), None) => "removed",
            (Some(x), Some(y)) if x != y => "changed",
            _ => continue,
        };
        out.files.insert(path.clone(), what);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::state::{Table, Write};

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
}
