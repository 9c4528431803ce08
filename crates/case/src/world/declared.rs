//! A `[[tools]]` entry of `world.toml` as written, checked (its op's keys,
//! its tables, its parameter schema) and resolved into a [`Tool`].

use super::schema;
use super::state::State;
use super::tools::{Filter, Op, Query, RowOp, Tool, Validate};
use serde::Deserialize;
use serde_json::{Value, json};

/// `[[tools]]` as written: the keys of every op, so that serde refuses
/// unknown keys at their place and checks their types. [`resolve`] keeps
/// the keys the named op takes (in a typed [`Op`]), and reports a missing
/// one at the tool's place.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolToml {
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
                limit: self.limit,
                limit_arg: self.limit_arg.clone(),
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
            "respond" | "service" => &[],
            other => return Err(format!("unknown op `{other}` (use {OPS})")),
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

impl ToolToml {
    /// The arguments the tool reads, each with where it is named: the
    /// `*_arg` keys, and `"$name"` in the filters, `row`, `set` and
    /// `response` (`$args`, `$now`, `$result` and `$$…` name none).
    fn named_args(&self) -> Vec<(String, String)> {
        let mut named = Vec::new();
        let keys = [
            ("key_arg", &self.key_arg),
            ("limit_arg", &self.limit_arg),
            ("path_arg", &self.path_arg),
            ("content_arg", &self.content_arg),
            ("prefix_arg", &self.prefix_arg),
        ];
        for (key, arg) in keys {
            if let Some(arg) = arg {
                named.push((arg.clone(), format!("`{key}`")));
            }
        }
        for f in &self.filters {
            let conds = [&f.eq, &f.ne, &f.gt, &f.gte, &f.lt, &f.lte, &f.contains];
            for v in conds.into_iter().flatten() {
                templated(v, &format!("the filter on `{}`", f.field), &mut named);
            }
        }
        for (key, v) in [
            ("row", &self.row),
            ("set", &self.set),
            ("response", &self.response),
        ] {
            if let Some(v) = v {
                templated(v, &format!("`{key}`"), &mut named);
            }
        }
        named
    }
}

/// Each `"$name"` in `template` that names an argument, with `place`:
/// the names a rendering asks for (`$$…` and `$now` ask for none), but
/// `$args` and `$result`.
fn templated(template: &Value, place: &str, into: &mut Vec<(String, String)>) {
    let _ = super::tools::render_with(template, "", &mut |name| {
        if !matches!(name, "args" | "result") {
            into.push((name.to_string(), place.to_string()));
        }
        None
    });
}

/// `name` as one reference token of a JSON pointer.
fn json_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Whether a JSON Schema `type` (a name or a list of names) takes a
/// number.
fn declares_a_number(declared: &Value) -> bool {
    let number = |t: &Value| matches!(t.as_str(), Some("integer" | "number"));
    match declared {
        Value::Array(types) => types.iter().any(number),
        t => number(t),
    }
}

/// The properties a parameter schema declares, when it declares them and
/// takes no others (`additionalProperties` absent or `false`).
fn closed_properties(params: &Value) -> Option<&serde_json::Map<String, Value>> {
    let open = params
        .get("additionalProperties")
        .is_some_and(|a| *a != Value::Bool(false));
    params.get("properties")?.as_object().filter(|_| !open)
}

/// The fields the rows of `table` hold, listed, when it has rows and
/// none holds `field`.
fn no_row_holds(state: &State, table: &str, field: &str) -> Option<String> {
    let fields = state.tables.get(table)?.fields_without(field)?;
    Some(fields.into_iter().collect::<Vec<_>>().join(", "))
}

