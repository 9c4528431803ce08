//! Forks: a new run that follows a recorded run up to event N, applies
//! edits at N (a different response, a permission, a state patch, or a
//! different agent), and runs live from there. A native process is run
//! again with the recorded answers up to N, then live. The fork records its parent
//! and N; the parent is never modified. Edits are checked against the run
//! first ([`check`]). A resume ([`resume`]) is a fork at the end of the
//! recording with no edits, under limits the user may raise. A branch
//! ([`branch`]) is K forks at one event, each drawing the model from its
//! own seed from there on, recorded as a group.

pub mod check;
#[cfg(target_os = "linux")]
pub mod server;

use crate::native::exec::Exec;
use crate::native::openenv::{self, Prefix};
use crate::native::rederive;
use crate::replay::{self, RecordedRun, recorded_agent};
use crate::run::{RunOptions, RunOutcome, run_with};
use anyhow::Result;
use std::collections::BTreeMap;
use std::sync::Arc;
use worldline_case::error::InputError;
use worldline_log::log::bundle::{self, Edit, ForkPoint, Parent};
use worldline_log::log::rules;
use worldline_runtime::mediate::follow::Following;
use worldline_runtime::sandbox::{Agent, Sandbox};
use worldline_store::store::StoreDir;

/// The recording a fork of the run at `path` at event `at` reads: the
/// events up to the fork point and the footer (decision 0346), or every
/// event of a run re-executed from its client's recorded steps (a served
/// episode, an MCP session), whose steps after the fork point are sent
/// again.
pub fn open_at(store: &StoreDir, path: std::path::PathBuf, at: u64) -> Result<RecordedRun> {
    let header = bundle::read_header(&path).map_err(InputError::from)?;
    if rederive::rederived(&header).is_some() {
        return replay::open_at(store, path);
    }
    replay::open_prefix_held(store, path, at.saturating_add(1))
}

/// Load the recorded agent of the run at `path` into `sandbox` ahead of
/// its fork, on another thread while the run is read (decision 0401),
/// when it is a WebAssembly component whose compiled form is cached: the
/// fork's own load then finds it (the sandbox keeps what it loads). An
/// object not yet noted intact (the first fork after its run was
/// recorded) is read and checked against its hash here too, which notes
/// it. Anything else (a native run, a served episode, an agent to
/// compile, an object that does not read or match, one that does not
/// load) is left to the fork, which reports it where it did.
pub fn preload(sandbox: &Sandbox, store: &StoreDir, path: &std::path::Path) {
    let Ok(header) = bundle::read_header(path) else {
        return;
    };
    if header.native.is_some()
        || header.redacted.is_some()
        || rederive::rederived(&header).is_some()
    {
        return;
    }
    if sandbox.cached(&header.agent_sha256) {
        let _ = replay::stored_agent(sandbox, store, &header.agent_sha256);
    }
}

/// `edits` with a `--respond` in the shape of the call it answers at
/// `at` (a user turn's text as `{"reply": ...}`, a bare value as `{"ok":
/// ...}`), as the fork records and answers it. Branches took it as
/// typed, and a user turn's text was refused as the run recorded it.
fn shaped(rec: &RecordedRun, at: u64, mut edits: Vec<Edit>) -> Vec<Edit> {
    for e in &mut edits {
        if let (Edit::Respond { response }, Some(event)) = (e, rec.events().get(at as usize)) {
            *response = check::shape_response(&event.call, &event.response, response.clone());
        }
    }
    edits
}

