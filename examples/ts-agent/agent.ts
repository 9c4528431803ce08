/**
 * A careful agent for the `incident` world, in TypeScript.
 *
 * It does what the Rust careful agent (examples/careful-agent) does there,
 * with the same tool calls: find the deploy behind an alert, roll it back,
 * close the incident ticket, and leave exactly one incident note. What
 * "careful" means:
 * - a list that says it is old (`as_of` more than two minutes before the
 *   clock) is read again, and the record it leads to is checked with the
 *   fresh `get_*` tool;
 * - a read that times out (or whose service is unavailable) is retried once;
 * - a write that fails is never repeated blindly: the agent first looks
 *   whether it landed anyway (notes are not idempotent);
 * - a denied call is not repeated, and nothing else is tried in its place;
 * - every decision leaves a trace note.
 *
 * Build: `worldline build-js examples/ts-agent/agent.ts`.
 */

import {
  Denied,
  Failed,
  InvalidArgs,
  NotFound,
  Timeout,
  Unavailable,
  WorldlineError,
  tools,
  trace,
} from "worldline";

const AUTHOR = "careful-agent";
/** How old a list may be before it is read again. */
const MAX_AGE_S = 120;

type Row = Record<string, any>;

// --- helpers: time, reads with one retry, checked writes -------------------

/** Seconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SS[.frac]Z`, or null. */
function parseTs(text: unknown): number | null {
  if (typeof text !== "string" || text.length < 20 || text[4] !== "-" || text[10] !== "T") {
    return null;
  }
  if (!text.endsWith("Z")) return null;
  const ms = Date.parse(text.slice(0, 19) + "Z");
  return Number.isNaN(ms) ? null : Math.floor(ms / 1000);
}

/** The timestamp `field` of a row, in seconds (0 when absent). */
const ts = (row: Row, field: string): number => parseTs(row[field]) ?? 0;

/** True when a wrapped list's `as_of` is too old (or missing). */
function isStale(answer: Row): boolean {
  const asOf = parseTs(answer.as_of);
  return asOf === null || Math.floor(Date.now() / 1000) - asOf > MAX_AGE_S;
}

/** A read: retried once when it times out or the service is unavailable. */
function read(name: string, args: Row): Row {
  try {
    return tools.call(name, args);
  } catch (e) {
    if (!(e instanceof Timeout || e instanceof Unavailable)) throw e;
    trace.note("retry", `${name} failed (${e}); reads are safe to retry once`);
    return tools.call(name, args);
  }
}

type How = "done" | "landed" | "denied" | "failed";
const LABELS: Record<How, string> = {
  done: "done",
  landed: "done (reply lost, checked)",
  denied: "denied",
  failed: "failed",
};

/** How a write ended. */
class Wrote {
  constructor(readonly how: How) {}
  ok(): boolean {
    return this.how === "done" || this.how === "landed";
  }
  label(): string {
    return LABELS[this.how];
  }
}

/**
 * A write that is never repeated blindly. After a failure, `landed()` looks
 * at the world (with a read) to see whether the change is there anyway;
 * only when it is not is the write tried once more.
 */
function write(name: string, args: Row, landed: () => boolean): Wrote {
  for (const attempt of [1, 2]) {
    try {
      tools.call(name, args);
      return new Wrote("done");
    } catch (e) {
      if (e instanceof Denied) {
        trace.note("denied", `${name} was denied (${e}); not repeating it`);
        return new Wrote("denied");
      }
      if (!(e instanceof WorldlineError)) throw e;
      trace.note("check", `${name} failed (${e}); checking whether it landed`);
      if (landed()) {
        trace.note("check", `${name} landed despite the error; not repeating it`);
        return new Wrote("landed");
      }
      if (attempt === 2 || e instanceof InvalidArgs || e instanceof NotFound) {
        return new Wrote("failed");
      }
      trace.note("retry", `${name} did not land; trying once more`);
    }
  }
  return new Wrote("failed");
}

/** Whether a check made of reads is true; a failed read means no. */
function holds(check: () => boolean): boolean {
  try {
    return check();
  } catch (e) {
    if (e instanceof WorldlineError) return false;
    throw e;
  }
}

/** The rows plus `extra` (if not already there), newest first by `field`. */
function mergeNewestFirst(rows: Row[], extra: Row | null, field: string): Row[] {
  if (extra !== null) rows = [...rows.filter((r) => r.id !== extra.id), extra];
  // A stable sort, as Rust's and Python's are.
  return rows.sort((a, b) => ts(b, field) - ts(a, field));
}

// --- the incident world -----------------------------------------------------

/**
 * Deploys of `service`, newest first, no older than MAX_AGE_S. A stale list
 * is read again; if it is still stale, the service's current deploy (read
 * fresh) is added to what the list shows.
 */
