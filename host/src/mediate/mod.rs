//! The mediation layer: the one place every host call of the guest passes.
//!
//! Each call is answered by [`Mediator::mediate`], which advances the
//! virtual clock, lets the right service answer, applies the world writes
//! and appends the event to the run log. The WASI and `worldline:agent`
//! bindings (`wasi.rs`, `agent_api.rs`) are thin: they turn typed arguments
//! into a canonical request, call `mediate`, and turn the recorded response
//! back into typed results — so what the guest sees is always what the log
//! says it saw.

pub mod agent_api;
pub mod bindings;
pub mod clock;
pub mod entropy;
pub mod stdio;
pub mod wasi;
mod wasi_never;

use crate::case::inject::{Action, Inject};
use crate::case::{Case, time};
use crate::log::{Effect, Event, Recorder};
use crate::world::World;
use crate::world::state::{State, Write};
use serde_json::Value;
use std::sync::Arc;
use wasmtime::component::ResourceTable;

/// A stop the host imposes on the guest; it travels as the trap's error.
#[derive(Debug, thiserror::Error)]
pub enum Fault {
    #[error("the guest made more than {0} host calls (limits.max_events)")]
    EventLimit(u64),
    #[error("the guest called exit({0})")]
    Exit(i32),
    #[error(
        "memory limit: the guest asked for {asked} bytes of linear memory; the case allows {limit} (limits.memory_mb)"
    )]
    MemoryLimit { asked: usize, limit: usize },
    #[error("internal: could not append to the bundle: {0}")]
    Bundle(String),
}

/// An answer from a service, before it is recorded.
pub struct Answer {
    pub response: Value,
    pub effect: Effect,
    pub writes: Vec<Write>,
    /// Virtual time the call takes beyond the fixed tick.
    pub latency_ns: u64,
    pub injected: Option<Value>,
}

impl Answer {
    pub fn read(response: Value) -> Self {
        Answer {
            response,
            effect: Effect::Read,
            writes: Vec::new(),
            latency_ns: 0,
            injected: None,
        }
    }

    pub fn with_effect(response: Value, effect: Effect) -> Self {
        Answer {
            effect,
            ..Answer::read(response)
        }
    }
}

/// The world as this run sees it.
pub struct WorldSession {
    pub world: Arc<World>,
    pub state: State,
    pub case_permissions: crate::world::Permissions,
    /// The case's injection rules with their checked actions.
    pub inject: Vec<(Inject, Action)>,
    /// How many calls each rule's tool and `when` have matched so far.
    pub inject_seen: Vec<u64>,
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

    /// Case rules first, then the world's, then the world's default.
    pub fn allowed(&self, name: &str) -> bool {
        self.case_permissions
            .decide(name)
            .or_else(|| self.world.permissions.decide(name))
            .unwrap_or(self.world.permissions.default == crate::world::Default_::Allow)
    }
}

/// Everything that answers host calls.
pub struct Services {
    pub world: WorldSession,
    pub clock: clock::VirtualClock,
    pub entropy: entropy::Entropy,
    pub stdio: stdio::Stdio,
    pub env: crate::case::Env,
    pub model: agent_api::ScriptedModel,
}

impl Services {
    /// The virtual wall-clock time as RFC 3339 text.
    pub fn now_text(&self) -> String {
        time::rfc3339(self.clock.wall_ns())
    }
}

/// The services plus the log they are recorded in.
pub struct Mediator {
    pub services: Services,
    pub recorder: Recorder,
    /// Fuel used when the guest entered the host (set by the store's call
    /// hook before any host function runs).
    pub fuel_used: u64,
    max_events: u64,
}

impl Mediator {
    pub fn new(case: &Case, world: Arc<World>, recorder: Recorder) -> Self {
        let state = world.initial.clone();
        let inject: Vec<(Inject, Action)> = case
            .inject
            .iter()
            .filter_map(|r| r.action().ok().map(|a| (r.clone(), a)))
            .collect();
        Mediator {
            services: Services {
                world: WorldSession {
                    world,
                    state,
                    case_permissions: case.permissions.clone(),
                    inject_seen: vec![0; inject.len()],
                    inject,
                },
                clock: clock::VirtualClock::new(case.clock_ns, case.limits.tick_us * 1_000),
                entropy: entropy::Entropy::new(case.seed),
                stdio: stdio::Stdio::new(case.limits.stdout_bytes),
                env: case.env.clone(),
                model: agent_api::ScriptedModel::new(case.model.responses.clone()),
            },
            recorder,
            fuel_used: 0,
            max_events: case.limits.max_events,
        }
    }

    /// Serve one host call and record it. `call` is `interface.function`;
    /// `request` is its canonical arguments.
    pub fn mediate(
        &mut self,
        call: &str,
        request: Value,
        serve: impl FnOnce(&mut Services) -> Answer,
    ) -> Result<Value, Fault> {
        if self.recorder.len() >= self.max_events {
            return Err(Fault::EventLimit(self.max_events));
        }
        self.services.clock.tick();
        let answer = serve(&mut self.services);
        self.services.clock.advance(answer.latency_ns);
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
            response: answer.response.clone(),
            seq: self.recorder.len(),
            vtime_ns: self.services.clock.mono_ns(),
            writes: answer.writes,
        };
        self.recorder
            .append(event)
            .map_err(|e| Fault::Bundle(e.to_string()))?;
        Ok(answer.response)
    }
}

/// The store's data: the mediator, the guest's resource handles and the
/// memory limit.
pub struct RunState {
    pub med: Mediator,
    pub table: ResourceTable,
    pub limiter: MemoryLimiter,
}

/// Caps linear memory; going past the cap traps with [`Fault::MemoryLimit`].
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
                Fault::MemoryLimit {
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
