//! One run: an agent on a case, from instantiation to the footer. The
//! bundle is written as the run goes, so a run that fails half way still
//! leaves every event it made.

use crate::grade::gold::GoldState;
use crate::grade::judge::Judging;
use crate::grade::{Evidence, Grade, grade_judged, verdict_judged};
use anyhow::Result;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use wasmtime::component::ResourceTable;
use wasmtime::{CallHook, Store, Trap, WasmBacktrace};
use worldline_case::case::Case;
use worldline_case::case::fuzz::FaultSource;
use worldline_case::world::state::State;
use worldline_log::log::bundle::Parent;
use worldline_log::log::bundle::{self, Footer, Header, Status};
use worldline_log::log::{Held, Recorder, rules};
use worldline_runtime::mediate::faults::Faults;
use worldline_runtime::mediate::follow::{Divergence, Following};
use worldline_runtime::mediate::model::RerunCassette;
use worldline_runtime::mediate::service::{LoadedService, Runtime};
use worldline_runtime::mediate::services::Leftover;
use worldline_runtime::mediate::{HostServices, Mediator, MemoryLimiter, RunState, Stop};
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

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
    /// The run's events, model requests held compact (decision 0380):
    /// `events.whole()` for a reader of every request.
    pub events: Held,
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
        env: None,
        episode_id: None,
        format: bundle::FORMAT.to_string(),
        fuzz: None,
        group: None,
        harness_version: env!("CARGO_PKG_VERSION").to_string(),
        isolation: None,
        limits: case.limit_overrides.clone(),
        model_overrides: case.model_overrides.clone(),
        model_seed: None,
        native: None,
        origin: case.origin.clone(),
        parent: None,
        redacted: None,
        rules: rules::in_header(rules::CURRENT),
        seed: case.seed,
        user_model_overrides: case.user_model_overrides.clone(),
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
    /// Whether two runs of the same inputs may differ: a native process's
    /// parallel requests arrive in the order the operating system gives.
    fn may_differ(&self) -> bool {
        false
    }
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
    pub following: Option<Following>,
    /// Run under these rules instead of [`rules::CURRENT`]: a repetition
    /// of a recorded run (`repro`) runs under the rules it ran under
    /// (decision 0423). A recording followed sets its own.
    pub rules: Option<u32>,
    /// For a fork: its parent and edits, recorded in the header.
    pub parent: Option<Parent>,
    /// Model answers from an earlier run (a rerun).
    pub cassette: Option<RerunCassette>,
    /// A fuzz run's faults (recorded in the header).
    pub faults: Option<FaultSource>,
    /// Seed of the scripted model's weighted alternatives (default: the
    /// case seed). Recorded in the header.
    pub model_seed: Option<u64>,
    /// A member of a group of rollouts (recorded in the header).
    pub group: Option<worldline_log::log::bundle::Group>,
    /// A strict replay: compared with its recording by its output,
    /// status, final state's hash, chain hash and grade's verdict, so its
    /// grade has no state diff and its footer is not sealed (decisions
    /// 0418, 0424).
    pub replay: bool,
    /// A replay's recorded grade: the run is graded again, its judged
    /// checks answered as recorded, and compared by its verdict (decision
    /// 0424). A replay of an ungraded run grades nothing.
    pub recorded_grade: Option<&'a serde_json::Value>,
    /// Made durable with this batch's flush (a suite's) instead of an
    /// `fsync` of its own.
    pub batch: Option<&'a worldline_case::durable::SyncBatch>,
    /// The bundle's file taken from those made ahead (a suite's), when
    /// one is ready.
    pub spares: Option<&'a worldline_case::durable::Spares>,
    /// How compact model calls are hashed: a replay's as its recording's
    /// were (decision 0345).
    pub chain: worldline_log::log::Chain,
    /// Record the bundle's lines to this buffer and write nothing to the
    /// store (whose recordings are still read): a fork server's prefix
    /// and branches (decision 0358).
    pub detached: Option<Arc<Mutex<Vec<u8>>>>,
    /// A run kept in memory that is counted and dropped (a campaign's
    /// trial): nothing reads its hashes, so it makes none (no event's
    /// chain hash, no final state's or footer's hash, no grade as JSON in
    /// its footer, no state diff in its grade; decision 0410). Ignored
    /// with a store or `detached`.
    pub counted: bool,
    /// Write every line of the bundle at once, the reads too: a session
    /// whose client `resume` cannot start again (decision 0416).
    pub each_line: bool,
    /// A fork's or a resume's run: written as it goes, but stored (in a
    /// database store) and indexed only once its caller has checked that
    /// it followed its parent up to the fork point (`fork::kept`); one
    /// that departed is no fork of that run, and is not kept.
    pub kept_once_checked: bool,
}

