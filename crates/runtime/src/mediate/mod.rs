//! The mediation layer: the one place every host call of the guest passes.
//!
//! Each call is answered by [`Mediator::mediate`], which advances the
//! virtual clock, lets the right service answer, applies the world writes
//! and appends the event to the run log. The WASI and `worldline:agent`
//! bindings (`wasi/`, `agent_api.rs`) are thin: they turn typed arguments
//! into a canonical request, call `mediate`, and turn the recorded response
//! back into typed results — so what the guest sees is always what the log
//! says it saw.

pub(crate) mod agent_api;
pub mod bindings;
pub mod boundary;
pub(crate) mod budget;
pub(crate) mod clock;
pub mod conversation;
pub mod entropy;
pub mod faults;
pub mod follow;
mod machine;
pub mod model;
pub mod service;
pub mod services;
pub mod stdio;
pub(crate) mod wasi;

pub use machine::host_failure;
use serde_json::{Value, json};
pub use services::HostServices;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use worldline_case::case::Case;
use worldline_case::case::inject::{Action, Inject};
use worldline_case::path::JsonPath;
use worldline_case::world::World;
use worldline_case::world::state::{State, Write};
use worldline_log::log::{
    CallKind, Edit, Effect, Event, Extends, Held, Kind, Recorder, call, rules, size,
};

/// How the host stopped the guest (not an injected tool fault); it
/// travels as the trap's error.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    #[error("the guest made more than {0} host calls (limits.max_events)")]
    EventLimit(u64),
    /// The call that would have taken the record past its cap, and the
    /// bytes it would have taken it to.
    #[error(
        "record limit: event {seq} (`{call}`) would have taken the run's record to {:.1} MiB, past the {} a bundle holds and stays readable (docs/architecture.md, \"Inputs and their caps\"); the call was not kept, and the run ended before it",
        *.bytes as f64 / f64::from(1 << 20),
        worldline_case::bounded::size(worldline_log::log::size::MAX_RECORDED)
    )]
    RecordLimit { seq: u64, call: String, bytes: u64 },
    /// The call whose time took the run's virtual clock past its end, and
    /// the end's wall time (rules 5, `rules::VIRTUAL_CLOCK_ENDS_THE_RUN`).
    #[error(
        "clock limit: event {seq} (`{call}`) took the run's virtual time past {end}, ~584 years after its start and the latest its clock holds; the event is recorded at that time, and the run ended after it"
    )]
    ClockLimit { seq: u64, call: String, end: String },
    #[error(
        "step limit: the run took its {max} steps ([limits] max_steps = {max}, steps = \"{steps}\"); the next one ended it"
    )]
    StepLimit { max: u64, steps: &'static str },
    #[error("error limit: the run got more than {0} tool errors ([limits] max_errors = {0})")]
    ErrorLimit(u64),
    #[error("the guest called exit({0})")]
    Exit(i32),
    /// `wasi:cli/exit.exit` with a failure: it carries no code (it was
    /// said as `exit(1)` whatever the guest gave).
    #[error(
        "the guest exited with a failure status (WASI's exit carries no code, so which status it gave is not known)"
    )]
    ExitFailure,
    #[error(
        "memory limit: the guest asked for {asked} bytes of linear memory; the case allows {limit} (limits.memory_mb)"
    )]
    MemoryLimit { asked: usize, limit: usize },
    #[error("could not append to the bundle: {0}")]
    Bundle(String),
    /// The machine could not give what a run needs ([`host_failure`]):
    /// what it could not do, and why.
    #[error(
        "the machine could not {0}: a limit of this process (`ulimit -v`) or of the memory free, not the agent's or the world's doing, so it is not recorded"
    )]
    Host(String),
    #[error("{0}")]
    Untyped(String),
    #[error("replay diverged from the recording")]
    Diverged,
    /// The event the request would have been.
    #[error(
        "rerun stopped at event {0}: the agent's model request differs from the recording (--model fail); `worldline diff` of the rerun and its run shows how"
    )]
    ModelMiss(u64),
    #[error("reached the end of an incomplete recording")]
    ReplayEnd,
    /// The scripted model had no reply: why, with the agent's message.
    #[error("{0}")]
    Unscripted(String),
    /// What used the time: `a model call`, `the simulated user`, or a
    /// service call's tool.
    #[error(
        "{0} used the case's whole time budget (limits.timeout_ms); this outcome is not replayable"
    )]
    Timeout(String),
    /// A fork server's prefix ends where its branches begin: the parent
    /// stops its guest there (decision 0358).
    #[error("the prefix ended at the fork point, where the branches go on")]
    Branched,
}

/// What a fork server does at the call of its fork point, before the
/// call's edits apply (decision 0358): `fork(2)` its branches, each of
/// which returns `Ok` and goes on live; the parent stops its guest with
/// [`Stop::Branched`].
pub type ForkHook = Box<dyn FnOnce(&mut Mediator) -> Result<(), Stop> + Send>;

/// An answer from a service, before it is recorded.
pub struct ServiceReply {
    pub response: Value,
    pub effect: Effect,
    pub writes: Vec<Write>,
    /// Virtual time the call takes beyond the fixed tick.
    pub latency_ns: u64,
    pub injected: Option<Value>,
}

