"""A tool-loop agent on the official `openai` Python package, with no
worldline import: the model through `client.chat.completions.create`
(the SDK's own retries and timeouts), the tools over MCP
(`http://world/mcp`) through `httpx2`, the HTTP library the SDK itself
uses. `worldline build-python` makes `httpx2` speak `wasi:http`, gives
`ssl` a stand-in, and links the WASI builds of `jiter` and
`pydantic-core` that `tests/python-wasi-wheels.sh` makes.

Build (after `. tests/python-wasi-wheels.sh; ensure_python_wasi_wheels target`):
`worldline build-python examples/python-openai-agent/agent.py
--requirements examples/python-openai-agent/requirements.txt
--wasi-wheels "$PYTHON_WASI_WHEELS"`.
"""

import json

import httpx2
import openai

MCP_URL = "http://world/mcp"
MAX_TURNS = 16
SYSTEM = (
    "You are the on-call engineer. Use the tools to find what caused the alert, fix it with the "
    "smallest safe change, record one incident note, and close the ticket only when the cause is "
    "fixed. Answer with a JSON object when you are done."
)


class Mcp:
    """A JSON-RPC client of the world's MCP endpoint over httpx2."""

    def __init__(self, http):
        self.http = http
        self.next_id = 0

    def rpc(self, method, params):
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        answer = self.http.post(MCP_URL, json=body, headers={"accept": "application/json, text/event-stream"}).json()
        if "error" in answer:
            raise RuntimeError(f"{method}: JSON-RPC error {answer['error']}")
        return answer["result"]

    def notify(self, method):
        r = self.http.post(MCP_URL, json={"jsonrpc": "2.0", "method": method})
        if r.status_code != 202:
            raise RuntimeError(f"{method}: HTTP {r.status_code}")


def warm_up():
    """One chat completion against httpx2's MockTransport, while the module
    loads: the SDK imports much of itself lazily, when first used, and
    componentize-py keeps only the modules imported while the agent's
    module loads (see the guest SDK's README, "Import at the top")."""

    def answer(request):
        return httpx2.Response(200, json={
            "id": "warm", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
            }}],
        })

    client = openai.OpenAI(api_key="unused", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(answer)))
    message = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "{}"}]).choices[0].message
    message.model_dump(exclude_none=True)


warm_up()


def run(task):
    client = openai.OpenAI(api_key="sk-agent-secret", max_retries=2, timeout=60.0)
    mcp = Mcp(httpx2.Client(timeout=60.0))
    mcp.rpc(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "python-openai-agent", "version": "0.1.0"}},
    )
    mcp.notify("notifications/initialized")
    tools = [
        {"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}}
        for t in mcp.rpc("tools/list", {})["tools"]
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
            result = mcp.rpc("tools/call", {"name": call.function.name, "arguments": json.loads(call.function.arguments or "{}")})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result["content"][0]["text"]})
    raise RuntimeError(f"no answer after {MAX_TURNS} model turns")
