//! Strict replay: re-execute a recorded agent on its recorded case and
//! world (both kept in the store), following the log call by call. The
//! result is `identical` (same chain hash, output and final-state hash,
//! and the recorded grade's verdict when the run is graded again) or the
//! first divergence.

use crate::grade::verdict::Scored;
use crate::native::exec::Exec;
use crate::run::{RunOptions, RunOutcome, run_with};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use worldline_case::ahead;
use worldline_case::case::{self, Case};
use worldline_case::error::InputError;
use worldline_log::log::bundle::{self, Bundle};
use worldline_log::log::{Event, Held, HeldBundle, Kind, rules};
use worldline_runtime::mediate::follow::Following;
/// A divergence's parts, as a [`ReplayReport`] names them.
pub use worldline_runtime::mediate::follow::{Class, Divergence};
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

/// A run as recorded, with what it needs to run again.
#[derive(Clone)]
pub struct RecordedRun {
    pub id: String,
    pub path: PathBuf,
    pub bundle: Bundle,
    /// Read by [`open_held`]: the events, model requests held compact
    /// (decision 0380), and `bundle.events` left empty.
    pub held: Option<Held>,
    /// The recorded case, parsed against the recorded world.
    pub case: Case,
    /// The rules it ran under (its header's, checked to be known here):
    /// what follows it runs under them (decision 0423).
    pub rules: u32,
}

/// Read a run's bundle (checking its hash chain) and its case and world
/// from the store.
pub fn open(store: &StoreDir, run: &str) -> Result<RecordedRun> {
    open_at(store, store.resolve_run(run)?)
}

/// [`open`] for a bundle already found.
pub fn open_at(store: &StoreDir, path: PathBuf) -> Result<RecordedRun> {
    open_with(store, path, &Opened::alone(), |p| {
        Ok((bundle::read(p)?, None))
    })
}

/// What a process that replays many runs has opened already: recorded
/// cases (parsed against their worlds) and agents (read and checked
/// against their hashes once), shared by the runs that name them.
#[derive(Default)]
pub struct Opened {
    cases: Mutex<BTreeMap<[String; 3], Case>>,
    agents: Mutex<BTreeMap<String, Arc<Agent>>>,
    /// One run opened alone (a fork, a replay, `show`): its case is not
    /// kept, so not copied, for runs that will not come.
    alone: bool,
    /// Opened to be read, nothing run ([`open_to_read`]): a run from a
    /// later worldline is refused saying to read it with that one.
    reading: bool,
}

impl Opened {
    /// For a process that opens one run.
    fn alone() -> Self {
        Opened {
            alone: true,
            ..Opened::default()
        }
    }

    /// What names a recorded case: its hash, its world's, and the world.
    fn key(h: &bundle::Header) -> [String; 3] {
        [h.case_hash.clone(), h.world_hash.clone(), h.world.clone()]
    }

    /// The case `h` names, when this process has parsed it already.
    fn case(&self, h: &bundle::Header) -> Option<Case> {
        self.cases
            .lock()
            .expect("cases lock")
            .get(&Self::key(h))
            .cloned()
    }
}

/// [`open`] for a replay or a resume: the events held compact as the
/// bundle's lines hold them (in `held`), never put back whole all at once
/// (decision 0380).
pub fn open_held(store: &StoreDir, run: &str) -> Result<RecordedRun> {
    open_at_held(store, store.resolve_run(run)?)
}

/// [`open_held`] for a bundle already found (the UI's run page).
pub fn open_at_held(store: &StoreDir, path: PathBuf) -> Result<RecordedRun> {
    open_with(store, path, &Opened::alone(), |p| {
        bundle::read_held(p).map(split)
    })
}

/// [`open_at`] with only the run's first `upto` events (and its footer),
/// held compact: `show --at N` and `fork --at N` read no further than
/// they need (decision 0346; `log/prefix.rs`) and hold the requests as
/// their lines do (decision 0380).
pub fn open_prefix_held(store: &StoreDir, path: PathBuf, upto: u64) -> Result<RecordedRun> {
    open_with(store, path, &Opened::alone(), |p| {
        worldline_log::log::prefix::read_held(p, upto).map(split)
    })
}