/// `{"ok": value}`, with `value` moved in (`json!` would copy it whole
/// through its serializer).
pub(crate) fn ok(value: Value) -> Value {
    Value::Object(serde_json::Map::from_iter([("ok".to_string(), value)]))
}

/// `request` as a value with its field `field` set to `value`, moved in
/// ([`Mediator::call_moving`]).
fn moved_into<K: CallKind>(request: &K::Request, field: &str, value: Value) -> Result<Value, Stop> {
    let mut request = serde_json::to_value(request)
        .map_err(|e| Stop::Untyped(format!("`{}`: its request: {e}", K::KIND.name())))?;
    if let Some(obj) = request.as_object_mut() {
        obj.insert(field.to_string(), value);
    }
    Ok(request)
}

/// The stop for an answer of call `name` that does not read as its kind's
/// (`e` says why).
fn untyped(name: &str, e: &serde_json::Error, wire: &Value) -> Stop {
    Stop::Untyped(format!(
        "`{name}`: the answer does not have its kind's shape ({e}): {}",
        worldline_case::canon::to_string(wire)
    ))
}

/// What an answer given for a call (a fork's `--respond`) is recorded
/// as, as the call's own answer would be: an error `denied` of a call
/// other than a model's is `denied` (as an injected denial is), any other
/// error `failed`, anything else `read`; so graders, the history and
/// OTel read a fork's answered error as they read an injected one.
fn answered_effect(call: &str, response: &Value) -> Effect {
    match response.get("error") {
        Some(e) if e["kind"] == "denied" && call != Kind::ModelComplete.name() => Effect::Denied,
        Some(_) => Effect::Failed,
        // An approval denied, as a rule's denial records it (a fork's was
        // `read`).
        None if call == Kind::ApprovalRequest.name() && response.get("denied").is_some() => {
            Effect::Denied
        }
        None => Effect::Read,
    }
}

impl ServiceReply {
    pub fn read(response: Value) -> Self {
        ServiceReply {
            response,
            effect: Effect::Read,
            writes: Vec::new(),
            latency_ns: 0,
            injected: None,
        }
    }

    pub fn with_effect(response: Value, effect: Effect) -> Self {
        ServiceReply {
            effect,
            ..ServiceReply::read(response)
        }
    }
}

/// A typed call's answer as its kind's type, and the seq of the event
/// that recorded it: the answer as recorded is
/// [`Mediator::response`]`(seq)`, read in place rather than copied (a
/// guest's tool call reads only the typed answer).
pub struct Answered<R> {
    pub typed: R,
    pub seq: u64,
}

/// The world as this run sees it.
pub struct WorldSession {
    pub world: Arc<World>,
    pub state: State,
    pub case_permissions: worldline_case::world::Permissions,
    /// The case's injection rules with their checked actions.
    pub inject: Vec<(Inject, Action)>,
    /// How many calls each rule's tool and `when` have matched so far.
    pub inject_seen: Vec<u64>,
    /// A fuzz run's faults (they apply where no case rule does).
    pub faults: Option<faults::Faults>,
    /// The tools a fork's counted `--deny` names, and the case's
    /// permissions before the first ([`WorldSession::count_denied`]).
    pub counted_denials: Vec<String>,
    pub before_denials: Option<worldline_case::world::Permissions>,
}

impl WorldSession {
    /// Count the call against every rule it matches; the first rule that
    /// matches (and whose `nth` is this call) applies.
    pub fn match_rule(&mut self, tool: &str, args: &Value) -> Option<(usize, Action)> {
        let mut chosen = None;
        for (i, (rule, action)) in self.inject.iter().enumerate() {
            if rule.matches(tool, args) {
                self.inject_seen[i] += 1;
                let due = rule.nth.is_none_or(|n| n == self.inject_seen[i]);
                if due && chosen.is_none() {
                    chosen = Some((i, action.clone()));
                }
            }
        }
        chosen
    }

    /// A fork's permission edit: it overrides the case's rules for `tool`.
    pub fn set_permission(&mut self, tool: &str, allow: bool) {
        self.case_permissions.set(tool, allow);
    }

    /// A fork's state edit (see [`parse_patch`]). Returns the write (not
    /// yet applied), or `None` when the table is not in the world or the
    /// path does not fit the row.
    pub fn patch(&self, path: &str, value: Value) -> Option<Write> {
        let (table, key, field) = parse_patch(path).ok()?;
        if !self.state.tables.contains_key(table) {
            return None;
        }
        let row = match field {
            None => value,
            Some(field) => {
                let mut row = self
                    .state
                    .row(table, key)
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                field.set(&mut row, value).ok()?;
                row
            }
        };
        Some(Write::Put {
            table: table.into(),
            key: key.into(),
            row,
        })
    }

    /// Whether a call of `name` needs approval first (`ask` in the case's
    /// or the world's permissions).
    pub fn asks(&self, name: &str) -> bool {
        let p = [&self.case_permissions, &self.world.permissions];
        p.iter().any(|p| {
            p.ask
                .iter()
                .any(|g| worldline_case::world::glob_match(g, name))
        })
    }

