//! `wasi:http/outgoing-handler.handle` and the future it returns: a
//! request is routed by method and URL (`protocol::routes`) when it is
//! handed over; a routed one is answered the first time the agent waits
//! for or asks for its response, once its body is written: a model API
//! call becomes the case's model call and an MCP `tools/call` the world's
//! tool call (the same events `model.complete` and `tools.call` record,
//! with a `transport`), and the answer becomes the vendor's bytes.

use super::{DENIED, method_name, scheme_name};
use crate::mediate::RunState;
use crate::mediate::bindings::wasi::http::types::ErrorCode;
use crate::mediate::bindings::{
    HttpFuture, HttpOptions, HttpOutcome, HttpRequest, HttpResponse, Pollable, wasi,
};
use crate::protocol::anthropic;
use crate::protocol::mcp::{self, McpTool, Step};
use crate::protocol::openai_chat::{self, Reply};
use crate::protocol::openai_responses;
use crate::protocol::rest;
use crate::protocol::routes::{self, Route};
use serde_json::{Value, json};
use wasmtime::component::Resource;

/// How long a stalled request waits, in virtual time, when the request
/// sets no first-byte timeout: the official SDKs' default request
/// timeout (10 minutes).
const DEFAULT_STALL_NS: u64 = 600 * 1_000_000_000;

/// The call that records answers the protocol gives by itself (MCP
/// `initialize`, notifications, a body that is not JSON, ...).
const PROTOCOL_CALL: &str = crate::log::Kind::ProtocolAnswer.name();

impl RunState {
    /// The base URLs answered as model APIs besides the vendors' own.
    fn model_bases(&self) -> Vec<String> {
        self.med
            .services
            .model
            .base_url()
            .map(String::from)
            .into_iter()
            .collect()
    }

    /// Answer the routed request of `f` if it is not answered yet.
    fn resolve(&mut self, f: &Resource<HttpFuture>) -> wasmtime::Result<()> {
        let future = self.table.get(f)?;
        if future.outcome.is_some() {
            return Ok(());
        }
        let (method, url) = (future.method.clone(), future.url.clone());
        // Taken out: an answered body no longer counts against the run's cap.
        let body = future.body.take();
        let stall = future.first_byte_timeout.unwrap_or(DEFAULT_STALL_NS);
        let transport = |api: &str| json!({"http": {"api": api, "method": method, "url": url}});
        let response = match routes::route(&method, &url, &self.model_bases()) {
            Route::OpenaiChat => self.model_request(
                transport(Route::OpenaiChat.api()),
                openai_chat::parse(&body),
                |r| (r.request.clone(), r.stream),
                openai_chat::reply,
            )?,
            Route::OpenaiResponses => self.model_request(
                transport(Route::OpenaiResponses.api()),
                openai_responses::parse(&body),
                |r| (r.request.clone(), r.stream),
                openai_responses::reply,
            )?,
            Route::AnthropicMessages => self.model_request(
                transport(Route::AnthropicMessages.api()),
                anthropic::parse(&body),
                |r| (r.request.clone(), r.stream),
                anthropic::reply,
            )?,
            Route::Mcp => Some(self.mcp(&method, &body, transport(Route::Mcp.api()))?),
            Route::Unknown => self.world_route(&method, &url, &body, transport("rest"))?,
        };
        let now = self.med.services.clock.mono_ns();
        let ready_at = match response {
            Some(_) => now,
            None => now.saturating_add(stall),
        };
        self.table.get_mut(f)?.outcome = Some(HttpOutcome { ready_at, response });
        Ok(())
    }

    /// Record an answer the protocol gave without a model or tool call.
    fn protocol_answer(
        &mut self,
        mut transport: Value,
        detail: Value,
        r: crate::protocol::HttpResponse,
    ) -> wasmtime::Result<crate::protocol::HttpResponse> {
        if let (Value::Object(t), Value::Object(d)) = (&mut transport["http"], detail) {
            t.extend(d);
        }
        self.call_fixed(PROTOCOL_CALL, transport, json!({"status": r.status}))?;
        Ok(r)
    }

    /// A model API request: one model call for the request `parsed` into
    /// (`parts` gives the chat-completions request and whether it streams),
    /// answered by `reply`; `None` for a stall. A body the API refuses is
    /// answered by the protocol alone.
    fn model_request<T>(
        &mut self,
        mut transport: Value,
        parsed: Result<T, crate::protocol::HttpResponse>,
        parts: impl FnOnce(&T) -> (Value, bool),
        reply: impl FnOnce(&T, &Value) -> Reply,
    ) -> wasmtime::Result<Option<crate::protocol::HttpResponse>> {
        let req = match parsed {
            Ok(r) => r,
            Err(r) => {
                let detail = json!({"error": "the API refused the body"});
                return self.protocol_answer(transport, detail, r).map(Some);
            }
        };
        let (request, stream) = parts(&req);
        transport["http"]["stream"] = json!(stream);
        let response = self.model_call(request, Some(transport))?;
        Ok(match reply(&req, &response) {
            Reply::Http(r) => Some(r),
            Reply::Stall => None,
        })
    }

    /// A request to one of the world's own routes: its tool's call, or
    /// `None` for a stall (a timeout).
    fn world_route(
        &mut self,
        method: &str,
        url: &str,
        body: &[u8],
        transport: Value,
    ) -> wasmtime::Result<Option<crate::protocol::HttpResponse>> {
        let world = self.med.services.world.world.clone();
        let Some((route, from_url)) = rest::find(&world.routes, method, url) else {
            unreachable!("unrouted requests are denied when handed over")
        };
        let params = world
            .tool(&route.tool)
            .map_or(Value::Null, |t| t.params.clone());
        let args = match rest::arguments(from_url, &params, body) {
            Ok(a) => a,
            Err(r) => {
                let detail = json!({"error": "the body is not a JSON object"});
                return self.protocol_answer(transport, detail, r).map(Some);
            }
        };
        let r = self.tool_call(&route.tool, Ok(args.clone()), args, Some(transport))?;
        Ok(rest::reply(&r))
    }

