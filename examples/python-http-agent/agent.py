"""A tool-loop agent in plain Python: no worldline import, the standard
library only. It asks its model through OpenAI Chat Completions
(`POST https://api.openai.com/v1/chat/completions`) and reaches its tools
over MCP (`http://world/mcp`), both with `urllib.request`, as an agent
written against the vendors' HTTP APIs does; `worldline build-python`
makes `urllib` and `http.client` speak `wasi:http`, and the world answers.

It retries a 429 or 5xx after the `retry-after` the server sends, and a
request that times out, like the official SDKs (two retries).

Task keys besides the case's own: `probe_url` (a URL fetched once at the
start, its outcome noted in the output), `stream` (ask for server-sent
events and put the completion together from its chunks), `api =
"anthropic"` (ask through Anthropic Messages, `POST
https://api.anthropic.com/v1/messages`, instead) and `api = "responses"`
(through OpenAI Responses, `POST https://api.openai.com/v1/responses`).

Build: `worldline build-python examples/python-http-agent/agent.py`.
"""

import json
import time
import urllib.error
import urllib.request

MODEL_URL = "https://api.openai.com/v1/chat/completions"
MESSAGES_URL = "https://api.anthropic.com/v1/messages"
RESPONSES_URL = "https://api.openai.com/v1/responses"
MCP_URL = "http://world/mcp"
MAX_TURNS = 16
ATTEMPTS = 3
TIMEOUT_S = 60
SYSTEM = (
    "You are the on-call engineer. Use the tools to find what caused the alert, fix it with the "
    "smallest safe change, record one incident note, and close the ticket only when the cause is "
    "fixed. Answer with a JSON object when you are done."
)


class Retryable(Exception):
    """A model request worth sending again."""


def post(url, body, headers):
    """POST a JSON body; the status, headers and body of the answer (an
    HTTP error status is an answer too)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def ask(url, key, body):
    """One model request, retried on 429, 5xx and timeouts: the answer and
    how many retries it took."""
    last = ""
    for attempt in range(ATTEMPTS):
        try:
            status, headers, data = post(url, body, key)
        except TimeoutError as e:
            last = f"timeout: {e}"
            continue
        if status == 200 and headers.get("content-type") == "text/event-stream":
            return assemble(data.decode()), attempt
        if status == 200:
            return json.loads(data), attempt
        if status == 429 or status >= 500:
            last = f"HTTP {status}: {data.decode(errors='replace')}"
            time.sleep(int(headers.get("retry-after") or 1))
            continue
        raise RuntimeError(f"HTTP {status}: {data.decode(errors='replace')}")
    raise RuntimeError(f"the model failed {ATTEMPTS} times; last: {last}")


def assemble(text):
    """A completion put together from `chat.completion.chunk` events."""
    content, calls, finish, usage, done = "", [], None, None, False
    for event in filter(None, text.split("\n\n")):
        if not event.startswith("data: "):
            raise RuntimeError(f"not an SSE data line: {event}")
        data = event[len("data: ") :]
        if data == "[DONE]":
            done = True
            break
        chunk = json.loads(data)
        usage = chunk.get("usage") or usage
        if not chunk.get("choices"):
            continue
        choice = chunk["choices"][0]
        delta = choice.get("delta", {})
        content += delta.get("content") or ""
        for call in delta.get("tool_calls") or []:
            i = call.get("index", 0)
            while len(calls) <= i:
                calls.append({"type": "function", "function": {"name": "", "arguments": ""}})
            if "id" in call:
                calls[i]["id"] = call["id"]
            for key in ("name", "arguments"):
                calls[i]["function"][key] += (call.get("function") or {}).get(key) or ""
        finish = choice.get("finish_reason") or finish
    if not done:
        raise RuntimeError("the stream ended without [DONE]")
    message = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}


class Mcp:
    """A JSON-RPC client of the world's MCP endpoint."""

    def __init__(self):
        self.next_id = 0

    def rpc(self, method, params):
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        status, _, data = post(MCP_URL, body, {"accept": "application/json, text/event-stream"})
        answer = json.loads(data)
        if "error" in answer:
            raise RuntimeError(f"{method}: JSON-RPC error {answer['error']} (HTTP {status})")
        return answer["result"]

    def notify(self, method):
        status, _, _ = post(MCP_URL, {"jsonrpc": "2.0", "method": method}, {})
        if status != 202:
            raise RuntimeError(f"{method}: HTTP {status}")

    def call(self, name, arguments):
        """A tool's answer as text (an error is text too: `isError` carries it)."""
        result = self.rpc("tools/call", {"name": name, "arguments": arguments})
        return result["content"][0]["text"], result.get("isError", False)


