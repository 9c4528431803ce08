/**
 * A model-driven agent on worldline's TypeScript guest SDK: the model sees
 * the task and the world's tools, chooses tool calls, the agent runs them
 * through the host and feeds the results back, until the model answers
 * without a tool call. The TypeScript twin of `examples/model-agent` (Rust)
 * and `examples/python-model-agent`.
 *
 * The same build runs against a scripted model (the cases in `cases/model/`)
 * or any OpenAI-compatible server (`--model-set provider=openai
 * --model-set base_url=...`).
 *
 * Build: `worldline build-js examples/ts-model-agent/agent.ts`.
 */

import { Timeout, Unavailable, WorldlineError, model, tools, trace } from "worldline";
import type { Message } from "worldline";

const MAX_TURNS = 16;
const SYSTEM =
  "You are the on-call engineer. Use the tools to find what caused the alert, " +
  "fix it with the smallest safe change, record one incident note, and close the ticket only when " +
  "the cause is fixed. Answer with a JSON object when you are done.";

/** One model call; a provider that timed out or was unavailable gets one more try. */
function ask(messages: Message[], defs: model.ToolDef[]): model.Response {
  const fields = { tools: defs, temperature: 0.0 };
  try {
    return model.chat(messages, fields);
  } catch (e) {
    if (!(e instanceof Timeout || e instanceof Unavailable)) throw e;
    trace.note("model-retry", `${e}`);
    return model.chat(messages, fields);
  }
}

/** A tool's answer as text for the model; a failed call becomes an error object. */
function callTool(call: model.ToolCall): string {
  try {
    return tools.callJson(call.name, JSON.stringify(call.arguments()));
  } catch (e) {
    if (!(e instanceof WorldlineError)) throw e;
    return JSON.stringify({ error: { kind: e.kind, message: e.message } });
  }
}

export function run(task: unknown): Record<string, unknown> {
  const messages: Message[] = [model.system(SYSTEM), model.user(JSON.stringify(task))];
  const defs = model.toolDefs(tools.specs());
  for (let turn = 1; turn <= MAX_TURNS; turn++) {
    const answer = ask(messages, defs);
    messages.push(answer.message);
    const calls = answer.toolCalls;
    if (calls.length === 0) {
      const text = answer.content ?? "";
      let out: unknown = null;
      try {
        out = JSON.parse(text);
      } catch {
        out = null;
      }
      const result: Record<string, unknown> =
        out !== null && typeof out === "object" && !Array.isArray(out)
          ? (out as Record<string, unknown>)
          : { answer: text };
      result.turns = turn;
      return result;
    }
    for (const call of calls) {
      messages.push(model.toolResult(call.id, callTool(call)));
    }
  }
  throw new WorldlineError(`no answer after ${MAX_TURNS} model turns`);
}
