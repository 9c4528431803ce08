/**
 * The incident agent of examples/js-openai-agent, written with the Vercel
 * AI SDK instead: `generateText` (or `streamText`) with `@ai-sdk/openai`'s
 * Chat Completions model, the world's tools through the MCP TypeScript
 * SDK's client over Streamable HTTP at http://world/mcp, handed to the AI
 * SDK as its tools. No worldline import.
 *
 * The AI SDK runs the tool loop itself (`stopWhen: stepCountIs(16)`) and
 * retries a failed model call (`maxRetries`); each retry is its own
 * recorded model call.
 *
 * Task keys besides the case's own: `stream` (`streamText`: the model
 * answers as server-sent events), `api = "responses"` (`@ai-sdk/openai`'s
 * Responses model, `POST https://api.openai.com/v1/responses`, instead of
 * Chat Completions), `probe_url` (a URL fetched once at the start, whose
 * outcome is noted in the output).
 */
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ToolSet } from "ai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const SYSTEM =
  "You are the on-call engineer. Use the tools to find what caused the alert, fix it with the " +
  "smallest safe change, record one incident note, and close the ticket only when the cause is " +
  "fixed. Answer with a JSON object when you are done.";

export async function run(task: Record<string, unknown>) {
  const probe = typeof task.probe_url === "string" ? await fetchOnce(task.probe_url) : undefined;
  // The key is the agent's own; worldline neither records nor forwards it.
  const openai = createOpenAI({ apiKey: "sk-example-key" });
  const mcp = new Client({ name: "js-vercel-agent", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL("http://world/mcp")));
  const { tools: listed } = await mcp.listTools();
  const tools: ToolSet = {};
  for (const t of listed) {
    tools[t.name] = tool({
      description: t.description ?? "",
      inputSchema: jsonSchema(t.inputSchema as any),
      execute: async (args: any) => {
        const result = await mcp.callTool({ name: t.name, arguments: args });
        return (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("");
      },
    });
  }
  const request = {
    model: task.api === "responses" ? openai.responses("gpt-4o-mini") : openai.chat("gpt-4o-mini"),
    system: SYSTEM,
    prompt: JSON.stringify(task),
    tools,
    temperature: 0,
    maxRetries: 3,
    stopWhen: stepCountIs(16),
  };
  let text: string;
  let steps: number;
  if (task.stream) {
    const result = streamText(request);
    text = await result.text;
    steps = (await result.steps).length;
  } else {
    const result = await generateText(request);
    text = result.text;
    steps = result.steps.length;
  }
  return { ...parse(text), turns: steps, ...(probe ? { probe } : {}) };
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
