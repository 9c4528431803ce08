/**
 * Typed errors of host calls.
 *
 * Every failed call to the host (a tool, the model, the world's files)
 * throws a subclass of {@link WorldlineError} that carries the host's
 * `error-kind`, so an agent can write `if (e instanceof Denied)` or branch on
 * `e.kind`. A `WorldlineError` that escapes the agent's `run` ends the run
 * `errored` (exit 1), like a Rust agent returning `Err`; any other exception
 * traps the agent (exit 3) and the run report shows its JavaScript stack.
 */

import type { ErrorKind, ToolError } from "worldline:agent/types@0.1.0";

export type { ErrorKind };

/**
 * A failed host call, or an agent-level failure, with its kind.
 *
 * `message` is the host's message alone, as `.message` is in the Rust and
 * Python SDKs (an agent that hands it to its model hands the same text on
 * every path); `toString()` and a run this error ends say `kind: message`.
 */
export class WorldlineError extends Error {
  readonly kind: ErrorKind;

  constructor(message: string, kind: ErrorKind = "failed") {
    super(message);
    this.name = new.target.name;
    this.kind = kind;
  }

  /** `kind: message`, as the Rust and Python SDKs write an error. */
  override toString(): string {
    return `${this.kind}: ${this.message}`;
  }
}

/** A permission of the case or world refused the call; nothing changed. */
export class Denied extends WorldlineError {
  constructor(message: string) {
    super(message, "denied");
  }
}

/** The named tool, row or file does not exist. */
export class NotFound extends WorldlineError {
  constructor(message: string) {
    super(message, "not-found");
  }
}

/** The arguments did not match the tool's parameter schema. */
export class InvalidArgs extends WorldlineError {
  constructor(message: string) {
    super(message, "invalid-args");
  }
}

/** The call took longer than the world allows. */
export class Timeout extends WorldlineError {
  constructor(message: string) {
    super(message, "timeout");
  }
}

/** The service behind the call is down. */
export class Unavailable extends WorldlineError {
  constructor(message: string) {
    super(message, "unavailable");
  }
}

/** The call conflicts with the current state (for example a duplicate). */
export class Conflict extends WorldlineError {
  constructor(message: string) {
    super(message, "conflict");
  }
}

/** Any other failure, and agent-side failures (bad JSON, a plan that cannot go on). */
export class Failed extends WorldlineError {
  constructor(message: string) {
    super(message, "failed");
  }
}

/** The class for each kind; a `Record` so a new kind in the WIT fails the type check. */
const BY_KIND: Record<ErrorKind, new (message: string) => WorldlineError> = {
  denied: Denied,
  "not-found": NotFound,
  "invalid-args": InvalidArgs,
  timeout: Timeout,
  unavailable: Unavailable,
  conflict: Conflict,
  failed: Failed,
};

/** The typed error for a `tool-error` the host returned. */
export function fromWit(err: ToolError): WorldlineError {
  const make = BY_KIND[err.kind] ?? Failed;
  return new make(err.message);
}

/**
 * Call a generated binding; turn the `tool-error` it throws (ComponentizeJS
 * throws `{ payload }` for a WIT `result` error) into a {@link WorldlineError}.
 */
export function hostCall<T>(call: () => T): T {
  try {
    return call();
  } catch (e) {
    const payload = (e as { payload?: ToolError } | null)?.payload;
    if (payload && typeof payload === "object" && typeof payload.kind === "string") {
      throw fromWit(payload);
    }
    throw e;
  }
}
