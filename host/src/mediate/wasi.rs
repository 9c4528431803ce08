//! WASI 0.2, virtualized: every function passes through
//! [`Mediator::mediate`](super::Mediator::mediate) and is recorded.
//!
//! - clocks: virtual; sleeping jumps virtual time to the deadline;
//! - random: seeded ChaCha20 streams;
//! - cli: environment and arguments from the case, stdout/stderr captured
//!   and bounded, stdin empty, no terminal;
//! - filesystem: no preopens, so no descriptor can ever exist;
//! - sockets: a network handle exists, but creating a socket or resolving a
//!   name is denied.

use super::bindings::{
    FsError, InputStream, IoError, Network, Never, OutputStream, Pollable, SocketError,
    StreamError, Terminal, wasi,
};
use super::{Answer, RunState, Services};
use crate::log::Effect;
use rand_core::RngCore;
use serde_json::{Value, json};
use wasmtime::component::Resource;

fn family_name(family: wasi::sockets::network::IpAddressFamily) -> &'static str {
    match family {
        wasi::sockets::network::IpAddressFamily::Ipv4 => "ipv4",
        wasi::sockets::network::IpAddressFamily::Ipv6 => "ipv6",
    }
}

/// Largest single `get-random-bytes` request served.
const MAX_RANDOM_BYTES: u64 = 1 << 20;
/// How much a stream accepts per `check-write`.
const WRITE_BUDGET: u64 = 64 * 1024;

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn hex_bytes(v: &Value) -> Vec<u8> {
    v.as_str()
        .and_then(|s| hex::decode(s).ok())
        .unwrap_or_default()
}

impl RunState {
    /// Mediate a call whose answer is fixed (plumbing such as handles).
    pub(super) fn call_fixed(
        &mut self,
        call: &str,
        request: Value,
        response: Value,
    ) -> wasmtime::Result<Value> {
        self.mediated(call, request, |_| Answer::read(response))
    }

    pub(super) fn denied(&mut self, call: &str, request: Value, why: &str) -> wasmtime::Result<()> {
        self.mediated(call, request, |_| {
            Answer::with_effect(json!({"error": why}), Effect::Denied)
        })?;
        Ok(())
    }

    /// Capture a write. Bytes past `limits.stdout_bytes` are dropped and
    /// counted, and only the kept part is recorded, so neither memory nor
    /// the bundle grows with a flood; the stream stays open.
    fn write_stream(
        &mut self,
        stream: OutputStream,
        call: &str,
        data: &[u8],
    ) -> Result<(), StreamError> {
        fn capture(s: &mut Services, stream: OutputStream) -> &mut super::stdio::Capture {
            match stream {
                OutputStream::Stdout => &mut s.stdio.stdout,
                OutputStream::Stderr => &mut s.stdio.stderr,
                OutputStream::HttpBody => unreachable!("request bodies are not captured"),
            }
        }
        if stream == OutputStream::HttpBody {
            // A request body is never sent: its size is recorded, not kept.
            self.call_fixed(
                call,
                json!({"stream": stream.name(), "bytes": data.len()}),
                json!({"ok": true}),
            )?;
            return Ok(());
        }
        let keep = capture(&mut self.med.services, stream)
            .room()
            .min(data.len());
        let mut request = json!({
            "stream": stream.name(),
            "text": String::from_utf8_lossy(&data[..keep]),
        });
        if keep < data.len() {
            request["dropped"] = json!(data.len() - keep);
        }
        self.mediated(call, request, |s| {
            let dropped = capture(s, stream).push(data);
            Answer::read(if dropped == 0 {
                json!({"ok": true})
            } else {
                json!({"ok": true, "dropped": dropped})
            })
        })?;
        Ok(())
    }
}

// ---- wasi:clocks ----

