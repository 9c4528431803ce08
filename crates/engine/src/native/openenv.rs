//! `worldline serve`: cases served as OpenEnv environments (decision
//! 0351), to the protocol `openenv-core` 0.3.0's `EnvClient` speaks: one
//! WebSocket (`/ws`) per client, JSON messages `{"type": "reset" | "step"
//! | "state" | "close", "data"}` answered `{"type": "observation" |
//! "state" | "error", "data"}`, and `GET /health`.
//!
//! Each `reset` begins a session: a run of the named case (and seed) with
//! a mediator of its own on a thread of its own, written to the store like
//! any run, so sessions share nothing. A `step` is one action, as
//! OpenEnv's MCP environments type them: `call_tool` (one mediated tool
//! call: injections, faults, permissions and recording as always) or
//! `list_tools`; `end` (worldline's) ends the episode. The episode also
//! ends when the mediator stops the run (a limit), on the next `reset`, on
//! `close` and when the client goes away; the run is then graded, and the
//! last observation carries `done`, the reward and the checks.
//! Connections (so sessions), message sizes and idle time are bounded.
//! A `reset` with `fork_of: {run, at}` begins the session from a recorded
//! episode's first `at` events instead of the case's start (decision
//! 0354): the prefix is sent again through the mediator, which follows
//! the recording, and the client's steps go on live from there.

use super::rederive::{self, Message as McpMessage};
use super::session::{self, Exit, Handle, Reply};
use crate::run::{RunOptions, RunOutcome};
use anyhow::Result;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use worldline_case::case::Case;
use worldline_case::error::InputError;
use worldline_log::log::bundle::{EPISODE_ID_MAX, NativeAgent};
use worldline_runtime::mediate::boundary::Via;
use worldline_runtime::sandbox::Sandbox;
use worldline_store::store::StoreDir;

/// The largest message a client may send.
pub const MAX_MESSAGE: usize = 1 << 20;

/// What is served, and to how many at once.
pub struct Served {
    pub sandbox: &'static Sandbox,
    pub store: &'static StoreDir,
    /// The cases a `reset` may name, each with the name `test` gives it
    /// (`incident/close-denied`: [`distinct_names`](crate::suite::pick::distinct_names)).
    pub cases: Vec<(String, Case)>,
    /// Sessions (WebSocket connections) at once; more are refused with
    /// OpenEnv's `CAPACITY_REACHED`.
    pub max_sessions: usize,
    /// A connection that sends nothing for this long is closed (its
    /// episode ended and graded), so an idle client holds no slot forever.
    pub idle: Duration,
    /// Opens a recorded episode of the store forked at an event, for a
    /// `reset` with `fork_of` (the fork layer makes it: `fork::served`).
    pub fork: Forker,
}

impl Served {
    /// The served cases' names, for a refusal to list.
    fn names(&self) -> String {
        let names: Vec<&str> = self.cases.iter().map(|(n, _)| n.as_str()).collect();
        names.join(", ")
    }

