/**
 * Write worldline agents in JavaScript or TypeScript.
 *
 * An agent module exports `run(task)`: the task is the case's `task`
 * (parsed from JSON), the result anything `JSON.stringify` accepts (or a
 * Promise of it). Everything it does to the outside goes through the host,
 * which answers from the case's simulated world and records it:
 *
 * ```ts
 * import { tools, trace, Denied } from "worldline";
 *
 * export function run(task: { ticket: string }) {
 *   const ticket = tools.call("get_ticket", { id: task.ticket });
 *   try {
 *     tools.call("close_ticket", { id: ticket.id });
 *   } catch (e) {
 *     if (!(e instanceof Denied)) throw e;
 *     trace.note("plan", "close denied; leaving it open");
 *   }
 *   return { ticket: ticket.id };
 * }
 * ```
 *
 * Build with `worldline build-js agent.ts -o agent.wasm`. `Date`,
 * `performance.now`, `Math.random`, `crypto`, timers and console output all
 * work and are virtual: the run replays bit for bit.
 */

export * as tools from "./tools";
export * as model from "./model";
export * as files from "./files";
export * as trace from "./trace";
export * as user from "./user";
export * as approval from "./approval";
export {
  WorldlineError,
  Denied,
  NotFound,
  InvalidArgs,
  Timeout,
  Unavailable,
  Conflict,
  Failed,
} from "./errors";
export type { ErrorKind } from "./errors";
export type { Spec } from "./tools";
export type { Message, ToolDef } from "./model";
export type { Turn } from "./user";
export type { Decision } from "./approval";
