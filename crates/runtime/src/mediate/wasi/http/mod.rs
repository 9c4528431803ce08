//! `wasi:http`, answered by the world (protocol/ says how):
//!
//! - virtual: requests to a model API (`POST {base}/chat/completions` and
//!   `{base}/responses` at `https://api.openai.com/v1` or the case's
//!   `[model] base_url`, `POST {base}/v1/messages` at
//!   `https://api.anthropic.com` or it) are the case's model calls, requests to `http://world/mcp` the world's tools
//!   over MCP, each answered with the bytes and status the vendor would
//!   send; a timeout stalls the request in virtual time (`handler.rs`);
//! - recorded: each routed request as the same model or tool call event
//!   that `model.complete` or `tools.call` makes, with its `transport`
//!   noted (or a `wasi:http/protocol.answer` event for what the protocol
//!   answers alone); a guest's `Authorization` or `x-api-key` is neither
//!   recorded nor forwarded. The plumbing around it (fields, requests,
//!   bodies, futures, responses, their streams) answers without an event
//!   of its own, except while following a recording made when each of
//!   those calls was an event (decision 0276: then they are recorded as
//!   before, header names only);
//! - capped: a request body at 16 MiB, and the bodies a run holds (written,
//!   not yet answered) at 64 MiB together; a write past either traps the
//!   run with an error naming the cap;
//! - denied: every other request (`HTTP-request-denied`, recorded with its
//!   method and URL), and serving HTTP: the incoming-request,
//!   response-outparam and outgoing-response resources never exist.

mod handler;
mod response;

use super::super::RunState;
use super::super::bindings::wasi::http::types::{ErrorCode, HeaderError, Method, Scheme};
use super::super::bindings::{
    HttpBody, HttpFields, HttpOptions, HttpRequest, IoError, Never, SharedBody,
};
use super::super::bindings::{HttpResponseBody, OutputStream, wasi};
use serde_json::{Value, json};
use wasmtime::component::Resource;

/// The most one request body may hold.
pub(super) const MAX_REQUEST_BODY: usize = 16 << 20;
/// The most the request bodies a run holds (written, not yet answered or
/// dropped) may hold together.
pub(super) const MAX_BUFFERED_BODIES: usize = 64 << 20;

/// Why a request the world does not answer is denied, as recorded under
/// rules 3 and before.
const DENIED_BEFORE_RULES_4: &str =
    "HTTP requests are not part of a worldline world; reach a model through worldline:agent/model";

/// Why a request the world does not answer is denied.
const DENIED: &str = "not part of the world: only the model APIs (their public URLs and the case's [model] base_url), http://world/mcp and the world's declared routes are answered";

fn method_name(m: &Method) -> String {
    match m {
        Method::Get => "GET".into(),
        Method::Head => "HEAD".into(),
        Method::Post => "POST".into(),
        Method::Put => "PUT".into(),
        Method::Delete => "DELETE".into(),
        Method::Connect => "CONNECT".into(),
        Method::Options => "OPTIONS".into(),
        Method::Trace => "TRACE".into(),
        Method::Patch => "PATCH".into(),
        Method::Other(s) => s.clone(),
    }
}

fn scheme_name(s: &Scheme) -> String {
    match s {
        Scheme::Http => "http".into(),
        Scheme::Https => "https".into(),
        Scheme::Other(s) => s.clone(),
    }
}

fn clone_method(m: &Method) -> Method {
    match m {
        Method::Get => Method::Get,
        Method::Head => Method::Head,
        Method::Post => Method::Post,
        Method::Put => Method::Put,
        Method::Delete => Method::Delete,
        Method::Connect => Method::Connect,
        Method::Options => Method::Options,
        Method::Trace => Method::Trace,
        Method::Patch => Method::Patch,
        Method::Other(s) => Method::Other(s.clone()),
    }
}

fn clone_scheme(s: &Scheme) -> Scheme {
    match s {
        Scheme::Http => Scheme::Http,
        Scheme::Https => Scheme::Https,
        Scheme::Other(s) => Scheme::Other(s.clone()),
    }
}

fn never<T>(n: &Resource<Never>) -> wasmtime::Result<T> {
    wasmtime::bail!(
        "wasi:http resource {} can never exist in a worldline run",
        n.rep()
    )
}

impl RunState {
    /// A plumbing call of `wasi:http/types` (recorded only for a recording
    /// that has them, see `wasi/mod.rs`).
    fn http(&mut self, call: &str, request: impl FnOnce() -> Value) -> wasmtime::Result<()> {
        if self.http_plumbing() {
            self.call_fixed(&format!("wasi:http/types.{call}"), request(), Value::Null)?;
        }
        Ok(())
    }