/// Fork `rec` at event `at` with `edits`, optionally with another agent.
/// The fork is written to the store as a new run.
pub fn fork(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    at: u64,
    edits: Vec<Edit>,
    agent: Option<Arc<Agent>>,
) -> Result<RunOutcome> {
    check::check(store, rec, at, &edits)?;
    let edits = shaped(rec, at, edits);
    if agent.is_some()
        && let Some(refused) = other_agent_refused(rec)
    {
        return Err(refused.into());
    }
    if let Some(client) = rederive::rederived(&rec.bundle.header) {
        let parent = parent_of(rec, at, edits, false);
        let opts = RunOptions {
            kept_once_checked: true,
            ..options(store, rec, parent, None)
        };
        let outcome = rederive::rerun(
            sandbox,
            &rec.case,
            client.clone(),
            opts,
            &rec.bundle.events,
            rec.bundle.footer.as_ref(),
        )?;
        return kept_if_followed(store, outcome, at);
    }
    let native = match &rec.bundle.header.native {
        Some(n) => Some(Exec::recorded(
            n,
            &rec.path,
            "run again up to the fork point",
        )?),
        None => None,
    };
    let parent = parent_of(rec, at, edits, false);
    let outcome = follow_then_live(sandbox, store, rec, &rec.case, parent, native, agent, None)?;
    kept_if_followed(store, outcome, at)
}

/// Why `rec` cannot be branched (`--samples`), if it cannot: a native
/// agent's run (a served episode and an MCP session are native runs too).
/// Asked before another agent is compiled.
pub fn samples_refused(rec: &RecordedRun) -> Option<InputError> {
    rec.bundle.header.native.is_some().then(|| {
        InputError::new(
            &rec.path,
            "is a native agent's run: --samples branches a WebAssembly agent's run (fork it once per continuation instead)",
        )
    })
}

/// Why `rec` forks with no other agent than its own, if it does not: a
/// served episode or an MCP session (its client's recorded steps) and a
/// native run (its command). Asked before another agent is compiled.
pub fn other_agent_refused(rec: &RecordedRun) -> Option<InputError> {
    let why = if rederive::rederived(&rec.bundle.header).is_some() {
        "a served episode or an MCP session forks with its client's own recorded steps; --agent names a WebAssembly agent (to take other steps from the fork point of a served episode, `reset` a `worldline serve` session with fork_of)"
    } else if rec.bundle.header.native.is_some() {
        "a native run forks with its own command; --agent names a WebAssembly agent"
    } else {
        return None;
    };
    Some(InputError::new("--agent", why))
}

/// Why `rec` cannot be followed live by the command that `goes` (`fork`,
/// `resume`, `rerun`), if it cannot: its case's provider (or its
/// model-played user's, or its judge's) calls out with an API key whose
/// variable is not set. `run` refuses that before anything runs; a fork,
/// a resume and a live rerun went on without it and recorded the agent's
/// failed model calls. Named at the run: its case is a stored object, not a file the
/// user wrote.
pub fn key_refused(rec: &RecordedRun, goes: &str) -> Option<InputError> {
    let (table, var) = (rec.case.models().into_iter())
        .find_map(|(table, model)| Some((table, model?.missing_key()?)))?;
    Some(InputError::new(
        &rec.path,
        format!(
            "the run's case `{}` has [{table}] api_key_env naming `{var}`, which is not set, and the {goes} goes live at its provider; export {var}=... before the {goes} (the key is never recorded)",
            rec.case.name
        ),
    ))
}

/// A served episode `rec` forked at event `at`, for a `worldline serve`
/// session a client's `reset` begins with `fork_of` (decision 0354): the
/// recorded case, the episode's identity, the options that follow the
/// recording up to `at` (the parent named, no edits: the client's own
/// steps are the change) and the events before `at`.
pub fn served<'a>(store: &'a StoreDir, rec: RecordedRun, at: u64) -> Result<Prefix<'a>> {
    let Some(agent) = openenv::served(&rec.bundle.header).cloned() else {
        return Err(InputError::new(
            &rec.path,
            "is not an episode `worldline serve` recorded: fork it with `worldline fork RUN --at N`",
        )
        .into());
    };
    check::check(store, &rec, at, &[])?;
    let parent = parent_of(&rec, at, Vec::new(), false);
    let opts = options(store, &rec, parent, None);
    Ok(Prefix {
        agent,
        opts,
        events: rec.events()[..at as usize].to_vec(),
        run: rec.id,
        at,
        case: rec.case,
    })
}

