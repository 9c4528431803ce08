/**
 * The export `worldline build-js` wraps around the agent's `run`: the task
 * parsed from JSON, the output written as canonical JSON, a
 * {@link WorldlineError} turned into the run's error (`errored`), and any
 * other exception printed with its stack and then trapped, so the run
 * report shows where it came from.
 */

import { WorldlineError } from "./errors";
import { canonical } from "./json";

/** The line the host looks for to find the stack in the guest's stderr. */
export const UNCAUGHT = "Uncaught JavaScript exception:";
/** Ends the account (the engine prints its own lines after it). */
export const END = "(end of JavaScript exception)";

type Run = (task: any) => unknown;

/** ComponentizeJS makes a thrown `{ payload }` the `err` of `result<string, string>`. */
function failWith(message: string): never {
  throw { payload: message };
}

/**
 * Written into the bundle by `worldline build-js`: its source map, the
 * mappings of each generated line (`;`-separated) decodable on their own.
 */
interface LineTable {
  file: string;
  sources: string[];
  mappings: string;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** The generated lines' mappings, split once, when a stack is first printed. */
let rows: string[] | undefined;
/** Lines decoded so far (a minified bundle's frames share a few long lines). */
const decoded = new Map<number, Array<[number, number, number, number]>>();

/** One generated line's segments: [column (0-based), source, line, column (1-based)]. */
function segments(table: LineTable, line: number): Array<[number, number, number, number]> {
  const known = decoded.get(line);
  if (known) return known;
  rows ??= table.mappings.split(";");
  const text = rows[line - 1] ?? "";
  const out: Array<[number, number, number, number]> = [];
  decoded.set(line, out);
  const at = [0, 0, 0, 0];
  let field = 0;
  let value = 0;
  let shift = 0;
  for (const ch of text) {
    if (ch === ",") continue;
    const digit = B64.indexOf(ch);
    value += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    at[field] += value & 1 ? -(value >>> 1) : value >>> 1;
    value = 0;
    shift = 0;
    field += 1;
    if (field === 4) {
      out.push([at[0], at[1], at[2] + 1, at[3] + 1]);
      field = 0;
    }
  }
  return out;
}

/** A stack frame's `bundle.js:line:column` as the agent's `file.ts:line:column`. */
function mapFrame(frame: string): string {
  const table = (globalThis as { __worldlineSourceMap?: LineTable }).__worldlineSourceMap;
  const at = /^(.*@)(.*?):(\d+):(\d+)$/.exec(frame);
  if (!table || !at || !at[2].endsWith(table.file)) return frame;
  const row = segments(table, Number(at[3]));
  const column = Number(at[4]) - 1;
  let best: [number, number, number, number] | undefined;
  for (const seg of row) {
    if (seg[0] <= column) best = seg;
  }
  best ??= row[0];
  return best ? `${at[1]}${table.sources[best[1]]}:${best[2]}:${best[3]}` : frame;
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    const head = `${e.name}: ${e.message}`;
    const stack = (e.stack ?? "").trimEnd().split("\n").map(mapFrame).join("\n");
    return stack ? `${head}\n${stack}` : head;
  }
  try {
    return `uncaught value: ${typeof e === "string" ? e : JSON.stringify(e)}`;
  } catch {
    return `uncaught value: ${String(e)}`;
  }
}

/** Print the exception for the host, then trap (a non-string error cannot be lowered). */
function fault(e: unknown): never {
  console.error(`${UNCAUGHT}\n${describe(e)}\n${END}`);
  throw new Error("trap");
}

/**
 * An exception thrown where no caller can catch it: in a timer's callback
 * (the engine trapped with no word of it) or a queued microtask (the
 * engine dropped it, and the run passed). A timer's is printed for the
 * host as any uncaught one and traps the run; a microtask's fails the run
 * when `run` settles.
 */
let lost: { error: unknown } | undefined;

function guarded(cb: unknown, now: boolean): unknown {
  if (typeof cb !== "function") return cb;
  return function (this: unknown, ...args: unknown[]) {
    try {
      return (cb as (...a: unknown[]) => unknown).apply(this, args);
    } catch (e) {
      if (now) fault(e);
      lost ??= { error: e };
    }
  };
}

const g = globalThis as any;
for (const name of ["setTimeout", "setInterval"]) {
  const original = g[name];
  if (typeof original === "function") {
    g[name] = (cb: unknown, ...rest: unknown[]) => original(guarded(cb, true), ...rest);
  }
}
if (typeof g.queueMicrotask === "function") {
  const original = g.queueMicrotask;
  g.queueMicrotask = (cb: unknown) => original(guarded(cb, false));
}

function finish(out: unknown): string {
  if (lost) {
    const e = lost.error;
    lost = undefined;
    fault(e);
  }
  let text: string | undefined;
  try {
    text = canonical(out ?? null);
  } catch (e) {
    failWith(`bad output: ${(e as Error).message}`);
  }
  return text ?? "null";
}

function settle(e: unknown): never {
  if (e instanceof WorldlineError) failWith(e.toString());
  fault(e);
}

/** The `run` export for an agent's `run(task)`. */
export function wrap(run: Run | undefined): (taskJson: string) => string | Promise<string> {
  if (typeof run !== "function") {
    return () => fault(new TypeError("the agent module exports no `run(task)` function"));
  }
  // A Promise returned by the export is run to completion by the engine's
  // event loop (timers jump virtual time), so `run` may be `async`.
  return (taskJson: string): any => {
    let task: unknown;
    try {
      task = JSON.parse(taskJson);
    } catch (e) {
      failWith(`bad task: ${(e as Error).message}`);
    }
    let out: unknown;
    try {
      out = run(task);
    } catch (e) {
      settle(e);
    }
    if (out instanceof Promise) {
      return out.then(finish, settle);
    }
    return finish(out);
  };
}
