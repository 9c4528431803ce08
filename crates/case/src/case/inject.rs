//! `[[inject]]` rules: match a tool call (by name or glob, optionally by
//! arguments and by the n-th matching call) and shape its answer — stale
//! data, a denial, an error kind, added latency, an empty result, a partial
//! write, a fixed response, or text injected at the world's injection
//! vectors (a prompt injection).

use crate::error_kind::ErrorKind;
use crate::world::{Tool, glob_match};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One rule as written in the case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inject {
    pub tool: String,
    #[serde(default)]
    pub when: Map<String, Value>,
    #[serde(default)]
    pub nth: Option<u64>,
    #[serde(default)]
    pub stale: Option<Stale>,
    #[serde(default)]
    pub deny: bool,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub latency_ms: Option<u64>,
    #[serde(default)]
    pub empty: bool,
    #[serde(default)]
    pub partial: Option<PartialToml>,
    #[serde(default)]
    pub response: Option<Value>,
    #[serde(default)]
    pub injection: Option<Injection>,
}

/// Text placed at the world's injection vectors in a tool's answer: at
/// `vector`, or at every vector the answer holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Injection {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<String>,
}

/// Answer as of `age_s` seconds ago.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stale {
    pub age_s: u64,
    /// Rows whose `field` is later than the stale time are hidden.
    #[serde(default)]
    pub field: Option<String>,
}

/// `partial = { fields, error }` as written (the kind is checked by
/// [`Inject::action`], so the message can name the rule's key).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartialToml {
    pub fields: Vec<String>,
    #[serde(default)]
    pub error: Option<String>,
}

/// Write only some fields, then fail (with `failed` unless `error` says).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partial {
    pub fields: Vec<String>,
    #[serde(default)]
    pub error: Option<ErrorKind>,
}

/// What a rule (or a fuzz fault) does, once checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Stale(Stale),
    Deny,
    Error(ErrorKind),
    Empty,
    Partial(Partial),
    Respond(Value),
    /// The tool runs; its answer carries the text at the injection vectors.
    Injection(Injection),
    /// Only latency.
    Delay,
}

impl Inject {
    /// Check the rule has exactly one action (latency may join any) and
    /// known error kinds.
    pub fn action(&self) -> Result<Action, String> {
        let mut actions = Vec::new();
        if let Some(ms) = self.latency_ms {
            super::recorded::check_ms("latency_ms", ms)?;
        }
        if let Some(s) = &self.stale {
            super::recorded::check_s("stale.age_s", s.age_s)?;
            actions.push(Action::Stale(s.clone()));
        }
        if self.deny {
            actions.push(Action::Deny);
        }
        if let Some(e) = &self.error {
            let kind = e.parse().map_err(|why| format!("error = \"{e}\" {why}"))?;
            actions.push(Action::Error(kind));
        }
        if self.empty {
            actions.push(Action::Empty);
        }
        if let Some(p) = &self.partial {
            let error = p
                .error
                .as_ref()
                .map(|e| {
                    e.parse()
                        .map_err(|why| format!("partial.error = \"{e}\" {why}"))
                })
                .transpose()?;
            actions.push(Action::Partial(Partial {
                fields: p.fields.clone(),
                error,
            }));
        }
        if let Some(r) = &self.response {
            actions.push(Action::Respond(r.clone()));
        }
        if let Some(i) = &self.injection {
            actions.push(Action::Injection(i.clone()));
        }
        if self.nth == Some(0) {
            return Err("nth counts from 1".into());
        }
        match (actions.len(), self.latency_ms) {
            (0, Some(_)) => Ok(Action::Delay),
            (0, None) => Err(format!(
                "rule for `{}` does nothing; give one of stale, deny, error, latency_ms, empty, partial, response, injection",
                self.tool
            )),
            (1, _) => Ok(actions.remove(0)),
            _ => Err(format!(
                "rule for `{}` has more than one action; split it into several rules",
                self.tool
            )),
        }
    }

