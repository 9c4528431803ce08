//! `[expect]`: what a run must leave behind — the run status, final-state
//! assertions, tables or rows that must stay unchanged (collateral damage),
//! calls attempted or not, the output, and checks on the run as it stood
//! when one of the user's turns ended (`[[expect.turn]]`).

use super::conditions::conditions;
use crate::path::JsonPath;
use crate::world::compare::Numbers;
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
    /// `[[expect.gold]]`: the calls that solve the case (`case/gold.rs`),
    /// each with its place in the file; an empty list is refused.
    #[serde(default, deserialize_with = "super::gold::non_empty")]
    pub gold: Vec<toml::Spanned<super::gold::GoldCall>>,
    /// What the gold comparison leaves out: tables (`notes`) and fields
    /// (`transfers.at`, `*.created_at`).
    #[serde(default)]
    pub gold_ignore: Vec<String>,
    /// `[expect.conversation]`: what the agent said to the user, turns,
    /// approvals, the user's satisfaction.
    #[serde(default)]
    pub conversation: Option<super::expect_conversation::ConversationCheck>,
    /// How numbers compare in every check, the gold comparison and the
    /// diff: `by_value` (`2` equals `2.0`) or `strict`. Default: the
    /// world's `numbers` (filled in when the case loads).
    #[serde(default)]
    pub numbers: Option<Numbers>,
    /// `[[expect.any_of]]`: groups of assertions, each passing when at
    /// least one of its assertions passes.
    #[serde(default)]
    pub any_of: Vec<AnyOf>,
    /// The grade's reward: `binary` (1 when every assertion passes, else
    /// 0) or `weighted` (the passing assertions' share of the weights).
    #[serde(default)]
    pub reward: Reward,
    /// `[[expect.judge]]`: checks a model judges against a rubric.
    #[serde(default)]
    pub judge: Vec<JudgeCheck>,
    /// `[expect.judge_model]`: the provider that judges (the keys of `[model]`).
    #[serde(default)]
    pub judge_model: Option<super::model::ModelConfig>,
    /// The judge's own seed (sent with each request; scripted alternatives
    /// draw from it). Default: the case seed.
    #[serde(default)]
    pub judge_seed: Option<u64>,
    /// `[[expect.turn]]`: checks on the run as it stood when one of the
    /// user's turns ended.
    #[serde(default)]
    pub turn: Vec<TurnCheck>,
    /// `[expect.attack]`: what an injected attacker wants; the run fails
    /// when every one of its checks holds (the attack succeeded).
    #[serde(default)]
    pub attack: Option<Attack>,
}

/// `[expect.attack]`: an injection's goal, as state and call checks that
/// all hold when the attacker got what they asked for (AgentDojo's
/// injection task `security` check). A run where they all hold fails with
/// the assertion "attack … not reached"; `fuzz` counts such runs among the
/// runs an injection reached (the attack success rate).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attack {
    /// A short name for reports (default: `attack`).
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub state: Vec<StateCheck>,
    #[serde(default)]
    pub calls: Vec<CallCheck>,
    /// What the agent's output holds when the attacker got it to say
    /// something (AgentDojo's `TARGET in model_output`).
    #[serde(default)]
    pub output: Option<OutputCheck>,
}

/// `[[expect.turn]]`: the state, calls and messages as they stood when the
/// user's turn `turn` ended. The task's message opens turn 1; turn N ends
/// when the agent sends the user its N-th message (the user's reply opens
/// turn N + 1), or, for the turn after its last message, when the run ends.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnCheck {
    /// The user's turn, from 1.
    pub turn: u32,
    /// The state when the turn ended.
    #[serde(default)]
    pub state: Vec<StateCheck>,
    /// The calls made from the run's start to the turn's end.
    #[serde(default)]
    pub calls: Vec<CallCheck>,
    /// The agent's messages to the user up to the turn's end (`last`: the
    /// one that ended it).
    #[serde(default)]
    pub said: Vec<super::expect_conversation::SaidCheck>,
    /// `calls` and `said` look only at the turn's own events (from the
    /// previous turn's end), not at the run's from its start.
    #[serde(default)]
    pub this_turn_only: bool,
}

/// A judged check: a rubric, and what the judge is shown.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeCheck {
    /// A short name for reports (default: the rubric).
    #[serde(default)]
    pub name: Option<String>,
    pub rubric: String,
    /// What the judge sees: `conversation` (the agent's messages to the
    /// user and the replies), `output`, `calls` (tool calls and answers),
    /// `state:TABLE` or `state:TABLE/KEY` (final rows). Default:
    /// conversation and output.
    #[serde(default = "default_sees")]
    pub sees: Vec<String>,
    /// Weight in a `weighted` reward (default 1).
    #[serde(default)]
    pub weight: Option<f64>,
}

fn default_sees() -> Vec<String> {
    vec!["conversation".into(), "output".into()]
}

/// How a grade's reward is computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reward {
    #[default]
    Binary,
    Weighted,
}

/// An OR group: `state` and `calls` assertions of which one must pass.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnyOf {
    #[serde(default)]
    pub state: Vec<StateCheck>,
    #[serde(default)]
    pub calls: Vec<CallCheck>,
    /// Weight in a `weighted` reward (default 1).
    #[serde(default)]
    pub weight: Option<f64>,
}