/// [`open_at_held`] (only the first `upto` events when given, as
/// [`open_prefix_held`]) for a command that reads the run and runs nothing
/// (`show`, `diff`, `case from-run`, the UI's pages): a run from a later
/// worldline is refused saying to read it with that one, not to replay it.
pub fn open_to_read(store: &StoreDir, path: PathBuf, upto: Option<u64>) -> Result<RecordedRun> {
    let opened = Opened {
        reading: true,
        ..Opened::alone()
    };
    open_with(store, path, &opened, |p| match upto {
        Some(upto) => worldline_log::log::prefix::read_held(p, upto).map(split),
        None => bundle::read_held(p).map(split),
    })
}

/// A bundle read held as [`RecordedRun`] keeps it: `events` apart.
fn split(b: HeldBundle) -> (Bundle, Option<Held>) {
    let bundle = Bundle {
        header: b.header,
        events: Vec::new(),
        footer: b.footer,
        in_flight: b.in_flight,
        chain: b.chain,
    };
    (bundle, Some(b.events))
}

impl RecordedRun {
    /// How many events the run recorded.
    pub fn event_count(&self) -> usize {
        self.held
            .as_ref()
            .map_or(self.bundle.events.len(), Held::len)
    }

    /// Its events; read held, a model call's request is what it appended
    /// and changed (for readers of anything else: calls, answers, writes).
    pub fn events(&self) -> &[Event] {
        match &self.held {
            Some(held) => held.as_held(),
            None => &self.bundle.events,
        }
    }

    /// Its bundle with its events held compact, and its case.
    pub fn into_held(self) -> (HeldBundle, Case) {
        let mut b = HeldBundle::from(self.bundle);
        if let Some(held) = self.held {
            b.events = held;
        }
        (b, self.case)
    }

    /// Its events held compact, for a follower.
    pub fn held(&self) -> Held {
        match &self.held {
            Some(held) => held.clone(),
            None => Held::of(&self.bundle.events),
        }
    }
}

/// [`open_at_held`], taking the case from `opened` when it was opened
/// before (`verify`: many runs, each held compact while it is replayed).
pub fn open_in_held(store: &StoreDir, path: PathBuf, opened: &Opened) -> Result<RecordedRun> {
    open_with(store, path, opened, |p| bundle::read_held(p).map(split))
}

/// Open the run at `path` (its case from `opened` when opened before),
/// the bundle read by `read`.
fn open_with(
    store: &StoreDir,
    path: PathBuf,
    opened: &Opened,
    read: impl FnOnce(&std::path::Path) -> Result<(Bundle, Option<Held>), bundle::BundleError>,
) -> Result<RecordedRun> {
    // A viewer's runs are redacted copies, and the cases and worlds are
    // raw data: say which role re-executing or rebuilding state needs.
    store.require_raw("re-executing a run or rebuilding its world's state (replay, verify, fork, rerun, repro, grade, show, diff)")?;
    // Held while this process lives: gc on any machine leaves it.
    store.hold_read(&path)?;
    // The process's first case is parsed (its world loaded) while the
    // events are read (decision 0398): the header names both, and a fork
    // or a replay waits for each. (Later runs mostly name a case parsed.)
    // Parsed here instead when the other thread has not begun by then
    // (decision 0407).
    let first = opened.cases.lock().expect("cases lock").is_empty();
    let ahead =
        (first.then(|| bundle::read_header(&path).ok()).flatten()).filter(|h| h.redacted.is_none());
    let (read, parsed) = std::thread::scope(|s| {
        let parsing = (ahead.as_ref()).map(|h| ahead::spawn(s, || recorded_case(store, h)));
        let read = read(&path);
        let parsed = parsing.map(ahead::Ahead::take);
        (read, parsed)
    });
    let (bundle, held) = read.map_err(InputError::from)?;
    if let Some(r) = &bundle.header.redacted {
        return Err(InputError::new(
            &path,
            format!(
                "is a redacted copy of run {}: its answers are redacted and its case and world were not exported, so it cannot be re-executed (`worldline history` shows it; `worldline replay` checks its integrity)",
                r.original_run
            ),
        )
        .into());
    }
    let rules = rules::of_header(bundle.header.rules).map_err(|later| {
        let does = match opened.reading {
            true => "read",
            false => "replay, fork or resume",
        };
        InputError::new(&path, later.refusal(does))
    })?;
    let h = &bundle.header;
    let key = Opened::key(h);
    let parsed = parsed.filter(|_| ahead.as_ref().is_some_and(|a| Opened::key(a) == key));
    let mut case = match opened.case(h) {
        Some(case) => case,
        None => {
            let case = match parsed {
                Some(parsed) => parsed?,
                None => recorded_case(store, h)?,
            };
            if !opened.alone {
                opened
                    .cases
                    .lock()
                    .expect("cases lock")
                    .insert(key, case.clone());
            }
            case
        }
    };
    case.name.clone_from(&bundle.header.case);
    // A fuzz run's seed is its own, not the case file's.
    case.seed = bundle.header.seed;
    case.override_model(bundle.header.model_overrides.clone())?;
    case.override_user_model(bundle.header.user_model_overrides.clone())?;
    case.override_limits(&bundle.header.limits)?;
    let id = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().to_string());
    Ok(RecordedRun {
        id,
        path,
        bundle,
        held,
        case,
        rules,
    })
}