    fn fields_mut(
        &mut self,
        f: &Resource<HttpFields>,
    ) -> wasmtime::Result<Result<&mut HttpFields, HeaderError>> {
        let fields = self.table.get_mut(f)?;
        Ok(if fields.immutable {
            Err(HeaderError::Immutable)
        } else {
            Ok(fields)
        })
    }
}

impl wasi::http::types::Host for RunState {
    fn http_error_code(&mut self, err: Resource<IoError>) -> wasmtime::Result<Option<ErrorCode>> {
        self.http("http-error-code", || json!({"handle": err.rep()}))?;
        Ok(None)
    }
}

impl wasi::http::types::HostFields for RunState {
    fn new(&mut self) -> wasmtime::Result<Resource<HttpFields>> {
        self.http("fields.new", || json!({}))?;
        Ok(self.table.push(HttpFields::default())?)
    }

    fn from_list(
        &mut self,
        entries: Vec<(String, Vec<u8>)>,
    ) -> wasmtime::Result<Result<Resource<HttpFields>, HeaderError>> {
        self.http("fields.from-list", || {
            let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
            json!({"names": names})
        })?;
        Ok(Ok(self.table.push(HttpFields {
            entries,
            immutable: false,
        })?))
    }

    fn get(&mut self, f: Resource<HttpFields>, name: String) -> wasmtime::Result<Vec<Vec<u8>>> {
        self.http("fields.get", || json!({"name": name}))?;
        Ok(self.table.get(&f)?.values(&name))
    }

    fn has(&mut self, f: Resource<HttpFields>, name: String) -> wasmtime::Result<bool> {
        self.http("fields.has", || json!({"name": name}))?;
        Ok(!self.table.get(&f)?.values(&name).is_empty())
    }

    fn set(
        &mut self,
        f: Resource<HttpFields>,
        name: String,
        values: Vec<Vec<u8>>,
    ) -> wasmtime::Result<Result<(), HeaderError>> {
        self.http("fields.set", || json!({"name": name}))?;
        Ok(self.fields_mut(&f)?.map(|fields| {
            fields.remove(&name);
            fields
                .entries
                .extend(values.into_iter().map(|v| (name.clone(), v)));
        }))
    }

    fn delete(
        &mut self,
        f: Resource<HttpFields>,
        name: String,
    ) -> wasmtime::Result<Result<(), HeaderError>> {
        self.http("fields.delete", || json!({"name": name}))?;
        Ok(self.fields_mut(&f)?.map(|fields| fields.remove(&name)))
    }

    fn append(
        &mut self,
        f: Resource<HttpFields>,
        name: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), HeaderError>> {
        self.http("fields.append", || json!({"name": name}))?;
        Ok(self
            .fields_mut(&f)?
            .map(|fields| fields.entries.push((name, value))))
    }

    fn entries(&mut self, f: Resource<HttpFields>) -> wasmtime::Result<Vec<(String, Vec<u8>)>> {
        self.http("fields.entries", || json!({}))?;
        Ok(self.table.get(&f)?.entries.clone())
    }

    fn clone(&mut self, f: Resource<HttpFields>) -> wasmtime::Result<Resource<HttpFields>> {
        self.http("fields.clone", || json!({}))?;
        let entries = self.table.get(&f)?.entries.clone();
        Ok(self.table.push(HttpFields {
            entries,
            immutable: false,
        })?)
    }

    fn drop(&mut self, f: Resource<HttpFields>) -> wasmtime::Result<()> {
        self.http("fields.drop", || json!({}))?;
        self.table.delete(f)?;
        Ok(())
    }
}

impl wasi::http::types::HostOutgoingRequest for RunState {
    fn new(&mut self, headers: Resource<HttpFields>) -> wasmtime::Result<Resource<HttpRequest>> {
        self.http("outgoing-request.new", || json!({}))?;
        let headers = self.table.delete(headers)?.entries;
        Ok(self.table.push(HttpRequest {
            method: Method::Get,
            path: None,
            scheme: None,
            authority: None,
            headers,
            body: SharedBody::new(&self.http_bodies),
            body_taken: false,
        })?)
    }

    fn body(
        &mut self,
        r: Resource<HttpRequest>,
    ) -> wasmtime::Result<Result<Resource<HttpBody>, ()>> {
        self.http("outgoing-request.body", || json!({}))?;
        let req = self.table.get_mut(&r)?;
        if req.body_taken {
            return Ok(Err(()));
        }
        req.body_taken = true;
        let data = req.body.clone();
        Ok(Ok(self.table.push(HttpBody { data })?))
    }

