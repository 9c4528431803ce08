//! World tools: declared in `world.toml` (checked and resolved by
//! `declared.rs`), each one built-in operation over the state (get, query,
//! insert, update, delete, file read/write/list, or a fixed response), so
//! business worlds need no code; here, the tools and running them.
//!
//! Argument templates: a string `"$name"` stands for the argument `name`,
//! `"$args"` for the whole arguments object and `"$now"` for the virtual
//! time (RFC 3339), and in a tool's `response` wrapper `"$result"` for the
//! operation's result. `"$$x"` is the literal string `"$x"`.
//!
//! Why one `validate` key per tool, `strict`, `lax` or `off` (was decision
//! 0143): τ-bench passes arguments unvalidated and AgentDojo coerces `"12"`, so
//! it is a per-tool choice; one key has no impossible combination (as `validate
//! = false` with `coerce = true` would), and the event keeps what the agent
//! sent (not the converted arguments), so a replay converts again identically.
//! `off` is for `op = "service"` only, since a declarative op reads arguments
//! the schema guarantees.

use super::compare::{self, Op as Cmp};
use super::schema;
use super::state::{FileData, State, Write};
use crate::canon;
use crate::error_kind::ErrorKind;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// Why a tool call failed, as the guest sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    pub kind: ErrorKind,
    pub message: String,
}

impl ToolFailure {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolFailure {
            kind,
            message: message.into(),
        }
    }
}

/// A resolved tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub version: String,
    pub mutates: bool,
    /// JSON Schema of the arguments object.
    pub params: Value,
    pub op: Op,
    /// Optional wrapper around the op's result (`"$result"` inside it).
    pub response: Option<Value>,
    /// How a call's arguments are checked against `params`.
    pub validate: Validate,
}

/// `validate` of a `[[tools]]`: how a call's arguments meet `params`
/// (which the agent is shown whatever this says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validate {
    /// Arguments must fit the schema as sent (the default).
    #[default]
    Strict,
    /// Text where the schema asks for a number, an integer or a boolean is
    /// converted first (`"12"` → `12`), as pydantic's lax mode does; the
    /// tool (or service) sees the converted arguments, the log what was sent.
    Lax,
    /// Not checked at all: a service tool whose service validates for
    /// itself (as benchmarks that pass arguments through unvalidated do).
    Off,
}

/// When a call is answered: the virtual time, for stale answers the field
/// whose later values are hidden, and how its filters tell values equal.
#[derive(Debug, Clone, PartialEq)]
pub struct AsOf {
    /// RFC 3339 virtual time the answer is as of.
    pub now: String,
    /// `(field, cutoff)`: rows whose `field` is later than `cutoff` are
    /// treated as not there yet.
    pub hide_after: Option<(String, String)>,
    /// Answer with an empty result of the op's shape (`[]`, `{}`, `null`).
    pub empty: bool,
    /// Whether an `eq`/`ne` filter (and a service's `state.query`) tells
    /// timestamps equal by the time they name ([`compare::Equality`]):
    /// under the run's rules from 5.
    pub times: bool,
    /// Whether a query's `limit` is the default of its `limit_arg` and a
    /// limit argument that is no count is `invalid-args` ([`row_limit`]):
    /// under the run's rules from 5.
    pub limits: bool,
    /// Whether a `count` key a row holds is passed over for a new row
    /// ([`super::ids::Ids::next`]): under the run's rules from 6.
    pub fresh_keys: bool,
    /// Whether `gt`/`gte`/`lt`/`lte` order integers exactly
    /// ([`compare::Equality::exact`]): under the run's rules from 6.
    pub exact: bool,
    /// Whether a `lax` tool's arguments take a number where the schema
    /// asks for a boolean (`0`, `1`) or an integer (`7.0`), converted
    /// ([`schema::coerce`]): under the run's rules from 7.
    pub lax_numbers: bool,
}

