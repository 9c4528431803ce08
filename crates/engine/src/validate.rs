//! `validate`: a case checked without any agent. Three scripted agents run
//! in process through the same mediator, grader and gold state a real run
//! has: the oracle (the case's `[[expect.gold]]` calls in order, each in
//! its user turn, a call of the user's own tools made as the user's, then
//! an answer made from the case's own output and conversation checks), a
//! do-nothing agent (no call, no answer) and one that answers the empty
//! string. The oracle must pass, the other two must fail, the oracle's
//! run and grade must be the same twice, and no expected answer may be
//! shown to the agent verbatim (in the task, the world's files, tool
//! descriptions or rows). A case without gold calls is validated as far
//! as it can be, and says so.

use crate::run::{self, RunOptions, RunOutcome};
use anyhow::Result;
use serde::Serialize;
use serde_json::{Map, Value, json};
use worldline_case::canon;
use worldline_case::case::Case;
use worldline_case::case::expect::Expect;
use worldline_case::case::expect_conversation::SaidCheck;
use worldline_case::path::JsonPath;
use worldline_case::world::state::FileData;
use worldline_log::log::Status;
use worldline_runtime::mediate::RunState;
use worldline_runtime::mediate::bindings::worldline::agent::{tools, user};
use worldline_runtime::sandbox::Sandbox;

/// Expected answers shorter than this are not searched for: short ids and
/// words (`D-42`, `yes`) are the vocabulary of the world the agent must
/// read, not a leaked answer ([0340](../../../docs/decisions/0340-validate-scripted-in-process.md)).
const LEAK_MIN_CHARS: usize = 8;

/// What one scripted agent does: tool calls in order (each with the
/// message that ends its turn before it, when it opens a later turn),
/// messages to the user, and its final answer.
#[derive(Default)]
struct Script {
    calls: Vec<(Vec<String>, String, Map<String, Value>)>,
    say: Vec<String>,
    output: Option<String>,
}

/// One scripted agent's run, graded.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    /// `oracle`, `do-nothing` or `empty-answer`.
    pub agent: &'static str,
    /// The run's status (`completed`, or how a stop ended it).
    pub status: String,
    pub passed: bool,
    pub reward: f64,
    /// The assertions that failed, by what they check.
    pub failed: Vec<String>,
}

/// An expected value the agent is shown.
#[derive(Debug, Clone, Serialize)]
pub struct Leak {
    /// The check it comes from (`output.contains`, `conversation.said[1]`).
    pub check: String,
    pub value: String,
    /// Where the agent sees it: `task`, `file PATH`, `tool NAME`, `row TABLE/KEY`.
    pub seen_in: String,
}

/// A case validated.
#[derive(Debug, Clone, Serialize)]
pub struct Validated {
    pub ok: bool,
    /// Why the case does not validate, one line each.
    pub problems: Vec<String>,
    /// What could not be checked, and why.
    pub notes: Vec<String>,
    /// The oracle's run, when the case has gold calls.
    pub oracle: Option<Probe>,
    pub do_nothing: Probe,
    pub empty_answer: Probe,
    /// Whether two runs of the oracle (or of the do-nothing agent, without
    /// gold calls) recorded the same events and got the same grade.
    pub deterministic: bool,
    pub leaks: Vec<Leak>,
}

