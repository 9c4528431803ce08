//! `[expect]`: what a run must leave behind — the run status, final-state
//! assertions, tables or rows that must stay unchanged (collateral damage),
//! calls attempted or not, and the output.

use crate::path::JsonPath;
use crate::world::compare::Op;
use crate::world::{self, World};
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The run status the agent must end with (default `completed`).
    #[serde(default)]
    pub status: Option<String>,
    /// Tables (`deploys`) or rows (`tickets/T-2`) equal at the end.
    #[serde(default)]
    pub unchanged: Vec<String>,
    #[serde(default)]
    pub state: Vec<StateCheck>,
    #[serde(default)]
    pub calls: Vec<CallCheck>,
    #[serde(default)]
    pub output: Option<OutputCheck>,
    /// `[[expect.gold]]`: the calls that solve the case (`case/gold.rs`).
    #[serde(default)]
    pub gold: Vec<super::gold::GoldCall>,
    /// What the gold comparison leaves out: tables (`notes`) and fields
    /// (`transfers.at`, `*.created_at`).
    #[serde(default)]
    pub gold_ignore: Vec<String>,
    /// `[expect.conversation]`: what the agent said to the user, turns,
    /// approvals, the user's satisfaction.
    #[serde(default)]
    pub conversation: Option<super::expect_conversation::ConversationCheck>,
}

/// An assertion on the final state: a row, a field, a row count, a file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateCheck {
    #[serde(default)]
    pub table: Option<String>,
    /// The row's key: text, or an integer for tables with integer ids.
    #[serde(default)]
    pub key: Option<Value>,
    /// Path inside the row (`status`, `meta.owner`; syntax: `crate::path`).
    #[serde(default)]
    pub field: Option<String>,
    /// Row filter for `count` and `sum`: path = value, or path = a table of
    /// operators (`{ gt = 100 }`, `{ ne = "x", ignore_case = true }`).
    #[serde(default, rename = "where")]
    pub where_: Map<String, Value>,
    /// Add up this field of the matching rows; judged by `equals` or
    /// `min`/`max`.
    #[serde(default)]
    pub sum: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub equals: Option<Value>,
    #[serde(default)]
    pub contains: Option<Value>,
    #[serde(default)]
    pub exists: Option<bool>,
    #[serde(default)]
    pub absent: Option<bool>,
    #[serde(default)]
    pub count: Option<u64>,
    /// Bounds on the row count (with `table`, no `key`) or on a `sum`.
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    /// Compare text without regard to case (`equals`, `contains`, `where`).
    #[serde(default)]
    pub ignore_case: bool,
}

/// An assertion on the tool calls the agent made.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallCheck {
    pub tool: String,
    #[serde(default)]
    pub args: Map<String, Value>,
    #[serde(default)]
    pub attempted: Option<bool>,
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub min: Option<u64>,
    #[serde(default)]
    pub max: Option<u64>,
    /// Count only denied calls (`true`) or only allowed ones (`false`).
    #[serde(default)]
    pub denied: Option<bool>,
}

/// An assertion on the agent's output.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputCheck {
    #[serde(default)]
    pub equals: Option<String>,
    #[serde(default)]
    pub contains: Option<String>,
    /// Passes when the output contains at least one of these.
    #[serde(default)]
    pub any_of: Vec<String>,
    /// Compare `equals`, `contains` and `any_of` without regard to case.
    #[serde(default)]
    pub ignore_case: bool,
    #[serde(default)]
    pub json: Vec<JsonCheck>,
}

/// A value at a path of the output parsed as JSON.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonCheck {
    pub path: String,
    #[serde(default)]
    pub equals: Option<Value>,
    #[serde(default)]
    pub contains: Option<Value>,
    #[serde(default)]
    pub exists: Option<bool>,
}

/// The statuses a run can end with.
const STATUSES: &[&str] = &[
    "completed",
    "errored",
    "trapped",
    "out_of_fuel",
    "memory_limit",
    "timeout",
    "exited",
];

impl Expect {
    /// Check every assertion is well formed and names what `world` has.
    pub fn check(&self, world: &World) -> Result<(), String> {
        let tables: Vec<&String> = world.initial.tables.keys().collect();
        for s in &self.state {
            s.check(&tables)?;
        }
        for c in &self.calls {
            c.check()?;
            if !world::names_a_tool(&c.tool, &world.tools) {
                return Err(format!(
                    "calls: tool `{}` names no tool of {}",
                    c.tool,
                    world.reference()
                ));
            }
        }
        if let Some(o) = &self.output {
            o.check()?;
        }
        super::gold::check(&self.gold, &self.gold_ignore, world)?;
        if let Some(c) = &self.conversation {
            c.check(world)?;
        }
        for u in &self.unchanged {
            let table = u.split('/').next().unwrap_or("");
            if !world.initial.tables.contains_key(table) {
                return Err(format!(
                    "unchanged: unknown table `{table}` (tables: {tables:?})"
                ));
            }
        }
        if let Some(status) = &self.status
            && !STATUSES.contains(&status.as_str())
        {
            return Err(format!(
                "status `{status}` is not one of {}",
                STATUSES.join(", ")
            ));
        }
        Ok(())
    }
}

