//! World tools: declared in `world.toml`, each one built-in operation over
//! the state (get, query, insert, update, delete, file read/write/list, or a
//! fixed response), so business worlds need no code.
//!
//! Argument templates: a string `"$name"` stands for the argument `name`,
//! `"$args"` for the whole arguments object and `"$now"` for the virtual
//! time (RFC 3339), and in a tool's `response` wrapper `"$result"` for the
//! operation's result. `"$$x"` is the literal string `"$x"`.

use super::compare::{self, Op as Cmp};
use super::schema;
use super::state::{FileData, State, Write};
use crate::canon;
use crate::error_kind::ErrorKind;
use serde::Deserialize;
use serde_json::{Map, Value, json};

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

/// When a call is answered: the virtual time, and for stale answers the
/// field whose later values are hidden.
#[derive(Debug, Clone, PartialEq)]
pub struct AsOf {
    /// RFC 3339 virtual time the answer is as of.
    pub now: String,
    /// `(field, cutoff)`: rows whose `field` is later than `cutoff` are
    /// treated as not there yet.
    pub hide_after: Option<(String, String)>,
    /// Answer with an empty result of the op's shape (`[]`, `{}`, `null`).
    pub empty: bool,
}

impl AsOf {
    pub fn now(now: String) -> Self {
        AsOf {
            now,
            hide_after: None,
            empty: false,
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
    pub limit: Option<Limit>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Limit {
    Fixed(usize),
    Arg(String),
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
    fn table(&self) -> Option<&str> {
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

    /// Whether the op writes to the state (a service tool may: it says
    /// `mutates = false` when it does not).
    fn writes(&self) -> bool {
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

/// `[[tools]]` as written: the keys of every op, so that serde refuses
/// unknown keys at their place and checks their types. [`resolve`] keeps
/// the keys the named op takes (in a typed [`Op`]), and reports a missing
/// one at the tool's place.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolToml {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    mutates: Option<bool>,
    #[serde(default)]
    params: Option<Value>,
    op: String,
    #[serde(default)]
    table: Option<String>,
    #[serde(default)]
    key_arg: Option<String>,
    #[serde(default)]
    filters: Vec<Filter>,
    #[serde(default)]
    sort: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    limit_arg: Option<String>,
    #[serde(default)]
    row: Option<Value>,
    #[serde(default)]
    set: Option<Value>,
    #[serde(default)]
    path_arg: Option<String>,
    #[serde(default)]
    content_arg: Option<String>,
    #[serde(default)]
    prefix_arg: Option<String>,
    /// `respond`: the answer; other ops: a wrapper around their result.
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    validate: Validate,
}

/// The keys every op takes, beside its own.
const COMMON_KEYS: &str = "name, description, version, mutates, params, op, response, validate";

const OPS: &str =
    "get, query, insert, update, delete, file_read, file_write, file_list, respond or service";

impl ToolToml {
    /// The op the tool names, with the keys it takes.
    fn op(&self) -> Result<Op, String> {
        let name = self.op.as_str();
        self.only_keys_of(name)?;
        let need = |value: &Option<String>, key: &str| {
            value
                .clone()
                .ok_or_else(|| format!("op `{name}` needs `{key}`"))
        };
        let row_op = || -> Result<RowOp, String> {
            Ok(RowOp {
                table: need(&self.table, "table")?,
                key_arg: self.key_arg.clone(),
            })
        };
        Ok(match name {
            "get" => Op::Get(row_op()?),
            "query" => Op::Query(Query {
                table: need(&self.table, "table")?,
                filters: self.filters.clone(),
                sort: self.sort.as_ref().map(|s| match s.strip_prefix('-') {
                    Some(f) => (f.to_string(), true),
                    None => (s.clone(), false),
                }),
                limit: match (self.limit, &self.limit_arg) {
                    (_, Some(a)) => Some(Limit::Arg(a.clone())),
                    (Some(n), None) => Some(Limit::Fixed(n)),
                    (None, None) => None,
                },
            }),
            "insert" => Op::Insert {
                table: need(&self.table, "table")?,
                row: self.row.clone().unwrap_or_else(|| json!("$args")),
            },
            "update" => {
                let row = row_op()?;
                let set = self.set.clone().ok_or("op `update` needs `set`")?;
                if !set.is_object() {
                    return Err("`set` must be a table of field = value".into());
                }
                Op::Update { row, set }
            }
            "delete" => Op::Delete(row_op()?),
            "file_read" => Op::FileRead {
                path_arg: need(&self.path_arg, "path_arg")?,
            },
            "file_write" => Op::FileWrite {
                path_arg: need(&self.path_arg, "path_arg")?,
                content_arg: need(&self.content_arg, "content_arg")?,
            },
            "file_list" => Op::FileList {
                prefix_arg: self.prefix_arg.clone().unwrap_or_else(|| "prefix".into()),
            },
            "respond" => Op::Respond {
                response: self
                    .response
                    .clone()
                    .ok_or("op `respond` needs `response`")?,
            },
            "service" => Op::Service,
            other => return Err(format!("unknown op `{other}` (use {OPS})")),
        })
    }
}

impl ToolToml {
    /// Refuse a key the op does not take (a `get` with `filters` would be
    /// silently ignored otherwise), naming the keys it takes.
    fn only_keys_of(&self, op: &str) -> Result<(), String> {
        let takes: &[&str] = match op {
            "get" | "delete" => &["table", "key_arg"],
            "query" => &["table", "filters", "sort", "limit", "limit_arg"],
            "insert" => &["table", "row"],
            "update" => &["table", "key_arg", "set"],
            "file_read" => &["path_arg"],
            "file_write" => &["path_arg", "content_arg"],
            "file_list" => &["prefix_arg"],
            _ => &[],
        };
        let given = [
            ("table", self.table.is_some()),
            ("key_arg", self.key_arg.is_some()),
            ("filters", !self.filters.is_empty()),
            ("sort", self.sort.is_some()),
            ("limit", self.limit.is_some()),
            ("limit_arg", self.limit_arg.is_some()),
            ("row", self.row.is_some()),
            ("set", self.set.is_some()),
            ("path_arg", self.path_arg.is_some()),
            ("content_arg", self.content_arg.is_some()),
            ("prefix_arg", self.prefix_arg.is_some()),
        ];
        match given.iter().find(|(k, g)| *g && !takes.contains(k)) {
            Some((key, _)) => {
                let own = if takes.is_empty() {
                    String::new()
                } else {
                    format!("{}, ", takes.join(", "))
                };
                Err(format!(
                    "op `{op}` does not take `{key}` (keys: {own}{COMMON_KEYS})"
                ))
            }
            None if self.validate == Validate::Off && op != "service" => Err(format!(
                "validate = \"off\" is for op = \"service\" tools, whose service checks its own \
                 arguments; op `{op}` needs them checked (use \"strict\" or \"lax\")"
            )),
            None => Ok(()),
        }
    }
}

/// Check a declared tool (its op's keys, its tables, its parameter schema)
/// and build it.
pub fn resolve(t: &ToolToml, state: &State) -> Result<Tool, String> {
    let name = &t.name;
    if name.is_empty() {
        return Err("tool `name` is empty".into());
    }
    let op = t.op().map_err(|m| format!("tool `{name}`: {m}"))?;
    if let Some(table) = op.table()
        && !state.tables.contains_key(table)
    {
        let known: Vec<&String> = state.tables.keys().collect();
        return Err(format!(
            "tool `{name}`: unknown table `{table}` (tables: {known:?})"
        ));
    }
    let params = t
        .params
        .clone()
        .unwrap_or_else(|| json!({"type": "object"}));
    schema::check_schema(&params)
        .map_err(|e| format!("tool `{name}`: params is not a supported JSON Schema: {e}"))?;
    Ok(Tool {
        name: name.clone(),
        description: t.description.clone(),
        version: t.version.clone().unwrap_or_else(|| "1".into()),
        mutates: t.mutates.unwrap_or(op.writes()),
        params,
        response: match op {
            Op::Respond { .. } => None,
            _ => t.response.clone(),
        },
        op,
        validate: t.validate,
    })
}

/// What a template value turns into; `None` when it names a missing argument.
pub fn render(template: &Value, args: &Value, now: &str) -> Option<Value> {
    match template {
        Value::String(s) if s.starts_with("$$") => Some(Value::String(s[1..].to_string())),
        Value::String(s) if s == "$args" => Some(args.clone()),
        Value::String(s) if s == "$now" => Some(Value::String(now.to_string())),
        Value::String(s) if s.starts_with('$') => args.get(&s[1..]).cloned(),
        Value::Object(m) => Some(Value::Object(
            m.iter()
                .filter_map(|(k, v)| render(v, args, now).map(|v| (k.clone(), v)))
                .collect(),
        )),
        Value::Array(items) => Some(Value::Array(
            items.iter().filter_map(|v| render(v, args, now)).collect(),
        )),
        other => Some(other.clone()),
    }
}

fn filter_holds(f: &Filter, row: &Value, args: &Value, now: &str) -> bool {
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
        Some(t) => match render(t, args, now) {
            None => true,
            Some(v) => op.holds(field, &v, f.ignore_case),
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

/// Run a tool against the state. The state is not changed here: the writes
/// come back for the mediator to record and apply. `None` for a service
/// tool whose arguments fit: the world's service answers it
/// (`mediate::service`).
pub fn execute(tool: &Tool, args: &Value, state: &State, as_of: &AsOf) -> Option<Outcome> {
    match checked_args(tool, args) {
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
/// `params`, converted first when it validates `lax`, as sent when `off`.
pub fn checked_args(tool: &Tool, args: &Value) -> Result<Value, ToolFailure> {
    let args = match tool.validate {
        Validate::Off => return Ok(args.clone()),
        Validate::Lax => schema::coerce(&tool.params, args),
        Validate::Strict => args.clone(),
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
    match &tool.response {
        Some(wrapper) => {
            let mut with_result = args.as_object().cloned().unwrap_or_default();
            with_result.insert("result".into(), result);
            render(wrapper, &Value::Object(with_result), &as_of.now).unwrap_or(Value::Null)
        }
        None => result,
    }
}

/// An op's result and the writes it asks for.
pub type Outcome = Result<(Value, Vec<Write>), ToolFailure>;

/// `None` for [`Op::Service`], which no declaration answers.
fn run_op(op: &Op, args: &Value, state: &State, as_of: &AsOf) -> Option<Outcome> {
    let now = as_of.now.as_str();
    Some(match op {
        Op::Get(r) => get(r, args, state, as_of),
        Op::Query(q) => Ok((query(q, args, state, as_of), vec![])),
        Op::Insert { table, row } => insert(table, row, args, state, now),
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

fn query(q: &Query, args: &Value, state: &State, as_of: &AsOf) -> Value {
    let now = as_of.now.as_str();
    let mut keyed: Vec<(&String, &Value)> = state.tables[&q.table]
        .in_key_order()
        .into_iter()
        .filter(|(_, r)| !as_of.hides(r) && q.filters.iter().all(|f| filter_holds(f, r, args, now)))
        .collect();
    if let Some((field, desc)) = &q.sort {
        let by_key = *field == state.tables[&q.table].key;
        keyed.sort_by(|(ka, a), (kb, b)| {
            let o = if by_key {
                compare::key_order(ka, kb)
            } else {
                compare::compare(
                    a.get(field).unwrap_or(&Value::Null),
                    b.get(field).unwrap_or(&Value::Null),
                )
                .unwrap_or(std::cmp::Ordering::Equal)
            };
            if *desc { o.reverse() } else { o }
        });
    }
    let rows: Vec<&Value> = keyed.into_iter().map(|(_, r)| r).collect();
    let n = match &q.limit {
        Some(Limit::Fixed(n)) => *n,
        Some(Limit::Arg(a)) => args
            .get(a)
            .and_then(Value::as_u64)
            .map_or(usize::MAX, |n| n as usize),
        None => usize::MAX,
    };
    Value::Array(rows.into_iter().take(n).cloned().collect())
}

fn insert(table: &str, template: &Value, args: &Value, state: &State, now: &str) -> Outcome {
    let t = &state.tables[table];
    let mut row = render(template, args, now).unwrap_or(Value::Null);
    let Value::Object(fields) = &mut row else {
        return Err(ToolFailure::new(
            ErrorKind::InvalidArgs,
            "the new row must be an object",
        ));
    };
    let key = match fields.get(&t.key) {
        Some(k) if !k.is_null() => canon::key_of(k),
        _ => {
            let value = t.ids.next(table, &t.rows);
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
    use crate::world::state::Table;

    /// [`execute`] on a declared tool.
    fn exec(tool: &Tool, args: &Value, state: &State, as_of: &AsOf) -> Outcome {
        execute(tool, args, state, as_of).expect("a declared tool")
    }

    fn state() -> State {
        let mut s = State::default();
        let rows = [("D1", "api", 100), ("D2", "api", 300), ("D3", "db", 200)]
            .iter()
            .map(|(id, svc, at)| (id.to_string(), json!({"id": id, "service": svc, "at": at})))
            .collect();
        s.tables.insert(
            "deploys".into(),
            Table {
                key: "id".into(),
                rows,
                ..Default::default()
            },
        );
        s
    }

    fn at(now: &str) -> AsOf {
        AsOf::now(now.to_string())
    }

    fn tool(toml_src: &str) -> Tool {
        let t: ToolToml = toml::from_str(toml_src).unwrap();
        resolve(&t, &state()).unwrap()
    }

    #[test]
    fn query_filters_sorts_and_limits() {
        let t = tool(
            "name='q'\nop='query'\ntable='deploys'\nsort='-at'\nlimit_arg='limit'\nfilters=[{field='service', eq='$service'}]",
        );
        let (out, writes) = exec(
            &t,
            &json!({"service": "api", "limit": 1}),
            &state(),
            &at(""),
        )
        .unwrap();
        assert_eq!(out, json!([{"id": "D2", "service": "api", "at": 300}]));
        assert!(writes.is_empty());
        let (all, _) = exec(&t, &json!({}), &state(), &at("")).unwrap();
        assert_eq!(
            all.as_array().unwrap().len(),
            3,
            "a filter on a missing argument is skipped"
        );
    }

    #[test]
    fn update_returns_a_write_and_leaves_state_alone() {
        let t =
            tool("name='u'\nop='update'\ntable='deploys'\nset={status='rolled_back', by='$who'}");
        let s = state();
        let (row, writes) = exec(&t, &json!({"id": "D1", "who": "bot"}), &s, &at("")).unwrap();
        assert_eq!(row["status"], "rolled_back");
        assert_eq!(row["by"], "bot");
        assert_eq!(writes.len(), 1);
        assert_eq!(s.row("deploys", "D1").unwrap().get("status"), None);
        assert!(t.mutates);
        let missing = exec(&t, &json!({"id": "nope"}), &s, &at("")).unwrap_err();
        assert_eq!(missing.kind, ErrorKind::NotFound);
    }

    #[test]
    fn insert_generates_keys_and_refuses_duplicates() {
        let t = tool("name='i'\nop='insert'\ntable='deploys'\nrow={service='$service', at='$now'}");
        let (row, _) = exec(
            &t,
            &json!({"service": "web"}),
            &state(),
            &at("2026-01-01T00:00:00Z"),
        )
        .unwrap();
        assert_eq!(
            row,
            json!({"id": "deploys-4", "service": "web", "at": "2026-01-01T00:00:00Z"})
        );
        let dup = tool("name='i'\nop='insert'\ntable='deploys'");
        assert_eq!(
            exec(&dup, &json!({"id": "D1"}), &state(), &at(""))
                .unwrap_err()
                .kind,
            ErrorKind::Conflict
        );
    }

    #[test]
    fn stale_answers_hide_newer_rows_and_shift_now() {
        let mut s = State::default();
        let rows = [
            ("D1", "2026-03-01T11:00:00Z"),
            ("D2", "2026-03-01T11:50:00Z"),
        ]
        .iter()
        .map(|(id, at)| (id.to_string(), json!({"id": id, "at": at})))
        .collect();
        s.tables.insert(
            "deploys".into(),
            Table {
                key: "id".into(),
                rows,
                ..Default::default()
            },
        );
        let t: ToolToml = toml::from_str(
            "name='q'\nop='query'\ntable='deploys'\nresponse={deploys='$result', as_of='$now'}",
        )
        .unwrap();
        let t = resolve(&t, &s).unwrap();
        let stale = AsOf {
            now: "2026-03-01T11:45:00Z".into(),
            hide_after: Some(("at".into(), "2026-03-01T11:45:00Z".into())),
            empty: false,
        };
        let (out, _) = exec(&t, &json!({}), &s, &stale).unwrap();
        assert_eq!(out["as_of"], "2026-03-01T11:45:00Z");
        assert_eq!(out["deploys"].as_array().unwrap().len(), 1);
        assert_eq!(out["deploys"][0]["id"], "D1");
    }

    #[test]
    fn unknown_tables_and_ops_are_named() {
        let t: ToolToml = toml::from_str("name='x'\nop='get'\ntable='nope'").unwrap();
        assert!(
            resolve(&t, &state())
                .unwrap_err()
                .contains("unknown table `nope`")
        );
        let t: ToolToml = toml::from_str("name='x'\nop='explode'").unwrap();
        assert!(
            resolve(&t, &state())
                .unwrap_err()
                .contains("unknown op `explode`")
        );
    }

    #[test]
    fn each_op_is_checked_for_the_keys_it_needs() {
        let err = |src: &str| {
            let t: ToolToml = toml::from_str(src).unwrap();
            resolve(&t, &state()).unwrap_err()
        };
        assert_eq!(
            err("name='g'\nop='get'"),
            "tool `g`: op `get` needs `table`"
        );
        assert_eq!(
            err("name='u'\nop='update'\ntable='deploys'"),
            "tool `u`: op `update` needs `set`"
        );
        assert_eq!(
            err("name='u'\nop='update'\ntable='deploys'\nset=1"),
            "tool `u`: `set` must be a table of field = value"
        );
        assert_eq!(
            err("name='w'\nop='file_write'\npath_arg='p'"),
            "tool `w`: op `file_write` needs `content_arg`"
        );
        assert_eq!(
            err("name='r'\nop='respond'"),
            "tool `r`: op `respond` needs `response`"
        );
        assert_eq!(err("name=''\nop='respond'"), "tool `name` is empty");
        let unknown = toml::from_str::<ToolToml>("name='g'\nop='get'\ntable='t'\ncolour='red'");
        assert!(
            unknown
                .unwrap_err()
                .message()
                .contains("unknown field `colour`")
        );
    }

    #[test]
    fn a_respond_tool_answers_its_response_and_other_ops_wrap_theirs() {
        let t = tool("name='r'\nop='respond'\nresponse={ok='$x'}");
        assert_eq!(t.response, None);
        assert!(!t.mutates);
        let (out, _) = exec(&t, &json!({"x": 1}), &state(), &at("")).unwrap();
        assert_eq!(out, json!({"ok": 1}));
        let t = tool("name='g'\nop='get'\ntable='deploys'\nresponse={row='$result'}");
        let (out, _) = exec(&t, &json!({"id": "D1"}), &state(), &at("")).unwrap();
        assert_eq!(out["row"]["service"], "api");
    }
}
