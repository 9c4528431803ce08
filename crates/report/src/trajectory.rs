//! A run as one line of training data (`export --format trajectories`,
//! JSON Lines): the case, its seed and task, the model messages in the
//! OpenAI chat format with tool calls and tool results, the verdict and
//! every check, and a reward (the grade's: 1/0, or the weighted score a
//! case declares with `[expect] reward = "weighted"`).
//!
//! The messages are the conversation the agent last sent its model, plus
//! the model's answer to it (an agent keeps its own history, so that is
//! the whole trajectory as the model saw it). A run without model calls
//! (a scripted agent) gets its tool calls and results written as that
//! conversation: each call an assistant message with one `tool_calls`
//! entry, each answer a `tool` message.
//!
//! Where the endpoint returned token ids (`[model] token_ids`, decision
//! 0350), `tokens` lists each model call's prompt and completion ids,
//! log-probabilities and tokenizer, whole, in call order.

use serde::Serialize;
use serde_json::{Value, json};
use worldline_log::log::bundle::Bundle;
use worldline_log::log::{Call, Event};

/// One line of the trajectories file.
#[derive(Serialize)]
pub struct Trajectory {
    pub agent_sha256: String,
    pub case: String,
    pub case_hash: String,
    /// Every assertion of the recorded grade (empty when ungraded).
    pub checks: Vec<Value>,
    pub messages: Vec<Value>,
    pub reward: Option<f64>,
    pub run_id: String,
    pub seed: u64,
    pub status: Option<&'static str>,
    /// The task the agent was given (from the recorded case), if known.
    pub task: Value,
    /// Each model call's token ids, where recorded (left out when none were).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<Value>,
    /// `passed` / `failed`, or none when the case has no `[expect]`.
    pub verdict: Option<&'static str>,
    pub world: String,
}

impl Trajectory {
    /// The trajectory of a recorded run; `task` from its case file.
    pub fn of(run_id: &str, b: &Bundle, task: Value) -> Self {
        let footer = b.footer.as_ref();
        let grade = footer.and_then(|f| f.grade.as_ref());
        let verdict = footer.and_then(|f| f.verdict());
        Trajectory {
            agent_sha256: b.header.agent_sha256.clone(),
            case: b.header.case.clone(),
            case_hash: b.header.case_hash.clone(),
            checks: grade
                .and_then(|g| g["assertions"].as_array().cloned())
                .unwrap_or_default(),
            messages: messages(&b.events),
            reward: grade.map(|g| {
                g["reward"]
                    .as_f64()
                    .unwrap_or(if verdict == Some("passed") { 1.0 } else { 0.0 })
            }),
            run_id: run_id.to_string(),
            seed: b.header.seed,
            status: footer.map(|f| f.status.as_str()),
            task,
            tokens: tokens(&b.events),
            verdict,
            world: b.header.world.clone(),
        }
    }
}

/// Each model call's recorded token ids, whole, in call order.
pub fn tokens(events: &[Event]) -> Vec<Value> {
    worldline_log::log::tokens::read(events)
        .into_iter()
        .map(|(seq, t)| {
            json!({
                "seq": seq,
                "prompt_token_ids": t.prompt,
                "completion_token_ids": t.completion,
                "logprobs": t.logprobs,
                "tokenizer": t.tokenizer,
                "chat_template": t.chat_template,
            })
        })
        .collect()
}

/// The chat messages of a run (see the module comment).
pub fn messages(events: &[Event]) -> Vec<Value> {
    let last_model = events.iter().rev().find_map(|e| match e.typed() {
        Call::ModelComplete { request, response } => {
            let mut out = request.messages()?.clone();
            out.extend(response.message().cloned());
            Some(out)
        }
        _ => None,
    });
    if let Some(out) = last_model {
        return out;
    }
    let mut out = Vec::new();
    for e in events {
        let Call::ToolsCall { request, response } = e.typed() else {
            continue;
        };
        let id = format!("call_{}", e.seq);
        out.push(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": id,
                "type": "function",
                "function": {
                    "name": request.name,
                    "arguments": worldline_case::canon::to_string(request.args()),
                },
            }],
        }));
        let answer = match (response.error, response.ok) {
            (Some(err), _) => json!({"error": err}),
            (None, ok) => ok.unwrap_or(Value::Null),
        };
        out.push(json!({
            "role": "tool",
            "tool_call_id": id,
            "content": worldline_case::canon::to_string(&answer),
        }));
    }
    out
}
