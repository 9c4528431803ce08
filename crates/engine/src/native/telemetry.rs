//! The agent SDKs' own telemetry, told apart from the agent's calls. An
//! SDK exports traces from a background thread at times of its own, so a
//! recorded export would be noise in the log and, arriving in another
//! order on a replay, a divergence at the boundary. A request to one of
//! these endpoints is answered `204 No Content` and not recorded; a tunnel
//! to one (`CONNECT`, which the proxy cannot see into) is refused, also
//! unrecorded, naming the variable that turns the export off. Those
//! variables are set by default ([`super::environment::QUIET`]), so an SDK
//! as configured by worldline sends nothing.

/// One vendor's telemetry endpoint.
pub(crate) struct Endpoint {
    /// Whose it is.
    pub what: &'static str,
    /// Its host.
    pub host: &'static str,
    /// The path it is posted to (`None`: every path of the host).
    pub path: Option<&'static str>,
    /// The variable (and value) that turns the export off.
    pub off: &'static str,
}

/// The endpoints recognised.
pub(crate) const ENDPOINTS: &[Endpoint] = &[
    Endpoint {
        what: "the OpenAI Agents SDK's traces",
        host: "api.openai.com",
        path: Some("/v1/traces/ingest"),
        off: "OPENAI_AGENTS_DISABLE_TRACING=1",
    },
    Endpoint {
        what: "LangSmith's traces (LangChain, LangGraph)",
        host: "api.smith.langchain.com",
        path: None,
        off: "LANGSMITH_TRACING=false (or LANGCHAIN_TRACING_V2=false)",
    },
    Endpoint {
        what: "LangSmith's traces (LangChain, LangGraph)",
        host: "eu.api.smith.langchain.com",
        path: None,
        off: "LANGSMITH_TRACING=false (or LANGCHAIN_TRACING_V2=false)",
    },
];

/// The path a direct request to the run's server posts traces to when an
/// SDK sends them under its base URL (`OPENAI_BASE_URL`).
const UNDER_BASE_URL: &str = "/v1/traces/ingest";

/// Whether a request straight to the run's server (`path` without the
/// token prefix) is an SDK's trace export.
pub(crate) fn direct(method: &str, path: &str) -> bool {
    method == "POST" && path.trim_end_matches('/') == UNDER_BASE_URL
}

/// The endpoint a proxied request for `url` (absolute, `http://host/...`)
/// is, if it is one.
pub(crate) fn proxied(url: &str) -> Option<&'static Endpoint> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.split(':').next().unwrap_or("");
    let path = path.split(['?', '#']).next().unwrap_or("");
    ENDPOINTS.iter().find(|e| {
        e.host.eq_ignore_ascii_case(host) && e.path.is_none_or(|p| path.trim_end_matches('/') == p)
    })
}

/// The endpoint a tunnel to `authority` (`host:port`) is, when the whole
/// host is telemetry (a host that also serves the agent's calls, such as
/// api.openai.com, is not: its tunnels are refused and recorded as any).
pub(crate) fn tunnel(authority: &str) -> Option<&'static Endpoint> {
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    ENDPOINTS
        .iter()
        .find(|e| e.path.is_none() && e.host.eq_ignore_ascii_case(host))
}

/// Why a tunnel to a telemetry host is refused.
pub(crate) fn refusal(e: &Endpoint) -> String {
    format!(
        "{} are not part of the run: set {} (worldline sets it unless the case or --pass-env says otherwise)",
        e.what, e.off
    )
}

/// The answer to a proxied request that is an SDK's telemetry (`None`:
/// it is not): `204` for a request the proxy can see, a refusal naming
/// the variable that turns the export off for a tunnel. Neither is
/// recorded.
pub(crate) fn answer(method: &str, uri: &axum::http::Uri) -> Option<axum::response::Response> {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    if method == "CONNECT" {
        let e = tunnel(&uri.to_string())?;
        let why = refusal(e);
        let mut r = (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "application/json")],
            worldline_case::canon::to_string(
                &serde_json::json!({"error": {"message": why, "type": "worldline", "code": null}}),
            ),
        )
            .into_response();
        if let Ok(reason) = hyper::ext::ReasonPhrase::try_from(super::tunnel::reason_text(&why)) {
            r.extensions_mut().insert(reason);
        }
        return Some(r);
    }
    proxied(&uri.to_string())?;
    Some(StatusCode::NO_CONTENT.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telemetry_is_told_from_the_agents_calls() {
        assert!(direct("POST", "/v1/traces/ingest"));
        assert!(!direct("POST", "/v1/chat/completions"));
        let agents = proxied("http://api.openai.com/v1/traces/ingest").unwrap();
        assert!(agents.off.starts_with("OPENAI_AGENTS_DISABLE_TRACING"));
        assert!(proxied("http://api.openai.com/v1/chat/completions").is_none());
        assert!(proxied("http://api.smith.langchain.com/runs/multipart?x=1").is_some());
        assert!(tunnel("api.smith.langchain.com:443").is_some());
        assert!(tunnel("api.openai.com:443").is_none());
        assert!(
            refusal(tunnel("api.smith.langchain.com:443").unwrap()).contains("LANGSMITH_TRACING")
        );
    }
}