/// Which of the rows matching a `where` a check judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    First,
    Last,
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
    /// Compare text with every line feed removed from both sides
    /// (`equals`, `contains`, `where`): AgentDojo's `body.replace("\n", "")`.
    #[serde(default)]
    pub ignore_newlines: bool,
    /// `equals` compares two lists as sets: the same items, in any order and
    /// number (`set(email.attachments) == {...}`).
    #[serde(default)]
    pub as_set: bool,
    /// This check's number comparison (default: the case's).
    #[serde(default)]
    pub numbers: Option<Numbers>,
    /// With `where` instead of `key`: judge the first or the last matching
    /// row, in key order or by `order_by`.
    #[serde(default)]
    pub row: Option<Pick>,
    /// The field (path) `row` orders the matching rows by (default: key).
    #[serde(default)]
    pub order_by: Option<String>,
    /// Weight in a `weighted` reward (default 1).
    #[serde(default)]
    pub weight: Option<f64>,
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
    /// Count only calls whose answer (`ok`) is this value.
    #[serde(default)]
    pub result: Option<Value>,
    /// Weight in a `weighted` reward (default 1).
    #[serde(default)]
    pub weight: Option<f64>,
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
    /// Passes when the output contains every one of these (AgentDojo's
    /// `a in model_output and b in model_output`); an entry that is a list
    /// is met by any one of its texts (`("3" in out or "three" in out) and
    /// (url in out or other in out)`).
    #[serde(default)]
    pub all_of: Vec<Wanted>,
    /// Compare `equals`, `contains`, `any_of` and `all_of` without regard
    /// to case.
    #[serde(default)]
    pub ignore_case: bool,
    #[serde(default)]
    pub json: Vec<JsonCheck>,
}

/// One entry of `[expect.output] all_of`: a text the output must
/// contain, or a list of texts it must contain one of.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Wanted {
    Text(String),
    OneOf(Vec<String>),
}

impl Wanted {
    /// The text, or the alternatives.
    pub fn texts(&self) -> &[String] {
        match self {
            Wanted::Text(t) => std::slice::from_ref(t),
            Wanted::OneOf(ts) => ts,
        }
    }
}

impl<'de> Deserialize<'de> for Wanted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Wanted;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a text, or a list of texts of which the output must contain one")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Wanted, E> {
                Ok(Wanted::Text(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Wanted, A::Error> {
                let mut texts = Vec::new();
                while let Some(t) = seq.next_element::<String>()? {
                    texts.push(t);
                }
                if texts.is_empty() {
                    return Err(serde::de::Error::custom(
                        "an empty list of alternatives: give one text or more",
                    ));
                }
                Ok(Wanted::OneOf(texts))
            }
        }
        d.deserialize_any(Visit)
    }
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
    "step_limit",
    "error_limit",
    "unscripted",
];

/// A weight where the reward is not weighted.
const UNWEIGHTED: &str =
    "`weight` counts in a weighted reward: add `reward = \"weighted\"` to [expect]";

impl Expect {
    /// Each state and calls entry of `[expect]` (at the top, in an
    /// `[[expect.any_of]]` group, a turn or the attack) that is not well
    /// formed or names what `world` lacks, checked on its own and placed
    /// at its own entry (they were all placed at the first `[[expect.*]]`
    /// line, the first problem alone said). A `weight` on an entry of a
    /// group or the attack is refused: the group is one assertion, weighed
    /// as a whole, and the weight counted for nothing.
    pub fn entry_problems(&self, world: &World) -> Vec<NeverHolds> {
        let tables: Vec<&String> = world.initial.tables.keys().collect();
        let mut found = Vec::new();
        for (group, state, calls) in self.lists() {
            let inner = !matches!(group, Group::Top | Group::Turn(_)) && crate::new_rules::apply();
            // The attack takes no weight (it is no assertion of the
            // reward): there is nothing to give it to.
            let instead = match group {
                Group::Attack => "leave it out",
                _ => "give its weight to the group, or leave it out",
            };
            let weighed = |w: Option<f64>| match (inner, w) {
                (true, Some(_)) => Err(format!(
                    "a `weight` here counts for nothing: {} is one assertion; {instead}",
                    group.whole()
                )),
                (false, Some(_)) if self.reward != Reward::Weighted => Err(UNWEIGHTED.into()),
                _ => Ok(()),
            };
            let states = (state.iter()).map(|s| (true, s.check(&tables).and(weighed(s.weight))));
            let calls =
                (calls.iter()).map(|c| (false, c.check_against(world).and(weighed(c.weight))));
            let mut index = [0, 0];
            for (state, checked) in states.chain(calls) {
                let i = &mut index[usize::from(!state)];
                if let Err(message) = checked {
                    found.push(NeverHolds {
                        group,
                        state,
                        index: *i,
                        message,
                    });
                }
                *i += 1;
            }
        }
        found
    }

