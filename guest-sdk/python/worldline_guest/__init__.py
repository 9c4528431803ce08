"""Write worldline agents in Python.

An agent is a function from a task (the case's ``task``, parsed from JSON) to
an output (anything ``json.dumps`` accepts), marked with :func:`agent`.
Everything it does to the outside goes through the host, which answers from
the case's simulated world and records it::

    import worldline_guest as wl
    from worldline_guest import tools, trace

    @wl.agent
    def run(task):
        ticket = tools.call("get_ticket", id=task["ticket"])
        try:
            tools.call("close_ticket", id=ticket["id"])
        except wl.Denied:
            trace.note("plan", "close denied; leaving it open")
        return {"ticket": ticket["id"]}

Build with ``worldline build-python agent.py -o agent.wasm`` (it needs
``componentize-py`` installed). ``time``, ``random``, ``uuid``, hashing and
printing all work and are virtual: the run replays bit for bit.
"""

import inspect
import json
import sys
from typing import Any, Callable

import wit_world
from componentize_py_types import Err

from . import approval, cpu_clocks, files, model, tools, trace, user
from .errors import (
    Conflict,
    Denied,
    Error,
    ErrorKind,
    Failed,
    InvalidArgs,
    NotFound,
    Timeout,
    Unavailable,
)

__all__ = [
    "agent",
    "approval",
    "files",
    "model",
    "tools",
    "trace",
    "user",
    "Error",
    "ErrorKind",
    "Denied",
    "NotFound",
    "InvalidArgs",
    "Timeout",
    "Unavailable",
    "Conflict",
    "Failed",
]


def _world(run: Callable[[Any], Any]) -> type:
    """The ``WitWorld`` class that exports ``run`` (see :func:`agent`)."""

    class WitWorld(wit_world.WitWorld):
        def run(self, task_json: str) -> str:
            cpu_clocks.restart()
            try:
                task = json.loads(task_json)
            except ValueError as e:
                raise Err(f"bad task: {e}") from None
            try:
                out = run(task)
                if inspect.isawaitable(out):
                    # An `async def run`: awaited on the sandbox's loop
                    # (it was a coroutine, refused as output).
                    import asyncio

                    out = asyncio.run(out)
            except Error as e:
                raise Err(str(e)) from None
            try:
                # NaN and the infinities are no JSON: a grader read them as
                # null.
                return json.dumps(out, sort_keys=True, separators=(",", ":"), allow_nan=False)
            except (TypeError, ValueError) as e:
                raise Err(f"bad output: {e}") from None

    return WitWorld


def agent(run: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Export ``run(task) -> output`` as the agent's ``run``.

    Defines ``WitWorld`` (the class componentize-py looks for) in the module
    that defines ``run``, and returns ``run`` unchanged. An :class:`Error`
    escaping ``run`` ends the run ``errored`` with its text, as does a task
    that is not JSON or an output ``json.dumps`` refuses; any other
    exception traps the agent and the run report shows its traceback.
    """
    setattr(sys.modules[run.__module__], "WitWorld", _world(run))
    return run


def exported(module: Any) -> type:
    """What ``worldline build-python`` exports from the agent's module: the
    ``run`` marked with :func:`agent`, or else a plain top-level
    ``def run(task)`` (an agent with no worldline import), exported the
    same way."""
    world = getattr(module, "WitWorld", None)
    if world is not None:
        return world
    name = module.__name__
    if name in sys.stdlib_module_names:
        # `import calendar` loads the standard module, not the agent's
        # file: "defines no agent" sent the user to code that was right.
        raise TypeError(
            f"{name}.py has the name of Python's standard module `{name}`, which the "
            f"build imports instead of the file: rename the file (e.g. `{name}_agent.py`)"
        )
    run = getattr(module, "run", None)
    if not callable(run):
        raise TypeError(
            f"{module.__name__}.py defines no agent: define `def run(task)` "
            "(or mark another function with @worldline_guest.agent)"
        )
    return _world(run)
