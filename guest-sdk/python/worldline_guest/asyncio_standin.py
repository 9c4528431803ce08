"""An ``asyncio`` event loop for the sandbox's Python, which has no sockets:
CPython's selector loop opens a socket pair when it starts (to be woken
from other threads and signal handlers), and the sandbox refuses it, so
``asyncio.run`` fails before the first task. Async clients (the ``mcp``
client package, ``anthropic``'s and ``openai``'s async clients, the
OpenAI Agents SDK) all need a loop.

What it gives: the standard selector loop (tasks, futures, timers,
``asyncio.timeout``, task groups) with no wake-up socket pair and a
selector with nothing to select: every request goes through ``wasi:http``
and blocks the run until answered, so a task is never waiting on a file
descriptor; when only timers are left the loop sleeps until the nearest
one, which the sandbox turns into a jump of virtual time. The sandbox has
one thread, so ``run_in_executor`` (and ``asyncio.to_thread``, which the
async clients use for small blocking calls) runs the function at once in
the loop's thread and returns a done future. What it refuses:
registering a file descriptor (sockets, pipes, ``add_reader``) raises
``OSError`` saying so, and a loop with nothing left to run and no timer
(a deadlock) raises ``RuntimeError`` instead of waiting forever.
Deterministic: it reads no clock itself; its sleeps are the sandbox's."""

import selectors
import time

REFUSED = (
    "no file descriptors to wait on in the sandbox: asyncio's loop here runs "
    "tasks and timers only; HTTP goes through wasi:http (httpx, httpx2, urllib)"
)


class WasiSelector(selectors.BaseSelector):
    """A selector with nothing to select: waiting is sleeping."""

    def register(self, fileobj, events, data=None):
        raise OSError(REFUSED)

    def unregister(self, fileobj):
        raise KeyError(fileobj)

    def select(self, timeout=None):
        if timeout is None:
            raise RuntimeError(
                "the asyncio loop has nothing to run and nothing to wait for: "
                "every task waits on another (a deadlock)"
            )
        if timeout > 0:
            time.sleep(timeout)
        return []

    def close(self):
        pass

    def get_map(self):
        return {}


def loop_class():
    """The loop: the standard selector loop without its socket pair."""
    import asyncio

    class WasiEventLoop(asyncio.SelectorEventLoop):
        def __init__(self):
            super().__init__(WasiSelector())

        def _make_self_pipe(self):
            self._ssock = self._csock = None

        def _close_self_pipe(self):
            pass

        def _write_to_self(self):
            # One thread: nothing else can be waiting to wake the loop.
            pass

        def run_in_executor(self, executor, func, *args):
            # No threads in the sandbox: the call runs here, now, blocking
            # the run as every call does, and its future is already done.
            self._check_closed()
            future = self.create_future()
            try:
                future.set_result(func(*args))
            except Exception as e:
                future.set_exception(e)
            return future

    return WasiEventLoop


def install():
    """Make the loop the one ``asyncio.run`` and ``asyncio.new_event_loop``
    start, by the default policy's loop factory (no deprecated policy call)."""
    from asyncio import events

    get = getattr(events, "_get_event_loop_policy", None) or events.get_event_loop_policy
    type(get())._loop_factory = loop_class()
