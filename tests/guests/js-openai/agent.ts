/**
 * A tool loop written only against the official `openai` npm package and
 * `fetch` (no worldline import): the model through Chat Completions, the
 * world's tools through MCP's JSON-RPC at http://world/mcp. The test
 * installs the pinned `openai` next to this file (package.json).
 */
import OpenAI from "openai";

const MCP = "http://world/mcp";
let nextId = 0;

async function rpc(method: string, params: unknown): Promise<any> {
  const r = await fetch(MCP, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++nextId, method, params }),
  });
  const v = await r.json();
  if (v.error) throw new Error(`${method}: ${JSON.stringify(v.error)}`);
  return v.result;
}

export async function run(task: Record<string, unknown>) {
  const client = new OpenAI({ apiKey: "sk-js-agent-secret" });
  await rpc("initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "js-openai", version: "1" } });
  const listed = await rpc("tools/list", {});
  const tools = listed.tools.map((t: any) => ({
    type: "function" as const,
    function: { name: t.name, description: t.description, parameters: t.inputSchema },
  }));
  const messages: any[] = [{ role: "user", content: JSON.stringify(task) }];
  for (let turn = 1; turn <= 16; turn++) {
    const r = await client.chat.completions.create({ model: "gpt-4o-mini", messages, tools, temperature: 0 });
    const message = r.choices[0].message;
    messages.push(message);
    if (!message.tool_calls?.length) {
      return { ...JSON.parse(message.content ?? "{}"), turns: turn };
    }
    for (const call of message.tool_calls) {
      if (call.type !== "function") continue;
      const result = await rpc("tools/call", { name: call.function.name, arguments: JSON.parse(call.function.arguments) });
      messages.push({ role: "tool", tool_call_id: call.id, content: result.content[0].text });
    }
  }
  throw new Error("no answer after 16 turns");
}