/// The case a run recorded, parsed against the world it recorded. The
/// world the header names is loaded on another thread while the case's
/// TOML is read (a fork of the bench's N = 200 run took 0.1–1.1 ms less,
/// docs/benchmarks.md, sitting 49), and used when the case names it; its
/// errors come where they came, after the case's own.
fn recorded_case(store: &StoreDir, header: &bundle::Header) -> Result<Case, InputError> {
    std::thread::scope(|s| {
        let world = ahead::spawn(s, || {
            case::as_recorded(|| store.load_world(&header.world_hash))
        });
        let case_bytes = store.get_object(&header.case_hash)?;
        let case_path = store.object_path(&header.case_hash);
        case::parse_recorded(&case_path, case_bytes, |reference| {
            if reference != header.world {
                return Err(InputError::new(
                    &case_path,
                    format!("names world {reference}, the run recorded {}", header.world),
                ));
            }
            world.take()
        })
    })
}

/// Load the recorded agent (checked against its hash).
pub fn recorded_agent(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
) -> Result<Arc<Agent>> {
    stored_agent(sandbox, store, &rec.bundle.header.agent_sha256)
}

/// The agent whose object in `store` is `sha` (checked against its hash).
pub(crate) fn stored_agent(sandbox: &Sandbox, store: &StoreDir, sha: &str) -> Result<Arc<Agent>> {
    let origin = store.object_path(sha);
    // Its object unchanged since its bytes last matched their hash and its
    // compiled form cached: neither read nor decompressed again.
    if store.object_intact(sha)
        && let Some(agent) = sandbox.load_compiled(sha, &origin)?
    {
        return Ok(agent);
    }
    let bytes = store.get_object_noted(sha)?;
    // `get_object_noted` has checked the bytes against their hash.
    sandbox.load_hashed(&bytes, sha.to_string(), &origin)
}

/// [`recorded_agent`], read from the store once per process.
fn opened_agent(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    opened: &Opened,
) -> Result<Arc<Agent>> {
    let sha = &rec.bundle.header.agent_sha256;
    if let Some(agent) = opened.agents.lock().expect("agents lock").get(sha) {
        return Ok(agent.clone());
    }
    let agent = recorded_agent(sandbox, store, rec)?;
    opened
        .agents
        .lock()
        .expect("agents lock")
        .insert(sha.clone(), agent.clone());
    Ok(agent)
}