/// Validate one loaded case. An error is the case's input error (a gold
/// call that fails on its world, a service that will not load).
pub fn validate(sandbox: &Sandbox, case: &Case) -> Result<Validated> {
    let mut problems = Vec::new();
    let mut notes = Vec::new();
    let Some(expect) = case.expect.as_ref() else {
        return Ok(Validated {
            ok: false,
            problems: vec!["the case has no [expect]: nothing grades a run".into()],
            notes,
            oracle: None,
            do_nothing: unrun("do-nothing"),
            empty_answer: unrun("empty-answer"),
            deterministic: true,
            leaks: Vec::new(),
        });
    };
    let oracle_script = (!expect.gold.is_empty()).then(|| oracle(expect));
    let oracle = match &oracle_script {
        Some(s) => Some(probe("oracle", scripted(sandbox, case, s)?)),
        None => {
            notes.push(
                "no [[expect.gold]] calls: the oracle was not run, so nothing shows that the \
                 case can be passed"
                    .into(),
            );
            None
        }
    };
    if !expect.judge.is_empty() {
        notes.push(
            "[[expect.judge]] checks are judged by the case's judge model for each agent".into(),
        );
    }
    let nothing = Script::default();
    let empty = Script {
        output: Some(String::new()),
        ..Script::default()
    };
    let first_nothing = scripted(sandbox, case, &nothing)?;
    let do_nothing = probe("do-nothing", first_nothing.clone());
    let empty_answer = probe("empty-answer", scripted(sandbox, case, &empty)?);
    if let Some(o) = &oracle
        && !o.passed
    {
        problems.push(format!(
            "the oracle (the gold calls) fails: {}",
            o.failed.join("; ")
        ));
    }
    for p in [&do_nothing, &empty_answer] {
        if p.passed {
            problems.push(format!(
                "the {} agent passes: the checks do not tell a run that did the task from one \
                 that did nothing",
                p.agent
            ));
        }
    }
    // Determinism: the run that does the most, twice.
    let (first, again) = match &oracle_script {
        Some(s) => (scripted(sandbox, case, s)?, scripted(sandbox, case, s)?),
        None => (first_nothing, scripted(sandbox, case, &nothing)?),
    };
    let deterministic = same_run(&first, &again);
    if !deterministic {
        problems.push("two runs of the same script recorded different events or grades".into());
    }
    let leaks = leaks(case, expect);
    for l in &leaks {
        problems.push(format!(
            "{} expects {:?}, which the agent is shown in {}",
            l.check, l.value, l.seen_in
        ));
    }
    Ok(Validated {
        ok: problems.is_empty(),
        problems,
        notes,
        oracle,
        do_nothing,
        empty_answer,
        deterministic,
        leaks,
    })
}

/// A probe that did not run (a case with nothing to grade).
fn unrun(agent: &'static str) -> Probe {
    Probe {
        agent,
        status: "not run".into(),
        passed: false,
        reward: 0.0,
        failed: Vec::new(),
    }
}

/// What a probe keeps of a run.
#[derive(Clone)]
struct Outcome {
    status: Status,
    grade: Option<crate::grade::Grade>,
    events: Vec<Value>,
}

fn probe(agent: &'static str, o: Outcome) -> Probe {
    let (passed, reward, failed) = match &o.grade {
        Some(g) => (
            g.passed,
            g.reward,
            g.failures().map(|a| a.what.clone()).collect(),
        ),
        None => (false, 0.0, Vec::new()),
    };
    Probe {
        agent,
        status: o.status.as_str().to_string(),
        passed,
        reward,
        failed,
    }
}

/// Two runs the same: their events (with the hashes that chain them) and
/// their grades.
fn same_run(a: &Outcome, b: &Outcome) -> bool {
    let grade = |o: &Outcome| o.grade.as_ref().map(canon::to_string);
    a.events == b.events && grade(a) == grade(b)
}