    /// The served case a reset names: by its served name, or by its file
    /// name when that names one case alone (`close-denied` for
    /// `incident/close-denied`); why not, when it names none or several.
    fn named(&self, name: &str) -> Result<&(String, Case), String> {
        if let Some(c) = self.cases.iter().find(|(n, _)| n == name) {
            return Ok(c);
        }
        let bare: Vec<&(String, Case)> = (self.cases.iter())
            .filter(|(_, c)| c.name == name)
            .collect();
        match bare[..] {
            [one] => Ok(one),
            [] => Err(format!(
                "reset names no served case: pass `case`, one of {}",
                self.names()
            )),
            _ => Err(format!(
                "`{name}` names {} served cases: pass one of {}",
                bare.len(),
                bare.iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// Makes the [`Prefix`] of run `run` (an id or unique prefix) at event `at`.
pub type Forker = Box<dyn Fn(&str, u64) -> Result<Prefix<'static>> + Send + Sync>;

/// A recorded episode forked at an event, ready to begin a session from.
pub struct Prefix<'a> {
    /// The recorded case, and the episode's recorded identity.
    pub case: Case,
    pub agent: NativeAgent,
    /// The run's options: following the recording up to the fork point,
    /// its parent named.
    pub opts: RunOptions<'a>,
    /// The recorded events before the fork point, as read held (decision
    /// 0380): the client's steps are sent again from them, and a model
    /// call's request is what it appended (no step is made from one).
    pub events: Vec<worldline_log::log::Event>,
    /// The run forked, by its full id, and the event.
    pub run: String,
    pub at: u64,
}

/// The transport a served episode records.
const TRANSPORT: &str = "openenv";

/// A run's recorded identity if `worldline serve` recorded it.
pub fn served(header: &worldline_log::log::Header) -> Option<&NativeAgent> {
    header.native.as_ref().filter(|a| a.transport == TRANSPORT)
}

struct Shared {
    served: Served,
    slots: Arc<Semaphore>,
    /// The port listened on, which a request's `Host` names.
    port: u16,
    /// Becomes `true` once SIGINT or SIGTERM has come: one task polls the
    /// signal flag, and the server and each connection wait on this.
    stop: tokio::sync::watch::Receiver<bool>,
}

/// Serve on `addr` until SIGINT or SIGTERM; `listening` is told the
/// address once the server accepts. Sessions still open then are ended
/// and graded before this returns.
pub fn serve(served: Served, addr: SocketAddr, listening: impl FnOnce(SocketAddr)) -> Result<()> {
    super::signals::catch_then_again();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()?;
    let served = rt.block_on(async {
        let listener = (tokio::net::TcpListener::bind(addr).await)
            .map_err(|e| InputError::cannot_listen("--addr", addr, &e))?;
        let bound = listener.local_addr()?;
        let (tell, stop) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            stopping().await;
            let _ = tell.send(true);
        });
        let shared = Arc::new(Shared {
            slots: Arc::new(Semaphore::new(served.max_sessions)),
            served,
            port: bound.port(),
            stop: stop.clone(),
        });
        listening(bound);
        let app = axum::Router::new()
            .route("/health", axum::routing::get(health))
            .route("/ws", axum::routing::get(upgrade))
            .fallback(elsewhere)
            .with_state(shared.clone());
        let mut stop = stop;
        // A connection that never sends a request's headers is closed
        // (each was held for good, and a few thousand took every slot).
        super::listen::serve(listener, app, async move {
            let _ = stop.wait_for(|&stopped| stopped).await;
        })
        .await;
        // Every session's connection ended (and its run finished).
        let all = u32::try_from(shared.served.max_sessions).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(Duration::from_secs(30), shared.slots.acquire_many(all)).await;
        Ok(())
    });
    // A world's compile a reset began is not waited for (its reset was
    // refused): dropping the runtime waited for it, many seconds after
    // the signal. The process ends with it.
    rt.shutdown_background();
    served
}

async fn health() -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        r#"{"status":"healthy"}"#,
    )
}

/// Any other path or method (an OpenEnv HTTP client's `POST /reset`): 404
/// saying where the server answers.
async fn elsewhere() -> impl IntoResponse {
    (
        axum::http::StatusCode::NOT_FOUND,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        r#"{"error":"worldline serve answers OpenEnv's WebSocket protocol at /ws (reset, step, state, close messages) and GET /health only"}"#,
    )
}

/// A connection is upgraded only for a client of this machine: a loopback
/// `Host` naming the port, and an `Origin`, when sent, of this machine, as
/// `worldline mcp --http` requires (decision 0351, amended), so that a web
/// page the user visits cannot drive the served worlds (403 otherwise).
async fn upgrade(
    State(shared): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    ws: WebSocketUpgrade,
) -> axum::response::Response {
    if let Some(why) = super::guard::host_refused(&headers, shared.port) {
        return (axum::http::StatusCode::FORBIDDEN, why).into_response();
    }
    if !super::guard::origin_ok(&headers) {
        return (
            axum::http::StatusCode::FORBIDDEN,
            "a connection from a web page of another origin is refused: only pages of this machine (http://127.0.0.1, http://localhost, http://[::1]) may connect",
        )
            .into_response();
    }
    ws.max_message_size(MAX_MESSAGE)
        .on_upgrade(move |socket| connection(socket, shared))
        .into_response()
}