/// How a replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Same events, chain hash, output and final state.
    Identical,
    /// Every recorded event of an incomplete run matched; there is no
    /// footer to compare.
    VerifiedPrefix,
    /// The recorded run was stopped by the watchdog (wall clock, so not
    /// replayable), or the replay's own watchdog stopped it before the
    /// recording's end ([`ReplayReport::replay_timed_out`]): every event
    /// the replay made matched, up to the end of the recording or until
    /// the replay's watchdog stopped it.
    Timeout,
    Diverged,
}

/// What a replay re-executed, and so what `identical` means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// A WebAssembly agent: every host call, bit for bit.
    BitForBit,
    /// A native agent (`isolation = "native"`): the requests it sent
    /// across the boundary and the answers it got, not what it did between.
    Boundary,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayReport {
    pub run: String,
    pub verdict: Verdict,
    pub scope: Scope,
    /// Events that matched the recording.
    pub matched: u64,
    pub recorded: u64,
    pub chain_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub divergence: Option<Divergence>,
    /// Where the diverging request differs from the recorded one
    /// (`$.path: recorded → replayed`), at most [`DIFF_LINES`] lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
    /// A native run: the passed-through variables whose values differ
    /// from those it recorded (by name and how; never the values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_differs: Vec<String>,
    /// A recording that ended but is not replayable (stopped by a signal:
    /// `trapped`): its status. `None`: it ran to its end, or was cut off
    /// before its footer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Verdict `timeout` for a run that did not time out when it was
    /// recorded: the replay's own watchdog (`[limits] timeout_ms`, wall
    /// clock, so sooner on a busier machine) stopped it before the
    /// recording's end, every event it made matching.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay_timed_out: bool,
    /// A run without an agent process of its own, replayed from its
    /// events: what it was, in words (`an MCP session`, `a served
    /// episode`); `None` for any other run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// The most lines a divergence's diff shows.
pub const DIFF_LINES: usize = 20;

/// Replay a recorded run strictly: a WebAssembly agent bit for bit, a
/// native process at its boundary (re-run with the recorded answers; the
/// first request that differs ends it). `rec`'s events are taken and held
/// compact while it is followed (decision 0347).
pub fn replay(sandbox: &Sandbox, store: &StoreDir, rec: RecordedRun) -> Result<ReplayReport> {
    replay_in(sandbox, store, rec, &Opened::alone())
}

/// [`replay`], taking the agent from `opened` when it was opened before.
pub fn replay_in(
    sandbox: &Sandbox,
    store: &StoreDir,
    mut rec: RecordedRun,
    opened: &Opened,
) -> Result<ReplayReport> {
    let rec = &mut rec;
    let served = crate::native::rederive::rederived(&rec.bundle.header);
    let native = match &rec.bundle.header.native {
        Some(_) if served.is_some() => None,
        Some(agent) => Some(Exec::recorded(
            agent,
            &rec.path,
            "run again; its hash chain was checked when it was read",
        )?),
        None => None,
    };
    let complete = rec.bundle.footer.as_ref().is_some_and(|f| f.replayable);
    let points = rec
        .bundle
        .header
        .parent
        .as_ref()
        .map(|p| p.fork_points())
        .unwrap_or_default();
    // A served episode or MCP session is re-derived from its events whole;
    // any other run is followed with its requests held compact, the whole
    // ones freed (decision 0347), or as read held (0380).
    let events = match (served.is_some(), rec.held.take()) {
        (false, Some(held)) => held,
        (true, Some(held)) => {
            rec.bundle.events = held.whole().into_owned();
            held
        }
        (true, None) => Held::of(&rec.bundle.events),
        (false, None) => Held::from_whole(std::mem::take(&mut rec.bundle.events)),
    };
    let recorded = events.len() as u64;
    let following = Following {
        ended: rec.bundle.footer.as_ref().map(|f| f.status),
        ..Following::replay(events, rec.rules, complete, points)
    };
    let opts = RunOptions {
        following: Some(following),
        faults: rec.bundle.header.fuzz.clone(),
        model_seed: rec.bundle.header.model_seed,
        replay: true,
        recorded_grade: rec.bundle.footer.as_ref().and_then(|f| f.grade.as_ref()),
        chain: rec.bundle.chain,
        ..RunOptions::default()
    };
    let env_differs = native.as_ref().map_or_else(Vec::new, |exec| {
        crate::native::environment::differing(rec.bundle.header.env.as_ref(), &exec.pass_env)
    });
    let (outcome, scope) = match (&native, served) {
        (_, Some(agent)) => (
            crate::native::rederive::rerun(
                sandbox,
                &rec.case,
                agent.clone(),
                opts,
                &rec.bundle.events,
                rec.bundle.footer.as_ref(),
            )?,
            Scope::Boundary,
        ),
        (Some(exec), None) => (
            crate::native::exec::run(sandbox, &rec.case, opts, exec)?,
            Scope::Boundary,
        ),
        (None, None) => {
            let agent = opened_agent(sandbox, store, rec, opened)?;
            (
                run_with(sandbox, &agent, &rec.case, opts)?,
                Scope::BitForBit,
            )
        }
    };
    Ok(ReplayReport {
        env_differs,
        session: served.map(|a| crate::native::rederive::session_words(a).to_string()),
        ..report(rec, recorded, &outcome, complete, scope)
    })
}

/// Where `actual` differs from `expected`, as `$.path: expected → actual`
/// lines (leaves only; at most [`DIFF_LINES`]).
pub fn json_diff(expected: &serde_json::Value, actual: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
        if out.len() >= DIFF_LINES || a == b {
            return;
        }
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                for k in keys {
                    let none = Value::Null;
                    let (va, vb) = (x.get(k).unwrap_or(&none), y.get(k).unwrap_or(&none));
                    walk(&format!("{path}.{k}"), va, vb, out);
                }
            }
            (Value::Array(x), Value::Array(y)) => {
                for i in 0..x.len().max(y.len()) {
                    let none = Value::Null;
                    let (va, vb) = (x.get(i).unwrap_or(&none), y.get(i).unwrap_or(&none));
                    walk(&format!("{path}[{i}]"), va, vb, out);
                }
            }
            _ => out.push(format!(
                "{path}: {} → {}",
                worldline_case::canon::to_string(a),
                worldline_case::canon::to_string(b)
            )),
        }
    }
    let mut out = Vec::new();
    walk("$", expected, actual, &mut out);
    out
}

