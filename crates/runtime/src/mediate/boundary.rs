//! HTTP requests at the agent's boundary answered by the world, whatever
//! carried them (`wasi:http` inside the sandbox, a loopback server or MCP
//! over stdio for a native process): a routed request becomes the case's
//! model call or the world's tool call (the same events `model.complete`
//! and `tools.call` record, with the transport noted under its name), and
//! the answer becomes the bytes the vendor would send. `None` is a stall:
//! the transport says how a timeout reaches the agent.

use super::RunState;
use serde_json::{Map, Value, json};
use worldline_case::world::state::FileData;
use worldline_log::log::call::{HttpRequest, HttpStatus, LoopbackRequest, StdioRequest, Transport};
use worldline_log::log::{kind, rules};
use worldline_protocol::anthropic;
use worldline_protocol::mcp::{self, McpTool, Step};
use worldline_protocol::openai_chat::{self, Reply};
use worldline_protocol::openai_responses;
use worldline_protocol::rest;
use worldline_protocol::routes::Route;
use worldline_protocol::{Fidelity, HttpResponse};

/// Which transport saw a request, and what is shown of it: the
/// transport writes its own variant of the log's [`Transport`], and the
/// kind that records answers the protocol gives by itself (an MCP
/// `initialize`, a notification, a body that is not JSON) follows from it.
pub enum Via {
    /// `wasi:http` inside the sandbox.
    Http { method: String, url: String },
    /// A native process's request through the run's proxy.
    Proxy { method: String, url: String },
    /// A native process's request to the run's loopback server.
    Loopback { method: String, path: String },
    /// A message over MCP on stdio.
    Stdio,
}

impl Via {
    /// The transport as recorded, for a request `api` answers.
    fn transport(&self, api: &str) -> Transport {
        let api = api.to_string();
        let detail = Map::new();
        match self {
            Via::Http { method, url } => Transport::Http(HttpRequest {
                api,
                method: method.clone(),
                url: url.clone(),
                detail,
            }),
            Via::Proxy { method, url } => Transport::Proxy(HttpRequest {
                api,
                method: method.clone(),
                url: url.clone(),
                detail,
            }),
            Via::Loopback { method, path } => Transport::Loopback(LoopbackRequest {
                api,
                method: method.clone(),
                path: path.clone(),
                detail,
            }),
            Via::Stdio => Transport::Stdio(StdioRequest { api, detail }),
        }
    }
}

impl RunState {
    /// Answer a request of `route` (`url` is matched against the world's
    /// routes when `route` is [`Route::Unknown`]); `None` for a stall.
    pub fn answer_http(
        &mut self,
        route: &Route,
        method: &str,
        url: &str,
        body: &[u8],
        via: &Via,
    ) -> wasmtime::Result<Option<HttpResponse>> {
        Ok(match route {
            Route::OpenaiChat => self.model_request(
                via,
                via.transport(route.api()),
                openai_chat::parse(
                    body,
                    self.med.rules() >= rules::CHAT_MESSAGES_CHECKED,
                    self.fidelity(),
                ),
                |r| (r.request.clone(), r.stream),
                openai_chat::reply,
            )?,
            Route::OpenaiResponses => self.model_request(
                via,
                via.transport(route.api()),
                openai_responses::parse(body, self.responses_carry(), self.fidelity()),
                |r| (r.request.clone(), r.stream),
                openai_responses::reply,
            )?,
            Route::AnthropicMessages => self.model_request(
                via,
                via.transport(route.api()),
                anthropic::parse(body, self.fidelity()),
                |r| (r.request.clone(), r.stream),
                anthropic::reply,
            )?,
            Route::Mcp => Some(self.mcp(method, body, via)?),
            Route::Unknown => self.world_route(method, url, body, via)?,
        })
    }

    /// The base URLs answered as model APIs besides the vendors' own.
    pub fn model_bases(&self) -> Vec<String> {
        self.med
            .services
            .model
            .base_url()
            .map(String::from)
            .into_iter()
            .collect()
    }

    /// Record an answer the protocol gave without a model or tool call.
    fn protocol_answer(
        &mut self,
        via: &Via,
        mut transport: Transport,
        detail: Map<String, Value>,
        r: HttpResponse,
    ) -> wasmtime::Result<HttpResponse> {
        transport.detail_mut().extend(detail);
        let status = HttpStatus { status: r.status };
        let serve = |_: &mut super::HostServices| super::ServiceReply::read(json!(status));
        match via {
            Via::Http { .. } => self.typed_call::<kind::ProtocolAnswer>(&transport, serve),
            Via::Proxy { .. } | Via::Loopback { .. } => {
                self.typed_call::<kind::LoopbackAnswer>(&transport, serve)
            }
            Via::Stdio => self.typed_call::<kind::StdioAnswer>(&transport, serve),
        }?;
        Ok(r)
    }

