//! The HTTP protocols agents already speak, independent of any transport:
//! an HTTP request (method, URL, body bytes) becomes a typed model call or
//! tool call ([`routes`]), and a mediated answer becomes the bytes and
//! status the vendor would send back ([`openai_chat`], [`openai_responses`],
//! [`anthropic`], [`rest`] for a world's own routes,
//! [`mcp`], [`sse`]).
//!
//! Nothing here knows about WebAssembly or sockets: `mediate/wasi/http.rs`
//! puts it behind `wasi:http`, and a loopback server can put it behind TCP.
//! Header values never enter this layer, so a guest's `Authorization` or
//! `x-api-key` can be neither recorded nor forwarded from here.

#![deny(unreachable_pub)]

pub mod anthropic;
pub mod mcp;
pub mod openai_chat;
pub mod openai_responses;
pub mod rest;
pub mod routes;
pub(crate) mod sse;

use serde_json::Value;

/// How closely an answer is put in an API's shape, by the run's rules
/// (decision 0423: a run replays answered as it was recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fidelity {
    /// Before rules 9: a refusal was dropped, a stream carried the first
    /// choice only, Anthropic Messages answered a content filter
    /// `end_turn`, took any role of a message with text content and an
    /// unreadable tool input as `{}`, and the Responses API dropped the
    /// input parts and tools it does not carry.
    Loose,
    /// From rules 9: as the vendor's API answers (`rules.rs`,
    /// `MODEL_APIS_ANSWER_AS_THE_VENDORS`).
    Vendor,
}

/// A response as the vendor's server would send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    /// In the order they are sent; names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// A JSON body (canonical JSON: sorted keys, so the bytes are stable).
    pub fn json(status: u16, body: &Value) -> Self {
        HttpResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: worldline_case::canon::to_string(body).into_bytes(),
        }
    }

    /// A status without a body.
    pub fn empty(status: u16) -> Self {
        HttpResponse {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Add a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}
