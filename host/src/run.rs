//! One run: an agent on a case, from instantiation to the footer. The
//! bundle is written as the run goes, so a run that fails half way still
//! leaves every event it made.

use crate::case::Case;
use crate::case::fuzz::FaultSource;
use crate::grade::judge::Judging;
use crate::grade::{Evidence, Grade, grade_judged};
use crate::log::bundle::Parent;
use crate::log::bundle::{self, Footer, Header, Status};
use crate::log::{Event, Recorder};
use crate::mediate::faults::Faults;
use crate::mediate::script::{Divergence, Script};
use crate::mediate::{Mediator, MemoryLimiter, RunState, Stop};
use crate::sandbox::{Agent, Sandbox};
use crate::store::StoreDir;
use crate::world::state::State;
use anyhow::Result;
use std::path::PathBuf;
use wasmtime::component::ResourceTable;
use wasmtime::{CallHook, Store, Trap, WasmBacktrace};

/// Everything a finished (or stopped) run produced.
pub struct RunOutcome {
    pub run_id: Option<String>,
    /// When following a recording: where it departed from it.
    pub divergence: Option<Divergence>,
    /// When following an incomplete recording: the guest reached its end.
    pub reached_end: bool,
    /// The grade, when the case has `[expect]`.
    pub grade: Option<Grade>,
    pub bundle: Option<PathBuf>,
    pub header: Header,
    pub footer: Footer,
    pub events: Vec<Event>,
    pub final_state: State,
}

/// The header a run of `agent` on `case` gets.
pub fn header_for(sandbox: &Sandbox, agent: &Agent, case: &Case) -> Header {
    header_of(sandbox, &agent.sha256, case)
}

/// The header a run on `case` of the agent whose identity is
/// `agent_sha256` gets.
pub fn header_of(sandbox: &Sandbox, agent_sha256: &str, case: &Case) -> Header {
    Header {
        agent_sha256: agent_sha256.to_string(),
        case: case.name.clone(),
        case_hash: case.hash.clone(),
        engine_hash: sandbox.engine_hash().to_string(),
        format: bundle::FORMAT.to_string(),
        fuzz: None,
        harness_version: env!("CARGO_PKG_VERSION").to_string(),
        isolation: None,
        model_overrides: case.model_overrides.clone(),
        model_seed: None,
        native: None,
        origin: case.origin.clone(),
        parent: None,
        redacted: None,
        seed: case.seed,
        world: case.world.reference(),
        world_hash: case.world.hash.clone(),
    }
}

/// Run `agent` on `case`. With a store, the bundle is written to it as the
/// run goes; without one, the run stays in memory.
pub fn run(
    sandbox: &Sandbox,
    agent: &Agent,
    case: &Case,
    store: Option<&StoreDir>,
) -> Result<RunOutcome> {
    run_with(
        sandbox,
        agent,
        case,
        RunOptions {
            store,
            ..RunOptions::default()
        },
    )
}

/// What a run starts: a WebAssembly [`Agent`], or (from a layer above)
/// a native process. Suites, campaigns and repro take either.
pub trait Runner: Sync {
    fn run(&self, sandbox: &Sandbox, case: &Case, opts: RunOptions) -> Result<RunOutcome>;
    /// The agent's identity, as its runs' headers record it.
    fn sha256(&self) -> String;
}

impl Runner for Agent {
    fn run(&self, sandbox: &Sandbox, case: &Case, opts: RunOptions) -> Result<RunOutcome> {
        run_with(sandbox, self, case, opts)
    }

    fn sha256(&self) -> String {
        self.sha256.clone()
    }
}

/// How a run is carried out beyond agent and case.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Write the bundle into this store as the run goes (else in memory).
    pub store: Option<&'a StoreDir>,
    /// A recording to follow (replay, or a fork's prefix).
    pub script: Option<Script>,
    /// For a fork: its parent and edits, recorded in the header.
    pub parent: Option<Parent>,
    /// Model answers from an earlier run (a rerun).
    pub cassette: Option<crate::mediate::model::Cassette>,
    /// A fuzz run's faults (recorded in the header).
    pub faults: Option<FaultSource>,
    /// Seed of the scripted model's weighted alternatives (default: the
    /// case seed). Recorded in the header.
    pub model_seed: Option<u64>,
    /// A replay: the recorded grade, whose judges' answers are reused
    /// (a replay never calls a model).
    pub recorded_grade: Option<serde_json::Value>,
}