impl wasi::clocks::wall_clock::Host for RunState {
    fn now(&mut self) -> wasmtime::Result<wasi::clocks::wall_clock::Datetime> {
        let r = self.mediated("wasi:clocks/wall-clock.now", json!({}), |s| {
            let ns = s.clock.guest_wall_ns();
            Answer::read(json!({"seconds": ns.div_euclid(1_000_000_000) as u64, "nanoseconds": ns.rem_euclid(1_000_000_000) as u32}))
        })?;
        Ok(wasi::clocks::wall_clock::Datetime {
            seconds: u64_of(&r["seconds"]),
            nanoseconds: u64_of(&r["nanoseconds"]) as u32,
        })
    }

    fn resolution(&mut self) -> wasmtime::Result<wasi::clocks::wall_clock::Datetime> {
        self.call_fixed(
            "wasi:clocks/wall-clock.resolution",
            json!({}),
            json!({"seconds": 0, "nanoseconds": 1}),
        )?;
        Ok(wasi::clocks::wall_clock::Datetime {
            seconds: 0,
            nanoseconds: 1,
        })
    }
}

impl wasi::clocks::monotonic_clock::Host for RunState {
    fn now(&mut self) -> wasmtime::Result<u64> {
        let r = self.mediated("wasi:clocks/monotonic-clock.now", json!({}), |s| {
            Answer::read(json!(s.clock.mono_ns()))
        })?;
        Ok(u64_of(&r))
    }

    fn resolution(&mut self) -> wasmtime::Result<u64> {
        self.call_fixed(
            "wasi:clocks/monotonic-clock.resolution",
            json!({}),
            json!(1),
        )?;
        Ok(1)
    }

    fn subscribe_instant(&mut self, when: u64) -> wasmtime::Result<Resource<Pollable>> {
        self.call_fixed(
            "wasi:clocks/monotonic-clock.subscribe-instant",
            json!({"when": when}),
            json!({"deadline": when}),
        )?;
        Ok(self.table.push(Pollable { deadline: when })?)
    }

    fn subscribe_duration(&mut self, duration: u64) -> wasmtime::Result<Resource<Pollable>> {
        let r = self.mediated(
            "wasi:clocks/monotonic-clock.subscribe-duration",
            json!({"duration": duration}),
            |s| Answer::read(json!({"deadline": s.clock.mono_ns().saturating_add(duration)})),
        )?;
        Ok(self.table.push(Pollable {
            deadline: u64_of(&r["deadline"]),
        })?)
    }
}

impl wasi::clocks::timezone::Host for RunState {
    fn display(
        &mut self,
        when: wasi::clocks::wall_clock::Datetime,
    ) -> wasmtime::Result<wasi::clocks::timezone::TimezoneDisplay> {
        let request = json!({"seconds": when.seconds, "nanoseconds": when.nanoseconds});
        self.call_fixed(
            "wasi:clocks/timezone.display",
            request,
            json!({"utc-offset": 0, "name": "UTC"}),
        )?;
        Ok(wasi::clocks::timezone::TimezoneDisplay {
            utc_offset: 0,
            name: "UTC".into(),
            in_daylight_saving_time: false,
        })
    }

    fn utc_offset(&mut self, when: wasi::clocks::wall_clock::Datetime) -> wasmtime::Result<i32> {
        let request = json!({"seconds": when.seconds, "nanoseconds": when.nanoseconds});
        self.call_fixed("wasi:clocks/timezone.utc-offset", request, json!(0))?;
        Ok(0)
    }
}

// ---- wasi:io ----

impl wasi::io::error::Host for RunState {}

impl wasi::io::error::HostError for RunState {
    fn to_debug_string(&mut self, err: Resource<IoError>) -> wasmtime::Result<String> {
        let message = self.table.get(&err)?.message.clone();
        self.call_fixed(
            "wasi:io/error.error.to-debug-string",
            json!({"handle": err.rep()}),
            json!(message),
        )?;
        Ok(message)
    }

