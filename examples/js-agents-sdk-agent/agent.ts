/**
 * The incident agent on the OpenAI Agents SDK (`@openai/agents`): an
 * `Agent` run by the SDK's own loop over Chat Completions, its tools the
 * world's, listed and called through the MCP TypeScript SDK's client at
 * http://world/mcp. No worldline import.
 *
 * Two things differ from a Node program, both said where they are: the
 * Agents SDK's own `MCPServerStreamableHttp` is "not implemented" in its
 * browser build (the one a sandbox without Node gets), so the MCP tools
 * are handed to the agent as function tools; and tracing is turned off,
 * since its exporter posts to https://api.openai.com/v1/traces, which is
 * no part of the world (it would be denied).
 */
// Why it is built this way (was decision 0275): the Agents SDK's
// `MCPServerStreamableHttp` is "not implemented" in the browser build esbuild
// picks for a sandbox without Node, so the world's tools come through the MCP
// TypeScript SDK's client, handed to the agent as function tools (shimming
// the Node MCP transport was the alternative). Its tracing exporter posts to
// https://api.openai.com/v1/traces, which is no part of a world (denied), so
// tracing is off; answering that endpoint would be a second telemetry path
// beside worldline's own OTLP export. It spends about 4.7 billion
// instructions on a run, most before its first model call (its module
// set-up), past the default 2 billion, and starts with 202 MiB of linear
// memory: it was built with `--minify` and run on
// cases/sdk/rollback-large-sdk.toml, which allows 10 billion instructions of
// fuel and 256 MiB of memory. Since decision 0315 (the source map as one
// string) it builds as written and runs cases/model/rollback.toml; that
// larger case is gone.
import { Agent, run as runAgent, setDefaultOpenAIKey, setOpenAIAPI, setTracingDisabled, tool } from "@openai/agents";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const SYSTEM =
  "You are the on-call engineer. Use the tools to find what caused the alert, fix it with the " +
  "smallest safe change, record one incident note, and close the ticket only when the cause is " +
  "fixed. Answer with a JSON object when you are done.";

export async function run(task: Record<string, unknown>) {
  setTracingDisabled(true);
  setOpenAIAPI("chat_completions");
  // The key is the agent's own; worldline neither records nor forwards it.
  // Without this line the SDK reads OPENAI_API_KEY from process.env, which
  // is the case's `[env] vars`.
  setDefaultOpenAIKey("sk-example-key");
  const mcp = new Client({ name: "js-agents-sdk-agent", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL("http://world/mcp")));
  const { tools: listed } = await mcp.listTools();
  const tools = listed.map((t) =>
    tool({
      name: t.name,
      description: t.description ?? "",
      parameters: t.inputSchema as any,
      strict: false,
      execute: async (args: any) => {
        const result = await mcp.callTool({ name: t.name, arguments: args });
        return (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("");
      },
    }),
  );
  const agent = new Agent({ name: "on-call", instructions: SYSTEM, model: "gpt-4o-mini", tools });
  const result = await runAgent(agent, JSON.stringify(task), { maxTurns: 16 });
  const text = String(result.finalOutput ?? "");
  try {
    return { ...JSON.parse(text) };
  } catch {
    return { answer: text };
  }
}
