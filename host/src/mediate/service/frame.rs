//! One service call's view of the world: `worldline:service/state` and
//! `worldline:service/env` answered from the run's state as of the call.
//!
//! Writes are applied to the state as they are made (so the service reads
//! its own writes) and undone when the call ends: the mediator applies the
//! recorded writes itself, and a call that fails writes nothing.

use super::ServiceData;
use super::bindings::worldline::service::{env, state, types};
use crate::canon;
use crate::error_kind::ErrorKind;
use crate::world::state::{FileData, State, Write};
use crate::world::tools::AsOf;
use rand_core::RngCore;
use serde_json::{Map, Value, json};
use types::ToolError;

/// The state a call sees, what it read and what it wrote.
pub struct Frame {
    pub state: State,
    pub as_of: AsOf,
    pub writes: Vec<Write>,
    /// What the call read, in order (`["get", table, key]`, ...).
    pub reads: Vec<Value>,
    undo: Vec<Undo>,
}

/// How to take one write back.
enum Undo {
    Row {
        table: String,
        key: String,
        before: Option<Value>,
    },
    File {
        path: String,
        before: Option<FileData>,
    },
}

impl Frame {
    pub fn new(state: State, as_of: AsOf) -> Self {
        Frame {
            state,
            as_of,
            writes: Vec::new(),
            reads: Vec::new(),
            undo: Vec::new(),
        }
    }

    /// The state as it was before the call.
    pub fn restore(mut self) -> State {
        while let Some(u) = self.undo.pop() {
            match u {
                Undo::Row { table, key, before } => {
                    if let Some(t) = self.state.tables.get_mut(&table) {
                        match before {
                            Some(row) => t.rows.insert(key, row),
                            None => t.rows.remove(&key),
                        };
                    }
                }
                Undo::File { path, before } => {
                    match before {
                        Some(data) => self.state.files.insert(path, data),
                        None => self.state.files.remove(&path),
                    };
                }
            }
        }
        self.state
    }

    fn write(&mut self, w: Write) {
        self.undo.push(match &w {
            Write::Put { table, key, .. } | Write::Delete { table, key } => Undo::Row {
                table: table.clone(),
                key: key.clone(),
                before: self.state.row(table, key).cloned(),
            },
            Write::File { path, .. } => Undo::File {
                path: path.clone(),
                before: self.state.files.get(path).cloned(),
            },
        });
        self.state.apply(&w);
        self.writes.push(w);
    }

    fn table(&self, table: &str) -> Result<&crate::world::state::Table, ToolError> {
        self.state.tables.get(table).ok_or_else(|| {
            let known: Vec<&String> = self.state.tables.keys().collect();
            error(
                ErrorKind::NotFound,
                format!("no table `{table}` (tables: {known:?})"),
            )
        })
    }

    /// A row the call may see (a stale answer hides newer rows).
    fn visible(&self, table: &str, key: &str) -> Result<Option<&Value>, ToolError> {
        Ok(self
            .table(table)?
            .rows
            .get(key)
            .filter(|r| !self.as_of.hides(r)))
    }
}

fn error(kind: ErrorKind, message: impl Into<String>) -> ToolError {
    ToolError {
        kind: kind.into(),
        message: message.into(),
    }
}

fn object(json: &str, what: &str) -> Result<Map<String, Value>, ToolError> {
    match serde_json::from_str(json) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(error(
            ErrorKind::InvalidArgs,
            format!("{what} must be a JSON object"),
        )),
        Err(e) => Err(error(
            ErrorKind::InvalidArgs,
            format!("{what} is not JSON: {e}"),
        )),
    }
}

impl From<ErrorKind> for types::ErrorKind {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Denied => types::ErrorKind::Denied,
            ErrorKind::NotFound => types::ErrorKind::NotFound,
            ErrorKind::InvalidArgs => types::ErrorKind::InvalidArgs,
            ErrorKind::Timeout => types::ErrorKind::Timeout,
            ErrorKind::Unavailable => types::ErrorKind::Unavailable,
            ErrorKind::Conflict => types::ErrorKind::Conflict,
            ErrorKind::Failed => types::ErrorKind::Failed,
        }
    }
}

impl From<types::ErrorKind> for ErrorKind {
    fn from(kind: types::ErrorKind) -> Self {
        match kind {
            types::ErrorKind::Denied => ErrorKind::Denied,
            types::ErrorKind::NotFound => ErrorKind::NotFound,
            types::ErrorKind::InvalidArgs => ErrorKind::InvalidArgs,
            types::ErrorKind::Timeout => ErrorKind::Timeout,
            types::ErrorKind::Unavailable => ErrorKind::Unavailable,
            types::ErrorKind::Conflict => ErrorKind::Conflict,
            types::ErrorKind::Failed => ErrorKind::Failed,
        }
    }
}