/// A fork that departed from the recording before its fork point, or
/// ended before it (an agent that stops early makes no other call: its
/// fork had no event and was taken), is an input error naming where.
fn departed(outcome: &RunOutcome, at: u64) -> Result<()> {
    let (index, how) = match &outcome.divergence {
        Some(d) => (d.index, how(d.class)),
        None if (outcome.events.len() as u64) < at => {
            (outcome.events.len() as u64, "it ended there")
        }
        None => return Ok(()),
    };
    // How it ended, when it ended in error (a native process that exited
    // with status 1 before the call was said to have ended, no more).
    let how = match &outcome.footer.error {
        Some(e) if outcome.divergence.is_none() => {
            format!("{how}: {}", worldline_case::shown::one_line(e))
        }
        Some(e) => format!("{how}; it ended: {}", worldline_case::shown::one_line(e)),
        None => how.to_string(),
    };
    Err(InputError::new(
        "--at",
        format!(
            "the fork's agent departed from the recording at event {index}, before the fork point {at} ({how}); fork at or before {index}, or with an agent that makes the recorded calls up to {at}"
        ),
    )
    .into())
}

/// `worldline ARGS` for the user to type again, with this store's
/// `--store` unless it is the default folder (a suggestion without it
/// read `.worldline`, no store, where the user had named another), each
/// word quoted for a POSIX shell when it needs it.
fn again(store: &StoreDir, args: &[&str]) -> String {
    let name = store.name();
    let mut words = vec!["worldline"];
    words.extend_from_slice(args);
    if name != ".worldline" {
        words.extend(["--store", name.as_str()]);
    }
    // No word holds a NUL, the one thing `shlex` cannot quote.
    shlex::try_join(words.iter().copied()).unwrap_or_else(|_| words.join(" "))
}

/// How an agent departed from the recording it followed, in words.
fn how(class: worldline_runtime::mediate::follow::Class) -> &'static str {
    use worldline_runtime::mediate::follow::Class;
    match class {
        Class::Mismatch => "it made another call there",
        Class::Missing => "it stopped before making the recorded call",
        Class::Extra => "it made a call the recording does not have",
    }
}

/// [`departed`], and a fork that departed is not kept: it is no fork of
/// the run its header names. One that followed is kept ([`kept`]).
fn kept_if_followed(store: &StoreDir, outcome: RunOutcome, at: u64) -> Result<RunOutcome> {
    if let Err(e) = departed(&outcome, at) {
        not_kept(&outcome);
        return Err(e);
    }
    kept(store, outcome)
}

/// A fork or resume that followed its parent, stored (in a database
/// store) and indexed: its run held that back until it was checked
/// ([`RunOptions::kept_once_checked`]).
fn kept(store: &StoreDir, outcome: RunOutcome) -> Result<RunOutcome> {
    if let Some(id) = &outcome.run_id {
        crate::run::publish(store, id, &outcome.header, &outcome.events, &outcome.footer)?;
    }
    Ok(outcome)
}

/// A run that departed from the recording it followed taken out of the
/// store's folder (a database store's working folder, which never stored
/// it): it is no fork, nor resume, of the run its header names.
fn not_kept(outcome: &RunOutcome) {
    if let Some(bundle) = &outcome.bundle {
        let _ = std::fs::remove_file(bundle);
    }
}

/// The model seed of member `i` of a branch of `rec` at event `at`:
/// derived from the run's model seed and the event, distinct per member.
pub fn branch_seed(rec: &RecordedRun, at: u64, i: u64) -> u64 {
    use worldline_runtime::mediate::entropy::derive;
    let h = &rec.bundle.header;
    derive(
        derive(h.model_seed.unwrap_or(h.seed), "branch", at),
        "member",
        i,
    )
}