impl StateCheck {
    /// Check the assertion is well formed against the world's tables.
    pub fn check(&self, tables: &[&String]) -> Result<(), String> {
        let bounds = self.min.is_some() || self.max.is_some();
        let tests = [
            self.equals.is_some(),
            self.contains.is_some(),
            self.exists.is_some(),
            self.absent.is_some(),
            self.count.is_some(),
            bounds,
        ];
        if tests.iter().filter(|t| **t).count() != 1 {
            return Err(
                "a state assertion needs exactly one of equals, contains, exists, absent, count, min/max"
                    .into(),
            );
        }
        if let Some(f) = &self.field {
            check_path("field", f)?;
        }
        if let Some(f) = &self.sum {
            check_path("sum", f)?;
            if !(self.equals.is_some() || bounds) {
                return Err(format!("sum `{f}` is judged by `equals` or `min`/`max`"));
            }
            if self.key.is_some() || self.field.is_some() {
                return Err("sum goes with a table (and `where`), not with a key or field".into());
            }
        }
        if let Some(k) = &self.key
            && !(k.is_string() || k.is_i64() || k.is_u64())
        {
            return Err(format!("key {k}: a key is text or an integer"));
        }
        for (k, v) in &self.where_ {
            check_path("where", k)?;
            conditions(v).map_err(|m| format!("where `{k}`: {m}"))?;
        }
        match (&self.table, &self.file) {
            (Some(t), None) => {
                if !tables.contains(&t) {
                    return Err(format!("unknown table `{t}` (tables: {tables:?})"));
                }
                let counting = self.count.is_some() || (bounds && self.sum.is_none());
                if counting && self.key.is_some() {
                    return Err("count goes with a table (and `where`), not with a key".into());
                }
                if !counting && self.sum.is_none() && self.key.is_none() {
                    return Err(format!(
                        "name the row: add `key` (or use `count` for table `{t}`)"
                    ));
                }
                Ok(())
            }
            (None, Some(_)) => Ok(()),
            _ => Err("a state assertion names either `table` or `file`".into()),
        }
    }
}

impl CallCheck {
    pub fn check(&self) -> Result<(), String> {
        let tests = [
            self.attempted.is_some(),
            self.count.is_some(),
            self.min.is_some() || self.max.is_some(),
        ];
        if tests.iter().filter(|t| **t).count() != 1 {
            return Err(format!(
                "calls check on `{}` needs one of attempted, count, or min/max",
                self.tool
            ));
        }
        Ok(())
    }
}

impl OutputCheck {
    pub fn check(&self) -> Result<(), String> {
        for j in &self.json {
            check_path("output.json path", &j.path)?;
        }
        Ok(())
    }
}

/// The operators of a `where` entry and whether text compares without
/// regard to case.
pub type Conditions<'a> = (Vec<(Op, &'a Value)>, bool);

/// The operators of one `where` entry: a table of operators
/// (`{ gt = 100, ignore_case = true }`) or, for any other value, equality.
/// The flag says whether text compares without regard to case.
pub fn conditions(spec: &Value) -> Result<Conditions<'_>, String> {
    let Value::Object(m) = spec else {
        return Ok((vec![(Op::Eq, spec)], false));
    };
    let is_op = |k: &str| k == "ignore_case" || Op::named(k).is_some();
    if m.is_empty() || !m.keys().any(|k| is_op(k)) {
        return Ok((vec![(Op::Eq, spec)], false));
    }
    if let Some(k) = m.keys().find(|k| !is_op(k)) {
        let names: Vec<&str> = Op::ALL.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown operator `{k}` (operators: {}, ignore_case; to compare with a table, write {{ eq = {{ ... }} }})",
            names.join(", ")
        ));
    }
    let ignore_case = match m.get("ignore_case") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("ignore_case must be true or false, found {other}")),
    };
    let ops = m
        .iter()
        .filter_map(|(k, v)| Op::named(k).map(|op| (op, v)))
        .collect::<Vec<_>>();
    if ops.is_empty() {
        return Err("ignore_case needs an operator beside it (eq, ne, ...)".into());
    }
    Ok((ops, ignore_case))
}

fn check_path(what: &str, path: &str) -> Result<(), String> {
    JsonPath::parse(path)
        .map(drop)
        .map_err(|m| format!("{what} `{path}`: {m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_check(src: &str) -> StateCheck {
        toml::from_str(src).unwrap()
    }

    #[test]
    fn paths_are_checked_with_the_assertion() {
        let tables = [&"tickets".to_string()];
        let ok = state_check("table='tickets'\nkey='T-1'\nfield='meta.tags[-1]'\nexists=true");
        assert_eq!(ok.check(&tables), Ok(()));
        let bad = state_check("table='tickets'\nkey='T-1'\nfield='meta..x'\nexists=true");
        assert_eq!(
            bad.check(&tables).unwrap_err(),
            "field `meta..x`: empty field name"
        );
        let bad = state_check("table='tickets'\ncount=1\nwhere={'a[x]'=1}");
        assert_eq!(
            bad.check(&tables).unwrap_err(),
            "where `a[x]`: `[x]` is not an index"
        );
        let out: OutputCheck = toml::from_str("json=[{path='$.a[', exists=true}]").unwrap();
        assert_eq!(
            out.check().unwrap_err(),
            "output.json path `$.a[`: `[` without `]`"
        );
    }
}
