//! Judged checks (`[[expect.judge]]`): a model, through the case's
//! `[expect.judge_model]` provider and with its own seed, reads a rubric and
//! what the check shows it (the conversation, the output, the tool calls,
//! named rows of the final state) and answers a verdict with a reason.
//!
//! The judge's request and answer are recorded in the assertion (`judge`),
//! so the grade in the footer holds them: re-grading a recorded run uses
//! the recorded answer when the request is the same (no model call, the
//! same verdict), and `grade --rejudge` asks again.

use super::{Assertion, Evidence, check};
use serde_json::{Value, json};
use std::path::Path;
use worldline_case::case::expect::{Expect, JudgeCheck};
use worldline_log::log::Call;
use worldline_runtime::mediate::model::ModelService;

/// The judge's instructions: the verdict's form.
const SYSTEM: &str = "You grade an AI agent's run against a rubric. Read the rubric and the \
evidence, then answer with one JSON object and nothing else: \
{\"verdict\": \"pass\" or \"fail\", \"reason\": \"one or two sentences\"}.";

/// Where a judge's answer comes from.
pub enum Judging<'a> {
    /// Ask the provider (a run, or `grade --rejudge`): each check's call
    /// within `budget` in real time, all its attempts together (the
    /// case's `limits.timeout_ms`, as an agent's model call), each
    /// attempt within the judge's own `timeout_ms`.
    Live {
        case_dir: &'a Path,
        seed: u64,
        budget: std::time::Duration,
    },
    /// Reuse the answers recorded in this grade (`grade`, a replay).
    Recorded(&'a Value),
}

/// The request for one judged check.
fn request(j: &JudgeCheck, ev: &Evidence, seed: u64) -> Value {
    let mut evidence = String::new();
    for seen in &j.sees {
        let body = match seen.as_str() {
            "conversation" => conversation(ev),
            "output" => ev.output.unwrap_or("(no output)").to_string(),
            "calls" => calls(ev),
            other => {
                let place = other.strip_prefix("state:").unwrap_or(other);
                let value = match place.split_once('/') {
                    Some((t, k)) => json!(ev.final_state.row(t, k)),
                    None => json!(ev.final_state.tables.get(place).map(|t| &t.rows)),
                };
                worldline_case::canon::to_string(&value)
            }
        };
        evidence.push_str(&format!("## {seen}\n{body}\n\n"));
    }
    json!({
        "model": "judge",
        "seed": seed,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": format!("# Rubric\n{}\n\n# Evidence\n{evidence}", j.rubric)},
        ],
    })
}

/// The agent's messages to the user and what came back, in order.
fn conversation(ev: &Evidence) -> String {
    let lines: Vec<String> = ev
        .events
        .iter()
        .filter_map(|e| match e.typed() {
            Call::UserSay { request, response } => {
                let reply = response
                    .reply
                    .unwrap_or_else(|| worldline_case::canon::to_string(&e.response));
                Some(format!("agent: {}\nuser: {reply}", request.message))
            }
            _ => None,
        })
        .collect();
    if lines.is_empty() {
        "(no conversation)".into()
    } else {
        lines.join("\n")
    }
}