impl AsOf {
    /// An answer at `now` under the current rules (a run under earlier
    /// ones sets [`AsOf::times`] and [`AsOf::limits`] as they say).
    pub fn now(now: String) -> Self {
        AsOf {
            now,
            hide_after: None,
            empty: false,
            times: true,
            limits: true,
            fresh_keys: true,
            exact: true,
            lax_numbers: true,
        }
    }

    /// Whether a stale answer treats `row` as not there yet.
    pub fn hides(&self, row: &Value) -> bool {
        let Some((field, cutoff)) = &self.hide_after else {
            return false;
        };
        match row.get(field) {
            Some(Value::String(at)) => {
                compare::compare_text(at, cutoff) == std::cmp::Ordering::Greater
            }
            _ => false,
        }
    }
}

/// A tool's operation, with the keys it takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Get(RowOp),
    Query(Query),
    Insert {
        table: String,
        /// Template of the new row (default `"$args"`).
        row: Value,
    },
    Update {
        row: RowOp,
        /// Template of the fields to set (a table).
        set: Value,
    },
    Delete(RowOp),
    FileRead {
        path_arg: String,
    },
    FileWrite {
        path_arg: String,
        content_arg: String,
    },
    FileList {
        prefix_arg: String,
    },
    Respond {
        response: Value,
    },
    /// Answered by the world's service component (`[service]`).
    Service,
}

/// An op on one row: the argument holding its key (default: the table's
/// key field).
#[derive(Debug, Clone, PartialEq)]
pub struct RowOp {
    pub table: String,
    pub key_arg: Option<String>,
}

/// A `query` op.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub table: String,
    pub filters: Vec<Filter>,
    /// The field to sort by, and whether descending (`sort = "-at"`).
    pub sort: Option<(String, bool)>,
    /// `limit`: at most this many rows; with `limit_arg`, when the call
    /// leaves that argument out (from rules 5).
    pub limit: Option<usize>,
    /// `limit_arg`: the argument that says how many rows at most.
    pub limit_arg: Option<String>,
}

/// One query condition: `field <cmp> value`; a condition whose value is an
/// argument the caller left out is skipped.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    pub field: String,
    #[serde(default)]
    pub eq: Option<Value>,
    #[serde(default)]
    pub ne: Option<Value>,
    #[serde(default)]
    pub gt: Option<Value>,
    #[serde(default)]
    pub gte: Option<Value>,
    #[serde(default)]
    pub lt: Option<Value>,
    #[serde(default)]
    pub lte: Option<Value>,
    #[serde(default)]
    pub contains: Option<Value>,
    /// Compare text without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
}

impl Op {
    /// The table the op works on, if it works on one.
    pub fn table(&self) -> Option<&str> {
        match self {
            Op::Get(r) | Op::Delete(r) | Op::Update { row: r, .. } => Some(&r.table),
            Op::Query(q) => Some(&q.table),
            Op::Insert { table, .. } => Some(table),
            Op::FileRead { .. }
            | Op::FileWrite { .. }
            | Op::FileList { .. }
            | Op::Respond { .. }
            | Op::Service => None,
        }
    }

    /// The op's name, as `op = "..."` writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Get(_) => "get",
            Op::Query(_) => "query",
            Op::Insert { .. } => "insert",
            Op::Update { .. } => "update",
            Op::Delete(_) => "delete",
            Op::FileRead { .. } => "file_read",
            Op::FileWrite { .. } => "file_write",
            Op::FileList { .. } => "file_list",
            Op::Respond { .. } => "respond",
            Op::Service => "service",
        }
    }

    /// Whether a stale answer's `field` ([`AsOf::hides`]) can hide rows
    /// from the op's answer: a `get` or a `query` reads rows through it, a
    /// service's reads of the state do; the other ops read no rows through
    /// it (a write, a world file, a fixed response).
    pub fn hides_rows(&self) -> bool {
        matches!(self, Op::Get(_) | Op::Query(_) | Op::Service)
    }

    /// Whether the op writes to the state (a service tool may: it says
    /// `mutates = false` when it does not).
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Op::Insert { .. }
                | Op::Update { .. }
                | Op::Delete(_)
                | Op::FileWrite { .. }
                | Op::Service
        )
    }
}

