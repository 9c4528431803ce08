"""An agent on the OpenAI Agents SDK (`openai-agents`) inside the sandbox,
with no worldline import: an `Agent` run by the SDK's own loop
(`Runner.run`) over Chat Completions, its tools the world's through the
SDK's own `MCPServerStreamableHttp` (the official `mcp` client) at
`http://world/mcp`. A handoff, as the SDK does them: a `triage` agent with
the world's tools may hand the incident to the `responder` (the model
calls `transfer_to_responder`; the SDK runs the responder on the same
conversation), and the answer names the agent that gave it
(`examples/python-agents-sdk-agent/handoff.toml`). Tracing is off (`set_tracing_disabled`): the SDK's
trace exporter posts to api.openai.com from a thread, and a world has
neither.

Build (after `. tests/python-wasi-wheels.sh; ensure_python_wasi_wheels target`):
`worldline build-python examples/python-agents-sdk-agent/agent.py
--requirements examples/python-agents-sdk-agent/requirements.txt --no-deps
--wasi-wheels "$PYTHON_WASI_WHEELS"`.
"""

import asyncio
import json

import agents
import httpx
import httpx2
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

MCP_URL = "http://world/mcp"
TRIAGE = (
    "You triage alerts. Hand an incident to the responder unless you can fix it yourself "
    "with the tools; answer with a JSON object when you are done."
)
INSTRUCTIONS = (
    "You are the on-call engineer. Use the tools to find what caused the alert, "
    "fix it with the smallest safe change, record one incident note, and close the ticket. "
    "Answer with a JSON object when you are done."
)

set_tracing_disabled(True)


async def on_call(openai_client, task, mcp_client_factory=None):
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=openai_client)
    params = {"url": MCP_URL}
    if mcp_client_factory is not None:
        params["httpx_client_factory"] = mcp_client_factory
    async with MCPServerStreamableHttp(params=params, cache_tools_list=True) as world:
        responder = Agent(name="responder", instructions=INSTRUCTIONS, model=model, mcp_servers=[world])
        triage = Agent(name="triage", instructions=TRIAGE, model=model, mcp_servers=[world], handoffs=[responder])
        result = await Runner.run(triage, json.dumps(task, sort_keys=True), max_turns=20)
    text = str(result.final_output)
    try:
        out = json.loads(text)
    except ValueError:
        out = None
    if not isinstance(out, dict):
        out = {"answer": text}
    out.update(agents=agents.__version__, agent=result.last_agent.name)
    return out


def warm_up():
    """One run of the agent against MockTransports (a handoff, a tool call,
    an answer), while the module loads:
    the SDKs import much of themselves lazily, when first used, and
    componentize-py keeps only the modules imported while the agent's
    module loads (see the guest SDK's README, "Import at the top")."""
    turns = []

    def model(request):
        turns.append(1)
        tool = {1: "transfer_to_responder", 2: "t"}.get(len(turns))
        message = (
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": f"c{len(turns)}", "type": "function", "function": {"name": tool, "arguments": "{}"}}]}
            if tool else {"role": "assistant", "content": "{}"}
        )
        return httpx2.Response(200, json={
            "id": "warm", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if tool else "stop", "message": message}],
        })

    def mcp_server(request):
        if request.method != "POST":
            return httpx.Response(405 if request.method == "GET" else 200)
        body = json.loads(request.content)
        results = {
            "initialize": {"protocolVersion": body.get("params", {}).get("protocolVersion"), "capabilities": {"tools": {}},
                           "serverInfo": {"name": "warm", "version": "0"}},
            "tools/list": {"tools": [{"name": "t", "description": "", "inputSchema": {"type": "object", "properties": {}}}]},
            "tools/call": {"content": [{"type": "text", "text": "{}"}], "isError": False},
        }
        if "id" not in body:
            return httpx.Response(202)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": results[body["method"]]})

    def mock_mcp_client(headers=None, timeout=None, auth=None):
        return httpx.AsyncClient(transport=httpx.MockTransport(mcp_server), headers=headers, timeout=timeout, auth=auth)

    client = AsyncOpenAI(api_key="unused", max_retries=0, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(model)))
    asyncio.run(on_call(client, {}, mock_mcp_client))


warm_up()


def run(task):
    client = AsyncOpenAI(api_key="sk-agent-secret", max_retries=3, timeout=60.0)
    return asyncio.run(on_call(client, task))
