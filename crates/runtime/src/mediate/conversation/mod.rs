//! `worldline:agent/user` and `worldline:agent/approval`: the user the
//! agent talks to and the humans who approve its actions, played by the
//! case and recorded like every other host call.
//!
//! A user turn is one event: the request is the agent's message, the
//! response the user's `reply` or `ended` (reason, satisfied) plus `user`:
//! the turn number and what answered (a rule and alternative, the default,
//! the turn limit, or the model call that played the user). A scripted
//! user is re-computed on replay (its draws stay in step); a user played by
//! a live model is answered from the log while a recording is followed, so
//! a replay never calls out. A scripted rule's calls of the user's own
//! tools are events of their own (`user/tools.call`), made before the
//! turn's event; so are a model-played user's, made between the turn's
//! model steps (see `model_user`), whose last step (its text) answers the
//! turn's event. A model-played user with no model configured is played
//! by its scripted stand-in, each turn's `by` marked `stand_in` (decision
//! 0386). An approval is one event too, asked by the
//! agent or — for a tool whose permission is `ask` — by the host right
//! before the tool call.

pub(crate) mod approvals;
pub(crate) mod model_user;
pub(crate) mod scripted_user;

use super::bindings::worldline::agent::{approval, user};
use super::clock::ns_of_ms;
use super::model::ModelService;
use super::{HostServices, RunState, ServiceReply, Stop, entropy};
use serde_json::{Value, json};
use worldline_case::case::Case;
use worldline_case::case::approve::ApproveRule;
use worldline_case::case::fuzz::{self, PlannedFault};
use worldline_case::case::inject::Action;
use worldline_case::case::model::Provider;
use worldline_case::case::user::{Line, PlayedBy, UserConfig};
use worldline_log::log::call::{ApprovalAsk, Said};
use worldline_log::log::{Effect, Kind, kind};

/// The call name of user turns.
pub const SAY: &str = Kind::UserSay.name();
/// The call name of approval requests.
pub const APPROVAL: &str = Kind::ApprovalRequest.name();

/// Who plays the user in this run.
enum Player {
    /// The case has no `[user]`: every turn ends the conversation.
    Nobody,
    Scripted(Box<scripted_user::ScriptedUser>),
    /// A model-played user's scripted stand-in: no model is configured.
    StandIn(Box<scripted_user::ScriptedUser>),
    Model(Box<ModelService>),
}

/// The conversation so far and who answers it.
pub struct Conversation {
    config: UserConfig,
    player: Player,
    approve: Vec<ApproveRule>,
    /// `(agent message, user reply)` of each answered turn.
    transcript: Vec<(String, String)>,
    /// The agent's messages so far.
    turns: u32,
    /// The recorded `ended` once the user has left.
    ended: Option<Value>,
    /// The model playing the user spent the case's whole time budget.
    budget_spent: bool,
    /// How this turn's tool-calling model steps ended: the last step's
    /// answer (its text), or `None` at the step limit.
    stepped: Option<Option<ServiceReply>>,
}

impl Conversation {
    pub fn new(case: &Case) -> Self {
        let config = case.user.clone().unwrap_or_default();
        let player = match (&case.user, config.played_by, &config.model) {
            (None, _, _) => Player::Nobody,
            (Some(_), PlayedBy::Model, Some(model)) => Player::Model(Box::new(ModelService::new(
                model,
                entropy::derive(case.seed, "user-model", 0),
                std::time::Duration::from_millis(case.limits.timeout_ms),
                case.path.parent().unwrap_or(std::path::Path::new(".")),
            ))),
            (Some(_), PlayedBy::Model, None) => Player::StandIn(Box::new(
                scripted_user::ScriptedUser::new(&config, entropy::stream(case.seed, "user")),
            )),
            _ => Player::Scripted(Box::new(scripted_user::ScriptedUser::new(
                &config,
                entropy::stream(case.seed, "user"),
            ))),
        };
        Conversation {
            config,
            player,
            approve: case.approve.clone(),
            transcript: Vec::new(),
            turns: 0,
            ended: None,
            budget_spent: false,
            stepped: None,
        }
    }

    /// Whether the user's answers come from outside the run (a model
    /// endpoint or earlier runs), and so from the log when following one.
    fn live(&self) -> bool {
        matches!(&self.player, Player::Model(m) if m.provider() != Provider::Scripted)
    }