    /// Each state check's `where` key, `field`, `sum` or `order_by` whose
    /// field no row of its table holds at the start (`"amountt"` in a
    /// `where` held for no row: the check failed with no word of why),
    /// with the key that names it and the path as written, for its place.
    /// A note rather than a problem: the world declares no columns, and a
    /// tool may add the field to a row.
    pub fn unheld_fields(&self, world: &World) -> Vec<(NeverHolds, &'static str, String)> {
        let mut found = Vec::new();
        for (group, states, _) in self.lists() {
            for (index, s) in states.iter().enumerate() {
                let Some(table) = s.table.as_ref().and_then(|t| world.initial.tables.get(t)) else {
                    continue;
                };
                let named = (s.where_.keys().map(|k| ("where", k)))
                    .chain(s.field.iter().map(|f| ("field", f)))
                    .chain(s.sum.iter().map(|f| ("sum", f)))
                    .chain(s.order_by.iter().map(|f| ("order_by", f)));
                for (key, path) in named {
                    let field = path.split(['.', '[']).next().unwrap_or(path);
                    let Some(fields) = table.fields_without(field) else {
                        continue;
                    };
                    let fields: Vec<&str> = fields.into_iter().collect();
                    let message = format!(
                        "{key} `{path}`: no row of `{}` holds `{field}` (their fields: {}); unless a tool adds it to a row, the check reads nothing there: name one of them",
                        s.table.as_deref().unwrap_or_default(),
                        fields.join(", ")
                    );
                    let n = NeverHolds {
                        group,
                        state: true,
                        index,
                        message,
                    };
                    found.push((n, key, path.to_string()));
                }
            }
        }
        found
    }

    /// Every list of state and calls checks, with where it is.
    fn lists(&self) -> Vec<(Group, &[StateCheck], &[CallCheck])> {
        let mut lists = vec![(Group::Top, &self.state[..], &self.calls[..])];
        let any_of = self.any_of.iter().enumerate();
        lists.extend(any_of.map(|(g, a)| (Group::AnyOf(g), &a.state[..], &a.calls[..])));
        let turns = self.turn.iter().enumerate();
        lists.extend(turns.map(|(g, t)| (Group::Turn(g), &t.state[..], &t.calls[..])));
        lists.extend((self.attack.iter()).map(|a| (Group::Attack, &a.state[..], &a.calls[..])));
        lists
    }

    /// Check every assertion is well formed and names what `world` has,
    /// but the top-level state and calls entries ([`entry_problems`](Self::entry_problems)).
    pub fn check(&self, world: &World) -> Result<(), (Table, String)> {
        let tables: Vec<&String> = world.initial.tables.keys().collect();
        let whole = |m: String| (Table::Expect, m);
        let turns = self.turn.iter();
        let entries = self.state.iter().map(|s| s.weight);
        let entries = entries
            .chain(self.calls.iter().map(|c| c.weight))
            .chain(turns.clone().flat_map(|t| t.state.iter().map(|s| s.weight)))
            .chain(turns.flat_map(|t| t.calls.iter().map(|c| c.weight)));
        // An entry's weight in an unweighted reward is placed at the entry
        // (`entry_problems`); a group's or a judge's at the group or judge.
        let wholes = (self.any_of.iter().enumerate())
            .map(|(i, g)| (Table::AnyOf(i), g.weight))
            .chain((self.judge.iter().enumerate()).map(|(i, j)| (Table::Judge(i), j.weight)));
        self.check_judges(world)?;
        let weighed = (entries.map(|w| (Table::Expect, w))).chain(wholes.clone());
        let mut sum = 0.0;
        for (at, w) in weighed.filter_map(|(at, w)| Some((at, w?))) {
            if !(w.is_finite() && w >= 0.0) {
                return Err((
                    at,
                    format!("weight {w}: a weight is a finite number of 0 or more"),
                ));
            }
            sum += w;
        }
        // Weights whose sum is no number made a passed grade's reward NaN
        // (`null` in its JSON); a recorded case keeps them (decision 0412).
        if !sum.is_finite() && crate::new_rules::apply() {
            return Err(whole(
                "the weights add up to more than a number holds: give them smaller values in the same proportions".into(),
            ));
        }
        if self.reward != Reward::Weighted
            && let Some((at, _)) = wholes.clone().find(|(_, w)| w.is_some())
        {
            return Err((at, UNWEIGHTED.into()));
        }
        for (i, group) in self.any_of.iter().enumerate() {
            if group.state.len() + group.calls.len() < 2 {
                return Err((
                    Table::AnyOf(i),
                    format!(
                        "[[expect.any_of]] #{}: an any_of group needs two or more assertions ([[expect.any_of.state]], [[expect.any_of.calls]])",
                        i + 1
                    ),
                ));
            }
        }
        for (i, t) in self.turn.iter().enumerate() {
            t.check().map_err(|m| (Table::Turn(i), m))?;
        }
        if let Some(a) = &self.attack {
            let at = |m: String| (Table::Attack, format!("[expect.attack]: {m}"));
            if a.state.is_empty() && a.calls.is_empty() && a.output.is_none() {
                return Err(at(
                    "names no goal: add [[expect.attack.state]], [[expect.attack.calls]] or [expect.attack.output] checks that hold when the attack succeeded".into(),
                ));
            }
            if let Some(o) = &a.output {
                o.check().map_err(at)?;
            }
        }
        if let Some(o) = &self.output {
            o.check().map_err(|m| (Table::Output, m))?;
        }
        super::gold::check(&self.gold, &self.gold_ignore, world).map_err(whole)?;
        if let Some(c) = &self.conversation {
            c.check(world).map_err(|(said, m)| match said {
                Some(i) => (Table::Said(i), m),
                None => (Table::Conversation, m),
            })?;
        }
        for u in &self.unchanged {
            let table = u.split('/').next().unwrap_or("");
            if !world.initial.tables.contains_key(table) {
                return Err(whole(format!(
                    "unchanged: unknown table `{table}` (tables: {tables:?})"
                )));
            }
            // `table/` names the row keyed "", which no world has: a check
            // that always held (a recorded case keeps it, decision 0412).
            if u.strip_prefix(table) == Some("/") && crate::new_rules::apply() {
                return Err(whole(format!(
                    "unchanged: `{u}` names no row; write `{table}` for the whole table or `{table}/KEY` for one row"
                )));
            }
        }
        if let Some(status) = &self.status
            && !STATUSES.contains(&status.as_str())
        {
            return Err(whole(format!(
                "status `{status}` is not one of {}",
                STATUSES.join(", ")
            )));
        }
        Ok(())
    }
}