    fn drop(&mut self, err: Resource<IoError>) -> wasmtime::Result<()> {
        self.call_fixed(
            "wasi:io/error.error.drop",
            json!({"handle": err.rep()}),
            Value::Null,
        )?;
        self.table.delete(err)?;
        Ok(())
    }
}

impl wasi::io::poll::Host for RunState {
    fn poll(&mut self, list: Vec<Resource<Pollable>>) -> wasmtime::Result<Vec<u32>> {
        if list.is_empty() {
            wasmtime::bail!("wasi:io/poll.poll called with no pollables");
        }
        let mut deadlines = Vec::with_capacity(list.len());
        for p in &list {
            deadlines.push(self.table.get(p)?.deadline);
        }
        let r = self.mediated("wasi:io/poll.poll", json!({"deadlines": deadlines}), |s| {
            // Nothing external can become ready: time jumps to the earliest
            // deadline not yet passed, and everything due by then is ready.
            let now = s.clock.mono_ns();
            let earliest = deadlines.iter().copied().min().unwrap_or(now);
            s.clock.advance_to(earliest);
            let now = s.clock.mono_ns();
            let ready: Vec<u32> = (0..deadlines.len() as u32)
                .filter(|&i| deadlines[i as usize] <= now)
                .collect();
            Answer::read(json!(ready))
        })?;
        Ok(r.as_array()
            .map(|a| a.iter().map(|v| u64_of(v) as u32).collect())
            .unwrap_or_default())
    }
}

impl wasi::io::poll::HostPollable for RunState {
    fn ready(&mut self, p: Resource<Pollable>) -> wasmtime::Result<bool> {
        let deadline = self.table.get(&p)?.deadline;
        let r = self.mediated(
            "wasi:io/poll.pollable.ready",
            json!({"deadline": deadline}),
            |s| Answer::read(json!(s.clock.mono_ns() >= deadline)),
        )?;
        Ok(r.as_bool().unwrap_or(false))
    }

    fn block(&mut self, p: Resource<Pollable>) -> wasmtime::Result<()> {
        let deadline = self.table.get(&p)?.deadline;
        self.mediated(
            "wasi:io/poll.pollable.block",
            json!({"deadline": deadline}),
            |s| {
                s.clock.advance_to(deadline);
                Answer::read(Value::Null)
            },
        )?;
        Ok(())
    }

    fn drop(&mut self, p: Resource<Pollable>) -> wasmtime::Result<()> {
        self.call_fixed(
            "wasi:io/poll.pollable.drop",
            json!({"handle": p.rep()}),
            Value::Null,
        )?;
        self.table.delete(p)?;
        Ok(())
    }
}

impl wasi::io::streams::Host for RunState {
    fn convert_stream_error(
        &mut self,
        err: StreamError,
    ) -> wasmtime::Result<wasi::io::streams::StreamError> {
        match err {
            StreamError::Closed => Ok(wasi::io::streams::StreamError::Closed),
            StreamError::Trap(e) => Err(e),
        }
    }
}

impl wasi::io::streams::HostInputStream for RunState {
    fn read(&mut self, _s: Resource<InputStream>, len: u64) -> Result<Vec<u8>, StreamError> {
        self.call_fixed(
            "wasi:io/streams.input-stream.read",
            json!({"stream": "stdin", "len": len}),
            json!({"closed": true}),
        )?;
        Err(StreamError::Closed)
    }

    fn blocking_read(
        &mut self,
        _s: Resource<InputStream>,
        len: u64,
    ) -> Result<Vec<u8>, StreamError> {
        self.call_fixed(
            "wasi:io/streams.input-stream.blocking-read",
            json!({"stream": "stdin", "len": len}),
            json!({"closed": true}),
        )?;
        Err(StreamError::Closed)
    }

    fn skip(&mut self, _s: Resource<InputStream>, len: u64) -> Result<u64, StreamError> {
        self.call_fixed(
            "wasi:io/streams.input-stream.skip",
            json!({"stream": "stdin", "len": len}),
            json!({"closed": true}),
        )?;
        Err(StreamError::Closed)
    }