    /// Case rules first, then the world's, then the world's default.
    pub fn allowed(&self, name: &str) -> bool {
        (self.case_permissions).allow_over(&self.world.permissions, name)
    }

    /// Count a call of `name` with `args` against the case's rules (their
    /// `nth`) and the fuzz faults (their draws): the rule that answers
    /// it, and the fault it gets where no rule does.
    pub fn draw(
        &mut self,
        name: &str,
        args: &Value,
    ) -> (
        Option<(usize, Action)>,
        Option<worldline_case::case::fuzz::PlannedFault>,
    ) {
        let rule = self.match_rule(name, args);
        let fault = (self.faults.as_mut()).and_then(|f| f.next(name, rule.is_none()));
        (rule, fault)
    }

    /// A fork's `--deny` of `tool` (a name or a glob) whose calls still
    /// count toward the faults (decision 0422): the permissions before it
    /// are kept to tell which calls the parent served.
    pub fn count_denied(&mut self, tool: &str) {
        if self.before_denials.is_none() {
            self.before_denials = Some(self.case_permissions.clone());
        }
        self.counted_denials.push(tool.to_string());
    }

    /// Whether a call of `name` is denied only by a fork's counted
    /// `--deny`: the parent served it, and it counts as it did there.
    pub fn denied_by_counted_edit(&self, name: &str) -> bool {
        (self.counted_denials.iter()).any(|glob| worldline_case::world::glob_match(glob, name))
            && (self.before_denials.as_ref())
                .is_some_and(|before| before.allow_over(&self.world.permissions, name))
    }
}

/// Split a fork's `--set` path: `table/key` names a row, and
/// `table/key.field` a value inside it (the part after the first dot is a
/// path into the row, docs/formats.md "Paths"). A key with dots of its own
/// is quoted: `table/"v1.2".field`. Only such a key is read as quoted (a
/// quote, a key with a dot, a quote, then `.field` or nothing), so an edit
/// recorded before quoting is read as it was.
pub fn parse_patch(path: &str) -> Result<(&str, &str, Option<JsonPath>), String> {
    let (table, rest) = path
        .split_once('/')
        .ok_or_else(|| format!("`{path}` is not table/key or table/key.field"))?;
    let quoted = rest.strip_prefix('"').and_then(|q| {
        let end = q.find('"')?;
        let (key, after) = (&q[..end], &q[end + 1..]);
        (key.contains('.') && (after.is_empty() || after.starts_with('.'))).then_some((key, after))
    });
    let (key, after) =
        quoted.unwrap_or_else(|| rest.split_at(rest.find('.').unwrap_or(rest.len())));
    if after.is_empty() {
        return Ok((table, key, None));
    }
    let field = JsonPath::parse(after).map_err(|m| format!("`{path}`: {m}"))?;
    Ok((table, key, Some(field)))
}

/// The services plus the log they are recorded in. The log is the
/// mediator's own: nothing else appends to it.
pub struct Mediator {
    pub services: HostServices,
    recorder: Recorder,
    /// A recording to follow (replay, or the prefix of a fork).
    pub following: Option<follow::Following>,
    /// Fuel used when the guest entered the host (set by the store's call
    /// hook before any host function runs).
    pub fuel_used: u64,
    max_events: u64,
    /// `[limits] max_steps` and `max_errors`, counted.
    budget: budget::Budget,
    /// A fork server's hook and the event whose call it is called at.
    pub at_fork: Option<(u64, ForkHook)>,
}

impl Mediator {
    /// The rules this run runs under: those of the recording it follows,
    /// else the current ones (decision 0423).
    pub fn rules(&self) -> u32 {
        self.services.rules
    }

    /// Run under `rules` rather than the current ones: a repetition of a
    /// recorded run, under the rules it ran under (decision 0423).
    pub fn under_rules(&mut self, rules: u32) {
        self.services.rules = rules;
    }

    /// Follow `following` (a replay, a fork's prefix), under its rules.
    pub fn set_following(&mut self, following: Option<follow::Following>) {
        if let Some(f) = &following {
            self.services.rules = f.rules;
        }
        self.following = following;
    }

    pub fn new(case: &Case, recorder: Recorder) -> Self {
        Mediator {
            services: HostServices::new(case),
            recorder,
            following: None,
            fuel_used: 0,
            max_events: case.limits.max_events,
            budget: budget::Budget::new(&case.limits),
            at_fork: None,
        }
    }

    /// The events whose lines the log has written, and the chain's hash
    /// after them (see [`Recorder::written`]).
    pub fn written(&self) -> (worldline_log::log::Held, String) {
        self.recorder.written()
    }

    /// How many events the run has recorded.
    pub fn recorded(&self) -> u64 {
        self.recorder.len()
    }

    /// Close the log: its file (the clock reads held back to be folded
    /// written to it), its events and the chain's last hash.
    pub fn finish_log(&mut self) -> std::io::Result<(Option<std::fs::File>, Held, String)> {
        std::mem::replace(&mut self.recorder, Recorder::in_memory()).finish()
    }

