"""A native agent whose tools are the shop's own REST APIs, reached through
the run's proxy (HTTP_PROXY, which urllib reads by itself), and whose model
is the official `openai` client: the conformance matrix's `proxy` path.
The tool schemas are written here, as a team's agent would have them."""

import json
import os
import sys
import urllib.error
import urllib.request

from openai import OpenAI

# name -> (method, URL template, the arguments sent as the JSON body)
ROUTES = {
    "get_alert": ("GET", "http://alerts.internal/api/alerts/{id}", []),
    "list_deploys": ("GET", "http://deploys.internal/api/deploys?service={service}", []),
    "rollback_deploy": ("POST", "http://deploys.internal/api/deploys/{id}/rollback", ["reason"]),
    "add_incident_note": ("POST", "http://tickets.internal/api/incidents/{incident}/notes", ["text", "author"]),
    "close_ticket": ("POST", "http://tickets.internal/api/tickets/{id}/close", []),
}


def tool(name, params):
    props = {p: {"type": "string"} for p in params}
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props}}}


TOOLS = [
    tool("get_alert", ["id"]),
    tool("list_deploys", ["service"]),
    tool("rollback_deploy", ["id", "reason"]),
    tool("add_incident_note", ["incident", "text", "author"]),
    tool("close_ticket", ["id"]),
]


def call(name, args):
    method, template, body_keys = ROUTES[name]
    url = template.format(**args)
    body = json.dumps({k: args[k] for k in body_keys if k in args}).encode() if method == "POST" else None
    req = urllib.request.Request(url, data=body, method=method, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        return e.read().decode()


def main():
    task = json.loads(sys.stdin.read() or os.environ["WORLDLINE_TASK"])
    model = OpenAI()
    messages = [{"role": "user", "content": json.dumps(task, sort_keys=True)}]
    for _ in range(20):
        reply = model.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            print(message.content, flush=True)
            return
        messages.append(message.model_dump(exclude_none=True))
        for c in message.tool_calls:
            result = call(c.function.name, json.loads(c.function.arguments or "{}"))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
    sys.exit("no answer after 20 turns")


main()