    /// Why the rule's `when` can never match a call: it names an argument
    /// that no tool the rule names takes. Only tools whose `params` list
    /// their `properties` are judged; a rule naming one that does not (or
    /// a glob matching one) is left alone.
    pub fn when_problem(&self, tools: &[Tool]) -> Option<String> {
        if let Some((key, which)) = argument_no_tool_takes(&self.tool, self.when.keys(), tools) {
            return Some(format!(
                "when.{key}: {which}, so the rule never matches a call; name one of the parameters the world declares"
            ));
        }
        let (key, why) = argument_no_tool_accepts(&self.tool, &self.when, tools)?;
        Some(format!(
            "when.{key}: {why}, so the rule matches only a call the tool refuses; write the value as the tool takes it"
        ))
    }

    /// Whether the rule's tool and argument conditions match a call.
    pub fn matches(&self, tool: &str, args: &Value) -> bool {
        glob_match(&self.tool, tool) && self.when.iter().all(|(k, v)| args.get(k) == Some(v))
    }

    /// Whether this rule, put before `later`, answers every call `later`
    /// is due at, so that `later` never fires: it matches every call
    /// `later` matches (its tool names every tool of `tools` that
    /// `later`'s names, and its `when` is part of `later`'s), and is due
    /// at each (no `nth`), or counts the same calls to the same `nth`.
    pub fn hides(&self, later: &Inject, tools: &[Tool]) -> bool {
        let named = |glob: &str| -> Vec<&str> {
            (tools.iter())
                .filter(|t| glob_match(glob, &t.name))
                .map(|t| t.name.as_str())
                .collect()
        };
        let (mine, theirs) = (named(&self.tool), named(&later.tool));
        let covers = !theirs.is_empty()
            && theirs.iter().all(|t| mine.contains(t))
            && (self.when.iter()).all(|(k, v)| later.when.get(k) == Some(v));
        let same_calls = mine == theirs && self.when == later.when;
        covers && (self.nth.is_none() || (same_calls && self.nth == later.nth))
    }
}

/// The first of `keys` that no tool `glob` names takes as an argument,
/// and what to say of it (the tool's parameters, or each named tool's).
/// Only tools whose `params` list their `properties` are judged: a glob
/// naming one that does not, or naming none, is left alone.
pub(crate) fn argument_no_tool_takes<'a>(
    glob: &str,
    keys: impl IntoIterator<Item = &'a String>,
    tools: &[Tool],
) -> Option<(&'a str, String)> {
    let named: Vec<&Tool> = tools.iter().filter(|t| glob_match(glob, &t.name)).collect();
    if named.is_empty() {
        return None;
    }
    let listed: Vec<(&str, Vec<&str>)> = named
        .iter()
        .map(|t| Some((t.name.as_str(), parameters(t)?)))
        .collect::<Option<_>>()?;
    let key = keys.into_iter().find(|k| {
        !listed
            .iter()
            .any(|(_, params)| params.contains(&k.as_str()))
    })?;
    let takes = |params: &[&str]| match params {
        [] => "it takes none".to_string(),
        _ => format!("its parameters: {}", params.join(", ")),
    };
    let which = match listed.as_slice() {
        [(name, params)] => format!("`{name}` takes no argument `{key}` ({})", takes(params)),
        _ => format!(
            "no tool `{glob}` names takes an argument `{key}` ({})",
            listed
                .iter()
                .map(|(name, params)| format!("`{name}`: {}", takes(params)))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    };
    Some((key, which))
}

/// The first of `args` whose value no tool `glob` names accepts for that
/// parameter (`id = "7"` for an integer `id`, a text outside its `enum`),
/// and the first tool's reason. Only tools that validate strictly and list
/// the parameter among their `properties` are judged: a call another
/// would accept, or coerce (`lax`), may still match.
pub(crate) fn argument_no_tool_accepts<'a>(
    glob: &str,
    args: &'a Map<String, Value>,
    tools: &[Tool],
) -> Option<(&'a str, String)> {
    let named: Vec<&Tool> = tools.iter().filter(|t| glob_match(glob, &t.name)).collect();
    args.iter().find_map(|(key, value)| {
        let mut first = None;
        for t in &named {
            let schema = t.params.get("properties").and_then(|p| p.get(key));
            match (t.validate, schema) {
                (crate::world::tools::Validate::Strict, Some(schema)) => {
                    let why = crate::world::schema::validate(schema, value).err()?;
                    first.get_or_insert_with(|| format!("`{}` refuses it: {why}", t.name));
                }
                _ => return None,
            }
        }
        Some((key.as_str(), first?))
    })
}

