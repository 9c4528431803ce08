/** Human approval of an action before the agent takes it. */

import * as raw from "worldline:agent/approval@0.1.0";
import { canonical } from "./json";

/** The approver's decision. */
export type Decision = { approved: true } | { approved: false; reason: string };

/** Ask for approval of an action of `kind` (e.g. `refund`) with `details`. */
export function request(kind: string, details: Record<string, unknown> = {}): Decision {
  const decision = raw.request(kind, canonical(details));
  switch (decision.tag) {
    case "approved":
      return { approved: true };
    case "denied":
      return { approved: false, reason: decision.val };
  }
}
