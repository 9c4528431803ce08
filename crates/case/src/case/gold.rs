//! `[[expect.gold]]`: the tool calls that solve a case, and `gold_ignore`,
//! what the comparison of the agent's final state with the gold state
//! leaves out (graded in `grade/gold.rs`).

use crate::world::World;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// One gold tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoldCall {
    pub tool: String,
    #[serde(default)]
    pub args: Map<String, Value>,
    /// The user's turn the call belongs to (from 1; default 1): `validate`'s
    /// oracle makes it in that turn. Turns never go down from one gold call
    /// to the next. Its place in the file is kept for its problems.
    #[serde(default)]
    pub turn: Option<toml::Spanned<u32>>,
}

impl GoldCall {
    pub fn turn(&self) -> u32 {
        self.turn.as_ref().map_or(1, |t| *t.get_ref())
    }
}

/// The gold calls of `[[expect.gold]]`; `gold = []` checks nothing, so it
/// is an input error that says how to assert "nothing changed".
pub fn non_empty<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<toml::Spanned<GoldCall>>, D::Error> {
    let calls = Vec::<toml::Spanned<GoldCall>>::deserialize(d)?;
    if calls.is_empty() {
        return Err(serde::de::Error::custom(
            "`gold = []` lists no gold calls, so it checks nothing; to assert that the agent \
             changed nothing, name the tables (or rows, `table/key`) in \
             `unchanged = [...]`, or drop `gold`",
        ));
    }
    Ok(calls)
}

/// One `gold_ignore` entry: a whole table, or a field of every row of a
/// table (`*` for every table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignore<'a> {
    Table(&'a str),
    Field { table: &'a str, field: &'a str },
}

/// `notes` → a table; `transfers.at` / `*.created_at` → a field.
pub fn ignore_of(entry: &str) -> Ignore<'_> {
    match entry.split_once('.') {
        Some((table, field)) => Ignore::Field { table, field },
        None => Ignore::Table(entry),
    }
}

/// Each gold call that names no tool of the world (the agent's or the
/// user's own), or whose `turn` is 0 or before an earlier call's: where
/// in the case file and why, each placed at its own call, a turn's
/// problem at its `turn` (they were all placed at `[expect]`; turn 0 was
/// said to come "after turn 1").
pub fn call_problems(gold: &[toml::Spanned<GoldCall>], world: &World) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut turn = 1;
    for (i, spanned) in gold.iter().enumerate() {
        let (g, at) = (spanned.get_ref(), spanned.span().start);
        let turn_at = g.turn.as_ref().map_or(at, |t| t.span().start);
        if g.turn() == 0 {
            found.push((
                turn_at,
                format!(
                    "gold call {}: turn 0: turns count from 1 (the task's message opens turn 1)",
                    i + 1
                ),
            ));
        } else if g.turn() < turn {
            found.push((
                turn_at,
                format!(
                    "gold call {}: turn {} after turn {turn}: gold calls go in the order of the \
                     user's turns, from 1",
                    i + 1,
                    g.turn()
                ),
            ));
        }
        turn = turn.max(g.turn());
        if world.tool(&g.tool).is_none() && world.user_tool(&g.tool).is_none() {
            found.push((
                at,
                format!(
                    "gold call {}: no tool `{}` in {}",
                    i + 1,
                    g.tool,
                    world.reference()
                ),
            ));
        }
    }
    found
}

/// Every ignored table is one of the world's tables, and is ignored only
/// where there are gold calls.
pub fn check(
    gold: &[toml::Spanned<GoldCall>],
    ignore: &[String],
    world: &World,
) -> Result<(), String> {
    if !ignore.is_empty() && gold.is_empty() {
        return Err("gold_ignore without [[expect.gold]] calls".into());
    }
    for entry in ignore {
        let table = match ignore_of(entry) {
            Ignore::Table(t) | Ignore::Field { table: t, .. } => t,
        };
        if table != "*" && !world.initial.tables.contains_key(table) {
            return Err(format!("gold_ignore `{entry}`: unknown table `{table}`"));
        }
    }
    Ok(())
}
