//! World services: tools answered by a WebAssembly component of the world
//! (`[service]` in `world.toml`, `op = "service"` tools) instead of a
//! declared operation.
//!
//! A service call happens inside the agent's tool call, in a store of its
//! own: one instance of the pre-instantiated component per run, made on
//! the run's first call to it and kept while its calls succeed or answer
//! a typed error (a trap discards it; the next call starts a fresh one),
//! fuel and a watchdog deadline per call, a memory cap for the instance,
//! and WASI answered by a mediator of its own (virtual clock,
//! seeded random streams, captured stderr — never the host's). The world
//! state is lent to the call ([`frame::Frame`]); its reads and writes come
//! back for the agent's mediator to record as that one tool call's event.
//! A trap or running out of fuel is the service's failure, not the
//! agent's: the call answers a `failed` tool error naming the service,
//! with the trap message, stderr and backtrace recorded in the event.

pub(crate) mod bindings;
mod frame;

use super::{HostServices, Mediator, MemoryLimiter, RunState, Stop, entropy};
use bindings::{Service, ServicePre};
use frame::Frame;
use rand_chacha::ChaCha20Rng;
use serde_json::{Value, json};
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, Trap, WasmBacktrace};
use worldline_case::case::Case;
use worldline_case::error_kind::ErrorKind;
use worldline_case::wide_integer;
use worldline_case::world::state::{State, Write};
use worldline_case::world::tools::{
    AsOf, Tool, ToolFailure, checked_args, run_checked, shape, with_file_paths,
};
use worldline_log::log::{Recorder, rules};

/// A compiled, checked, pre-instantiated service (the sandbox loads and
/// caches these by SHA-256, like agents).
pub struct LoadedService {
    /// The component's path inside the world folder (names it in errors).
    pub component: String,
    pub sha256: String,
    pub pre: ServicePre<ServiceData>,
}

/// A service store's data: the WASI side (a mediator of the service's
/// own) and the call's view of the world.
pub struct ServiceData {
    pub run: Box<RunState>,
    frame: Frame,
    rng: ChaCha20Rng,
}

/// One run's service: the loaded component, its limits, and what lives
/// from call to call (the instance, its WASI services, the random stream).
pub struct Runtime {
    service: Arc<LoadedService>,
    fuel: u64,
    timeout_ticks: u64,
    /// The instance and its store, from the run's first call until a call
    /// traps.
    live: Option<(Store<ServiceData>, Service)>,
    /// The store's data while no instance is live.
    idle: Option<ServiceData>,
    /// The watchdog stopped the last call: its answer (the fuel it used,
    /// where it stopped) is the wall clock's, so the run ends `timeout`
    /// once the call is recorded, as a run whose agent it stops does.
    pub(crate) watchdog_struck: bool,
    /// The machine could not make the instance the last call needed
    /// (`mediate::host_failure`): the call is not answered, and the run
    /// ends as the host's failure, not the service's.
    pub(crate) host_failed: Option<String>,
}

/// The largest answer one service call may give (its text).
const MAX_ANSWER: usize = 16 << 20;

/// How much of a service's stderr an error message quotes.
const STDERR_QUOTED: usize = 2_000;

impl Runtime {
    /// The service of `case`'s world for one run; a call is interrupted
    /// after `timeout_ticks` epochs of the watchdog (as the agent is).
    pub fn new(service: Arc<LoadedService>, case: &Case, timeout_ticks: u64) -> Self {
        let source = case
            .world
            .service
            .as_ref()
            .expect("a runtime is made for a world with a service");
        let mut med = Mediator::new(case, Recorder::in_memory());
        med.services.world.state = State::default();
        med.services.world.inject.clear();
        med.services.world.inject_seen.clear();
        med.services.entropy = entropy::Entropy::new(entropy::derive(case.seed, "service-wasi", 0));
        let run = Box::new(RunState {
            med,
            table: ResourceTable::new(),
            limiter: MemoryLimiter {
                max_bytes: (source.memory_mb as usize) << 20,
            },
            http_bodies: Default::default(),
        });
        Runtime {
            service,
            fuel: source.fuel,
            timeout_ticks,
            live: None,
            watchdog_struck: false,
            host_failed: None,
            idle: Some(ServiceData {
                run,
                frame: idle_frame(),
                rng: entropy::stream(case.seed, "service"),
            }),
        }
    }