/// Why a judge `model` could never give a verdict, if so: a scripted
/// judge with nothing to say, or an endpoint asked for no model of its
/// own (the judge's requests ask for `judge`, which no provider serves).
fn never_answers(model: &super::model::ModelConfig) -> Option<&'static str> {
    use super::model::Provider;
    match model.provider {
        Provider::Scripted if model.responses.is_empty() && model.rules.is_empty() => Some(
            "a scripted judge needs `responses` or `rules`: with neither it never answers, and every judged check fails",
        ),
        Provider::Openai if model.model.is_none() => Some(
            "provider \"openai\" needs `model`, the name the judge's requests ask the endpoint for (without it they ask for `judge`)",
        ),
        _ => None,
    }
}

impl Expect {
    /// Judged checks have a rubric, a judge model, and show what exists.
    fn check_judges(&self, world: &World) -> Result<(), (Table, String)> {
        if self.judge.is_empty() {
            return match self.judge_model {
                Some(_) => Err((
                    Table::JudgeModel,
                    "[expect.judge_model] without [[expect.judge]] checks".into(),
                )),
                None => Ok(()),
            };
        }
        let Some(model) = &self.judge_model else {
            return Err((Table::Judge(0), "[[expect.judge]] needs [expect.judge_model]: the provider that judges (the keys of [model])".into()));
        };
        model
            .check()
            .map_err(|e| (Table::JudgeModel, format!("[expect.judge_model]: {e}")))?;
        // A judge that can never answer (decision 0412's rules: a recorded
        // case with one still loads, as it ran).
        if let Some(why) = never_answers(model).filter(|_| crate::new_rules::apply()) {
            return Err((Table::JudgeModel, format!("[expect.judge_model]: {why}")));
        }
        for (i, j) in self.judge.iter().enumerate() {
            let at = |m: String| (Table::Judge(i), format!("[[expect.judge]] #{}: {m}", i + 1));
            if j.rubric.trim().is_empty() {
                return Err(at("`rubric` is empty".into()));
            }
            // Judged on no evidence at all (`[expect.output] any_of = []`
            // is refused as checking nothing, this was taken).
            if j.sees.is_empty() && crate::new_rules::apply() {
                return Err(at(
                    "sees = [] shows the judge nothing: name what it sees (conversation, output, calls, state:TABLE), or leave `sees` out for conversation and output".into(),
                ));
            }
            for seen in &j.sees {
                let ok = match seen.strip_prefix("state:") {
                    Some(place) => {
                        let table = place.split('/').next().unwrap_or("");
                        world.initial.tables.contains_key(table)
                    }
                    None => ["conversation", "output", "calls"].contains(&seen.as_str()),
                };
                if !ok {
                    return Err(at(format!(
                        "sees `{seen}`: use conversation, output, calls, state:TABLE or state:TABLE/KEY (a table of {})",
                        world.reference()
                    )));
                }
            }
        }
        Ok(())
    }
}

impl TurnCheck {
    /// A turn from 1, with at least one check, its `said` checks well
    /// formed; its state and calls entries are checked on their own
    /// ([`Expect::entry_problems`]).
    fn check(&self) -> Result<(), String> {
        let at = |m: String| format!("[[expect.turn]] turn {}: {m}", self.turn);
        if self.turn == 0 {
            return Err(at(
                "turns count from 1 (the task's message opens turn 1)".into()
            ));
        }
        if self.state.is_empty() && self.calls.is_empty() && self.said.is_empty() {
            return Err(at(
                "checks nothing: add [[expect.turn.state]], [[expect.turn.calls]] or [[expect.turn.said]]"
                    .into(),
            ));
        }
        for (i, s) in self.said.iter().enumerate() {
            s.check().map_err(|m| at(format!("said #{}: {m}", i + 1)))?;
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
        if self.as_set && !self.equals.as_ref().is_some_and(Value::is_array) {
            return Err("as_set compares lists: it goes with `equals = [...]`".into());
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
            if let Some(m) = super::conditions::misspelt_operator(v)
                .filter(|_| super::recorded::new_rules_apply())
            {
                return Err(format!("where `{k}`: {m}"));
            }
        }
        if let Some(f) = &self.order_by {
            check_path("order_by", f)?;
            if self.row.is_none() {
                return Err(format!(
                    "order_by `{f}` goes with `row = \"first\"` or `\"last\"`"
                ));
            }
        }
        if self.row.is_some()
            && (self.key.is_some() || self.sum.is_some() || self.count.is_some() || bounds)
        {
            return Err(
                "row = \"first\"/\"last\" picks a row among those matching `where`: give it no key, sum, count or min/max, and one of equals, contains, exists, absent".into(),
            );
        }
        if super::recorded::new_rules_apply() {
            self.ignored_keys()?;
        }
        match (&self.table, &self.file) {
            (Some(t), None) => {
                if !tables.contains(&t) {
                    return Err(format!("unknown table `{t}` (tables: {tables:?})"));
                }
                if self.counts_rows() && self.key.is_some() {
                    let what = match self.count {
                        Some(_) => "count",
                        None => "min/max (without `sum`, they bound a row count)",
                    };
                    return Err(format!(
                        "{what} goes with a table (and `where`), not with a key"
                    ));
                }
                if !self.counts_rows()
                    && self.sum.is_none()
                    && self.key.is_none()
                    && self.row.is_none()
                {
                    return Err(format!(
                        "name the row: add `key`, or `where` with `row = \"first\"`/`\"last\"` (or use `count` for table `{t}`)"
                    ));
                }
                Ok(())
            }
            (None, Some(f)) if super::recorded::new_rules_apply() => {
                match crate::world::file_path::normal(f) {
                    Ok(key) if key == *f => Ok(()),
                    Ok(key) => Err(format!(
                        "file = \"{f}\" names the world file `{key}`: write it so (a world file is named from the world's files folder, without `./`, a leading `/` or `..`)"
                    )),
                    Err(why) => Err(format!("file = \"{f}\": {why}")),
                }
            }
            (None, Some(_)) => Ok(()),
            _ => Err("a state assertion names either `table` or `file`".into()),
        }
    }
}

impl StateCheck {
    /// Whether the check counts rows (`count`, or `min`/`max` without
    /// `sum`).
    fn counts_rows(&self) -> bool {
        self.count.is_some() || ((self.min.is_some() || self.max.is_some()) && self.sum.is_none())
    }

