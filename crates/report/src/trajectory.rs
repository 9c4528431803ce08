//! A run as one line of training data (`export --format trajectories`,
//! JSON Lines): the case, its seed and task, the model messages in the
//! OpenAI chat format with tool calls and tool results, the verdict and
//! every check, and a reward (the grade's: 1/0, or the weighted score a
//! case declares with `[expect] reward = "weighted"`).
//!
//! The messages are the conversation the agent last sent its model, plus
//! the model's answer to it (an agent keeps its own history, so that is
//! the whole trajectory as the model saw it), plus the results of the
//! calls that answer asked for, when the agent made them after it (a run
//! that ended, or was killed, before sending them back). A run without model calls
//! (a scripted agent) gets its tool calls and results written as that
//! conversation: each call an assistant message with one `tool_calls`
//! entry, each answer a `tool` message; and its turns with a simulated
//! user, each what the agent said as an assistant message and the user's
//! reply (or parting words) as a `user` message.
//!
//! Every approval the run asked for (the agent's `approval.request`, or
//! the host's before a tool whose permission is `ask`) is in `approvals`,
//! in event order, on every agent path: what was asked, by whom, and the
//! decision with its reason ([`approval`]). A run without model calls also
//! has each approval its agent asked as an assistant message calling
//! `approval_request` (`kind`, `details`) and the decision as its `tool`
//! message, between the turns it came between (a model-driven agent's
//! messages are its model's, which hold what the agent told it).
//!
//! Where the endpoint returned token ids (`[model] token_ids`, decision
//! 0350), `tokens` lists each model call's prompt and completion ids,
//! log-probabilities and tokenizer, whole, in call order; a redacted
//! copy withholds them (decision 0428) and says `tokens_withheld: true`.
//!
//! A run that is a member of a group (`test --group`, `fork --samples`)
//! has `group`: its id, member index and size, and over the group's
//! members in the export, how many passed and pass@k and pass^k
//! ([`groups`]).
//!
//! Why the messages are the last model request plus its answer, and the reward
//! is the grade's (was decision 0148): RL pipelines want trajectories and
//! rewards; rebuilding messages from every tool event when model calls exist
//! would duplicate what the agent already sent its model (runs without model
//! calls get their tool calls as assistant/tool messages), and computing the
//! reward at export would let a changed case alter an old run's reward, where
//! the grade is the record. pass@k (unbiased, Chen et al. 2021) sits beside
//! pass^k because Inspect and HumanEval report it.

use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use worldline_engine::fuzz::stats::{pass_at_ks, pass_hat_ks};
use worldline_engine::fuzz::summary::PassK;
use worldline_log::log::bundle::{Footer, Header, HeldBundle};
use worldline_log::log::payload::{ApprovalAsk, Decision};
use worldline_log::log::{Call, Event, Held, asked, delivery};

/// One line of the trajectories file.
#[derive(Serialize)]
pub struct Trajectory {
    pub agent_sha256: String,
    /// Every approval asked, in event order ([`approval`]; left out when
    /// none was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<Value>,
    /// A fork (of a served episode by a `reset` with `fork_of`, by `fork`,
    /// a `fork --samples` branch): its parent run and the event it went
    /// live at, the events before it the parent's, sent again; and for a
    /// run without model calls, how many of the first `messages` are made
    /// of those events (`replayed_messages`), not the agent's or the
    /// client's own. Left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<Value>,
    pub case: String,
    pub case_hash: String,
    /// Every assertion of the recorded grade (empty when ungraded).
    pub checks: Vec<Value>,
    /// A served episode's `episode_id`, as its client's `reset` gave it
    /// (left out when it gave none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub episode_id: Option<String>,
    /// A member of a group: see [`groups`] (left out otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<Value>,
    pub messages: Vec<Value>,
    /// The model's seed when it is not the case seed's (a group member's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_seed: Option<u64>,
    pub reward: Option<f64>,
    pub run_id: String,
    pub seed: u64,
    /// How the run ended; `incomplete` for one killed before its footer.
    pub status: &'static str,
    /// The task the agent was given (from the recorded case), if known.
    pub task: Value,
    /// Each model call's token ids, where recorded (left out when none were).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<Value>,
    /// With `tokens`, the events of the answered model calls that came
    /// back without ids (left out when none did): `tokens` skips them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tokens_missing: Vec<u64>,
    /// A redacted copy whose model calls' token ids and log-probabilities
    /// were withheld (decision 0428): `true`, `tokens` left out (left out
    /// otherwise).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tokens_withheld: bool,
    /// Why a served episode ended without its client's `end` (its
    /// footer's, decision 0429): left out otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
    /// `passed` / `failed`, or none when the case has no `[expect]`.
    pub verdict: Option<&'static str>,
    pub world: String,
}

