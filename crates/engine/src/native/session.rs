//! A native agent's session: one thread owns the run's mediator (begun by
//! `run::begin`) and answers the requests the transports hand it, one at
//! a time in the order they arrive. When the transport ends the session
//! (the client disconnected, the process exited, a signal) or the
//! mediator stops the run (a step, error or event limit, a replay that
//! diverged), the run is graded and its footer written.

use crate::run::{self, Ending, RunOptions, RunOutcome};
use anyhow::Result;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use tokio::sync::oneshot;
use worldline_log::log::Status;
use worldline_protocol::HttpResponse;
use worldline_runtime::mediate::RunState;
use worldline_runtime::sandbox::Sandbox;

/// One request's work on the mediator: an answer, `None` for a stall.
pub type Job = Box<dyn FnOnce(&mut RunState) -> wasmtime::Result<Option<HttpResponse>> + Send>;

/// What a job came back with.
pub enum Reply {
    Answered(Option<HttpResponse>),
    /// The run was stopped (by this request or an earlier one): why.
    Stopped(String),
}

/// How the agent's side ended, as the transport saw it.
pub struct Exit {
    pub status: Status,
    pub output: Option<String>,
    pub error: Option<String>,
    /// The process's captured output (empty for an MCP client).
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes of stdout and stderr past the limit, dropped.
    pub dropped: u64,
    /// Stopped by a signal to worldline, not ended by itself.
    pub signalled: bool,
    /// Why a served episode ended without its client's `end`, if it did.
    pub truncated: Option<String>,
}

impl Exit {
    /// An MCP client that went away (or a signal that ended the session).
    pub fn disconnected() -> Self {
        Exit {
            status: Status::Completed,
            output: None,
            error: None,
            stdout: Vec::new(),
            stderr: Vec::new(),
            dropped: 0,
            signalled: false,
            truncated: None,
        }
    }

    /// A served episode its client did not end, and why.
    pub fn truncated(why: String) -> Self {
        Exit {
            truncated: Some(why),
            ..Exit::disconnected()
        }
    }
}

enum Msg {
    Call(Job, oneshot::Sender<Reply>),
    End(Exit),
}

/// The transports' side of a session: cheap to clone.
#[derive(Clone)]
pub struct Handle {
    tx: mpsc::Sender<Msg>,
    stopped: Arc<AtomicBool>,
}

impl Handle {
    /// Hand `job` to the mediator and wait for its answer.
    pub async fn call(&self, job: Job) -> Reply {
        match self.send(job) {
            Ok(rx) => rx
                .await
                .unwrap_or_else(|_| Reply::Stopped("the run has ended".into())),
            Err(r) => r,
        }
    }

    /// [`call`](Self::call) from a thread outside the async runtime.
    pub fn call_blocking(&self, job: Job) -> Reply {
        match self.send(job) {
            Ok(rx) => rx
                .blocking_recv()
                .unwrap_or_else(|_| Reply::Stopped("the run has ended".into())),
            Err(r) => r,
        }
    }

    fn send(&self, job: Job) -> Result<oneshot::Receiver<Reply>, Reply> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Msg::Call(job, tx))
            .map_err(|_| Reply::Stopped("the run has ended".into()))?;
        Ok(rx)
    }

    /// Whether the mediator stopped the run (the transport should end it).
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// End the session with how the agent's side ended.
    pub fn end(&self, exit: Exit) {
        let _ = self.tx.send(Msg::End(exit));
    }
}

/// A session's two ends: the handle for the transports and the receiver
/// [`mediate`] serves.
pub fn channel() -> (Handle, Receiver) {
    let (tx, rx) = mpsc::channel();
    let stopped = Arc::new(AtomicBool::new(false));
    (
        Handle {
            tx,
            stopped: stopped.clone(),
        },
        Receiver { rx, stopped },
    )
}

/// The mediator's end of a session.
pub struct Receiver {
    rx: mpsc::Receiver<Msg>,
    stopped: Arc<AtomicBool>,
}

/// Begin the run, serve the session's jobs until it ends, and finish the
/// run. Runs on a thread of its own.
pub fn mediate(
    sandbox: &Sandbox,
    case: &worldline_case::case::Case,
    header: worldline_log::log::Header,
    mut opts: RunOptions,
    session: Receiver,
) -> Result<RunOutcome> {
    // However the session ends, its transports stop waiting.
    let _stopping = StopOnDrop(&session.stopped);
    // The agent's identity document is an object of the store, as a
    // component's bytes are.
    if let (Some(store), Some(agent)) = (opts.store, &header.native) {
        store.put_object(worldline_case::canon::to_string(agent).as_bytes())?;
    }
    let begun = run::begin(sandbox, header, case, &mut opts)?;
    let mut state = RunState::outside_sandbox(begun.med);
    let mut stop: Option<Ending> = None;
    let exit = loop {
        match session.rx.recv() {
            Ok(Msg::Call(job, reply)) => {
                if let Some((_, _, why, _)) = &stop {
                    let _ = reply.send(Reply::Stopped(why.clone().unwrap_or_default()));
                    continue;
                }
                let answer = match job(&mut state) {
                    Ok(r) => Reply::Answered(r),
                    Err(err) => {
                        let ending = run::classify(&err, "")
                            .map_err(|e| begun.opened.write_error(opts.store, e))?;
                        let why = ending.2.clone().unwrap_or_default();
                        stop = Some(ending);
                        session.stopped.store(true, Ordering::SeqCst);
                        Reply::Stopped(why)
                    }
                };
                let _ = reply.send(answer);
            }
            Ok(Msg::End(exit)) => break exit,
            Err(_) => break Exit::disconnected(),
        }
    };
    state
        .med
        .services
        .keep_output(&exit.stdout, &exit.stderr, exit.dropped);
    if exit.signalled {
        state.med.services.stopped_from_outside();
    }
    if let Some(why) = exit.truncated {
        state.med.services.truncated(why);
    }
    let ending = stop.unwrap_or((exit.status, exit.output, exit.error, Vec::new()));
    run::finish(case, begun.opened, state.med, ending, 0, &opts)
}

/// Marks the session stopped when the mediator returns, error or not.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
