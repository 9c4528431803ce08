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

use super::session::{self, Exit, Handle, Reply};
use crate::run::{RunOptions, RunOutcome};
use crate::store::StoreDir;
use anyhow::{Context, Result};
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use worldline_case::case::Case;
use worldline_log::log::bundle::NativeAgent;
use worldline_protocol::routes::Route;
use worldline_runtime::mediate::boundary::Via;
use worldline_runtime::sandbox::Sandbox;

/// The largest message a client may send.
pub const MAX_MESSAGE: usize = 1 << 20;

/// What is served, and to how many at once.
pub struct Served {
    pub sandbox: &'static Sandbox,
    pub store: &'static StoreDir,
    /// The cases a `reset` may name, by name.
    pub cases: Vec<Case>,
    /// Sessions (WebSocket connections) at once; more are refused with
    /// OpenEnv's `CAPACITY_REACHED`.
    pub max_sessions: usize,
    /// A connection that sends nothing for this long is closed (its
    /// episode ended and graded), so an idle client holds no slot forever.
    pub idle: Duration,
}

struct Shared {
    served: Served,
    slots: Arc<Semaphore>,
}

/// Serve on `addr` until SIGINT or SIGTERM; `listening` is told the
/// address once the server accepts. Sessions still open then are ended
/// and graded before this returns.
pub fn serve(served: Served, addr: SocketAddr, listening: impl FnOnce(SocketAddr)) -> Result<()> {
    super::signals::catch();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()?;
    let shared = Arc::new(Shared {
        slots: Arc::new(Semaphore::new(served.max_sessions)),
        served,
    });
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        listening(listener.local_addr()?);
        let app = axum::Router::new()
            .route("/health", axum::routing::get(health))
            .route("/ws", axum::routing::get(upgrade))
            .with_state(shared.clone());
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                while !super::signals::received() {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            })
            .await?;
        // Every session's connection ended (and its run finished).
        let all = u32::try_from(shared.served.max_sessions).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(Duration::from_secs(30), shared.slots.acquire_many(all)).await;
        Ok(())
    })
}

async fn health() -> impl IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        r#"{"status":"healthy"}"#,
    )
}

async fn upgrade(State(shared): State<Arc<Shared>>, ws: WebSocketUpgrade) -> impl IntoResponse {
    ws.max_message_size(MAX_MESSAGE)
        .on_upgrade(move |socket| connection(socket, shared))
}