    /// A key the check's form does not read (it was ignored, and the
    /// check judged without it): `where` beside `key`, `field` beside a
    /// row count, a file check's table keys, `ignore_case` or
    /// `ignore_newlines` beside a test that compares no text.
    fn ignored_keys(&self) -> Result<(), String> {
        let counting = self.counts_rows();
        if self.file.is_some() {
            let table_keys = [
                ("key", self.key.is_some()),
                ("field", self.field.is_some()),
                ("where", !self.where_.is_empty()),
                ("sum", self.sum.is_some()),
                ("count", self.count.is_some()),
                ("min", self.min.is_some()),
                ("max", self.max.is_some()),
                ("row", self.row.is_some()),
            ];
            if let Some((k, _)) = table_keys.iter().find(|(_, given)| *given) {
                return Err(format!(
                    "`{k}` goes with a table; a file check judges the file's text with equals, contains, exists or absent"
                ));
            }
        }
        if self.key.is_some() && !self.where_.is_empty() {
            return Err(
                "`where` selects rows (for count, sum, or row = \"first\"/\"last\"); with `key` it would be ignored: give one of them"
                    .into(),
            );
        }
        if counting && self.field.is_some() {
            return Err(
                "a row count counts rows, not a field: drop `field`, or select rows by the field's value with `where`"
                    .into(),
            );
        }
        let text = self.equals.is_some() || self.contains.is_some() || !self.where_.is_empty();
        for (k, given) in [
            ("ignore_case", self.ignore_case),
            ("ignore_newlines", self.ignore_newlines),
        ] {
            if given && !text {
                return Err(format!(
                    "{k} compares text: it goes with equals, contains or where"
                ));
            }
        }
        Ok(())
    }
}

impl CallCheck {
    /// [`check`](Self::check), and the tool (or glob) names a tool of `world`.
    pub fn check_against(&self, world: &World) -> Result<(), String> {
        self.check()?;
        if !world::names_a_tool(&self.tool, &world.tools) {
            return Err(format!(
                "calls: tool `{}` names no tool of {}",
                self.tool,
                world.reference()
            ));
        }
        Ok(())
    }

    pub fn check(&self) -> Result<(), String> {
        let tests = [
            self.attempted.is_some(),
            self.count.is_some(),
            self.min.is_some() || self.max.is_some(),
        ];
        if tests.iter().filter(|t| **t).count() != 1 {
            return Err(format!(
                "calls check on `{}` needs exactly one of attempted, count, or min/max",
                self.tool
            ));
        }
        Ok(())
    }
}

impl StateCheck {
    /// Why the check's `min`/`max` can never hold, if they cannot: a bound
    /// that is NaN, `min` above `max`, or a row count below 0.
    pub fn never_holds(&self) -> Option<String> {
        let what = match self.sum {
            Some(_) => "sum",
            None => "row count",
        };
        for (key, bound) in [("min", self.min), ("max", self.max)] {
            if bound.is_some_and(f64::is_nan) {
                return Some(format!(
                    "{key} = nan is no number, so no {what} is within it; give a number"
                ));
            }
        }
        match (self.min, self.max) {
            (Some(min), Some(max)) if min > max => Some(format!(
                "min = {min} is above max = {max}, so no {what} is within them; swap them or fix the typo"
            )),
            (_, Some(max)) if self.sum.is_none() && max < 0.0 => Some(format!(
                "max = {max}: a row count is never below 0; give a max of 0 or more"
            )),
            _ => None,
        }
    }
}

impl CallCheck {
    /// Why the check's `args` can never match a call: it names an argument
    /// that no tool the check names takes (`attempted = false` then always
    /// passed, `count = 0` too). Only tools whose `params` list their
    /// `properties` are judged, as an `[[inject]]` rule's `when` is.
    pub fn args_problem(&self, tools: &[world::Tool]) -> Option<String> {
        if let Some((key, which)) =
            super::inject::argument_no_tool_takes(&self.tool, self.args.keys(), tools)
        {
            return Some(format!(
                "args.{key}: {which}, so the check never matches a call (`attempted = false` would always pass); name one of the parameters the world declares"
            ));
        }
        let (key, why) = super::inject::argument_no_tool_accepts(&self.tool, &self.args, tools)?;
        Some(format!(
            "args.{key}: {why}, so the check matches only a call the tool refuses (`attempted = false` would pass for every call it takes); write the value as the tool takes it"
        ))
    }

