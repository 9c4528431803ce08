//! Host bindings generated from `wit/` (the one source of truth): the
//! `worldline:agent` interfaces plus WASI 0.2, and the mediator's own types
//! their resources and errors map to (implemented in `wasi/`
//! and `agent_api.rs`).

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "worldline:agent/agent-host",
    imports: { default: trappable },
    trappable_error_type: {
        "wasi:io/streams.stream-error" => crate::mediate::bindings::StreamError,
        "wasi:filesystem/types.error-code" => crate::mediate::bindings::FsError,
        "wasi:sockets/network.error-code" => crate::mediate::bindings::SocketError,
    },
    with: {
        "wasi:io/error.error": crate::mediate::bindings::IoError,
        "wasi:io/poll.pollable": crate::mediate::bindings::Pollable,
        "wasi:io/streams.input-stream": crate::mediate::bindings::InputStream,
        "wasi:io/streams.output-stream": crate::mediate::bindings::OutputStream,
        "wasi:cli/terminal-input.terminal-input": crate::mediate::bindings::Terminal,
        "wasi:cli/terminal-output.terminal-output": crate::mediate::bindings::Terminal,
        "wasi:filesystem/types.descriptor": crate::mediate::bindings::Never,
        "wasi:filesystem/types.directory-entry-stream": crate::mediate::bindings::Never,
        "wasi:sockets/network.network": crate::mediate::bindings::Network,
        "wasi:sockets/tcp.tcp-socket": crate::mediate::bindings::Never,
        "wasi:sockets/udp.udp-socket": crate::mediate::bindings::Never,
        "wasi:sockets/udp.incoming-datagram-stream": crate::mediate::bindings::Never,
        "wasi:sockets/udp.outgoing-datagram-stream": crate::mediate::bindings::Never,
        "wasi:sockets/ip-name-lookup.resolve-address-stream": crate::mediate::bindings::Never,
        "wasi:http/types.fields": crate::mediate::bindings::HttpFields,
        "wasi:http/types.outgoing-request": crate::mediate::bindings::HttpRequest,
        "wasi:http/types.request-options": crate::mediate::bindings::HttpOptions,
        "wasi:http/types.outgoing-body": crate::mediate::bindings::HttpBody,
        "wasi:http/types.incoming-request": crate::mediate::bindings::Never,
        "wasi:http/types.response-outparam": crate::mediate::bindings::Never,
        "wasi:http/types.incoming-response": crate::mediate::bindings::HttpResponse,
        "wasi:http/types.incoming-body": crate::mediate::bindings::HttpResponseBody,
        "wasi:http/types.future-trailers": crate::mediate::bindings::HttpTrailers,
        "wasi:http/types.outgoing-response": crate::mediate::bindings::Never,
        "wasi:http/types.future-incoming-response": crate::mediate::bindings::HttpFuture,
    },
});

/// `wasi:io/error.error`.
pub struct IoError {
    pub message: String,
}

/// `wasi:io/poll.pollable`: ready once virtual monotonic time reaches
/// `deadline` (0 for always ready, as stream pollables are).
pub struct Pollable {
    pub deadline: u64,
}

/// `wasi:io/streams.input-stream`: stdin, which is empty, or the body of
/// a response the world answered.
pub enum InputStream {
    Stdin,
    HttpBody { data: Vec<u8>, pos: usize },
}

impl InputStream {
    pub fn name(&self) -> &'static str {
        match self {
            InputStream::Stdin => "stdin",
            InputStream::HttpBody { .. } => "http-body",
        }
    }
}

/// The bytes written to an outgoing request's body, shared by the request,
/// its body, the body's stream and the request's future response. Every
/// body of a run counts against the run's [`BufferedBodies`] until it is
/// answered or dropped.
#[derive(Clone)]
pub struct SharedBody(std::sync::Arc<std::sync::Mutex<BodyBytes>>);

/// One body's bytes, and the run's count they are part of.
struct BodyBytes {
    data: Vec<u8>,
    buffered: BufferedBodies,
}

impl Drop for BodyBytes {
    fn drop(&mut self) {
        self.buffered.release(self.data.len());
    }
}

