"""A native agent that runs the tool calls its model asked for in the
reverse order (as a concurrent executor may), over MCP, then answers each
by its `tool_call_id`: which result answers which call must not be read
from the order they ran in. With `--end-after-tools` it ends once the
calls are made, without sending their results to its model."""

import json
import os
import sys
import urllib.request

session = None


def post(url, body, headers=None):
    global session
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    h.update(headers or {})
    if session:
        h["mcp-session-id"] = session
    r = urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), h))
    session = r.headers.get("mcp-session-id") or session
    text = r.read().decode()
    if not text:
        return None
    if text.startswith(("event:", "data:")):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    return json.loads(text)


mcp = os.environ["WORLDLINE_MCP_URL"]
chat = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
auth = {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "reverse", "version": "1"}}
post(mcp, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
post(mcp, {"jsonrpc": "2.0", "method": "notifications/initialized"})
messages = [{"role": "user", "content": "go"}]
asked = post(chat, {"model": "m", "messages": messages}, auth)["choices"][0]["message"]
messages.append(asked)
results = {}
for i, call in enumerate(reversed(asked["tool_calls"])):
    args = {"name": call["function"]["name"], "arguments": json.loads(call["function"]["arguments"])}
    r = post(mcp, {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": args})
    results[call["id"]] = r["result"]["content"][0]["text"]
if "--end-after-tools" not in sys.argv:
    for call in asked["tool_calls"]:
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": results[call["id"]]})
    post(chat, {"model": "m", "messages": messages}, auth)
print("{}")