/// The prefix's fuel (the guest's work up to the fork point) under which
/// following it again in each branch costs less than copying the process
/// per branch: measured on 2026-11-29 (release, quiet), eight branches
/// of a 200-call prefix of 5 million fuel took 41 ms of CPU re-executed
/// and 80 ms copied; of a prefix of ~1.2 billion, 2.5 s and 0.4 s.
const COPY_FROM_FUEL: u64 = 20_000_000;

/// Whether `samples` branches of `rec` at `at` copy the process at the
/// fork point: two or more, and a prefix that costs more to follow again
/// than to copy; `WORLDLINE_BRANCH_REEXECUTE=1` never copies, `=0` always
/// does (when it can).
#[cfg(target_os = "linux")]
fn copies_the_process(rec: &RecordedRun, at: u64, samples: u64) -> bool {
    match std::env::var(server::REEXECUTE).as_deref() {
        Ok("1") => false,
        Ok("0") => true,
        _ => {
            let fuel = at
                .checked_sub(1)
                .and_then(|last| rec.events().get(last as usize))
                .map_or(0, |e| e.fuel);
            samples >= 2 && fuel >= COPY_FROM_FUEL
        }
    }
}

/// The most copies of the process the fork server makes at once
/// (decision 0358, amended): a larger `--samples` is served in chunks of
/// this many, each following the prefix once, so K branches make neither
/// K processes nor K results held at once.
const BRANCHES_AT_ONCE: usize = 32;

/// Said of a fork of `rec` when `rec` ran under older rules than this
/// worldline's: the fork runs under them too (decision 0423).
pub fn rules_note(rec: &RecordedRun) -> Option<String> {
    (rec.rules < rules::CURRENT).then(|| {
        format!(
            "run {} was recorded under rules {}, and its fork runs under them too; this worldline's new runs are under rules {} (fixes that change what a run records: decision 0423), so run the case again to see it under those",
            rec.id,
            rec.rules,
            rules::CURRENT
        )
    })
}

/// What [`branch`] hands its caller as it goes, so that K branches are
/// reported as they are written rather than held until the last.
pub enum Made {
    /// What the caller should know: the edits' notes, the rules the
    /// branches run under ([`rules_note`]), why the process is not copied
    /// at the fork point though it could have been (each branch from here
    /// on follows the prefix itself).
    Note(String),
    /// A branch written to the store (without its events and final
    /// state), in member order, with the model seed it drew from.
    Member { seed: u64, outcome: Box<RunOutcome> },
}

