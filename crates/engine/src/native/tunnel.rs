//! What the proxy says when it refuses a tunnel (`CONNECT host:port`, an
//! `https://` request through `HTTPS_PROXY`). It cannot see into one, so
//! it answers no request inside it; when the host is one the world
//! declares routes on, the refusal names the `http://` URL that reaches
//! the same route (docs/decisions/0311-https-routes-refused-naming-http.md);
//! when it is a model vendor's, the variable that points the SDK at the
//! run's server (rules 3).

use worldline_case::world::routes::{Route, Segment};
use worldline_protocol::routes::{ANTHROPIC_BASE, OPENAI_BASE};

/// The vendors' model APIs and the variable their SDKs read the base URL
/// from.
const VENDORS: [(&str, &str); 2] = [
    (OPENAI_BASE, "OPENAI_BASE_URL"),
    (ANTHROPIC_BASE, "ANTHROPIC_BASE_URL"),
];

/// Why a tunnel to a model vendor's host is refused, naming the variable
/// that reaches the case's model; `None` for any other host.
pub(crate) fn vendor_refusal(authority: &str) -> Option<String> {
    let authority = authority.to_ascii_lowercase();
    let host = authority.strip_suffix(":443").unwrap_or(&authority);
    VENDORS.iter().find_map(|(base, var)| {
        let rest = base.strip_prefix("https://")?;
        (rest.split('/').next() == Some(host)).then(|| {
            format!(
                "https://{host} is a model API this world answers, but the proxy cannot see into an HTTPS tunnel: leave {var} as worldline sets it (the run's server), or set it to http://{rest} (plain http through the proxy is answered by the case's model)"
            )
        })
    })
}

/// The `http://` URL of the first route the world declares on
/// `https://` + `authority` (`host:port` as a `CONNECT` names it), with
/// its parameters as `{name}`; `None` when it declares none there.
pub(crate) fn http_url_for(routes: &[Route], authority: &str) -> Option<String> {
    let authority = authority.to_ascii_lowercase();
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => (h, p),
        _ => (authority.as_str(), "443"),
    };
    let origins = match port {
        "443" => vec![format!("https://{host}"), format!("https://{host}:443")],
        p => vec![format!("https://{host}:{p}")],
    };
    let route = routes.iter().find(|r| origins.contains(&r.origin))?;
    let path: String = route
        .path
        .iter()
        .map(|s| match s {
            Segment::Literal(l) => format!("/{l}"),
            Segment::Param(p) => format!("/{{{p}}}"),
        })
        .collect();
    let shown_port = match port {
        "443" => String::new(),
        p => format!(":{p}"),
    };
    Some(format!("http://{host}{shown_port}{path}"))
}

/// Why a tunnel to `authority` is refused: `general` (the proxy's usual
/// reason), with the `http://` URL to use instead when the world declares
/// routes on that host.
pub(crate) fn refusal(routes: &[Route], authority: &str, general: &str) -> String {
    match http_url_for(routes, authority) {
        Some(url) => format!(
            "https://{} serves this world's routes, but the proxy cannot see into an HTTPS tunnel: ask {url} instead (plain http through the proxy is answered by the same route)",
            authority.trim_end_matches(":443")
        ),
        None => {
            format!("{general} (an HTTPS tunnel cannot be answered: the proxy cannot see into it)")
        }
    }
}

/// A refused tunnel's response with its message as the status line's
/// reason phrase (`403 https://... serves this world's routes, ...`):
/// Python's `http.client` and `httpx` show that line, not the body.
/// `limit` bounds the body read.
pub(crate) async fn with_reason(
    response: axum::response::Response,
    limit: usize,
) -> axum::response::Response {
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, limit).await.unwrap_or_default();
    let message = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(reason_text));
    if let Some(reason) = message.and_then(|m| hyper::ext::ReasonPhrase::try_from(m).ok()) {
        parts.extensions.insert(reason);
    }
    axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// `text` as a reason phrase may hold it: printable ASCII and spaces.
pub(crate) fn reason_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(origin: &str) -> Route {
        Route {
            method: "GET".into(),
            origin: origin.into(),
            path: vec![
                Segment::Literal("api".into()),
                Segment::Literal("orders".into()),
                Segment::Param("id".into()),
            ],
            tool: "get_order".into(),
        }
    }

    #[test]
    fn names_the_http_url_of_a_declared_route() {
        let routes = [route("https://orders.acme.internal")];
        assert_eq!(
            http_url_for(&routes, "orders.acme.internal:443").as_deref(),
            Some("http://orders.acme.internal/api/orders/{id}")
        );
        assert_eq!(http_url_for(&routes, "orders.acme.internal:8443"), None);
        assert_eq!(http_url_for(&routes, "example.com:443"), None);
        let why = refusal(
            &routes,
            "orders.acme.internal:443",
            "not part of this world",
        );
        assert!(
            why.contains("ask http://orders.acme.internal/api/orders/{id} instead"),
            "{why}"
        );
        let other = refusal(&routes, "example.com:443", "not part of this world");
        assert!(other.starts_with("not part of this world"), "{other}");
        let odd = [route("https://h.internal:8443")];
        assert_eq!(vendor_refusal("example.com:443"), None);
        let openai = vendor_refusal("API.openai.com:443").unwrap();
        assert!(
            openai.contains("leave OPENAI_BASE_URL as worldline sets it")
                && openai.contains("set it to http://api.openai.com/v1 "),
            "{openai}"
        );
        let claude = vendor_refusal("api.anthropic.com").unwrap();
        assert!(
            claude.contains("set it to http://api.anthropic.com "),
            "{claude}"
        );
        assert_eq!(
            http_url_for(&odd, "h.internal:8443").as_deref(),
            Some("http://h.internal:8443/api/orders/{id}")
        );
    }
}
