/**
 * A generic tool loop written only against the official SDKs, with no
 * worldline import: the model through the `openai` package (Chat
 * Completions), the world's tools through the MCP TypeScript SDK's client
 * over Streamable HTTP at http://world/mcp. The test installs the pinned
 * packages next to this file (package.json).
 */
import OpenAI from "openai";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export async function run(task: Record<string, unknown>) {
  const openai = new OpenAI({ apiKey: "sk-js-agent-secret" });
  const mcp = new Client({ name: "js-openai", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL("http://world/mcp")));
  const { tools: listed } = await mcp.listTools();
  const tools = listed.map((t) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description ?? "", parameters: t.inputSchema },
  }));
  const messages: any[] = [{ role: "user", content: JSON.stringify(task) }];
  for (let turn = 1; turn <= 16; turn++) {
    const r = await openai.chat.completions.create({ model: "gpt-4o-mini", messages, tools, temperature: 0 });
    const message = r.choices[0].message;
    messages.push(message);
    if (!message.tool_calls?.length) {
      return { ...JSON.parse(message.content ?? "{}"), turns: turn };
    }
    for (const call of message.tool_calls) {
      if (call.type !== "function") continue;
      const result: any = await mcp.callTool({ name: call.function.name, arguments: JSON.parse(call.function.arguments) });
      messages.push({ role: "tool", tool_call_id: call.id, content: result.content[0].text });
    }
  }
  throw new Error("no answer after 16 turns");
}