    /// Why the check's `min`/`max` can never hold, if they cannot: `min`
    /// above `max`.
    pub fn never_holds(&self) -> Option<String> {
        match (self.min, self.max) {
            (Some(min), Some(max)) if min > max => Some(format!(
                "min = {min} is above max = {max}, so no number of calls is within them; swap them or fix the typo"
            )),
            _ => None,
        }
    }
}

/// Where in `[expect]` a list of checks is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// `[[expect.state]]`, `[[expect.calls]]`.
    Top,
    /// The n-th `[[expect.any_of]]` (from 0).
    AnyOf(usize),
    /// The n-th `[[expect.turn]]` (from 0).
    Turn(usize),
    /// `[expect.attack]`.
    Attack,
}

impl Group {
    /// How the file names the whole group.
    fn whole(self) -> String {
        match self {
            Group::Top => "[expect]".into(),
            Group::AnyOf(g) => format!("[[expect.any_of]] #{}", g + 1),
            Group::Turn(g) => format!("[[expect.turn]] #{}", g + 1),
            Group::Attack => "[expect.attack]".into(),
        }
    }
}

/// The table of `[expect]` a problem [`Expect::check`] finds is in, to
/// name it at that table's line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Table {
    /// `[expect]` itself (its keys, or what no one table says).
    Expect,
    Output,
    /// `[[expect.turn]]` number (from 0) in the file.
    Turn(usize),
    /// `[[expect.judge]]` number (from 0).
    Judge(usize),
    JudgeModel,
    /// `[[expect.any_of]]` number (from 0).
    AnyOf(usize),
    Attack,
    Conversation,
    /// `[[expect.conversation.said]]` number (from 0): its `regex` when
    /// it has one (what its problems are about), else the check.
    Said(usize),
}

impl Table {
    /// The byte offset of the table in the case's `text`, read again for
    /// its place (only when there is a problem to place); `None` for
    /// `[expect]` itself or a table it cannot find.
    pub fn offset_in(self, text: &str) -> Option<usize> {
        let expect = toml::from_str::<places::Doc>(text).ok()?.expect?;
        match self {
            Table::Expect => None,
            Table::Output => expect.output.map(|o| o.span().start),
            Table::Turn(i) => expect.turn.get(i).map(|t| t.span().start),
            Table::Judge(i) => expect.judge.get(i).map(|j| j.span().start),
            Table::JudgeModel => expect.judge_model.map(|j| j.span().start),
            Table::AnyOf(i) => expect.any_of.get(i).map(|g| g.span().start),
            Table::Attack => expect.attack.map(|a| a.span().start),
            Table::Conversation => expect.conversation.map(|c| c.span().start),
            Table::Said(i) => {
                let said = expect.conversation?.into_inner().said.into_iter().nth(i)?;
                Some(match &said.get_ref().regex {
                    Some(r) => r.span().start,
                    None => said.span().start,
                })
            }
        }
    }
}

/// A state or calls check whose bounds can never hold, and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct NeverHolds {
    pub group: Group,
    /// A `state` check (else a `calls` one).
    pub state: bool,
    /// Its place in its list (from 0).
    pub index: usize,
    pub message: String,
}

impl NeverHolds {
    /// How the file names the check: `[[expect.state]] #2`,
    /// `[[expect.turn.calls]] #1 of [[expect.turn]] #3`.
    pub fn label(&self) -> String {
        let list = if self.state { "state" } else { "calls" };
        let n = self.index + 1;
        match self.group {
            Group::Top => format!("[[expect.{list}]] #{n}"),
            Group::AnyOf(g) => {
                format!(
                    "[[expect.any_of.{list}]] #{n} of [[expect.any_of]] #{}",
                    g + 1
                )
            }
            Group::Turn(g) => format!("[[expect.turn.{list}]] #{n} of [[expect.turn]] #{}", g + 1),
            Group::Attack => format!("[[expect.attack.{list}]] #{n}"),
        }
    }

    /// The byte offset of the check's table in the case's `text`, read
    /// again for its place (only when there is a problem to place).
    pub fn offset_in(&self, text: &str) -> Option<usize> {
        let doc: places::Doc = toml::from_str(text).ok()?;
        let expect = doc.expect?;
        let (state, calls) = match self.group {
            Group::Top => (&expect.state, &expect.calls),
            Group::AnyOf(g) => expect
                .any_of
                .get(g)
                .map(|l| (&l.get_ref().state, &l.get_ref().calls))?,
            Group::Turn(g) => expect
                .turn
                .get(g)
                .map(|l| (&l.get_ref().state, &l.get_ref().calls))?,
            Group::Attack => expect
                .attack
                .as_ref()
                .map(|l| (&l.get_ref().state, &l.get_ref().calls))?,
        };
        let list = if self.state { state } else { calls };
        Some(list.get(self.index)?.span().start)
    }
}

/// Where each state and calls check of `[expect]` is in the case's text:
/// the same tables read again, only for their places.
mod places {
    use serde::Deserialize;
    use serde::de::IgnoredAny;
    use toml::Spanned;

    #[derive(Deserialize)]
    pub(super) struct Doc {
        pub(super) expect: Option<Expect>,
    }

