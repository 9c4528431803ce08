//! A run as an ATIF trajectory (`export --format atif`): Harbor's Agent
//! Trajectory Interchange Format, v1.8 (decision 0330). One document per
//! run, read from its events in order, whatever path the agent took:
//!
//! - the conversation's opening (system and user messages of the first
//!   model call, or else the case's task) as `system` and `user` steps;
//! - each model call an `agent` step (but an answer the agent went on
//!   without, `log/delivery.rs`): its message, reasoning, tool calls,
//!   token counts and, where the endpoint returned them, prompt and
//!   completion token ids and log-probabilities (recorded with the call,
//!   decision 0350, its tokenizer and chat template in the step's
//!   `extra`);
//! - each tool call the result of the model step that asked for it (by
//!   name, in order), or else an `agent` step of its own with
//!   `llm_call_count: 0` (a scripted agent, an MCP client); a call the
//!   agent ran itself (a function tool of its own, which the world never
//!   sees) has the result the next model request carries;
//! - each turn of the simulated user a `user` step;
//! - each approval: one the agent asked an `agent` step of its own
//!   (`llm_call_count: 0`) calling `approval_request` with the `kind` and
//!   `details`, the decision its observation; one the host asked before a
//!   tool whose permission is `ask` a `system` step (an infrastructure
//!   event) saying what was asked and decided, the decision its
//!   observation; either with the approval in `extra.approval`
//!   ([`crate::trajectory::approval`]), and neither ending what the model
//!   step before it still waits for (the tool call a host's approval
//!   precedes is that step's result);
//! - the verdict, reward and checks in the document's `extra`; the judged
//!   checks' calls counted in `final_metrics.extra.judge`.
//!
//! A redacted copy withholds every model call's token ids and
//! log-probabilities (decision 0428): its agent steps have none, and
//! say `tokens_withheld: true` in their `extra`.

use serde_json::{Map, Value, json};
use worldline_log::log::bundle::HeldBundle;
use worldline_log::log::{Call, Event, Held, asked, delivery};
use worldline_log::redact::withheld;
use worldline_protocol::openai_responses::text_of;

/// The ATIF version this writes.
pub const SCHEMA_VERSION: &str = "ATIF-v1.8";

/// A tool as an OpenAI function definition, as `agent.tool_definitions`
/// lists it.
pub fn tool_definition(name: &str, description: &str, params: &Value) -> Value {
    json!({"type": "function", "function": {
        "name": name, "description": description, "parameters": params,
    }})
}

