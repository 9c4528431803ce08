"""The process's and thread's CPU-time clocks, from 0 at the run's start.

wasi-libc emulates them as the monotonic clock less a start value it reads
as the C runtime starts. componentize-py runs that start at build time and
keeps the value in its snapshot, so in a run ``time.process_time()`` read the
sandbox's virtual monotonic clock less the build's: negative, and another
value for each build. :func:`restart` points ``time``'s CPU-time functions at
the virtual monotonic clock from the moment it is called (the run's start),
as the emulation means them to be; they stay deterministic."""

import time


def restart() -> None:
    origin = time.monotonic_ns()

    def ns() -> int:
        return time.monotonic_ns() - origin

    def seconds() -> float:
        return ns() / 1e9

    time.process_time_ns = ns
    time.process_time = seconds
    time.thread_time_ns = ns
    time.thread_time = seconds