impl Trajectory {
    /// The trajectory of a recorded run, read held (decision 0380: the
    /// last request put back, none other); `task` from its case file.
    pub fn of(run_id: &str, b: &mut HeldBundle, task: Value) -> Self {
        let footer = b.footer.as_ref();
        let grade = footer.and_then(|f| f.grade.as_ref());
        let verdict = footer.and_then(|f| f.verdict());
        // The answers the agent went on without are no turn of its.
        let gone = delivery::undelivered(b.events.as_held(), b.header.rules.unwrap_or(0));
        let parent = b.header.parent.as_ref().filter(|p| !p.resumed);
        let (messages, replayed) = messages(&mut b.events, &gone, parent.map(|p| p.event));
        let branch = parent.map(|p| {
            let mut branch = json!({"parent": p.run, "event": p.event});
            if let Some(n) = replayed {
                branch["replayed_messages"] = json!(n);
            }
            branch
        });
        Trajectory {
            approvals: approvals(b.events.as_held()),
            branch,
            group: None,
            episode_id: b.header.episode_id.clone(),
            model_seed: b.header.model_seed,
            agent_sha256: b.header.agent_sha256.clone(),
            case: b.header.case.clone(),
            case_hash: b.header.case_hash.clone(),
            checks: grade
                .and_then(|g| g["assertions"].as_array().cloned())
                .unwrap_or_default(),
            messages,
            reward: footer.and_then(Footer::reward),
            run_id: run_id.to_string(),
            seed: b.header.seed,
            status: footer.map_or("incomplete", |f| f.status.as_str()),
            task,
            tokens: tokens(b.events.as_held(), &gone),
            tokens_missing: tokens_missing(b.events.as_held(), &gone),
            tokens_withheld: (b.events.as_held().iter()).any(crate::atif::tokens_withheld),
            truncated: footer.and_then(|f| f.truncated.clone()),
            verdict,
            world: b.header.world.clone(),
        }
    }
}

/// The approvals of a run's events, in order ([`approval`]).
fn approvals(events: &[Event]) -> Vec<Value> {
    (events.iter())
        .filter_map(|e| match e.typed() {
            Call::ApprovalRequest { request, response } => Some(approval(e, &request, &response)),
            _ => None,
        })
        .collect()
}

/// One approval as the exports give it: its event (`seq`, `vtime_ns`),
/// what was asked (`kind`, `details`), who asked (`asked_by`: `agent`, or
/// `host` before a tool whose permission is `ask`), the `decision`
/// (`approved` / `denied`), the `reason` of a denial, and the `approver`
/// (the `[[approve]]` rule that decided, when recorded).
pub fn approval(e: &Event, request: &ApprovalAsk, response: &Decision) -> Value {
    let mut a = json!({
        "seq": e.seq,
        "vtime_ns": e.vtime_ns,
        "kind": request.kind,
        "details": request.details,
        "asked_by": if request.by.is_some() { "host" } else { "agent" },
        "decision": if response.denied.is_some() { "denied" } else { "approved" },
    });
    if let Some(reason) = &response.denied {
        a["reason"] = reason.clone();
    }
    if let Some(approver) = response.detail.get("approver") {
        a["approver"] = approver.clone();
    }
    a
}