    /// Record in memory from now on, a fresh log (a service's call of its
    /// own, which is not the run's).
    pub fn record_in_memory(&mut self) {
        self.recorder = Recorder::in_memory();
    }

    /// Whether an event of at most `bytes` more fits the record's cap
    /// ([`size::MAX_RECORDED`]): a bundle past it could not be read back.
    fn room(&self, seq: u64, call: &str, bytes: u64) -> Result<(), Stop> {
        let bytes = self.recorder.bytes().saturating_add(bytes);
        if bytes > size::MAX_RECORDED {
            return Err(Stop::RecordLimit {
                seq,
                call: call.to_string(),
                bytes,
            });
        }
        Ok(())
    }

    /// Serve one host call and record it. `call` is `interface.function`;
    /// `request` is its canonical arguments.
    pub fn mediate(
        &mut self,
        call: &str,
        request: Value,
        serve: impl FnOnce(&mut HostServices) -> ServiceReply,
    ) -> Result<Value, Stop> {
        let seq = self.answer(call, request, false, None, |s, _| serve(s))?;
        Ok(self.response(seq).clone())
    }

    /// [`mediate`](Self::mediate) for a service whose answers come from
    /// outside the run (a live model endpoint): while a recording is
    /// followed, the recorded answer is used and the service is not asked,
    /// so a replay never calls out.
    pub fn mediate_live(
        &mut self,
        call: &str,
        request: Value,
        serve: impl FnOnce(&mut HostServices) -> ServiceReply,
    ) -> Result<Value, Stop> {
        let seq = self.answer(call, request, true, None, |s, _| serve(s))?;
        Ok(self.response(seq).clone())
    }

    /// Serve one call of kind `K` and record it: the request is written,
    /// and the answer read back, by the vocabulary's own types (the ones
    /// every reader matches on), so a call is recorded as it is read.
    /// Returns the answer typed and as recorded.
    pub fn call<K: CallKind>(
        &mut self,
        request: &K::Request,
        serve: impl FnOnce(&mut HostServices) -> ServiceReply,
    ) -> Result<Answered<K::Response>, Stop> {
        self.typed::<K>(request, false, serve)
    }

    /// [`call`](Self::call) for a service whose answers come from outside
    /// the run (see [`mediate_live`](Self::mediate_live)).
    pub fn call_live<K: CallKind>(
        &mut self,
        request: &K::Request,
        serve: impl FnOnce(&mut HostServices) -> ServiceReply,
    ) -> Result<Answered<K::Response>, Stop> {
        self.typed::<K>(request, true, serve)
    }

    /// [`call`](Self::call) (or, `live`, [`call_live`](Self::call_live))
    /// whose request's field `field` is `value`, moved into the recorded
    /// request instead of serialized from `request` (where it is left
    /// `null`): a model call's conversation, which the agent sends whole
    /// every call, is then not copied (issue 40). `serve` gets the request
    /// as recorded. A tool call's arguments move in the same way.
    pub fn call_moving<K: CallKind>(
        &mut self,
        request: &K::Request,
        (field, value): (&str, Value),
        live: bool,
        serve: impl FnOnce(&mut HostServices, &Value) -> ServiceReply,
    ) -> Result<Answered<K::Response>, Stop> {
        let request = moved_into::<K>(request, field, value)?;
        self.answered::<K>(request, live, None, serve)
    }

    /// [`call_moving`](Self::call_moving) of a call answered `{"ok": …}` or
    /// `{"error": …}`: the answer is checked as it reads typed, and its
    /// `ok` left in place, where [`Mediator::response`] reads it, rather
    /// than copied (a tool's answer is read once, as text or a body). The
    /// answer's error, typed.
    pub fn answer_moving<K: CallKind<Response = call::Answer>>(
        &mut self,
        request: &K::Request,
        (field, value): (&str, Value),
        serve: impl FnOnce(&mut HostServices, &Value) -> ServiceReply,
    ) -> Result<Answered<Option<call::CallError>>, Stop> {
        let name = K::KIND.name();
        let request = moved_into::<K>(request, field, value)?;
        let seq = self.answer(name, request, false, None, serve)?;
        let wire = self.response(seq);
        let typed = call::Answer::error_in(wire).map_err(|e| untyped(name, &e, wire))?;
        Ok(Answered { typed, seq })
    }

    /// A call of kind `K` (not live) whose request is already compact: a
    /// model call that resends the latest one's conversation, `request`
    /// holding only what it appended and `x` saying what it extends
    /// (decision 0392). The caller has checked it with
    /// [`Mediator::follows_extending`] and [`Mediator::latest_chat`]; it is
    /// recorded as the whole request would be, and `serve` gets it as
    /// recorded (compact).
    pub fn call_extending<K: CallKind>(
        &mut self,
        request: Value,
        x: Extends,
        serve: impl FnOnce(&mut HostServices, &Value) -> ServiceReply,
    ) -> Result<Answered<K::Response>, Stop> {
        self.answered::<K>(request, false, Some(x), serve)
    }

    /// The latest model call recorded and how many messages its request
    /// has, when a request can be recorded compact against it
    /// ([`Recorder::latest_chat`]).
    pub fn latest_chat(&self) -> Option<(u64, usize)> {
        self.recorder.latest_chat()
    }

