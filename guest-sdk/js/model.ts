/**
 * Model calls: OpenAI chat-completions shaped JSON in and out.
 *
 * `chat` sends a conversation and returns a {@link Response}; `complete`
 * sends any request object and returns the parsed JSON:
 *
 * ```ts
 * import { model, tools } from "worldline";
 * const resp = model.chat([model.system("You are on call."), model.user("T-100?")], {
 *   tools: model.toolDefs(tools.specs()),
 * });
 * for (const c of resp.toolCalls) tools.call(c.name, c.arguments());
 * ```
 *
 * The host records every call in full and answers it with the case's
 * provider (scripted, an OpenAI-compatible endpoint, or a recording). This
 * is how a JavaScript agent reaches a model: `fetch` is denied.
 */

import * as raw from "worldline:agent/model@0.1.0";
import { Failed, InvalidArgs, hostCall } from "./errors";
import { canonical } from "./json";
import type { Spec } from "./tools";

/** A chat message. */
export interface Message {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_call_id?: string;
  tool_calls?: unknown[];
  [field: string]: unknown;
}

/** A model tool definition. */
export interface ToolDef {
  type: "function";
  function: { name: string; description: string; parameters: unknown };
}

export const system = (content: string): Message => ({ role: "system", content });
export const user = (content: string): Message => ({ role: "user", content });
export const assistant = (content: string): Message => ({ role: "assistant", content });

/** The answer to tool call `callId` (non-text content is sent as JSON). */
export function toolResult(callId: string, content: unknown): Message {
  const text = typeof content === "string" ? content : canonical(content);
  return { role: "tool", tool_call_id: callId, content: text };
}

/** The world's tools (`tools.specs()`) as model tool definitions. */
export function toolDefs(specs: Spec[]): ToolDef[] {
  return specs.map((s) => ({
    type: "function",
    function: { name: s.name, description: s.description, parameters: s.paramsSchema },
  }));
}

/** A call the model asks for. */
export class ToolCall {
  constructor(
    readonly id: string,
    readonly name: string,
    /** The arguments as the model wrote them (JSON text). */
    readonly argumentsJson: string,
  ) {}

  /** The arguments parsed (`InvalidArgs` when the model wrote something else). */
  arguments(): Record<string, unknown> {
    const text = this.argumentsJson.trim() || "{}";
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new InvalidArgs(`the model's arguments for ${this.name}: ${(e as Error).message}`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      throw new InvalidArgs(`the model's arguments for ${this.name} are not an object`);
    }
    return parsed as Record<string, unknown>;
  }
}

/** A chat-completions response; `raw` is the whole parsed document. */
export class Response {
  constructor(readonly raw: any) {}

  /** The first choice's message (an empty assistant message if none). */
  get message(): Message {
    const choices = this.raw?.choices ?? [];
    return choices.length ? (choices[0].message ?? {}) : { role: "assistant", content: "" };
  }

  /** The first choice's text. */
  get content(): string | null {
    return (this.message.content as string | null | undefined) ?? null;
  }

  /** The tool calls the first choice asks for. */
  get toolCalls(): ToolCall[] {
    return ((this.message.tool_calls as any[]) ?? []).map(
      (c) => new ToolCall(c?.id ?? "", c?.function?.name ?? "", c?.function?.arguments ?? ""),
    );
  }

  get finishReason(): string | null {
    return this.raw?.choices?.[0]?.finish_reason ?? null;
  }
}

/** Send a conversation (plus `tools`, `temperature`, ...); get a {@link Response}. */
export function chat(messages: Message[], fields: Record<string, unknown> = {}): Response {
  return new Response(complete({ ...fields, messages }));
}

/** Send a chat-completions request object and return the parsed response. */
export function complete(request: Record<string, unknown>): any {
  const text = completeJson(canonical(request));
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Failed(`the model answered with text that is not JSON: ${(e as Error).message}`);
  }
}

/** Send a raw JSON request; get the raw JSON response. */
export function completeJson(requestJson: string): string {
  return hostCall(() => raw.complete(requestJson));
}