/// What a template value turns into; `None` when it names a missing argument.
pub fn render(template: &Value, args: &Value, now: &str) -> Option<Value> {
    render_with(template, now, &mut |name| match name {
        "args" => Some(args.clone()),
        _ => args.get(name).cloned(),
    })
}

/// [`render`], each `"$name"` (`"$args"` included) the value `value` gives
/// for `name`, taken in the template's order.
pub(super) fn render_with(
    template: &Value,
    now: &str,
    value: &mut impl FnMut(&str) -> Option<Value>,
) -> Option<Value> {
    match template {
        Value::String(s) if s.starts_with("$$") => Some(Value::String(s[1..].to_string())),
        Value::String(s) if s == "$now" => Some(Value::String(now.to_string())),
        Value::String(s) if s.starts_with('$') => value(&s[1..]),
        Value::Object(m) => Some(Value::Object(
            m.iter()
                .filter_map(|(k, v)| render_with(v, now, value).map(|v| (k.clone(), v)))
                .collect(),
        )),
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter_map(|v| render_with(v, now, value))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

/// How many times `template` holds the string `placeholder`.
fn uses(template: &Value, placeholder: &str) -> usize {
    match template {
        Value::String(s) => usize::from(s == placeholder),
        Value::Object(m) => m.values().map(|v| uses(v, placeholder)).sum(),
        Value::Array(items) => items.iter().map(|v| uses(v, placeholder)).sum(),
        _ => 0,
    }
}

fn filter_holds(f: &Filter, row: &Value, args: &Value, as_of: &AsOf) -> bool {
    let eq = compare::Equality::new(compare::Numbers::ByValue, as_of.times)
        .ordering_exactly(as_of.exact);
    let field = row.get(&f.field).unwrap_or(&Value::Null);
    let conds = [
        (&f.eq, Cmp::Eq),
        (&f.ne, Cmp::Ne),
        (&f.gt, Cmp::Gt),
        (&f.gte, Cmp::Gte),
        (&f.lt, Cmp::Lt),
        (&f.lte, Cmp::Lte),
        (&f.contains, Cmp::Contains),
    ];
    conds.iter().all(|(template, op)| match template {
        None => true,
        Some(t) => match render(t, args, &as_of.now) {
            None => true,
            Some(v) => op.holds_with(field, &v, f.ignore_case, eq),
        },
    })
}

fn arg_str(args: &Value, name: &str) -> Result<String, ToolFailure> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) if !v.is_null() => Ok(canon::key_of(v)),
        _ => Err(ToolFailure::new(
            ErrorKind::InvalidArgs,
            format!("missing argument `{name}`"),
        )),
    }
}

/// `args` with the file path a `file_read` or `file_write` tool takes
/// read as the world file it names (`./a` is `a`: `file_path.rs`), and a
/// `file_list` tool's prefix as a folder; other tools' arguments as they
/// are.
/// With `folders_refused` (rules 6), a file's path that ends in `/` is
/// `invalid-args` ([`super::file_path::normal_file`]).
pub fn with_file_paths<'a>(
    tool: &Tool,
    args: &'a Value,
    folders_refused: bool,
) -> Result<Cow<'a, Value>, ToolFailure> {
    use super::file_path::{normal, normal_file, normal_prefix};
    let (path_arg, folder) = match &tool.op {
        Op::FileRead { path_arg } | Op::FileWrite { path_arg, .. } => (path_arg, false),
        Op::FileList { prefix_arg } => (prefix_arg, true),
        _ => return Ok(Cow::Borrowed(args)),
    };
    let Some(Value::String(path)) = args.get(path_arg) else {
        return Ok(Cow::Borrowed(args));
    };
    let key = match (folder, folders_refused) {
        (true, _) => normal_prefix(path),
        (false, true) => normal_file(path),
        (false, false) => normal(path),
    };
    let key = key.map_err(|m| ToolFailure::new(ErrorKind::InvalidArgs, m))?;
    let mut args = args.clone();
    args[path_arg.as_str()] = Value::String(key);
    Ok(Cow::Owned(args))
}