/// The ATIF document of a recorded run, read held (decision 0380: each
/// event as a summary reads it, `Held::shown`); `task` from its case file.
/// `agent.tool_definitions` are the tools the agent listed, else
/// `world_tools` of the run's world hash (the world's tools, as a listing
/// would have given them).
pub fn document(
    run_id: &str,
    b: &mut HeldBundle,
    task: &Value,
    world_tools: impl FnOnce(&str) -> Vec<Value>,
) -> Value {
    let mut steps = Steps {
        tokens: worldline_log::log::tokens::read(b.events.as_held()),
        ..Steps::default()
    };
    opening(&mut steps, &mut b.events, task);
    // The answers the agent went on without are no step of its.
    let gone = delivery::undelivered(b.events.as_held(), b.header.rules.unwrap_or(0));
    let mut model_name: Option<String> = None;
    let mut tools = Vec::new();
    for seq in 0..b.events.len() as u64 {
        let Some(e) = b.events.shown(seq) else { break };
        let e = &*e;
        match e.typed() {
            Call::ToolsSpecs { response, .. } if tools.is_empty() => {
                tools = (response.iter())
                    .map(|s| tool_definition(&s.name, &s.description, &s.params))
                    .collect();
            }
            Call::ModelComplete { .. } if gone.contains_key(&e.seq) => {}
            Call::ModelComplete { request, response } => {
                let name = response.model().or(request.model()).map(str::to_string);
                model_name = model_name.or(name.clone());
                steps.ran_itself(e, request.messages());
                steps.model(e, name, &request.provider, &response);
            }
            Call::ToolsCall { request, response } => {
                let answer = match (response.error, response.ok) {
                    (Some(err), _) => json!({"error": err}),
                    (None, ok) => ok.unwrap_or(Value::Null),
                };
                steps.tool(e, &request.name, request.args(), &answer);
            }
            Call::ApprovalRequest { request, response } => {
                steps.approval(e, &request, &response);
            }
            Call::UserSay { request, response } => {
                let mut extra =
                    json!({"seq": e.seq, "vtime_ns": e.vtime_ns, "agent_said": request.message});
                if let Some(ended) = &response.ended {
                    extra["ended"] = serde_json::to_value(ended).unwrap_or(Value::Null);
                }
                // The user's parting words when it ended without a reply,
                // as the trajectories format writes them.
                let parting = response.ended.as_ref().map(|end| end.reason().clone());
                let message = match (response.reply, parting) {
                    (Some(reply), _) => reply,
                    (None, Some(Value::String(words))) => words,
                    (None, _) => String::new(),
                };
                steps.push(json!({"source": "user", "message": message, "extra": extra}));
            }
            _ => {}
        }
    }
    let footer = b.footer.as_ref();
    let grade = footer.and_then(|f| f.grade.as_ref());
    let verdict = footer.and_then(|f| f.verdict());
    let reward = footer.and_then(|f| f.reward());
    let mut agent = json!({
        "name": format!("worldline agent {}", short(&b.header.agent_sha256)),
        "version": b.header.agent_sha256,
        "extra": {"harness_version": b.header.harness_version, "isolation": b.header.isolation},
    });
    if let Some(m) = model_name {
        agent["model_name"] = m.into();
    }
    if tools.is_empty() {
        tools = world_tools(&b.header.world_hash);
    }
    if !tools.is_empty() {
        agent["tool_definitions"] = tools.into();
    }
    // A fork's steps made of the events before its fork point are its
    // parent's, sent again: each says so (`extra.replayed`), and the
    // document names the parent and the point (they read as the
    // client's own steps).
    let parent = b.header.parent.as_ref().filter(|p| !p.resumed);
    let mut replayed = 0;
    if let Some(p) = parent {
        for step in &mut steps.list {
            if step["extra"]["seq"]
                .as_u64()
                .is_some_and(|seq| seq < p.event)
            {
                step["extra"]["replayed"] = true.into();
                replayed += 1;
            }
        }
    }
    let total = steps.list.len();
    let mut doc = json!({
        "schema_version": SCHEMA_VERSION,
        "session_id": run_id,
        "trajectory_id": run_id,
        "agent": agent,
        "steps": steps.list,
        "final_metrics": {
            "total_prompt_tokens": steps.prompt_tokens,
            "total_completion_tokens": steps.completion_tokens,
            "total_steps": total,
            "extra": {"reward": reward, "verdict": verdict},
        },
        "extra": {
            "case": b.header.case,
            "case_hash": b.header.case_hash,
            "checks": grade.and_then(|g| g["assertions"].as_array().cloned()).unwrap_or_default(),
            "reward": reward,
            "run_id": run_id,
            "seed": b.header.seed,
            "model_seed": b.header.model_seed,
            "status": footer.map_or("incomplete", |f| f.status.as_str()),
            "task": task,
            "verdict": verdict,
            "world": b.header.world,
        },
    });
    if let Some(p) = parent {
        doc["extra"]["branch"] =
            json!({"parent": p.run, "event": p.event, "replayed_steps": replayed});
    }
    // The judged checks' calls, apart from the agent's steps' tokens.
    let judges = worldline_log::log::usage::ModelTotals::of_judges_in(grade);
    if judges.calls > 0 {
        doc["final_metrics"]["extra"]["judge"] =
            serde_json::to_value(&judges).unwrap_or(Value::Null);
    }
    // A served episode's id, as its client's `reset` gave it.
    if let Some(id) = &b.header.episode_id {
        doc["extra"]["episode_id"] = id.clone().into();
    }
    // A served episode its client left without `end` (decision 0429).
    if let Some(why) = footer.and_then(|f| f.truncated.as_ref()) {
        doc["extra"]["truncated"] = why.clone().into();
    }
    if let Some(n) = token_notes(&doc) {
        doc["notes"] = n.into();
    }
    doc
}

