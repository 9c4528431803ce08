//! One service call's view of the world: `worldline:service/state` and
//! `worldline:service/env` answered from the run's state as of the call.
//!
//! Writes are applied to the state as they are made (so the service reads
//! its own writes) and undone when the call ends: the mediator applies the
//! recorded writes itself, and a call that fails writes nothing.

use super::ServiceData;
use super::bindings::worldline::service::{env, state, types};
use rand_core::RngCore;
use serde_json::{Map, Value, json};
use types::ToolError;
use worldline_case::canon;
use worldline_case::error_kind::ErrorKind;
use worldline_case::wide_integer;
use worldline_case::world::compare::{Equality, Numbers};
use worldline_case::world::file_path;
use worldline_case::world::state::{FileData, State, Write};
use worldline_case::world::tools::AsOf;
use worldline_log::log::rules;

/// The state a call sees, what it read and what it wrote.
pub(super) struct Frame {
    pub state: State,
    pub as_of: AsOf,
    pub writes: Vec<Write>,
    /// What the call read, in order (`["get", table, key]`, ...).
    pub reads: Vec<Value>,
    undo: Vec<Undo>,
    /// Bytes read and written so far (requests and answers), against the
    /// per-call caps.
    read_bytes: u64,
    write_bytes: u64,
    /// The run's rules: whether JSON holding an integer no 64 bits hold is
    /// refused (rules 2), how a file's path is read and whether an update
    /// may change a row's key (rules 6).
    pub(super) rules: u32,
}

/// How much one service call may read: calls to `state` that read, and
/// the bytes they asked with and were answered (docs/formats.md,
/// "HostServices").
pub(super) const MAX_READS: usize = 10_000;
pub(super) const MAX_READ_BYTES: u64 = 64 << 20;
/// How much one service call may write: row and file writes, and their
/// bytes.
pub(super) const MAX_WRITES: usize = 10_000;
pub(super) const MAX_WRITE_BYTES: u64 = 16 << 20;

/// A service call that went past a per-call cap: the call traps there and
/// answers `failed` (the trap's message names the cap).
#[derive(Debug)]
pub(super) struct Limit(String);

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "limit: {}", self.0)
    }
}

impl std::error::Error for Limit {}