/// An approval's decision as the agent got it: `{"approved": true}` or
/// `{"denied": reason}`.
pub fn decision(response: &Decision) -> Value {
    match &response.denied {
        Some(reason) => json!({"denied": reason}),
        None => json!({"approved": true}),
    }
}

/// The function an approval the agent asked is written as calling, in
/// the chat messages and ATIF steps built from events (`approval.request`
/// in the WIT; a function's name has no dot).
pub const APPROVAL_FUNCTION: &str = "approval_request";

/// What counting groups needs of one run: its id, header and verdict.
pub struct Member {
    pub run: String,
    pub header: Header,
    /// Its footer's verdict is `passed`.
    pub passed: bool,
}

/// The `group` object of each run, in order: none for a run that is not a
/// group member. A group is the runs of one group id among those given
/// (the id is its first member's run id); `members` and `passes` count
/// them, and `pass_at_k` (Chen et al.'s unbiased 1 − C(n−c, k)/C(n, k))
/// and `pass_hat_k` (τ-bench's C(c, k)/C(n, k)) are over them, at the k
/// `reported_ks` lists (every k up to 16, powers of two, members). A
/// branch (`fork --samples`) also has `branch`: the parent run and the
/// event its members went live at.
pub fn groups(runs: &[Member]) -> Vec<Option<Value>> {
    let id_of = |m: &Member| {
        m.header
            .group
            .as_ref()
            .map(|g| g.id.clone().unwrap_or_else(|| m.run.clone()))
    };
    // Runs and passes per group, in the groups' id order.
    let mut tally: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for m in runs {
        if let Some(id) = id_of(m) {
            let t = tally.entry(id).or_default();
            t.0 += 1;
            t.1 += u64::from(m.passed);
        }
    }
    // Each group's curves, once for all its members.
    let curves: BTreeMap<&String, (Value, Value)> = tally
        .iter()
        .map(|(id, &(n, c))| {
            let at = PassK::curve(n, |ks| pass_at_ks(c, n, ks));
            let hat = PassK::curve(n, |ks| pass_hat_ks(&[c], n, ks));
            (id, (json!(at), json!(hat)))
        })
        .collect();
    runs.iter()
        .map(|m| {
            let g = m.header.group.as_ref()?;
            let id = id_of(m)?;
            let (n, c) = tally[&id];
            let (at, hat) = &curves[&id];
            let mut group = json!({
                "id": id,
                "member": g.member,
                "size": g.size,
                "members": n,
                "passes": c,
                "pass_at_k": at,
                "pass_hat_k": hat,
            });
            if let Some(p) = &m.header.parent {
                group["branch"] = json!({"parent": p.run, "event": p.event});
                // A branch's own model seed is its fork point's edit.
                for e in &p.edits {
                    if let worldline_log::log::bundle::Edit::Reseed { model_seed } = e {
                        group["model_seed"] = json!(model_seed);
                    }
                }
            }
            Some(group)
        })
        .collect()
}

/// Each model call's recorded token ids, whole, in call order, but those
/// of the answers the agent went on without (`gone`).
pub fn tokens(events: &[Event], gone: &BTreeMap<u64, u64>) -> Vec<Value> {
    worldline_log::log::tokens::read(events)
        .into_iter()
        .filter(|(seq, _)| !gone.contains_key(seq))
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

/// The answered model calls without token ids in a run some of whose
/// calls have them (none when no call has any: `tokens` is left out),
/// but the answers the agent went on without (`gone`).
fn tokens_missing(events: &[Event], gone: &BTreeMap<u64, u64>) -> Vec<u64> {
    let model = worldline_log::log::Kind::ModelComplete.name();
    let answered = || {
        events.iter().filter(|e| {
            e.call == model && e.response.get("ok").is_some() && !gone.contains_key(&e.seq)
        })
    };
    if !answered().any(|e| e.response["model_call"].get("tokens").is_some()) {
        return Vec::new();
    }
    answered()
        .filter(|e| e.response["model_call"].get("tokens").is_none())
        .map(|e| e.seq)
        .collect()
}

/// The results of the calls the last model answer asked for that the
/// agent made after it (the run ended, or was killed, before it sent them
/// to its model), each a `tool` message to the call of its name and
/// arguments, else the first of its name.
fn answers_after(held: &Held, seq: u64, mut pending: Vec<asked::Asked>) -> Vec<Value> {
    let mut out = Vec::new();
    for e in held.as_held().iter().filter(|e| e.seq > seq) {
        let Call::ToolsCall { request, response } = e.typed() else {
            continue;
        };
        if let Some(a) = asked::take(&mut pending, &request.name, request.args()) {
            out.push(tool_message(&a.id, response));
        }
    }
    out
}

/// The assistant's message calling function `name` with `args` (their
/// canonical JSON text), as call `id`.
fn assistant_call(id: &str, name: &str, args: &Value) -> Value {
    json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": worldline_case::canon::to_string(args)},
        }],
    })
}

