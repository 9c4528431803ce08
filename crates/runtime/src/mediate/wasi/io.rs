//! `wasi:io`: errors, pollables and streams.
//!
//! - virtual: pollables are ready once virtual time reaches their deadline
//!   (polling jumps time to the earliest one); stdin is empty; a response
//!   body is the bytes the world answered (wasi/http/);
//! - recorded: every call; what is written to stdout/stderr (bounded by
//!   `limits.stdout_bytes`, the rest counted), the sizes of request body
//!   writes and response body reads (their bytes travel with the model or
//!   tool call they carry);
//! - denied: nothing (streams only reach the captures above).

use super::super::bindings::{
    BodyCap, InputStream, IoError, OutputStream, Pollable, StreamError, wasi,
};
use super::super::{HostServices, RunState, ServiceReply};
use super::http::{MAX_BUFFERED_BODIES, MAX_REQUEST_BODY};
use super::u64_of;
use serde_json::{Value, json};
use wasmtime::component::Resource;
use worldline_case::case::limits::MAX_STDOUT_BYTES;
use worldline_log::log::rules;

/// How much a stream accepts per `check-write` (stdout and stderr under
/// rules 0, a request body always) and per `write-zeroes`, and gives per
/// `read`.
const WRITE_BUDGET: u64 = 64 * 1024;

/// How much stdout or stderr accepts per `check-write` from rules 1
/// (decision 0423): the largest `limits.stdout_bytes`, so a single write
/// goes whole and the capture keeps and counts it. With 64 KiB CPython
/// wrote the first 64 KiB of a larger `print` and lost the rest, counted
/// nowhere.
const STDIO_WRITE_BUDGET: u64 = MAX_STDOUT_BYTES;

impl RunState {
    /// Capture a write. Bytes past `limits.stdout_bytes` are dropped and
    /// counted, and only the kept part is recorded, so neither memory nor
    /// the bundle grows with a flood; the stream stays open.
    fn write_stream(
        &mut self,
        stream: OutputStream,
        call: &str,
        data: &[u8],
    ) -> Result<(), StreamError> {
        fn capture<'a>(
            s: &'a mut HostServices,
            stream: &OutputStream,
        ) -> &'a mut super::super::stdio::Capture {
            match stream {
                OutputStream::Stdout => &mut s.stdio.stdout,
                OutputStream::Stderr => &mut s.stdio.stderr,
                OutputStream::HttpBody(_) => unreachable!("request bodies are not captured"),
            }
        }
        if let OutputStream::HttpBody(body) = &stream {
            // A request body is kept for the world to answer, within its
            // caps; what a routed request carries is recorded with its
            // model or tool call, so a write is plumbing (its size only).
            if let Err(cap) = body.push(data, MAX_REQUEST_BODY, MAX_BUFFERED_BODIES) {
                return Err(StreamError::Trap(wasmtime::Error::msg(body_cap_error(cap))));
            }
            self.stream_call(
                stream.name(),
                call,
                json!({"stream": stream.name(), "bytes": data.len()}),
                json!({"ok": true}),
            )?;
            return Ok(());
        }
        let keep = capture(&mut self.med.services, &stream)
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
            let dropped = capture(s, &stream).push(data);
            ServiceReply::read(if dropped == 0 {
                json!({"ok": true})
            } else {
                json!({"ok": true, "dropped": dropped})
            })
        })?;
        Ok(())
    }
}

/// Why a request body write was refused, naming the cap.
fn body_cap_error(cap: BodyCap) -> String {
    match cap {
        BodyCap::Request => format!(
            "an HTTP request body passed {} MiB, the cap on one request body (docs/architecture.md, \"Inputs and their caps\"); send a smaller request",
            MAX_REQUEST_BODY >> 20
        ),
        BodyCap::Run => format!(
            "the HTTP request bodies the agent holds (written, not yet answered) passed {} MiB together, the cap per run (docs/architecture.md, \"Inputs and their caps\"); send or drop requests before writing more",
            MAX_BUFFERED_BODIES >> 20
        ),
    }
}

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
            ServiceReply::read(json!(ready))
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
            |s| ServiceReply::read(json!(s.clock.mono_ns() >= deadline)),
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
                ServiceReply::read(Value::Null)
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

impl RunState {
    /// Read up to `len` bytes (a skip reads and drops them): stdin is
    /// empty, a response body gives what is left of it. Sizes are
    /// recorded, not bytes: a body is built from an answer the log holds.
    fn read_stream(
        &mut self,
        s: &Resource<InputStream>,
        call: &str,
        len: u64,
    ) -> Result<Vec<u8>, StreamError> {
        let stream = self.table.get_mut(s)?;
        let name = stream.name();
        let out = match stream {
            InputStream::HttpBody { data, pos } if *pos < data.len() => {
                let n = (len.min(WRITE_BUDGET) as usize).min(data.len() - *pos);
                let out = data[*pos..*pos + n].to_vec();
                *pos += n;
                Some(out)
            }
            _ => None,
        };
        let response = match &out {
            Some(b) => json!({"bytes": b.len()}),
            None => json!({"closed": true}),
        };
        self.stream_call(name, call, json!({"stream": name, "len": len}), response)?;
        out.ok_or(StreamError::Closed)
    }
}

