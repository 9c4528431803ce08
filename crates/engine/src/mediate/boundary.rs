//! HTTP requests at the agent's boundary answered by the world, whatever
//! carried them (`wasi:http` inside the sandbox, a loopback server or MCP
//! over stdio for a native process): a routed request becomes the case's
//! model call or the world's tool call (the same events `model.complete`
//! and `tools.call` record, with the transport noted under its name), and
//! the answer becomes the bytes the vendor would send. `None` is a stall:
//! the transport says how a timeout reaches the agent.

use super::RunState;
use crate::protocol::HttpResponse;
use crate::protocol::anthropic;
use crate::protocol::mcp::{self, McpTool, Step};
use crate::protocol::openai_chat::{self, Reply};
use crate::protocol::openai_responses;
use crate::protocol::rest;
use crate::protocol::routes::Route;
use serde_json::{Value, json};

/// How a request arrived, as recorded beside its call: `{name: {api,
/// ...shown}}`, and the call that records answers the protocol gives by
/// itself (MCP `initialize`, notifications, a body that is not JSON).
pub struct Via {
    /// `"http"` (wasi:http), `"loopback"`, `"proxy"`, `"stdio"`.
    pub name: &'static str,
    /// What is shown of the request (method and URL or path).
    pub shown: Value,
    pub protocol_call: &'static str,
}

impl Via {
    fn transport(&self, api: &str) -> Value {
        let mut fields = self.shown.clone();
        fields["api"] = json!(api);
        json!({ self.name: fields })
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
                openai_chat::parse(body),
                |r| (r.request.clone(), r.stream),
                openai_chat::reply,
            )?,
            Route::OpenaiResponses => self.model_request(
                via,
                via.transport(route.api()),
                openai_responses::parse(body),
                |r| (r.request.clone(), r.stream),
                openai_responses::reply,
            )?,
            Route::AnthropicMessages => self.model_request(
                via,
                via.transport(route.api()),
                anthropic::parse(body),
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
        mut transport: Value,
        detail: Value,
        r: HttpResponse,
    ) -> wasmtime::Result<HttpResponse> {
        if let (Value::Object(t), Value::Object(d)) = (&mut transport[via.name], detail) {
            t.extend(d);
        }
        self.call_fixed(via.protocol_call, transport, json!({"status": r.status}))?;
        Ok(r)
    }

    /// A model API request: one model call for the request `parsed` into
    /// (`parts` gives the chat-completions request and whether it streams),
    /// answered by `reply`; `None` for a stall. A body the API refuses is
    /// answered by the protocol alone.
    fn model_request<T>(
        &mut self,
        via: &Via,
        mut transport: Value,
        parsed: Result<T, HttpResponse>,
        parts: impl FnOnce(&T) -> (Value, bool),
        reply: impl FnOnce(&T, &Value) -> Reply,
    ) -> wasmtime::Result<Option<HttpResponse>> {
        let req = match parsed {
            Ok(r) => r,
            Err(r) => {
                let detail = json!({"error": "the API refused the body"});
                return self.protocol_answer(via, transport, detail, r).map(Some);
            }
        };
        let (request, stream) = parts(&req);
        transport[via.name]["stream"] = json!(stream);
        let response = self.model_call(request, Some(transport))?;
        Ok(match reply(&req, &response) {
            Reply::Http(r) => Some(r),
            Reply::Stall => None,
        })
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
        let args = match rest::arguments(from_url, &params, body) {
            Ok(a) => a,
            Err(r) => {
                let detail = json!({"error": "the body is not a JSON object"});
                return self.protocol_answer(via, transport, detail, r).map(Some);
            }
        };
        let r = self.tool_call(&route.tool, Ok(args.clone()), args, Some(transport))?;
        Ok(rest::reply(&r))
    }

    /// A request to the world's MCP endpoint.
    fn mcp(&mut self, method: &str, body: &[u8], via: &Via) -> wasmtime::Result<HttpResponse> {
        let transport = via.transport(Route::Mcp.api());
        let files = !self.med.services.world().initial.files.is_empty();
        match mcp::request(method, body, files) {
            Step::Reply { method, response } => {
                self.protocol_answer(via, transport, json!({"rpc": method}), response)
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