/// A tool's answer as the `tool` message to the call `id`.
fn tool_message(id: &str, response: worldline_log::log::payload::Answer) -> Value {
    let answer = match (response.error, response.ok) {
        (Some(err), _) => json!({"error": err}),
        (None, ok) => ok.unwrap_or(Value::Null),
    };
    json!({
        "role": "tool",
        "tool_call_id": id,
        "content": worldline_case::canon::to_string(&answer),
    })
}

/// The chat messages of a run (see the module comment): the last model
/// call's request put back whole, its answer, and the results of the
/// calls that answer asked for, when the agent made them after it. An
/// answer the agent went on without (`gone`) is none of them: the last
/// model call is the last the agent got an answer to. With them, for a
/// run without model calls forked at event `at`, how many of the first
/// are made of the events before it (the parent's).
fn messages(
    held: &mut Held,
    gone: &BTreeMap<u64, u64>,
    at: Option<u64>,
) -> (Vec<Value>, Option<usize>) {
    let last_model = held.as_held().iter().rev().find_map(|e| match e.typed() {
        Call::ModelComplete { .. } if gone.contains_key(&e.seq) => None,
        Call::ModelComplete { request, response } => {
            request.messages()?;
            Some((e.seq, response.message().cloned()))
        }
        _ => None,
    });
    if let Some((seq, answer)) = last_model {
        let request = held.request(seq).expect("a held model call");
        let mut out = request["request"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let asked = answer.as_ref().map(asked::asked).unwrap_or_default();
        out.extend(answer);
        out.extend(answers_after(held, seq, asked));
        return (out, None);
    }
    let mut out = Vec::new();
    let mut replayed = None;
    for e in held.as_held() {
        if replayed.is_none() && at.is_some_and(|at| e.seq >= at) {
            replayed = Some(out.len());
        }
        let (request, response) = match e.typed() {
            Call::ToolsCall { request, response } => (request, response),
            // An approval the agent asked: a call of its own, answered
            // with the decision (one the host asked before a tool is in
            // `approvals`, and the tool's answer says a denial).
            Call::ApprovalRequest { request, response } if request.by.is_none() => {
                let id = format!("call_{}", e.seq);
                let args = json!({"kind": request.kind, "details": request.details});
                out.push(assistant_call(&id, APPROVAL_FUNCTION, &args));
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": id,
                    "content": worldline_case::canon::to_string(&decision(&response)),
                }));
                continue;
            }
            Call::UserSay { request, response } => {
                out.push(json!({"role": "assistant", "content": request.message}));
                let user = match (response.reply, response.ended) {
                    (Some(reply), _) => Some(Value::String(reply)),
                    (None, Some(end)) => Some(end.reason().clone()).filter(Value::is_string),
                    (None, None) => None,
                };
                out.extend(user.map(|u| json!({"role": "user", "content": u})));
                continue;
            }
            _ => continue,
        };
        let id = format!("call_{}", e.seq);
        out.push(assistant_call(&id, &request.name, request.args()));
        out.push(tool_message(&id, response));
    }
    let replayed = at.map(|_| replayed.unwrap_or(out.len()));
    (out, replayed)
}
