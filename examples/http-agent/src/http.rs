//! A small blocking HTTP client over `wasi:http` (the `wasip2` bindings):
//! the request is handed over first and its body written after, as async
//! clients do.

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
};
use wasip2::io::streams::StreamError;

/// A response, read whole.
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
    }
}

/// How long the agent waits for a response's first byte.
const FIRST_BYTE_TIMEOUT_NS: u64 = 60_000_000_000;

pub fn get(url: &str) -> Result<Response, String> {
    send(Method::Get, url, None, &[])
}

pub fn post_json(url: &str, body: &str, headers: &[(&str, &str)]) -> Result<Response, String> {
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    send(Method::Post, url, Some(body.as_bytes()), &all)
}

/// `method url` with an optional JSON body.
pub fn request(method: &str, url: &str, body: Option<&str>) -> Result<Response, String> {
    let m = match method {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "PATCH" => Method::Patch,
        "DELETE" => Method::Delete,
        other => Method::Other(other.to_string()),
    };
    let headers: &[(&str, &str)] = if body.is_some() {
        &[("content-type", "application/json")]
    } else {
        &[]
    };
    send(m, url, body.map(str::as_bytes), headers)
}

/// Sleep in the run's (virtual) time.
pub fn sleep_seconds(s: u64) {
    wasip2::clocks::monotonic_clock::subscribe_duration(s * 1_000_000_000).block();
}

/// A `wasi:http` error code by its name (`HttpRequestDenied`).
fn code_name(e: &ErrorCode) -> String {
    format!("{e:?}")
        .trim_start_matches("ErrorCode::")
        .to_string()
}

fn send(
    method: Method,
    url: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> Result<Response, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("no scheme in {url}"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let entries: Vec<(String, Vec<u8>)> = headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect();
    let fields = Fields::from_list(&entries).map_err(|e| format!("headers: {e:?}"))?;
    let request = OutgoingRequest::new(fields);
    request.set_method(&method).map_err(|()| "method")?;
    let scheme = if scheme == "http" {
        Scheme::Http
    } else {
        Scheme::Https
    };
    request.set_scheme(Some(&scheme)).map_err(|()| "scheme")?;
    request
        .set_authority(Some(authority))
        .map_err(|()| "authority")?;
    request
        .set_path_with_query(Some(path))
        .map_err(|()| "path")?;
    let out = request.body().map_err(|()| "body")?;
    let options = RequestOptions::new();
    options
        .set_first_byte_timeout(Some(FIRST_BYTE_TIMEOUT_NS))
        .map_err(|()| "timeout")?;
    let future = outgoing_handler::handle(request, Some(options)).map_err(|e| code_name(&e))?;
    if let Some(bytes) = body {
        let stream = out.write().map_err(|()| "body stream")?;
        for chunk in bytes.chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| format!("writing the body: {e:?}"))?;
        }
        drop(stream);
    }
    OutgoingBody::finish(out, None).map_err(|e| format!("finishing the body: {e:?}"))?;
    let response = loop {
        match future.get() {
            Some(r) => break r,
            None => future.subscribe().block(),
        }
    };
    let response = response
        .map_err(|()| "the response was taken")?
        .map_err(|e| code_name(&e))?;
    let status = response.status();
    let headers = response.headers().entries();
    let incoming = response.consume().map_err(|()| "response body")?;
    let mut data = Vec::new();
    {
        let stream = incoming.stream().map_err(|()| "response stream")?;
        loop {
            match stream.blocking_read(64 * 1024) {
                Ok(b) => data.extend(b),
                Err(StreamError::Closed) => break,
                Err(e) => return Err(format!("reading the response: {e:?}")),
            }
        }
    }
    IncomingBody::finish(incoming);
    Ok(Response {
        status,
        headers,
        body: data,
    })
}