    fn method(&mut self, r: Resource<HttpRequest>) -> wasmtime::Result<Method> {
        self.http("outgoing-request.method", || json!({}))?;
        Ok(clone_method(&self.table.get(&r)?.method))
    }

    fn set_method(
        &mut self,
        r: Resource<HttpRequest>,
        method: Method,
    ) -> wasmtime::Result<Result<(), ()>> {
        self.http(
            "outgoing-request.set-method",
            || json!({"method": method_name(&method)}),
        )?;
        self.table.get_mut(&r)?.method = method;
        Ok(Ok(()))
    }

    fn path_with_query(&mut self, r: Resource<HttpRequest>) -> wasmtime::Result<Option<String>> {
        self.http("outgoing-request.path-with-query", || json!({}))?;
        Ok(self.table.get(&r)?.path.clone())
    }

    fn set_path_with_query(
        &mut self,
        r: Resource<HttpRequest>,
        path: Option<String>,
    ) -> wasmtime::Result<Result<(), ()>> {
        self.http(
            "outgoing-request.set-path-with-query",
            || json!({"path": path}),
        )?;
        self.table.get_mut(&r)?.path = path;
        Ok(Ok(()))
    }

    fn scheme(&mut self, r: Resource<HttpRequest>) -> wasmtime::Result<Option<Scheme>> {
        self.http("outgoing-request.scheme", || json!({}))?;
        Ok(self.table.get(&r)?.scheme.as_ref().map(clone_scheme))
    }

    fn set_scheme(
        &mut self,
        r: Resource<HttpRequest>,
        scheme: Option<Scheme>,
    ) -> wasmtime::Result<Result<(), ()>> {
        self.http(
            "outgoing-request.set-scheme",
            || json!({"scheme": scheme.as_ref().map(scheme_name)}),
        )?;
        self.table.get_mut(&r)?.scheme = scheme;
        Ok(Ok(()))
    }

    fn authority(&mut self, r: Resource<HttpRequest>) -> wasmtime::Result<Option<String>> {
        self.http("outgoing-request.authority", || json!({}))?;
        Ok(self.table.get(&r)?.authority.clone())
    }

    fn set_authority(
        &mut self,
        r: Resource<HttpRequest>,
        authority: Option<String>,
    ) -> wasmtime::Result<Result<(), ()>> {
        self.http(
            "outgoing-request.set-authority",
            || json!({"authority": authority}),
        )?;
        self.table.get_mut(&r)?.authority = authority;
        Ok(Ok(()))
    }

    fn headers(&mut self, r: Resource<HttpRequest>) -> wasmtime::Result<Resource<HttpFields>> {
        self.http("outgoing-request.headers", || json!({}))?;
        let entries = self.table.get(&r)?.headers.clone();
        Ok(self.table.push(HttpFields {
            entries,
            immutable: true,
        })?)
    }

    fn drop(&mut self, r: Resource<HttpRequest>) -> wasmtime::Result<()> {
        self.http("outgoing-request.drop", || json!({}))?;
        self.table.delete(r)?;
        Ok(())
    }
}

impl wasi::http::types::HostRequestOptions for RunState {
    fn new(&mut self) -> wasmtime::Result<Resource<HttpOptions>> {
        self.http("request-options.new", || json!({}))?;
        Ok(self.table.push(HttpOptions::default())?)
    }

    fn connect_timeout(&mut self, o: Resource<HttpOptions>) -> wasmtime::Result<Option<u64>> {
        self.http("request-options.connect-timeout", || json!({}))?;
        Ok(self.table.get(&o)?.connect)
    }

    fn set_connect_timeout(
        &mut self,
        o: Resource<HttpOptions>,
        d: Option<u64>,
    ) -> wasmtime::Result<Result<(), ()>> {
        self.http(
            "request-options.set-connect-timeout",
            || json!({"duration": d}),
        )?;
        self.table.get_mut(&o)?.connect = d;
        Ok(Ok(()))
    }

    fn first_byte_timeout(&mut self, o: Resource<HttpOptions>) -> wasmtime::Result<Option<u64>> {
        self.http("request-options.first-byte-timeout", || json!({}))?;
        Ok(self.table.get(&o)?.first_byte)
    }

    fn set_first_byte_timeout(
        &mut self,
        o: Resource<HttpOptions>,
        d: Option<u64>,
    ) -> wasmtime::Result<Result<(), ()>> {
        self.http(
            "request-options.set-first-byte-timeout",
            || json!({"duration": d}),
        )?;
        self.table.get_mut(&o)?.first_byte = d;
        Ok(Ok(()))
    }