    /// Whether the next call, a model call whose request is compact as
    /// `request` and `x` say, may go on without the whole request: no
    /// recording is followed there, or the recorded call is held compact
    /// the same way (then it is the same request: its base is, the
    /// replay having matched it). `false`: compare the whole request.
    pub fn follows_extending(&self, request: &Value, x: &Extends) -> bool {
        let Some(following) = self.following.as_ref() else {
            return true;
        };
        let seq = self.recorder.len();
        if seq >= following.follow_until {
            return true;
        }
        (following.events.get(seq)).is_some_and(|rec| rec.call == model::CALL)
            && following.events.matches_extending(seq, request, x)
    }

    /// While a recording is followed: the provider its next event, a model
    /// call, names in its request (as recorded; a compact event keeps it).
    pub(crate) fn followed_provider(&self) -> Option<&str> {
        let following = self.following.as_ref()?;
        let seq = self.recorder.len();
        if seq >= following.follow_until {
            return None;
        }
        let rec = following.events.get(seq)?;
        (rec.call == model::CALL).then(|| rec.request.get("provider")?.as_str())?
    }

    fn typed<K: CallKind>(
        &mut self,
        request: &K::Request,
        live: bool,
        serve: impl FnOnce(&mut HostServices) -> ServiceReply,
    ) -> Result<Answered<K::Response>, Stop> {
        let name = K::KIND.name();
        let request = serde_json::to_value(request)
            .map_err(|e| Stop::Untyped(format!("`{name}`: its request: {e}")))?;
        self.answered::<K>(request, live, None, |s, _| serve(s))
    }

    /// Answer a call of kind `K` whose request is `request` (as recorded)
    /// and read its answer typed.
    fn answered<K: CallKind>(
        &mut self,
        request: Value,
        live: bool,
        extends: Option<Extends>,
        serve: impl FnOnce(&mut HostServices, &Value) -> ServiceReply,
    ) -> Result<Answered<K::Response>, Stop> {
        let name = K::KIND.name();
        let seq = self.answer(name, request, live, extends, serve)?;
        let wire = self.response(seq);
        let typed = serde::Deserialize::deserialize(wire).map_err(|e| untyped(name, &e, wire))?;
        Ok(Answered { typed, seq })
    }

    /// The response event `seq` recorded: `seq` is an answered call's
    /// ([`Answered::seq`]), so the event is there.
    pub fn response(&self, seq: u64) -> &Value {
        &(self.recorder.get(seq))
            .expect("an answered call's event is recorded")
            .response
    }