/// Check a declared tool (its op's keys, its tables, its parameter schema)
/// and build it.
pub(crate) fn resolve(t: &ToolToml, state: &State) -> Result<Tool, String> {
    let name = &t.name;
    if name.is_empty() {
        return Err("tool `name` is empty".into());
    }
    // A glob's characters in a name made it a pattern wherever permissions,
    // inject rules and checks name tools; a space or a control character is
    // a name no model API sends.
    if crate::new_rules::apply()
        && let Some(c) = name
            .chars()
            .find(|c| matches!(c, '*' | '?' | '[' | ']') || c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "tool `{}`: a tool name holds no {:?} (names are matched as globs, and model APIs take letters, digits, `_`, `-` and `.`): rename it",
            name.escape_debug(),
            c
        ));
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
    // A row filed under one key that holds another: a later get of the
    // new key missed it, an insert of it made a second such row.
    if let Op::Update { row, set } = &op
        && let Some(key) = state.tables.get(&row.table).map(|t| t.key.as_str())
        && set.get(key).is_some()
        && crate::new_rules::apply()
    {
        return Err(format!(
            "tool `{name}`: `set` writes `{key}`, the key of `{}`: the row would hold another key than it is found by; an update keeps its row's key (insert a row of the new key and delete the old one instead)",
            row.table
        ));
    }
    // A sort by a field no row holds answers in key order, as if unsorted
    // (`sort = "duee"` was taken without a word); a filter on one holds
    // for no row, or for every row (`field = "availble"` answered `[]`,
    // and every agent failed for the world's typo).
    if let Op::Query(Query {
        table,
        sort,
        filters,
        ..
    }) = &op
        && crate::new_rules::apply()
    {
        if let Some((field, _)) = sort
            && let Some(fields) = no_row_holds(state, table, field)
        {
            return Err(format!(
                "tool `{name}`: `sort` names `{field}`, which no row of `{table}` holds (their fields: {fields}): its answers would come in key order; name one of them"
            ));
        }
        for f in filters {
            // A filter of no comparison held for every row (`{ field =
            // "kind" }` answered the whole table).
            let compares = [&f.eq, &f.ne, &f.gt, &f.gte, &f.lt, &f.lte, &f.contains];
            if compares.iter().all(|c| c.is_none()) {
                return Err(format!(
                    "tool `{name}`: the filter on `{}` compares with nothing, so it would hold for every row: give it one of eq, ne, gt, gte, lt, lte, contains (e.g. `eq = \"${}\"`)",
                    f.field, f.field
                ));
            }
            if let Some(fields) = no_row_holds(state, table, &f.field) {
                return Err(format!(
                    "tool `{name}`: a filter names `{}`, which no row of `{table}` holds (their fields: {fields}): it would hold for no row, or for all; name one of them",
                    f.field
                ));
            }
        }
    }
    let params = t
        .params
        .clone()
        .unwrap_or_else(|| json!({"type": "object"}));
    schema::check_schema(&params)
        .map_err(|e| format!("tool `{name}`: params is not a supported JSON Schema: {e}"))?;
    if let Some(declared) = closed_properties(&params) {
        let undeclared: Vec<String> = t
            .named_args()
            .into_iter()
            .filter(|(arg, _)| !declared.contains_key(arg))
            .map(|(arg, place)| format!("`{arg}` ({place})"))
            .collect();
        if !undeclared.is_empty() {
            let names: Vec<&String> = declared.keys().collect();
            return Err(format!(
                "tool `{name}` reads {}, which its params do not declare (properties: {names:?}); the agent is shown only those and never sends another (a filter on one is always skipped, a value of one is left out). Declare each, or name one of them",
                undeclared.join(", ")
            ));
        }
    }
    // A count declared as no number: every call giving it is refused
    // `invalid-args` (`limit = "3"` is no count), and the agent, shown the
    // schema, sends text.
    if let Some(arg) = &t.limit_arg
        && let Some(declared) = params.pointer(&format!("/properties/{}/type", json_pointer(arg)))
        && !declares_a_number(declared)
        && crate::new_rules::apply()
    {
        return Err(format!(
            "tool `{name}`: `limit_arg` names `{arg}`, whose params declare type {declared}: every call giving it would be refused (it is how many rows at most, a whole number); declare it `type = \"integer\"`"
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_kind::ErrorKind;
    use crate::world::state::Table;
    use crate::world::tools::{AsOf, Outcome, execute};
    use serde_json::Value;

    /// [`execute`] on a declared tool.
    fn exec(tool: &Tool, args: &Value, state: &State, as_of: &AsOf) -> Outcome {
        execute(tool, args, state, as_of).expect("a declared tool")
    }

    /// A state with one table, `deploys`, of these rows (keyed by `id`).
    fn deploys(rows: impl IntoIterator<Item = Value>) -> State {
        let mut s = State::default();
        let rows = rows
            .into_iter()
            .map(|r| (r["id"].as_str().unwrap().to_string(), r))
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

    fn state() -> State {
        deploys(
            [("D1", "api", 100), ("D2", "api", 300), ("D3", "db", 200)]
                .map(|(id, svc, at)| json!({"id": id, "service": svc, "at": at})),
        )
    }

    fn at(now: &str) -> AsOf {
        AsOf::now(now.to_string())
    }

    fn tool(toml_src: &str) -> Tool {
        let t: ToolToml = toml::from_str(toml_src).unwrap();
        resolve(&t, &state()).unwrap()
    }

    #[test]
    fn an_argument_the_params_do_not_declare_is_refused() {
        let params = "params = { type = 'object', properties = { service = { type = 'string' } } }";
        let typo = format!(
            "name='q'\nop='query'\ntable='deploys'\n{params}\nfilters=[{{field='service', eq='$servce'}}]"
        );
        let t: ToolToml = toml::from_str(&typo).unwrap();
        let e = resolve(&t, &state()).unwrap_err();
        assert!(
            e.contains("reads `servce` (the filter on `service`)") && e.contains("\"service\""),
            "{e}"
        );
        let limit = format!("name='q'\nop='query'\ntable='deploys'\n{params}\nlimit_arg='n'");
        let t: ToolToml = toml::from_str(&limit).unwrap();
        assert!(
            resolve(&t, &state())
                .unwrap_err()
                .contains("reads `n` (`limit_arg`)")
        );
        // Every one it reads, each with its place.
        let row = format!(
            "name='i'\nop='insert'\ntable='deploys'\n{params}\nrow={{id='$service', a='$b', n={{deep='$c'}}}}"
        );
        let t: ToolToml = toml::from_str(&row).unwrap();
        let e = resolve(&t, &state()).unwrap_err();
        assert!(e.contains("reads `b` (`row`), `c` (`row`)"), "{e}");
        // Declared, special, escaped, or params open to more: taken.
        for ok in [
            format!("name='q'\nop='query'\ntable='deploys'\n{params}\nfilters=[{{field='service', eq='$service'}}]\nresponse={{r='$result', at='$now', a='$args', d='$$x'}}"),
            "name='q'\nop='query'\ntable='deploys'\nparams = { type = 'object', properties = {}, additionalProperties = true }\nfilters=[{field='service', eq='$servce'}]".to_string(),
            "name='q'\nop='query'\ntable='deploys'\nfilters=[{field='service', eq='$servce'}]".to_string(),
        ] {
            let t: ToolToml = toml::from_str(&ok).unwrap();
            resolve(&t, &state()).unwrap();
        }
    }

    /// A sort by a field no row of its table holds is refused, naming the
    /// fields the rows do hold (it answered in key order without a word);
    /// one row holding it is enough, and so is an empty table.
    #[test]
    fn a_sort_by_a_field_no_row_holds_is_refused() {
        let t: ToolToml =
            toml::from_str("name='q'\nop='query'\ntable='deploys'\nsort='-atx'").unwrap();
        let e = resolve(&t, &state()).unwrap_err();
        assert_eq!(
            e,
            "tool `q`: `sort` names `atx`, which no row of `deploys` holds (their fields: at, id, service): its answers would come in key order; name one of them"
        );
        let some = deploys([json!({"id": "D1"}), json!({"id": "D2", "atx": 1})]);
        resolve(&t, &some).unwrap();
        resolve(&t, &deploys([])).unwrap();
        let _recorded = crate::new_rules::Reading::start();
        resolve(&t, &state()).unwrap();
    }

    /// A filter on a field no row of its table holds is refused as a sort
    /// by one is (`field = "availble"` answered `[]` to every call).
    #[test]
    fn a_filter_on_a_field_no_row_holds_is_refused() {
        let t: ToolToml = toml::from_str(
            "name='q'\nop='query'\ntable='deploys'\nfilters=[{field='servce', eq='api'}]",
        )
        .unwrap();
        let e = resolve(&t, &state()).unwrap_err();
        assert_eq!(
            e,
            "tool `q`: a filter names `servce`, which no row of `deploys` holds (their fields: at, id, service): it would hold for no row, or for all; name one of them"
        );
        resolve(&t, &deploys([json!({"id": "D1", "servce": "x"})])).unwrap();
        resolve(&t, &deploys([])).unwrap();
    }

    /// A tool whose name holds a glob's character or a space is refused
    /// (`get account/*` was a glob wherever a rule named it).
    #[test]
    fn a_tool_name_with_a_glob_or_a_space_is_refused() {
        for bad in ["get account/*", "a?", "x[1]", "two words"] {
            let t: ToolToml =
                toml::from_str(&format!("name={bad:?}\nop='get'\ntable='deploys'")).unwrap();
            let e = resolve(&t, &state()).unwrap_err();
            assert!(e.contains("a tool name holds no"), "{bad}: {e}");
            let _recorded = crate::new_rules::Reading::start();
            resolve(&t, &state()).unwrap();
        }
        let t: ToolToml = toml::from_str("name='ticket.get-1'\nop='get'\ntable='deploys'").unwrap();
        resolve(&t, &state()).unwrap();
    }

    /// A filter that compares with nothing is refused: it held for every
    /// row (`{ field = "kind" }` answered the whole table).
    #[test]
    fn a_filter_that_compares_with_nothing_is_refused() {
        for filter in ["{field='service'}", "{field='service', ignore_case=true}"] {
            let t: ToolToml = toml::from_str(&format!(
                "name='q'\nop='query'\ntable='deploys'\nfilters=[{filter}]"
            ))
            .unwrap();
            let e = resolve(&t, &state()).unwrap_err();
            assert!(
                e.contains("the filter on `service` compares with nothing"),
                "{filter}: {e}"
            );
            // A recorded run's world still reads as it was written.
            let _recorded = crate::new_rules::Reading::start();
            resolve(&t, &state()).unwrap();
        }
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
        let s = deploys(
            [
                ("D1", "2026-03-01T11:00:00Z"),
                ("D2", "2026-03-01T11:50:00Z"),
            ]
            .map(|(id, at)| json!({"id": id, "at": at})),
        );
        let t: ToolToml = toml::from_str(
            "name='q'\nop='query'\ntable='deploys'\nresponse={deploys='$result', as_of='$now'}",
        )
        .unwrap();
        let t = resolve(&t, &s).unwrap();
        let stale = AsOf {
            hide_after: Some(("at".into(), "2026-03-01T11:45:00Z".into())),
            ..AsOf::now("2026-03-01T11:45:00Z".into())
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
        // A misspelt op with the keys of the op meant is unknown, not an op
        // that takes none of them.
        let t: ToolToml = toml::from_str("name='x'\nop='gett'\ntable='tickets'").unwrap();
        let e = resolve(&t, &state()).unwrap_err();
        assert!(e.contains(": unknown op `gett` (use get, "), "{e}");
    }

    /// An update whose `set` writes the row's key is refused: the row
    /// stayed filed under its old key, so a get of the new key missed it
    /// and an insert of the new key made a second row of it.
    #[test]
    fn an_update_that_sets_the_row_s_key_is_refused() {
        let t: ToolToml = toml::from_str(
            "name='u'\nop='update'\ntable='deploys'\nkey_arg='id'\nset={id='$newid'}",
        )
        .unwrap();
        let e = resolve(&t, &state()).unwrap_err();
        assert!(e.contains("`set` writes `id`, the key of `deploys`"), "{e}");
        let t: ToolToml = toml::from_str(
            "name='u'\nop='update'\ntable='deploys'\nkey_arg='id'\nset={service='$s'}",
        )
        .unwrap();
        assert!(resolve(&t, &state()).is_ok());
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

    #[test]
    fn a_wrapper_holds_the_result_wherever_it_names_it() {
        let row = json!({"id": "D1", "service": "api", "at": 100});
        let answer = |wrapper: &str| {
            let t = tool(&format!(
                "name='g'\nop='get'\ntable='deploys'\nresponse={wrapper}"
            ));
            exec(&t, &json!({"id": "D1"}), &state(), &at("now"))
                .unwrap()
                .0
        };
        assert_eq!(
            answer("{row='$result', id='$id', at='$now', s='$$result'}"),
            json!({"row": row, "id": "D1", "at": "now", "s": "$result"})
        );
        assert_eq!(
            answer("{row='$result', again=['$result']}"),
            json!({"row": row, "again": [row]})
        );
        assert_eq!(
            answer("{row='$result', args='$args'}"),
            json!({"row": row, "args": {"id": "D1", "result": row}})
        );
        assert_eq!(
            answer("{missing='$nope', row='$result'}"),
            json!({"row": row})
        );
    }
}