/// `samples` forks of `rec` at event `at`, each with `edits` and the model
/// drawing from its own seed ([`branch_seed`]) from `at` on, recorded as a
/// group whose id is the first member's run id, each handed to `each` once
/// written. The recording is read and the edits checked once. On Linux,
/// for a prefix costly to follow ([`COPY_FROM_FUEL`]), the prefix is
/// followed once and the process copied at the fork point, one copy per
/// branch (decision 0358's fork server, `server.rs`); otherwise, or with
/// `WORLDLINE_BRANCH_REEXECUTE=1`, or when the process cannot be copied
/// safely, each member follows the prefix itself (decision 0355),
/// answered from the log. Both write the same bundles. A SIGINT or
/// SIGTERM its caller catches ([`crate::native::Interrupt`]) starts no
/// more branches (nor chunks); those under way end and are written whole.
/// Returns how many times the prefix was followed: once per chunk of the
/// fork server's, else once per branch.
#[allow(clippy::too_many_arguments)]
pub fn branch(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    at: u64,
    edits: Vec<Edit>,
    agent: Option<Arc<Agent>>,
    samples: u64,
    each: &mut dyn FnMut(Made) -> Result<()>,
) -> Result<u64> {
    let notes = check::check(store, rec, at, &edits)?;
    let edits = shaped(rec, at, edits);
    if let Some(refused) = samples_refused(rec) {
        return Err(refused.into());
    }
    for note in notes.into_iter().chain(rules_note(rec)) {
        each(Made::Note(note))?;
    }
    let agent = match agent {
        Some(a) => a,
        None => recorded_agent(sandbox, store, rec)?,
    };
    let seeds: Vec<u64> = (0..samples).map(|i| branch_seed(rec, at, i)).collect();
    let mut written = Written::default();
    #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
    let mut replayed = 0;
    #[cfg(target_os = "linux")]
    if copies_the_process(rec, at, samples) {
        // At most `BRANCHES_AT_ONCE` copies live at a time, each chunk
        // following the prefix once: K branches never make K processes.
        for chunk in seeds.chunks(BRANCHES_AT_ONCE) {
            if crate::native::signals::received() {
                return Ok(replayed);
            }
            let chunk = server::Chunk {
                seeds: chunk,
                first: written.made as u64,
                size: samples,
                id: written.id.clone(),
            };
            match server::serve(sandbox, store, rec, at, &edits, &agent, &chunk)? {
                server::Served::Branched(outcomes) => {
                    replayed += 1;
                    for outcome in outcomes {
                        written.hand(each, &seeds, outcome)?;
                    }
                }
                server::Served::Refused(why) => {
                    each(Made::Note(format!(
                        "each branch follows the prefix itself: the process was not copied at the fork point: {why}"
                    )))?;
                    break;
                }
            }
        }
    }
    while written.made < seeds.len() && !crate::native::signals::received() {
        let i = written.made;
        let mut member = edits.clone();
        member.push(Edit::Reseed {
            model_seed: seeds[i],
        });
        let parent = parent_of(rec, at, member, false);
        let group = worldline_log::log::bundle::Group {
            id: written.id.clone(),
            member: i as u64,
            size: samples,
        };
        let outcome = follow_then_live(
            sandbox,
            store,
            rec,
            &rec.case,
            parent,
            None,
            Some(agent.clone()),
            Some(group),
        )?;
        let outcome = kept_if_followed(store, outcome, at)?;
        replayed += 1;
        // Written: handed on without its events and final state.
        written.hand(
            each,
            &seeds,
            RunOutcome {
                events: Default::default(),
                final_state: Default::default(),
                ..outcome
            },
        )?;
    }
    Ok(replayed)
}

/// The branches [`branch`] has written so far: how many, and the group's
/// id (its first member's run).
#[derive(Default)]
struct Written {
    made: usize,
    id: Option<String>,
}

impl Written {
    /// Hand the next member on, with the seed it drew from.
    fn hand(
        &mut self,
        each: &mut dyn FnMut(Made) -> Result<()>,
        seeds: &[u64],
        outcome: RunOutcome,
    ) -> Result<()> {
        if self.id.is_none() {
            self.id.clone_from(&outcome.run_id);
        }
        let seed = seeds[self.made];
        self.made += 1;
        each(Made::Member {
            seed,
            outcome: Box::new(outcome),
        })
    }
}

