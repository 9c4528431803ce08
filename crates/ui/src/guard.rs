//! The UI's request guard: only this machine's browser, holding a token
//! printed at start-up, gets in. A request must name the server by a
//! loopback Host (a page of another site that rebinds its DNS name to
//! 127.0.0.1 sends its own name), and carry a token, in the query (the
//! printed URL; answered with a cookie) or in that cookie. Forms that change
//! the store also carry the CSRF token ([`csrf_ok`]), and a POST whose
//! Origin is another site is refused. On a database store each token has a
//! name and a role, and the request carries its [`Reader`] onwards.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use worldline_pgstore::roles::Role;

/// Who a token lets in: a name, and on a database store a role.
#[derive(Clone, Debug, PartialEq)]
pub struct Reader {
    pub name: String,
    /// None on a folder store (which has no roles).
    pub role: Option<Role>,
}

/// One token the server issued.
pub struct Token {
    pub reader: Reader,
    pub secret: String,
}

/// The secrets of one server.
pub struct Secrets {
    /// The tokens, the first printed first.
    pub tokens: Vec<Token>,
    pub csrf: String,
    pub port: u16,
}

impl Secrets {
    /// The first token's secret.
    pub fn token(&self) -> &str {
        &self.tokens[0].secret
    }

    /// The reader holding `secret`.
    fn reader(&self, secret: &str) -> Option<&Token> {
        self.tokens.iter().find(|t| same(secret, &t.secret))
    }
}

const COOKIE: &str = "worldline_token";

/// A fresh random token (128 bits, hex) from the operating system.
pub(crate) fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(hex::encode(bytes))
}

/// Equal without an early exit on the first differing byte.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn origin_ok(headers: &HeaderMap, port: u16) -> bool {
    match headers.get(header::ORIGIN).and_then(|h| h.to_str().ok()) {
        None => true,
        Some(o) => ["127.0.0.1", "localhost", "[::1]"]
            .iter()
            .any(|name| o == format!("http://{name}:{port}")),
    }
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|kv| kv.strip_prefix("token="))
}

fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// A 403 saying why. The request's body (up to 1 MiB) is read first, so
/// the client gets the answer instead of a connection reset.
async fn refuse(req: Request, why: &str) -> Response {
    let _ = axum::body::to_bytes(req.into_body(), 1 << 20).await;
    (StatusCode::FORBIDDEN, format!("403 forbidden: {why}\n")).into_response()
}

/// The middleware every request passes.
pub(crate) async fn guard(State(s): State<Arc<Secrets>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    if let Some(why) = worldline_engine::native::host_refused(headers, s.port) {
        return refuse(req, &why).await;
    }
    if req.method() != Method::GET && !origin_ok(headers, s.port) {
        return refuse(req, "a request from another origin").await;
    }
    let from_query = query_token(req.uri().query()).and_then(|t| s.reader(t));
    let token = from_query.or_else(|| cookie_token(headers).and_then(|t| s.reader(t)));
    let Some(token) = token else {
        return refuse(
            req,
            "open the URL worldline ui printed (it carries the token)",
        )
        .await;
    };
    let mut req = req;
    req.extensions_mut().insert(token.reader.clone());
    let mut resp = next.run(req).await;
    if from_query.is_some()
        && let Ok(v) = HeaderValue::from_str(&format!(
            "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            token.secret
        ))
    {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    resp
}

/// Whether a form's CSRF field is this server's.
pub(crate) fn csrf_ok(s: &Secrets, field: &str) -> bool {
    same(field, &s.csrf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_tokens() {
        let mut h = HeaderMap::new();
        assert_eq!(query_token(Some("a=1&token=abc")), Some("abc"));
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("x=1; worldline_token=zz"),
        );
        assert_eq!(cookie_token(&h), Some("zz"));
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("ab", "abc"));
        assert_ne!(random_token().unwrap(), random_token().unwrap());
    }
}
