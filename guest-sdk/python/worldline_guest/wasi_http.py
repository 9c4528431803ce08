"""A blocking HTTP client over ``wasi:http``: what ``http.client``,
``urllib`` and ``httpx`` are given in a worldline agent (see
:mod:`worldline_guest.stdlib_http` and :mod:`worldline_guest.httpx_transport`).

The host answers each request itself (a model API, the world's MCP
endpoint, the world's own routes) and denies every other one; a request is
handed over first and its body written after, and waiting for the answer
blocks in the run's virtual time (or, in an ``asyncio`` task, waits in the
loop beside its timers: :mod:`worldline_guest.asyncio_standin`). Errors are the built-in ones a network
client raises: a denied request is a :class:`ConnectionRefusedError`, a
request that gets no answer before its timeout a :class:`TimeoutError`,
anything else a :class:`ConnectionError` naming the ``wasi:http`` error code.
"""

from dataclasses import dataclass
from typing import List, Optional, Tuple
from urllib.parse import urlsplit

from componentize_py_types import Err, Ok
from wit_world.imports import http_types as _t
from wit_world.imports import outgoing_handler as _handler
from wit_world.imports.streams import StreamError_Closed

# Hop-by-hop and framing headers: the request's URL and body say these.
_NOT_SENT = frozenset(
    ("host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "upgrade", "content-length")
)
_METHODS = {
    "GET": _t.Method_Get,
    "HEAD": _t.Method_Head,
    "POST": _t.Method_Post,
    "PUT": _t.Method_Put,
    "DELETE": _t.Method_Delete,
    "CONNECT": _t.Method_Connect,
    "OPTIONS": _t.Method_Options,
    "TRACE": _t.Method_Trace,
    "PATCH": _t.Method_Patch,
}
_TIMEOUTS = (
    _t.ErrorCode_ConnectionReadTimeout,
    _t.ErrorCode_ConnectionTimeout,
    _t.ErrorCode_HttpResponseTimeout,
    _t.ErrorCode_DnsTimeout,
)
_CHUNK = 4096
_READ = 64 * 1024


@dataclass
class Response:
    """A response, read whole."""

    status: int
    headers: List[Tuple[str, bytes]]
    body: bytes


def _error(code, method: str, url: str) -> OSError:
    """The built-in exception a network client raises for ``code``."""
    name = type(code).__name__.removeprefix("ErrorCode_")
    if isinstance(code, _t.ErrorCode_HttpRequestDenied):
        return ConnectionRefusedError(
            f"{method} {url}: HTTP-request-denied (not part of the world: only model APIs, "
            "http://world/mcp and the world's declared routes are answered)"
        )
    if isinstance(code, _TIMEOUTS):
        return TimeoutError(f"{method} {url}: timed out ({name})")
    return ConnectionError(f"{method} {url}: {name}")


class Pending:
    """A request handed over, its answer not yet read."""

    def __init__(self, future, method: str, url: str):
        self._future = future
        self._method = method
        self._url = url

    def subscribe(self):
        """A pollable ready once the answer is, for an event loop to wait on
        beside its timers (drop it before :meth:`close`)."""
        return self._future.subscribe()

    def close(self) -> None:
        """Give the request up unread (a cancelled wait)."""
        self._future.__exit__(None, None, None)

    def wait(self) -> Response:
        """Block (in virtual time) until the answer arrives and read it whole."""
        future = self._future
        while True:
            answer = future.get()
            if answer is not None:
                break
            with future.subscribe() as pollable:
                pollable.block()
        future.__exit__(None, None, None)
        if isinstance(answer, Err):
            raise ConnectionError(f"{self._method} {self._url}: the response was already taken")
        answer = answer.value
        if not isinstance(answer, Ok):
            raise _error(answer.value, self._method, self._url)
        chunks = []
        with answer.value as incoming:
            status = incoming.status()
            with incoming.headers() as fields:
                headers = fields.entries()
            body = incoming.consume()
            with body.stream() as stream:
                while True:
                    try:
                        chunks.append(stream.blocking_read(_READ))
                    except Err as e:
                        if isinstance(e.value, StreamError_Closed):
                            break
                        raise ConnectionError(f"{self._method} {self._url}: reading the response failed") from None
            _t.IncomingBody.finish(body).__exit__(None, None, None)
        return Response(status, headers, b"".join(chunks))


def start(
    method: str,
    url: str,
    headers: List[Tuple[str, bytes]],
    body: bytes = b"",
    timeout: Optional[float] = None,
) -> Pending:
    """Hand a request over and write its body; ``timeout`` (seconds) is how
    long to wait for the first byte of the answer. Raises
    :class:`ConnectionRefusedError` when the world does not answer the URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    sent = [(n, v) for n, v in headers if n.lower() not in _NOT_SENT]
    try:
        fields = _t.Fields.from_list(sent)
    except Err as e:
        raise ValueError(f"{method} {url}: a header was refused ({type(e.value).__name__})") from None
    request = _t.OutgoingRequest(fields)
    method = method.upper()
    request.set_method(_METHODS[method]() if method in _METHODS else _t.Method_Other(method))
    request.set_scheme(_t.Scheme_Https() if parts.scheme == "https" else _t.Scheme_Http())
    request.set_authority(parts.netloc)
    request.set_path_with_query(path)
    out = request.body()
    options = None
    if timeout is not None:
        options = _t.RequestOptions()
        options.set_first_byte_timeout(max(0, int(timeout * 1_000_000_000)))
    try:
        future = _handler.handle(request, options)
    except Err as e:
        out.__exit__(None, None, None)
        raise _error(e.value, method, url) from None
    with out.write() as stream:
        for at in range(0, len(body), _CHUNK):
            stream.blocking_write_and_flush(body[at : at + _CHUNK])
    _t.OutgoingBody.finish(out, None)
    return Pending(future, method, url)


def send(
    method: str,
    url: str,
    headers: List[Tuple[str, bytes]],
    body: bytes = b"",
    timeout: Optional[float] = None,
) -> Response:
    """:func:`start` a request and wait for its answer."""
    return start(method, url, headers, body, timeout).wait()