/// One client: its sessions, one after another. The connection ends
/// with a close frame saying why (RFC 6455's codes): `close` or the
/// client's own close (1000), `--idle-timeout` (1000), a message past
/// [`MAX_MESSAGE`] (1009), no free slot (1013, after OpenEnv's
/// `CAPACITY_REACHED`) or the server stopping (1001); the open episode is
/// then ended and graded.
async fn connection(mut socket: WebSocket, shared: Arc<Shared>) {
    let Ok(_slot) = shared.slots.clone().try_acquire_owned() else {
        let max = shared.served.max_sessions;
        let message = format!(
            "this server holds {max} sessions at once (worldline serve --max-sessions); try again when one ends"
        );
        let mut refused = error("CAPACITY_REACHED", &message);
        refused["data"]["active_sessions"] = json!(max);
        refused["data"]["max_sessions"] = json!(max);
        if socket.send(text(&refused)).await.is_ok() {
            let why =
                format!("all {max} sessions are taken (--max-sessions): try again when one ends");
            close(socket, 1013, &why).await;
        }
        return;
    };
    let idle = shared.served.idle;
    let mut stop = shared.stop.clone();
    let mut session: Option<Session> = None;
    // What the socket gave while a message was being answered.
    let mut early: std::collections::VecDeque<Option<Result<Message, axum::Error>>> =
        std::collections::VecDeque::new();
    // Idle is no message from the client: its pings and pongs (a
    // websockets client's keepalive, every 20 s) do not hold a leaked
    // episode open.
    let mut idle_at = tokio::time::Instant::now() + idle;
    let ending = loop {
        let received = match early.pop_front() {
            Some(got) => Ok(got),
            None => tokio::select! {
                r = tokio::time::timeout_at(idle_at, socket.recv()) => r,
                Ok(_) = stop.wait_for(|&stopped| stopped) => {
                    break Some((1001, "the server is stopping".to_string()));
                }
            },
        };
        let raw = match received {
            Err(_) => {
                let why = format!(
                    "idle for {} s (worldline serve --idle-timeout)",
                    idle.as_secs()
                );
                break Some((1000, why));
            }
            Ok(Some(Ok(Message::Text(t)))) => t.to_string(),
            Ok(Some(Ok(Message::Binary(_)))) => {
                let said = error(
                    "INVALID_JSON",
                    "a binary frame: send each message as JSON in a text frame",
                );
                if socket.send(text(&said)).await.is_err() {
                    break None;
                }
                idle_at = tokio::time::Instant::now() + idle;
                continue;
            }
            Ok(Some(Ok(Message::Close(_)))) | Ok(None) => break None,
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(e))) if too_long(&e) => {
                break Some((1009, format!("a message is at most {MAX_MESSAGE} bytes")));
            }
            Ok(Some(Err(_))) => break None,
        };
        // While a reset or a step is worked on (a world's first compile,
        // a slow tool: many seconds), the socket is still read, so its
        // pings are answered (a client's keepalive closed the connection
        // after 20 s), and what else comes waits its turn.
        let work = answer(&shared.served, &mut session, &raw);
        tokio::pin!(work);
        let reply = loop {
            let reading =
                early.len() < EARLY && early.back().is_none_or(|m| matches!(m, Some(Ok(_))));
            tokio::select! {
                r = &mut work => break r,
                got = socket.recv(), if reading => match got {
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    got => early.push_back(got),
                },
            }
        };
        let Some(reply) = reply else {
            break Some((1000, "closed".to_string()));
        };
        if socket.send(text(&reply)).await.is_err() {
            break None;
        }
        idle_at = tokio::time::Instant::now() + idle;
    };
    // The open episode was left by its client: why, for its footer.
    let why = match &ending {
        None => "its client's connection closed".to_string(),
        Some((_, reason)) if reason == "closed" => "its client sent `close`".to_string(),
        Some((_, reason)) => format!("the connection was closed: {reason}"),
    };
    if let Some((code, reason)) = ending {
        close(socket, code, &reason).await;
    }
    if let Some(mut s) = session.take() {
        s.finish(EpisodeEnd::Truncated(why)).await;
    }
}

/// The most messages kept that came while one was being answered (a
/// client waits for each answer; past these, the socket is read later).
const EARLY: usize = 16;

