//! World tools: declared in `world.toml`, each one built-in operation over
//! the state (get, query, insert, update, delete, file read/write/list, or a
//! fixed response), so business worlds need no code.
//!
//! Argument templates: a string `"$name"` stands for the argument `name`,
//! `"$args"` for the whole arguments object and `"$now"` for the virtual
//! time (RFC 3339), and in a tool's `response` wrapper `"$result"` for the
//! operation's result. `"$$x"` is the literal string `"$x"`.

use super::schema;
use super::state::{FileData, State, Write};
use crate::canon;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// Why a tool call failed, as the guest sees it (`error-kind` names).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    pub kind: &'static str,
    pub message: String,
}

impl ToolFailure {
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
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

    fn hides(&self, row: &Value) -> bool {
        let Some((field, cutoff)) = &self.hide_after else {
            return false;
        };
        match row.get(field) {
            Some(Value::String(at)) => compare_text(at, cutoff) == std::cmp::Ordering::Greater,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Get {
        table: String,
        key_arg: String,
    },
    Query {
        table: String,
        filters: Vec<Filter>,
        sort: Option<(String, bool)>,
        limit: Option<Limit>,
    },
    Insert {
        table: String,
        row: Value,
    },
    Update {
        table: String,
        key_arg: String,
        set: Value,
    },
    Delete {
        table: String,
        key_arg: String,
    },
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
}

/// `[[tools]]` as written.
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
    #[serde(default)]
    response: Option<Value>,
}

/// Check a declared tool against the world's tables and build it.
pub fn resolve(t: &ToolToml, state: &State) -> Result<Tool, String> {
    let name = &t.name;
    if name.is_empty() {
        return Err("tool `name` is empty".into());
    }
    let table = |what: &str| -> Result<String, String> {
        let table = t
            .table
            .clone()
            .ok_or_else(|| format!("tool `{name}`: op `{what}` needs `table`"))?;
        if !state.tables.contains_key(&table) {
            let known: Vec<&String> = state.tables.keys().collect();
            return Err(format!(
                "tool `{name}`: unknown table `{table}` (tables: {known:?})"
            ));
        }
        Ok(table)
    };
    let key_arg = |table: &str| {
        t.key_arg
            .clone()
            .unwrap_or_else(|| state.tables[table].key.clone())
    };
    let need = |v: &Option<String>, field: &str| {
        v.clone()
            .ok_or_else(|| format!("tool `{name}`: op `{}` needs `{field}`", t.op))
    };
    let op = match t.op.as_str() {
        "get" => {
            let table = table("get")?;
            Op::Get {
                key_arg: key_arg(&table),
                table,
            }
        }
        "query" => Op::Query {
            table: table("query")?,
            filters: t.filters.clone(),
            sort: t.sort.as_ref().map(|s| match s.strip_prefix('-') {
                Some(f) => (f.to_string(), true),
                None => (s.clone(), false),
            }),
            limit: match (t.limit, &t.limit_arg) {
                (_, Some(a)) => Some(Limit::Arg(a.clone())),
                (Some(n), None) => Some(Limit::Fixed(n)),
                (None, None) => None,
            },
        },
        "insert" => Op::Insert {
            table: table("insert")?,
            row: t.row.clone().unwrap_or_else(|| json!("$args")),
        },
        "update" => {
            let table = table("update")?;
            let set = t
                .set
                .clone()
                .ok_or_else(|| format!("tool `{name}`: op `update` needs `set`"))?;
            if !set.is_object() {
                return Err(format!(
                    "tool `{name}`: `set` must be a table of field = value"
                ));
            }
            Op::Update {
                key_arg: key_arg(&table),
                table,
                set,
            }
        }
        "delete" => {
            let table = table("delete")?;
            Op::Delete {
                key_arg: key_arg(&table),
                table,
            }
        }
        "file_read" => Op::FileRead {
            path_arg: need(&t.path_arg, "path_arg")?,
        },
        "file_write" => Op::FileWrite {
            path_arg: need(&t.path_arg, "path_arg")?,
            content_arg: need(&t.content_arg, "content_arg")?,
        },
        "file_list" => Op::FileList {
            prefix_arg: t.prefix_arg.clone().unwrap_or_else(|| "prefix".into()),
        },
        "respond" => Op::Respond {
            response: t
                .response
                .clone()
                .ok_or_else(|| format!("tool `{name}`: op `respond` needs `response`"))?,
        },
        other => {
            return Err(format!(
                "tool `{name}`: unknown op `{other}` (use get, query, insert, update, delete, file_read, file_write, file_list or respond)"
            ));
        }
    };
    let params = t
        .params
        .clone()
        .unwrap_or_else(|| json!({"type": "object"}));
    schema::check_schema(&params)
        .map_err(|e| format!("tool `{name}`: params is not a supported JSON Schema: {e}"))?;
    let writes = matches!(
        op,
        Op::Insert { .. } | Op::Update { .. } | Op::Delete { .. } | Op::FileWrite { .. }
    );
    Ok(Tool {
        name: name.clone(),
        description: t.description.clone(),
        version: t.version.clone().unwrap_or_else(|| "1".into()),
        mutates: t.mutates.unwrap_or(writes),
        params,
        response: if matches!(op, Op::Respond { .. }) {
            None
        } else {
            t.response.clone()
        },
        op,
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

/// Timestamps compare as times: RFC 3339 text of different precision
/// (`…00Z` vs `…00.002Z`) does not sort as text. Other text sorts as text.
fn compare_text(x: &str, y: &str) -> std::cmp::Ordering {
    use crate::time::parse_rfc3339;
    match (parse_rfc3339(x), parse_rfc3339(y)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => x.cmp(y),
    }
}

fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(compare_text(x, y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn filter_holds(f: &Filter, row: &Value, args: &Value, now: &str) -> bool {
    use std::cmp::Ordering::*;
    let field = row.get(&f.field).unwrap_or(&Value::Null);
    type Test<'a> = &'a dyn Fn(&Value) -> bool;
    let conds: [(&Option<Value>, Test); 7] = [
        (&f.eq, &|v| field == v),
        (&f.ne, &|v| field != v),
        (&f.gt, &|v| compare(field, v) == Some(Greater)),
        (&f.gte, &|v| {
            matches!(compare(field, v), Some(Greater | Equal))
        }),
        (&f.lt, &|v| compare(field, v) == Some(Less)),
        (&f.lte, &|v| matches!(compare(field, v), Some(Less | Equal))),
        (&f.contains, &|v| match (field, v) {
            (Value::String(s), Value::String(sub)) => s.contains(sub.as_str()),
            (Value::Array(items), one) => items.contains(one),
            _ => false,
        }),
    ];
    conds.iter().all(|(template, test)| match template {
        None => true,
        Some(t) => match render(t, args, now) {
            None => true,
            Some(v) => test(&v),
        },
    })
}

fn arg_str(args: &Value, name: &str) -> Result<String, ToolFailure> {
    match args.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) if !v.is_null() => Ok(canon::key_of(v)),
        _ => Err(ToolFailure::new(
            "invalid-args",
            format!("missing argument `{name}`"),
        )),
    }
}

/// Run a tool against the state. The state is not changed here: the writes
/// come back for the mediator to record and apply.
pub fn execute(
    tool: &Tool,
    args: &Value,
    state: &State,
    as_of: &AsOf,
) -> Result<(Value, Vec<Write>), ToolFailure> {
    schema::validate(&tool.params, args).map_err(|e| ToolFailure::new("invalid-args", e))?;
    let (mut result, writes) = run_op(tool, args, state, as_of)?;
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
            Ok((
                render(wrapper, &Value::Object(with_result), &as_of.now).unwrap_or(Value::Null),
                writes,
            ))
        }
        None => Ok((result, writes)),
    }
}

fn run_op(
    tool: &Tool,
    args: &Value,
    state: &State,
    as_of: &AsOf,
) -> Result<(Value, Vec<Write>), ToolFailure> {
    let now = as_of.now.as_str();
    match &tool.op {
        Op::Get { table, key_arg } => {
            let key = arg_str(args, key_arg)?;
            match state.row(table, &key) {
                Some(row) if !as_of.hides(row) => Ok((row.clone(), vec![])),
                _ => Err(ToolFailure::new(
                    "not-found",
                    format!("no {table} row `{key}`"),
                )),
            }
        }
        Op::Query {
            table,
            filters,
            sort,
            limit,
        } => {
            let mut rows: Vec<&Value> = state.tables[table]
                .rows
                .values()
                .filter(|r| {
                    !as_of.hides(r) && filters.iter().all(|f| filter_holds(f, r, args, now))
                })
                .collect();
            if let Some((field, desc)) = sort {
                rows.sort_by(|a, b| {
                    let o = compare(
                        a.get(field).unwrap_or(&Value::Null),
                        b.get(field).unwrap_or(&Value::Null),
                    )
                    .unwrap_or(std::cmp::Ordering::Equal);
                    if *desc { o.reverse() } else { o }
                });
            }
            let n = match limit {
                Some(Limit::Fixed(n)) => *n,
                Some(Limit::Arg(a)) => args
                    .get(a)
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |n| n as usize),
                None => usize::MAX,
            };
            Ok((
                Value::Array(rows.into_iter().take(n).cloned().collect()),
                vec![],
            ))
        }
        Op::Insert { table, row } => {
            let t = &state.tables[table];
            let mut row = render(row, args, now).unwrap_or(Value::Null);
            let Value::Object(fields) = &mut row else {
                return Err(ToolFailure::new(
                    "invalid-args",
                    "the new row must be an object",
                ));
            };
            let key = match fields.get(&t.key) {
                Some(k) if !k.is_null() => canon::key_of(k),
                _ => {
                    let key = format!("{table}-{}", t.rows.len() + 1);
                    fields.insert(t.key.clone(), Value::String(key.clone()));
                    key
                }
            };
            if t.rows.contains_key(&key) {
                return Err(ToolFailure::new(
                    "conflict",
                    format!("{table} row `{key}` already exists"),
                ));
            }
            let write = Write::Put {
                table: table.clone(),
                key,
                row: row.clone(),
            };
            Ok((row, vec![write]))
        }
        Op::Update {
            table,
            key_arg,
            set,
        } => {
            let key = arg_str(args, key_arg)?;
            let Some(Value::Object(before)) = state.row(table, &key) else {
                return Err(ToolFailure::new(
                    "not-found",
                    format!("no {table} row `{key}`"),
                ));
            };
            let mut row: Map<String, Value> = before.clone();
            if let Some(Value::Object(fields)) = render(set, args, now) {
                row.extend(fields);
            }
            let row = Value::Object(row);
            Ok((
                row.clone(),
                vec![Write::Put {
                    table: table.clone(),
                    key,
                    row,
                }],
            ))
        }
        Op::Delete { table, key_arg } => {
            let key = arg_str(args, key_arg)?;
            match state.row(table, &key) {
                Some(row) => Ok((
                    row.clone(),
                    vec![Write::Delete {
                        table: table.clone(),
                        key,
                    }],
                )),
                None => Err(ToolFailure::new(
                    "not-found",
                    format!("no {table} row `{key}`"),
                )),
            }
        }
        Op::FileRead { path_arg } => {
            let path = arg_str(args, path_arg)?;
            match state.files.get(&path) {
                Some(FileData::Text(s)) => Ok((json!({"path": path, "content": s}), vec![])),
                Some(FileData::Bytes { hex }) => Ok((json!({"path": path, "hex": hex}), vec![])),
                None => Err(ToolFailure::new("not-found", format!("no file `{path}`"))),
            }
        }
        Op::FileWrite {
            path_arg,
            content_arg,
        } => {
            let path = arg_str(args, path_arg)?;
            let content = match args.get(content_arg) {
                Some(Value::String(s)) => s.clone(),
                Some(other) => canon::to_string(other),
                None => {
                    return Err(ToolFailure::new(
                        "invalid-args",
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::state::Table;

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
        let (out, writes) = execute(
            &t,
            &json!({"service": "api", "limit": 1}),
            &state(),
            &at(""),
        )
        .unwrap();
        assert_eq!(out, json!([{"id": "D2", "service": "api", "at": 300}]));
        assert!(writes.is_empty());
        let (all, _) = execute(&t, &json!({}), &state(), &at("")).unwrap();
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
        let (row, writes) = execute(&t, &json!({"id": "D1", "who": "bot"}), &s, &at("")).unwrap();
        assert_eq!(row["status"], "rolled_back");
        assert_eq!(row["by"], "bot");
        assert_eq!(writes.len(), 1);
        assert_eq!(s.row("deploys", "D1").unwrap().get("status"), None);
        assert!(t.mutates);
        let missing = execute(&t, &json!({"id": "nope"}), &s, &at("")).unwrap_err();
        assert_eq!(missing.kind, "not-found");
    }

    #[test]
    fn insert_generates_keys_and_refuses_duplicates() {
        let t = tool("name='i'\nop='insert'\ntable='deploys'\nrow={service='$service', at='$now'}");
        let (row, _) = execute(
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
            execute(&dup, &json!({"id": "D1"}), &state(), &at(""))
                .unwrap_err()
                .kind,
            "conflict"
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
        let (out, _) = execute(&t, &json!({}), &s, &stale).unwrap();
        assert_eq!(out["as_of"], "2026-03-01T11:45:00Z");
        assert_eq!(out["deploys"].as_array().unwrap().len(), 1);
        assert_eq!(out["deploys"][0]["id"], "D1");
    }

    #[test]
    fn timestamps_compare_as_times_whatever_their_precision() {
        let a = json!("2026-03-01T11:50:00Z");
        let b = json!("2026-03-01T11:50:00.002Z");
        assert_eq!(compare(&a, &b), Some(std::cmp::Ordering::Less));
        assert_eq!(
            compare(
                &json!("2026-03-01T11:50:00.5Z"),
                &json!("2026-03-01T11:50:00Z")
            ),
            Some(std::cmp::Ordering::Greater)
        );
        assert_eq!(
            compare(&json!("apple"), &json!("banana")),
            Some(std::cmp::Ordering::Less)
        );
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
}
