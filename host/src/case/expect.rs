//! `[expect]`: what a run must leave behind — the run status, final-state
//! assertions, tables or rows that must stay unchanged (collateral damage),
//! calls attempted or not, and the output.

use crate::path::JsonPath;
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
}

/// An assertion on the final state: a row, a field, a row count, a file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateCheck {
    #[serde(default)]
    pub table: Option<String>,
    #[serde(default)]
    pub key: Option<String>,
    /// Path inside the row (`status`, `meta.owner`; syntax: `crate::path`).
    #[serde(default)]
    pub field: Option<String>,
    /// Row filter for `count` (path = value).
    #[serde(default, rename = "where")]
    pub where_: Map<String, Value>,
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
        let tests = [
            self.equals.is_some(),
            self.contains.is_some(),
            self.exists.is_some(),
            self.absent.is_some(),
            self.count.is_some(),
        ];
        if tests.iter().filter(|t| **t).count() != 1 {
            return Err(
                "a state assertion needs exactly one of equals, contains, exists, absent, count"
                    .into(),
            );
        }
        if let Some(f) = &self.field {
            check_path("field", f)?;
        }
        for k in self.where_.keys() {
            check_path("where", k)?;
        }
        match (&self.table, &self.file) {
            (Some(t), None) => {
                if !tables.contains(&t) {
                    return Err(format!("unknown table `{t}` (tables: {tables:?})"));
                }
                if self.count.is_some() && self.key.is_some() {
                    return Err("count goes with a table (and `where`), not with a key".into());
                }
                if self.count.is_none() && self.key.is_none() {
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