/// The answer to one message of a connection; `None` for `close`.
async fn answer(served: &Served, session: &mut Option<Session>, raw: &str) -> Option<Value> {
    // A key written twice in one object (`"seed": 5, "seed": 6`, a second
    // `tool_name`) is refused, as everywhere else a user's JSON is read
    // (serde_json kept the last without a word), and so is an integer no
    // 64 bits hold (it was read as the nearest float).
    let m = match worldline_case::world::one_field::from_str(raw, true) {
        Err(e) if e.is_data() => return Some(error("VALIDATION_ERROR", &e.to_string())),
        Err(e) => return Some(error("INVALID_JSON", &format!("Invalid JSON: {e}"))),
        Ok(m) if !m.is_object() => {
            return Some(error(
                "VALIDATION_ERROR",
                &format!(
                    "a message is a JSON object, {{\"type\": \"reset\"|\"step\"|\"state\"|\"close\", \"data\": ...}}, not {}",
                    worldline_case::path::kind_of(&m)
                ),
            ));
        }
        Ok(m) => m,
    };
    if let Some(wide) = worldline_case::wide_integer::find(raw) {
        let at = format!("line {}, column {}", wide.line, wide.column);
        // A reset's seed is said as `reset` says a seed out of range: the
        // general advice (write it as a string) would be refused there.
        let seed = &m["data"]["seed"];
        let said = if m["type"] == "reset"
            && seed.is_f64()
            && wide.digits.parse::<f64>().ok() == seed.as_f64()
        {
            seed_range(wide.digits)
        } else {
            wide.message()
        };
        return Some(error("VALIDATION_ERROR", &format!("{at}: {said}")));
    }
    let kind = match &m["type"] {
        Value::String(t) => t.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    Some(match kind.as_str() {
        "reset" => reset(served, session, &m["data"]).await,
        "step" => match session.as_mut() {
            Some(s) => s.step(&m["data"]).await,
            None => error("SESSION_ERROR", "no episode: send `reset` first"),
        },
        "state" => match session {
            Some(s) => json!({"type": "state", "data": s.state()}),
            None => json!({"type": "state", "data": {
                "episode_id": null, "step_count": 0, "case": null, "seed": null, "done": false,
            }}),
        },
        "close" => return None,
        "" => error(
            "UNKNOWN_TYPE",
            "a message names its `type`: send reset, step, state or close",
        ),
        other => error(
            "UNKNOWN_TYPE",
            &format!("unknown message type `{other}`: send reset, step, state or close"),
        ),
    })
}

/// Why a reset is refused once SIGINT or SIGTERM has come.
const STOPPING: &str = "the server is stopping (SIGINT or SIGTERM): no episode begins";

/// Once SIGINT or SIGTERM has come (polled by one task, which tells
/// `Shared::stop`).
async fn stopping() {
    while !super::signals::received() {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Whether a read failed on a message past [`MAX_MESSAGE`].
fn too_long(e: &axum::Error) -> bool {
    let read = std::error::Error::source(e).and_then(|e| e.downcast_ref::<tungstenite::Error>());
    matches!(read, Some(tungstenite::Error::Capacity(_)))
}

/// Send a close frame, then read (for a little while) until the client's
/// comes back, so that what was sent before it reaches the client rather
/// than a reset of a connection with unread data.
async fn close(mut socket: WebSocket, code: u16, reason: &str) {
    let frame = axum::extract::ws::CloseFrame {
        code,
        reason: reason.into(),
    };
    if socket.send(Message::Close(Some(frame))).await.is_ok() {
        let drained = async { while let Some(Ok(_)) = socket.recv().await {} };
        let _ = tokio::time::timeout(Duration::from_secs(2), drained).await;
    }
}

/// What a seed outside a `u64` (`not`, as written) is told.
fn seed_range(not: &str) -> String {
    format!(
        "seed must be a whole number from 0 to {}, not {not}",
        u64::MAX
    )
}

fn text(v: &Value) -> Message {
    Message::Text(worldline_case::canon::to_string(v).into())
}

fn error(code: &str, message: &str) -> Value {
    json!({"type": "error", "data": {"message": message, "code": code}})
}

fn observation(observation: Value, reward: Option<f64>, done: bool) -> Value {
    json!({"type": "observation", "data": {"observation": observation, "reward": reward, "done": done}})
}

/// Begin an episode of the case `data.case` names (or the only one
/// served) with `data.seed` (or the case's), ending the open one, if any,
/// once the request is found good.
async fn reset(served: &Served, session: &mut Option<Session>, data: &Value) -> Value {
    const KEYS: [&str; 4] = ["case", "seed", "episode_id", "fork_of"];
    match data {
        Value::Null => {}
        Value::Object(m) => {
            if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
                return error(
                    "VALIDATION_ERROR",
                    &format!(
                        "reset takes no key `{k}` (it would be ignored): its keys are {}",
                        KEYS.join(", ")
                    ),
                );
            }
        }
        other => {
            return error(
                "VALIDATION_ERROR",
                &format!(
                    "a reset's data is an object ({{{}}}, each optional), not {other}",
                    KEYS.map(|k| format!("\"{k}\"")).join(", ")
                ),
            );
        }
    }
    if !matches!(data["episode_id"], Value::Null | Value::String(_)) {
        return error("VALIDATION_ERROR", "episode_id must be a string");
    }
    if let Some(why) = data["episode_id"].as_str().and_then(episode_id_refused) {
        return error("VALIDATION_ERROR", &why);
    }
    if let Some(fork_of) = data.get("fork_of") {
        return reset_fork(served, session, fork_of, data).await;
    }
    let named = match data["case"].as_str() {
        Some(name) => served.named(name),
        None if served.cases.len() == 1 => Ok(&served.cases[0]),
        None => Err(format!(
            "reset names no served case: pass `case`, one of {}",
            served.names()
        )),
    };
    let (name, case) = match named {
        Ok(c) => c,
        Err(why) => return error("VALIDATION_ERROR", &why),
    };
    let mut case = case.clone();
    match &data["seed"] {
        Value::Null => {}
        seed => match seed.as_u64() {
            Some(seed) => case.seed = seed,
            None => {
                // A whole number past u64 reads as a float (2^64 would
                // echo as 1.8446744073709552e19): said as what it is.
                let not = match seed.as_f64() {
                    Some(f) if f >= u64::MAX as f64 && f.fract() == 0.0 => {
                        "a whole number past it".to_string()
                    }
                    _ => seed.to_string(),
                };
                return error("VALIDATION_ERROR", &seed_range(&not));
            }
        },
    }
    let opts = RunOptions {
        store: Some(served.store),
        ..RunOptions::default()
    };
    let agent = NativeAgent {
        transport: TRANSPORT.into(),
        command: Vec::new(),
        pass_env: Vec::new(),
        output_file: None,
        network: None,
    };
    end_open(session).await;
    match Session::begin(served, case, agent, opts, data["episode_id"].as_str()).await {
        Err(e) => error("FACTORY_ERROR", &format!("{e:#}")),
        Ok(mut s) => {
            // The case as the reset named it, as `test` names it.
            s.case.clone_from(name);
            match s.list_tools().await {
                Err(why) => s.refused(why).await,
                Ok(tools) => {
                    let first =
                        json!({"case": s.case, "seed": s.seed, "task": s.task, "tools": tools});
                    *session = Some(s);
                    observation(first, None, false)
                }
            }
        }
    }
}

/// Why a reset's `episode_id` is refused, if it is: it is recorded in the
/// run's header and shown on a line of `history`, so it is at most
/// [`EPISODE_ID_MAX`] bytes and holds no control character (one of 100 KB
/// was taken, and recorded nowhere).
fn episode_id_refused(id: &str) -> Option<String> {
    if id.len() > EPISODE_ID_MAX {
        return Some(format!(
            "episode_id is at most {EPISODE_ID_MAX} bytes (it is recorded with the episode's run), not {}",
            id.len()
        ));
    }
    let (at, c) = id.char_indices().find(|(_, c)| c.is_control())?;
    Some(format!(
        "episode_id holds a control character (U+{:04X} at byte {at}): it is recorded with the episode's run and shown on one line",
        u32::from(c)
    ))
}

/// A `reset` with `fork_of: {"run", "at"}`: a session begun from the
/// recorded episode's first `at` events (each request sent again, the
/// mediator following the recording), the client's steps live after
/// them. The first observation is the case's, with the tools the prefix
/// listed last and `fork_of` (the run's full id, the event, the steps
/// sent again).
async fn reset_fork(
    served: &Served,
    session: &mut Option<Session>,
    fork_of: &Value,
    data: &Value,
) -> Value {
    let episode_id = data["episode_id"].as_str();
    let shape = "fork_of is {\"run\": RUN_ID, \"at\": EVENT}: a served episode's run id (or a unique prefix) and the event to begin from";
    if let Some(k) = fork_of
        .as_object()
        .and_then(|m| m.keys().find(|k| !["run", "at"].contains(&k.as_str())))
    {
        return error(
            "VALIDATION_ERROR",
            &format!("fork_of takes no key `{k}` (it would be ignored): {shape}"),
        );
    }
    // The episode runs under the recorded seed: another was dropped
    // without a word.
    if !data["seed"].is_null() {
        return error(
            "VALIDATION_ERROR",
            "a reset with fork_of runs the recorded episode's seed: leave `seed` out",
        );
    }
    let (Some(run), Some(at)) = (fork_of["run"].as_str(), fork_of["at"].as_u64()) else {
        return error("VALIDATION_ERROR", shape);
    };
    if run.is_empty() {
        return error(
            "VALIDATION_ERROR",
            "fork_of.run is empty: name a served episode's run id (its last observation's `run_id`, or a unique prefix of it)",
        );
    }
    // A run of the store by its id, never a path: a client names no file.
    if !worldline_store::store::is_run_id(run) {
        return error(
            "VALIDATION_ERROR",
            "fork_of.run names a run of the store by its id (or a unique prefix of it), not a path",
        );
    }
    // Reading the recorded run off the store holds this thread: the
    // runtime's other tasks move to another meanwhile.
    let prefix = match tokio::task::block_in_place(|| (served.fork)(run, at)) {
        Ok(p) => p,
        Err(e) => {
            // The fork's check names its command line's flag.
            let e = format!("{e:#}");
            let e = e
                .strip_prefix("--at: ")
                .map_or(e.clone(), |m| format!("fork_of.at: {m}"));
            return error("VALIDATION_ERROR", &e);
        }
    };
    // The episode is of the recorded run's case: one the reset names is
    // that one, and it is one this server serves (a reset naming another,
    // or a server serving another, ran the recorded case without a word).
    let recorded = prefix.case.name.as_str();
    // The served case the episode is of, by its served name: the one of
    // the recorded case's name, or of several (`incident/look`,
    // `accounts/look`) the one with the content it ran. The observation
    // and `state` named the recorded case's file name, and a reset naming
    // two cases' file name was told "an episode of case `look`, not
    // `look`".
    let of_name: Vec<&String> = (served.cases.iter())
        .filter(|(_, c)| c.name == recorded)
        .map(|(n, _)| n)
        .collect();
    let own = match of_name[..] {
        [one] => Some(one),
        _ => (served.cases.iter())
            .find(|(_, c)| c.name == recorded && c.hash == prefix.case.hash)
            .map(|(n, _)| n),
    };
    let shown = own.map_or(recorded, |n| n.as_str());
    let name = match data["case"].as_str() {
        Some(named) => match served.named(named) {
            Ok((n, c)) if c.name == recorded && own.is_none_or(|o| o == n) => n,
            // A file name several served cases share: which to name.
            Err(why) if served.cases.iter().any(|(_, c)| c.name == named) => {
                return error("VALIDATION_ERROR", &why);
            }
            other => {
                let other = other.map_or(named, |(n, _)| n.as_str());
                return error(
                    "VALIDATION_ERROR",
                    &format!(
                        "fork_of.run is an episode of case `{shown}`, not `{other}`: leave `case` out of a reset with fork_of, or name `{shown}`"
                    ),
                );
            }
        },
        None => match own {
            Some(n) => n,
            None if of_name.is_empty() => {
                return error(
                    "VALIDATION_ERROR",
                    &format!(
                        "fork_of.run is an episode of case `{recorded}`, which this server does not serve ({})",
                        served.names()
                    ),
                );
            }
            None => {
                let names: Vec<&str> = of_name.iter().map(|n| n.as_str()).collect();
                return error(
                    "VALIDATION_ERROR",
                    &format!(
                        "fork_of.run is an episode of case `{recorded}`, which names {} served cases: pass `case`, one of {}",
                        names.len(),
                        names.join(", ")
                    ),
                );
            }
        },
    };
    end_open(session).await;
    let events = prefix.events;
    let forked = json!({"run": prefix.run, "at": prefix.at});
    let rules = prefix.opts.rules_under();
    let begun = Session::begin(served, prefix.case, prefix.agent, prefix.opts, episode_id);
    let mut s = match begun.await {
        Ok(s) => s,
        Err(e) => return error("FACTORY_ERROR", &format!("{e:#}")),
    };
    // The case as this server serves it, as a fresh reset names it.
    s.case.clone_from(name);
    let mut tools = None;
    for event in &events {
        let Some(message) = rederive::message_of(event, s.steps + 1, rules) else {
            continue;
        };
        let listed = message.method.as_deref() == Some("tools/list");
        match s.send(message).await {
            Ok(r) if listed => tools = Some(s.listed(&r)),
            Ok(_) => {}
            Err(why) => {
                s.finish(EpisodeEnd::Stopped(why)).await;
                let ended = s.ended.take().unwrap_or(Value::Null);
                return error(
                    "FACTORY_ERROR",
                    &format!("the episode's prefix did not run again as recorded: {ended}"),
                );
            }
        }
    }
    let mut forked = forked;
    forked["steps"] = json!(s.steps);
    // The recorded episode's steps: its messages less the listing its
    // reset made first.
    s.step_count = s.steps.saturating_sub(1);
    // A prefix that never listed the tools (a fork at event 0) lists them
    // now, as a fresh reset does.
    let tools = match tools {
        Some(t) => t,
        None => match s.list_tools().await {
            Ok(t) => t,
            Err(why) => return s.refused(why).await,
        },
    };
    let first =
        json!({"case": s.case, "seed": s.seed, "task": s.task, "tools": tools, "fork_of": forked});
    *session = Some(s);
    observation(first, None, false)
}

/// End (and grade) the connection's open episode, once the `reset` that
/// ends it has been found good: a refused one leaves it going.
async fn end_open(session: &mut Option<Session>) {
    if let Some(mut s) = session.take() {
        let why = "its client began another episode (`reset`) before `end`";
        s.finish(EpisodeEnd::Truncated(why.into())).await;
    }
}

/// How an episode ends.
enum EpisodeEnd {
    /// Its client's `end` action.
    Ended,
    /// The mediator stopped its run (a limit, a gold call that failed):
    /// why, which the last observation says.
    Stopped(String),
    /// Its client left it without `end`: why, which its footer keeps
    /// (`truncated`, decision 0429).
    Truncated(String),
}

/// One episode: a run with its mediator on a thread of its own.
struct Session {
    handle: Handle,
    mediator: Option<std::thread::JoinHandle<Result<RunOutcome>>>,
    case: String,
    seed: u64,
    task: Value,
    episode_id: Option<String>,
    /// Messages sent to the mediator (the reset's listing among them):
    /// the next one's JSON-RPC id, as recorded.
    steps: u64,
    /// The client's steps, as OpenEnv counts them (`state`'s
    /// `step_count`): each `step` answered with an observation, a fork's
    /// prefix's own steps included.
    step_count: u64,
    /// How the episode ended: reward, verdict, checks, run id.
    ended: Option<Value>,
    /// The world's tools, by name, as last listed (a reset lists them).
    tools: std::collections::BTreeSet<String>,
}

impl Session {
    /// The case kept in the store and its world's service loaded (a
    /// first compile takes many seconds) on a blocking thread: on the
    /// runtime's, every other connection, `/health` and this client's
    /// pings waited for it.
    async fn begin(
        served: &Served,
        case: Case,
        agent: NativeAgent,
        mut opts: RunOptions<'static>,
        episode_id: Option<&str>,
    ) -> Result<Session> {
        // The episode's client is outside worldline: its reads are
        // written as it gets them (decision 0416).
        opts.each_line = true;
        let (sandbox, store) = (served.sandbox, served.store);
        let recorded_id = episode_id.map(str::to_string);
        let loading = tokio::task::spawn_blocking(move || -> Result<_> {
            store.put_case(&case)?;
            super::load_service(sandbox, &case)?;
            let mut header = super::header(sandbox, &case, agent);
            // The client's name for the episode, for a trainer to find its
            // run by (it was kept for `state` alone).
            header.episode_id = recorded_id;
            Ok((case, header))
        });
        // SIGINT or SIGTERM meanwhile refuses the reset at once, the
        // compile left to itself: the server waited it out (many
        // seconds), then began the episode and answered the reset after
        // it was told to stop.
        let (case, header) = tokio::select! {
            biased;
            () = stopping() => anyhow::bail!("{STOPPING}"),
            loaded = loading => loaded??,
        };
        if super::signals::received() {
            anyhow::bail!("{STOPPING}");
        }
        let (handle, receiver) = session::channel();
        let (name, seed, task) = (case.name.clone(), case.seed, case.task.value());
        let mediator = std::thread::Builder::new()
            .name("worldline-session".into())
            .spawn(move || session::mediate(sandbox, &case, header, opts, receiver))?;
        Ok(Session {
            handle,
            mediator: Some(mediator),
            case: name,
            seed,
            task,
            episode_id: episode_id.map(str::to_string),
            steps: 0,
            step_count: 0,
            ended: None,
            tools: Default::default(),
        })
    }

    /// Hand one MCP request to the mediator: its JSON-RPC answer, or why
    /// the run stopped.
    async fn rpc(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let via = Via::Loopback {
            method: "WS".into(),
            path: "/ws".into(),
        };
        let id = self.steps + 1;
        self.send(rederive::rpc(via, Some(id), method, params))
            .await
    }

    /// Hand one message to the mediator (a step, or one of a fork's
    /// prefix sent again).
    async fn send(&mut self, message: McpMessage) -> Result<Value, String> {
        self.steps += 1;
        match self.handle.call(rederive::job(message)).await {
            Reply::Answered(Some(r)) => serde_json::from_slice(&r.body)
                .map_err(|e| format!("the world's answer is not JSON: {e}")),
            Reply::Answered(None) => Err("the call stalled".into()),
            Reply::Stopped(why) => Err(why),
        }
    }

    /// The world's tools; why not, when the mediator has stopped (a
    /// case whose gold calls fail stops it before the first step).
    async fn list_tools(&mut self) -> Result<Value, String> {
        let r = self.rpc("tools/list", json!({})).await?;
        Ok(self.listed(&r))
    }

    /// The tools a `tools/list` answer gives, their names kept.
    fn listed(&mut self, answer: &Value) -> Value {
        let tools = answer["result"]["tools"].clone();
        self.tools = (tools.as_array().into_iter().flatten())
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect();
        tools
    }

    /// A session that could not begin: ended, and its reset refused
    /// saying why (it answered `tools: []` and ended at the first step
    /// with no reward and no run).
    async fn refused(mut self, why: String) -> Value {
        let ended = self.finish(EpisodeEnd::Stopped(why.clone())).await;
        // The run's own error (the gold call that failed) over the
        // channel's "the run has ended".
        let said = ended["data"]["observation"]["error"].as_str();
        error("FACTORY_ERROR", said.unwrap_or(&why))
    }

    /// One action, counted as a step when it is answered with an
    /// observation.
    async fn step(&mut self, action: &Value) -> Value {
        let answer = self.act(action).await;
        if answer["type"] == "observation" {
            self.step_count += 1;
        }
        answer
    }

    async fn act(&mut self, action: &Value) -> Value {
        if let Some(ended) = &self.ended {
            return observation(ended.clone(), ended["reward"].as_f64(), true);
        }
        if let Some(why) = action_refusal(action) {
            return error("VALIDATION_ERROR", &why);
        }
        match action["type"].as_str() {
            Some("call_tool") => {
                let name = action["tool_name"].as_str().unwrap_or_default();
                let params = json!({"name": name, "arguments": action.get("arguments").cloned().unwrap_or(json!({}))});
                match self.rpc("tools/call", params).await {
                    Ok(r) => {
                        // The mediator answers a tool the world lacks as a
                        // tool error (recorded as the agent's call);
                        // OpenEnv's clients read it as `tool_not_found`. A
                        // tool of the world that answers `not-found` is
                        // one that found nothing, whatever its words.
                        let text = r["result"]["content"][0]["text"]
                            .as_str()
                            .unwrap_or_default();
                        let said: Value = serde_json::from_str(text).unwrap_or_default();
                        let message = said["error"]["message"].as_str().unwrap_or_default();
                        let lacked = r["result"]["isError"] == true
                            && said["error"]["kind"] == "not-found"
                            && !self.tools.contains(name);
                        let obs = match r.get("error") {
                            Some(e) => json!({"tool_name": name, "result": null,
                                "error": {"error_type": "tool_not_found", "message": e["message"]}}),
                            None if lacked => json!({"tool_name": name, "result": r["result"],
                                "error": {"error_type": "tool_not_found", "message": message}}),
                            None => {
                                json!({"tool_name": name, "result": r["result"], "error": null})
                            }
                        };
                        observation(obs, None, false)
                    }
                    Err(why) => self.finish(EpisodeEnd::Stopped(why)).await,
                }
            }
            Some("list_tools") => match self.list_tools().await {
                Ok(tools) => observation(json!({"tools": tools}), None, false),
                Err(why) => self.finish(EpisodeEnd::Stopped(why)).await,
            },
            Some("end") => self.finish(EpisodeEnd::Ended).await,
            _ => error(
                "VALIDATION_ERROR",
                "an action is {\"type\": \"call_tool\", \"tool_name\", \"arguments\"}, {\"type\": \"list_tools\"} or {\"type\": \"end\"}",
            ),
        }
    }

    /// End the run (graded, written to the store) as `how` says: the last
    /// observation.
    async fn finish(&mut self, how: EpisodeEnd) -> Value {
        if self.ended.is_none() {
            let (exit, stopped) = match how {
                EpisodeEnd::Ended => (Exit::disconnected(), None),
                EpisodeEnd::Stopped(why) => (Exit::disconnected(), Some(why)),
                EpisodeEnd::Truncated(why) => (Exit::truncated(why), None),
            };
            self.handle.end(exit);
            let mediator = self.mediator.take();
            let outcome = tokio::task::spawn_blocking(move || match mediator {
                Some(m) => m
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("the mediator thread panicked"))),
                None => Err(anyhow::anyhow!("the session has no run")),
            })
            .await
            .unwrap_or_else(|e| Err(anyhow::anyhow!("{e}")));
            self.ended = Some(match outcome {
                Ok(o) => ending(&o, stopped),
                Err(e) => json!({"error": format!("{e:#}"), "reward": null}),
            });
        }
        let ended = self.ended.clone().unwrap_or(Value::Null);
        observation(ended.clone(), ended["reward"].as_f64(), true)
    }

    fn state(&self) -> Value {
        let mut s = json!({
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "case": self.case,
            "seed": self.seed,
            "done": self.ended.is_some(),
        });
        if let Some(e) = &self.ended {
            for key in ["run_id", "reward", "verdict"] {
                s[key] = e[key].clone();
            }
        }
        s
    }
}