    /// A model API request: one model call for the request `parsed` into
    /// (`parts` gives the chat-completions request and whether it streams),
    /// answered by `reply`; `None` for a stall. A body the API refuses is
    /// answered by the protocol alone.
    fn model_request<T>(
        &mut self,
        via: &Via,
        mut transport: Transport,
        parsed: Result<T, HttpResponse>,
        parts: impl FnOnce(&T) -> (Value, bool),
        reply: impl FnOnce(&T, &Value) -> Reply,
    ) -> wasmtime::Result<Option<HttpResponse>> {
        let req = match parsed {
            Ok(r) => r,
            Err(r) => {
                let detail = noted("error", "the API refused the body");
                return self.protocol_answer(via, transport, detail, r).map(Some);
            }
        };
        let (request, stream) = parts(&req);
        transport
            .detail_mut()
            .insert("stream".into(), json!(stream));
        let seq = self.model_call(request, Some(transport))?.seq;
        Ok(match reply(&req, self.med.response(seq)) {
            Reply::Http(r) => Some(r),
            Reply::Stall => None,
        })
    }

    /// What a Responses request carries into its chat call under the run's
    /// rules (decision 0423).
    fn responses_carry(&self) -> openai_responses::Carried {
        if self.med.rules() >= rules::RESPONSES_FORMAT_AND_REASONING {
            openai_responses::Carried::FormatAndReasoning
        } else {
            openai_responses::Carried::Sampling
        }
    }

    /// How answers take the model APIs' shapes under the run's rules
    /// (decision 0423).
    pub fn fidelity(&self) -> Fidelity {
        if self.med.rules() >= rules::MODEL_APIS_ANSWER_AS_THE_VENDORS {
            Fidelity::Vendor
        } else {
            Fidelity::Loose
        }
    }

    /// A request to one of the world's own routes: its tool's call, or
    /// `None` for a stall (a timeout). The caller has checked the route
    /// exists ([`rest::find`]).
    fn world_route(
        &mut self,
        method: &str,
        url: &str,
        body: &[u8],
        via: &Via,
    ) -> wasmtime::Result<Option<HttpResponse>> {
        let world = self.med.services.world.world.clone();
        let Some((route, from_url)) = rest::find(&world.routes, method, url) else {
            unreachable!("unrouted requests are denied when handed over")
        };
        let transport = via.transport("rest");
        let params = world
            .tool(&route.tool)
            .map_or(Value::Null, |t| t.params.clone());
        let typing = if self.med.rules() >= rules::ROUTE_TEXT_BY_EVERY_TYPE {
            rest::Typing::EveryType
        } else {
            rest::Typing::OneName
        };
        let args = match rest::arguments(from_url, &params, body, typing) {
            Ok(a) => a,
            Err(r) => {
                let detail = noted("error", "the body is not a JSON object");
                return self.protocol_answer(via, transport, detail, r).map(Some);
            }
        };
        let r = self.tool_call(&route.tool, args, None, Some(transport))?;
        Ok(rest::reply(self.med.response(r.seq)))
    }

    /// A request to the world's MCP endpoint.
    fn mcp(&mut self, method: &str, body: &[u8], via: &Via) -> wasmtime::Result<HttpResponse> {
        let transport = via.transport(Route::Mcp.api());
        let files = !self.med.services.world().initial.files.is_empty();
        let checked = self.med.rules() >= rules::MCP_JSON_RPC_CHECKED;
        let exact = self.med.rules() >= rules::MCP_JSON_READ_EXACTLY;
        match mcp::request(method, body, files, checked, exact) {
            Step::Reply { method, response } => {
                self.protocol_answer(via, transport, noted("rpc", method), response)
            }
            Step::ListTools { id } => {
                let specs = self.permitted_tools(transport)?;
                let tools: Vec<McpTool> = specs
                    .into_iter()
                    .map(|t| McpTool {
                        name: t.name,
                        description: t.description,
                        input_schema: t.params,
                    })
                    .collect();
                Ok(mcp::tools_list(&id, &tools))
            }
            Step::CallTool { id, name, args } => {
                let r = self.tool_call(&name, args, None, Some(transport))?;
                Ok(mcp::tool_result(&id, self.med.response(r.seq)))
            }
            Step::ListResources { id } => {
                let r = self.file_paths("", Some(transport))?;
                // Each listed as `resources/read` would give it now.
                let files = &self.med.services.state().files;
                let binary = |p: &str| matches!(files.get(p), Some(FileData::Bytes { .. }));
                Ok(mcp::resources_list(&id, self.med.response(r.seq), binary))
            }
            Step::ReadResource { id, path } => {
                let r = self.file_read(&path, Some(transport))?;
                Ok(mcp::resource_read(&id, &path, self.med.response(r.seq)))
            }
        }
    }
}

/// One key noted beside a transport.
fn noted(key: &str, value: impl Into<Value>) -> Map<String, Value> {
    Map::from_iter([(key.to_string(), value.into())])
}
