"""Test guest in Python: reads the clock, sleeps, draws from `random` and
`uuid`, iterates a set of strings, prints, and calls a tool `calls` times.
Everything it saw goes into its output, so two runs can be compared field by
field. With `"raise": true` in the task it raises an uncaught exception from
a nested function (the run must trap with the Python traceback); with
`"bad_output": true` it returns a value JSON cannot hold; with `"env": true`
it returns what `os.environ` holds; with `"print_bytes": N` it prints N
bytes in one `print` and returns."""

import os
import random
import time
import uuid

import worldline_guest as wl
from worldline_guest import files, model, tools, trace


def look_up(tickets, key):
    return tickets[key]


@wl.agent
def run(task):
    if task.get("env"):
        return {"key": os.environ.get("OPENAI_API_KEY"), "env": dict(os.environ)}
    if task.get("print_bytes"):
        print("x" * task["print_bytes"])
        return {"printed": task["print_bytes"]}
    wall_before = time.time()
    mono = time.monotonic()
    time.sleep(0.25)
    slept = time.monotonic() - mono
    names = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
    order = [name for name in names]
    print("python probe says hello; order =", order)
    trace.note("plan", "python probe is about to call tools")
    answers = [tools.call("get_ticket", id=task["ticket"]) for _ in range(task.get("calls", 1))]
    if task.get("raise"):
        look_up({"T-1": answers[0]}, "T-404")
    if task.get("bad_output"):
        return {"not json": {1, 2}}
    try:
        tools.call("get_ticket", id="T-404")
        missing = "found"
    except wl.NotFound as e:
        missing = str(e)
    runbooks = files.paths("runbooks")
    try:
        said = model.chat([model.system("You are a probe."), model.user("hello")]).content
        asked = model.chat(
            [model.user("tools please")], tools=model.tool_defs(tools.specs())
        ).tool_calls
        model_said = {
            "said": said,
            "asked": [[c.name, c.arguments()] for c in asked],
            "answer": [tools.call(c.name, c.arguments())["id"] for c in asked],
        }
    except wl.Error as e:
        model_said = e.kind.value
    return {
        "tools": [spec.name for spec in tools.specs()],
        "runbooks": runbooks,
        "runbook_text": files.read_text(runbooks[0])[:40] if runbooks else None,
        "model": model_said,
        "wall_before": wall_before,
        "wall_after": time.time(),
        "slept": slept,
        "random": random.random(),
        "uuid": str(uuid.uuid4()),
        "set_order": order,
        "ticket": answers[0],
        "calls": len(answers),
        "missing": missing,
    }