impl RunOptions<'_> {
    /// The rules the run runs under, if not [`rules::CURRENT`]: those of
    /// the recording it follows, or of the run it repeats (decision 0423).
    fn rules_given(&self) -> Option<u32> {
        self.following.as_ref().map(|f| f.rules).or(self.rules)
    }

    /// The rules the run runs under.
    pub(crate) fn rules_under(&self) -> u32 {
        self.rules_given().unwrap_or(rules::CURRENT)
    }

    /// Whether the run makes its hashes: all but a counted run kept in
    /// memory (decision 0410).
    fn hashes(&self) -> bool {
        !(self.counted && self.store.is_none() && self.detached.is_none())
    }

    /// Whether the run flushes its own bundle at its end: not a suite's
    /// (its batch flushes its runs together) nor a database store's (its
    /// commit makes the run durable).
    fn syncs_alone(&self) -> bool {
        self.batch.is_none() && self.store.is_none_or(|s| s.syncs_bundles())
    }
}

/// [`run`] with every option: begin (check the inputs, open the log, set
/// up the services), run the guest, finish (settle the recording it
/// followed, grade, close the log, index the run).
pub fn run_with(
    sandbox: &Sandbox,
    agent: &Agent,
    case: &Case,
    mut opts: RunOptions,
) -> Result<RunOutcome> {
    let header = header_for(sandbox, agent, case);
    let begun = begin(sandbox, header, case, &mut opts)?;
    let guest = execute(sandbox, agent, case, begun.med, |e| {
        begun.opened.write_error(opts.store, e)
    })
    .map_err(|e| begun.opened.host_error(e))?;
    guest.finish(case, begun.opened, &opts)
}

/// A run begun: its header, its bundle (when it has a store) and the
/// gold state its grade needs.
pub struct Opened {
    pub header: Header,
    pub run_id: Option<String>,
    pub bundle_path: Option<PathBuf>,
    gold: Option<Arc<GoldState>>,
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

    /// `e`, when the machine stopped the run (`Stop::Host`), with the run
    /// and where its events so far are: a run made again from them once
    /// the machine has what it lacked.
    fn host_error(&self, e: anyhow::Error) -> anyhow::Error {
        match (&self.run_id, &self.bundle_path, e.downcast_ref::<Stop>()) {
            (Some(id), Some(path), Some(Stop::Host(_))) => e.context(format!(
                "run {id} stopped (its bundle {} keeps its events so far: `worldline resume {id} --resend-in-flight` goes on from them, the call it stopped in, if any, being one the machine did not serve)",
                path.display()
            )),
            _ => e,
        }
    }