    /// Answer the agent's message. `wall_ns` is virtual now; `fault` is
    /// a fuzz run's fault for this turn.
    fn serve_say(
        &mut self,
        message: &str,
        wall_ns: i128,
        fault: Option<PlannedFault>,
    ) -> ServiceReply {
        let turn = self.turns + 1;
        let turn_of = |by: Value| json!({"turn": turn, "by": by});
        if let Some(ended) = &self.ended {
            return ServiceReply::read(
                json!({"ended": ended, "user": turn_of(json!({"already_ended": true}))}),
            );
        }
        if self.config.max_turns.is_some_and(|m| turn > m) {
            let line = Line {
                end: Some("turn limit".into()),
                ..Line::default()
            };
            return said(
                line,
                turn_of(json!({"turn_limit": self.config.max_turns})),
                0,
            );
        }
        let Some(fault) = fault else {
            return self.played(message, turn_of, wall_ns);
        };
        let (mut answer, action) = match &fault.action {
            Action::Empty => {
                let line = Line {
                    end: Some("the user went silent".into()),
                    ..Line::default()
                };
                (said(line, turn_of(json!({"fuzz": "silent"})), 0), "silent")
            }
            Action::Respond(Value::String(r)) => {
                let line = Line {
                    reply: Some(r.clone()),
                    ..Line::default()
                };
                (said(line, turn_of(json!({"fuzz": "reply"})), 0), "reply")
            }
            _ => (self.played(message, turn_of, wall_ns), "latency"),
        };
        if let Some(ms) = fault.latency_ms {
            // Wrapping, as `ns_of_ms` says.
            answer.latency_ns = answer.latency_ns.wrapping_add(ns_of_ms(ms));
        }
        answer.injected = Some(json!({"fuzz": fault, "action": action}));
        answer
    }

    /// The line of whoever plays the user.
    fn played(
        &mut self,
        message: &str,
        turn_of: impl Fn(Value) -> Value,
        wall_ns: i128,
    ) -> ServiceReply {
        let turn = self.turns + 1;
        match &mut self.player {
            Player::Nobody => {
                let line = Line {
                    end: Some("this case has no [user]".into()),
                    ..Line::default()
                };
                said(line, turn_of(json!({"nobody": true})), 0)
            }
            Player::Scripted(s) => {
                let (line, source, ms) = s.answer(message, turn);
                said(line, turn_of(source), ns_of_ms(ms))
            }
            Player::StandIn(s) => {
                let (line, mut source, ms) = s.answer(message, turn);
                source["stand_in"] = json!(true);
                said(line, turn_of(source), ns_of_ms(ms))
            }
            Player::Model(m) => {
                let answer = match self.stepped.take() {
                    Some(Some(answer)) => answer,
                    Some(None) => {
                        let line = Line {
                            end: Some(format!(
                                "the model playing the user called its tools in {} steps without answering",
                                model_user::MAX_STEPS
                            )),
                            ..Line::default()
                        };
                        return said(
                            line,
                            turn_of(json!({"step_limit": model_user::MAX_STEPS})),
                            0,
                        );
                    }
                    None => {
                        let request =
                            model_user::request(&self.config, &self.transcript, message, &[], &[]);
                        m.serve(&request, wall_ns, None)
                    }
                };
                self.budget_spent |= m.take_budget_spent();
                let line = model_user::line(&self.config, &answer.response);
                let by = json!({"model": answer.response.get("model_call").cloned().unwrap_or(Value::Null)});
                said(line, turn_of(by), answer.latency_ns)
            }
        }
    }

