//! `worldline mcp CASE`: the case's world served to one MCP client, over
//! stdio or Streamable HTTP on a loopback address. The run begins when the
//! server starts and ends when the client disconnects (end of stdin, or
//! DELETE of its HTTP session, or its session idle past `--idle-timeout`),
//! on SIGINT or SIGTERM, or when the mediator stops it (a step or error
//! limit); then it is graded. Over HTTP only `/mcp` is served.

use super::loopback::{self, Loopback};
use super::session::{self, Exit, Handle};
use super::{signals, stdio};
use crate::run::{RunOptions, RunOutcome};
use anyhow::Result;
use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::os::fd::AsFd as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use worldline_case::case::Case;
use worldline_log::log::bundle::NativeAgent;
use worldline_runtime::sandbox::Sandbox;

/// How often a waiting session looks at the signal flag.
const POLL: Duration = Duration::from_millis(25);

/// How long the answers to the requests a stopped run left are waited on.
const ANSWERS_WITHIN: Duration = Duration::from_secs(5);

/// Where the client connects.
pub enum Transport {
    Stdio,
    /// Streamable HTTP on a loopback listener, bound by the caller before
    /// anything is written (a port in use leaves no run behind).
    Http {
        listener: std::net::TcpListener,
        /// `--idle-timeout`: the open session is ended (a disconnect) once
        /// it sends nothing for this long.
        idle: Duration,
    },
}

/// Serve `case` to one MCP client over `transport` and return the run.
/// `listening` is told the HTTP address once the server accepts, and
/// `idled` the idle timeout when it ended the session.
pub fn serve(
    sandbox: &Sandbox,
    case: &Case,
    mut opts: RunOptions,
    transport: Transport,
    listening: impl FnOnce(SocketAddr),
    idled: impl FnOnce(Duration),
) -> Result<RunOutcome> {
    // The client is not started by worldline, so no `resume` can make its
    // reads again after a kill: each is written as it gets it (decision
    // 0416).
    opts.each_line = true;
    let name = match transport {
        Transport::Stdio => "mcp-stdio",
        Transport::Http { .. } => "mcp-http",
    };
    let agent = NativeAgent {
        transport: name.into(),
        command: Vec::new(),
        pass_env: Vec::new(),
        output_file: None,
        network: None,
    };
    super::load_service(sandbox, case)?;
    let header = super::header(sandbox, case, agent);
    let (handle, receiver) = session::channel();
    signals::catch();
    std::thread::scope(|s| {
        let mediator = s.spawn(|| session::mediate(sandbox, case, header, opts, receiver));
        let served = match transport {
            Transport::Stdio => {
                over_stdio(&handle);
                Ok(())
            }
            Transport::Http { listener, idle } => over_http(&handle, listener, idle, listening)
                .map(|ended_idle| {
                    if ended_idle {
                        idled(idle);
                    }
                }),
        };
        handle.end(Exit::disconnected());
        let outcome = mediator
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the mediator thread panicked")));
        served.and(outcome)
    })
}

/// Serve stdin/stdout on a thread of its own (a read of stdin cannot be
/// interrupted) until input ends, a signal arrives, or the run stops.
fn over_stdio(handle: &Handle) {
    let (done, finished) = std::sync::mpsc::channel();
    let h = handle.clone();
    // Answers go out through a descriptor of this thread's own, not the
    // process's buffered stdout: an answer the client's closed end refused
    // stays in that buffer, and the report (written to stdout once it is
    // stderr) would flush it out ahead of itself; a thread still waiting
    // on stdin could also hold stdout's lock past the session's end.
    let out = std::io::stdout().as_fd().try_clone_to_owned();
    let busy = std::sync::Arc::new(AtomicBool::new(false));
    let answering = busy.clone();
    std::thread::spawn(move || {
        // A client that closes its end ends the session, not the process.
        signals::hold_sigpipe_on_this_thread();
        let input = std::io::stdin().lock();
        let _ = match out {
            Ok(out) => stdio::serve(&h, input, BufWriter::new(File::from(out)), &answering),
            Err(_) => stdio::serve(&h, input, std::io::stdout().lock(), &answering),
        };
        let _ = done.send(());
    });
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(POLL) {
        if signals::received() {
            break;
        }
        if handle.stopped() {
            // The request that stopped the run, and those read after it,
            // are still to be answered with why (a client that reads
            // nothing more is not waited on past the bound).
            if busy.load(Ordering::SeqCst) {
                let _ = finished.recv_timeout(ANSWERS_WITHIN);
            }
            break;
        }
    }
}

/// Serve Streamable HTTP on `listener` until the client ends its session,
/// it sends nothing for `idle` (then `true`), a signal arrives, or the run
/// stops.
fn over_http(
    handle: &Handle,
    listener: std::net::TcpListener,
    idle: Duration,
    listening: impl FnOnce(SocketAddr),
) -> Result<bool> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()?;
    rt.block_on(async {
        listener.set_nonblocking(true)?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let bound = listener.local_addr()?;
        let lb = Loopback::mcp_only(handle.clone(), bound.port(), idle);
        listening(bound);
        let ended = lb.clone();
        let h = handle.clone();
        let idled = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let said = idled.clone();
        super::listen::serve(listener, loopback::router(lb), async move {
            tokio::select! {
                _ = ended.closed.notified() => {}
                _ = until(|| ended.idle()) => said.store(true, std::sync::atomic::Ordering::SeqCst),
                _ = until(move || signals::received() || h.stopped()) => {}
            }
        })
        .await;
        Ok(idled.load(std::sync::atomic::Ordering::SeqCst))
    })
}

/// Resolves once `done` holds (polled).
async fn until(done: impl Fn() -> bool) {
    while !done() {
        tokio::time::sleep(POLL).await;
    }
}
