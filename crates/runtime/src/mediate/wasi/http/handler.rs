//! `wasi:http/outgoing-handler.handle` and the future it returns: a
//! request is routed by method and URL (`protocol::routes`) when it is
//! handed over; a routed one is answered the first time the agent waits
//! for or asks for its response, once its body is written: a model API
//! call becomes the case's model call and an MCP `tools/call` the world's
//! tool call (the same events `model.complete` and `tools.call` record,
//! with a `transport`), and the answer becomes the vendor's bytes, ready
//! once its latency has passed (from rules 5: until then the run goes on).

use super::{DENIED, DENIED_BEFORE_RULES_4, method_name, scheme_name};
use crate::mediate::RunState;
use crate::mediate::bindings::wasi::http::types::ErrorCode;
use crate::mediate::bindings::{
    HttpFuture, HttpOptions, HttpOutcome, HttpRequest, HttpResponse, Pollable, wasi,
};
use crate::mediate::boundary::Via;
use serde_json::{Value, json};
use wasmtime::component::Resource;
use worldline_log::log::rules;
use worldline_protocol::rest;
use worldline_protocol::routes::{self, Route};

/// How long a stalled request waits, in virtual time, when the request
/// sets no first-byte timeout: the official SDKs' default request
/// timeout (10 minutes). From rules 5 also how long a slow answer is
/// waited for.
const DEFAULT_STALL_NS: u64 = 600 * 1_000_000_000;

impl RunState {
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
        let via = Via::Http {
            method: method.clone(),
            url: url.clone(),
        };
        let route = routes::route(&method, &url, &self.model_bases());
        let waited = self.med.services.clock.waited_ns();
        let response = self.answer_http(&route, &method, &url, &body, &via)?;
        let ready_time = self.med.rules() >= rules::HTTP_LATENCY_IS_READY_TIME;
        let clock = &mut self.med.services.clock;
        let now = clock.mono_ns();
        let outcome = if ready_time {
            // The answer is ready after its latency, unless the request's
            // first-byte timeout comes first; the run goes on from the
            // request (decision 0425).
            clock.take_back(clock.waited_ns().wrapping_sub(waited));
            let limit = clock.mono_ns().saturating_add(stall);
            match response {
                Some(r) if now <= limit => HttpOutcome {
                    ready_at: now,
                    response: Some(r),
                },
                _ => HttpOutcome {
                    ready_at: limit,
                    response: None,
                },
            }
        } else {
            let ready_at = match response {
                Some(_) => now,
                None => now.saturating_add(stall),
            };
            HttpOutcome { ready_at, response }
        };
        self.table.get_mut(f)?.outcome = Some(outcome);
        Ok(())
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
            let why = match self.med.rules() >= rules::HTTP_DENIED_SAYS_WHAT_IS_ANSWERED {
                true => DENIED,
                false => DENIED_BEFORE_RULES_4,
            };
            self.denied("wasi:http/outgoing-handler.handle", request, why)?;
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
