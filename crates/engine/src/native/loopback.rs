//! The loopback HTTP server of a native run: the model APIs (OpenAI Chat
//! Completions and Responses, Anthropic Messages, streamed or not) and the
//! world's MCP endpoint (Streamable HTTP), each request handed to the
//! session's mediator as the same call `wasi:http` makes inside the
//! sandbox, recorded with `{"loopback": {api, method, path}}` as its
//! transport (the path, never the port or the token, so two runs record
//! the same). It listens on loopback only and answers only requests that
//! name it by a loopback Host; with a token (`--exec`), only requests
//! carrying it (`Authorization: Bearer`, `x-api-key`, or a `/k/TOKEN`
//! path prefix), and bounded in time and bytes before they wait for the
//! mediator ([`super::guard`]). MCP sessions are the Streamable HTTP
//! transport's: `initialize` without a session id opens one (one client
//! at a time: a second is refused, 409, and so is a second `initialize`
//! in the session) and names it in `Mcp-Session-Id`; every later request
//! must carry that header (400 without it, 404 for a session this server
//! does not have); a DELETE of the session ends it. As `worldline mcp
//! --http`'s server ([`Loopback::mcp_only`]) it answers `/mcp` alone.
//! Sent as a proxy (`HTTP_PROXY`), a request is answered when the world
//! answers its URL and recorded and refused otherwise, tunnels included.
//! A timeout reaches the agent at once, as a 408 from a model API or a
//! 504 from a world route, so its retries cost no real time.
//!
//! Why a timeout reaches a native process at once (was decision 0232): an
//! injected or drawn model timeout is a 408 sent at once (a world route's a
//! 504, an MCP tool's an `isError` result), and every answer the SDKs retry
//! carries `retry-after-ms: 1`, because a native process waits in real time: a
//! stalled request would cost the vendor's whole timeout per retry (a fuzz
//! campaign would take hours), while the OpenAI and Anthropic SDKs still run
//! their retry logic as against the vendor. Dropping the connection would be
//! reported as a network failure, not a timeout. The run's clock does not
//! wait for it either (the vendor's wait is the client's own timeout,
//! which a native process does not say): the fault is recorded at once.

use super::guard::{self, AT_ONCE, Gate, MAX_BODY, error};
use super::session::{Handle, Job, Reply};
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, Semaphore};
use worldline_log::log::call::RefusedRequest;
use worldline_log::log::{Effect, kind, rules};
use worldline_protocol::rest;
use worldline_protocol::routes::{self, Route};
use worldline_protocol::{Fidelity, HttpResponse, anthropic};
use worldline_runtime::mediate::boundary::Via;
use worldline_runtime::mediate::{RunState, ServiceReply};

/// The base URL requests are routed under (never on the wire).
const BASE: &str = "http://loopback";

/// One run's server.
pub struct Loopback {
    session: Handle,
    port: u16,
    token: Option<String>,
    /// `worldline mcp --http`'s `--idle-timeout`: only `/mcp` is served,
    /// and an open session without a request for this long is ended.
    /// `None` for a run's own server (`--exec`).
    mcp_only: Option<Duration>,
    /// The MCP session handed to the one client, once it initialized.
    mcp_session: Mutex<Option<OpenSession>>,
    /// Notified when the MCP client ends its session (DELETE).
    pub closed: Notify,
    /// One per request being answered ([`AT_ONCE`]), taken once the
    /// request is authenticated and its body read ([`super::guard`]).
    pub(super) permits: Semaphore,
}

/// The MCP session a client opened: its id, and when it last sent a
/// request (or got an answer).
struct OpenSession {
    id: String,
    seen: Instant,
}

impl Loopback {
    /// A native run's server (`--exec`): the model APIs, the proxy and
    /// `/mcp`, each request carrying `token`.
    pub fn new(session: Handle, port: u16, token: Option<String>) -> Arc<Self> {
        Self::with(session, port, token, None)
    }

    /// `worldline mcp --http`'s server: `/mcp` alone (an MCP client has no
    /// use for the rest, and a replay derives only MCP messages again), the
    /// open session ended once it sends nothing for `idle`.
    pub fn mcp_only(session: Handle, port: u16, idle: Duration) -> Arc<Self> {
        Self::with(session, port, None, Some(idle))
    }

