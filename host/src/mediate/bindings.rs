//! Host bindings generated from `wit/` (the one source of truth): the
//! `worldline:agent` interfaces plus WASI 0.2, whose resources are mapped to
//! the mediator's own types.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "worldline:agent/agent-host",
    imports: { default: trappable },
    trappable_error_type: {
        "wasi:io/streams.stream-error" => crate::mediate::wasi::StreamError,
        "wasi:filesystem/types.error-code" => crate::mediate::wasi::FsError,
        "wasi:sockets/network.error-code" => crate::mediate::wasi::SocketError,
    },
    with: {
        "wasi:io/error.error": crate::mediate::wasi::IoError,
        "wasi:io/poll.pollable": crate::mediate::wasi::Pollable,
        "wasi:io/streams.input-stream": crate::mediate::wasi::InputStream,
        "wasi:io/streams.output-stream": crate::mediate::wasi::OutputStream,
        "wasi:cli/terminal-input.terminal-input": crate::mediate::wasi::Terminal,
        "wasi:cli/terminal-output.terminal-output": crate::mediate::wasi::Terminal,
        "wasi:filesystem/types.descriptor": crate::mediate::wasi::Never,
        "wasi:filesystem/types.directory-entry-stream": crate::mediate::wasi::Never,
        "wasi:sockets/network.network": crate::mediate::wasi::Network,
        "wasi:sockets/tcp.tcp-socket": crate::mediate::wasi::Never,
        "wasi:sockets/udp.udp-socket": crate::mediate::wasi::Never,
        "wasi:sockets/udp.incoming-datagram-stream": crate::mediate::wasi::Never,
        "wasi:sockets/udp.outgoing-datagram-stream": crate::mediate::wasi::Never,
        "wasi:sockets/ip-name-lookup.resolve-address-stream": crate::mediate::wasi::Never,
    },
});
