//! Which protocol an outgoing request speaks: a model API at a known base
//! URL, the world's MCP endpoint, or nothing the world answers.

/// The vendors' public base URLs, answered as model APIs.
pub const OPENAI_BASE: &str = "https://api.openai.com/v1";
/// Anthropic's public base URL.
pub const ANTHROPIC_BASE: &str = "https://api.anthropic.com";
/// The world's MCP endpoint (Streamable HTTP).
pub const MCP_URL: &str = "http://world/mcp";

/// What a request is, judged from its method and URL alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `POST {base}/chat/completions` (OpenAI Chat Completions).
    OpenaiChat,
    /// `POST {base}/responses` (OpenAI Responses).
    OpenaiResponses,
    /// `POST {base}/v1/messages` (Anthropic Messages).
    AnthropicMessages,
    /// A request to the world's MCP endpoint (any method; the MCP layer
    /// answers the ones the transport does not serve).
    Mcp,
    /// Nothing the world answers: denied.
    Unknown,
}

impl Route {
    /// The name recorded as the call's transport (`"openai.chat"`, `"mcp"`).
    pub fn api(&self) -> &'static str {
        match self {
            Route::OpenaiChat => "openai.chat",
            Route::OpenaiResponses => "openai.responses",
            Route::AnthropicMessages => "anthropic.messages",
            Route::Mcp => "mcp",
            Route::Unknown => "unknown",
        }
    }
}

/// `url` without its query and without a trailing slash.
fn bare(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    url[..end].trim_end_matches('/')
}

/// Route `method url` with `bases` as the model APIs' base URLs (besides
/// the vendors' own). Scheme and host compare case-insensitively.
pub fn route(method: &str, url: &str, bases: &[String]) -> Route {
    let url = bare(url);
    let lower = url.to_ascii_lowercase();
    if lower == MCP_URL {
        return Route::Mcp;
    }
    if method.eq_ignore_ascii_case("POST") {
        let known = [OPENAI_BASE, ANTHROPIC_BASE];
        for base in known.into_iter().chain(bases.iter().map(String::as_str)) {
            let base = bare(base).to_ascii_lowercase();
            match lower.strip_prefix(&base) {
                Some("/chat/completions") if base != ANTHROPIC_BASE => return Route::OpenaiChat,
                Some("/responses") if base != ANTHROPIC_BASE => return Route::OpenaiResponses,
                // The Anthropic SDKs append /v1/messages to their base URL;
                // a declared base that already ends in /v1 takes /messages.
                Some("/v1/messages") if base != OPENAI_BASE => return Route::AnthropicMessages,
                Some("/messages") if base.ends_with("/v1") && base != OPENAI_BASE => {
                    return Route::AnthropicMessages;
                }
                _ => {}
            }
        }
    }
    Route::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_and_declared_bases_route_to_the_model() {
        let none: Vec<String> = Vec::new();
        let url = "https://api.openai.com/v1/chat/completions";
        assert_eq!(route("POST", url, &none), Route::OpenaiChat);
        assert_eq!(
            route("POST", "HTTPS://API.openai.com/v1/chat/completions/", &none),
            Route::OpenaiChat
        );
        assert_eq!(route("GET", url, &none), Route::Unknown);
        let local = "http://localhost:8000/v1/chat/completions";
        assert_eq!(route("POST", local, &none), Route::Unknown);
        let bases = vec!["http://localhost:8000/v1/".to_string()];
        assert_eq!(route("POST", local, &bases), Route::OpenaiChat);
        let responses = "https://api.openai.com/v1/responses";
        assert_eq!(route("POST", responses, &none), Route::OpenaiResponses);
        let claude = "https://api.anthropic.com/v1/messages";
        assert_eq!(route("POST", claude, &none), Route::AnthropicMessages);
        assert_eq!(
            route("POST", "https://api.openai.com/v1/messages", &none),
            Route::Unknown
        );
        let local = "http://localhost:8000/v1/messages";
        assert_eq!(route("POST", local, &bases), Route::AnthropicMessages);
    }

    #[test]
    fn the_world_mcp_endpoint_and_everything_else() {
        assert_eq!(route("POST", "http://world/mcp", &[]), Route::Mcp);
        assert_eq!(route("GET", "http://world/mcp?x=1", &[]), Route::Mcp);
        assert_eq!(route("POST", "http://world/mcpx", &[]), Route::Unknown);
        assert_eq!(route("GET", "https://example.com/", &[]), Route::Unknown);
    }
}