fn report(
    rec: &RecordedRun,
    recorded: u64,
    o: &RunOutcome,
    complete: bool,
    scope: Scope,
) -> ReplayReport {
    let mut divergence = o.divergence.clone();
    if divergence.is_none()
        && complete
        && let Some(f) = &rec.bundle.footer
    {
        // How it ended first: a process that now exits badly after the
        // same output has no output taken, and was said as `output → null`.
        let ends = [
            ("status", json!(f.status), json!(o.footer.status)),
            ("output", json!(f.output), json!(o.footer.output)),
            (
                "final_state_hash",
                json!(f.final_state_hash),
                json!(o.footer.final_state_hash),
            ),
            (
                "chain_hash",
                json!(f.chain_hash),
                json!(o.footer.chain_hash),
            ),
        ];
        // The recorded grade is not in what the hashes cover: graded
        // again, its verdict must be the same (decision 0424).
        let graded = f.grade.as_ref().map(|recorded| {
            let (expected, actual) = Scored::compared(recorded, o.grade.as_ref());
            ("grade", expected, actual)
        });
        let ends = ends.into_iter().chain(graded);
        if let Some((field, expected, actual)) = ends.into_iter().find(|(_, a, b)| a != b) {
            divergence = Some(Divergence {
                index: recorded,
                class: Class::Mismatch,
                field: Some(field.into()),
                expected,
                actual,
            });
        }
    }
    // A watchdog-stopped run replays until the recording ends or the
    // replay's own watchdog fires, which is wall-clock and may come sooner:
    // events it did not reach are not drift.
    use worldline_log::log::Status;
    let recorded_timeout = rec
        .bundle
        .footer
        .as_ref()
        .is_some_and(|f| f.status == Status::Timeout);
    let timed_out = o.footer.status == Status::Timeout;
    let unreached =
        |d: &Divergence| d.class == Class::Missing && d.index == o.footer.events && timed_out;
    // Nor is the last recorded event: the call the watchdog struck in (a
    // world service's, stopped mid-call) recorded the wall clock's fuel
    // and backtrace, which the replay's call does not meet again.
    let struck = |d: &Divergence| d.class == Class::Mismatch && d.index + 1 == recorded;
    // Nor is a run that ended otherwise (completed, a limit) when the
    // replay's own watchdog stopped it before its end: every event it
    // made matched, and the end it did not reach (or reached all the
    // events but not the footer: the status then differs) is not drift.
    let cut_short = |d: &Divergence| {
        !recorded_timeout
            && timed_out
            && (unreached(d)
                || (d.field.as_deref() == Some("status") && d.index == o.footer.events))
    };
    let watchdog_only = divergence
        .as_ref()
        .is_some_and(|d| (recorded_timeout && (unreached(d) || struck(d))) || cut_short(d));
    let replay_timed_out = !recorded_timeout && watchdog_only;
    if watchdog_only {
        divergence = None;
    }
    let watchdog = recorded_timeout || replay_timed_out;
    let matched = divergence.as_ref().map_or(o.footer.events, |d| d.index);
    let verdict = match (&divergence, complete) {
        (Some(_), _) => Verdict::Diverged,
        (None, _) if watchdog => Verdict::Timeout,
        (None, true) => Verdict::Identical,
        (None, false) => Verdict::VerifiedPrefix,
    };
    let mut diff = divergence
        .as_ref()
        .map(|d| json_diff(&d.expected, &d.actual))
        .unwrap_or_default();
    // An end that differs says why the replay ended so (a process that
    // exited with status 1, was killed, or whose script is gone), and so
    // does one that came before a recorded call (a process that could no
    // longer import its SDK was counted as drift, said as `actual: null`).
    if let (Some(d), Some(f)) = (&divergence, &rec.bundle.footer)
        && (d.field.as_deref() == Some("status")
            || (d.class == Class::Missing && o.footer.error.is_some()))
    {
        diff.extend(json_diff(
            &json!({"error": f.error}),
            &json!({"error": o.footer.error}),
        ));
    }
    ReplayReport {
        run: rec.id.clone(),
        verdict,
        scope,
        matched,
        recorded,
        chain_hash: o.footer.chain_hash.clone(),
        divergence,
        diff,
        env_differs: Vec::new(),
        stopped: (rec.bundle.footer.as_ref())
            .filter(|f| !f.replayable && !recorded_timeout)
            .map(|f| f.status.as_str().to_string()),
        replay_timed_out,
        session: None,
    }
}

