//! [`HostServices`]: everything that answers host calls in one run (the world
//! session, the virtual clock, the seeded entropy, the bounded stdio, the
//! model, the world's service component, the conversation). The mediator
//! and the interface modules under `mediate/` reach the parts; from
//! outside, a run configures them through the few methods here and takes
//! what they leave with [`HostServices::finish`].
//!
//! Why the parts are visible to `mediate/` only and a run uses a few named
//! methods (was decision 0292): an all-public bag was finished from outside
//! (the run and the gold state set fields of the model, the clock and the world
//! session directly), so what a run may change about its services was written
//! down nowhere; getters and setters for every part would put dozens of
//! accessors between the interface modules and the parts, and a builder does
//! not fit a run that sets each part up conditionally.

use super::faults::Faults;
use super::service::{Runtime, run_tool};
use super::{WorldSession, clock, conversation, entropy, model, stdio};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use worldline_case::case::Case;
use worldline_case::time;
use worldline_case::world::World;
use worldline_case::world::state::State;
use worldline_case::world::tools::{AsOf, Tool, ToolFailure};

/// Everything that answers host calls.
pub struct HostServices {
    pub(in crate::mediate) world: WorldSession,
    pub(in crate::mediate) clock: clock::VirtualClock,
    pub(in crate::mediate) entropy: entropy::Entropy,
    pub(in crate::mediate) stdio: stdio::Stdio,
    pub(in crate::mediate) env: worldline_case::case::Env,
    pub(in crate::mediate) model: model::ModelService,
    /// The world's service, when it has one (see [`HostServices::attach_service`]).
    pub(in crate::mediate) service: Option<Runtime>,
    pub(in crate::mediate) conversation: conversation::Conversation,
    /// The run was stopped from outside it (a signal to worldline): where
    /// it ended is the wall clock's, as a watchdog's stop is.
    pub(in crate::mediate) stopped: bool,
    /// Why a served episode ended without its client's `end`
    /// ([`HostServices::truncated`]).
    pub(in crate::mediate) truncated: Option<String>,
    /// The rules the run runs under ([`Mediator::set_following`](super::Mediator::set_following),
    /// decision 0423).
    pub(in crate::mediate) rules: u32,
}

/// Why a call outside the log (a gold call) failed.
pub enum Unrecorded {
    /// The tool's own failure.
    Tool(ToolFailure),
    /// The machine could not make the world's service an instance: in
    /// words (`Stop::Host`'s).
    Machine(String),
}

/// What a run's services leave when it ends.
pub struct Leftover {
    /// The world's final state.
    pub state: State,
    pub stdout: String,
    pub stderr: String,
    /// Output bytes past the case's limit, dropped.
    pub truncated_bytes: u64,
    /// Stopped from outside the run ([`HostServices::stopped_from_outside`]).
    pub stopped: bool,
    /// Why a served episode ended without its client's `end`, if it did.
    pub truncated: Option<String>,
}

impl HostServices {
    /// The services of a run of `case`, each at its start.
    pub fn new(case: &Case) -> Self {
        let world = case.world.clone();
        let state = world.initial.clone();
        let inject = case.inject.clone();
        HostServices {
            world: WorldSession {
                world,
                state,
                case_permissions: case.permissions.clone(),
                inject_seen: vec![0; inject.len()],
                inject,
                faults: None,
                counted_denials: Vec::new(),
                before_denials: None,
            },
            clock: clock::VirtualClock::new(case.clock_ns, case.limits.tick_us * 1_000),
            entropy: entropy::Entropy::new(case.seed),
            stdio: stdio::Stdio::new(case.limits.stdout_bytes),
            env: case.env.clone(),
            model: model::ModelService::new(
                &case.model,
                case.seed,
                std::time::Duration::from_millis(case.limits.timeout_ms),
                case.path.parent().unwrap_or(Path::new(".")),
            ),
            service: None,
            conversation: conversation::Conversation::new(case),
            stopped: false,
            truncated: None,
            rules: worldline_log::log::rules::CURRENT,
        }
    }

    /// The virtual wall-clock time as RFC 3339 text: from rules 9 with
    /// the seconds' fraction in nine digits, so such texts sort as times.
    pub fn now_text(&self) -> String {
        self.time_text(self.clock.wall_ns())
    }

    /// A time (Unix nanoseconds) as a tool writes it under the run's
    /// rules: its `$now`, a stale answer's.
    pub(in crate::mediate) fn time_text(&self, unix_ns: i128) -> String {
        use worldline_log::log::rules;
        if self.rules >= rules::NOW_WITH_NINE_FRACTION_DIGITS {
            time::rfc3339_nine_digits(unix_ns)
        } else {
            time::rfc3339(unix_ns)
        }
    }

