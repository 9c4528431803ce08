"""A tool-use agent on the official `anthropic` Python package and the
official `mcp` client, with no worldline import: Messages with tool use
through `client.messages.create` (the SDK's own retries and timeouts), the
world's tools through `mcp`'s `ClientSession` over its streamable HTTP
client (`http://world/mcp`). The sandbox answers
`POST https://api.anthropic.com/v1/messages` with the case's model,
translated both ways.

Build (after `. tests/python-wasi-wheels.sh; ensure_python_wasi_wheels target`):
`worldline build-python examples/python-anthropic-agent/agent.py
--requirements examples/python-anthropic-agent/requirements.txt --no-deps
--wasi-wheels "$PYTHON_WASI_WHEELS"`.
"""

import asyncio
import json

import anthropic
import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

MCP_URL = "http://world/mcp"
MAX_TURNS = 16
SYSTEM = (
    "You are the on-call engineer. Use the tools to find what caused the alert, fix it with the "
    "smallest safe change, record one incident note, and close the ticket only when the cause is "
    "fixed. Answer with a JSON object when you are done."
)


async def tool_use(client, mcp_http, task):
    async with streamable_http_client(MCP_URL, http_client=mcp_http) as (read, write, _):
        async with ClientSession(read, write) as mcp:
            await mcp.initialize()
            tools = [
                {"name": t.name, "description": t.description or "", "input_schema": t.inputSchema}
                for t in (await mcp.list_tools()).tools
            ]
            messages = [{"role": "user", "content": json.dumps(task)}]
            for turn in range(1, MAX_TURNS + 1):
                message = client.messages.create(
                    model="claude-sonnet-4-5", max_tokens=1024, system=SYSTEM, messages=messages, tools=tools
                )
                messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
                uses = [b for b in message.content if b.type == "tool_use"]
                if not uses:
                    text = "".join(b.text for b in message.content if b.type == "text")
                    try:
                        out = json.loads(text)
                    except ValueError:
                        out = None
                    if not isinstance(out, dict):
                        out = {"answer": text}
                    out.update(turns=turn, anthropic=anthropic.__version__)
                    return out
                results = []
                for use in uses:
                    result = await mcp.call_tool(use.name, use.input)
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    results.append({"type": "tool_result", "tool_use_id": use.id, "content": text, "is_error": bool(result.isError)})
                messages.append({"role": "user", "content": results})
    raise RuntimeError(f"no answer after {MAX_TURNS} model turns")


def warm_up():
    """One turn of the loop against MockTransports, while the module loads:
    the SDKs import much of themselves lazily, when first used, and
    componentize-py keeps only the modules imported while the agent's
    module loads (see the guest SDK's README, "Import at the top")."""

    def model(request):
        return httpx2.Response(200, json={
            "id": "warm", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [{"type": "text", "text": "{}"}, {"type": "tool_use", "id": "u", "name": "t", "input": {}}],
        })

    def mcp_server(request):
        if request.method != "POST":
            return httpx.Response(405 if request.method == "GET" else 200)
        body = json.loads(request.content)
        results = {
            "initialize": {"protocolVersion": body.get("params", {}).get("protocolVersion"), "capabilities": {"tools": {}},
                           "serverInfo": {"name": "warm", "version": "0"}},
            "tools/list": {"tools": [{"name": "t", "description": "", "inputSchema": {"type": "object", "properties": {}},
                                      "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}]},
            "tools/call": {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"ok": True}, "isError": False},
        }
        if "id" not in body:
            return httpx.Response(202)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": results[body["method"]]})

    async def one_turn():
        async with streamable_http_client(MCP_URL, http_client=httpx.AsyncClient(transport=httpx.MockTransport(mcp_server))) as (read, write, _):
            async with ClientSession(read, write) as mcp:
                await mcp.initialize()
                await mcp.list_tools()
                await mcp.call_tool("t", {})

    asyncio.run(one_turn())
    client = anthropic.Anthropic(api_key="unused", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(model)))
    message = client.messages.create(model="claude-sonnet-4-5", max_tokens=8, messages=[{"role": "user", "content": "{}"}])
    [b.model_dump(exclude_none=True) for b in message.content]


warm_up()


def run(task):
    # The key is the agent's own; worldline neither records nor forwards it.
    client = anthropic.Anthropic(api_key="sk-ant-agent-secret", max_retries=3, timeout=60.0)
    return asyncio.run(tool_use(client, httpx.AsyncClient(timeout=60.0), task))