/// One client: its sessions, one after another.
async fn connection(mut socket: WebSocket, shared: Arc<Shared>) {
    let Ok(_slot) = shared.slots.clone().try_acquire_owned() else {
        let message = format!(
            "this server holds {} sessions at once (worldline serve --max-sessions); try again when one ends",
            shared.served.max_sessions
        );
        let _ = socket
            .send(text(&error("CAPACITY_REACHED", &message)))
            .await;
        return;
    };
    let mut session: Option<Session> = None;
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(shared.served.idle, socket.recv()).await {
        let raw = match msg {
            Message::Text(t) => t.to_string(),
            Message::Close(_) => break,
            _ => continue,
        };
        let reply = match serde_json::from_str::<Value>(&raw) {
            Err(e) => error("INVALID_JSON", &format!("Invalid JSON: {e}")),
            Ok(m) => match m["type"].as_str().unwrap_or("") {
                "reset" => reset(&shared.served, &mut session, &m["data"]).await,
                "step" => match session.as_mut() {
                    Some(s) => s.step(&m["data"]).await,
                    None => error("SESSION_ERROR", "no episode: send `reset` first"),
                },
                "state" => match &session {
                    Some(s) => json!({"type": "state", "data": s.state()}),
                    None => json!({"type": "state", "data": {"step_count": 0}}),
                },
                "close" => break,
                other => error(
                    "UNKNOWN_TYPE",
                    &format!("unknown message type `{other}`: send reset, step, state or close"),
                ),
            },
        };
        if socket.send(text(&reply)).await.is_err() {
            break;
        }
    }
    if let Some(mut s) = session.take() {
        s.finish(None).await;
    }
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

/// End the open episode, if any, and begin one of the case `data.case`
/// names (or the only one served) with `data.seed` (or the case's).
async fn reset(served: &Served, session: &mut Option<Session>, data: &Value) -> Value {
    if let Some(mut s) = session.take() {
        s.finish(None).await;
    }
    let case = match data["case"].as_str() {
        Some(name) => served.cases.iter().find(|c| c.name == name),
        None if served.cases.len() == 1 => served.cases.first(),
        None => None,
    };
    let Some(case) = case else {
        let names: Vec<&str> = served.cases.iter().map(|c| c.name.as_str()).collect();
        return error(
            "VALIDATION_ERROR",
            &format!(
                "reset names no served case: pass `case`, one of {}",
                names.join(", ")
            ),
        );
    };
    let mut case = case.clone();
    if let Some(seed) = data["seed"].as_u64() {
        case.seed = seed;
    }
    match Session::begin(served, case, data["episode_id"].as_str()) {
        Err(e) => error("FACTORY_ERROR", &format!("{e:#}")),
        Ok(mut s) => {
            let tools = s.list_tools().await;
            let first = json!({"case": s.case, "seed": s.seed, "task": s.task, "tools": tools});
            *session = Some(s);
            observation(first, None, false)
        }
    }
}

/// One episode: a run with its mediator on a thread of its own.
struct Session {
    handle: Handle,
    mediator: Option<std::thread::JoinHandle<Result<RunOutcome>>>,
    case: String,
    seed: u64,
    task: Value,
    episode_id: Option<String>,
    steps: u64,
    /// How the episode ended: reward, verdict, checks, run id.
    ended: Option<Value>,
}

impl Session {
    fn begin(served: &Served, case: Case, episode_id: Option<&str>) -> Result<Session> {
        let agent = NativeAgent {
            transport: "openenv".into(),
            command: Vec::new(),
            pass_env: Vec::new(),
            output_file: None,
            network: None,
        };
        let (sandbox, store) = (served.sandbox, served.store);
        store.put_case(&case)?;
        let header = super::header(sandbox, &case, agent);
        let (handle, receiver) = session::channel();
        let (name, seed, task) = (case.name.clone(), case.seed, case.task.clone());
        let mediator = std::thread::Builder::new()
            .name("worldline-session".into())
            .spawn(move || {
                let opts = RunOptions {
                    store: Some(store),
                    ..RunOptions::default()
                };
                session::mediate(sandbox, &case, header, opts, receiver)
            })?;
        Ok(Session {
            handle,
            mediator: Some(mediator),
            case: name,
            seed,
            task,
            episode_id: episode_id.map(str::to_string),
            steps: 0,
            ended: None,
        })
    }

    /// Hand one MCP request to the mediator: its JSON-RPC answer, or why
    /// the run stopped.
    async fn rpc(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.steps += 1;
        match self.handle.call(mcp_job(self.steps, method, params)).await {
            Reply::Answered(Some(r)) => serde_json::from_slice(&r.body)
                .map_err(|e| format!("the world's answer is not JSON: {e}")),
            Reply::Answered(None) => Err("the call stalled".into()),
            Reply::Stopped(why) => Err(why),
        }
    }

    async fn list_tools(&mut self) -> Value {
        match self.rpc("tools/list", json!({})).await {
            Ok(r) => r["result"]["tools"].clone(),
            Err(_) => json!([]),
        }
    }

    /// One action.
    async fn step(&mut self, action: &Value) -> Value {
        if let Some(ended) = &self.ended {
            return observation(ended.clone(), ended["reward"].as_f64(), true);
        }
        match action["type"].as_str() {
            Some("call_tool") => {
                let Some(name) = action["tool_name"].as_str() else {
                    return error("VALIDATION_ERROR", "a call_tool action needs `tool_name`");
                };
                let params = json!({"name": name, "arguments": action.get("arguments").cloned().unwrap_or(json!({}))});
                match self.rpc("tools/call", params).await {
                    Ok(r) => {
                        let obs = match r.get("error") {
                            Some(e) => json!({"tool_name": name, "result": null,
                                "error": {"error_type": "tool_not_found", "message": e["message"]}}),
                            None => {
                                json!({"tool_name": name, "result": r["result"], "error": null})
                            }
                        };
                        observation(obs, None, false)
                    }
                    Err(why) => self.finish(Some(why)).await,
                }
            }
            Some("list_tools") => {
                let tools = self.list_tools().await;
                observation(json!({"tools": tools}), None, false)
            }
            Some("end") => self.finish(None).await,
            _ => error(
                "VALIDATION_ERROR",
                "an action is {\"type\": \"call_tool\", \"tool_name\", \"arguments\"}, {\"type\": \"list_tools\"} or {\"type\": \"end\"}",
            ),
        }
    }

    /// End the run (graded, written to the store): the last observation.
    /// `stopped` says why the mediator stopped it, if it did.
    async fn finish(&mut self, stopped: Option<String>) -> Value {
        if self.ended.is_none() {
            self.handle.end(Exit::disconnected());
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
            "step_count": self.steps,
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

/// The mediator's job for one MCP request of an episode, as a session's
/// step sends it and a replay sends it again: JSON-RPC over the loopback
/// WebSocket route.
fn mcp_job(id: u64, method: &str, params: Value) -> session::Job {
    let body = worldline_case::canon::to_string(
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .into_bytes();
    let via = Via::Loopback {
        method: "WS".into(),
        path: "/ws".into(),
    };
    Box::new(move |st| st.answer_http(&Route::Mcp, "POST", "", &body, &via))
}

/// Replay a served episode (`agent` its recorded identity): each step's
/// request is derived again from the recorded events (`tools.call` and
/// `tools.specs` over the loopback) and pushed through the same mediation
/// a live session uses, the run following its recording (`opts`), then
/// ended as a client's `end` ends it (decision 0353).
pub fn rerun(
    sandbox: &Sandbox,
    case: &Case,
    agent: NativeAgent,
    opts: RunOptions,
    events: &[worldline_log::log::Event],
) -> Result<RunOutcome> {
    let header = super::header(sandbox, case, agent);
    let (handle, receiver) = session::channel();
    std::thread::scope(|s| {
        let mediator = s.spawn(|| session::mediate(sandbox, case, header, opts, receiver));
        for (id, (method, params)) in events.iter().filter_map(request_of).enumerate() {
            let job = mcp_job(id as u64 + 1, method, params);
            if let Reply::Stopped(_) = handle.call_blocking(job) {
                break;
            }
        }
        handle.end(Exit::disconnected());
        mediator
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the mediator thread panicked")))
    })
}

/// The MCP request a recorded event answered, when a step sent one.
fn request_of(event: &worldline_log::log::Event) -> Option<(&'static str, Value)> {
    use worldline_log::log::Call;
    match event.typed() {
        Call::ToolsCall { request, .. } if request.transport.is_some() => Some((
            "tools/call",
            json!({"name": request.name, "arguments": request.args.unwrap_or(json!({}))}),
        )),
        Call::ToolsSpecs { request, .. } if request.transport.is_some() => {
            Some(("tools/list", json!({})))
        }
        _ => None,
    }
}
