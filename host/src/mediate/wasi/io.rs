//! `wasi:io`: errors, pollables and streams.
//!
//! - virtual: pollables are ready once virtual time reaches their deadline
//!   (polling jumps time to the earliest one); stdin is empty;
//! - recorded: every call; what is written to stdout/stderr (bounded by
//!   `limits.stdout_bytes`, the rest counted), the size of a request body;
//! - denied: nothing (streams only reach the captures above).

use super::super::bindings::{InputStream, IoError, OutputStream, Pollable, StreamError, wasi};
use super::super::{Answer, RunState, Services};
use super::u64_of;
use serde_json::{Value, json};
use wasmtime::component::Resource;

/// How much a stream accepts per `check-write`.
const WRITE_BUDGET: u64 = 64 * 1024;

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
        fn capture(s: &mut Services, stream: OutputStream) -> &mut super::super::stdio::Capture {
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
