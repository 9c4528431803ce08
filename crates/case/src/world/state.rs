//! The world's mutable state: tables of JSON rows keyed by a field, plus
//! files. Every change is a [`Write`], recorded in the event that made it, so
//! the state at any event can be rebuilt from the initial state and the log.
//!
//! Rows and files are persistent maps (`imbl::OrdMap`): a copy of a state
//! shares every row with the original and a write copies only the path to
//! its row, so every run of a world starts from the one loaded copy and
//! costs the rows it writes
//! ([0251](../../../../docs/decisions/0251-copy-on-write-state.md)).

use super::compare;
use super::digest::{Part, Parts};
use super::ids::Ids;
use crate::canon;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A table's rows by key (sorted, so iteration is deterministic).
pub type Rows = imbl::OrdMap<String, Value>;

/// World files by world path.
pub type Files = imbl::OrdMap<String, FileData>;

/// One table: its key field and its rows by key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub key: String,
    pub rows: Rows,
    /// How inserted rows without a key get one (left out when `count`, so
    /// states of worlds that never set it hash as they always did).
    #[serde(default, skip_serializing_if = "Ids::is_count")]
    pub ids: Ids,
}

impl Table {
    /// The rows in key order ([`compare::key_order`]: numeric runs compare
    /// as numbers, so `2` comes before `10`), the one row order of
    /// declarative queries, service queries and the grader's aggregates.
    pub fn in_key_order(&self) -> Vec<(&String, &Value)> {
        let mut rows: Vec<(&String, &Value)> = self.rows.iter().collect();
        rows.sort_by(|(a, _), (b, _)| compare::key_order(a, b));
        rows
    }

    /// The fields its rows hold, when it has rows, each an object, and
    /// none holds `field`: what a check naming `field` says instead (a
    /// sort, a filter or a stale answer's field that no row holds).
    pub fn fields_without(&self, field: &str) -> Option<std::collections::BTreeSet<&str>> {
        let mut fields = std::collections::BTreeSet::new();
        for row in self.rows.values() {
            if row.get(field).is_some() {
                return None;
            }
            fields.extend(row.as_object()?.keys().map(String::as_str));
        }
        (!self.rows.is_empty()).then_some(fields)
    }

    /// Whether `other` is this table, rows shared (so equal without
    /// looking at them).
    pub fn shares(&self, other: &Table) -> bool {
        self.key == other.key && self.ids == other.ids && self.rows.ptr_eq(&other.rows)
    }
}

/// The whole state of a world at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub tables: BTreeMap<String, Table>,
    /// World files by world path; contents as UTF-8 text when they are text,
    /// else `base64:`-free hex with a `hex:` prefix (see [`FileData`]).
    pub files: Files,
    /// The state this one was copied from, sealed for hashing (see
    /// [`State::seal`]); not part of the state.
    #[serde(skip)]
    sealed: Sealed,
}

/// A sealed state: its tables and files (shared, so keeping them costs
/// nothing) and its canonical text in parts, one per table and one for
/// the files, for [`State::hash`] to resume from.
struct Seal {
    tables: Vec<(String, Table)>,
    files: Files,
    parts: Parts,
}

/// The seal a state carries from the state it was copied from; equal to
/// any other, as it says nothing about the state itself.
#[derive(Clone, Default)]
struct Sealed(Option<Arc<Seal>>);

impl PartialEq for Sealed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "sealed"
        } else {
            "unsealed"
        })
    }
}

/// File contents, text when they are valid UTF-8 so diffs stay readable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FileData {
    Text(String),
    Bytes { hex: String },
}

impl FileData {
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        match String::from_utf8(bytes) {
            Ok(s) => FileData::Text(s),
            Err(e) => FileData::Bytes {
                hex: hex::encode(e.into_bytes()),
            },
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            FileData::Text(s) => s.as_bytes().to_vec(),
            FileData::Bytes { hex } => hex::decode(hex).unwrap_or_default(),
        }
    }
}