/// Run a tool against the state. The state is not changed here: the writes
/// come back for the mediator to record and apply. `None` for a service
/// tool whose arguments fit: the world's service answers it
/// (`mediate::service`).
pub fn execute(tool: &Tool, args: &Value, state: &State, as_of: &AsOf) -> Option<Outcome> {
    match checked_args(tool, args, as_of) {
        Ok(args) => run_checked(tool, &args, state, as_of),
        Err(f) => Some(Err(f)),
    }
}

/// [`execute`] with arguments [`checked_args`] already gave.
pub fn run_checked(tool: &Tool, args: &Value, state: &State, as_of: &AsOf) -> Option<Outcome> {
    let outcome = run_op(&tool.op, args, state, as_of)?;
    Some(outcome.map(|(result, writes)| (shape(tool, args, as_of, result), writes)))
}

/// The arguments the tool runs with: refused when they do not fit its
/// `params`, converted first when it validates `lax` (numbers too as
/// `as_of` says), as sent when `off`.
pub fn checked_args<'a>(
    tool: &Tool,
    args: &'a Value,
    as_of: &AsOf,
) -> Result<Cow<'a, Value>, ToolFailure> {
    let args = match tool.validate {
        Validate::Off => return Ok(Cow::Borrowed(args)),
        Validate::Lax => Cow::Owned(schema::coerce(&tool.params, args, as_of.lax_numbers)),
        Validate::Strict => Cow::Borrowed(args),
    };
    schema::validate(&tool.params, &args)
        .map_err(|e| ToolFailure::new(ErrorKind::InvalidArgs, e))?;
    Ok(args)
}

/// What the caller gets from an op's result: an empty result of its shape
/// for an `empty` answer, wrapped in the tool's `response` when it has one.
pub fn shape(tool: &Tool, args: &Value, as_of: &AsOf, mut result: Value) -> Value {
    if as_of.empty {
        result = match result {
            Value::Array(_) => json!([]),
            Value::Object(_) => json!({}),
            _ => Value::Null,
        };
    }
    let Some(wrapper) = &tool.response else {
        return result;
    };
    // The result moved into the answer where the wrapper names it once
    // (and not `$args`, which holds it too); copied where it names it more.
    if uses(wrapper, "$result") == 1 && uses(wrapper, "$args") == 0 {
        let mut result = Some(result);
        return render_with(wrapper, &as_of.now, &mut |name| match name {
            "result" => result.take(),
            _ => args.get(name).cloned(),
        })
        .unwrap_or(Value::Null);
    }
    let mut with_result = args.as_object().cloned().unwrap_or_default();
    with_result.insert("result".into(), result);
    render(wrapper, &Value::Object(with_result), &as_of.now).unwrap_or(Value::Null)
}

/// An op's result and the writes it asks for.
pub type Outcome = Result<(Value, Vec<Write>), ToolFailure>;

/// `None` for [`Op::Service`], which no declaration answers.
fn run_op(op: &Op, args: &Value, state: &State, as_of: &AsOf) -> Option<Outcome> {
    let now = as_of.now.as_str();
    Some(match op {
        Op::Get(r) => get(r, args, state, as_of),
        Op::Query(q) => query(q, args, state, as_of).map(|rows| (rows, vec![])),
        Op::Insert { table, row } => insert(table, row, args, state, as_of),
        Op::Update { row, set } => update(row, set, args, state, now),
        Op::Delete(r) => delete(r, args, state),
        Op::FileRead { path_arg } => file_read(path_arg, args, state),
        Op::FileWrite {
            path_arg,
            content_arg,
        } => file_write(path_arg, content_arg, args),
        Op::FileList { prefix_arg } => {
            let prefix = args.get(prefix_arg).and_then(Value::as_str).unwrap_or("");
            let paths: Vec<&String> = state
                .files
                .keys()
                .filter(|p| p.starts_with(prefix))
                .collect();
            Ok((json!(paths), vec![]))
        }
        Op::Respond { response } => {
            Ok((render(response, args, now).unwrap_or(Value::Null), vec![]))
        }
        Op::Service => return None,
    })
}

