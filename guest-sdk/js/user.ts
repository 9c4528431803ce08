/**
 * The user the agent talks to (the case's scripted or model-played user).
 * `say` sends the agent's message and waits (in virtual time) for the
 * user's next one.
 */

import * as raw from "worldline:agent/user@0.1.0";

/** What came back from the user. */
export type Turn =
  | { kind: "reply"; text: string }
  /** The user left; further `say` calls end again. */
  | { kind: "ended"; reason: string; satisfied: boolean };

/** Send `message` to the user; get their reply, or that they left. */
export function say(message: string): Turn {
  const turn = raw.say(message);
  switch (turn.tag) {
    case "reply":
      return { kind: "reply", text: turn.val };
    case "ended":
      return { kind: "ended", reason: turn.val.reason, satisfied: turn.val.satisfied };
  }
}