    fn between_bytes_timeout(&mut self, o: Resource<HttpOptions>) -> wasmtime::Result<Option<u64>> {
        self.http("request-options.between-bytes-timeout", || json!({}))?;
        Ok(self.table.get(&o)?.between_bytes)
    }

    fn set_between_bytes_timeout(
        &mut self,
        o: Resource<HttpOptions>,
        d: Option<u64>,
    ) -> wasmtime::Result<Result<(), ()>> {
        self.http(
            "request-options.set-between-bytes-timeout",
            || json!({"duration": d}),
        )?;
        self.table.get_mut(&o)?.between_bytes = d;
        Ok(Ok(()))
    }

    fn drop(&mut self, o: Resource<HttpOptions>) -> wasmtime::Result<()> {
        self.http("request-options.drop", || json!({}))?;
        self.table.delete(o)?;
        Ok(())
    }
}

impl wasi::http::types::HostOutgoingBody for RunState {
    fn write(
        &mut self,
        b: Resource<HttpBody>,
    ) -> wasmtime::Result<Result<Resource<OutputStream>, ()>> {
        self.http("outgoing-body.write", || json!({}))?;
        let data = self.table.get(&b)?.data.clone();
        Ok(Ok(self.table.push(OutputStream::HttpBody(data))?))
    }

    fn finish(
        &mut self,
        b: Resource<HttpBody>,
        trailers: Option<Resource<HttpFields>>,
    ) -> wasmtime::Result<Result<(), ErrorCode>> {
        self.http("outgoing-body.finish", || json!({}))?;
        self.table.delete(b)?;
        if let Some(t) = trailers {
            self.table.delete(t)?;
        }
        Ok(Ok(()))
    }

    fn drop(&mut self, b: Resource<HttpBody>) -> wasmtime::Result<()> {
        self.http("outgoing-body.drop", || json!({}))?;
        self.table.delete(b)?;
        Ok(())
    }
}

// Resources only a server could hand out: never created.

impl wasi::http::types::HostIncomingRequest for RunState {
    fn method(&mut self, n: Resource<Never>) -> wasmtime::Result<Method> {
        never(&n)
    }
    fn path_with_query(&mut self, n: Resource<Never>) -> wasmtime::Result<Option<String>> {
        never(&n)
    }
    fn scheme(&mut self, n: Resource<Never>) -> wasmtime::Result<Option<Scheme>> {
        never(&n)
    }
    fn authority(&mut self, n: Resource<Never>) -> wasmtime::Result<Option<String>> {
        never(&n)
    }
    fn headers(&mut self, n: Resource<Never>) -> wasmtime::Result<Resource<HttpFields>> {
        never(&n)
    }
    fn consume(
        &mut self,
        n: Resource<Never>,
    ) -> wasmtime::Result<Result<Resource<HttpResponseBody>, ()>> {
        never(&n)
    }
    fn drop(&mut self, n: Resource<Never>) -> wasmtime::Result<()> {
        never(&n)
    }
}

impl wasi::http::types::HostResponseOutparam for RunState {
    fn send_informational(
        &mut self,
        n: Resource<Never>,
        _status: u16,
        _headers: Resource<HttpFields>,
    ) -> wasmtime::Result<Result<(), ErrorCode>> {
        never(&n)
    }
    fn set(
        &mut self,
        n: Resource<Never>,
        _response: Result<Resource<Never>, ErrorCode>,
    ) -> wasmtime::Result<()> {
        never(&n)
    }
    fn drop(&mut self, n: Resource<Never>) -> wasmtime::Result<()> {
        never(&n)
    }
}

impl wasi::http::types::HostOutgoingResponse for RunState {
    fn new(&mut self, headers: Resource<HttpFields>) -> wasmtime::Result<Resource<Never>> {
        self.table.delete(headers)?;
        wasmtime::bail!(
            "a worldline agent cannot answer HTTP requests (wasi:http outgoing-response)"
        )
    }
    fn status_code(&mut self, n: Resource<Never>) -> wasmtime::Result<u16> {
        never(&n)
    }
    fn set_status_code(
        &mut self,
        n: Resource<Never>,
        _code: u16,
    ) -> wasmtime::Result<Result<(), ()>> {
        never(&n)
    }
    fn headers(&mut self, n: Resource<Never>) -> wasmtime::Result<Resource<HttpFields>> {
        never(&n)
    }
    fn body(&mut self, n: Resource<Never>) -> wasmtime::Result<Result<Resource<HttpBody>, ()>> {
        never(&n)
    }
    fn drop(&mut self, n: Resource<Never>) -> wasmtime::Result<()> {
        never(&n)
    }
}