/// Resume `rec`: a new run that follows its whole recording (no model call
/// sent again, every tool answered and every write made as recorded) and
/// goes on live from the first call the recording does not hold, with the
/// case's limits raised by `raised`. The run records its parent with
/// `resumed` and the event it went live at. A run that ended by itself
/// has nothing to resume; one stopped at a limit resumes with that limit
/// raised. A run killed inside a call of a tool that may write resumes
/// only with `resend_in_flight` (the call is made again); a model call in
/// flight is sent again (it has no effect), and named in the parent.
pub fn resume(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    raised: &BTreeMap<String, u64>,
    resend_in_flight: bool,
) -> Result<RunOutcome> {
    if store.being_recorded(&rec.path) {
        return Err(InputError::new(
            &rec.path,
            "is still being recorded by a process that has not ended (it has no footer yet because it is running): resume continues a run that was killed or stopped at a limit; let it end, or stop it and resume it then",
        )
        .into());
    }
    let limits = &rec.case.limits;
    let raisable = limits.raisable();
    for (name, &value) in raised {
        let now = (raisable.iter())
            .find(|(n, _)| n == name)
            .and_then(|&(_, now)| now);
        let flag = format!("--{}", name.replace('_', "-"));
        // A run carries no limit a case could not state (the case's range
        // was checked against the store's object, and named it).
        if let Some(most) = worldline_case::case::limits::most(name).filter(|&m| value > m) {
            return Err(InputError::new(
                &flag,
                format!(
                    "{value} is past {most}, the most a case's [limits] {name} may be; give at most that"
                ),
            )
            .into());
        }
        // No limit is no limit at all: any number lowers it (the run was
        // cut inside the prefix it follows, and said it resumed).
        if now.is_none() && matches!(name.as_str(), "max_steps" | "max_errors") {
            return Err(InputError::new(
                &flag,
                format!(
                    "{value} does not raise the run's {name}: it has none (no limit); leave {flag} out"
                ),
            )
            .into());
        }
        if now.is_some_and(|now| value <= now) {
            return Err(InputError::new(
                flag,
                format!(
                    "{value} does not raise the run's {name} ({}); give a larger value",
                    now.unwrap_or(0)
                ),
            )
            .into());
        }
    }
    if let Some(footer) = &rec.bundle.footer {
        let needs = |name: &str, limit: String| -> Result<()> {
            if raised.contains_key(name) {
                return Ok(());
            }
            Err(InputError::new(
                &rec.path,
                format!(
                    "stopped at its {limit}; resuming it with the same limit would stop at the same place: pass --{} with a larger value",
                    name.replace('_', "-")
                ),
            )
            .into())
        };
        use worldline_log::log::Status;
        match footer.status {
            Status::OutOfFuel => needs("fuel", format!("fuel ([limits] fuel = {})", limits.fuel))?,
            Status::StepLimit => needs(
                "max_steps",
                format!(
                    "step limit ([limits] max_steps = {})",
                    limits.max_steps.unwrap_or(0)
                ),
            )?,
            Status::ErrorLimit => needs(
                "max_errors",
                format!(
                    "error limit ([limits] max_errors = {})",
                    limits.max_errors.unwrap_or(0)
                ),
            )?,
            Status::Trapped if footer.events >= limits.max_events => needs(
                "max_events",
                format!("event limit ([limits] max_events = {})", limits.max_events),
            )?,
            Status::Timeout => needs(
                "timeout_ms",
                format!("time limit ([limits] timeout_ms = {})", limits.timeout_ms),
            )?,
            // Stopped from outside (a signal to worldline): taken up
            // where it ended, as a killed run is.
            Status::Trapped if !footer.replayable => {}
            status => {
                return Err(InputError::new(
                    &rec.path,
                    format!(
                        "ended `{}` by itself: there is nothing to resume (resume continues a run that was killed or stopped at a limit; `worldline fork RUN --at N` changes a finished run's course)",
                        status.as_str()
                    ),
                )
                .into());
            }
        }
    }
    if let Some(refused) = key_refused(rec, "resume") {
        return Err(refused.into());
    }
    let native = match &rec.bundle.header.native {
        Some(n) => Some(Exec::recorded(
            n,
            &rec.path,
            "start again and follow to where it ended",
        )?),
        None => None,
    };
    let in_flight = rec.bundle.in_flight.clone();
    if let Some(tool) = in_flight.as_ref().and_then(|i| i.tool.as_ref())
        && !resend_in_flight
    {
        return Err(InputError::new(
            &rec.path,
            format!(
                "was killed inside a call of tool `{tool}` (event {}), which may write: resuming calls it again. `{}` calls it again (its writes were not recorded, so the world has none of them), or fork the run at an earlier event",
                rec.event_count(),
                again(store, &["resume", &rec.id, "--resend-in-flight"]),
            ),
        )
        .into());
    }
    let mut case = rec.case.clone();
    case.override_limits(raised)?;
    let at = rec.event_count() as u64;
    let mut parent = parent_of(rec, at, Vec::new(), true);
    parent.in_flight = in_flight;
    let outcome = follow_then_live(sandbox, store, rec, &case, parent, native, None, None)?;
    // An agent that no longer makes the recorded calls resumes nothing:
    // the run it made is no resume of this one (kept, it stood for one:
    // `test --resume` took the killed run as resumed), and the mistake is
    // the input's (it was an internal error, exit 4, naming no run).
    if let Some(d) = &outcome.divergence {
        not_kept(&outcome);
        let diff = crate::replay::json_diff(&d.expected, &d.actual);
        let first = diff.first().map_or(String::new(), |l| format!(" ({l})"));
        return Err(InputError::new(
            &rec.path,
            format!(
                "the resumed agent departed from the recording at event {} of the {at} it holds: {}{first}; resume it with the agent and inputs that recorded it, or fork it with this agent at or before event {} (`{}`)",
                d.index,
                how(d.class),
                d.index,
                again(store, &["fork", &rec.id, "--at", &d.index.to_string()]),
            ),
        )
        .into());
    }
    kept(store, outcome)
}