/// [`run`] with every option.
pub fn run_with(
    sandbox: &Sandbox,
    agent: &Agent,
    case: &Case,
    mut opts: RunOptions,
) -> Result<RunOutcome> {
    let header = header_for(sandbox, agent, case);
    let begun = begin(sandbox, header, case, &mut opts)?;
    let fuel_budget = case.limits.fuel;
    let mut store = new_store(sandbox, case, begun.med)?;

    let task_json = crate::canon::to_string(&case.task);
    let result = agent
        .pre
        .instantiate(&mut store)
        .and_then(|bindings| bindings.call_run(&mut store, &task_json));
    let fuel = fuel_budget - store.get_fuel().unwrap_or(0);

    let ending = match result {
        Ok(Ok(out)) => (Status::Completed, Some(out), None, Vec::new()),
        Ok(Err(msg)) => (Status::Errored, None, Some(msg), Vec::new()),
        Err(err) => classify(&err, &store.data().med.services.stdio.stderr.text())
            .map_err(|e| begun.opened.write_error(opts.store, e))?,
    };
    let state = store.into_data();
    finish(case, begun.opened, state.med, ending, fuel, &opts)
}

/// A run begun: its header, its bundle (when it has a store) and the
/// gold state its grade needs.
pub struct Opened {
    pub header: Header,
    pub run_id: Option<String>,
    pub bundle_path: Option<PathBuf>,
    gold: Option<std::sync::Arc<crate::grade::gold::GoldState>>,
}

impl Opened {
    /// An internal error while the run was under way, naming the bundle
    /// it left (when it has one).
    pub fn write_error(&self, store: Option<&StoreDir>, e: anyhow::Error) -> anyhow::Error {
        match (store, &self.bundle_path) {
            (Some(dir), Some(path)) => anyhow::Error::new(dir.write_error(path, e)),
            _ => e,
        }
    }
}

/// What [`begin`] sets up: the open run and the mediator the agent's
/// calls go through.
pub struct Begun {
    pub opened: Opened,
    pub med: Mediator,
}

/// Begin a run of `case` with `header` (the agent's identity): check its
/// gold calls and its world's service, open the bundle, and set up the
/// mediator with the options' recording, cassette, seed and faults (taken
/// out of `opts`).
pub fn begin(
    sandbox: &Sandbox,
    mut header: Header,
    case: &Case,
    opts: &mut RunOptions,
) -> Result<Begun> {
    // Before the agent runs: a gold call that fails is the case's error.
    let gold = crate::grade::gold::for_case(sandbox, case)?;
    header.parent = opts.parent.take();
    header.fuzz = opts.faults.take();
    header.model_seed = opts.model_seed;
    // A service the world refuses (not WebAssembly, not a service) is an
    // input error before the bundle exists: no header-only run is left.
    let service = match &case.world.service {
        Some(source) => Some(sandbox.service(source)?),
        None => None,
    };
    let (recorder, run_id, bundle_path) = match opts.store {
        Some(store) => {
            store.hold_run(&header)?;
            let line = bundle::header_line(&header);
            let (run_id, path, file) =
                store.create_bundle(&header.agent_sha256, line.as_bytes())?;
            (Recorder::to_file(file), Some(run_id), Some(path))
        }
        None => (Recorder::in_memory(), None, None),
    };

    let mut med = Mediator::new(case, recorder);
    if let Some(service) = service {
        med.services.service = Some(crate::mediate::service::Runtime::new(
            service,
            case,
            crate::sandbox::timeout_ticks(case.limits.timeout_ms),
        ));
    }
    med.script = opts.script.take();
    med.services.model.cassette = opts.cassette.take();
    if let Some(seed) = opts.model_seed {
        med.services.model.set_seed(seed);
    }
    if let Some(store) = opts.store {
        med.services
            .model
            .use_store(store.runs_dir(), bundle_path.clone());
    }
    if let Some(source) = &header.fuzz {
        let faults = Faults::new(source, case.seed);
        med.services.clock.skew_ns = i128::from(faults.skew_s().unwrap_or(0)) * 1_000_000_000;
        med.services.world.faults = Some(faults);
    }
    Ok(Begun {
        opened: Opened {
            header,
            run_id,
            bundle_path,
            gold,
        },
        med,
    })
}