/// Whether one more of `count` so far and `bytes` in all stay within the
/// caps; else the limit, in words (`more than 10000 reads of the world`).
fn within(
    (count, max_count): (usize, usize),
    (bytes, max_bytes): (u64, u64),
    (of, participle): (&str, &str),
    advice: &str,
) -> Result<(), Limit> {
    let past = if count >= max_count {
        format!("{max_count} {of}")
    } else if bytes > max_bytes {
        format!("{} {participle}", worldline_case::bounded::size(max_bytes))
    } else {
        return Ok(());
    };
    Err(Limit(format!(
        "more than {past} the world in one call; {advice}"
    )))
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
    /// Whether JSON from the service holding an integer no 64 bits hold
    /// is refused (rules 2, `rules::SERVICE_INTEGERS_PAST_64_BITS`).
    pub(super) fn wide_refused(&self) -> bool {
        self.rules >= rules::SERVICE_INTEGERS_PAST_64_BITS
    }

    /// The world file (or prefix) `path` names under the run's rules:
    /// read by `normal` from rules 6, as the world's own file tools read
    /// it ([`file_path::key_under`]).
    fn file_key(
        &self,
        path: &str,
        normal: fn(&str) -> Result<String, String>,
    ) -> Result<String, ToolError> {
        let as_read = self.rules >= rules::SERVICE_FILE_PATHS_AS_READ;
        (file_path::key_under(path, as_read, normal))
            .map(std::borrow::Cow::into_owned)
            .map_err(|why| error(ErrorKind::InvalidArgs, why))
    }

    pub(super) fn new(state: State, as_of: AsOf, run_rules: u32) -> Self {
        Frame {
            rules: run_rules,
            state,
            as_of,
            writes: Vec::new(),
            reads: Vec::new(),
            undo: Vec::new(),
            read_bytes: 0,
            write_bytes: 0,
        }
    }

    /// Count a read of `size` bytes (what was asked and answered) and note
    /// it, or stop the call past a cap (the read is not noted then).
    fn read(&mut self, record: Value, size: usize) -> Result<(), Limit> {
        self.read_bytes += size as u64;
        within(
            (self.reads.len(), MAX_READS),
            (self.read_bytes, MAX_READ_BYTES),
            ("reads of", "read from"),
            "read less per call (one query instead of a get per row, a narrower query)",
        )?;
        self.reads.push(record);
        Ok(())
    }

    /// The state as it was before the call.
    pub(super) fn restore(mut self) -> State {
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

    /// Make a write of `size` bytes, or stop the call past a cap (nothing
    /// is written then).
    fn write(&mut self, w: Write, size: usize) -> Result<(), Limit> {
        self.write_bytes += size as u64;
        within(
            (self.writes.len(), MAX_WRITES),
            (self.write_bytes, MAX_WRITE_BYTES),
            ("writes to", "written to"),
            "write less per call",
        )?;
        self.apply(w);
        Ok(())
    }

    fn apply(&mut self, w: Write) {
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

    fn table(&self, table: &str) -> Result<&worldline_case::world::state::Table, ToolError> {
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

/// `json` read as a JSON object, `what` naming it in the refusal; one
/// holding an integer past 64 bits is refused when `wide_refused`.
fn object(json: &str, what: &str, wide_refused: bool) -> Result<Map<String, Value>, ToolError> {
    let wide = || wide_integer::find(json).filter(|_| wide_refused);
    match serde_json::from_str(json) {
        Ok(Value::Object(_)) if let Some(wide) = wide() => Err(error(
            ErrorKind::InvalidArgs,
            format!("{what}: {}", wide.message()),
        )),
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

/// A host function's answer: a trap (past a [`Limit`]) or the service's
/// typed result.
type Answer<T> = wasmtime::Result<Result<T, ToolError>>;

impl state::Host for ServiceData {
    fn get(&mut self, table: String, key: String) -> Answer<Option<String>> {
        let f = &mut self.frame;
        let row = f.visible(&table, &key).map(|r| r.map(canon::to_string));
        let size = table.len()
            + key.len()
            + row
                .as_ref()
                .map_or(0, |r| r.as_ref().map_or(0, String::len));
        f.read(json!(["get", table, key]), size)?;
        Ok(row)
    }

    fn query(&mut self, table: String, where_json: String) -> Answer<Vec<String>> {
        let f = &mut self.frame;
        let filter = match object(&where_json, "the query's `where`", f.wide_refused()) {
            Ok(filter) => filter,
            Err(e) => return Ok(Err(e)),
        };
        let eq = Equality::new(Numbers::ByValue, f.as_of.times).ordering_exactly(f.as_of.exact);
        let rows = match f.table(&table) {
            Ok(t) => t
                .in_key_order()
                .into_iter()
                .map(|(_, r)| r)
                .filter(|r| {
                    !f.as_of.hides(r)
                        && filter
                            .iter()
                            .all(|(k, v)| r.get(k).is_some_and(|have| eq.same(have, v)))
                })
                .map(canon::to_string)
                .collect::<Vec<_>>(),
            Err(e) => {
                f.read(json!(["query", table, filter]), where_json.len())?;
                return Ok(Err(e));
            }
        };
        let size = table.len() + where_json.len() + rows.iter().map(String::len).sum::<usize>();
        f.read(json!(["query", table, filter]), size)?;
        Ok(Ok(rows))
    }

    fn insert(&mut self, table: String, row_json: String) -> Answer<String> {
        let f = &mut self.frame;
        let mut row = match object(&row_json, "the new row", f.wide_refused()) {
            Ok(row) => row,
            Err(e) => return Ok(Err(e)),
        };
        let t = match f.table(&table) {
            Ok(t) => t,
            Err(e) => return Ok(Err(e)),
        };
        let key = match row.get(&t.key) {
            Some(k) if !k.is_null() => canon::key_of(k),
            _ => {
                let value = t.ids.next(&table, &t.rows, f.as_of.fresh_keys);
                let key = canon::key_of(&value);
                row.insert(t.key.clone(), value);
                key
            }
        };
        if t.rows.contains_key(&key) {
            return Ok(Err(error(
                ErrorKind::Conflict,
                format!("{table} row `{key}` already exists"),
            )));
        }
        let size = table.len() + key.len() + row_json.len();
        f.write(
            Write::Put {
                table,
                key: key.clone(),
                row: Value::Object(row),
            },
            size,
        )?;
        Ok(Ok(key))
    }

    fn update(&mut self, table: String, key: String, fields_json: String) -> Answer<String> {
        let f = &mut self.frame;
        let fields = match object(&fields_json, "the fields to set", f.wide_refused()) {
            Ok(fields) => fields,
            Err(e) => return Ok(Err(e)),
        };
        let before = match f.visible(&table, &key) {
            Ok(Some(Value::Object(before))) => before,
            Ok(_) => {
                return Ok(Err(error(
                    ErrorKind::NotFound,
                    format!("no {table} row `{key}`"),
                )));
            }
            Err(e) => return Ok(Err(e)),
        };
        // From rules 6 the key field stays the key the row is found by.
        if f.rules >= rules::SERVICE_UPDATE_KEEPS_THE_KEY
            && let Ok(t) = f.table(&table)
            && let Some(v) = fields.get(&t.key)
            && canon::key_of(v) != key
        {
            let k = &t.key;
            return Ok(Err(error(
                ErrorKind::InvalidArgs,
                format!(
                    "update of {table} row `{key}` sets `{k}`, its key, to {}: the row would hold another key than it is found by (insert a row with the new key and delete this one)",
                    canon::to_string(v)
                ),
            )));
        }
        let mut row = before.clone();
        row.extend(fields);
        let row = Value::Object(row);
        let text = canon::to_string(&row);
        let size = table.len() + key.len() + text.len();
        f.write(Write::Put { table, key, row }, size)?;
        Ok(Ok(text))
    }

    fn delete(&mut self, table: String, key: String) -> Answer<bool> {
        let f = &mut self.frame;
        match f.visible(&table, &key) {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(Ok(false)),
            Err(e) => return Ok(Err(e)),
        }
        let size = table.len() + key.len();
        f.write(Write::Delete { table, key }, size)?;
        Ok(Ok(true))
    }

    fn read_file(&mut self, path: String) -> Answer<Vec<u8>> {
        let path = match self.frame.file_key(&path, file_path::normal_file) {
            Ok(path) => path,
            Err(e) => return Ok(Err(e)),
        };
        let f = &mut self.frame;
        let data = f.state.files.get(&path).map(FileData::to_bytes);
        let size = path.len() + data.as_ref().map_or(0, Vec::len);
        f.read(json!(["read-file", path]), size)?;
        Ok(data.ok_or_else(|| error(ErrorKind::NotFound, format!("no world file `{path}`"))))
    }

    fn write_file(&mut self, path: String, data: Vec<u8>) -> Answer<()> {
        if path.is_empty() {
            return Ok(Err(error(ErrorKind::InvalidArgs, "empty path")));
        }
        let path = match self.frame.file_key(&path, file_path::normal_file) {
            Ok(path) => path,
            Err(e) => return Ok(Err(e)),
        };
        let size = path.len() + data.len();
        self.frame.write(
            Write::File {
                path,
                data: FileData::from_bytes(data),
            },
            size,
        )?;
        Ok(Ok(()))
    }

    fn list_files(&mut self, prefix: String) -> wasmtime::Result<Vec<String>> {
        // A prefix that climbs above the world's files lists none of them
        // (this call answers no error).
        let prefix = match self.frame.file_key(&prefix, file_path::normal_prefix) {
            Ok(prefix) => prefix,
            Err(_) => return Ok(Vec::new()),
        };
        let f = &mut self.frame;
        let names: Vec<String> = f
            .state
            .files
            .keys()
            .filter(|p| p.starts_with(&prefix))
            .cloned()
            .collect();
        let size = prefix.len() + names.iter().map(String::len).sum::<usize>();
        f.read(json!(["list-files", prefix]), size)?;
        Ok(names)
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

    /// What a service hands over as JSON (a row, the fields to set, a
    /// query's `where`) holding an integer no 64 bits hold is refused under
    /// rules 2, and read as before under 1.
    #[test]
    fn a_service_s_json_with_an_integer_past_64_bits_is_refused_under_rules_2() {
        let wide = r#"{"n": 18446744073709551616}"#;
        assert!(object(wide, "the new row", false).is_ok());
        let e = object(wide, "the fields to set", true).unwrap_err();
        assert!(matches!(e.kind, types::ErrorKind::InvalidArgs));
        assert!(
            e.message
                .starts_with("the fields to set: the integer 18446744073709551616 is past 64 bits"),
            "{}",
            e.message
        );
        assert!(object(r#"{"n": "18446744073709551616", "m": 1e20}"#, "x", true).is_ok());
    }

    #[test]
    fn restore_takes_every_write_back() {
        let mut state = State::default();
        state.tables.insert(
            "t".into(),
            worldline_case::world::state::Table {
                key: "id".into(),
                rows: [("a".to_string(), json!({"id": "a", "n": 1}))]
                    .into_iter()
                    .collect(),
                ids: Default::default(),
            },
        );
        let before = state.clone();
        let mut f = Frame::new(
            state,
            AsOf::now("2026-01-01T00:00:00Z".into()),
            rules::CURRENT,
        );
        f.apply(Write::Put {
            table: "t".into(),
            key: "a".into(),
            row: json!({"id": "a", "n": 2}),
        });
        f.apply(Write::Put {
            table: "t".into(),
            key: "b".into(),
            row: json!({"id": "b"}),
        });
        f.apply(Write::Delete {
            table: "t".into(),
            key: "a".into(),
        });
        f.apply(Write::File {
            path: "x.txt".into(),
            data: FileData::Text("x".into()),
        });
        assert_eq!(f.writes.len(), 4);
        assert_eq!(f.restore(), before);
    }
}
