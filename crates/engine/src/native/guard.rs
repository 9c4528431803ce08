//! The request guard of a run's loopback server, in this order, so that a
//! request that is not the agent's, or never finishes, holds nothing the
//! agent needs:
//! 1. authenticate from the headers alone: a proxied request by the run's
//!    token as its proxy password (407 without); any other by a loopback
//!    `Host` (403 naming the Host received and those accepted), an
//!    `Origin`, when sent, of this machine (403: the Streamable HTTP
//!    transport of MCP requires servers to check it, so a web page cannot
//!    drive the world), and the run's token when it has one (401);
//! 2. read the body, at most [`MAX_BODY`] bytes (413, at once when its
//!    `Content-Length` says more) within [`BODY_WITHIN`] of the headers
//!    (408);
//! 3. only then take one of the [`AT_ONCE`] slots the mediator's work is
//!    shared by.
//!
//! The time to the end of the headers is bounded by the accept loop
//! ([`super::listen`]).

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// The largest request body read (a long conversation fits; more is 413).
pub(super) const MAX_BODY: usize = 16 << 20;

/// Time for a request's body, from the end of its headers.
pub(super) const BODY_WITHIN: Duration = Duration::from_secs(10);

/// Requests answered at once (their bodies read): what they hold in
/// memory is bounded, and the mediator answers one at a time anyway.
pub(super) const AT_ONCE: usize = 8;

/// What the guard asks of the server it guards (the run's loopback
/// server: its address, its token and its slots).
pub(super) trait Gate {
    /// Why the `Host` does not name the server's loopback address
    /// (`None`: it does).
    fn host_refused(&self, headers: &HeaderMap) -> Option<String>;
    /// The path without the token's prefix, when the request carries the
    /// run's token (or the server has none).
    fn authorized<'p>(&self, path: &'p str, headers: &HeaderMap) -> Option<&'p str>;
    /// Whether a proxied request's proxy password is the run's token.
    fn proxy_authorized(&self, headers: &HeaderMap) -> bool;
    /// The [`AT_ONCE`] slots.
    fn permits(&self) -> &tokio::sync::Semaphore;
}

/// An error answer as the model APIs give one.
pub(super) fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "worldline", "code": null}});
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        worldline_case::canon::to_string(&body),
    )
        .into_response()
}

/// The guard, as middleware in front of every route.
pub(super) async fn guard<G: Gate>(State(lb): State<Arc<G>>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    if let Some(refused) = refusal(lb.as_ref(), &parts.method, &parts.uri, &parts.headers) {
        return refused;
    }
    // A body its headers declare larger than the bound is refused at once,
    // not after the time for a body that will not be read. What the client
    // sends meanwhile is read and dropped (for the time a body is given):
    // a client that writes its whole body before it reads the answer
    // (urllib) got a broken pipe, not the 413.
    if body.size_hint().lower() > MAX_BODY as u64 {
        tokio::spawn(tokio::time::timeout(BODY_WITHIN, drain(body)));
        return too_large();
    }
    let body = match tokio::time::timeout(BODY_WITHIN, read_body(body)).await {
        Ok(Ok(body)) => body,
        Ok(Err(refused)) => return refused,
        Err(_) => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the request's body did not arrive within {} s of its headers",
                    BODY_WITHIN.as_secs()
                ),
            );
        }
    };
    let Ok(_slot) = lb.permits().acquire().await else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the run's server is closing",
        );
    };
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// Why a request is refused from its headers alone, if it is.
fn refusal<G: Gate + ?Sized>(
    lb: &G,
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Option<Response> {
    if method == Method::CONNECT || uri.scheme().is_some() {
        if lb.proxy_authorized(headers) {
            return None;
        }
        let mut r = error(
            StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            "this run's proxy needs the run's token (HTTP_PROXY as worldline set it)",
        );
        r.headers_mut().insert(
            header::PROXY_AUTHENTICATE,
            header::HeaderValue::from_static("Basic realm=\"worldline\""),
        );
        return Some(r);
    }
    if let Some(why) = lb.host_refused(headers) {
        return Some(error(StatusCode::FORBIDDEN, &why));
    }
    if !origin_ok(headers) {
        return Some(error(
            StatusCode::FORBIDDEN,
            "a request from a web page of another origin is refused: only pages of this machine (http://127.0.0.1, http://localhost, http://[::1]) may send one",
        ));
    }
    if lb.authorized(uri.path(), headers).is_none() {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "this run's token is missing or wrong (use the OPENAI_API_KEY/ANTHROPIC_API_KEY worldline set)",
        ));
    }
    None
}