/// The oracle's script: the gold calls, each in its user turn (a turn
/// ended by a message meeting the turn's `said` checks), then the message
/// ending the last turn a check names, then each expected message to the
/// user, then an answer that meets the output checks.
fn oracle(expect: &Expect) -> Script {
    let wanted = |said: &[SaidCheck]| -> Vec<String> {
        said.iter()
            .filter(|s| !s.absent)
            .filter_map(|s| s.contains.clone().or_else(|| s.any_of.first().cloned()))
            .collect()
    };
    // The message ending turn `n`.
    let ending = |n: u32| {
        let said: Vec<SaidCheck> = expect
            .turn
            .iter()
            .filter(|t| t.turn == n)
            .flat_map(|t| t.said.clone())
            .collect();
        let words = wanted(&said);
        if words.is_empty() {
            format!("Done with turn {n}.")
        } else {
            words.join(" ")
        }
    };
    let mut turn = 1;
    let mut calls = Vec::new();
    for g in expect.gold.iter().map(toml::Spanned::get_ref) {
        let endings = (turn..g.turn()).map(ending).collect();
        turn = turn.max(g.turn());
        calls.push((endings, g.tool.clone(), g.args.clone()));
    }
    let last = expect.turn.iter().map(|t| t.turn).max().unwrap_or(1);
    let last_said = expect
        .turn
        .iter()
        .any(|t| t.turn == last && !t.said.is_empty());
    let mut say: Vec<String> = (turn..last).map(ending).collect();
    if last >= turn && last_said {
        say.push(ending(last));
    }
    say.extend(wanted(
        expect
            .conversation
            .as_ref()
            .map_or(&[][..], |c| &c.said[..]),
    ));
    Script {
        calls,
        say,
        output: Some(answer(expect)),
    }
}

/// An answer meeting `[expect.output]`: its `equals`, else a JSON object
/// with each checked path set (and the expected text under `answer`), else
/// the expected text (of alternatives, the first).
fn answer(expect: &Expect) -> String {
    let Some(o) = &expect.output else {
        return "done".into();
    };
    if let Some(e) = &o.equals {
        return e.clone();
    }
    let text: Vec<&str> = o
        .contains
        .iter()
        .map(String::as_str)
        .chain(o.any_of.first().map(String::as_str))
        .chain(
            o.all_of
                .iter()
                .filter_map(|w| w.texts().first())
                .map(String::as_str),
        )
        .collect();
    if o.json.is_empty() {
        return if text.is_empty() {
            "done".into()
        } else {
            text.join(" ")
        };
    }
    let mut doc = json!({});
    for j in &o.json {
        let value = j
            .equals
            .clone()
            .or_else(|| j.contains.clone())
            .or_else(|| (j.exists == Some(true)).then_some(Value::Bool(true)));
        if let (Some(v), Ok(path)) = (value, JsonPath::parse(&j.path)) {
            let _ = path.set(&mut doc, v);
        }
    }
    if !text.is_empty()
        && let Value::Object(m) = &mut doc
    {
        m.entry("answer").or_insert_with(|| json!(text.join(" ")));
    }
    canon::to_string(&doc)
}

/// Run `script` on `case` in memory, as an agent would through the tools
/// and user interfaces, and grade it.
fn scripted(sandbox: &Sandbox, case: &Case, script: &Script) -> Result<Outcome> {
    let identity = canon::sha256_hex(format!("worldline validate: {}", script.calls.len()));
    let header = run::header_of(sandbox, &identity, case);
    let mut opts = RunOptions::default();
    let begun = run::begin(sandbox, header, case, &mut opts)?;
    let mut state = RunState::outside_sandbox(begun.med);
    let mut ended = None;
    'calls: for (endings, tool, args) in &script.calls {
        for message in endings {
            if let Err(e) = user::Host::say(&mut state, message.clone()) {
                ended = Some(run::classify(&e, "")?);
                break 'calls;
            }
        }
        // A gold call of the user's own tools is made as the user's call
        // (the oracle plays the user's part of the gold too).
        let made = if case.world.user_tool(tool).is_some() {
            state
                .user_tool_call(tool, &Value::Object(args.clone()))
                .map(drop)
        } else {
            let args = canon::to_string(&Value::Object(args.clone()));
            tools::Host::call(&mut state, tool.clone(), args).map(drop)
        };
        if let Err(e) = made {
            ended = Some(run::classify(&e, "")?);
            break;
        }
    }
    if ended.is_none() {
        for message in &script.say {
            if let Err(e) = user::Host::say(&mut state, message.clone()) {
                ended = Some(run::classify(&e, "")?);
                break;
            }
        }
    }
    let ending =
        ended.unwrap_or_else(|| (Status::Completed, script.output.clone(), None, Vec::new()));
    let out: RunOutcome = run::finish(case, begun.opened, state.med, ending, 0, &opts)?;
    Ok(Outcome {
        status: out.footer.status,
        grade: out.grade,
        events: out
            .events
            .whole()
            .iter()
            .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
            .collect(),
    })
}

