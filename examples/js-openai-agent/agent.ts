/**
 * The incident agent written the way people write agents today: the model
 * through the official `openai` package (Chat Completions), the world's
 * tools through the MCP TypeScript SDK's client over Streamable HTTP at
 * http://world/mcp. No worldline import: the sandbox answers both APIs
 * itself, so this file runs unchanged against the real services.
 *
 * The SDK's own retries (429, 5xx, timeouts: `maxRetries`) do the
 * retrying; each retry is its own recorded model call.
 *
 * Task keys besides the case's own: `stream` (ask for server-sent events
 * and read the completion from the SDK's stream), `probe_url` (a URL
 * fetched once at the start, whose outcome is noted in the output),
 * `base_url` (point the SDK at another server, e.g. a local vLLM or
 * Ollama; the case declares the same URL as `[model] base_url`),
 * `requests` (`[{method, url, body?}]`: no model; the agent calls these
 * URLs in order with `fetch`, e.g. the world's own REST routes, and
 * answers with each status and body).
 */
import OpenAI from "openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const SYSTEM =
  "You are the on-call engineer. Use the tools to find what caused the alert, fix it with the " +
  "smallest safe change, record one incident note, and close the ticket only when the cause is " +
  "fixed. Answer with a JSON object when you are done.";

export async function run(task: Record<string, unknown>) {
  if (Array.isArray(task.requests)) {
    return { responses: await sendAll(task.requests) };
  }
  const probe = typeof task.probe_url === "string" ? await fetchOnce(task.probe_url) : undefined;
  // The key is the agent's own; worldline neither records nor forwards it.
  const baseURL = typeof task.base_url === "string" ? task.base_url : undefined;
  const openai = new OpenAI({ apiKey: "sk-example-key", baseURL, maxRetries: 3 });
  const mcp = new Client({ name: "js-openai-agent", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL("http://world/mcp")));
  const { tools: listed } = await mcp.listTools();
  const tools = listed.map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description ?? "", parameters: t.inputSchema },
  }));
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: JSON.stringify(task) },
  ];
  for (let turn = 1; turn <= 16; turn++) {
    const request = { model: "gpt-4o-mini", messages, tools, temperature: 0 };
    const message = task.stream
      ? await openai.chat.completions.stream(request).finalMessage()
      : (await openai.chat.completions.create(request)).choices[0].message;
    messages.push(message);
    if (!message.tool_calls?.length) {
      return { ...parse(message.content ?? ""), turns: turn, ...(probe ? { probe } : {}) };
    }
    for (const call of message.tool_calls) {
      if (call.type !== "function") continue;
      const result = await mcp.callTool({
        name: call.function.name,
        arguments: JSON.parse(call.function.arguments),
      });
      const content = (result.content as { type: string; text?: string }[])
        .map((c) => c.text ?? "")
        .join("");
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
  throw new Error("no answer after 16 model turns");
}

/** The model's final text: its JSON object, or the text as `answer`. */
function parse(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text);
  } catch {
    return { answer: text };
  }
}

async function fetchOnce(url: string) {
  try {
    return { status: (await fetch(url)).status };
  } catch (e) {
    return { error: String(e) };
  }
}

/** Each request's status and body (JSON when it is), or the error `fetch` rejected with. */
async function sendAll(requests: { method: string; url: string; body?: unknown }[]) {
  const out = [];
  for (const r of requests) {
    try {
      const response = await fetch(r.url, {
        method: r.method,
        headers: r.body === undefined ? {} : { "content-type": "application/json" },
        body: r.body === undefined ? undefined : JSON.stringify(r.body),
      });
      const text = await response.text();
      out.push({ status: response.status, body: parse(text) });
    } catch (e) {
      out.push({ error: (e as Error).message });
    }
  }
  return out;
}