/// Why the request's `Host` does not name a loopback server at `port`
/// (`127.0.0.1`, `localhost` or `[::1]`, with the port), in words that
/// name the Host received and those accepted; `None` when it names one.
/// A name that resolves elsewhere (a DNS rebinding) is not this
/// machine's. Host names are compared without regard to case
/// (`LOCALHOST:8000` was refused), and a request with more than one
/// `Host` is no one's. Every loopback server's check (`mcp --http`, the
/// `--exec` proxy, `serve`, `ui`).
pub fn host_refused(headers: &HeaderMap, port: u16) -> Option<String> {
    const NAMES: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];
    let accepted = format!("`127.0.0.1:{port}`, `localhost:{port}` or `[::1]:{port}`");
    let mut hosts = headers.get_all(header::HOST).iter();
    let (Some(host), None) = (hosts.next(), hosts.next()) else {
        return Some(if headers.contains_key(header::HOST) {
            format!("more than one Host header: send one, {accepted}")
        } else {
            format!("no Host header: this server answers requests to {accepted}")
        });
    };
    let Ok(host) = host.to_str() else {
        return Some(format!(
            "the Host header is not text: this server answers requests to {accepted}"
        ));
    };
    let ok = NAMES
        .iter()
        .any(|n| host.eq_ignore_ascii_case(&format!("{n}:{port}")));
    (!ok).then(|| {
        format!(
            "Host `{}` does not name this server: use {accepted}",
            worldline_case::shown::text(host)
        )
    })
}

/// Whether the request's `Origin`, when it has one, is a page of this
/// machine (any port: a local MCP inspector is a client too). `null` and
/// anything that is not an http(s) origin are refused.
pub(super) fn origin_ok(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Some(uri) = origin
        .to_str()
        .ok()
        .and_then(|o| o.parse::<axum::http::Uri>().ok())
    else {
        return false;
    };
    matches!(uri.scheme_str(), Some("http" | "https"))
        && matches!(uri.path(), "" | "/")
        && uri.query().is_none()
        && matches!(
            uri.host().map(str::to_ascii_lowercase).as_deref(),
            Some("127.0.0.1" | "localhost" | "[::1]")
        )
}

/// The body, refused past [`MAX_BODY`] bytes.
async fn read_body(mut body: Body) -> Result<Bytes, Response> {
    let mut bytes: Vec<u8> = Vec::new();
    while let Some(frame) = next_frame(&mut body).await {
        let Ok(frame) = frame else {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "the request's body could not be read",
            ));
        };
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > MAX_BODY {
                return Err(too_large());
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(bytes))
}

/// Read `body` to its end, keeping nothing.
async fn drain(mut body: Body) {
    while let Some(Ok(_)) = next_frame(&mut body).await {}
}

/// The body's next frame, if it has one.
async fn next_frame(body: &mut Body) -> Option<Result<hyper::body::Frame<Bytes>, axum::Error>> {
    std::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_frame(cx)).await
}

fn too_large() -> Response {
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("the request's body is larger than {MAX_BODY} bytes"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_origin(origin: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ORIGIN, origin.parse().unwrap());
        h
    }

    #[test]
    fn only_this_machine_s_pages_are_origins_let_in() {
        assert!(origin_ok(&HeaderMap::new()));
        for ok in [
            "http://127.0.0.1:6274",
            "http://localhost",
            "https://[::1]:8080",
        ] {
            assert!(origin_ok(&with_origin(ok)), "{ok}");
        }
        for bad in [
            "https://evil.example",
            "null",
            "http://127.0.0.1.evil.example",
            "http://localhost.evil.example:80",
            "file://",
            "http://127.0.0.2",
        ] {
            assert!(!origin_ok(&with_origin(bad)), "{bad}");
        }
    }

    /// A host name in capitals is this machine's; two `Host` headers are
    /// no one's (the good one first was let in).
    #[test]
    fn hosts_are_compared_without_case_and_only_one_is_taken() {
        let host = |values: &[&str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(header::HOST, v.parse().unwrap());
            }
            host_refused(&h, 8000)
        };
        assert_eq!(host(&["LOCALHOST:8000"]), None);
        assert_eq!(host(&["127.0.0.1:8000"]), None);
        assert!(host(&["127.0.0.1:8000", "evil.example:8000"]).is_some());
        assert!(host(&["localhost:8001"]).is_some());
        assert!(origin_ok(&with_origin("http://LocalHost:3000")));
    }

    /// A refused Host is named, with the names accepted and their port
    /// (it said only "answers only requests to its loopback address",
    /// though `127.0.0.1` is one).
    #[test]
    fn a_refused_host_is_named_with_those_accepted() {
        let with = |values: &[&str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(header::HOST, v.parse().unwrap());
            }
            host_refused(&h, 8000).unwrap()
        };
        let accepted = "`127.0.0.1:8000`, `localhost:8000` or `[::1]:8000`";
        assert_eq!(
            with(&["127.0.0.1"]),
            format!("Host `127.0.0.1` does not name this server: use {accepted}")
        );
        assert_eq!(
            with(&[]),
            format!("no Host header: this server answers requests to {accepted}")
        );
        assert_eq!(
            with(&["localhost:8000", "localhost:8000"]),
            format!("more than one Host header: send one, {accepted}")
        );
    }
}