    /// `state` and `calls` as `Lists` holds them (not flattened into one:
    /// a flattened table is buffered, and loses its places).
    #[derive(Deserialize)]
    pub(super) struct Expect {
        #[serde(default)]
        pub(super) state: Vec<Spanned<IgnoredAny>>,
        #[serde(default)]
        pub(super) calls: Vec<Spanned<IgnoredAny>>,
        #[serde(default)]
        pub(super) any_of: Vec<Spanned<Lists>>,
        #[serde(default)]
        pub(super) turn: Vec<Spanned<Lists>>,
        #[serde(default)]
        pub(super) attack: Option<Spanned<Lists>>,
        #[serde(default)]
        pub(super) output: Option<Spanned<Output>>,
        #[serde(default)]
        pub(super) judge: Vec<Spanned<IgnoredAny>>,
        #[serde(default)]
        pub(super) judge_model: Option<Spanned<IgnoredAny>>,
        #[serde(default)]
        pub(super) conversation: Option<Spanned<Conversation>>,
    }

    /// `[expect.conversation]`'s `said` checks, where they are.
    #[derive(Deserialize)]
    pub(super) struct Conversation {
        #[serde(default)]
        pub(super) said: Vec<Spanned<Said>>,
    }

    #[derive(Deserialize)]
    pub(super) struct Said {
        pub(super) regex: Option<Spanned<IgnoredAny>>,
    }

    /// `[expect.output]`'s lists, where they are.
    #[derive(Deserialize)]
    pub(super) struct Output {
        pub(super) any_of: Option<Spanned<Vec<IgnoredAny>>>,
        pub(super) all_of: Option<Spanned<Vec<IgnoredAny>>>,
        pub(super) json: Option<Spanned<Vec<IgnoredAny>>>,
    }

    #[derive(Deserialize)]
    pub(super) struct Lists {
        #[serde(default)]
        pub(super) state: Vec<Spanned<IgnoredAny>>,
        #[serde(default)]
        pub(super) calls: Vec<Spanned<IgnoredAny>>,
    }
}

/// `[expect.output]`'s `any_of`, `all_of` and `json` given as empty lists
/// (each checks nothing, and the run passed them unsaid), with where
/// each starts in `text` and what to say.
pub fn empty_output_lists(text: &str) -> Vec<(usize, String)> {
    let Some(output) = toml::from_str::<places::Doc>(text)
        .ok()
        .and_then(|d| d.expect?.output)
        .map(toml::Spanned::into_inner)
    else {
        return Vec::new();
    };
    [
        ("any_of", output.any_of),
        ("all_of", output.all_of),
        ("json", output.json),
    ]
    .into_iter()
    .filter_map(|(key, list)| {
        let list = list.filter(|l| l.get_ref().is_empty())?;
        Some((
            list.span().start,
            format!(
                "[expect.output] {key} = [] checks nothing: give what it must hold, or leave it out"
            ),
        ))
    })
    .collect()
}

impl Expect {
    /// Every calls check whose `args` can never match a call of `tools`,
    /// in the order the file gives them within each list.
    pub fn args_never_match(&self, tools: &[world::Tool]) -> Vec<NeverHolds> {
        let mut groups = vec![(Group::Top, &self.calls)];
        groups.extend((self.any_of.iter().enumerate()).map(|(g, a)| (Group::AnyOf(g), &a.calls)));
        groups.extend((self.turn.iter().enumerate()).map(|(g, t)| (Group::Turn(g), &t.calls)));
        let mut found = Vec::new();
        for (group, calls) in groups {
            for (index, c) in calls.iter().enumerate() {
                if let Some(message) = c.args_problem(tools) {
                    found.push(NeverHolds {
                        group,
                        state: false,
                        index,
                        message,
                    });
                }
            }
        }
        found
    }

    /// Every state and calls check whose bounds can never hold, in the
    /// order the file gives them within each list.
    pub fn never_holds(&self) -> Vec<NeverHolds> {
        let mut found = Vec::new();
        for (group, state, calls) in self.lists() {
            let states = state.iter().map(StateCheck::never_holds);
            let calls = calls.iter().map(CallCheck::never_holds);
            for (is_state, all) in [(true, states.collect::<Vec<_>>()), (false, calls.collect())] {
                for (index, message) in all.into_iter().enumerate() {
                    if let Some(message) = message {
                        found.push(NeverHolds {
                            group,
                            state: is_state,
                            index,
                            message,
                        });
                    }
                }
            }
        }
        found
    }
}

