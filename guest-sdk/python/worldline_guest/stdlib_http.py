"""``http.client`` and ``urllib.request`` over ``wasi:http``, installed by
``worldline build-python`` before the agent's module is imported, so an
agent written only against the standard library reaches the model API,
the world's MCP endpoint and its declared routes with no worldline import::

    import json, urllib.request

    req = urllib.request.Request(
        "https://api.openai.com/v1/chat/completions",
        data=json.dumps({"model": "gpt-4o-mini", "messages": [...]}).encode(),
        headers={"content-type": "application/json", "authorization": "Bearer sk-..."},
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        completion = json.load(r)

``http.client.HTTPConnection`` and ``HTTPSConnection`` keep all of their
own request and response handling; only their socket is replaced by one
that hands each complete request to :mod:`worldline_guest.wasi_http` and
reads the answer back as HTTP/1.1 bytes. The sandbox has no ``ssl`` module,
so ``urllib.request.HTTPSHandler`` is defined here when it is missing.
"""

import http.client
import io
import urllib.request
from http import HTTPStatus

from . import wasi_http

_MAX_HEAD = 64 * 1024


def _head_and_rest(data: bytes):
    """The request line and headers of buffered request bytes, and the rest."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        if len(data) > _MAX_HEAD:
            raise OSError("the request's headers are too long")
        return None, data
    lines = data[:end].decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip().encode("latin-1")))
    return (method, target, headers), data[end + 4 :]


def _chunked(data: bytes):
    """A chunked body decoded, and the bytes after it; ``None`` until whole."""
    body, at = [], 0
    while True:
        eol = data.find(b"\r\n", at)
        if eol < 0:
            return None
        size = int(data[at:eol].split(b";")[0], 16)
        if size == 0:
            # The last chunk, then trailers (usually none) and an empty line.
            end = data.find(b"\r\n\r\n", eol)
            return None if end < 0 else (b"".join(body), data[end + 4 :])
        if len(data) < eol + 2 + size + 2:
            return None
        body.append(data[eol + 2 : eol + 2 + size])
        at = eol + 2 + size + 2


class _Socket:
    """What ``http.client`` writes requests to and reads answers from: each
    complete request is handed to ``wasi:http`` when its last byte is sent
    (so a denied URL fails inside ``request()``, as a refused connection
    does), and its answer is read when the response is."""

    def __init__(self, scheme: str, authority: str, timeout):
        self._scheme = scheme
        self._authority = authority
        self._timeout = timeout if isinstance(timeout, (int, float)) else None
        self._buffer = b""
        self._pending = []

    def sendall(self, data) -> None:
        self._buffer += bytes(data)
        while True:
            head, rest = _head_and_rest(self._buffer)
            if head is None:
                return
            method, target, headers = head
            names = {n.lower(): v for n, v in headers}
            if b"chunked" in names.get("transfer-encoding", b"").lower():
                whole = _chunked(rest)
                if whole is None:
                    return
                body, self._buffer = whole
            else:
                length = int(names.get("content-length", b"0") or b"0")
                if len(rest) < length:
                    return
                body, self._buffer = rest[:length], rest[length:]
            host = names.get("host", self._authority.encode()).decode("latin-1")
            url = target if "://" in target else f"{self._scheme}://{host}{target}"
            self._pending.append(wasi_http.start(method, url, headers, body, self._timeout))

    send = sendall

    def makefile(self, mode="rb", *args, **kwargs):
        if not self._pending:
            raise OSError("no request was sent on this connection")
        r = self._pending.pop(0).wait()
        try:
            reason = HTTPStatus(r.status).phrase
        except ValueError:
            reason = ""
        head = [f"HTTP/1.1 {r.status} {reason}".encode("latin-1")]
        for name, value in r.headers:
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                head.append(name.encode("latin-1") + b": " + value)
        head.append(b"content-length: %d" % len(r.body))
        return io.BytesIO(b"\r\n".join(head) + b"\r\n\r\n" + r.body)

    def settimeout(self, timeout) -> None:
        self._timeout = timeout

    def setsockopt(self, *args) -> None:
        pass

    def close(self) -> None:
        pass


class HTTPConnection(http.client.HTTPConnection):
    """``http.client.HTTPConnection`` whose requests go over ``wasi:http``."""

    _scheme = "http"

    def connect(self) -> None:
        if self._tunnel_host:
            raise OSError("proxy tunnels are not part of a worldline world")
        authority = self.host if self.port == self.default_port else f"{self.host}:{self.port}"
        self.sock = _Socket(self._scheme, authority, self.timeout)


class HTTPSConnection(HTTPConnection):
    """``http.client.HTTPSConnection`` over ``wasi:http`` (TLS is the host's
    business: the world answers the request itself)."""

    default_port = http.client.HTTPS_PORT
    _scheme = "https"

    def __init__(self, host, port=None, *, context=None, check_hostname=None, **kwargs):
        super().__init__(host, port, **kwargs)


class HTTPSHandler(urllib.request.AbstractHTTPHandler):
    """``urllib.request.HTTPSHandler`` for a Python built without ``ssl``."""

    def https_open(self, req):
        return self.do_open(http.client.HTTPSConnection, req)

    https_request = urllib.request.AbstractHTTPHandler.do_request_


def install() -> None:
    """Make ``http.client`` and ``urllib.request`` speak ``wasi:http``."""
    http.client.HTTPConnection = HTTPConnection
    http.client.HTTPSConnection = HTTPSConnection
    if not hasattr(urllib.request, "HTTPSHandler"):
        urllib.request.HTTPSHandler = HTTPSHandler
        urllib.request.__all__.append("HTTPSHandler")
    urllib.request.install_opener(None)
