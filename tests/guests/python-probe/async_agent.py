"""An agent whose `run` is `async def` (awaited on the sandbox's loop): it
sleeps, calls a tool and answers its id; with `"nan": true` in the task it
answers NaN, which is no JSON (`host/tests/python.rs`)."""

import asyncio
import worldline_guest as wl
from worldline_guest import tools


@wl.agent
async def run(task):
    if task.get("nan"):
        return {"score": float("nan")}
    await asyncio.sleep(1)
    return {"ticket": tools.call("get_ticket", id=task["ticket"])["id"]}