impl types::Host for ServiceData {}

impl state::Host for ServiceData {
    fn get(&mut self, table: String, key: String) -> Result<Option<String>, ToolError> {
        let f = &mut self.frame;
        f.reads.push(json!(["get", table, key]));
        Ok(f.visible(&table, &key)?.map(canon::to_string))
    }

    fn query(&mut self, table: String, where_json: String) -> Result<Vec<String>, ToolError> {
        let f = &mut self.frame;
        let filter = object(&where_json, "the query's `where`")?;
        f.reads.push(json!(["query", table, filter]));
        let rows = f.table(&table)?.in_key_order();
        Ok(rows
            .into_iter()
            .map(|(_, r)| r)
            .filter(|r| {
                !f.as_of.hides(r)
                    && filter
                        .iter()
                        .all(|(k, v)| r.get(k).is_some_and(|have| canon::same(have, v)))
            })
            .map(canon::to_string)
            .collect())
    }

    fn insert(&mut self, table: String, row_json: String) -> Result<String, ToolError> {
        let f = &mut self.frame;
        let mut row = object(&row_json, "the new row")?;
        let t = f.table(&table)?;
        let key = match row.get(&t.key) {
            Some(k) if !k.is_null() => canon::key_of(k),
            _ => {
                let value = t.ids.next(&table, &t.rows);
                let key = canon::key_of(&value);
                row.insert(t.key.clone(), value);
                key
            }
        };
        if t.rows.contains_key(&key) {
            return Err(error(
                ErrorKind::Conflict,
                format!("{table} row `{key}` already exists"),
            ));
        }
        f.write(Write::Put {
            table,
            key: key.clone(),
            row: Value::Object(row),
        });
        Ok(key)
    }

    fn update(
        &mut self,
        table: String,
        key: String,
        fields_json: String,
    ) -> Result<String, ToolError> {
        let f = &mut self.frame;
        let fields = object(&fields_json, "the fields to set")?;
        let Some(Value::Object(before)) = f.visible(&table, &key)? else {
            return Err(error(
                ErrorKind::NotFound,
                format!("no {table} row `{key}`"),
            ));
        };
        let mut row = before.clone();
        row.extend(fields);
        let row = Value::Object(row);
        let text = canon::to_string(&row);
        f.write(Write::Put { table, key, row });
        Ok(text)
    }

    fn delete(&mut self, table: String, key: String) -> Result<bool, ToolError> {
        let f = &mut self.frame;
        if f.visible(&table, &key)?.is_none() {
            return Ok(false);
        }
        f.write(Write::Delete { table, key });
        Ok(true)
    }

    fn read_file(&mut self, path: String) -> Result<Vec<u8>, ToolError> {
        let f = &mut self.frame;
        f.reads.push(json!(["read-file", path]));
        f.state
            .files
            .get(&path)
            .map(FileData::to_bytes)
            .ok_or_else(|| error(ErrorKind::NotFound, format!("no world file `{path}`")))
    }

    fn write_file(&mut self, path: String, data: Vec<u8>) -> Result<(), ToolError> {
        if path.is_empty() {
            return Err(error(ErrorKind::InvalidArgs, "empty path"));
        }
        self.frame.write(Write::File {
            path,
            data: FileData::from_bytes(data),
        });
        Ok(())
    }

    fn list_files(&mut self, prefix: String) -> Vec<String> {
        let f = &mut self.frame;
        f.reads.push(json!(["list-files", prefix]));
        f.state
            .files
            .keys()
            .filter(|p| p.starts_with(&prefix))
            .cloned()
            .collect()
    }
}

impl env::Host for ServiceData {
    fn now(&mut self) -> String {
        self.frame.as_of.now.clone()
    }

    fn random(&mut self) -> u64 {
        self.rng.next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_takes_every_write_back() {
        let mut state = State::default();
        state.tables.insert(
            "t".into(),
            crate::world::state::Table {
                key: "id".into(),
                rows: [("a".to_string(), json!({"id": "a", "n": 1}))].into(),
                ids: Default::default(),
            },
        );
        let before = state.clone();
        let mut f = Frame::new(state, AsOf::now("2026-01-01T00:00:00Z".into()));
        f.write(Write::Put {
            table: "t".into(),
            key: "a".into(),
            row: json!({"id": "a", "n": 2}),
        });
        f.write(Write::Put {
            table: "t".into(),
            key: "b".into(),
            row: json!({"id": "b"}),
        });
        f.write(Write::Delete {
            table: "t".into(),
            key: "a".into(),
        });
        f.write(Write::File {
            path: "x.txt".into(),
            data: FileData::Text("x".into()),
        });
        assert_eq!(f.writes.len(), 4);
        assert_eq!(f.restore(), before);
    }
}
