"""An ``asyncio`` event loop for the sandbox's Python, which has no sockets:
CPython's selector loop opens a socket pair when it starts (to be woken
from other threads and signal handlers), and the sandbox refuses it, so
``asyncio.run`` fails before the first task. Async clients (the ``mcp``
client package, ``anthropic``'s and ``openai``'s async clients, the
OpenAI Agents SDK) all need a loop.

What it gives: the standard selector loop (tasks, futures, timers,
``asyncio.timeout``, task groups) with no wake-up socket pair and a
selector with no file descriptors: an async request goes through
``wasi:http`` and its task waits (:func:`wait`) on the request's pollable,
which the selector polls with a timer for the loop's next one, so a
timeout due before a slow answer fires first and requests in flight
together wait together; when only timers are left the loop sleeps until
the nearest one. The sandbox turns each wait into a jump of virtual time. The sandbox has
one thread, so ``run_in_executor`` (and ``asyncio.to_thread``, which the
async clients use for small blocking calls) runs the function at once in
the loop's thread and returns a done future. What it refuses:
registering a file descriptor (sockets, pipes, ``add_reader``) raises
``OSError`` saying so, and a loop with nothing left to run and no timer
(a deadlock) raises ``RuntimeError`` instead of waiting forever.
Deterministic: it reads no clock itself; its sleeps are the sandbox's."""

import selectors
import time

# Imported as the agent is built: the run's file system has no modules.
from wit_world.imports import monotonic_clock, poll

REFUSED = (
    "no file descriptors to wait on in the sandbox: asyncio's loop here runs "
    "tasks and timers only; HTTP goes through wasi:http (httpx, httpx2, urllib)"
)


class WasiSelector(selectors.BaseSelector):
    """A selector with no file descriptors: waiting is polling the
    ``wasi:io`` pollables tasks wait on (:func:`wait`) with a timer for
    the loop's next one, or sleeping when no task waits on any."""

    def __init__(self):
        # (pollable, future) of each task waiting in `wait`, in order.
        self._waiting = []

    def register(self, fileobj, events, data=None):
        raise OSError(REFUSED)

    def unregister(self, fileobj):
        raise KeyError(fileobj)

    def watch(self, pollable, future):
        """Set ``future``'s result once ``pollable`` is ready."""
        self._waiting.append((pollable, future))

    def forget(self, future):
        """Stop watching for ``future`` (its wait ended), dropping its pollable."""
        for i, (pollable, f) in enumerate(self._waiting):
            if f is future:
                del self._waiting[i]
                pollable.__exit__(None, None, None)
                return

    def select(self, timeout=None):
        if not self._waiting:
            if timeout is None:
                raise RuntimeError(
                    "the asyncio loop has nothing to run and nothing to wait for: "
                    "every task waits on another (a deadlock)"
                )
            if timeout > 0:
                time.sleep(timeout)
            return []
        pollables = [p for p, _ in self._waiting]
        timer = None
        if timeout is not None:
            timer = monotonic_clock.subscribe_duration(max(0, int(timeout * 1_000_000_000)))
            pollables.append(timer)
        try:
            ready = set(poll.poll(pollables))
        finally:
            if timer is not None:
                timer.__exit__(None, None, None)
        done = [f for i, (_, f) in enumerate(self._waiting) if i in ready]
        for f in done:
            self.forget(f)
            if not f.done():
                f.set_result(None)
        return []

    def close(self):
        pass

    def get_map(self):
        return {}


async def wait(pollable):
    """Wait in the running loop until ``pollable`` (a ``wasi:io`` pollable,
    dropped when the wait ends) is ready, while other tasks and timers run:
    virtual time jumps to whichever is due first. Under another loop, block."""
    import asyncio

    loop = asyncio.get_running_loop()
    selector = getattr(loop, "_selector", None)
    if not isinstance(selector, WasiSelector):
        with pollable:
            pollable.block()
        return
    future = loop.create_future()
    selector.watch(pollable, future)
    try:
        await future
    finally:
        selector.forget(future)


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
