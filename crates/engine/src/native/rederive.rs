//! Runs of outside MCP clients re-executed from their own events: an
//! episode `worldline serve` recorded (decision 0353) and a `worldline
//! mcp` session (decision 0356). Each recorded MCP message is derived
//! again from its event (the tool call, the tools listed, a file read,
//! or the protocol's own answer to `initialize`, a notification, a
//! malformed message) with the transport it came by, and pushed through
//! the same mediation a live session uses, the run following its
//! recording (a replay or a fork's prefix); then the session ends as a
//! client's disconnect ends it.

use super::session::{self, Exit, Job, Reply};
use crate::run::{RunOptions, RunOutcome};
use anyhow::Result;
use serde_json::{Value, json};
use worldline_case::case::Case;
use worldline_log::log::bundle::{Footer, NativeAgent, Status};
use worldline_log::log::payload::Transport;
use worldline_log::log::{Call, Event, Header, Kind, rules};
use worldline_protocol::routes::Route;
use worldline_runtime::mediate::boundary::Via;
use worldline_runtime::sandbox::Sandbox;

/// The transports of runs whose messages are derived again from their
/// events: `worldline serve`'s episodes and `worldline mcp`'s sessions.
const TRANSPORTS: &[&str] = &["openenv", "mcp-stdio", "mcp-http"];

/// A run's recorded identity if it is re-executed from its events.
pub(crate) fn rederived(header: &Header) -> Option<&NativeAgent> {
    header
        .native
        .as_ref()
        .filter(|a| TRANSPORTS.contains(&a.transport.as_str()))
}

/// Whether a re-derived run is an MCP session (`worldline mcp`), not a
/// served episode.
pub(crate) fn is_mcp_session(agent: &NativeAgent) -> bool {
    agent.transport != "openenv"
}

/// What a run without a process of its own was, in words: a served
/// episode (`worldline serve`) or an MCP session (`worldline mcp`). The
/// errors of the commands that would start its process again say it.
pub(crate) fn session_kind(agent: &NativeAgent) -> &'static str {
    match is_mcp_session(agent) {
        false => "a served episode (`worldline serve`)",
        true => "an MCP session (`worldline mcp`)",
    }
}

/// What a run without a process of its own was, in a few words, as
/// `replay` says it (`an MCP session`, `a served episode`).
pub(crate) fn session_words(agent: &NativeAgent) -> &'static str {
    match is_mcp_session(agent) {
        false => "a served episode",
        true => "an MCP session",
    }
}

/// One MCP message as a client sent it: how it came and its body.
pub(crate) struct Message {
    pub via: Via,
    pub body: Vec<u8>,
    /// The JSON-RPC method, when the message names one.
    pub method: Option<String>,
}

/// The mediator's job for one message: a POST to the MCP route, as every
/// transport hands a message over (the recorded `via` says how it came).
pub(crate) fn job(message: Message) -> Job {
    Box::new(move |st| st.answer_http(&Route::Mcp, "POST", "", &message.body, &message.via))
}

/// A JSON-RPC request (`id` set) or notification to the MCP endpoint.
pub(crate) fn rpc(via: Via, id: Option<u64>, method: &str, params: Value) -> Message {
    let mut msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
    if let Some(id) = id {
        msg["id"] = json!(id);
    }
    Message {
        via,
        body: worldline_case::canon::to_string(&msg).into_bytes(),
        method: Some(method.into()),
    }
}

/// A message without `"jsonrpc"` naming `method`, which the endpoint
/// refuses under rules 10 with `status` (an id with 200, none with 400).
fn refused_rpc(via: Via, id: u64, method: &str, status: u16) -> Message {
    let mut msg = json!({"method": method});
    if status != 400 {
        msg["id"] = json!(id);
    }
    Message {
        via,
        body: worldline_case::canon::to_string(&msg).into_bytes(),
        method: Some(method.into()),
    }
}