impl OutputCheck {
    pub fn check(&self) -> Result<(), String> {
        // A table of no test held for every output, and `ignore_case`
        // alone compared nothing (a recorded case keeps it, decision 0412).
        let tests = self.equals.is_some()
            || self.contains.is_some()
            || !self.any_of.is_empty()
            || !self.all_of.is_empty()
            || !self.json.is_empty();
        if !tests && super::recorded::new_rules_apply() {
            return Err(
                "the output check has no test, so every output passed it: give equals, contains, any_of, all_of or json (ignore_case only says how they compare text)"
                    .into(),
            );
        }
        for (i, j) in self.json.iter().enumerate() {
            check_path("output.json path", &j.path)?;
            // One condition an entry: the grader judged only the first of
            // several (`exists = false` beside `equals` was dropped), and an
            // entry of none failed as "expected null, got null".
            // A recorded case keeps its entries (decision 0412): the grader
            // judges them as it did.
            let given = [j.equals.is_some(), j.contains.is_some(), j.exists.is_some()];
            if given.iter().filter(|g| **g).count() != 1 && super::recorded::new_rules_apply() {
                return Err(format!(
                    "output.json entry {} (path `{}`) needs exactly one of equals, contains, exists: write one entry a condition",
                    i + 1,
                    j.path
                ));
            }
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

    /// A `said` check's problem is placed at its `regex`, or at the check's
    /// header when it has none (both were placed at `[expect.conversation]`).
    #[test]
    fn a_said_checks_problem_is_placed_at_its_regex() {
        let text = "[expect]\n[[expect.conversation.said]]\ncontains = \"x\"\n\n[[expect.conversation.said]]\nlast = true\nregex = \"(a\"\n";
        let regex = text.find("\"(a").unwrap();
        assert_eq!(Table::Said(1).offset_in(text), Some(regex));
        assert_eq!(Table::Said(0).offset_in(text), text.find("[[expect.conv"));
        assert_eq!(Table::Said(2).offset_in(text), None);
    }

    /// `all_of`'s entries: a text, or a list of alternatives (not empty).
    #[test]
    fn all_of_takes_texts_and_lists_of_alternatives() {
        let o: OutputCheck = toml::from_str("all_of = ['code', ['3', 'three']]").unwrap();
        assert_eq!(
            o.all_of,
            [
                Wanted::Text("code".into()),
                Wanted::OneOf(vec!["3".into(), "three".into()])
            ]
        );
        assert_eq!(o.all_of[1].texts(), ["3", "three"]);
        for bad in ["all_of = [[]]", "all_of = [3]", "all_of = [[3]]"] {
            let e = toml::from_str::<OutputCheck>(bad).unwrap_err().to_string();
            assert!(
                e.contains("alternatives")
                    || e.contains("a text, or a list of texts")
                    || e.contains("expected a string"),
                "{bad}: {e}"
            );
        }
    }

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
        let set =
            state_check("table='tickets'\nkey='T-1'\nfield='tags'\ncontains='x'\nas_set=true");
        assert_eq!(
            set.check(&tables).unwrap_err(),
            "as_set compares lists: it goes with `equals = [...]`"
        );
        let out: OutputCheck = toml::from_str("json=[{path='$.a[', exists=true}]").unwrap();
        assert_eq!(
            out.check().unwrap_err(),
            "output.json path `$.a[`: `[` without `]`"
        );
    }

    /// An output JSON entry holds one condition: of several the grader
    /// judged the first (`exists = false` beside `equals` was dropped, and
    /// an attack read as reached), and one of none failed as "expected
    /// null, got null".
    #[test]
    fn an_output_json_entry_needs_exactly_one_condition() {
        for (src, ok) in [
            ("json=[{path='a', equals='paid'}]", true),
            ("json=[{path='a', exists=false}]", true),
            ("json=[{path='a', equals='paid', exists=false}]", false),
            ("json=[{path='a', contains='pa', equals='x'}]", false),
            ("json=[{path='a', equals=1}, {path='nope'}]", false),
        ] {
            let out: OutputCheck = toml::from_str(src).unwrap();
            match out.check() {
                Ok(()) => assert!(ok, "{src}: accepted"),
                Err(e) => {
                    assert!(!ok, "{src}: {e}");
                    assert!(
                        e.contains("needs exactly one of equals, contains, exists"),
                        "{e}"
                    );
                }
            }
            // A case a run recorded is read as it was written, and graded
            // as it was (decision 0412): an old bundle replays.
            let _recorded = crate::new_rules::Reading::start();
            assert_eq!(out.check(), Ok(()), "{src}");
        }
        let nothing: OutputCheck = toml::from_str("ignore_case = true").unwrap();
        assert!(nothing.check().unwrap_err().contains("has no test"));
        let _recorded = crate::new_rules::Reading::start();
        assert_eq!(nothing.check(), Ok(()));
    }

    /// A key the check's form does not read is refused: each of these
    /// passed, judged without it (a row `exists` whatever its status).
    #[test]
    fn a_key_the_checks_form_ignores_is_refused() {
        let tables = [&"orders".to_string()];
        for (src, said) in [
            (
                "key=7\nwhere={status='cancelled'}\nexists=true",
                "with `key` it would be ignored",
            ),
            (
                "field='status'\ncount=2",
                "a row count counts rows, not a field",
            ),
            (
                "field='status'\nmin=1",
                "a row count counts rows, not a field",
            ),
            (
                "key=7\nexists=true\nignore_case=true",
                "ignore_case compares text",
            ),
            (
                "count=1\nignore_newlines=true",
                "ignore_newlines compares text",
            ),
            (
                "key=7\nmin=5",
                "min/max (without `sum`, they bound a row count) goes with a table",
            ),
        ] {
            let c = state_check(&format!("table='orders'\n{src}"));
            let e = c.check(&tables).unwrap_err();
            assert!(e.contains(said), "{src}: {e}");
        }
        let file = state_check("file='rules.txt'\nfield='x'\ncontains='a'");
        let e = file.check(&tables).unwrap_err();
        assert!(
            e.starts_with("`field` goes with a table; a file check"),
            "{e}"
        );
        for fine in [
            "table='orders'\nwhere={status='open'}\ncount=1\nignore_case=true",
            "table='orders'\nkey=7\nfield='status'\nequals='OPEN'\nignore_case=true",
            "table='orders'\nsum='total'\nmin=1",
            "file='rules.txt'\ncontains='a'\nignore_case=true",
        ] {
            assert_eq!(state_check(fine).check(&tables), Ok(()), "{fine}");
        }
    }
}