    /// Answer one call and record it; `extends`: its request is compact
    /// (see [`Mediator::call_extending`]). The seq it is recorded at.
    fn answer(
        &mut self,
        call: &str,
        request: Value,
        live: bool,
        extends: Option<Extends>,
        serve: impl FnOnce(&mut HostServices, &Value) -> ServiceReply,
    ) -> Result<u64, Stop> {
        let seq = self.recorder.len();
        if seq >= self.max_events {
            return Err(Stop::EventLimit(self.max_events));
        }
        // A request the record has no room for is not served.
        let request_bytes = size::value(&request);
        self.room(seq, call, size::asked(call, request_bytes))?;
        self.budget.admit(call)?;
        let following = match extends {
            // Checked by `follows_extending`.
            Some(_) => (self.following.as_ref()).is_some_and(|f| seq < f.follow_until),
            None => self.follow(seq, call, &request)?,
        };
        if self.at_fork.as_ref().is_some_and(|(at, _)| *at == seq)
            && let Some((_, hook)) = self.at_fork.take()
        {
            hook(self)?;
        }
        let (edited, edit_writes) = self.apply_edits(seq);
        let intended = edited.is_none() && !following && self.intend(seq, call, &request, live)?;
        self.services.clock.tick();
        let mut answer = match edited {
            Some(Edited { response, counted }) => {
                // A tool call a fork's edit answers is served as in the
                // parent and its answer dropped, so that it counts toward
                // the faults as it did there (decision 0422); nothing it
                // would have written is made.
                let kind = Kind::of(call);
                // So does a random draw: its bytes are drawn and dropped,
                // so the draws after it get theirs (rules 12).
                let draw = call.starts_with("wasi:random/")
                    && self.rules() >= rules::FORK_ANSWER_TAKES_ITS_DRAW;
                // Each takes the virtual time it took there (rules 13).
                let mut took_ns = 0;
                if counted && (kind == Some(Kind::ToolsCall) || draw) {
                    took_ns = serve(&mut self.services, &request).latency_ns;
                }
                // A model call it answers takes its turn as in the parent
                // too: the scripted reply it had is passed over, so the
                // calls after it get theirs (rules 5; no provider is asked).
                if counted
                    && kind == Some(Kind::ModelComplete)
                    && self.rules() >= rules::FORK_ANSWER_TAKES_THE_MODEL_S_TURN
                {
                    let ms = self.services.model.pass_over(&request["request"]);
                    took_ns = clock::ns_of_ms(ms);
                }
                if self.rules() < rules::FORK_ANSWER_TAKES_ITS_LATENCY {
                    took_ns = 0;
                }
                // A fork made before this rule recorded its answer `read`
                // whatever it was: its replay keeps what it recorded.
                let recorded = (self.following.as_ref())
                    .filter(|_| following)
                    .and_then(|f| f.events.get(seq))
                    .map(|e| e.effect);
                let effect = recorded.unwrap_or_else(|| answered_effect(call, &response));
                ServiceReply {
                    injected: Some(json!({"action": worldline_log::log::event::FORK_RESPOND})),
                    latency_ns: took_ns,
                    ..ServiceReply::with_effect(response, effect)
                }
            }
            None if following && live => self.logged_answer(seq),
            None => serve(&mut self.services, &request),
        };
        // A service the machine could not instantiate answered nothing:
        // the run ends before the call is recorded.
        if let Some(why) = (self.services.service.as_mut()).and_then(|s| s.host_failed.take()) {
            return Err(Stop::Host(why));
        }
        self.services.clock.wait(answer.latency_ns);
        if !edit_writes.is_empty() {
            answer.writes.splice(0..0, edit_writes);
        }
        // Nor is an answer it has no room for kept, nor its writes made.
        let bytes = size::line(
            call,
            request_bytes,
            &answer.response,
            answer.injected.as_ref(),
            &answer.writes,
        );
        self.room(seq, call, bytes)?;
        for w in &answer.writes {
            self.services.world.state.apply(w);
        }
        let event = Event {
            call: call.to_string(),
            effect: answer.effect,
            fuel: self.fuel_used,
            hash: String::new(),
            injected: answer.injected,
            request,
            response: answer.response,
            seq,
            vtime_ns: self.services.clock.mono_ns(),
            writes: answer.writes,
        };
        if following
            && let Some(following) = self.following.as_mut()
            && let Some((field, expected, actual)) = following
                .events
                .get(seq)
                .and_then(|rec| follow::first_difference(rec, &event, !following.other_agent))
        {
            following.diverge(follow::Divergence {
                index: seq,
                class: follow::Class::Mismatch,
                field: Some(field.into()),
                expected,
                actual,
            });
            return Err(Stop::Diverged);
        }
        #[cfg(debug_assertions)]
        readable(&event);
        // A line that must survive a kill is written at once; a read the
        // run makes again identically waits for it (decision 0389).
        let redoable = !intended
            && event.effect != worldline_log::log::Effect::Write
            && event.writes.is_empty();
        match extends {
            Some(x) => self.recorder.append_extending(event, x, !redoable),
            None if redoable => self.recorder.append_redoable(event),
            None => self.recorder.append(event),
        }
        .map_err(|e| Stop::Bundle(e.to_string()))?;
        // The request just matched is the recording's: the follower shares
        // the recorder's whole copy, the base its next call extends.
        if following
            && let Some(f) = self.following.as_mut()
            && let Some(chat) = self.recorder.kept(seq)
        {
            f.events.adopt(seq, chat);
        }
        // Recorded at the clock's end, where it stood still, the event the
        // run ends after: a replay follows it there and ends as the run did.
        if self.services.clock.ran_out() && self.rules() >= rules::VIRTUAL_CLOCK_ENDS_THE_RUN {
            return Err(Stop::ClockLimit {
                seq,
                call: call.to_string(),
                end: worldline_case::time::rfc3339(self.services.clock.end_ns()),
            });
        }
        let recorded = self.recorder.get(seq).expect("just recorded");
        self.budget.count(call, &recorded.response)?;
        Ok(seq)
    }

    /// Before a call is served: write its intent when its answer comes
    /// from outside the run (`live`) or it calls a tool that may write, so
    /// that a run killed inside it knows it was in flight (`log/intent.rs`).
    /// Whether it wrote one.
    fn intend(&mut self, seq: u64, call: &str, request: &Value, live: bool) -> Result<bool, Stop> {
        let tool = (worldline_log::log::Kind::of(call)
            == Some(worldline_log::log::Kind::ToolsCall))
        .then(|| request.get("name").and_then(Value::as_str))
        .flatten()
        .filter(|name| {
            let tools = &self.services.world.world.tools;
            tools.iter().any(|t| t.name == *name && t.mutates)
        });
        if !live && tool.is_none() {
            return Ok(false);
        }
        self.recorder
            .intend(|| worldline_log::log::intent::Intent::of(seq, call, request, tool))
            .map_err(|e| Stop::Bundle(e.to_string()))?;
        Ok(true)
    }

    /// While a recording is followed: the requests of the recorded events
    /// of kind `call` that come next, in a row (`None` when not following).
    /// Such events are never held compact (only model calls are), so each
    /// is read as recorded.
    pub(crate) fn upcoming(&self, call: &str) -> Option<Vec<Value>> {
        let following = self.following.as_ref()?;
        let seq = self.recorder.len();
        if seq >= following.follow_until {
            return None;
        }
        let end = following.follow_until.min(following.events.len() as u64);
        Some(
            (seq..end)
                .map_while(|s| following.events.get(s).filter(|e| e.call == call))
                .map(|e| e.request.clone())
                .collect(),
        )
    }