/// Where a rerun's model answers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelMode {
    /// From the recording while the requests match, then the case's provider.
    Recorded,
    /// Always the case's provider.
    Live,
    /// From the recording; stop with an error at the first request that differs.
    Fail,
}

impl ModelMode {
    /// The modes by the names the CLI takes.
    pub const NAMES: [(&str, ModelMode); 3] = [
        ("recorded", ModelMode::Recorded),
        ("live", ModelMode::Live),
        ("fail", ModelMode::Fail),
    ];
}

/// The recorded run's case against another agent build: tools are simulated
/// afresh from the world; model answers come from the recording as `mode`
/// says. The rerun is a new run in the store.
pub fn rerun(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    agent: &Agent,
    mode: ModelMode,
) -> Result<RunOutcome> {
    let cassette =
        (mode != ModelMode::Live).then(|| worldline_runtime::mediate::model::RerunCassette {
            calls: (rec.events().iter())
                .filter(|e| e.call == Kind::ModelComplete.name())
                .map(|e| e.seq)
                .collect(),
            recording: rec.held(),
            next: 0,
            fail_on_miss: mode == ModelMode::Fail,
            missed: false,
        });
    run_with(
        sandbox,
        agent,
        &rec.case,
        RunOptions {
            store: Some(store),
            cassette,
            faults: rec.bundle.header.fuzz.clone(),
            model_seed: rec.bundle.header.model_seed,
            ..RunOptions::default()
        },
    )
}