/// Why an action is refused before it runs, as OpenEnv's action models
/// refuse it (`extra="forbid"`): a key its type does not take (a misspelt
/// `arguments` ran the tool with none), a `tool_name` that is no string,
/// `arguments` or `metadata` that are no object. An action of no known
/// type is left to [`Session::act`].
fn action_refusal(action: &Value) -> Option<String> {
    let keys: &[&str] = match action["type"].as_str()? {
        "call_tool" => &["type", "tool_name", "arguments", "metadata"],
        "list_tools" | "end" => &["type", "metadata"],
        _ => return None,
    };
    let kind = action["type"].as_str().unwrap_or_default();
    if let Some(k) = action
        .as_object()?
        .keys()
        .find(|k| !keys.contains(&k.as_str()))
    {
        let a = if kind == "end" { "an" } else { "a" };
        return Some(format!(
            "{a} {kind} action takes no key `{k}` (it would be ignored): its keys are {}",
            keys.join(", ")
        ));
    }
    let not_object = |key: &str| action.get(key).is_some_and(|v| !v.is_object());
    if kind == "call_tool" {
        match &action["tool_name"] {
            Value::String(_) => {}
            Value::Null => return Some("a call_tool action needs `tool_name`".into()),
            other => return Some(format!("tool_name must be a string, not {other}")),
        }
        if not_object("arguments") {
            return Some(format!(
                "arguments must be an object of the tool's arguments, not {}",
                action["arguments"]
            ));
        }
    }
    if not_object("metadata") {
        return Some(format!(
            "metadata must be an object, not {}",
            action["metadata"]
        ));
    }
    None
}

/// The last observation of a finished run: its id, status, verdict,
/// reward (the grade's, as `export --format trajectories` has it) and
/// checks.
fn ending(o: &RunOutcome, stopped: Option<String>) -> Value {
    let grade = o.footer.grade.as_ref();
    let verdict = o.footer.verdict();
    let reward = grade.map(|g| {
        g["reward"]
            .as_f64()
            .unwrap_or(if verdict == Some("passed") { 1.0 } else { 0.0 })
    });
    json!({
        "run_id": o.run_id,
        "status": o.footer.status.as_str(),
        "stopped": stopped,
        "verdict": verdict,
        "reward": reward,
        "checks": grade.and_then(|g| g["assertions"].as_array().cloned()).unwrap_or_default(),
    })
}