    fn with(
        session: Handle,
        port: u16,
        token: Option<String>,
        mcp_only: Option<Duration>,
    ) -> Arc<Self> {
        Arc::new(Loopback {
            session,
            port,
            token,
            mcp_only,
            mcp_session: Mutex::new(None),
            closed: Notify::new(),
            permits: Semaphore::new(AT_ONCE),
        })
    }

    /// Whether the open MCP session has sent nothing for `--idle-timeout`
    /// (never without a session open, nor on a run's own server).
    pub fn idle(&self) -> bool {
        let open = self.mcp_session.lock().expect("session lock");
        self.mcp_only
            .zip(open.as_ref())
            .is_some_and(|(idle, s)| s.seen.elapsed() >= idle)
    }

    /// Note that the open session (id `id`) was heard from now.
    fn seen(&self, id: &str) {
        if let Some(s) = self.mcp_session.lock().expect("session lock").as_mut()
            && s.id == id
        {
            s.seen = Instant::now();
        }
    }
}

/// The server's routes: everything goes through [`guard::guard`], then
/// [`handle`]. Serve it with [`super::listen::serve`].
pub fn router(lb: Arc<Loopback>) -> axum::Router {
    axum::Router::new()
        .fallback(handle)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            lb.clone(),
            guard::guard::<Loopback>,
        ))
        .with_state(lb)
}

/// A mediated answer as sent. An answer the SDKs retry (408, 429, 5xx)
/// says `retry-after-ms: 1`, which the OpenAI and Anthropic SDKs prefer to
/// their own backoff: a native process waits in real time, and the wait
/// the vendor asked for is in the log as virtual time already.
fn response(r: HttpResponse) -> Response {
    let retried = matches!(r.status, 408 | 429) || r.status >= 500;
    let mut out = Response::new(Body::from(r.body));
    *out.status_mut() = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_GATEWAY);
    if retried {
        out.headers_mut()
            .insert("retry-after-ms", header::HeaderValue::from_static("1"));
    }
    for (name, value) in r.headers {
        if let (Ok(n), Ok(v)) = (
            header::HeaderName::try_from(name),
            header::HeaderValue::try_from(value),
        ) {
            out.headers_mut().append(n, v);
        }
    }
    out
}

/// Equal without an early exit on the first differing byte.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Loopback {
    /// Why the request does not name this server by a loopback Host, if
    /// it does not.
    pub(super) fn host_refused(&self, headers: &HeaderMap) -> Option<String> {
        super::guard::host_refused(headers, self.port)
    }

    /// The path the request asks for, once its token is checked (`None`:
    /// refused).
    pub(super) fn authorized<'p>(&self, path: &'p str, headers: &HeaderMap) -> Option<&'p str> {
        let Some(token) = &self.token else {
            return Some(path);
        };
        if let Some(rest) = path
            .strip_prefix("/k/")
            .and_then(|p| p.strip_prefix(token.as_str()))
            .filter(|r| r.is_empty() || r.starts_with('/'))
        {
            return Some(rest);
        }
        let presented = |name: header::HeaderName, scheme: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix(scheme))
                .is_some_and(|v| same(v.trim().as_bytes(), token.as_bytes()))
        };
        (presented(header::AUTHORIZATION, "Bearer ")
            || presented(header::HeaderName::from_static("x-api-key"), ""))
        .then_some(path)
    }

    /// Whether a proxied request carries the run's token as its proxy
    /// password (`Proxy-Authorization: Basic`).
    pub(super) fn proxy_authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        use base64::Engine as _;
        headers
            .get(header::PROXY_AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Basic "))
            .and_then(|b| {
                base64::engine::general_purpose::STANDARD
                    .decode(b.trim())
                    .ok()
            })
            .and_then(|d| String::from_utf8(d).ok())
            .and_then(|d| d.split_once(':').map(|(_, p)| p.to_string()))
            .is_some_and(|p| same(p.as_bytes(), token.as_bytes()))
    }

    async fn call(&self, job: Job) -> Result<Option<HttpResponse>, Response> {
        match self.session.call(job).await {
            Reply::Answered(r) => Ok(r),
            Reply::Stopped(why) => Err(error(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("the run has ended: {why}"),
            )),
        }
    }
}