/// Re-execute `case` from `events` (`agent` the run's recorded identity;
/// `opts` following the recording): each derived message in order, then
/// the end of the session, as `recorded` (the run's footer) says it ended:
/// its status, and an episode its client left is left so again.
pub(crate) fn rerun(
    sandbox: &Sandbox,
    case: &Case,
    agent: NativeAgent,
    opts: RunOptions,
    events: &[Event],
    recorded: Option<&Footer>,
) -> Result<RunOutcome> {
    let ended = recorded.map(|f| f.status);
    let header = super::header(sandbox, case, agent);
    let rules = opts.rules_under();
    let (handle, receiver) = session::channel();
    std::thread::scope(|s| {
        let mediator = s.spawn(|| session::mediate(sandbox, case, header, opts, receiver));
        let mut sent = 0;
        let mut stopped = false;
        let (mut last_call, mut last_sent) = (None, None);
        for event in events {
            let Some(message) = message_of(event, sent + 1, rules) else {
                continue;
            };
            sent += 1;
            last_sent = Some(event);
            if Kind::of(&event.call) == Some(Kind::ToolsCall) {
                last_call = Some(event);
            }
            if let Reply::Stopped(_) = handle.call_blocking(job(message)) {
                stopped = true;
                break;
            }
        }
        // The message a limit refused was not recorded (it was refused
        // before it was served): the client sent it after the last event,
        // so it is sent again, and the run ends at the limit as it did,
        // not `completed`. A step `[limits] max_steps` refused is sent as
        // a tool call, as the last was; the message past `max_events`
        // (`trapped` with the events full) as any message the mediator
        // answers, which it refuses before reading it.
        let refused = match ended {
            Some(Status::StepLimit) => last_call,
            Some(Status::Trapped) if events.len() as u64 >= case.limits.max_events => {
                last_call.or(last_sent)
            }
            _ => None,
        };
        if !stopped && let Some(message) = refused.and_then(|e| message_of(e, sent + 1, rules)) {
            handle.call_blocking(job(message));
        }
        handle.end(match recorded.and_then(|f| f.truncated.clone()) {
            Some(why) => Exit::truncated(why),
            None => Exit::disconnected(),
        });
        mediator
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the mediator thread panicked")))
    })
}

/// The message a recorded event answered, with JSON-RPC id `id`, in a run
/// under `rules`; `None` for an event no MCP message made.
pub(crate) fn message_of(event: &Event, id: u64, rules: u32) -> Option<Message> {
    let typed = event.typed();
    let mut transport = typed.transport()?.clone();
    if transport.api() != Route::Mcp.api() {
        return None;
    }
    let via = match &transport {
        Transport::Loopback(l) => Via::Loopback {
            method: l.method.clone(),
            path: l.path.clone(),
        },
        Transport::Stdio(_) => Via::Stdio,
        Transport::Http(_) | Transport::Proxy(_) => return None,
    };
    Some(match typed {
        Call::ToolsCall { request, .. } => {
            let args = request.args.unwrap_or(json!({}));
            rpc(
                via,
                Some(id),
                "tools/call",
                json!({"name": request.name, "arguments": args}),
            )
        }
        Call::ToolsSpecs { .. } => rpc(via, Some(id), "tools/list", json!({})),
        Call::FilesPaths { .. } => rpc(via, Some(id), "resources/list", json!({})),
        Call::FilesRead { request, .. } => {
            let uri =
                worldline_protocol::mcp::file_uri(request.path.as_deref().unwrap_or_default());
            rpc(via, Some(id), "resources/read", json!({"uri": uri}))
        }
        Call::LoopbackAnswer { response, .. } | Call::StdioAnswer { response, .. } => {
            // The protocol answered alone: the method (if any) and the
            // status are what the record keeps, and all that answer
            // depends on that it records.
            let method = transport.detail_mut()["rpc"].as_str().map(str::to_string);
            let body: &[u8] = match (method, response.status == 202) {
                (Some(m), true) => return Some(rpc(via, None, &m, json!({}))),
                // From rules 10 a message without `"jsonrpc"` is refused
                // with its method and the status its id gives (200 with a
                // number, 400 without), whatever the method: the record
                // of any answer the protocol gave alone.
                (Some(m), false) if rules >= rules::MCP_JSON_RPC_CHECKED => {
                    return Some(refused_rpc(via, id, &m, response.status));
                }
                (Some(m), false) => return Some(rpc(via, Some(id), &m, json!({}))),
                // A client's response to a request (accepted), or a
                // message that was not JSON-RPC.
                (None, true) => br#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
                (None, false) => b"not JSON-RPC",
            };
            Message {
                via,
                body: body.to_vec(),
                method: None,
            }
        }
        _ => return None,
    })
}