    fn blocking_skip(&mut self, _s: Resource<InputStream>, len: u64) -> Result<u64, StreamError> {
        self.call_fixed(
            "wasi:io/streams.input-stream.blocking-skip",
            json!({"stream": "stdin", "len": len}),
            json!({"closed": true}),
        )?;
        Err(StreamError::Closed)
    }

    fn subscribe(&mut self, _s: Resource<InputStream>) -> wasmtime::Result<Resource<Pollable>> {
        self.call_fixed(
            "wasi:io/streams.input-stream.subscribe",
            json!({"stream": "stdin"}),
            Value::Null,
        )?;
        Ok(self.table.push(Pollable { deadline: 0 })?)
    }

    fn drop(&mut self, s: Resource<InputStream>) -> wasmtime::Result<()> {
        self.call_fixed(
            "wasi:io/streams.input-stream.drop",
            json!({"stream": "stdin"}),
            Value::Null,
        )?;
        self.table.delete(s)?;
        Ok(())
    }
}

impl wasi::io::streams::HostOutputStream for RunState {
    fn check_write(&mut self, s: Resource<OutputStream>) -> Result<u64, StreamError> {
        let stream = *self.table.get(&s)?;
        self.call_fixed(
            "wasi:io/streams.output-stream.check-write",
            json!({"stream": stream.name()}),
            json!({"budget": WRITE_BUDGET}),
        )?;
        Ok(WRITE_BUDGET)
    }

    fn write(&mut self, s: Resource<OutputStream>, contents: Vec<u8>) -> Result<(), StreamError> {
        let stream = *self.table.get(&s)?;
        self.write_stream(stream, "wasi:io/streams.output-stream.write", &contents)
    }

    fn blocking_write_and_flush(
        &mut self,
        s: Resource<OutputStream>,
        contents: Vec<u8>,
    ) -> Result<(), StreamError> {
        let stream = *self.table.get(&s)?;
        self.write_stream(
            stream,
            "wasi:io/streams.output-stream.blocking-write-and-flush",
            &contents,
        )
    }

    fn flush(&mut self, s: Resource<OutputStream>) -> Result<(), StreamError> {
        let stream = *self.table.get(&s)?;
        self.call_fixed(
            "wasi:io/streams.output-stream.flush",
            json!({"stream": stream.name()}),
            Value::Null,
        )?;
        Ok(())
    }

    fn blocking_flush(&mut self, s: Resource<OutputStream>) -> Result<(), StreamError> {
        let stream = *self.table.get(&s)?;
        self.call_fixed(
            "wasi:io/streams.output-stream.blocking-flush",
            json!({"stream": stream.name()}),
            Value::Null,
        )?;
        Ok(())
    }

    fn subscribe(&mut self, s: Resource<OutputStream>) -> wasmtime::Result<Resource<Pollable>> {
        let stream = *self.table.get(&s)?;
        self.call_fixed(
            "wasi:io/streams.output-stream.subscribe",
            json!({"stream": stream.name()}),
            Value::Null,
        )?;
        Ok(self.table.push(Pollable { deadline: 0 })?)
    }

    fn write_zeroes(&mut self, s: Resource<OutputStream>, len: u64) -> Result<(), StreamError> {
        let stream = *self.table.get(&s)?;
        let zeros = vec![0u8; len.min(WRITE_BUDGET) as usize];
        self.write_stream(stream, "wasi:io/streams.output-stream.write-zeroes", &zeros)
    }

    fn blocking_write_zeroes_and_flush(
        &mut self,
        s: Resource<OutputStream>,
        len: u64,
    ) -> Result<(), StreamError> {
        let stream = *self.table.get(&s)?;
        let zeros = vec![0u8; len.min(WRITE_BUDGET) as usize];
        self.write_stream(
            stream,
            "wasi:io/streams.output-stream.blocking-write-zeroes-and-flush",
            &zeros,
        )
    }