/// Every request the guard let through: route, mediate.
async fn handle(
    State(lb): State<Arc<Loopback>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let proxy = method == Method::CONNECT || uri.scheme().is_some();
    if lb.mcp_only.is_some() && (proxy || uri.path().trim_end_matches('/') != "/mcp") {
        // Not recorded: a replay derives only MCP messages again.
        let target = if proxy {
            uri.to_string()
        } else {
            uri.path().to_string()
        };
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "{method} {target} is not served: `worldline mcp` serves the world's MCP endpoint alone, at /mcp"
            ),
        );
    }
    if proxy {
        return proxied(&lb, method.as_str(), &uri, body).await;
    }
    let Some(path) = lb.authorized(uri.path(), &headers) else {
        return error(
            StatusCode::UNAUTHORIZED,
            "this run's token is missing or wrong (use the OPENAI_API_KEY/ANTHROPIC_API_KEY worldline set)",
        );
    };
    let path = path.trim_end_matches('/').to_string();
    let method = method.as_str().to_string();
    if super::telemetry::direct(&method, &path) {
        return StatusCode::NO_CONTENT.into_response();
    }
    if path == "/mcp" {
        return mcp(&lb, &method, &headers, body).await;
    }
    let url = format!("{BASE}{path}");
    let bases = [format!("{BASE}/v1"), BASE.to_string()];
    let route = routes::route(&method, &url, &bases);
    let via = Via::Loopback {
        method: method.clone(),
        path: path.clone(),
    };
    if route == Route::Unknown {
        let request = RefusedRequest {
            method: method.clone(),
            path: Some(path.clone()),
            url: None,
            detail: Default::default(),
        };
        let job: Job = Box::new(move |st| {
            refuse(st, &request, "not a model API or the MCP endpoint")?;
            Ok(None)
        });
        return match lb.call(job).await {
            Ok(_) => error(
                StatusCode::NOT_FOUND,
                &format!(
                    "{method} {path} is not served: the model APIs are under /v1, the world's tools at /mcp"
                ),
            ),
            Err(r) => r,
        };
    }
    let job: Job = Box::new(move |st| {
        let answer = st.answer_http(&route, &method, &url, &body, &via)?;
        Ok(answer.or_else(|| anthropic_timeout(st, &route, StatusCode::REQUEST_TIMEOUT)))
    });
    match lb.call(job).await {
        Ok(Some(r)) => response(r),
        Ok(None) => timed_out(StatusCode::REQUEST_TIMEOUT),
        Err(r) => r,
    }
}

/// What a timed-out request is told.
const TIMED_OUT: &str =
    "Request timed out (an injected timeout; its virtual duration is in the run's log).";

/// A timeout, at once.
fn timed_out(status: StatusCode) -> Response {
    let mut out = error(status, TIMED_OUT);
    out.headers_mut()
        .insert("retry-after-ms", header::HeaderValue::from_static("1"));
    out
}

/// A timeout of an Anthropic Messages request, at once, in Anthropic's
/// error shape (`timeout_error`) from rules 9; `None` for another API's,
/// or under earlier rules, which [`timed_out`] answers in OpenAI's.
fn anthropic_timeout(st: &RunState, route: &Route, status: StatusCode) -> Option<HttpResponse> {
    (route == &Route::AnthropicMessages && st.fidelity() == Fidelity::Vendor)
        .then(|| anthropic::error(status.as_u16(), "timeout_error", TIMED_OUT))
}