/// How many bytes of request bodies a run holds (written, not yet
/// answered nor dropped): the per-run cap's count.
#[derive(Clone, Default)]
pub struct BufferedBodies(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl BufferedBodies {
    pub fn get(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn add(&self, n: usize) {
        self.0.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    fn release(&self, n: usize) {
        self.0.fetch_sub(n, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A request body past one of its caps: nothing of the write is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyCap {
    /// This body would grow past the per-request cap.
    Request,
    /// The run's buffered bodies would grow past the per-run cap.
    Run,
}

impl SharedBody {
    pub fn new(buffered: &BufferedBodies) -> Self {
        SharedBody(std::sync::Arc::new(std::sync::Mutex::new(BodyBytes {
            data: Vec::new(),
            buffered: buffered.clone(),
        })))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BodyBytes> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bytes written so far, taken out: the body no longer counts
    /// against the run's cap (its request is being answered).
    pub fn take(&self) -> Vec<u8> {
        let mut b = self.lock();
        let data = std::mem::take(&mut b.data);
        b.buffered.release(data.len());
        data
    }

    /// Append `data`, unless this body would pass `per_request` bytes or
    /// the run's buffered bodies `per_run` bytes.
    pub fn push(&self, data: &[u8], per_request: usize, per_run: usize) -> Result<(), BodyCap> {
        let mut b = self.lock();
        if b.data.len().saturating_add(data.len()) > per_request {
            return Err(BodyCap::Request);
        }
        if b.buffered.get().saturating_add(data.len()) > per_run {
            return Err(BodyCap::Run);
        }
        b.data.extend_from_slice(data);
        b.buffered.add(data.len());
        Ok(())
    }
}

/// `wasi:io/streams.output-stream`.
#[derive(Clone)]
pub enum OutputStream {
    Stdout,
    Stderr,
    /// The body of an outgoing HTTP request.
    HttpBody(SharedBody),
}

impl OutputStream {
    pub fn name(&self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
            OutputStream::HttpBody(_) => "http-body",
        }
    }
}

/// `wasi:http/types.fields`: header or trailer fields, in order.
#[derive(Default)]
pub struct HttpFields {
    pub entries: Vec<(String, Vec<u8>)>,
    /// Fields handed out as a request's headers cannot be changed.
    pub immutable: bool,
}

impl HttpFields {
    /// The values of `name` (field names are case-insensitive).
    pub fn values(&self, name: &str) -> Vec<Vec<u8>> {
        self.entries
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn remove(&mut self, name: &str) {
        self.entries.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }
}

/// `wasi:http/types.outgoing-request`: built by the agent; answered by
/// the world when it routes somewhere (protocol/routes.rs), else denied.
pub struct HttpRequest {
    pub method: wasi::http::types::Method,
    pub path: Option<String>,
    pub scheme: Option<wasi::http::types::Scheme>,
    pub authority: Option<String>,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: SharedBody,
    pub body_taken: bool,
}

/// `wasi:http/types.request-options`: timeouts in nanoseconds.
#[derive(Default)]
pub struct HttpOptions {
    pub connect: Option<u64>,
    pub first_byte: Option<u64>,
    pub between_bytes: Option<u64>,
}

/// `wasi:http/types.outgoing-body`.
pub struct HttpBody {
    pub data: SharedBody,
}

/// `wasi:http/types.future-incoming-response`: a routed request, answered
/// (mediated) the first time the agent waits for it or asks for it.
pub struct HttpFuture {
    pub method: String,
    pub url: String,
    pub body: SharedBody,
    /// The request options' first-byte timeout: how long a stalled
    /// request waits (virtual time) before it fails.
    pub first_byte_timeout: Option<u64>,
    pub outcome: Option<HttpOutcome>,
    /// `get` already handed the outcome out.
    pub taken: bool,
}

/// How a routed request ended, and from when (virtual monotonic time).
pub struct HttpOutcome {
    pub ready_at: u64,
    /// The response, or a stall that ended in a read timeout.
    pub response: Option<worldline_protocol::HttpResponse>,
}

/// `wasi:http/types.incoming-response`.
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body until `consume` takes it.
    pub body: Option<Vec<u8>>,
}

/// `wasi:http/types.incoming-body`: its bytes until `stream` takes them.
pub struct HttpResponseBody {
    pub data: Option<Vec<u8>>,
}

/// `wasi:http/types.future-trailers`: always ready, never any trailers.
pub struct HttpTrailers {
    pub taken: bool,
}

/// Terminal handles are never handed out (nothing is a terminal).
pub struct Terminal;

/// `wasi:sockets/network.network`: exists, grants nothing.
pub struct Network;

/// Resources that can never exist in a worldline run (descriptors without
/// preopens, sockets that are never created).
pub enum Never {}

/// Errors of `wasi:io/streams`.
pub enum StreamError {
    Closed,
    Trap(wasmtime::Error),
}

impl From<wasmtime::Error> for StreamError {
    fn from(e: wasmtime::Error) -> Self {
        StreamError::Trap(e)
    }
}

impl From<wasmtime::component::ResourceTableError> for StreamError {
    fn from(e: wasmtime::component::ResourceTableError) -> Self {
        StreamError::Trap(wasmtime::Error::new(e))
    }
}

/// Errors of `wasi:filesystem`.
pub enum FsError {
    Code(wasi::filesystem::types::ErrorCode),
    Trap(wasmtime::Error),
}

impl From<wasmtime::Error> for FsError {
    fn from(e: wasmtime::Error) -> Self {
        FsError::Trap(e)
    }
}

/// Errors of `wasi:sockets`.
pub enum SocketError {
    Code(wasi::sockets::network::ErrorCode),
    Trap(wasmtime::Error),
}

impl From<wasmtime::Error> for SocketError {
    fn from(e: wasmtime::Error) -> Self {
        SocketError::Trap(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bodies_count_against_the_run_until_answered_or_dropped() {
        let run = BufferedBodies::default();
        let a = SharedBody::new(&run);
        let b = SharedBody::new(&run);
        assert_eq!(a.push(b"12345", 8, 12), Ok(()));
        // Past the per-request cap: nothing of the write is kept.
        assert_eq!(a.push(b"6789", 8, 12), Err(BodyCap::Request));
        assert_eq!(b.push(b"abcdef", 8, 12), Ok(()));
        assert_eq!(run.get(), 11);
        // Past the per-run cap, though this body is under its own.
        assert_eq!(b.push(b"gh", 8, 12), Err(BodyCap::Run));
        // An answered body no longer counts; a dropped one neither.
        assert_eq!(a.take(), b"12345");
        assert_eq!(run.get(), 6);
        let shared = b.clone();
        drop(b);
        assert_eq!(run.get(), 6, "a clone still holds it");
        drop(shared);
        assert_eq!(run.get(), 0);
    }
}