/// The parameters a tool's `params` lists (its `properties`, in their
/// order), or `None` when it lists none.
fn parameters(tool: &Tool) -> Option<Vec<&str>> {
    let props = tool.params.get("properties")?.as_object()?;
    Some(props.keys().map(String::as_str).collect())
}

/// Why a stale answer's `field` (of an `[[inject]]` rule or a fault
/// profile's `stale`) can never hide a row: no tool `tool` names answers
/// rows of a table ([`crate::world::Op::hides_rows`]), or each reads a
/// table whose rows, in the world's `initial` state, none of them holds
/// `field` (a typo). `None` when one may: a service's reads, or a table
/// with no rows to judge by.
pub fn stale_field_problem(
    tool: &str,
    field: &str,
    tools: &[Tool],
    initial: &crate::world::state::State,
) -> Option<String> {
    let named: Vec<&Tool> = tools.iter().filter(|t| glob_match(tool, &t.name)).collect();
    if named.is_empty() {
        return None;
    }
    if named.iter().any(|t| t.op.hides_rows()) {
        return missing_field(field, &named, initial);
    }
    let op = |t: &Tool| format!("`{}`: op = \"{}\"", t.name, t.op.name());
    let which = match named.as_slice() {
        [t] => format!("{} answers no rows of a table", op(t)),
        _ => format!(
            "no tool `{tool}` names answers rows of a table ({})",
            named.iter().map(|t| op(t)).collect::<Vec<_>>().join(", ")
        ),
    };
    Some(format!(
        "stale.field = \"{field}\" hides rows newer than the stale time, but {which}, so it hides nothing; drop `field` (the answer is still as of age_s ago) or name a get, query or service tool"
    ))
}

/// Why a `partial` fault on the tools `tool` names would write nothing it
/// means to (as [`stale_field_problem`] for `stale.field`): none of them
/// writes a row's fields (a get: the fault is a plain error), or a field
/// is none a row they write may hold (a typo: each strike wrote a row of
/// its key alone). The fields a row may hold: the tool's parameters, the
/// fields its row or `set` template names, and those its table's rows
/// hold. `None` when it may: a service or file tool, or none named.
pub fn partial_problem(
    tool: &str,
    fields: &[String],
    tools: &[Tool],
    initial: &crate::world::state::State,
) -> Option<String> {
    use crate::world::tools::Op;
    if fields.is_empty() {
        return Some(
            "partial.fields is empty, so a strike writes none of the call's fields (a row of its key alone), then fails; name the fields it writes, or give `error` for a call that writes nothing".into(),
        );
    }
    let named: Vec<&Tool> = tools.iter().filter(|t| glob_match(tool, &t.name)).collect();
    // Every tool the name reaches, a glob's too (`*` took the reads in,
    // where a strike was a plain error labelled partial, and a case made
    // from its run did not load).
    let writes = |t: &Tool| {
        matches!(
            t.op,
            Op::Insert { .. } | Op::Update { .. } | Op::Service | Op::FileWrite { .. }
        )
    };
    let reads: Vec<String> = (named.iter())
        .filter(|t| !writes(t))
        .map(|t| format!("`{}`: op = \"{}\"", t.name, t.op.name()))
        .collect();
    if !reads.is_empty() {
        return Some(format!(
            "partial writes some of the fields a call writes, then fails, but {} writes no row's fields, so it is a plain error; give `error` instead, or name only insert, update or service tools",
            reads.join(", ")
        ));
    }
    if named.is_empty()
        || named
            .iter()
            .any(|t| matches!(t.op, Op::Service | Op::FileWrite { .. }))
    {
        return None;
    }
    let writers: Vec<&&Tool> = (named.iter())
        .filter(|t| matches!(t.op, Op::Insert { .. } | Op::Update { .. }))
        .collect();
    let mut may = std::collections::BTreeSet::new();
    for t in &writers {
        let template = match &t.op {
            Op::Insert { row, .. } => Some(row),
            Op::Update { set, .. } => Some(set),
            _ => None,
        };
        for v in [t.params.get("properties"), template].into_iter().flatten() {
            may.extend(v.as_object().into_iter().flat_map(|o| o.keys().cloned()));
        }
        let rows = t.op.table().and_then(|table| initial.tables.get(table));
        for row in rows.into_iter().flat_map(|r| r.rows.values()) {
            may.extend(row.as_object().into_iter().flat_map(|o| o.keys().cloned()));
        }
    }
    let missing: Vec<&str> = (fields.iter())
        .filter(|f| !may.contains(f.split('.').next().unwrap_or(f)))
        .map(String::as_str)
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "partial.fields {} are no field a row `{tool}` writes may hold (its fields: {}), so a strike writes none of them; name fields of the rows it writes",
            missing.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", "),
            may.into_iter().collect::<Vec<_>>().join(", ")
        )
    })
}