/// A request sent to this server as a proxy (`HTTP_PROXY`): a URL the
/// world answers (a model API at its vendor's or the case's base URL, the
/// vendor's over plain http too, one of the world's `[[routes]]`) is the
/// same mediated call as over `wasi:http`; everything else, a `CONNECT`
/// tunnel included, is recorded and refused (403). The proxy credentials
/// carry the run's token (the guard checked them).
async fn proxied(lb: &Arc<Loopback>, method: &str, uri: &Uri, body: Bytes) -> Response {
    if let Some(quiet) = super::telemetry::answer(method, uri) {
        return quiet;
    }
    let (method, url) = (method.to_string(), uri.to_string());
    let via = Via::Proxy {
        method: method.clone(),
        url: url.clone(),
    };
    let tunnel = method == "CONNECT";
    let job: Job = Box::new(move |st| {
        let vendors_over_http = st.med.rules() >= rules::VENDOR_APIS_OVER_PLAIN_HTTP;
        let mut route = routes::route(&method, &url, &st.model_bases());
        // A vendor's model API is answered over plain http too (rules 3),
        // as an https route is below.
        if let (Route::Unknown, true, Some(rest)) =
            (&route, vendors_over_http, url.strip_prefix("http://"))
        {
            route = routes::route(&method, &format!("https://{rest}"), &[]);
        }
        let world = st.med.services.world().clone();
        // An https route is answered over plain http too: the proxy cannot
        // see into a tunnel.
        let url = match url.strip_prefix("http://") {
            Some(rest) if rest::find(&world.routes, &method, &url).is_none() => {
                let secure = format!("https://{rest}");
                match rest::find(&world.routes, &method, &secure) {
                    Some(_) => secure,
                    None => url,
                }
            }
            _ => url,
        };
        let served = route != Route::Unknown || rest::find(&world.routes, &method, &url).is_some();
        if tunnel || !served {
            let why = match tunnel {
                true => (super::tunnel::vendor_refusal(&url))
                    .filter(|_| vendors_over_http)
                    .unwrap_or_else(|| super::tunnel::refusal(&world.routes, &url, REFUSED)),
                false => REFUSED.to_string(),
            };
            let request = RefusedRequest {
                method,
                path: None,
                url: Some(url),
                detail: Default::default(),
            };
            refuse(st, &request, &why)?;
            let body = json!({"error": {"message": why, "type": "worldline", "code": null}});
            return Ok(Some(HttpResponse::json(403, &body)));
        }
        let answer = st.answer_http(&route, &method, &url, &body, &via)?;
        Ok(answer.or_else(|| anthropic_timeout(st, &route, StatusCode::GATEWAY_TIMEOUT)))
    });
    match lb.call(job).await {
        // A client shows a refused tunnel's status line, not its body.
        Ok(Some(r)) if tunnel => super::tunnel::with_reason(response(r), MAX_BODY).await,
        Ok(Some(r)) => response(r),
        Ok(None) => timed_out(StatusCode::GATEWAY_TIMEOUT),
        Err(r) => r,
    }
}

/// Record a request the world does not answer, refused.
fn refuse(st: &mut RunState, request: &RefusedRequest, why: &str) -> wasmtime::Result<()> {
    st.med
        .call::<kind::Refused>(request, |_| {
            ServiceReply::with_effect(json!({"error": why}), Effect::Denied)
        })
        .map_err(wasmtime::Error::new)?;
    Ok(())
}

/// Why the proxy refuses a request.
const REFUSED: &str =
    "not part of this world: the proxy answers the model APIs and the world's declared routes only";