/// The expected answers (output and conversation checks) the agent is
/// shown verbatim: in the task, a world file, a tool's description or a row.
fn leaks(case: &Case, expect: &Expect) -> Vec<Leak> {
    let mut expected: Vec<(String, String)> = Vec::new();
    if let Some(o) = &expect.output {
        expected.extend(o.equals.iter().map(|v| ("output.equals".into(), v.clone())));
        expected.extend(
            o.contains
                .iter()
                .map(|v| ("output.contains".into(), v.clone())),
        );
        expected.extend(o.any_of.iter().map(|v| ("output.any_of".into(), v.clone())));
        expected.extend(
            o.all_of
                .iter()
                .flat_map(|w| w.texts())
                .map(|v| ("output.all_of".into(), v.clone())),
        );
        for j in &o.json {
            for v in j.equals.iter().chain(&j.contains) {
                strings(v, &mut |s| {
                    expected.push((format!("output {}", j.path), s.to_string()))
                });
            }
        }
    }
    for (i, s) in expect
        .conversation
        .iter()
        .flat_map(|c| &c.said)
        .enumerate()
        .filter(|(_, s)| !s.absent)
    {
        for v in s.contains.iter().chain(&s.any_of) {
            expected.push((format!("conversation.said[{}]", i + 1), v.clone()));
        }
    }
    expected.retain(|(_, v)| v.trim().chars().count() >= LEAK_MIN_CHARS);
    let mut shown: Vec<(String, String)> = vec![("task".into(), text_of(&case.task.value()))];
    let world = &case.world;
    for (path, data) in world.initial.files.iter() {
        if let FileData::Text(t) = data {
            shown.push((format!("file {path}"), t.clone()));
        }
    }
    for t in &world.tools {
        shown.push((format!("tool {}", t.name), t.description.clone()));
    }
    for (name, table) in &world.initial.tables {
        for (key, row) in &table.rows {
            shown.push((format!("row {name}/{key}"), text_of(row)));
        }
    }
    let mut out = Vec::new();
    for (check, value) in expected {
        if let Some((seen_in, _)) = shown.iter().find(|(_, text)| text.contains(&value)) {
            out.push(Leak {
                check,
                value,
                seen_in: seen_in.clone(),
            });
        }
    }
    out
}

/// Every string inside a JSON value.
fn strings(v: &Value, f: &mut impl FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, f)),
        Value::Object(m) => m.values().for_each(|x| strings(x, f)),
        _ => {}
    }
}

/// A value as the agent reads it: its strings joined, so an expected text
/// is found whatever JSON escaping it would get.
fn text_of(v: &Value) -> String {
    let mut out = String::new();
    strings(v, &mut |s| {
        out.push_str(s);
        out.push('\n');
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_answer_meets_equals_json_and_contains() {
        let e: Expect = toml::from_str(
            "[output]\njson = [{ path = \"cause.id\", equals = \"D-42\" }]\ncontains = \"rolled back\"",
        )
        .unwrap();
        assert_eq!(
            answer(&e),
            r#"{"answer":"rolled back","cause":{"id":"D-42"}}"#
        );
        let e: Expect = toml::from_str("[output]\nequals = \"OK\"").unwrap();
        assert_eq!(answer(&e), "OK");
        // all_of's lists of alternatives: the first of each.
        let e: Expect = toml::from_str(
            "[output]\nall_of = [\"code 4\", [\"3\", \"three\"], [\"a.com\", \"b.com\"]]",
        )
        .unwrap();
        assert_eq!(answer(&e), "code 4 3 a.com");
    }
}
