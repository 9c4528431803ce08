//! The world's mutable state: tables of JSON rows keyed by a field, plus
//! files. Every change is a [`Write`], recorded in the event that made it, so
//! the state at any event can be rebuilt from the initial state and the log.

use super::compare;
use super::ids::Ids;
use crate::canon;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One table: its key field and its rows by key (sorted, so iteration is
/// deterministic).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub key: String,
    pub rows: BTreeMap<String, Value>,
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
}

/// The whole state of a world at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub tables: BTreeMap<String, Table>,
    /// World files by world path; contents as UTF-8 text when they are text,
    /// else `base64:`-free hex with a `hex:` prefix (see [`FileData`]).
    pub files: BTreeMap<String, FileData>,
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

    /// SHA-256 of the canonical JSON of the whole state.
    pub fn hash(&self) -> String {
        canon::hash_json(self)
    }

    pub fn row(&self, table: &str, key: &str) -> Option<&Value> {
        self.tables.get(table)?.rows.get(key)
    }
}