/// The steps written so far, with what tool calls of the latest model
/// step still wait for their results.
#[derive(Default)]
struct Steps {
    list: Vec<Value>,
    /// The latest model step's tool calls not yet answered.
    pending: Vec<asked::Asked>,
    /// Index in `list` of the step `pending` belongs to.
    asking: Option<usize>,
    prompt_tokens: u64,
    completion_tokens: u64,
    /// The token ids recorded with model calls, whole, by seq.
    tokens: std::collections::BTreeMap<u64, worldline_log::log::tokens::Tokens>,
}

impl Steps {
    /// Append a step, numbered in turn.
    fn push(&mut self, mut step: Value) {
        step["step_id"] = (self.list.len() + 1).into();
        self.list.push(step);
        if step_source(self.list.last()) != Some("agent") {
            self.pending.clear();
            self.asking = None;
        }
    }

    /// Append a step, numbered in turn, leaving what the latest model
    /// step waits for as it is (an approval comes between a model's call
    /// and the tool call it asked for).
    fn push_aside(&mut self, mut step: Value) {
        step["step_id"] = (self.list.len() + 1).into();
        self.list.push(step);
    }

    /// An approval: the agent's a step calling `approval_request`, the
    /// host's (before an `ask` tool) a `system` step; the decision the
    /// observation of either.
    fn approval(
        &mut self,
        e: &Event,
        request: &worldline_log::log::payload::ApprovalAsk,
        response: &worldline_log::log::payload::Decision,
    ) {
        use crate::trajectory::{APPROVAL_FUNCTION, approval, decision};
        let extra = json!({"seq": e.seq, "vtime_ns": e.vtime_ns, "approval": approval(e, request, response)});
        let content = worldline_case::canon::to_string(&decision(response));
        let result = |id: Option<&str>| {
            let mut r =
                json!({"content": content, "extra": {"seq": e.seq, "vtime_ns": e.vtime_ns}});
            if let Some(id) = id {
                r["source_call_id"] = id.into();
            }
            r
        };
        if request.by.is_none() {
            let id = format!("call_{}", e.seq);
            let call = json!({
                "tool_call_id": id,
                "function_name": APPROVAL_FUNCTION,
                "arguments": {"kind": request.kind, "details": request.details},
            });
            self.push_aside(json!({
                "source": "agent",
                "message": "",
                "llm_call_count": 0,
                "tool_calls": [call],
                "observation": {"results": [result(Some(&id))]},
                "extra": extra,
            }));
            return;
        }
        let said = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => worldline_case::canon::to_string(other),
        };
        let verdict = match &response.denied {
            Some(reason) => format!("denied: {}", said(reason)),
            None => "approved".to_string(),
        };
        let message = format!(
            "the host asked for approval ({} {}): {verdict}",
            said(&request.kind),
            worldline_case::canon::to_string(&request.details)
        );
        self.push_aside(json!({
            "source": "system",
            "message": message,
            "observation": {"results": [result(None)]},
            "extra": extra,
        }));
    }

    /// A model call: an agent step.
    fn model(
        &mut self,
        e: &Event,
        name: Option<String>,
        provider: &str,
        response: &worldline_log::log::payload::ModelAnswer,
    ) {
        let message = response.message().cloned().unwrap_or(Value::Null);
        let mut step = json!({
            "source": "agent",
            "message": text_of(&message["content"]),
            "llm_call_count": 1,
            "extra": {"seq": e.seq, "vtime_ns": e.vtime_ns, "provider": provider},
        });
        if let Some(n) = name {
            step["model_name"] = n.into();
        }
        if let Some(r) = message["reasoning_content"]
            .as_str()
            .or(message["reasoning"].as_str())
        {
            step["reasoning_content"] = r.into();
        }
        if let Some(err) = &response.error {
            step["extra"]["error"] = serde_json::to_value(err).unwrap_or(Value::Null);
        }
        // A redacted copy's call whose ids and log-probabilities were
        // withheld (decision 0428) says so.
        if tokens_withheld(e) {
            step["extra"][withheld::FIELD] = true.into();
        }
        let calls: Vec<Value> = message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| {
                let id = c["id"]
                    .as_str()
                    .map_or_else(|| format!("call_{}_{i}", e.seq), str::to_string);
                let name = c["function"]["name"].as_str().unwrap_or("").to_string();
                let (arguments, text) = arguments(&c["function"]["arguments"]);
                let mut call =
                    json!({"tool_call_id": id, "function_name": name, "arguments": arguments});
                if let Some(t) = text {
                    call["extra"] = json!({"arguments_text": t});
                }
                call
            })
            .collect();
        // What the tool calls that follow answer (an asked call without an
        // id is named as above).
        let pending: Vec<asked::Asked> = (calls.iter())
            .map(|c| asked::Asked {
                id: c["tool_call_id"].as_str().unwrap_or("").to_string(),
                name: c["function_name"].as_str().unwrap_or("").to_string(),
                args: c["arguments"].clone(),
            })
            .collect();
        if !calls.is_empty() {
            step["tool_calls"] = calls.into();
        }
        let metrics = self.metrics(e.seq, response);
        if !metrics.is_empty() {
            step["metrics"] = metrics.into();
        }
        if let Some(t) = self.tokens.get(&e.seq) {
            for (key, v) in [
                ("tokenizer", &t.tokenizer),
                ("chat_template", &t.chat_template),
            ] {
                if let Some(v) = v {
                    step["extra"][key] = v.as_str().into();
                }
            }
        }
        self.push(step);
        self.pending = pending;
        self.asking = Some(self.list.len() - 1);
    }

    /// A model call's metrics: token counts, token ids, log-probabilities
    /// (recorded with the call, or else as the answer carried them).
    fn metrics(
        &mut self,
        seq: u64,
        response: &worldline_log::log::payload::ModelAnswer,
    ) -> Map<String, Value> {
        let mut m = Map::new();
        let usage = response
            .usage()
            .or(response.model_call.as_ref().and_then(|c| c.usage.as_ref()));
        if let Some(u) = usage {
            if let Some(p) = u["prompt_tokens"].as_u64() {
                self.prompt_tokens += p;
                m.insert("prompt_tokens".into(), p.into());
            }
            if let Some(c) = u["completion_tokens"].as_u64() {
                self.completion_tokens += c;
                m.insert("completion_tokens".into(), c.into());
            }
            if let Some(c) = u["prompt_tokens_details"]["cached_tokens"].as_u64() {
                m.insert("cached_tokens".into(), c.into());
            }
        }
        if let Some(t) = self.tokens.get(&seq) {
            m.insert("prompt_token_ids".into(), json!(t.prompt));
            m.insert("completion_token_ids".into(), json!(t.completion));
            if let Some(lp) = &t.logprobs {
                m.insert("logprobs".into(), json!(lp));
            }
            return m;
        }
        let Some(ok) = response.ok.as_ref() else {
            return m;
        };
        let choice = &ok["choices"][0];
        if let Some(ids) = ints(&ok["prompt_token_ids"]) {
            m.insert("prompt_token_ids".into(), ids);
        }
        if let Some(ids) = ints(&choice["token_ids"]) {
            m.insert("completion_token_ids".into(), ids);
        }
        if let Some(content) = choice["logprobs"]["content"].as_array() {
            let lp: Option<Vec<Value>> = content
                .iter()
                .map(|t| t["logprob"].as_f64().map(Value::from))
                .collect();
            if let Some(lp) = lp {
                m.insert("logprobs".into(), lp.into());
            }
        }
        m
    }

    /// The results of the latest model step's calls that no tool call of
    /// the world answered (a function tool the agent runs itself), as the
    /// next model request carries them: `role: "tool"` messages by their
    /// `tool_call_id`. Every reader of the conversation (trajectories)
    /// had them; the step's observation did not.
    fn ran_itself(&mut self, e: &Event, messages: Option<&Vec<Value>>) {
        let Some(at) = self.asking else { return };
        for (call, m) in asked::answered_in(&mut self.pending, messages) {
            self.observe(
                at,
                json!({
                    "source_call_id": call.id,
                    "content": text_of(&m["content"]),
                    "extra": {"seq": e.seq, "run_by": "the agent (read from the next model request)"},
                }),
            );
        }
    }

    /// Add `result` to the observation of step `at`.
    fn observe(&mut self, at: usize, result: Value) {
        let step = &mut self.list[at];
        if step.get("observation").is_none() {
            step["observation"] = json!({"results": []});
        }
        if let Some(results) = step["observation"]["results"].as_array_mut() {
            results.push(result);
        }
    }

    /// A tool call: the result of the model step that asked for it, or an
    /// agent step of its own.
    fn tool(&mut self, e: &Event, name: &str, args: &Value, answer: &Value) {
        let content = worldline_case::canon::to_string(answer);
        let extra = json!({"seq": e.seq, "vtime_ns": e.vtime_ns});
        // The asked call this one answers (an agent may run its calls in
        // any order, or skip one).
        let answered = self
            .asking
            .and_then(|at| Some((at, asked::take(&mut self.pending, name, args)?)));
        if let Some((at, asked::Asked { id, .. })) = answered {
            self.observe(
                at,
                json!({"source_call_id": id, "content": content, "extra": extra}),
            );
            return;
        }
        let id = format!("call_{}", e.seq);
        let (arguments, text) = match args {
            Value::Object(_) => (args.clone(), None),
            Value::Null => (json!({}), None),
            other => (json!({}), Some(worldline_case::canon::to_string(other))),
        };
        let mut call = json!({"tool_call_id": id, "function_name": name, "arguments": arguments});
        if let Some(t) = text {
            call["extra"] = json!({"arguments_text": t});
        }
        self.push(json!({
            "source": "agent",
            "message": "",
            "llm_call_count": 0,
            "tool_calls": [call],
            "observation": {"results": [{"source_call_id": id, "content": content, "extra": extra}]},
            "extra": extra,
        }));
    }
}

