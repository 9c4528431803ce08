"""The `tasks` world's service: the tools declared with `op = "service"` in
worlds/tasks/v1/world.toml. It reads and writes the world's tables through
the host, so every read and write is recorded with the call."""

import worldline_service as ws

TASKS = ws.Table("tasks")


@ws.tool
def complete_task(id):
    task = TASKS.require(id)
    if task["status"] == "done":
        raise ws.Conflict(f"task {id} is already done")
    return TASKS.update(id, status="done", completed_at=ws.now())
