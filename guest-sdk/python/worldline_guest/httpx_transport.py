"""``httpx`` (and its successor ``httpx2``, which the official ``openai``
package uses) over ``wasi:http``: a sync and an async transport that send
each request through :mod:`worldline_guest.wasi_http`. ``worldline
build-python`` makes them the default transports of whichever of the two
is bundled with the agent (:func:`install`), so ``httpx.Client()`` works
with no worldline import; their own transports need ``httpcore``, which
needs ``ssl``, which the sandbox's Python does not have.

Errors become the library's own: a denied URL ``ConnectError``, a request
with no answer before its read timeout ``ReadTimeout``. An async request
waits in the event loop (:func:`worldline_guest.asyncio_standin.wait`),
so ``asyncio.timeout`` and gathered requests keep virtual time as they
keep real time."""

import contextlib
import importlib
import importlib.util

from . import asyncio_standin, wasi_http

# The libraries patched, by module name.
LIBRARIES = ("httpx", "httpx2")


def transports(httpx):
    """The ``(sync, async)`` transport classes for the library ``httpx``
    (the module ``httpx`` or ``httpx2``)."""

    @contextlib.contextmanager
    def errors(request):
        """The library's own error for each error a request meets."""
        try:
            yield
        except ConnectionRefusedError as e:
            raise httpx.ConnectError(str(e), request=request) from None
        except TimeoutError as e:
            raise httpx.ReadTimeout(str(e), request=request) from None
        except OSError as e:
            raise httpx.NetworkError(str(e), request=request) from None

    def start(request):
        timeout = request.extensions.get("timeout", {}).get("read")
        return wasi_http.start(
            request.method,
            str(request.url),
            [(n.decode("latin-1"), v) for n, v in request.headers.raw],
            request.read(),
            timeout,
        )

    def response(request, r):
        # The body arrives whole and as sent: the library decodes it as
        # the headers say.
        return httpx.Response(r.status, headers=r.headers, content=r.body, request=request)

    def send(request):
        with errors(request):
            r = start(request).wait()
        return response(request, r)

    async def send_async(request):
        # Handed over, then awaited in the loop beside its timers: a
        # timeout due before the answer fires first, and requests in
        # flight together wait together.
        with errors(request):
            pending = start(request)
            try:
                await asyncio_standin.wait(pending.subscribe())
            except BaseException:
                pending.close()
                raise
            r = pending.wait()
        return response(request, r)

    class WasiTransport(httpx.BaseTransport):
        """A sync transport over ``wasi:http``; it takes (and ignores) the
        connection settings the library's own transport takes."""

        def __init__(self, *args, **kwargs):
            pass

        def handle_request(self, request):
            return send(request)

    class AsyncWasiTransport(httpx.AsyncBaseTransport):
        """The async transport: a request waits for its answer in the
        event loop, beside the loop's timers and other requests."""

        def __init__(self, *args, **kwargs):
            pass

        async def handle_async_request(self, request):
            await request.aread()
            return await send_async(request)

    return WasiTransport, AsyncWasiTransport


def install() -> list:
    """Make these the default transports of ``httpx`` and ``httpx2``, each
    when it can be imported; the names of those patched."""
    patched = []
    for name in LIBRARIES:
        if importlib.util.find_spec(name) is None:
            continue
        try:
            httpx = importlib.import_module(name)
            client = importlib.import_module(f"{name}._client")
        except ImportError:
            # Present but not importable here (a dependency missing): the
            # agent meets the same error if it imports it.
            continue
        sync, asynchronous = transports(httpx)
        httpx.HTTPTransport = client.HTTPTransport = sync
        httpx.AsyncHTTPTransport = client.AsyncHTTPTransport = asynchronous
        patched.append(name)
    return patched
