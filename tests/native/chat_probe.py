"""A native agent that sends Chat Completions requests OpenAI refuses (no
messages, an empty list, an unknown role, a message without a role) and
one it takes, to the run's server (OPENAI_BASE_URL). Prints each status
and error as one JSON line."""

import json
import os
import urllib.error
import urllib.request

base = os.environ["OPENAI_BASE_URL"]
key = os.environ["OPENAI_API_KEY"]


def post(body):
    req = urllib.request.Request(
        base + "/chat/completions", data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", "authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return {"status": r.status}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "error": json.loads(e.read())["error"]}


hello = {"role": "user", "content": "hello"}
print(json.dumps({
    "no_messages": post({"model": "gpt-4o-mini"}),
    "empty": post({"model": "gpt-4o-mini", "messages": []}),
    "unknown_role": post({"model": "gpt-4o-mini", "messages": [{"role": "bot", "content": "hi"}]}),
    "no_role": post({"model": "gpt-4o-mini", "messages": [hello, {"content": "hi"}]}),
    "good": post({"model": "gpt-4o-mini", "messages": [hello]}),
}, sort_keys=True))