def answer(text, turn, retries, probe):
    try:
        out = json.loads(text)
    except ValueError:
        out = None
    if not isinstance(out, dict):
        out = {"answer": text}
    out.update(turns=turn, model_retries=retries)
    if probe is not None:
        out["probe"] = probe
    return out


def chat_loop(task, mcp, listed, probe):
    tools = [
        {"type": "function", "function": {"name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}}
        for t in listed["tools"]
    ]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": json.dumps(task)}]
    retries = 0
    for turn in range(1, MAX_TURNS + 1):
        request = {"model": "gpt-4o-mini", "messages": messages, "tools": tools, "temperature": 0}
        if task.get("stream"):
            request.update(stream=True, stream_options={"include_usage": True})
        completion, tries = ask(MODEL_URL, {"authorization": "Bearer sk-agent-secret"}, request)
        retries += tries
        message = completion["choices"][0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            return answer(message.get("content") or "", turn, retries, probe)
        for call in message["tool_calls"]:
            args = json.loads(call["function"]["arguments"] or "{}")
            text, _ = mcp.call(call["function"]["name"], args)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
    raise RuntimeError(f"no answer after {MAX_TURNS} model turns")


def messages_loop(task, mcp, listed, probe):
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]} for t in listed["tools"]]
    messages = [{"role": "user", "content": json.dumps(task)}]
    retries = 0
    for turn in range(1, MAX_TURNS + 1):
        request = {
            "model": "claude-sonnet-4-5", "max_tokens": 1024, "system": SYSTEM,
            "messages": messages, "tools": tools, "temperature": 0,
        }
        message, tries = ask(MESSAGES_URL, {"x-api-key": "sk-ant-agent-secret"}, request)
        retries += tries
        content = message["content"]
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in content if b["type"] == "tool_use"]
        if not uses:
            out = answer("".join(b.get("text", "") for b in content), turn, retries, probe)
            out["stop_reason"] = message["stop_reason"]
            return out
        results = []
        for use in uses:
            text, is_error = mcp.call(use["name"], use["input"])
            results.append({"type": "tool_result", "tool_use_id": use["id"], "content": text, "is_error": is_error})
        messages.append({"role": "user", "content": results})
    raise RuntimeError(f"no answer after {MAX_TURNS} model turns")


def responses_loop(task, mcp, listed, probe):
    tools = [
        {"type": "function", "name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}
        for t in listed["tools"]
    ]
    items = [{"role": "user", "content": json.dumps(task)}]
    retries = 0
    for turn in range(1, MAX_TURNS + 1):
        request = {
            "model": "gpt-4.1-mini", "instructions": SYSTEM, "input": items, "tools": tools,
            "temperature": 0, "store": False,
        }
        response, tries = ask(RESPONSES_URL, {"authorization": "Bearer sk-agent-secret"}, request)
        retries += tries
        calls = [i for i in response["output"] if i["type"] == "function_call"]
        if not calls:
            text = "".join(
                c.get("text", "") for i in response["output"] if i["type"] == "message" for c in i["content"]
            )
            out = answer(text, turn, retries, probe)
            out["response_status"] = response["status"]
            return out
        for c in calls:
            items.append({"type": "function_call", "call_id": c["call_id"], "name": c["name"], "arguments": c["arguments"]})
            text, _ = mcp.call(c["name"], json.loads(c["arguments"] or "{}"))
            items.append({"type": "function_call_output", "call_id": c["call_id"], "output": text})
    raise RuntimeError(f"no answer after {MAX_TURNS} model turns")


def probe_once(url):
    """Fetch `url` once: its status, or the network error the agent saw."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
            return {"status": r.status}
    except urllib.error.HTTPError as e:
        return {"status": e.code}
    except OSError as e:
        return {"error": f"{type(e).__name__}: {getattr(e, 'reason', e)}"}


def run(task):
    probe = probe_once(task["probe_url"]) if "probe_url" in task else None
    mcp = Mcp()
    mcp.rpc(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "python-http-agent", "version": "0.1.0"}},
    )
    mcp.notify("notifications/initialized")
    listed = mcp.rpc("tools/list", {})
    loop = {"anthropic": messages_loop, "responses": responses_loop}.get(task.get("api"), chat_loop)
    return loop(task, mcp, listed, probe)
