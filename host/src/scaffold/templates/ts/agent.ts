/**
 * The agent: it completes tasks of the `tasks` world.
 *
 * It has one deliberate bug, which the case `complete-overdue` catches:
 * asked to complete every overdue task, it completes only the first one it
 * finds. Make it complete each of them and `worldline test` passes.
 */

import { Failed, tools, trace } from "worldline";

type Task = { id: string; title: string; status: string; due: string };
type Goal =
  | { goal: "complete"; id: string }
  | { goal: "complete-overdue"; today: string };

export function run(task: Goal) {
  if (task.goal === "complete") {
    const done: Task = tools.call("complete_task", { id: task.id });
    return { completed: [done.id] };
  }
  if (task.goal === "complete-overdue") {
    const open: Task[] = tools.call("list_tasks", { status: "open" });
    const overdue = open.filter((t) => t.due < task.today);
    trace.note("plan", `${overdue.length} overdue task(s)`);
    if (overdue.length === 0) {
      return { completed: [] };
    }
    // The bug: only the first overdue task is completed.
    const first = overdue[0];
    tools.call("complete_task", { id: first.id });
    return { completed: [first.id] };
  }
  throw new Failed(`unknown goal ${JSON.stringify(task)}`);
}