/// Why `field` hides no row of the tables the tools `named` read: each
/// reads rows of a table (none a service), every such table has rows,
/// and not one row holds `field`. The fields they do hold are named.
fn missing_field(
    field: &str,
    named: &[&Tool],
    initial: &crate::world::state::State,
) -> Option<String> {
    let mut fields = std::collections::BTreeSet::new();
    let mut tables = std::collections::BTreeSet::new();
    for t in named.iter().filter(|t| t.op.hides_rows()) {
        let table = t.op.table()?;
        fields.extend(initial.tables.get(table)?.fields_without(field)?);
        tables.insert(table);
    }
    let tables: Vec<String> = tables.iter().map(|t| format!("`{t}`")).collect();
    let fields: Vec<&str> = fields.into_iter().collect();
    Some(format!(
        "stale.field = \"{field}\" hides rows newer than the stale time, but no row of {} holds `{field}` (their fields: {}), so it hides nothing; name the field that holds each row's time",
        tables.join(", "),
        fields.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `partial` on a glob that reaches read tools is refused as on a read
    /// tool named alone (`*` was taken, a strike on a read was a plain
    /// error labelled partial, and a case made from the run did not load);
    /// a glob of write tools alone is checked by their fields.
    #[test]
    fn partial_on_a_glob_that_reaches_reads_is_refused() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../worlds/incident/v4");
        let w = crate::world::load_dir(std::path::Path::new(dir)).unwrap();
        let problem = |tool: &str, fields: &[&str]| {
            let fields: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
            partial_problem(tool, &fields, &w.tools, &w.initial)
        };
        let all = problem("*", &["status"]).unwrap();
        assert!(
            all.contains("`get_alert`: op = \"get\"") && all.contains("plain error"),
            "{all}"
        );
        assert!(
            problem("get_*", &["status"])
                .unwrap()
                .contains("plain error")
        );
        assert_eq!(problem("close_ticket", &["status"]), None);
        assert!(
            problem("*_ticket", &["status"])
                .unwrap()
                .contains("`get_ticket`")
        );
    }

    fn rule(src: &str) -> Inject {
        toml::from_str(src).unwrap()
    }

    #[test]
    fn one_action_per_rule() {
        assert_eq!(rule("tool='x'\ndeny=true").action().unwrap(), Action::Deny);
        assert_eq!(
            rule("tool='x'\nlatency_ms=5").action().unwrap(),
            Action::Delay
        );
        assert!(
            rule("tool='x'\ndeny=true\nempty=true")
                .action()
                .unwrap_err()
                .contains("more than one")
        );
        assert!(
            rule("tool='x'")
                .action()
                .unwrap_err()
                .contains("does nothing")
        );
        assert!(
            rule("tool='x'\nerror='boom'")
                .action()
                .unwrap_err()
                .contains("not an error kind")
        );
    }

    #[test]
    fn an_injection_is_an_action() {
        assert_eq!(
            rule("tool='x'\ninjection={ text='DO X', vector='v' }")
                .action()
                .unwrap(),
            Action::Injection(Injection {
                text: "DO X".into(),
                vector: Some("v".into())
            })
        );
    }

    #[test]
    fn matching_uses_globs_and_arguments() {
        let r = rule("tool='list_*'\nwhen={service='api'}\ndeny=true");
        assert!(r.matches("list_deploys", &json!({"service": "api", "limit": 3})));
        assert!(!r.matches("list_deploys", &json!({"service": "db"})));
        assert!(!r.matches("get_deploy", &json!({"service": "api"})));
    }
}