    /// The live instance, made now if there is none, set up for one call
    /// on `frame`: fresh fuel, deadline and output capture, and its clock
    /// brought up to the run's monotonic time `run_mono` when given (never
    /// back: decision 0423). Making the
    /// instance is part of the call (its fuel, its deadline); when that
    /// fails there is no instance (the store's data, frame included, is
    /// back in `idle`), and the error comes back with the fuel used.
    fn live(
        &mut self,
        frame: Frame,
        run_mono: Option<u64>,
    ) -> Result<(Store<ServiceData>, Service), (wasmtime::Error, u64)> {
        let (mut store, bindings) = match self.live.take() {
            Some((store, bindings)) => (store, Some(bindings)),
            None => {
                let mut data = self.idle.take().expect("the service's store data is back");
                data.run.table = ResourceTable::new();
                let mut store = Store::new(self.service.pre.engine(), data);
                store.limiter(|d| &mut d.run.limiter);
                store.epoch_deadline_trap();
                (store, None)
            }
        };
        let d = store.data_mut();
        d.frame = frame;
        d.run.med.record_in_memory();
        d.run.med.services.stdio = super::stdio::Stdio::new(64 << 10);
        if let Some(mono) = run_mono {
            d.run.med.services.clock.advance_to(mono);
        }
        store.set_fuel(self.fuel).expect("fuel is enabled");
        store.set_epoch_deadline(self.timeout_ticks);
        if let Some(bindings) = bindings {
            return Ok((store, bindings));
        }
        match self.service.pre.instantiate(&mut store) {
            Ok(bindings) => Ok((store, bindings)),
            Err(e) => {
                let fuel = self.fuel - store.get_fuel().unwrap_or(0);
                self.idle = Some(store.into_data());
                Err((e, fuel))
            }
        }
    }

