"""The agent: it completes tasks of the `tasks` world.

It has one deliberate bug, which the case `complete-overdue` catches:
asked to complete every overdue task, it completes only the first one it
finds. Make it complete each of them and `worldline test` passes.
"""

import worldline_guest as wl
from worldline_guest import tools, trace


@wl.agent
def run(task):
    goal = task.get("goal")
    if goal == "complete":
        done = tools.call("complete_task", id=task["id"])
        return {"completed": [done["id"]]}
    if goal == "complete-overdue":
        open_tasks = tools.call("list_tasks", status="open")
        overdue = [t for t in open_tasks if t["due"] < task["today"]]
        trace.note("plan", f"{len(overdue)} overdue task(s)")
        if not overdue:
            return {"completed": []}
        # The bug: only the first overdue task is completed.
        first = overdue[0]
        tools.call("complete_task", id=first["id"])
        return {"completed": [first["id"]]}
    raise wl.Failed(f"unknown goal {goal!r}")