/// End a run that ended as `ending` having used `fuel`: grade it, write
/// the footer and the index row.
pub fn finish(
    case: &Case,
    opened: Opened,
    mut med: Mediator,
    ending: Ending,
    fuel: u64,
    opts: &RunOptions,
) -> Result<RunOutcome> {
    let (status, output, error, backtrace) = ending;
    let made = med.recorder.len();
    if let Some(script) = med.script.as_mut() {
        script.finish(made);
    }
    let (divergence, reached_end) = med
        .script
        .take()
        .map_or((None, false), |s| (s.divergence, s.reached_end));
    let services = med.services;
    let (file, events, chain_hash) = med.recorder.finish();
    let final_state = services.world.state;
    let judging = match &opts.recorded_grade {
        Some(g) => Judging::Recorded(g),
        None => Judging::Live {
            case_dir: case.path.parent().unwrap_or(std::path::Path::new(".")),
            seed: case.seed,
        },
    };
    let graded = case.expect.as_ref().map(|expect| {
        grade_judged(
            expect,
            &Evidence {
                status,
                output: output.as_deref(),
                events: &events,
                initial: &case.world.initial,
                final_state: &final_state,
                gold: opened.gold.as_deref(),
            },
            &judging,
        )
    });
    let footer = Footer {
        backtrace,
        chain_hash,
        error,
        events: events.len() as u64,
        final_state_hash: final_state.hash(),
        fuel,
        grade: graded
            .as_ref()
            .map(|g| serde_json::to_value(g).expect("grades serialize")),
        hash: String::new(),
        output,
        replayable: status != Status::Timeout,
        status,
        stderr: services.stdio.stderr.text(),
        stdout: services.stdio.stdout.text(),
        truncated_bytes: services.stdio.stdout.dropped + services.stdio.stderr.dropped,
    };
    let mut footer = footer;
    footer.hash = bundle::footer_hash(&footer);
    if let Some(file) = file {
        bundle::finish(file, &footer).map_err(|e| match (opts.store, &opened.bundle_path) {
            (Some(dir), Some(path)) => anyhow::Error::new(dir.write_error(path, e)),
            _ => anyhow::Error::new(e).context("writing the bundle footer"),
        })?;
    }
    if let (Some(store), Some(id)) = (opts.store, &opened.run_id) {
        crate::index::record(store, id, &opened.header, &footer, events.len());
    }
    Ok(RunOutcome {
        run_id: opened.run_id,
        divergence,
        reached_end,
        grade: graded,
        bundle: opened.bundle_path,
        header: opened.header,
        footer,
        events,
        final_state,
    })
}

/// The store one run of `case` executes in: the mediator as its data, the
/// case's memory limit, fuel budget and watchdog deadline, and the fuel
/// used copied into the mediator whenever the guest calls the host.
pub fn new_store(sandbox: &Sandbox, case: &Case, med: Mediator) -> Result<Store<RunState>> {
    let state = RunState {
        med,
        table: ResourceTable::new(),
        limiter: MemoryLimiter {
            max_bytes: (case.limits.memory_mb as usize) << 20,
        },
    };
    let fuel_budget = case.limits.fuel;
    let mut store = Store::new(&sandbox.engine, state);
    store.limiter(|s| &mut s.limiter);
    store
        .set_fuel(fuel_budget)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    store.set_epoch_deadline(crate::sandbox::timeout_ticks(case.limits.timeout_ms));
    store.epoch_deadline_trap();
    store.call_hook(move |mut ctx, hook| {
        if matches!(hook, CallHook::CallingHost) {
            let left = ctx.get_fuel()?;
            ctx.data_mut().med.fuel_used = fuel_budget - left;
        }
        Ok(())
    });
    Ok(store)
}

/// Status, output, message and backtrace of how a run ended.
pub type Ending = (Status, Option<String>, Option<String>, Vec<String>);

/// How a run that ended in an error ended.
/// Internal failures (the bundle could not be written) are returned as
/// errors instead.
pub fn classify(err: &wasmtime::Error, stderr: &str) -> Result<Ending> {
    let backtrace: Vec<String> = err
        .downcast_ref::<WasmBacktrace>()
        .map(|bt| {
            bt.frames()
                .iter()
                .map(|f| f.func_name().unwrap_or("<unnamed>").to_string())
                .collect()
        })
        .unwrap_or_default();
    let (status, message) = if let Some(fault) = err.downcast_ref::<Stop>() {
        match fault {
            Stop::MemoryLimit { .. } => (Status::MemoryLimit, fault.to_string()),
            Stop::Exit(_) => (Status::Exited, fault.to_string()),
            Stop::EventLimit(_) => (Status::Trapped, fault.to_string()),
            Stop::StepLimit { .. } => (Status::StepLimit, fault.to_string()),
            Stop::ErrorLimit(_) => (Status::ErrorLimit, fault.to_string()),
            Stop::Timeout => (Status::Timeout, fault.to_string()),
            Stop::Bundle(_) => anyhow::bail!("{fault}"),
            Stop::Diverged | Stop::ReplayEnd | Stop::ModelMiss => {
                (Status::Trapped, fault.to_string())
            }
        }
    } else if let Some(trap) = err.downcast_ref::<Trap>() {
        match trap {
            Trap::OutOfFuel => (Status::OutOfFuel, "the guest ran out of fuel (limits.fuel)".to_string()),
            Trap::Interrupt => (
                Status::Timeout,
                "the wall-clock watchdog stopped the guest (limits.timeout_ms); this outcome is not replayable".to_string(),
            ),
            other => (Status::Trapped, other.to_string()),
        }
    } else {
        (Status::Trapped, format!("{err:#}"))
    };
    let message = match crate::traceback::find(stderr) {
        Some(account) if status == Status::Trapped => format!("{message}; {}", account.summary()),
        _ => message,
    };
    Ok((status, None, Some(message), backtrace))
}