impl RowOp {
    /// The row's key from the call's arguments.
    fn key(&self, args: &Value, state: &State) -> Result<String, ToolFailure> {
        let key_arg = match &self.key_arg {
            Some(a) => a.as_str(),
            None => state
                .tables
                .get(&self.table)
                .map_or("id", |t| t.key.as_str()),
        };
        arg_str(args, key_arg)
    }

    fn not_found(&self, key: &str) -> ToolFailure {
        ToolFailure::new(
            ErrorKind::NotFound,
            format!("no {} row `{key}`", self.table),
        )
    }
}

fn get(r: &RowOp, args: &Value, state: &State, as_of: &AsOf) -> Outcome {
    let key = r.key(args, state)?;
    match state.row(&r.table, &key) {
        Some(row) if !as_of.hides(row) => Ok((row.clone(), vec![])),
        _ => Err(r.not_found(&key)),
    }
}

fn query(q: &Query, args: &Value, state: &State, as_of: &AsOf) -> Result<Value, ToolFailure> {
    let n = row_limit(q, args, as_of)?;
    let mut keyed: Vec<(&String, &Value)> = state.tables[&q.table]
        .in_key_order()
        .into_iter()
        .filter(|(_, r)| {
            !as_of.hides(r) && q.filters.iter().all(|f| filter_holds(f, r, args, as_of))
        })
        .collect();
    if let Some((field, desc)) = &q.sort {
        let by_key = *field == state.tables[&q.table].key;
        keyed.sort_by(|(ka, a), (kb, b)| {
            let o = if by_key {
                compare::key_order(ka, kb)
            } else {
                compare::compare_with(
                    a.get(field).unwrap_or(&Value::Null),
                    b.get(field).unwrap_or(&Value::Null),
                    as_of.exact,
                )
                .unwrap_or(std::cmp::Ordering::Equal)
            };
            if *desc { o.reverse() } else { o }
        });
    }
    let rows = keyed.into_iter().take(n).map(|(_, r)| r.clone());
    Ok(Value::Array(rows.collect()))
}

/// How many rows a query answers at most: its `limit_arg` argument when
/// the call gives one, else its `limit`, else all. Under [`AsOf::limits`]
/// (rules 5) the argument must be a whole number, 0 or more; before, the
/// argument's name alone made `limit` ignored, and an argument that was
/// no count (`-1`, `"3"`) answered every row.
fn row_limit(q: &Query, args: &Value, as_of: &AsOf) -> Result<usize, ToolFailure> {
    let given =
        (q.limit_arg.as_ref()).and_then(|a| Some((a, args.get(a).filter(|v| !v.is_null())?)));
    if !as_of.limits {
        return Ok(match &q.limit_arg {
            Some(_) => given
                .and_then(|(_, v)| v.as_u64())
                .map_or(usize::MAX, |n| n as usize),
            None => q.limit.unwrap_or(usize::MAX),
        });
    }
    let Some((name, v)) = given else {
        return Ok(q.limit.unwrap_or(usize::MAX));
    };
    let whole = |f: f64| (f >= 0.0 && f.fract() == 0.0).then_some(f as u64);
    match v.as_u64().or_else(|| v.as_f64().and_then(whole)) {
        Some(n) => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        None => Err(ToolFailure::new(
            ErrorKind::InvalidArgs,
            format!("`{name}` is how many rows at most: a whole number, 0 or more, not {v}"),
        )),
    }
}

