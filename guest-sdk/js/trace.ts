/** Notes for the person debugging the run, shown next to the events. */

import * as raw from "worldline:agent/trace@0.1.0";

/** Record why the agent did something (`kind` is a short label such as `plan`). */
export function note(kind: string, text: string): void {
  raw.note(kind, text);
}