/// The system and user messages that open the first model call's
/// conversation, or else the task as the one user message.
fn opening(steps: &mut Steps, held: &mut Held, task: &Value) {
    let first = held.as_held().iter().find_map(|e| match e.typed() {
        Call::ModelComplete { request, .. } => request.messages().map(|_| e.seq),
        _ => None,
    });
    let first = first.and_then(|seq| {
        let request = held.request(seq)?;
        request["request"]["messages"].as_array().cloned()
    });
    let leading: Vec<Value> = first
        .unwrap_or_default()
        .into_iter()
        .take_while(|m| matches!(m["role"].as_str(), Some("system" | "developer" | "user")))
        .collect();
    if leading.is_empty() {
        let text = match task {
            Value::Null => return,
            Value::String(s) => s.clone(),
            other => worldline_case::canon::to_string(other),
        };
        steps.push(json!({"source": "user", "message": text}));
        return;
    }
    for m in leading {
        let source = if m["role"] == "user" {
            "user"
        } else {
            "system"
        };
        steps.push(json!({"source": source, "message": text_of(&m["content"])}));
    }
}

/// A tool call's arguments as a JSON object, with the text they came as
/// when that was not one.
fn arguments(raw: &Value) -> (Value, Option<String>) {
    let parsed = match raw {
        Value::String(s) if s.trim().is_empty() => return (json!({}), None),
        Value::String(s) => serde_json::from_str::<Value>(s).ok(),
        other => Some(other.clone()),
    };
    match parsed {
        Some(v @ Value::Object(_)) => (v, None),
        _ => (
            json!({}),
            Some(raw.as_str().map_or_else(|| raw.to_string(), str::to_string)),
        ),
    }
}