fn insert(table: &str, template: &Value, args: &Value, state: &State, as_of: &AsOf) -> Outcome {
    let t = &state.tables[table];
    let mut row = render(template, args, &as_of.now).unwrap_or(Value::Null);
    let Value::Object(fields) = &mut row else {
        return Err(ToolFailure::new(
            ErrorKind::InvalidArgs,
            "the new row must be an object",
        ));
    };
    let key = match fields.get(&t.key) {
        Some(k) if !k.is_null() => canon::key_of(k),
        _ => {
            let value = t.ids.next(table, &t.rows, as_of.fresh_keys);
            let key = canon::key_of(&value);
            fields.insert(t.key.clone(), value);
            key
        }
    };
    if t.rows.contains_key(&key) {
        return Err(ToolFailure::new(
            ErrorKind::Conflict,
            format!("{table} row `{key}` already exists"),
        ));
    }
    let write = Write::Put {
        table: table.to_string(),
        key,
        row: row.clone(),
    };
    Ok((row, vec![write]))
}

fn update(r: &RowOp, set: &Value, args: &Value, state: &State, now: &str) -> Outcome {
    let key = r.key(args, state)?;
    let Some(Value::Object(before)) = state.row(&r.table, &key) else {
        return Err(r.not_found(&key));
    };
    let mut row: Map<String, Value> = before.clone();
    if let Some(Value::Object(fields)) = render(set, args, now) {
        row.extend(fields);
    }
    let row = Value::Object(row);
    let write = Write::Put {
        table: r.table.clone(),
        key,
        row: row.clone(),
    };
    Ok((row, vec![write]))
}

fn delete(r: &RowOp, args: &Value, state: &State) -> Outcome {
    let key = r.key(args, state)?;
    match state.row(&r.table, &key) {
        Some(row) => Ok((
            row.clone(),
            vec![Write::Delete {
                table: r.table.clone(),
                key,
            }],
        )),
        None => Err(r.not_found(&key)),
    }
}

fn file_read(path_arg: &str, args: &Value, state: &State) -> Outcome {
    let path = arg_str(args, path_arg)?;
    match state.files.get(&path) {
        Some(FileData::Text(s)) => Ok((json!({"path": path, "content": s}), vec![])),
        Some(FileData::Bytes { hex }) => Ok((json!({"path": path, "hex": hex}), vec![])),
        None => Err(ToolFailure::new(
            ErrorKind::NotFound,
            format!("no file `{path}`"),
        )),
    }
}

fn file_write(path_arg: &str, content_arg: &str, args: &Value) -> Outcome {
    let path = arg_str(args, path_arg)?;
    let content = match args.get(content_arg) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => canon::to_string(other),
        None => {
            return Err(ToolFailure::new(
                ErrorKind::InvalidArgs,
                format!("missing argument `{content_arg}`"),
            ));
        }
    };
    let write = Write::File {
        path: path.clone(),
        data: FileData::Text(content),
    };
    Ok((json!({"path": path, "written": true}), vec![write]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(op: Op) -> Tool {
        Tool {
            name: "t".into(),
            description: String::new(),
            version: String::new(),
            mutates: false,
            params: json!({}),
            op,
            response: None,
            validate: Validate::default(),
        }
    }

    #[test]
    fn file_tools_read_their_path_as_the_file_it_names_and_others_are_untouched() {
        let read = tool(Op::FileRead {
            path_arg: "p".into(),
        });
        let args = json!({"p": "./a//b.md", "q": "./x"});
        let read_args = with_file_paths(&read, &args, true).unwrap();
        assert_eq!(*read_args, json!({"p": "a/b.md", "q": "./x"}));
        let list = tool(Op::FileList {
            prefix_arg: "prefix".into(),
        });
        let prefix = json!({"prefix": "./runbooks/"});
        let listed = with_file_paths(&list, &prefix, true).unwrap();
        assert_eq!(*listed, json!({"prefix": "runbooks/"}));
        let above = with_file_paths(&read, &json!({"p": "../etc"}), true).unwrap_err();
        assert_eq!(above.kind, ErrorKind::InvalidArgs);
        let other = tool(Op::Service);
        assert!(matches!(
            with_file_paths(&other, &args, true).unwrap(),
            Cow::Borrowed(_)
        ));
    }
}
