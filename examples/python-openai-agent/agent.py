"""A tool-loop agent on the official `openai` and `mcp` Python packages,
with no worldline import: the model through `client.chat.completions.create`
(the SDK's own retries and timeouts), the tools through `mcp`'s
`ClientSession` over its streamable HTTP client (`http://world/mcp`).
`worldline build-python` makes `httpx` and `httpx2` speak `wasi:http`,
gives `ssl` a stand-in and `asyncio` a loop without sockets, and links the
WASI builds of `jiter`, `pydantic-core` and `rpds-py` that
`tests/python-wasi-wheels.sh` makes.

Build (after `. tests/python-wasi-wheels.sh; ensure_python_wasi_wheels target`):
`worldline build-python examples/python-openai-agent/agent.py
--requirements examples/python-openai-agent/requirements.txt --no-deps
--wasi-wheels "$PYTHON_WASI_WHEELS"`.
"""

import asyncio
import json

import httpx
import httpx2
import openai
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

MCP_URL = "http://world/mcp"
MAX_TURNS = 16
SYSTEM = (
    "You are the on-call engineer. Use the tools to find what caused the alert, fix it with the "
    "smallest safe change, record one incident note, and close the ticket only when the cause is "
    "fixed. Answer with a JSON object when you are done."
)


async def tool_loop(client, mcp_http, task):
    async with streamable_http_client(MCP_URL, http_client=mcp_http) as (read, write, _):
        async with ClientSession(read, write) as mcp:
            await mcp.initialize()
            tools = [
                {"type": "function", "function": {"name": t.name, "description": t.description or "", "parameters": t.inputSchema}}
                for t in (await mcp.list_tools()).tools
            ]
            messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": json.dumps(task)}]
            for turn in range(1, MAX_TURNS + 1):
                completion = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools, temperature=0)
                message = completion.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    try:
                        out = json.loads(message.content or "")
                    except ValueError:
                        out = None
                    if not isinstance(out, dict):
                        out = {"answer": message.content}
                    out.update(turns=turn, openai=openai.__version__)
                    return out
                for call in message.tool_calls:
                    result = await mcp.call_tool(call.function.name, json.loads(call.function.arguments or "{}"))
                    text = result.content[0].text if result.content else ""
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    raise RuntimeError(f"no answer after {MAX_TURNS} model turns")


def warm_up():
    """One turn of the loop against MockTransports, while the module loads:
    the SDKs import much of themselves lazily, when first used, and
    componentize-py keeps only the modules imported while the agent's
    module loads (see the guest SDK's README, "Import at the top")."""

    def model(request):
        return httpx2.Response(200, json={
            "id": "warm", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
            }}],
        })

    tool = {"name": "t", "description": "", "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}

    def mcp_server(request):
        if request.method != "POST":
            return httpx.Response(405 if request.method == "GET" else 200)
        body = json.loads(request.content)
        results = {
            "initialize": {"protocolVersion": body.get("params", {}).get("protocolVersion"), "capabilities": {"tools": {}},
                           "serverInfo": {"name": "warm", "version": "0"}},
            "tools/list": {"tools": [tool]},
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
    client = openai.OpenAI(api_key="unused", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(model)))
    message = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "{}"}]).choices[0].message
    message.model_dump(exclude_none=True)


warm_up()


def run(task):
    client = openai.OpenAI(api_key="sk-agent-secret", max_retries=3, timeout=60.0)
    return asyncio.run(tool_loop(client, httpx.AsyncClient(timeout=60.0), task))
