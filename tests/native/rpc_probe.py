"""A native agent that sends the world's MCP endpoint messages JSON-RPC
2.0 refuses (decision 0423, rules 10): a request without `"jsonrpc"`, one
whose `id` is an object, a batch. Each answer goes into a digest that the
last request (a note whose text is the digest) carries, so a replay that
answered one byte otherwise diverges there. Prints each status and body
as one JSON line."""

import hashlib
import json
import os
import urllib.error
import urllib.request

url = os.environ["WORLDLINE_MCP_URL"]
seen = hashlib.sha256()
got = []
session = {}


def post(message):
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    headers.update(session)
    req = urllib.request.Request(url, data=json.dumps(message).encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, body, sid = r.status, r.read(), r.headers.get("mcp-session-id")
    except urllib.error.HTTPError as e:
        status, body, sid = e.code, e.read(), None
    if sid:
        session["mcp-session-id"] = sid
    seen.update(b"%d " % status + body)
    got.append([status, body.decode()])


post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "rpc-probe", "version": "1"}}})
post({"jsonrpc": "2.0", "method": "notifications/initialized"})
post({"id": 2, "method": "tools/list"})
post({"jsonrpc": "2.0", "id": {"n": 3}, "method": "tools/call",
      "params": {"name": "get_alert", "arguments": {"id": "ALERT-7"}}})
post([{"jsonrpc": "2.0", "id": 4, "method": "ping"}])
post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
      "params": {"name": "add_incident_note",
                 "arguments": {"incident": "T-100", "text": "seen " + seen.hexdigest(), "author": "rpc-probe"}}})
print(json.dumps({"got": got}), flush=True)