/// The parent record of a fork or resume of `rec` at `at`.
fn parent_of(rec: &RecordedRun, at: u64, edits: Vec<Edit>, resumed: bool) -> Parent {
    let chain_hash = rec.bundle.footer.as_ref().map_or_else(
        || {
            rec.events()
                .last()
                .map_or_else(String::new, |e| e.hash.clone())
        },
        |f| f.chain_hash.clone(),
    );
    let earlier: Vec<ForkPoint> = rec
        .bundle
        .header
        .parent
        .as_ref()
        .map(|p| {
            p.fork_points()
                .into_iter()
                .filter(|fp| fp.event < at)
                .collect()
        })
        .unwrap_or_default();
    Parent {
        run: rec.id.clone(),
        chain_hash,
        event: at,
        edits,
        earlier,
        resumed,
        in_flight: None,
        counted: true,
    }
}

/// The options of a fork of `rec` that follows its recording up to the
/// parent's event, then goes live; `group`: a branch's member.
fn options<'a>(
    store: &'a StoreDir,
    rec: &RecordedRun,
    parent: Parent,
    group: Option<worldline_log::log::bundle::Group>,
) -> RunOptions<'a> {
    let following = Following::fork(rec.held(), rec.rules, parent.event, parent.fork_points());
    RunOptions {
        store: Some(store),
        following: Some(following),
        parent: Some(parent),
        faults: rec.bundle.header.fuzz.clone(),
        model_seed: rec.bundle.header.model_seed,
        group,
        // Hashed as the parent was, so the prefix is the parent's, hashes
        // included (decision 0345).
        chain: rec.bundle.chain,
        ..RunOptions::default()
    }
}

/// A fork's prefix followed by `agent`: when it is another build than
/// the run's, its fuel is its own and not compared.
pub(super) fn taken_by(opts: &mut RunOptions, rec: &RecordedRun, agent: &Agent) {
    if let Some(f) = opts.following.as_mut() {
        f.other_agent = agent.sha256 != rec.bundle.header.agent_sha256;
    }
}

/// Run `rec`'s agent (or `agent`, or its native process) on `case`,
/// following the recording up to the parent's event, then live; `group`:
/// a branch's member.
#[allow(clippy::too_many_arguments)]
fn follow_then_live(
    sandbox: &Sandbox,
    store: &StoreDir,
    rec: &RecordedRun,
    case: &worldline_case::case::Case,
    parent: Parent,
    native: Option<Exec>,
    agent: Option<Arc<Agent>>,
    group: Option<worldline_log::log::bundle::Group>,
) -> Result<RunOutcome> {
    let mut opts = RunOptions {
        kept_once_checked: true,
        ..options(store, rec, parent, group)
    };
    if let Some(agent) = &agent {
        taken_by(&mut opts, rec, agent);
    }
    Ok(match (&native, agent) {
        (Some(exec), _) => crate::native::exec::run(sandbox, case, opts, exec)?,
        (None, Some(agent)) => run_with(sandbox, &agent, case, opts)?,
        (None, None) => {
            let agent = recorded_agent(sandbox, store, rec)?;
            run_with(sandbox, &agent, case, opts)?
        }
    })
}