    /// The calls of their own tools the user makes before answering the
    /// agent's next message: a scripted rule's `calls` (none once the user
    /// has left or the turn limit answers, nor when a fault silences the
    /// turn or another line replaces it).
    fn tool_calls(&self, message: &str, fault: Option<&PlannedFault>) -> Vec<(String, Value)> {
        let turn = self.turns + 1;
        match &self.player {
            Player::Scripted(s) | Player::StandIn(s) if !self.answered_otherwise(fault) => s
                .calls(message, turn)
                .iter()
                .map(|c| (c.tool.clone(), c.args.clone()))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Whether this turn is answered without whoever plays the user: they
    /// left, the turn limit, or a fault that silences the turn or gives
    /// another line.
    fn answered_otherwise(&self, fault: Option<&PlannedFault>) -> bool {
        self.ended.is_some()
            || self.config.max_turns.is_some_and(|m| self.turns + 1 > m)
            || fault.is_some_and(|f| matches!(f.action, Action::Empty | Action::Respond(_)))
    }

    /// Whether a model plays the user with tools to call this turn.
    fn steps(&self, fault: Option<&PlannedFault>, has_tools: bool) -> bool {
        has_tools && matches!(self.player, Player::Model(_)) && !self.answered_otherwise(fault)
    }

    /// Keep the conversation in step with what was recorded (live, from
    /// the log, or a fork's replacement).
    fn observe(&mut self, message: &str, response: &Value) {
        self.turns += 1;
        if let Some(reply) = response["reply"].as_str() {
            self.transcript
                .push((message.to_string(), reply.to_string()));
        } else if let Some(ended) = response.get("ended") {
            self.ended = Some(ended.clone());
        }
    }
}

/// The recorded answer for a line.
fn said(line: Line, user: Value, latency_ns: u64) -> ServiceReply {
    let mut response = match (line.reply, line.end) {
        (Some(reply), _) => json!({"reply": reply}),
        (None, end) => json!({"ended": {
            "reason": end.unwrap_or_default(),
            "satisfied": line.satisfied,
        }}),
    };
    response["user"] = user;
    ServiceReply {
        latency_ns,
        ..ServiceReply::read(response)
    }
}

/// The guest's turn from a recorded response.
fn turn(response: &Value) -> user::Turn {
    match response["reply"].as_str() {
        Some(reply) => user::Turn::Reply(reply.to_string()),
        None => user::Turn::Ended(user::Ended {
            reason: response["ended"]["reason"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            satisfied: response["ended"]["satisfied"].as_bool().unwrap_or(false),
        }),
    }
}

/// A fork's `--respond` for a user turn or an approval, in recorded form:
/// text is the user's reply, `"approved"`/`"denied"` an approval. Other
/// calls' responses come back unchanged as `Err`.
pub fn shape_response(call: &str, response: Value) -> Result<Value, Value> {
    match (call, response) {
        (SAY, Value::String(reply)) => Ok(json!({"reply": reply})),
        (APPROVAL, Value::String(s)) if s == "approved" => Ok(json!({"approved": true})),
        (APPROVAL, Value::String(s)) if s == "denied" => Ok(json!({"denied": "denied in a fork"})),
        (SAY | APPROVAL, other) => Ok(other),
        (_, other) => Err(other),
    }
}

impl RunState {
    /// Ask the approval rules about a call of `tool` whose permission is
    /// `ask` (one recorded event, before the call's); the denial reason
    /// when refused. Tools that do not ask are not asked about.
    pub(crate) fn approve_tool_call(
        &mut self,
        tool: &str,
        args: &Value,
    ) -> wasmtime::Result<Option<String>> {
        let world = &self.med.services.world;
        if world.world.tool(tool).is_none() || !world.allowed(tool) || !world.asks(tool) {
            return Ok(None);
        }
        let details = json!({"tool": tool, "args": args});
        let r = self.request_approval("tool", details, true)?;
        Ok(approvals::denial(&r))
    }

    fn request_approval(
        &mut self,
        kind: &str,
        details: Value,
        by_host: bool,
    ) -> wasmtime::Result<Value> {
        let request = ApprovalAsk {
            kind: json!(kind),
            details: details.clone(),
            by: by_host.then(|| json!("host")),
            detail: Default::default(),
        };
        let r = self.typed_call::<kind::ApprovalRequest>(&request, |s: &mut HostServices| {
            let fault = s
                .world
                .faults
                .as_mut()
                .and_then(|f| f.next(fuzz::APPROVAL, true))
                .filter(|f| f.action == Action::Deny);
            if let Some(f) = fault {
                return ServiceReply {
                    injected: Some(json!({"fuzz": f, "action": "deny"})),
                    ..ServiceReply::with_effect(
                        json!({"denied": "denied (a fuzzed approver said no)", "approver": {"fuzz": true}}),
                        Effect::Denied,
                    )
                };
            }
            let (response, ms) = approvals::answer(&s.conversation.approve, kind, &details);
            let effect = if approvals::denial(&response).is_some() {
                Effect::Denied
            } else {
                Effect::Read
            };
            ServiceReply {
                latency_ns: ns_of_ms(ms),
                ..ServiceReply::with_effect(response, effect)
            }
        })?;
        Ok(self.med.response(r.seq).clone())
    }
}

impl user::Host for RunState {
    fn say(&mut self, message: String) -> wasmtime::Result<user::Turn> {
        let request = Said {
            message: message.clone(),
            detail: Default::default(),
        };
        // Drawn before the call, so a user whose answers come from the log
        // (a replay of a live model) draws the same faults.
        let fault = self
            .med
            .services
            .world
            .faults
            .as_mut()
            .and_then(|f| f.next(fuzz::USER_TURN, true));
        // The user acts on their own device first, each call its own event.
        let calls = self
            .med
            .services
            .conversation
            .tool_calls(&message, fault.as_ref());
        for (tool, args) in calls {
            self.user_tool_call(&tool, &args)?;
        }
        let has_tools = !self.med.services.world.world.user_tools.is_empty();
        if self
            .med
            .services
            .conversation
            .steps(fault.as_ref(), has_tools)
        {
            self.user_model_steps(&message)?;
        }
        let serve = |s: &mut HostServices| {
            let now = s.clock.wall_ns();
            s.conversation.serve_say(&message, now, fault)
        };
        let r = if self.med.services.conversation.live() {
            self.med.call_live::<kind::UserSay>(&request, serve)
        } else {
            self.med.call::<kind::UserSay>(&request, serve)
        }
        .map_err(wasmtime::Error::new)?
        .seq;
        let r = self.med.response(r).clone();
        let conversation = &mut self.med.services.conversation;
        conversation.observe(&message, &r);
        if std::mem::take(&mut conversation.budget_spent) {
            return Err(wasmtime::Error::new(Stop::Timeout(
                "the simulated user's model call".into(),
            )));
        }
        Ok(turn(&r))
    }
}

impl RunState {
    /// A model-played user's steps before its turn's answer: ask the model
    /// with the user's tools; each tool call of its reply is made as a
    /// `user/tools.call` event and answered with a `tool` message, until a
    /// reply without calls (kept for the turn's event) or the step limit.
    /// A live model's steps are not asked again while a recording is
    /// followed: the recorded calls are made again instead.
    fn user_model_steps(&mut self, message: &str) -> wasmtime::Result<()> {
        if self.med.services.conversation.live()
            && let Some(recorded) = self.med.upcoming(Kind::UserToolsCall.name())
        {
            for request in recorded {
                let args = request.get("args").cloned().unwrap_or(Value::Null);
                self.user_tool_call(request["name"].as_str().unwrap_or(""), &args)?;
            }
            return Ok(());
        }
        let tools = model_user::tools(&self.med.services.world.world.user_tools);
        let mut steps: Vec<Value> = Vec::new();
        let mut latency_ns: u64 = 0;
        for _ in 0..model_user::MAX_STEPS {
            let now = self.med.services.clock.wall_ns();
            let conversation = &mut self.med.services.conversation;
            let request = model_user::request(
                &conversation.config,
                &conversation.transcript,
                message,
                &tools,
                &steps,
            );
            let Player::Model(m) = &mut conversation.player else {
                return Ok(());
            };
            let mut answer = m.serve(&request, now, None);
            conversation.budget_spent |= m.take_budget_spent();
            latency_ns = latency_ns.wrapping_add(answer.latency_ns);
            let calls = model_user::tool_calls(&answer.response);
            if calls.is_empty() || conversation.budget_spent {
                answer.latency_ns = latency_ns;
                conversation.stepped = Some(Some(answer));
                return Ok(());
            }
            steps.push(answer.response["ok"]["choices"][0]["message"].clone());
            for (id, name, args) in calls {
                let r = self.user_tool_call(&name, &args)?;
                steps.push(json!({
                    "role": "tool",
                    "tool_call_id": id,
                    "content": worldline_case::canon::to_string(&r),
                }));
            }
        }
        self.med.services.conversation.stepped = Some(None);
        Ok(())
    }
}

impl approval::Host for RunState {
    fn request(
        &mut self,
        kind: String,
        details_json: String,
    ) -> wasmtime::Result<approval::Decision> {
        let details = serde_json::from_str(&details_json).unwrap_or(Value::String(details_json));
        let r = self.request_approval(&kind, details, false)?;
        Ok(match approvals::denial(&r) {
            None => approval::Decision::Approved,
            Some(reason) => approval::Decision::Denied(reason),
        })
    }
}