    /// The answer recorded for event `seq` of the recording being followed
    /// (which [`follow`](Self::follow) has checked is this call), with the
    /// virtual latency that brings the clock to the recorded time.
    fn logged_answer(&self, seq: u64) -> ServiceReply {
        let rec = &self
            .following
            .as_ref()
            .expect("following a recording")
            .events
            .get(seq)
            .expect("a followed event");
        ServiceReply {
            response: rec.response.clone(),
            effect: rec.effect,
            writes: rec.writes.clone(),
            latency_ns: rec.vtime_ns.saturating_sub(self.services.clock.mono_ns()),
            injected: rec.injected.clone(),
        }
    }

    /// While following a recording: whether this call is the recorded
    /// event `seq` (whose answer it must then match), or the divergence that
    /// stops the guest.
    fn follow(&mut self, seq: u64, call: &str, request: &Value) -> Result<bool, Stop> {
        let Some(following) = self.following.as_mut() else {
            return Ok(false);
        };
        if seq >= following.follow_until {
            return Ok(false);
        }
        let actual = || follow::Following::call_of(call, request);
        let same = match following.events.get(seq) {
            Some(rec) if rec.call == call => following.events.matches(seq, request),
            _ => false,
        };
        match following.events.get(seq) {
            None if !following.complete => {
                following.reached_end = true;
                Err(Stop::ReplayEnd)
            }
            None => {
                following.diverge(follow::Divergence {
                    index: seq,
                    class: follow::Class::Extra,
                    field: None,
                    expected: Value::Null,
                    actual: actual(),
                });
                Err(Stop::Diverged)
            }
            Some(rec) if !same => {
                let name = rec.call.clone();
                let recorded = following
                    .events
                    .request(seq)
                    .map(std::borrow::Cow::into_owned)
                    .unwrap_or_default();
                let expected = follow::Following::call_of(&name, &recorded);
                following.diverge(follow::Divergence {
                    index: seq,
                    class: follow::Class::Mismatch,
                    field: None,
                    expected,
                    actual: actual(),
                });
                Err(Stop::Diverged)
            }
            Some(_) => Ok(true),
        }
    }

    /// At a fork point: apply the edits; return a replacement response and
    /// the state writes the edits made.
    fn apply_edits(&mut self, seq: u64) -> (Option<Edited>, Vec<Write>) {
        let edits: Vec<(Edit, bool)> = match self.following.as_ref() {
            Some(following) => following
                .fork_points
                .iter()
                .filter(|p| p.event == seq)
                .flat_map(|p| p.edits.iter().map(|e| (e.clone(), p.counted)))
                .collect(),
            None => return (None, Vec::new()),
        };
        let mut response = None;
        let mut writes = Vec::new();
        for (edit, counted) in edits {
            match edit {
                Edit::Respond { response: r } => {
                    response = Some(Edited {
                        response: r,
                        counted,
                    })
                }
                Edit::Allow { tool } => self.services.world.set_permission(&tool, true),
                Edit::Deny { tool } => {
                    if counted {
                        self.services.world.count_denied(&tool);
                    }
                    self.services.world.set_permission(&tool, false)
                }
                Edit::Set { path, value } => {
                    if let Some(w) = self.services.world.patch(&path, value) {
                        writes.push(w);
                    }
                }
                Edit::Reseed { model_seed } => self.services.seed_model(model_seed),
            }
        }
        (response, writes)
    }
}

/// A fork's answer to the call at its fork point, and whether the call
/// still counts toward the faults ([`ForkPoint::counted`]).
///
/// [`ForkPoint::counted`]: worldline_log::log::bundle::ForkPoint::counted
struct Edited {
    response: Value,
    counted: bool,
}

/// The store's data: the mediator, the guest's resource handles and the
/// memory limit.
pub struct RunState {
    pub med: Mediator,
    pub table: ResourceTable,
    pub limiter: MemoryLimiter,
    /// The bytes of HTTP request bodies the guest holds (the per-run cap).
    pub http_bodies: bindings::BufferedBodies,
}

impl RunState {
    /// The state of a run whose calls come from outside a guest (a native
    /// agent's transports, `validate`'s scripted agents): no guest memory
    /// to limit, no resources held yet.
    pub fn outside_sandbox(med: Mediator) -> Self {
        RunState {
            med,
            table: ResourceTable::new(),
            limiter: MemoryLimiter { max_bytes: 0 },
            http_bodies: Default::default(),
        }
    }

    /// Mediate one call of a binding; a host-imposed stop becomes a trap.
    pub(crate) fn mediated(
        &mut self,
        call: &str,
        request: Value,
        serve: impl FnOnce(&mut HostServices) -> ServiceReply,
    ) -> wasmtime::Result<Value> {
        self.med
            .mediate(call, request, serve)
            .map_err(wasmtime::Error::new)
    }

    /// [`Mediator::call`] of a binding; a host-imposed stop becomes a trap.
    pub(crate) fn typed_call<K: CallKind>(
        &mut self,
        request: &K::Request,
        serve: impl FnOnce(&mut HostServices) -> ServiceReply,
    ) -> wasmtime::Result<Answered<K::Response>> {
        self.med
            .call::<K>(request, serve)
            .map_err(wasmtime::Error::new)
    }
}

