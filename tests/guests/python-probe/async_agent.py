"""An agent whose `run` is `async def` (awaited on the sandbox's loop): it
sleeps, calls a tool and answers its id; with `"nan": true` in the task it
answers NaN, which is no JSON; with `"clocks": true` it answers the CPU-time
clocks around a sleep and what a raw socket lookup and connection raise
(`host/tests/python.rs`)."""

import asyncio
import socket
import time

import worldline_guest as wl
from worldline_guest import tools


def refusal(attempt):
    try:
        attempt()
    except OSError as e:
        return type(e).__name__
    return "allowed"


@wl.agent
async def run(task):
    if task.get("nan"):
        return {"score": float("nan")}
    if task.get("clocks"):
        before = (time.process_time(), time.thread_time_ns())
        await asyncio.sleep(2)
        return {
            "before": [before[0], before[1]],
            "after": [time.process_time(), time.thread_time_ns()],
            "lookup": refusal(lambda: socket.getaddrinfo("example.com", 80)),
            "connect": refusal(lambda: socket.create_connection(("1.1.1.1", 80), timeout=1)),
        }
    await asyncio.sleep(1)
    return {"ticket": tools.call("get_ticket", id=task["ticket"])["id"]}