    fn footer_error(&self, store: Option<&StoreDir>, e: std::io::Error) -> anyhow::Error {
        match (store, &self.bundle_path) {
            (Some(dir), Some(path)) => anyhow::Error::new(dir.write_error(path, e)),
            _ => anyhow::Error::new(e).context("writing the bundle footer"),
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
    // A run that follows a recording runs under its rules, as does a
    // repetition of one (decision 0423).
    let under = opts.rules_given();
    if let Some(r) = under {
        header.rules = rules::in_header(r);
    }
    let inputs = Inputs::check(
        sandbox,
        header,
        case,
        opts.parent.take(),
        opts.faults.take(),
        opts.model_seed,
        opts.group.take(),
    )?;
    let log = match &opts.detached {
        Some(buffer) => Log {
            recorder: Recorder::to_buffer(buffer.clone()),
            run_id: None,
            path: None,
        },
        None if !opts.hashes() => Log {
            recorder: Recorder::unhashed(),
            run_id: None,
            path: None,
        },
        None => Log::open(opts.store, opts.spares, &inputs.header, opts.syncs_alone())?,
    };
    let recorder = if opts.each_line {
        log.recorder.writing_each_line()
    } else {
        log.recorder
    };
    let mut med = Mediator::new(case, recorder.chained(opts.chain));
    set_up(
        &mut med.services,
        case,
        &inputs,
        opts.cassette.take(),
        opts.store,
        &log.path,
    );
    med.set_following(opts.following.take());
    if let Some(r) = under {
        med.under_rules(r);
    }
    Ok(Begun {
        opened: Opened {
            header: inputs.header,
            run_id: log.run_id,
            bundle_path: log.path,
            gold: inputs.gold,
        },
        med,
    })
}

/// End a run that ended as `ended` having used `fuel`: settle the
/// recording it followed, grade it, write the footer and the index row.
pub fn finish(
    case: &Case,
    opened: Opened,
    mut med: Mediator,
    ended: Ending,
    fuel: u64,
    opts: &RunOptions,
) -> Result<RunOutcome> {
    let (divergence, reached_end) = settle(&mut med);
    let (file, events, chain_hash) = med
        .finish_log()
        .map_err(|e| opened.footer_error(opts.store, e))?;
    let left = med.services.finish();
    let hashed = opts.hashes();
    let graded = match (opts.replay, opts.recorded_grade) {
        (false, _) => grade_run(case, None, &ended, &events, &left.state, &opened, hashed),
        // Its verdict is what a replay compares (decision 0424).
        (true, Some(recorded)) => grade_run(
            case,
            Some(recorded),
            &ended,
            &events,
            &left.state,
            &opened,
            false,
        ),
        (true, None) => None,
    };
    let sealed = (hashed && !opts.replay).then_some(&opened.header);
    let footer = footer(
        ended,
        fuel,
        (chain_hash, events.len()),
        &left,
        graded.as_ref().filter(|_| !opts.replay),
        hashed,
        sealed,
    );
    // A batch syncs its bundles together (and starts each one's writeback
    // as it is handed back); a database store's run is made durable by its
    // commit (below).
    let sync = opts.syncs_alone();
    let written = file
        .map(|file| bundle::finish(file, &footer, sync))
        .transpose()
        .map_err(|e| opened.footer_error(opts.store, e))?;
    if let (Some(store), Some(id)) = (opts.store, &opened.run_id) {
        if !opts.kept_once_checked {
            publish(store, id, &opened.header, &events, &footer)?;
        }
        if let Some(batch) = opts.batch {
            batch.ran(written);
        }
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
        final_state: left.state,
    })
}

/// Publish finished run `id` (its bundle written and closed) in `store`,
/// and index it.
pub(crate) fn publish(
    store: &StoreDir,
    id: &str,
    header: &Header,
    events: &Held,
    footer: &Footer,
) -> Result<()> {
    // Only a database store takes the events (whole, as its rows hold them).
    if store.database().is_some() {
        store.publish_finished(
            id,
            worldline_store::store::Finished {
                header,
                events: &events.whole(),
                footer: Some(footer),
            },
        )?;
    }
    worldline_store::index::record(store, id, header, footer, events.len());
    Ok(())
}

/// The grade of a run of `case` that `opened` began and that ended with
/// `footer`, graded again from its events and final state, its judges'
/// answers the footer's: a fork server's parent checks a branch's
/// recorded grade so (decision 0358).
pub(crate) fn regrade(
    case: &Case,
    opened: &Opened,
    footer: &Footer,
    events: &Held,
    final_state: &State,
) -> Option<Grade> {
    let ended: Ending = (
        footer.status,
        footer.output.clone(),
        footer.error.clone(),
        footer.backtrace.clone(),
    );
    grade_run(
        case,
        footer.grade.as_ref(),
        &ended,
        events,
        final_state,
        opened,
        true,
    )
}

/// What a run needs before its bundle exists; a failure here is the
/// case's input error and leaves no header-only run.
struct Inputs {
    header: Header,
    /// The gold state of `[[expect.gold]]` (a gold call that fails is the
    /// case's error).
    gold: Option<Arc<GoldState>>,
    /// The world's service component (one that is not WebAssembly, or not
    /// a service, is refused here).
    service: Option<Arc<LoadedService>>,
}

impl Inputs {
    fn check(
        sandbox: &Sandbox,
        mut header: Header,
        case: &Case,
        parent: Option<Parent>,
        faults: Option<FaultSource>,
        model_seed: Option<u64>,
        group: Option<worldline_log::log::bundle::Group>,
    ) -> Result<Inputs> {
        let gold = crate::grade::gold::for_case(sandbox, case)?;
        header.parent = parent;
        header.fuzz = faults;
        header.model_seed = model_seed;
        header.group = group;
        let service = match &case.world.service {
            Some(source) => Some(sandbox.service(source)?),
            None => None,
        };
        Ok(Inputs {
            header,
            gold,
            service,
        })
    }
}

/// Where the run's events go: a bundle in the store, written as the run
/// goes, or memory.
struct Log {
    recorder: Recorder,
    run_id: Option<String>,
    path: Option<PathBuf>,
}

impl Log {
    /// `syncs_alone`: the run flushes its bundle itself at its end, whose
    /// writeback the recorder starts as it writes.
    fn open(
        store: Option<&StoreDir>,
        spares: Option<&worldline_case::durable::Spares>,
        header: &Header,
        syncs_alone: bool,
    ) -> Result<Log> {
        let Some(store) = store else {
            return Ok(Log {
                recorder: Recorder::in_memory(),
                run_id: None,
                path: None,
            });
        };
        store.hold_run(header)?;
        let line = bundle::header_line(header);
        let (run_id, path, file) =
            store.create_bundle(&header.agent_sha256, line.as_bytes(), spares)?;
        let recorder = Recorder::to_file(file);
        Ok(Log {
            recorder: if syncs_alone {
                recorder.writing_back()
            } else {
                recorder
            },
            run_id: Some(run_id),
            path: Some(path),
        })
    }
}

/// The services as the options ask: the world's service, a rerun's
/// cassette, the model seed, the store's recordings, a fuzz run's faults.
fn set_up(
    services: &mut HostServices,
    case: &Case,
    inputs: &Inputs,
    cassette: Option<RerunCassette>,
    store: Option<&StoreDir>,
    bundle_path: &Option<PathBuf>,
) {
    if let Some(service) = &inputs.service {
        services.attach_service(Runtime::new(
            service.clone(),
            case,
            worldline_runtime::sandbox::timeout_ticks(case.limits.timeout_ms),
        ));
    }
    if let Some(cassette) = cassette {
        services.follow_cassette(cassette);
    }
    if let Some(seed) = inputs.header.model_seed {
        services.seed_model(seed);
    }
    if let Some(store) = store {
        services.find_recordings_in(store.runs_dir(), bundle_path.clone());
    }
    if let Some(source) = &inputs.header.fuzz {
        services.inject_faults(Faults::new(source, case.seed));
    }
}

/// The guest run to its end: how it ended, the fuel it used, and the
/// mediator with everything it recorded.
pub(crate) struct Guest {
    pub(crate) ended: Ending,
    pub(crate) fuel: u64,
    pub(crate) med: Mediator,
}

impl Guest {
    /// [`finish`] the run this guest made.
    pub(crate) fn finish(
        self,
        case: &Case,
        opened: Opened,
        opts: &RunOptions,
    ) -> Result<RunOutcome> {
        finish(case, opened, self.med, self.ended, self.fuel, opts)
    }
}

/// Instantiate the agent and call its `run` with the case's task.
/// Internal failures (the bundle could not be written) are errors,
/// passed through `internal` (which names the bundle).
pub(crate) fn execute(
    sandbox: &Sandbox,
    agent: &Agent,
    case: &Case,
    med: Mediator,
    internal: impl FnOnce(anyhow::Error) -> anyhow::Error,
) -> Result<Guest> {
    let fuel_budget = case.limits.fuel;
    let mut store = new_store(sandbox, case, med)?;
    let result = match agent.pre.instantiate(&mut store) {
        Ok(bindings) => bindings.call_run(&mut store, case.task.text()),
        Err(e) if worldline_runtime::mediate::host_failure(&e) => {
            return Err(Stop::Host(format!("make the agent's instance: {e:#}")).into());
        }
        Err(e) => Err(e),
    };
    let fuel = fuel_budget - store.get_fuel().unwrap_or(0);
    let ended = match result {
        Ok(Ok(out)) => (Status::Completed, Some(out), None, Vec::new()),
        Ok(Err(msg)) => (Status::Errored, None, Some(msg), Vec::new()),
        // The machine's failure is no outcome of the run (`mediate/machine.rs`).
        Err(ref err) if let Some(Stop::Host(why)) = err.downcast_ref::<Stop>() => {
            return Err(Stop::Host(why.clone()).into());
        }
        Err(err) => {
            let med = &store.data().med;
            let ended = classify(&err, &med.services.stderr()).map_err(internal)?;
            as_recorded(ended, &err, med.following.as_ref())
        }
    };
    Ok(Guest {
        ended,
        fuel,
        med: store.into_data().med,
    })
}

/// The recording the run followed, if any, told how many events the run
/// made: where it departed from it, and whether the run reached the end
/// of an incomplete one.
fn settle(med: &mut Mediator) -> (Option<Divergence>, bool) {
    let made = med.recorded();
    let Some(mut following) = med.following.take() else {
        return (None, false);
    };
    following.finish(made);
    (following.divergence, following.reached_end)
}

/// The grade, when the case has `[expect]`; judged with the answers of
/// `recorded_grade` when given (a fork server's branch, checked). The
/// checks read the events whole (decision 0380: a graded run holds them so
/// while it is graded). Without the state's diff unless `diffed` (a
/// counted run's grade is read for its verdict only).
fn grade_run(
    case: &Case,
    recorded_grade: Option<&serde_json::Value>,
    ended: &Ending,
    events: &Held,
    final_state: &State,
    opened: &Opened,
    diffed: bool,
) -> Option<Grade> {
    let judging = match recorded_grade {
        Some(g) => Judging::Recorded(g),
        None => Judging::Live {
            case_dir: case.path.parent().unwrap_or(std::path::Path::new(".")),
            seed: case.seed,
            budget: std::time::Duration::from_millis(case.limits.timeout_ms),
        },
    };
    let expect = case.expect.as_ref()?;
    let grade = if diffed { grade_judged } else { verdict_judged };
    Some(grade(
        expect,
        &Evidence {
            status: ended.0,
            output: ended.1.as_deref(),
            // Grading reads no model request: the events held.
            events: events.as_held(),
            initial: &case.world.initial,
            final_state,
            gold: opened.gold.as_deref(),
            // Graded under the rules the run ran under (decision 0423).
            rules: opened.header.rules.unwrap_or(0),
        },
        &judging,
    ))
}

/// The footer of a finished run, with its final state's hash and its
/// grade's JSON when it is `hashed` (a counted run's are left empty,
/// decision 0410), and `sealed` for the run's header (decision 0414).
fn footer(
    ended: Ending,
    fuel: u64,
    (chain_hash, events): (String, usize),
    left: &Leftover,
    graded: Option<&Grade>,
    hashed: bool,
    sealed: Option<&Header>,
) -> Footer {
    let (status, output, error, backtrace) = ended;
    let mut footer = Footer {
        backtrace,
        chain_hash,
        error,
        events: events as u64,
        final_state_hash: if hashed {
            left.state.hash()
        } else {
            String::new()
        },
        fuel,
        grade: graded
            .filter(|_| hashed)
            .map(|g| serde_json::to_value(g).expect("grades serialize")),
        header_hash: None,
        hash: String::new(),
        output,
        replayable: status != Status::Timeout && !left.stopped,
        status,
        stderr: left.stderr.clone(),
        stdout: left.stdout.clone(),
        truncated: left.truncated.clone(),
        truncated_bytes: left.truncated_bytes,
    };
    if let Some(header) = sealed {
        bundle::seal(&mut footer, header);
    }
    footer
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
        http_bodies: Default::default(),
    };
    let fuel_budget = case.limits.fuel;
    let mut store = Store::new(&sandbox.engine, state);
    store.limiter(|s| &mut s.limiter);
    store
        .set_fuel(fuel_budget)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    store.set_epoch_deadline(worldline_runtime::sandbox::timeout_ticks(
        case.limits.timeout_ms,
    ));
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

/// A stop a later rule classifies otherwise ends as its recording says
/// while a replay follows it: a `--model fail` stop recorded `trapped`
/// before decision 0417.
fn as_recorded(mut ended: Ending, err: &wasmtime::Error, following: Option<&Following>) -> Ending {
    let miss = matches!(err.downcast_ref::<Stop>(), Some(Stop::ModelMiss(_)));
    if miss && following.and_then(|f| f.ended) == Some(Status::Trapped) {
        ended.0 = Status::Trapped;
    }
    ended
}

/// Status, output, message and backtrace of how a run ended.
pub type Ending = (Status, Option<String>, Option<String>, Vec<String>);

/// What the JS engine prints when an agent's promise can never settle.
const JS_NEVER_SETTLED: &str = "event loop error, but no exception is pending";

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
            // What it printed last says why (`sys.exit("why")` prints the
            // reason; WASI's exit carries only success or failure).
            Stop::Exit(_) | Stop::ExitFailure => {
                let last = (stderr.lines().rev()).find(|l| !l.trim().is_empty());
                let message = match last {
                    Some(line) => format!("{fault}; its stderr ends: {}", line.trim()),
                    None => fault.to_string(),
                };
                (Status::Exited, message)
            }
            Stop::EventLimit(_) | Stop::RecordLimit { .. } | Stop::ClockLimit { .. } => {
                (Status::Trapped, fault.to_string())
            }
            Stop::StepLimit { .. } => (Status::StepLimit, fault.to_string()),
            Stop::ErrorLimit(_) => (Status::ErrorLimit, fault.to_string()),
            Stop::Timeout(_) => (Status::Timeout, fault.to_string()),
            // A rerun stopped by `--model fail`: the recording it answers
            // from ran out, as a script does (decision 0417).
            Stop::Unscripted(_) | Stop::ModelMiss(_) => (Status::Unscripted, fault.to_string()),
            Stop::Bundle(_) | Stop::Untyped(_) | Stop::Branched | Stop::Host(_) => {
                anyhow::bail!("{fault}")
            }
            Stop::Diverged | Stop::ReplayEnd => (Status::Trapped, fault.to_string()),
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
        // The JS engine's words when `run`'s promise waits on nothing left
        // to run (it read as a bare `unreachable` trap).
        None if status == Status::Trapped && stderr.contains(JS_NEVER_SETTLED) => format!(
            "{message}; the agent's `run` returned a promise that never settles (nothing is left to run that could settle it: a deadlock)"
        ),
        _ => message,
    };
    Ok((status, None, Some(message), backtrace))
}