/// Debug builds: an event the host records must read back typed. A model
/// call's conversation (`request.request`, any JSON to its type) is left
/// out of the check, which would otherwise copy it whole at every call.
#[cfg(debug_assertions)]
fn readable(event: &Event) {
    let model =
        worldline_log::log::Kind::of(&event.call) == Some(worldline_log::log::Kind::ModelComplete);
    let shallow = match event.request.as_object() {
        Some(obj) if model => Some(Value::Object(
            obj.iter()
                .map(|(k, v)| match k.as_str() {
                    "request" => (k.clone(), json!({})),
                    _ => (k.clone(), v.clone()),
                })
                .collect(),
        )),
        _ => None,
    };
    let request = shallow.as_ref().unwrap_or(&event.request);
    if let Err(e) = worldline_log::log::Call::read_strict(&event.call, request, &event.response) {
        panic!("the host recorded an event its readers cannot type: {e}");
    }
}

/// Caps linear memory; going past the cap traps with [`Stop::MemoryLimit`].
pub struct MemoryLimiter {
    pub max_bytes: usize,
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            return Err(wasmtime::Error::from_anyhow(
                Stop::MemoryLimit {
                    asked: desired,
                    limit: self.max_bytes,
                }
                .into(),
            ));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use worldline_case::world::state::Table;

    fn session() -> WorldSession {
        let mut state = State::default();
        let row = json!({"id": "T-1", "status": "open", "tags": ["a"]});
        state.tables.insert(
            "tickets".into(),
            Table {
                key: "id".into(),
                rows: [("T-1".to_string(), row)].into_iter().collect(),
                ..Default::default()
            },
        );
        let world = World {
            name: "w".into(),
            version: 1,
            description: String::new(),
            dir: Default::default(),
            hash: String::new(),
            manifest: BTreeMap::new(),
            tools: Vec::new(),
            user_tools: Vec::new(),
            permissions: Default::default(),
            initial: state.clone(),
            service: None,
            routes: Vec::new(),
            openapi_notes: Vec::new(),
            overlaid: None,
            numbers: Default::default(),
            injection_vectors: BTreeMap::new(),
        };
        WorldSession {
            world: Arc::new(world),
            state,
            case_permissions: Default::default(),
            inject: Vec::new(),
            inject_seen: Vec::new(),
            faults: None,
            counted_denials: Vec::new(),
            before_denials: None,
        }
    }

    fn row_of(w: Option<Write>) -> Value {
        match w {
            Some(Write::Put { row, .. }) => row,
            other => panic!("expected a row write, got {other:?}"),
        }
    }

    #[test]
    fn patches_replace_rows_or_set_values_inside_them() {
        let s = session();
        assert_eq!(
            row_of(s.patch("tickets/T-1.status", json!("closed"))),
            json!({"id": "T-1", "status": "closed", "tags": ["a"]})
        );
        assert_eq!(
            row_of(s.patch("tickets/T-1.tags[-1]", json!("b"))),
            json!({"id": "T-1", "status": "open", "tags": ["b"]})
        );
        assert_eq!(
            row_of(s.patch("tickets/T-1.meta.owner", json!("ana"))),
            json!({"id": "T-1", "status": "open", "tags": ["a"], "meta": {"owner": "ana"}})
        );
        assert_eq!(
            row_of(s.patch("tickets/T-9", json!({"id": "T-9"}))),
            json!({"id": "T-9"})
        );
        assert_eq!(s.patch("nope/T-1", json!(1)), None);
        assert_eq!(s.patch("tickets/T-1.tags[3]", json!(1)), None);
    }

    #[test]
    fn patch_paths_name_table_key_and_field() {
        let (table, key, field) = parse_patch("tickets/T-1.meta.tags[0]").unwrap();
        assert_eq!((table, key), ("tickets", "T-1"));
        assert_eq!(field.unwrap().to_string(), "$.meta.tags[0]");
        assert_eq!(
            parse_patch("tickets").unwrap_err(),
            "`tickets` is not table/key or table/key.field"
        );
        assert_eq!(
            parse_patch("tickets/T-1..x").unwrap_err(),
            "`tickets/T-1..x`: empty field name"
        );
        // A key with dots of its own, quoted.
        let (_, key, field) = parse_patch("hosts/\"db.eu-1\".status").unwrap();
        assert_eq!(
            (key, field.unwrap().to_string()),
            ("db.eu-1", "$.status".into())
        );
        let (_, key, field) = parse_patch("hosts/\"db.eu-1\"").unwrap();
        assert_eq!((key, field.is_none()), ("db.eu-1", true));
        // Anything else is read as before quoting was (a recorded edit
        // keeps its meaning).
        let (_, key, field) = parse_patch("hosts/\"db\"").unwrap();
        assert_eq!((key, field.is_none()), ("\"db\"", true));
        let (_, key, field) = parse_patch("hosts/\"db.eu-1").unwrap();
        assert_eq!((key, field.unwrap().to_string()), ("\"db", "$.eu-1".into()));
    }
}