/// The tool calls and their answers, one a line.
fn calls(ev: &Evidence) -> String {
    ev.events
        .iter()
        .filter_map(|e| match e.typed() {
            Call::ToolsCall { request, response } => {
                let answer = match (response.ok, response.error) {
                    (Some(ok), _) => ok,
                    (None, Some(err)) => json!(err),
                    (None, None) => Value::Null,
                };
                Some(format!(
                    "{} {} -> {}",
                    request.name,
                    worldline_case::canon::to_string(request.args()),
                    worldline_case::canon::to_string(&answer)
                ))
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The verdict and reason in a judge's answer (`{"ok": completion}`).
fn verdict(response: &Value) -> Result<(bool, String), String> {
    if let Some(e) = response.get("error") {
        return Err(format!(
            "the judge's provider failed: {}",
            worldline_case::canon::to_string(e)
        ));
    }
    let content = response["ok"]["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or("");
    let parsed: Value = serde_json::from_str(content.trim())
        .map_err(|_| format!("the judge's answer is not a JSON verdict: {content:?}"))?;
    let reason = parsed["reason"].as_str().unwrap_or("").to_string();
    match parsed["verdict"].as_str() {
        Some("pass") => Ok((true, reason)),
        Some("fail") => Ok((false, reason)),
        _ => Err(format!(
            "the judge's verdict is not \"pass\" or \"fail\": {content:?}"
        )),
    }
}

/// The recorded judge answer of `grade` for this request, if any: of the
/// recorded judges that asked the same, the first not `taken` yet (which
/// it then is). Two checks of one rubric and evidence send the same
/// request, and each had its own answer: both were given the first's.
fn recorded_answer<'a>(
    grade: &'a Value,
    request: &Value,
    taken: &mut Vec<usize>,
) -> Option<&'a Value> {
    let (at, judge) = grade["assertions"]
        .as_array()?
        .iter()
        .filter_map(|a| a.get("judge"))
        .enumerate()
        .find(|(at, j)| j["request"] == *request && !taken.contains(at))?;
    taken.push(at);
    Some(&judge["response"])
}

/// The assertions of every judged check.
pub(crate) fn checks(expect: &Expect, ev: &Evidence, judging: &Judging) -> Vec<Assertion> {
    let Some(config) = &expect.judge_model else {
        return Vec::new();
    };
    let seed = match judging {
        Judging::Live { seed, .. } => expect.judge_seed.unwrap_or(*seed),
        Judging::Recorded(_) => expect.judge_seed.unwrap_or(0),
    };
    let mut live = match judging {
        Judging::Live {
            case_dir, budget, ..
        } => Some(ModelService::new(config, seed, *budget, case_dir)),
        Judging::Recorded(_) => None,
    };
    // The recorded answers given so far, by their place among the judges.
    let mut taken = Vec::new();
    expect
        .judge
        .iter()
        .map(|j| {
            let what = format!("judge: {}", j.name.as_deref().unwrap_or(&j.rubric));
            let (request, response) = match (&mut live, judging) {
                (Some(service), _) => {
                    let request = request(j, ev, seed);
                    let answer = service.serve(&request, 0, None);
                    (request, answer.response)
                }
                (None, Judging::Recorded(grade)) => {
                    // The recorded request was made with the recorded seed.
                    let seed = recorded_seed(grade).unwrap_or(seed);
                    let request = request(j, ev, seed);
                    match recorded_answer(grade, &request, &mut taken) {
                        Some(r) => (request, r.clone()),
                        None => {
                            return check(
                                what,
                                json!("pass"),
                                json!("not judged: no recorded answer for this request (the rubric or the evidence changed); run `grade --rejudge`"),
                                false,
                            );
                        }
                    }
                }
                (None, Judging::Live { .. }) => unreachable!("a live judge has a service"),
            };
            let mut a = match verdict(&response) {
                Ok((passed, reason)) => check(
                    what,
                    json!("pass"),
                    json!({"verdict": if passed { "pass" } else { "fail" }, "reason": reason}),
                    passed,
                ),
                Err(why) => check(what, json!("pass"), json!(why), false),
            };
            a.judge = Some(json!({"request": request, "response": response}));
            a
        })
        .collect()
}

/// The first judged check of `grade` the judge gave no verdict (its
/// provider failed or timed out, or its answer was no verdict): its name
/// and why.
pub(crate) fn unanswered(grade: &super::Grade) -> Option<(&str, &str)> {
    (grade.assertions.iter())
        .filter(|a| a.judge.is_some())
        .find_map(|a| Some((a.what.as_str(), a.actual.as_str()?)))
}

/// The seed a recorded grade's judge requests carried.
fn recorded_seed(grade: &Value) -> Option<u64> {
    grade["assertions"]
        .as_array()?
        .iter()
        .find_map(|a| a.get("judge")?["request"]["seed"].as_u64())
}
