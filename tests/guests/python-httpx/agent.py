"""A generic tool loop written only against httpx (no worldline import):
the model through OpenAI Chat Completions, the tools over MCP at
http://world/mcp, with `httpx.Client()` as any agent makes it. httpx and
its dependencies are bundled from requirements.txt (pinned, pure Python)
by `worldline build-python --requirements`; the build makes httpx's
default transport speak wasi:http.

Task keys besides the case's own: `probe_url` (fetched once first; the
httpx exception it raised, or its status, is noted in the output);
`latency`: instead of the loop, requests to the model with
`httpx.AsyncClient` on the sandbox's asyncio loop: `"abort"` one under
`asyncio.timeout(2)`, `"gather"` two at once, `"read-timeout"` one with a
2 s read timeout; each answers what it got and the virtual seconds it
took."""

import asyncio
import json
import time

import httpx

MCP_URL = "http://world/mcp"


async def slow(mode):
    timeout = 2 if mode == "read-timeout" else 60
    async with httpx.AsyncClient(timeout=timeout) as client:

        async def ask():
            r = await client.post(
                "https://api.openai.com/v1/chat/completions",
                headers={"authorization": "Bearer sk-httpx-agent-secret"},
                json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
            )
            return r.status_code

        t0 = time.monotonic()
        took = lambda: round(time.monotonic() - t0, 3)
        try:
            if mode == "abort":
                async with asyncio.timeout(2):
                    return {"status": await ask(), "elapsed_s": took()}
            if mode == "gather":
                return {"statuses": list(await asyncio.gather(ask(), ask())), "elapsed_s": took()}
            return {"status": await ask(), "elapsed_s": took()}
        except (TimeoutError, httpx.TimeoutException) as e:
            return {"error": type(e).__name__, "elapsed_s": took()}


def run(task):
    if "latency" in task:
        return asyncio.run(slow(task["latency"]))
    out = {}
    with httpx.Client(timeout=60) as client:
        if "probe_url" in task:
            try:
                out["probe"] = {"status": client.get(task["probe_url"]).status_code}
            except httpx.HTTPError as e:
                out["probe"] = {"error": type(e).__name__}
        ids = iter(range(1, 1000))

        def rpc(method, params):
            body = {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}
            r = client.post(MCP_URL, json=body, headers={"accept": "application/json, text/event-stream"})
            return r.json()["result"]

        rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "httpx-agent", "version": "1"}})
        client.post(MCP_URL, json={"jsonrpc": "2.0", "method": "notifications/initialized"}).raise_for_status()
        tools = [
            {"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}}
            for t in rpc("tools/list", {})["tools"]
        ]
        messages = [{"role": "user", "content": json.dumps(task)}]
        for turn in range(1, 17):
            r = client.post(
                "https://api.openai.com/v1/chat/completions",
                headers={"authorization": "Bearer sk-httpx-agent-secret"},
                json={"model": "gpt-4o-mini", "messages": messages, "tools": tools, "temperature": 0},
            )
            r.raise_for_status()
            message = r.json()["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                out.update(json.loads(message["content"]), turns=turn, httpx=httpx.__version__)
                return out
            for call in message["tool_calls"]:
                result = rpc("tools/call", {"name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"])})
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result["content"][0]["text"]})
    raise RuntimeError("no answer after 16 turns")
