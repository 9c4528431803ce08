//! The response to a routed request as the agent reads it: status,
//! headers (immutable fields), the body as an input stream, and trailers
//! that are always ready and always empty. Bodies are bytes the world
//! built from a recorded answer; all of this is plumbing (recorded only
//! for a recording that has it, `wasi/mod.rs`).

use crate::mediate::RunState;
use crate::mediate::bindings::wasi::http::types::ErrorCode;
use crate::mediate::bindings::{
    HttpFields, HttpResponse, HttpResponseBody, HttpTrailers, InputStream, Pollable, wasi,
};
use serde_json::{Value, json};
use wasmtime::component::Resource;

impl wasi::http::types::HostIncomingResponse for RunState {
    fn status(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u16> {
        let status = self.table.get(&r)?.status;
        self.plumbing(
            "wasi:http/types.incoming-response.status",
            || json!({}),
            || json!(status),
        )?;
        Ok(status)
    }

    fn headers(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Resource<HttpFields>> {
        let entries = self.table.get(&r)?.headers.clone();
        self.plumbing(
            "wasi:http/types.incoming-response.headers",
            || json!({}),
            || {
                let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
                json!({"names": names})
            },
        )?;
        Ok(self.table.push(HttpFields {
            entries,
            immutable: true,
        })?)
    }

    fn consume(
        &mut self,
        r: Resource<HttpResponse>,
    ) -> wasmtime::Result<Result<Resource<HttpResponseBody>, ()>> {
        let body = self.table.get_mut(&r)?.body.take();
        self.plumbing(
            "wasi:http/types.incoming-response.consume",
            || json!({}),
            || json!({"ok": body.is_some()}),
        )?;
        Ok(match body {
            Some(data) => Ok(self.table.push(HttpResponseBody { data: Some(data) })?),
            None => Err(()),
        })
    }

    fn drop(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<()> {
        self.plumbing(
            "wasi:http/types.incoming-response.drop",
            || json!({}),
            || Value::Null,
        )?;
        self.table.delete(r)?;
        Ok(())
    }
}

impl wasi::http::types::HostIncomingBody for RunState {
    fn stream(
        &mut self,
        b: Resource<HttpResponseBody>,
    ) -> wasmtime::Result<Result<Resource<InputStream>, ()>> {
        let data = self.table.get_mut(&b)?.data.take();
        self.plumbing(
            "wasi:http/types.incoming-body.stream",
            || json!({}),
            || json!({"ok": data.is_some()}),
        )?;
        Ok(match data {
            Some(data) => Ok(self.table.push(InputStream::HttpBody { data, pos: 0 })?),
            None => Err(()),
        })
    }

    fn finish(
        &mut self,
        b: Resource<HttpResponseBody>,
    ) -> wasmtime::Result<Resource<HttpTrailers>> {
        self.plumbing(
            "wasi:http/types.incoming-body.finish",
            || json!({}),
            || Value::Null,
        )?;
        self.table.delete(b)?;
        Ok(self.table.push(HttpTrailers { taken: false })?)
    }

    fn drop(&mut self, b: Resource<HttpResponseBody>) -> wasmtime::Result<()> {
        self.plumbing(
            "wasi:http/types.incoming-body.drop",
            || json!({}),
            || Value::Null,
        )?;
        self.table.delete(b)?;
        Ok(())
    }
}

impl wasi::http::types::HostFutureTrailers for RunState {
    fn subscribe(&mut self, t: Resource<HttpTrailers>) -> wasmtime::Result<Resource<Pollable>> {
        self.table.get(&t)?;
        self.plumbing(
            "wasi:http/types.future-trailers.subscribe",
            || json!({}),
            || Value::Null,
        )?;
        Ok(self.table.push(Pollable { deadline: 0 })?)
    }

    #[allow(clippy::type_complexity)]
    fn get(
        &mut self,
        t: Resource<HttpTrailers>,
    ) -> wasmtime::Result<Option<Result<Result<Option<Resource<HttpFields>>, ErrorCode>, ()>>> {
        let trailers = self.table.get_mut(&t)?;
        let taken = std::mem::replace(&mut trailers.taken, true);
        self.plumbing(
            "wasi:http/types.future-trailers.get",
            || json!({}),
            || json!({"taken": taken}),
        )?;
        Ok(Some(if taken { Err(()) } else { Ok(Ok(None)) }))
    }

    fn drop(&mut self, t: Resource<HttpTrailers>) -> wasmtime::Result<()> {
        self.plumbing(
            "wasi:http/types.future-trailers.drop",
            || json!({}),
            || Value::Null,
        )?;
        self.table.delete(t)?;
        Ok(())
    }
}
