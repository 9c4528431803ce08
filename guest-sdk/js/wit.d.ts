// Generated from wit/ by the test in host/src/cli/build_js_cmd/types.rs; do not edit.
// Rewrite it after a WIT change: WORLDLINE_BLESS=1 cargo test -p worldline --lib build_js_cmd
// The `worldline:agent` imports as ComponentizeJS binds them: names in camelCase, a WIT
// `result` returned as its `ok` value and thrown as `{ payload: err }`, a `variant` as
// `{ tag, val }`.

declare module "worldline:agent/types@0.1.0" {
  /**
   * Why a host call failed. Agents should branch on the kind, not the text.
   */
  export type ErrorKind =
    /**
     * A permission of the case or world refused the call; nothing changed.
     */
    | "denied"
    /**
     * The named tool, row or file does not exist.
     */
    | "not-found"
    /**
     * The arguments did not match the tool's parameter schema.
     */
    | "invalid-args"
    /**
     * The call took longer than the world allows.
     */
    | "timeout"
    /**
     * The service behind the call is down.
     */
    | "unavailable"
    /**
     * The call conflicts with the current state (for example a duplicate).
     */
    | "conflict"
    /**
     * Any other failure.
     */
    | "failed";
  export interface ToolError {
    kind: ErrorKind;
    message: string;
  }
  export interface ToolSpec {
    name: string;
    description: string;
    /**
     * JSON Schema of the arguments object, as a JSON string.
     */
    paramsSchema: string;
    /**
     * Whether calling the tool can change the world.
     */
    mutates: boolean;
  }
}

declare module "worldline:agent/tools@0.1.0" {
  import type { ToolError, ToolSpec } from "worldline:agent/types@0.1.0";
  /**
   * The tools this agent may see, in the world's declared order.
   */
  export function specs(): Array<ToolSpec>;
  /**
   * Call a tool with a JSON object of arguments; the answer is JSON.
   * @throws `{ payload: ToolError }` when the host answers with an error
   */
  export function call(name: string, argsJson: string): string;
}

declare module "worldline:agent/model@0.1.0" {
  import type { ToolError } from "worldline:agent/types@0.1.0";
  /**
   * @throws `{ payload: ToolError }` when the host answers with an error
   */
  export function complete(requestJson: string): string;
}

declare module "worldline:agent/files@0.1.0" {
  import type { ToolError } from "worldline:agent/types@0.1.0";
  /**
   * @throws `{ payload: ToolError }` when the host answers with an error
   */
  export function read(path: string): Uint8Array;
  /**
   * @throws `{ payload: ToolError }` when the host answers with an error
   */
  export function write(path: string, data: Uint8Array): void;
  /**
   * @throws `{ payload: ToolError }` when the host answers with an error
   */
  export function paths(prefix: string): Array<string>;
}

declare module "worldline:agent/trace@0.1.0" {
  export function note(kind: string, text: string): void;
}

declare module "worldline:agent/user@0.1.0" {
  /**
   * The user left the conversation.
   */
  export interface Ended {
    /**
     * Why, in the user's words or the case's (`turn limit`, `silent`, ...).
     */
    reason: string;
    /**
     * Whether the user left satisfied (a case rule or the model's marker).
     */
    satisfied: boolean;
  }
  /**
   * What came back from the user.
   */
  export type Turn =
    /**
     * The user's reply.
     */
    | { tag: "reply"; val: string }
    /**
     * The user ended the conversation; further `say` calls end again.
     */
    | { tag: "ended"; val: Ended };
  export function say(message: string): Turn;
}

declare module "worldline:agent/approval@0.1.0" {
  export type Decision =
    | { tag: "approved" }
    /**
     * Denied, with the approver's reason.
     */
    | { tag: "denied"; val: string };
  /**
   * Ask for approval of an action of `kind` (e.g. `refund`) with details
   * as a JSON object.
   */
  export function request(kind: string, detailsJson: string): Decision;
}