impl wasi::io::streams::HostInputStream for RunState {
    fn read(&mut self, s: Resource<InputStream>, len: u64) -> Result<Vec<u8>, StreamError> {
        self.read_stream(&s, "wasi:io/streams.input-stream.read", len)
    }

    fn blocking_read(
        &mut self,
        s: Resource<InputStream>,
        len: u64,
    ) -> Result<Vec<u8>, StreamError> {
        self.read_stream(&s, "wasi:io/streams.input-stream.blocking-read", len)
    }

    fn skip(&mut self, s: Resource<InputStream>, len: u64) -> Result<u64, StreamError> {
        self.read_stream(&s, "wasi:io/streams.input-stream.skip", len)
            .map(|b| b.len() as u64)
    }

    fn blocking_skip(&mut self, s: Resource<InputStream>, len: u64) -> Result<u64, StreamError> {
        self.read_stream(&s, "wasi:io/streams.input-stream.blocking-skip", len)
            .map(|b| b.len() as u64)
    }

    fn subscribe(&mut self, s: Resource<InputStream>) -> wasmtime::Result<Resource<Pollable>> {
        let name = self.table.get(&s)?.name();
        self.stream_call(
            name,
            "wasi:io/streams.input-stream.subscribe",
            json!({"stream": name}),
            Value::Null,
        )?;
        Ok(self.table.push(Pollable { deadline: 0 })?)
    }

    fn drop(&mut self, s: Resource<InputStream>) -> wasmtime::Result<()> {
        let name = self.table.get(&s)?.name();
        self.stream_call(
            name,
            "wasi:io/streams.input-stream.drop",
            json!({"stream": name}),
            Value::Null,
        )?;
        self.table.delete(s)?;
        Ok(())
    }
}

impl wasi::io::streams::HostOutputStream for RunState {
    fn check_write(&mut self, s: Resource<OutputStream>) -> Result<u64, StreamError> {
        let stream = self.table.get(&s)?.clone();
        let stdio = matches!(stream, OutputStream::Stdout | OutputStream::Stderr);
        let budget = if stdio && self.med.rules() >= rules::STDIO_WRITES_WHOLE {
            STDIO_WRITE_BUDGET
        } else {
            WRITE_BUDGET
        };
        self.stream_call(
            stream.name(),
            "wasi:io/streams.output-stream.check-write",
            json!({"stream": stream.name()}),
            json!({"budget": budget}),
        )?;
        Ok(budget)
    }

    fn write(&mut self, s: Resource<OutputStream>, contents: Vec<u8>) -> Result<(), StreamError> {
        let stream = self.table.get(&s)?.clone();
        self.write_stream(stream, "wasi:io/streams.output-stream.write", &contents)
    }

    fn blocking_write_and_flush(
        &mut self,
        s: Resource<OutputStream>,
        contents: Vec<u8>,
    ) -> Result<(), StreamError> {
        let stream = self.table.get(&s)?.clone();
        self.write_stream(
            stream,
            "wasi:io/streams.output-stream.blocking-write-and-flush",
            &contents,
        )
    }

    fn flush(&mut self, s: Resource<OutputStream>) -> Result<(), StreamError> {
        let stream = self.table.get(&s)?.clone();
        self.stream_call(
            stream.name(),
            "wasi:io/streams.output-stream.flush",
            json!({"stream": stream.name()}),
            Value::Null,
        )?;
        Ok(())
    }

    fn blocking_flush(&mut self, s: Resource<OutputStream>) -> Result<(), StreamError> {
        let stream = self.table.get(&s)?.clone();
        self.stream_call(
            stream.name(),
            "wasi:io/streams.output-stream.blocking-flush",
            json!({"stream": stream.name()}),
            Value::Null,
        )?;
        Ok(())
    }

    fn subscribe(&mut self, s: Resource<OutputStream>) -> wasmtime::Result<Resource<Pollable>> {
        let stream = self.table.get(&s)?.clone();
        self.stream_call(
            stream.name(),
            "wasi:io/streams.output-stream.subscribe",
            json!({"stream": stream.name()}),
            Value::Null,
        )?;
        Ok(self.table.push(Pollable { deadline: 0 })?)
    }

    fn write_zeroes(&mut self, s: Resource<OutputStream>, len: u64) -> Result<(), StreamError> {
        let stream = self.table.get(&s)?.clone();
        let zeros = vec![0u8; len.min(WRITE_BUDGET) as usize];
        self.write_stream(stream, "wasi:io/streams.output-stream.write-zeroes", &zeros)
    }

    fn blocking_write_zeroes_and_flush(
        &mut self,
        s: Resource<OutputStream>,
        len: u64,
    ) -> Result<(), StreamError> {
        let stream = self.table.get(&s)?.clone();
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
        let stream = self.table.get(&s)?.clone();
        self.stream_call(
            stream.name(),
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
        let stream = self.table.get(&s)?.clone();
        self.stream_call(
            stream.name(),
            "wasi:io/streams.output-stream.blocking-splice",
            json!({"stream": stream.name(), "len": len}),
            json!({"closed": true}),
        )?;
        Err(StreamError::Closed)
    }

    fn drop(&mut self, s: Resource<OutputStream>) -> wasmtime::Result<()> {
        let stream = self.table.get(&s)?.clone();
        self.stream_call(
            stream.name(),
            "wasi:io/streams.output-stream.drop",
            json!({"stream": stream.name()}),
            Value::Null,
        )?;
        self.table.delete(s)?;
        Ok(())
    }
}