    fn splice(
        &mut self,
        s: Resource<OutputStream>,
        _src: Resource<InputStream>,
        len: u64,
    ) -> Result<u64, StreamError> {
        let stream = *self.table.get(&s)?;
        self.call_fixed(
            "wasi:io/streams.output-stream.splice",
            json!({"stream": stream.name(), "len": len}),
            json!({"closed": true}),
        )?;
        Err(StreamError::Closed)
    }

    fn blocking_splice(
        &mut self,
        s: Resource<OutputStream>,
        _src: Resource<InputStream>,
        len: u64,
    ) -> Result<u64, StreamError> {
        let stream = *self.table.get(&s)?;
        self.call_fixed(
            "wasi:io/streams.output-stream.blocking-splice",
            json!({"stream": stream.name(), "len": len}),
            json!({"closed": true}),
        )?;
        Err(StreamError::Closed)
    }

    fn drop(&mut self, s: Resource<OutputStream>) -> wasmtime::Result<()> {
        let stream = *self.table.get(&s)?;
        self.call_fixed(
            "wasi:io/streams.output-stream.drop",
            json!({"stream": stream.name()}),
            Value::Null,
        )?;
        self.table.delete(s)?;
        Ok(())
    }
}

// ---- wasi:random ----

impl wasi::random::random::Host for RunState {
    fn get_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        if len > MAX_RANDOM_BYTES {
            wasmtime::bail!(
                "get-random-bytes asked for {len} bytes; at most {MAX_RANDOM_BYTES} per call"
            );
        }
        let r = self.mediated(
            "wasi:random/random.get-random-bytes",
            json!({"len": len}),
            |s| {
                let mut buf = vec![0u8; len as usize];
                s.entropy.secure.fill_bytes(&mut buf);
                Answer::read(json!(hex::encode(buf)))
            },
        )?;
        Ok(hex_bytes(&r))
    }

    fn get_random_u64(&mut self) -> wasmtime::Result<u64> {
        let r = self.mediated("wasi:random/random.get-random-u64", json!({}), |s| {
            Answer::read(json!(s.entropy.secure.next_u64()))
        })?;
        Ok(u64_of(&r))
    }
}

impl wasi::random::insecure::Host for RunState {
    fn get_insecure_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        if len > MAX_RANDOM_BYTES {
            wasmtime::bail!(
                "get-insecure-random-bytes asked for {len} bytes; at most {MAX_RANDOM_BYTES} per call"
            );
        }
        let r = self.mediated(
            "wasi:random/insecure.get-insecure-random-bytes",
            json!({"len": len}),
            |s| {
                let mut buf = vec![0u8; len as usize];
                s.entropy.insecure.fill_bytes(&mut buf);
                Answer::read(json!(hex::encode(buf)))
            },
        )?;
        Ok(hex_bytes(&r))
    }

    fn get_insecure_random_u64(&mut self) -> wasmtime::Result<u64> {
        let r = self.mediated(
            "wasi:random/insecure.get-insecure-random-u64",
            json!({}),
            |s| Answer::read(json!(s.entropy.insecure.next_u64())),
        )?;
        Ok(u64_of(&r))
    }
}

impl wasi::random::insecure_seed::Host for RunState {
    fn insecure_seed(&mut self) -> wasmtime::Result<(u64, u64)> {
        let r = self.mediated("wasi:random/insecure-seed.insecure-seed", json!({}), |s| {
            Answer::read(json!([
                s.entropy.insecure_seed.0,
                s.entropy.insecure_seed.1
            ]))
        })?;
        Ok((u64_of(&r[0]), u64_of(&r[1])))
    }
}

// ---- wasi:cli ----