/// The MCP endpoint: POST carries JSON-RPC to the mediator, within the
/// one session a client opened with `initialize`; DELETE ends that
/// session; GET (a stream of server messages) is not offered. A request
/// outside the session is refused before it reaches the mediator, so it
/// is not recorded.
async fn mcp(lb: &Arc<Loopback>, method: &str, headers: &HeaderMap, body: Bytes) -> Response {
    let presented = match headers.get("mcp-session-id").map(|v| v.to_str()) {
        None => None,
        Some(Ok(id)) => Some(id.to_string()),
        Some(Err(_)) => {
            return mcp_refusal(
                StatusCode::BAD_REQUEST,
                "the Mcp-Session-Id header is not text",
            );
        }
    };
    let open = |id: &str| {
        lb.mcp_session
            .lock()
            .expect("session lock")
            .as_ref()
            .is_some_and(|c| same(id.as_bytes(), c.id.as_bytes()))
    };
    match (method, &presented) {
        ("POST", _) => {}
        ("DELETE", Some(id)) if open(id) => {
            // The session is over: a later client may connect.
            *lb.mcp_session.lock().expect("session lock") = None;
            lb.closed.notify_one();
            return StatusCode::OK.into_response();
        }
        ("DELETE", Some(_)) => return unknown_session(),
        ("DELETE", None) => return session_missing(),
        _ => {
            return (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "POST, DELETE")],
            )
                .into_response();
        }
    }
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return mcp_refusal(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "an MCP message is sent as Content-Type: application/json",
        );
    }
    let parsed = serde_json::from_slice::<Value>(&body).ok();
    let initialize = parsed
        .as_ref()
        .is_some_and(|m| m["method"] == "initialize" && m.get("id").is_some());
    let new_session = match &presented {
        // Not recorded: what the session negotiated stands (the same
        // answer as over stdio, whose second `initialize` is refused too).
        Some(id) if open(id) && initialize => {
            return mcp_refusal(
                StatusCode::CONFLICT,
                "this session is initialized already: initialize once per session (a DELETE of it ends the run)",
            );
        }
        Some(id) if open(id) => None,
        Some(_) => return unknown_session(),
        None => {
            // Not JSON at all is said as what it is (it was told to open
            // a session, which its `initialize` cut short was trying to).
            if parsed.is_none() {
                return mcp_error(StatusCode::BAD_REQUEST, -32700, "Parse error");
            }
            if !initialize {
                return session_missing();
            }
            let mut slot = lb.mcp_session.lock().expect("session lock");
            if slot.is_some() {
                return mcp_refusal(StatusCode::CONFLICT, &lb.taken());
            }
            let id = match crate::native::random_token() {
                Ok(id) => id,
                Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
            };
            *slot = Some(OpenSession {
                id: id.clone(),
                seen: Instant::now(),
            });
            Some(id)
        }
    };
    let session = new_session.clone().or(presented).unwrap_or_default();
    lb.seen(&session);
    let via = Via::Loopback {
        method: "POST".into(),
        path: "/mcp".into(),
    };
    let job: Job = Box::new(move |st| st.answer_http(&Route::Mcp, "POST", "", &body, &via));
    let answered = lb.call(job).await;
    lb.seen(&session);
    match answered {
        Ok(Some(r)) => {
            // An `initialize` refused (no JSON-RPC 2.0 message, rules 10)
            // opens no session: the client may send it again.
            let opened =
                serde_json::from_slice::<Value>(&r.body).is_ok_and(|a| a.get("result").is_some());
            if new_session.is_some() && !opened {
                *lb.mcp_session.lock().expect("session lock") = None;
            }
            let mut out = response(r);
            if let Some(id) = new_session.filter(|_| opened)
                && let Ok(v) = header::HeaderValue::try_from(id)
            {
                out.headers_mut().insert("mcp-session-id", v);
            }
            out
        }
        Ok(None) => timed_out(StatusCode::GATEWAY_TIMEOUT),
        Err(r) => r,
    }
}

/// A refusal of the MCP transport: the status, with a JSON-RPC error
/// without an id as its body, as the specification allows.
fn mcp_refusal(status: StatusCode, message: &str) -> Response {
    mcp_error(status, -32000, message)
}

/// The status, with a JSON-RPC error of `code` without an id as its body.
fn mcp_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        worldline_case::canon::to_string(&body),
    )
        .into_response()
}

impl Loopback {
    /// Why a second client's `initialize` is refused (409), and what to do.
    fn taken(&self) -> String {
        let lead = "another MCP client's session is open on this run (one client per run)";
        match self.mcp_only {
            Some(idle) => format!(
                "{lead}: a client that lost its session goes on by sending its Mcp-Session-Id; otherwise end this server (Ctrl-C) and start it again, or wait until the open session has sent nothing for {} s (--idle-timeout) and is ended",
                idle.as_secs()
            ),
            None => format!("{lead}: send the Mcp-Session-Id the first initialize answered with"),
        }
    }
}

fn session_missing() -> Response {
    mcp_refusal(
        StatusCode::BAD_REQUEST,
        "no Mcp-Session-Id header: open a session with initialize (without one), then send the id it answered with on every request",
    )
}

fn unknown_session() -> Response {
    mcp_refusal(
        StatusCode::NOT_FOUND,
        "unknown MCP session (never opened here, or ended): initialize a new one without a session id",
    )
}

impl Gate for Loopback {
    fn host_refused(&self, headers: &HeaderMap) -> Option<String> {
        Loopback::host_refused(self, headers)
    }

    fn authorized<'p>(&self, path: &'p str, headers: &HeaderMap) -> Option<&'p str> {
        Loopback::authorized(self, path, headers)
    }

    fn proxy_authorized(&self, headers: &HeaderMap) -> bool {
        Loopback::proxy_authorized(self, headers)
    }

    fn permits(&self) -> &Semaphore {
        &self.permits
    }
}