    /// A request to the world's MCP endpoint.
    fn mcp(
        &mut self,
        method: &str,
        body: &[u8],
        transport: Value,
    ) -> wasmtime::Result<crate::protocol::HttpResponse> {
        match mcp::request(method, body) {
            Step::Reply { method, response } => {
                self.protocol_answer(transport, json!({"rpc": method}), response)
            }
            Step::ListTools { id } => {
                let specs = self.permitted_tools(transport)?;
                let tools: Vec<McpTool> = specs
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|t| McpTool {
                        name: t["name"].as_str().unwrap_or_default().to_string(),
                        description: t["description"].as_str().unwrap_or_default().to_string(),
                        input_schema: t["params"].clone(),
                    })
                    .collect();
                Ok(mcp::tools_list(&id, &tools))
            }
            Step::CallTool { id, name, args } => {
                let r = self.tool_call(&name, Ok(args.clone()), args, Some(transport))?;
                Ok(mcp::tool_result(&id, &r))
            }
            Step::ListResources { id } => {
                let r = self.file_paths("", Some(transport))?;
                Ok(mcp::resources_list(&id, &r))
            }
            Step::ReadResource { id, path } => {
                let r = self.file_read(&path, Some(transport))?;
                Ok(mcp::resource_read(&id, &path, &r))
            }
        }
    }
}

impl wasi::http::outgoing_handler::Host for RunState {
    fn handle(
        &mut self,
        r: Resource<HttpRequest>,
        options: Option<Resource<HttpOptions>>,
    ) -> wasmtime::Result<Result<Resource<HttpFuture>, ErrorCode>> {
        let req = self.table.delete(r)?;
        let first_byte_timeout = match options {
            Some(o) => self.table.delete(o)?.first_byte,
            None => None,
        };
        let url = format!(
            "{}://{}{}",
            req.scheme.as_ref().map_or("https".into(), scheme_name),
            req.authority.as_deref().unwrap_or(""),
            req.path.as_deref().unwrap_or("/")
        );
        let method = method_name(&req.method);
        let request = json!({"method": method, "url": url});
        let route = routes::route(&method, &url, &self.model_bases());
        let world_route =
            rest::find(&self.med.services.world.world.routes, &method, &url).is_some();
        if route == Route::Unknown && !world_route {
            self.denied("wasi:http/outgoing-handler.handle", request, DENIED)?;
            return Ok(Err(ErrorCode::HttpRequestDenied));
        }
        let api = if world_route && route == Route::Unknown {
            "rest"
        } else {
            route.api()
        };
        self.plumbing(
            "wasi:http/outgoing-handler.handle",
            || request,
            || json!({"route": api}),
        )?;
        Ok(Ok(self.table.push(HttpFuture {
            method,
            url,
            body: req.body,
            first_byte_timeout,
            outcome: None,
            taken: false,
        })?))
    }
}

impl wasi::http::types::HostFutureIncomingResponse for RunState {
    fn subscribe(&mut self, f: Resource<HttpFuture>) -> wasmtime::Result<Resource<Pollable>> {
        self.resolve(&f)?;
        let deadline = self
            .table
            .get(&f)?
            .outcome
            .as_ref()
            .map_or(0, |o| o.ready_at);
        self.plumbing(
            "wasi:http/types.future-incoming-response.subscribe",
            || json!({"deadline": deadline}),
            || Value::Null,
        )?;
        Ok(self.table.push(Pollable { deadline })?)
    }

    #[allow(clippy::type_complexity)]
    fn get(
        &mut self,
        f: Resource<HttpFuture>,
    ) -> wasmtime::Result<Option<Result<Result<Resource<HttpResponse>, ErrorCode>, ()>>> {
        self.resolve(&f)?;
        let now = self.med.services.clock.mono_ns();
        let future = self.table.get_mut(&f)?;
        let Some(outcome) = future.outcome.as_mut() else {
            unreachable!("resolve answers every future")
        };
        let (answer, shown) = if future.taken {
            (Some(Err(())), json!({"taken": true}))
        } else if now < outcome.ready_at {
            (None, json!({"pending": true}))
        } else {
            future.taken = true;
            match outcome.response.take() {
                Some(r) => {
                    let shown = json!({"status": r.status, "bytes": r.body.len()});
                    let response = HttpResponse {
                        status: r.status,
                        headers: r
                            .headers
                            .into_iter()
                            .map(|(n, v)| (n, v.into_bytes()))
                            .collect(),
                        body: Some(r.body),
                    };
                    (Some(Ok(Ok(response))), shown)
                }
                None => (
                    Some(Ok(Err(ErrorCode::ConnectionReadTimeout))),
                    json!({"error": "connection-read-timeout"}),
                ),
            }
        };
        self.plumbing(
            "wasi:http/types.future-incoming-response.get",
            || json!({}),
            || shown,
        )?;
        Ok(match answer {
            None => None,
            Some(Err(())) => Some(Err(())),
            Some(Ok(Err(e))) => Some(Ok(Err(e))),
            Some(Ok(Ok(r))) => Some(Ok(Ok(self.table.push(r)?))),
        })
    }

    fn drop(&mut self, f: Resource<HttpFuture>) -> wasmtime::Result<()> {
        self.plumbing(
            "wasi:http/types.future-incoming-response.drop",
            || json!({}),
            || Value::Null,
        )?;
        self.table.delete(f)?;
        Ok(())
    }
}
