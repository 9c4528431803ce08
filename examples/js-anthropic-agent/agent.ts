/**
 * The incident agent on Anthropic's official SDK (`@anthropic-ai/sdk`):
 * Messages with tool use, the world's tools through the MCP TypeScript
 * SDK's client over Streamable HTTP at http://world/mcp. No worldline
 * import: the sandbox answers `POST https://api.anthropic.com/v1/messages`
 * with the case's model, translated both ways.
 *
 * The SDK's own retries (429, 529, 5xx, timeouts: `maxRetries`) do the
 * retrying; each retry is its own recorded model call.
 *
 * Task keys besides the case's own: `stream` (`messages.stream`: the
 * answer arrives as Anthropic's server-sent events), `probe_url` (a URL
 * fetched once at the start, whose outcome is noted in the output).
 */
import Anthropic from "@anthropic-ai/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const SYSTEM =
  "You are the on-call engineer. Use the tools to find what caused the alert, fix it with the " +
  "smallest safe change, record one incident note, and close the ticket only when the cause is " +
  "fixed. Answer with a JSON object when you are done.";

export async function run(task: Record<string, unknown>) {
  const probe = typeof task.probe_url === "string" ? await fetchOnce(task.probe_url) : undefined;
  // The key is the agent's own; worldline neither records nor forwards it.
  const anthropic = new Anthropic({ apiKey: "sk-ant-example-key", maxRetries: 3 });
  const mcp = new Client({ name: "js-anthropic-agent", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL("http://world/mcp")));
  const { tools: listed } = await mcp.listTools();
  const tools: Anthropic.Tool[] = listed.map((t) => ({
    name: t.name,
    description: t.description ?? "",
    input_schema: t.inputSchema as Anthropic.Tool.InputSchema,
  }));
  const messages: Anthropic.MessageParam[] = [{ role: "user", content: JSON.stringify(task) }];
  for (let turn = 1; turn <= 16; turn++) {
    const request = { model: "claude-sonnet-4-5", max_tokens: 1024, system: SYSTEM, messages, tools };
    const message = task.stream
      ? await anthropic.messages.stream(request).finalMessage()
      : await anthropic.messages.create(request);
    messages.push({ role: "assistant", content: message.content });
    const uses = message.content.filter((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
    if (uses.length === 0) {
      const text = message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
      return { ...parse(text), turns: turn, ...(probe ? { probe } : {}) };
    }
    const results: Anthropic.ToolResultBlockParam[] = [];
    for (const use of uses) {
      const result = await mcp.callTool({ name: use.name, arguments: use.input as Record<string, unknown> });
      const content = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("");
      results.push({ type: "tool_result", tool_use_id: use.id, content, is_error: result.isError === true });
    }
    messages.push({ role: "user", content: results });
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