/// One change to the state, as recorded in an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Write {
    /// Insert or replace a row.
    Put {
        table: String,
        key: String,
        row: Value,
    },
    /// Remove a row.
    Delete { table: String, key: String },
    /// Create or replace a file.
    File { path: String, data: FileData },
}

impl State {
    /// Apply one recorded change.
    pub fn apply(&mut self, write: &Write) {
        match write {
            Write::Put { table, key, row } => {
                if let Some(t) = self.tables.get_mut(table) {
                    t.rows.insert(key.clone(), row.clone());
                }
            }
            Write::Delete { table, key } => {
                if let Some(t) = self.tables.get_mut(table) {
                    t.rows.remove(key);
                }
            }
            Write::File { path, data } => {
                self.files.insert(path.clone(), data.clone());
            }
        }
    }

    /// SHA-256 of the canonical JSON of the whole state (`{"tables":
    /// {...}, "files": {...}}`), the hash runs record. For a copy of a
    /// sealed state it is hashed from the first table that is no longer
    /// the sealed one's, and the tables after it that still are cost no
    /// serializing; an unchanged copy costs nothing.
    pub fn hash(&self) -> String {
        self.hashed().0
    }

    /// [`State::hash`], and how many bytes of the state it serialized
    /// (all of them unless the state is a copy of a sealed one).
    fn hashed(&self) -> (String, usize) {
        let full = || {
            let text = canon::to_string(self);
            (canon::sha256_hex(&text), text.len())
        };
        let Some(seal) = &self.sealed.0 else {
            return full();
        };
        let same_names = self.tables.len() == seal.tables.len()
            && self
                .tables
                .keys()
                .zip(&seal.tables)
                .all(|(a, (b, _))| a == b);
        if !same_names {
            return full();
        }
        let same = |i: usize, t: &Table| seal.tables[i].1.shares(t);
        let first = self
            .tables
            .values()
            .enumerate()
            .position(|(i, t)| !same(i, t));
        let files_same = self.files.ptr_eq(&seal.files);
        let from = match (first, files_same) {
            (None, true) => return (seal.parts.hash().to_string(), 0),
            (Some(i), _) => i + 1,
            (None, false) => seal.tables.len() + 1,
        };
        let tables = self.tables.iter().enumerate().skip(from - 1);
        let mut rest: Vec<Part> = tables
            .map(|(i, (name, t))| match same(i, t) {
                true => Part::Same(i + 1),
                false => Part::New(table_part(i, name, t)),
            })
            .collect();
        rest.push(match files_same {
            true => Part::Same(seal.tables.len() + 1),
            false => Part::New(files_part(&self.files)),
        });
        let serialized = rest
            .iter()
            .map(|p| match p {
                Part::New(bytes) => bytes.len(),
                Part::Same(_) => 0,
            })
            .sum();
        (seal.parts.resume(from, rest), serialized)
    }

    /// Whether its seal is of its tables and files as they are (sealing
    /// again would change nothing).
    pub fn is_sealed(&self) -> bool {
        self.sealed.0.as_ref().is_some_and(|p| {
            p.files.ptr_eq(&self.files)
                && p.tables.len() == self.tables.len()
                && p.tables
                    .iter()
                    .zip(&self.tables)
                    .all(|((pn, pt), (n, t))| pn == n && pt.shares(t))
        })
    }

