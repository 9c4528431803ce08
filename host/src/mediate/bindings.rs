//! Host bindings generated from `wit/` (the one source of truth): the
//! `worldline:agent` interfaces plus WASI 0.2, and the mediator's own types
//! their resources and errors map to (implemented in `wasi.rs`,
//! `wasi_never.rs` and `agent_api.rs`).

wasmtime::component::bindgen!({
    path: "../wit",
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

/// `wasi:io/streams.input-stream`: only stdin, which is empty.
pub struct InputStream;

/// `wasi:io/streams.output-stream`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

impl OutputStream {
    pub fn name(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
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