    /// Answer `tool` with `args` from `state` as of `as_of`, the service's
    /// clock at least at `run_mono`, under the run's `rules` (its JSON
    /// holding an integer past 64 bits refused from rules 2, its paths
    /// read and its keys kept from 6); `state` is as it was when the call
    /// returns. Also returns what the event records about the call
    /// (`reads`, `fuel`, or the failure).
    fn call(
        &mut self,
        state: &mut State,
        tool: &str,
        args: &Value,
        as_of: &AsOf,
        (run_mono, rules): (Option<u64>, u32),
    ) -> (Result<(Value, Vec<Write>), ToolFailure>, Value) {
        let frame = Frame::new(std::mem::take(state), as_of.clone(), rules);
        let args_json = worldline_case::canon::to_string(args);
        let (outcome, fuel, frame, stderr) = match self.live(frame, run_mono) {
            Err((err, _)) if crate::mediate::host_failure(&err) => {
                let why = format!(
                    "make an instance of the world's service {} for `{tool}`: {err:#}",
                    self.service.component
                );
                // Taken by the caller: the run stops, a gold call fails,
                // saying so (`Stop::Host`).
                self.host_failed = Some(why);
                let (frame, _) = (self.idle.as_mut())
                    .expect("the service's store data is back")
                    .end_call();
                *state = frame.restore();
                return (
                    Err(ToolFailure::new(ErrorKind::Failed, String::new())),
                    Value::Null,
                );
            }
            Err((err, fuel)) => {
                let (frame, stderr) = self
                    .idle
                    .as_mut()
                    .expect("the service's store data is back")
                    .end_call();
                (Err(err), fuel, frame, stderr)
            }
            Ok((mut store, bindings)) => {
                let outcome = bindings.call_call(&mut store, tool, &args_json);
                let fuel = self.fuel - store.get_fuel().unwrap_or(0);
                let (frame, stderr) = store.data_mut().end_call();
                if outcome.is_ok() {
                    self.live = Some((store, bindings));
                } else {
                    // A trap: this instance is not called again.
                    self.idle = Some(store.into_data());
                }
                (outcome, fuel, frame, stderr)
            }
        };
        self.watchdog_struck = matches!(&outcome, Err(e)
            if matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)));
        self.answer(state, frame, outcome, fuel, &stderr, tool)
    }

    /// Put `state` back from the call's frame and say what the call answered.
    fn answer(
        &self,
        state: &mut State,
        mut frame: Frame,
        outcome: wasmtime::Result<Result<String, bindings::worldline::service::types::ToolError>>,
        fuel: u64,
        stderr: &str,
        tool: &str,
    ) -> (Result<(Value, Vec<Write>), ToolFailure>, Value) {
        let reads = std::mem::take(&mut frame.reads);
        let writes = std::mem::take(&mut frame.writes);
        let wide_refused = frame.wide_refused();
        let run_rules = frame.rules;
        *state = frame.restore();
        let name = &self.service.component;
        match outcome {
            Ok(Ok(out)) if out.len() > MAX_ANSWER => (
                Err(ToolFailure::new(
                    ErrorKind::Failed,
                    format!(
                        "service {name} failed in `{tool}`: limit: an answer larger than {} (the cap on one answer); answer less per call",
                        worldline_case::bounded::size(MAX_ANSWER as u64)
                    ),
                )),
                json!({"component": name, "reads": reads, "fuel": fuel}),
            ),
            Ok(Ok(out)) => match serde_json::from_str::<Value>(&out) {
                Ok(_) if let Some(wide) = wide_integer::find(&out).filter(|_| wide_refused) => (
                    Err(ToolFailure::new(
                        ErrorKind::Failed,
                        if run_rules >= rules::SERVICE_WIDE_ANSWER_WORDED {
                            format!("service {name}'s answer to `{tool}`: {}", wide.message())
                        } else {
                            format!("service {name} answered `{tool}` with {}", wide.message())
                        },
                    )),
                    json!({"component": name, "reads": reads, "fuel": fuel}),
                ),
                Ok(v) => (
                    Ok((v, writes)),
                    json!({"component": name, "reads": reads, "fuel": fuel}),
                ),
                Err(e) => (
                    Err(ToolFailure::new(
                        ErrorKind::Failed,
                        format!("service {name} answered `{tool}` with text that is not JSON: {e}"),
                    )),
                    json!({"component": name, "reads": reads, "fuel": fuel}),
                ),
            },
            Ok(Err(e)) => (
                Err(ToolFailure::new(e.kind.into(), e.message)),
                json!({"component": name, "reads": reads, "fuel": fuel}),
            ),
            Err(err) => {
                let why = trap_message(&err, self.fuel, run_rules);
                let backtrace: Vec<String> = err
                    .downcast_ref::<WasmBacktrace>()
                    .map(|bt| {
                        bt.frames()
                            .iter()
                            .map(|f| f.func_name().unwrap_or("<unnamed>").to_string())
                            .collect()
                    })
                    .unwrap_or_default();
                let quoted: String = stderr.trim().chars().take(STDERR_QUOTED).collect();
                let message = if quoted.is_empty() {
                    format!("service {name} failed in `{tool}`: {why}")
                } else {
                    format!("service {name} failed in `{tool}`: {why}; stderr: {quoted}")
                };
                (
                    Err(ToolFailure::new(ErrorKind::Failed, message)),
                    json!({
                        "component": name, "reads": reads, "fuel": fuel,
                        "trap": why, "stderr": stderr, "backtrace": backtrace,
                    }),
                )
            }
        }
    }
}