/// An array of non-negative integers, as it is.
fn ints(v: &Value) -> Option<Value> {
    let a = v.as_array()?;
    a.iter().all(Value::is_u64).then(|| v.clone())
}

fn step_source(step: Option<&Value>) -> Option<&str> {
    step?["source"].as_str()
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// A note for a run whose model steps carry no token ids: a trainer that
/// needs them learns it from the document (and that a redacted copy
/// withheld them, not the endpoint).
fn token_notes(doc: &Value) -> Option<&'static str> {
    let steps = doc["steps"].as_array()?;
    let models: Vec<&Value> = steps.iter().filter(|s| s["llm_call_count"] == 1).collect();
    if models.iter().any(|s| s["extra"][withheld::FIELD] == true) {
        return Some(
            "a redacted copy: the token ids and log-probabilities of its model calls were withheld (they decode back to the text the redaction hid); export the run itself for them",
        );
    }
    let without = models
        .iter()
        .filter(|s| s["metrics"].get("completion_token_ids").is_none())
        .count();
    (without > 0).then_some(
        "the model endpoint returned no token ids for some model calls: their steps carry messages only",
    )
}

/// Whether model call `e`'s token ids and log-probabilities were withheld
/// from a redacted copy (decision 0428).
pub(crate) fn tokens_withheld(e: &Event) -> bool {
    e.response["model_call"][withheld::FIELD] == true
}
