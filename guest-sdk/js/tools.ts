/** The world's tools: `tools.call(name, args)` returns the parsed JSON answer. */

import * as raw from "worldline:agent/tools@0.1.0";
import { Failed, hostCall } from "./errors";
import { canonical } from "./json";

/** A tool as the world declares it. */
export interface Spec {
  name: string;
  description: string;
  /** JSON Schema of the arguments object (parsed; `null` if the host's text is not JSON). */
  paramsSchema: unknown;
  /** Whether calling the tool can change the world. */
  mutates: boolean;
}

/** The tools this agent may see, in the world's declared order. */
export function specs(): Spec[] {
  return hostCall(() => raw.specs()).map((s) => ({
    name: s.name,
    description: s.description,
    paramsSchema: parseOr(s.paramsSchema, null),
    mutates: s.mutates,
  }));
}

/**
 * Call tool `name` with an arguments object; return its answer parsed from
 * JSON. Throws a {@link WorldlineError} subclass (`Denied`, `Timeout`, ...)
 * when the host refuses or the tool fails.
 */
export function call<T = any>(name: string, args: Record<string, unknown> = {}): T {
  const text = callJson(name, canonical(args));
  try {
    return JSON.parse(text) as T;
  } catch (e) {
    throw new Failed(`${name} answered with text that is not JSON: ${(e as Error).message}`);
  }
}

/** Call a tool with raw JSON text; get raw JSON text back. */
export function callJson(name: string, argsJson: string): string {
  return hostCall(() => raw.call(name, argsJson));
}

function parseOr(text: string, fallback: unknown): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return fallback;
  }
}