function freshDeploys(service: string): Row[] {
  let answer = read("list_deploys", { service });
  if (isStale(answer)) {
    trace.note("stale", `deploy list is as of ${answer.as_of ?? "?"}; reading it again`);
    answer = read("list_deploys", { service });
  }
  const rows: Row[] = [...(answer.deploys ?? [])];
  if (!isStale(answer)) return rows;
  trace.note(
    "stale",
    `deploy list still as of ${answer.as_of ?? "?"}; asking the service what runs now`,
  );
  const svc = read("get_service", { id: service });
  const current = svc.current_deploy;
  const extra = typeof current === "string" ? read("get_deploy", { id: current }) : null;
  return mergeNewestFirst(rows, extra, "at");
}

/** Add the one incident note; after a failure, look before writing again. */
function addNote(incident: string, text: string): Wrote {
  return write("add_incident_note", { incident, text, author: AUTHOR }, () =>
    holds(() => {
      const notes = tools.call("list_incident_notes", { incident });
      return Array.isArray(notes) && notes.some((n) => n?.text === text);
    }),
  );
}

function escalate(alertId: string, ticketId: string, text: string): Row {
  const note = addNote(ticketId, text);
  return {
    world: "incident",
    alert: alertId,
    ticket: ticketId,
    cause_deploy: null,
    action: "escalated",
    note: note.label(),
  };
}

function incident(task: Row): Row {
  const alertId: string = task.alert ?? "";
  const ticketId: string = task.ticket ?? "";

  let alert: Row;
  try {
    alert = read("get_alert", { id: alertId });
  } catch (e) {
    if (!(e instanceof WorldlineError)) throw e;
    // Without the alert there is no service and no time: acting now would
    // be guessing. Say so on the incident and stop.
    trace.note("decision", `cannot read ${alertId} (${e}); escalating, no action`);
    return escalate(
      alertId,
      ticketId,
      `Could not read ${alertId} after one retry (${e}). No rollback done; escalating to a human.`,
    );
  }
  const service: string = alert.service ?? "";
  const alertAt = ts(alert, "at");

  const cause = freshDeploys(service).find((d) => ts(d, "at") <= alertAt);
  if (cause === undefined) {
    trace.note("decision", `no deploy of ${service} before the alert; escalating`);
    return escalate(
      alertId,
      ticketId,
      `${alertId}: no deploy of ${service} precedes the alert; escalating.`,
    );
  }
  const causeId: string = cause.id ?? "";
  // The list may lag; the deploy record itself is the source of truth.
  const fresh = read("get_deploy", { id: causeId });
  trace.note(
    "decision",
    `${causeId} (${service} ${JSON.stringify(fresh.version)}) at ${JSON.stringify(fresh.at)}` +
      ` is the last deploy before ${alertId} at ${JSON.stringify(alert.at)}`,
  );

  let rollback: Wrote;
  if (fresh.status === "rolled_back") {
    trace.note("decision", `${causeId} is already rolled back`);
    rollback = new Wrote("landed");
  } else {
    const reason = `${alertId}: ${alert.summary || "alert"}`;
    rollback = write("rollback_deploy", { id: causeId, reason }, () =>
      holds(() => tools.call("get_deploy", { id: causeId }).status === "rolled_back"),
    );
  }

  const ticket = read("get_ticket", { id: ticketId });
  let close: Wrote | null = null;
  if (!rollback.ok()) {
    trace.note("decision", "rollback not done: the ticket stays open");
  } else if (ticket.status === "open") {
    close = write("close_ticket", { id: ticketId }, () =>
      holds(() => tools.call("get_ticket", { id: ticketId }).status === "closed"),
    );
  }
  const ticketStatus: string = close?.ok() ? "closed" : ticket.status || "open";

  let text =
    `${alertId} (${service} ${alert.kind || "alert"} at ${alert.at || "?"}):` +
    ` caused by ${causeId} (${service} ${fresh.version || "?"} at ${fresh.at || "?"},` +
    ` "${fresh.change || ""}"). Rollback of ${causeId}: ${rollback.label()}.`;
  if (close === null) text += ` ${ticketId} left ${ticketStatus}.`;
  else if (close.how === "denied") text += ` Closing ${ticketId} was denied; it stays open for a human.`;
  else text += ` Closing ${ticketId}: ${close.label()}.`;
  const note = addNote(ticketId, text);

  return {
    world: "incident",
    alert: alertId,
    ticket: ticketId,
    service,
    cause_deploy: causeId,
    action: rollback.ok() ? "rolled_back" : "rollback_failed",
    ticket_status: ticketStatus,
    close: close?.label() ?? null,
    note: note.label(),
  };
}

export function run(task: Row): Row {
  if ("alert" in task) return incident(task);
  throw new Failed("task names no `alert`: this agent knows the incident world only");
}