/// The frame a store holds between calls: an empty world, no time.
fn idle_frame() -> Frame {
    Frame::new(State::default(), AsOf::now(String::new()), 0)
}

impl ServiceData {
    /// The call's frame (an idle one left in its place) and its stderr.
    fn end_call(&mut self) -> (Frame, String) {
        let frame = std::mem::replace(&mut self.frame, idle_frame());
        (frame, self.run.med.services.stdio.stderr.text())
    }
}

/// What stopped a service call, in words.
fn trap_message(err: &wasmtime::Error, fuel: u64, run_rules: u32) -> String {
    if let Some(Trap::OutOfFuel) = err.downcast_ref::<Trap>() {
        format!("ran out of fuel ([service] fuel = {fuel})")
    } else if let Some(Stop::MemoryLimit { asked, limit }) = err.downcast_ref::<Stop>()
        && run_rules >= rules::SERVICE_MEMORY_LIMIT_NAMED
    {
        // The world's limit, not the case's (it sent the user to
        // `limits.memory_mb`, which the case had set far above it).
        format!(
            "memory limit: the service asked for {asked} bytes of linear memory; the world allows {limit} ([service] memory_mb in its world.toml)"
        )
    } else if let Some(Trap::Interrupt) = err.downcast_ref::<Trap>() {
        "the wall-clock watchdog stopped it (limits.timeout_ms)".to_string()
    } else if let Some(limit) = err.downcast_ref::<frame::Limit>() {
        limit.to_string()
    } else if let Some(stop) = err.downcast_ref::<Stop>() {
        stop.to_string()
    } else if let Some(trap) = err.downcast_ref::<Trap>() {
        trap.to_string()
    } else {
        format!("{err:#}")
    }
}

/// What running a tool gave: its result and writes, or why it failed, and
/// for a service tool what the event records about the service call.
pub struct Ran {
    pub result: Result<(Value, Vec<Write>), ToolFailure>,
    pub service: Option<Value>,
}

/// Run a tool — declared or service — against the session's state as of
/// `as_of`. The state is not changed: the writes come back for the
/// mediator to record and apply.
pub fn run_tool(s: &mut HostServices, tool: &Tool, args: &Value, as_of: &AsOf) -> Ran {
    let args = &match checked_args(tool, args, as_of) {
        Ok(args) => args,
        Err(f) => {
            return Ran {
                result: Err(f),
                service: None,
            };
        }
    };
    let paths;
    let args = if s.rules >= rules::FILE_PATHS_AS_READ {
        let folders_refused = s.rules >= rules::A_PATH_ENDING_IN_A_SLASH_IS_A_FOLDER;
        paths = match with_file_paths(tool, args, folders_refused) {
            Ok(args) => args,
            Err(f) => {
                return Ran {
                    result: Err(f),
                    service: None,
                };
            }
        };
        &*paths
    } else {
        args
    };
    if let Some(result) = run_checked(tool, args, &s.world.state, as_of) {
        return Ran {
            result,
            service: None,
        };
    }
    let Some(runtime) = s.service.as_mut() else {
        return Ran {
            result: Err(ToolFailure::new(
                ErrorKind::Failed,
                "the world's service is not loaded in this run",
            )),
            service: None,
        };
    };
    // From rules 1 the service's clocks read the run's time, not a
    // clock of their own that only its own calls moved.
    let run_mono = (s.rules >= rules::SERVICE_CLOCK_FOLLOWS_THE_RUN).then(|| s.clock.mono_ns());
    let called = (run_mono, s.rules);
    let (result, detail) = runtime.call(&mut s.world.state, &tool.name, args, as_of, called);
    let result = result.map(|(out, writes)| {
        let writes = if as_of.empty { Vec::new() } else { writes };
        (shape(tool, args, as_of, out), writes)
    });
    Ran {
        result,
        service: Some(detail),
    }
}