    /// Keep this state's canonical text in parts, so that the hash of a
    /// copy of it costs what the copy changed. Tables that are those of
    /// the state it was copied from keep that one's bytes.
    pub fn seal(&mut self) {
        if self.is_sealed() {
            return;
        }
        let previous = self.sealed.0.clone();
        let reused = |i: usize, name: &String, t: &Table| {
            let p = previous.as_ref()?;
            let j = p
                .tables
                .iter()
                .position(|(n, pt)| n == name && pt.shares(t))?;
            (j == i).then(|| p.parts.part(j + 1).clone())
        };
        let mut parts: Vec<Arc<[u8]>> = vec![Arc::from(&b"{\"tables\":{"[..])];
        for (i, (name, t)) in self.tables.iter().enumerate() {
            parts.push(reused(i, name, t).unwrap_or_else(|| table_part(i, name, t).into()));
        }
        parts.push(files_part(&self.files).into());
        self.sealed = Sealed(Some(Arc::new(Seal {
            tables: self
                .tables
                .iter()
                .map(|(n, t)| (n.clone(), t.clone()))
                .collect(),
            files: self.files.clone(),
            parts: Parts::new(parts),
        })));
    }

    pub fn row(&self, table: &str, key: &str) -> Option<&Value> {
        self.tables.get(table)?.rows.get(key)
    }
}

/// Table `i`'s part of a state's canonical text: `"name":{...}`, after a
/// comma but for the first.
fn table_part(i: usize, name: &str, t: &Table) -> Vec<u8> {
    let mut out = if i == 0 { Vec::new() } else { b",".to_vec() };
    serde_json::to_writer(&mut out, name).expect("names serialize");
    out.push(b':');
    serde_json::to_writer(&mut out, t).expect("tables serialize");
    out
}

/// The end of a state's canonical text: the files.
fn files_part(files: &Files) -> Vec<u8> {
    let mut out = b"},\"files\":".to_vec();
    serde_json::to_writer(&mut out, files).expect("files serialize");
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(n: usize) -> Table {
        Table {
            key: "id".into(),
            rows: (0..n)
                .map(|i| (format!("r{i}"), json!({"id": format!("r{i}"), "n": i})))
                .collect(),
            ..Default::default()
        }
    }

    fn sealed() -> State {
        let mut s = State::default();
        for (name, n) in [("a", 3), ("b", 40), ("c", 0), ("d", 5)] {
            s.tables.insert(name.into(), table(n));
        }
        s.files.insert("f.txt".into(), FileData::Text("x".into()));
        s.seal();
        s
    }

    #[test]
    fn a_sealed_states_copies_hash_as_their_whole_text_does() {
        let base = sealed();
        assert_eq!(base.hash(), canon::hash_json(&base));
        let put = |table: &str, key: &str| Write::Put {
            table: table.into(),
            key: key.into(),
            row: json!({"id": key, "new": true}),
        };
        let changes: Vec<Vec<Write>> = vec![
            vec![],
            vec![put("a", "r1")],
            vec![put("b", "r7"), put("d", "r9")],
            vec![put("d", "zz")],
            vec![Write::Delete {
                table: "c".into(),
                key: "none".into(),
            }],
            vec![put("c", "first")],
            vec![Write::File {
                path: "g.txt".into(),
                data: FileData::Text("y".into()),
            }],
            vec![
                put("b", "r1"),
                Write::File {
                    path: "f.txt".into(),
                    data: FileData::Text("z".into()),
                },
            ],
        ];
        let whole = canon::to_string(&base).len();
        for writes in changes {
            let mut s = base.clone();
            writes.iter().for_each(|w| s.apply(w));
            let (hash, serialized) = s.hashed();
            assert_eq!(hash, canon::hash_json(&s), "{writes:?}");
            // Only what was written is serialized again (table `b`, of 40
            // rows, is most of the state).
            let wrote_b = writes
                .iter()
                .any(|w| matches!(w, Write::Put { table, .. } if table == "b"));
            assert!(
                wrote_b || serialized < whole / 3,
                "{serialized} of {whole}: {writes:?}"
            );
            s.seal();
            assert_eq!(s.hash(), canon::hash_json(&s), "resealed after {writes:?}");
        }
        let mut other = base.clone();
        other.tables.remove("b");
        assert_eq!(other.hash(), canon::hash_json(&other));
    }
}