impl wasi::cli::environment::Host for RunState {
    fn get_environment(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        let r = self.mediated("wasi:cli/environment.get-environment", json!({}), |s| {
            Answer::read(json!(
                s.env.vars.iter().map(|(k, v)| [k, v]).collect::<Vec<_>>()
            ))
        })?;
        Ok(r.as_array()
            .map(|a| {
                a.iter()
                    .map(|kv| {
                        (
                            kv[0].as_str().unwrap_or("").to_string(),
                            kv[1].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    fn get_arguments(&mut self) -> wasmtime::Result<Vec<String>> {
        let r = self.mediated("wasi:cli/environment.get-arguments", json!({}), |s| {
            Answer::read(json!(s.env.args))
        })?;
        Ok(r.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }

    fn initial_cwd(&mut self) -> wasmtime::Result<Option<String>> {
        self.call_fixed("wasi:cli/environment.initial-cwd", json!({}), Value::Null)?;
        Ok(None)
    }
}

impl wasi::cli::exit::Host for RunState {
    fn exit(&mut self, status: Result<(), ()>) -> wasmtime::Result<()> {
        let code = if status.is_ok() { 0 } else { 1 };
        self.call_fixed("wasi:cli/exit.exit", json!({"code": code}), Value::Null)?;
        Err(wasmtime::Error::new(super::Stop::Exit(code)))
    }

    fn exit_with_code(&mut self, code: u8) -> wasmtime::Result<()> {
        self.call_fixed(
            "wasi:cli/exit.exit-with-code",
            json!({"code": code}),
            Value::Null,
        )?;
        Err(wasmtime::Error::new(super::Stop::Exit(code as i32)))
    }
}

impl wasi::cli::stdin::Host for RunState {
    fn get_stdin(&mut self) -> wasmtime::Result<Resource<InputStream>> {
        self.call_fixed("wasi:cli/stdin.get-stdin", json!({}), json!("stdin"))?;
        Ok(self.table.push(InputStream)?)
    }
}

impl wasi::cli::stdout::Host for RunState {
    fn get_stdout(&mut self) -> wasmtime::Result<Resource<OutputStream>> {
        self.call_fixed("wasi:cli/stdout.get-stdout", json!({}), json!("stdout"))?;
        Ok(self.table.push(OutputStream::Stdout)?)
    }
}

impl wasi::cli::stderr::Host for RunState {
    fn get_stderr(&mut self) -> wasmtime::Result<Resource<OutputStream>> {
        self.call_fixed("wasi:cli/stderr.get-stderr", json!({}), json!("stderr"))?;
        Ok(self.table.push(OutputStream::Stderr)?)
    }
}

impl wasi::cli::terminal_input::Host for RunState {}
impl wasi::cli::terminal_input::HostTerminalInput for RunState {
    fn drop(&mut self, t: Resource<Terminal>) -> wasmtime::Result<()> {
        self.table.delete(t)?;
        Ok(())
    }
}
impl wasi::cli::terminal_output::Host for RunState {}
impl wasi::cli::terminal_output::HostTerminalOutput for RunState {
    fn drop(&mut self, t: Resource<Terminal>) -> wasmtime::Result<()> {
        self.table.delete(t)?;
        Ok(())
    }
}

impl wasi::cli::terminal_stdin::Host for RunState {
    fn get_terminal_stdin(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        self.call_fixed(
            "wasi:cli/terminal-stdin.get-terminal-stdin",
            json!({}),
            Value::Null,
        )?;
        Ok(None)
    }
}

impl wasi::cli::terminal_stdout::Host for RunState {
    fn get_terminal_stdout(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        self.call_fixed(
            "wasi:cli/terminal-stdout.get-terminal-stdout",
            json!({}),
            Value::Null,
        )?;
        Ok(None)
    }
}

impl wasi::cli::terminal_stderr::Host for RunState {
    fn get_terminal_stderr(&mut self) -> wasmtime::Result<Option<Resource<Terminal>>> {
        self.call_fixed(
            "wasi:cli/terminal-stderr.get-terminal-stderr",
            json!({}),
            Value::Null,
        )?;
        Ok(None)
    }
}

// ---- wasi:filesystem: nothing is preopened ----

impl wasi::filesystem::preopens::Host for RunState {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Never>, String)>> {
        self.call_fixed(
            "wasi:filesystem/preopens.get-directories",
            json!({}),
            json!([]),
        )?;
        Ok(Vec::new())
    }
}

impl wasi::filesystem::types::Host for RunState {
    fn convert_error_code(
        &mut self,
        err: FsError,
    ) -> wasmtime::Result<wasi::filesystem::types::ErrorCode> {
        match err {
            FsError::Code(c) => Ok(c),
            FsError::Trap(e) => Err(e),
        }
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<IoError>,
    ) -> wasmtime::Result<Option<wasi::filesystem::types::ErrorCode>> {
        self.call_fixed(
            "wasi:filesystem/types.filesystem-error-code",
            json!({"handle": err.rep()}),
            Value::Null,
        )?;
        Ok(None)
    }
}

// ---- wasi:sockets: everything is denied ----

impl wasi::sockets::network::Host for RunState {
    fn convert_error_code(
        &mut self,
        err: SocketError,
    ) -> wasmtime::Result<wasi::sockets::network::ErrorCode> {
        match err {
            SocketError::Code(c) => Ok(c),
            SocketError::Trap(e) => Err(e),
        }
    }

    fn network_error_code(
        &mut self,
        err: Resource<IoError>,
    ) -> wasmtime::Result<Option<wasi::sockets::network::ErrorCode>> {
        self.call_fixed(
            "wasi:sockets/network.network-error-code",
            json!({"handle": err.rep()}),
            Value::Null,
        )?;
        Ok(None)
    }
}

impl wasi::sockets::network::HostNetwork for RunState {
    fn drop(&mut self, n: Resource<Network>) -> wasmtime::Result<()> {
        self.call_fixed("wasi:sockets/network.network.drop", json!({}), Value::Null)?;
        self.table.delete(n)?;
        Ok(())
    }
}

impl wasi::sockets::instance_network::Host for RunState {
    fn instance_network(&mut self) -> wasmtime::Result<Resource<Network>> {
        self.call_fixed(
            "wasi:sockets/instance-network.instance-network",
            json!({}),
            json!("network"),
        )?;
        Ok(self.table.push(Network)?)
    }
}

impl wasi::sockets::tcp_create_socket::Host for RunState {
    fn create_tcp_socket(
        &mut self,
        family: wasi::sockets::network::IpAddressFamily,
    ) -> Result<Resource<Never>, SocketError> {
        let family = family_name(family);
        self.denied(
            "wasi:sockets/tcp-create-socket.create-tcp-socket",
            json!({"family": family}),
            "network access is not part of a worldline world",
        )?;
        Err(SocketError::Code(
            wasi::sockets::network::ErrorCode::AccessDenied,
        ))
    }
}

impl wasi::sockets::udp_create_socket::Host for RunState {
    fn create_udp_socket(
        &mut self,
        family: wasi::sockets::network::IpAddressFamily,
    ) -> Result<Resource<Never>, SocketError> {
        let family = family_name(family);
        self.denied(
            "wasi:sockets/udp-create-socket.create-udp-socket",
            json!({"family": family}),
            "network access is not part of a worldline world",
        )?;
        Err(SocketError::Code(
            wasi::sockets::network::ErrorCode::AccessDenied,
        ))
    }
}

impl wasi::sockets::ip_name_lookup::Host for RunState {
    fn resolve_addresses(
        &mut self,
        _network: Resource<Network>,
        name: String,
    ) -> Result<Resource<Never>, SocketError> {
        self.denied(
            "wasi:sockets/ip-name-lookup.resolve-addresses",
            json!({"name": name}),
            "name lookup is not part of a worldline world",
        )?;
        Err(SocketError::Code(
            wasi::sockets::network::ErrorCode::AccessDenied,
        ))
    }
}