    /// A tool's answer now, under the run's rules.
    pub(in crate::mediate) fn as_of_now(&self) -> AsOf {
        use worldline_log::log::rules;
        AsOf {
            times: self.rules >= rules::TIMESTAMPS_EQUAL_AS_TIMES,
            limits: self.rules >= rules::QUERY_LIMIT_DEFAULT_AND_CHECKED,
            fresh_keys: self.rules >= rules::COUNT_KEYS_PASS_OVER_TAKEN,
            exact: self.rules >= rules::INTEGERS_ORDERED_EXACTLY,
            lax_numbers: self.rules >= rules::LAX_NUMBERS_AS_PYDANTIC,
            ..AsOf::now(self.now_text())
        }
    }

    /// The world the run is in.
    pub fn world(&self) -> &Arc<World> {
        &self.world.world
    }

    /// The world's state as the calls so far left it.
    pub fn state(&self) -> &State {
        &self.world.state
    }

    /// Answer the world's `op = "service"` tools with its component.
    pub fn attach_service(&mut self, runtime: Runtime) {
        self.service = Some(runtime);
    }

    /// Answer model calls from an earlier run's answers first (a rerun).
    pub fn follow_cassette(&mut self, cassette: model::RerunCassette) {
        self.model.cassette = Some(cassette);
    }

    /// Seed the scripted model's weighted alternatives (default: the case
    /// seed).
    pub fn seed_model(&mut self, seed: u64) {
        self.model.set_seed(seed);
    }

    /// Let a `recorded` model provider find answers in the store's runs
    /// (`own`: this run's bundle, which holds none).
    pub fn find_recordings_in(&mut self, runs: PathBuf, own: Option<PathBuf>) {
        self.model.use_store(runs, own);
    }

    /// A fuzz run's faults: the world's tools get theirs at each call, and
    /// the agent's clock its skew.
    pub fn inject_faults(&mut self, faults: Faults) {
        self.clock.skew_ns = i128::from(faults.skew_s().unwrap_or(0)) * 1_000_000_000;
        self.world.faults = Some(faults);
    }

    /// What the guest wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stdio.stderr.text()
    }

    /// Keep what a native process wrote (captured outside the sandbox, at
    /// most the case's cap; `dropped` bytes past it) as a guest's output
    /// is kept; its stderr as captured, the tail of what it dropped
    /// included (`stdio::with_tail`).
    pub fn keep_output(&mut self, stdout: &[u8], stderr: &[u8], dropped: u64) {
        self.stdio.stdout.push(stdout);
        self.stdio.stderr.bytes = stderr.to_vec();
        self.stdio.stdout.dropped += dropped;
    }

    /// Run `tool` outside the log (a gold call): at the next tick, its
    /// writes applied to the state.
    pub fn call_unrecorded(&mut self, tool: &Tool, args: &Value) -> Result<(), Unrecorded> {
        self.clock.tick();
        let as_of = self.as_of_now();
        let ran = run_tool(self, tool, args, &as_of).result;
        // A service the machine could not instantiate is the machine's
        // failure, not the call's (`Stop::Host`'s words).
        if let Some(why) = (self.service.as_mut()).and_then(|s| s.host_failed.take()) {
            return Err(Unrecorded::Machine(super::Stop::Host(why).to_string()));
        }
        let (_, writes) = ran.map_err(Unrecorded::Tool)?;
        writes.iter().for_each(|w| self.world.state.apply(w));
        Ok(())
    }

    /// The run was stopped from outside it (a native run a signal to
    /// worldline ended): it is recorded as not replayable, so a replay
    /// follows it to where it ended, as a killed run's, and `resume` takes
    /// it up there.
    pub fn stopped_from_outside(&mut self) {
        self.stopped = true;
    }

    /// A served episode ended without its client's `end` (the connection
    /// closed or went idle, the server stopped, a reset began another):
    /// `why`, for the footer, so a trainer does not take a cut episode's
    /// grade for where its agent meant to stop.
    pub fn truncated(&mut self, why: String) {
        self.truncated = Some(why);
    }

    /// The final state and the guest's output.
    pub fn finish(self) -> Leftover {
        Leftover {
            stopped: self.stopped,
            truncated: self.truncated,
            stdout: self.stdio.stdout.text(),
            stderr: self.stdio.stderr.text(),
            truncated_bytes: self.stdio.stdout.dropped + self.stdio.stderr.dropped,
            state: self.world.state,
        }
    }
}
