"""A native agent that meets every answer rules 9 changed (decision 0423):
a Chat Completions stream asking two choices, Anthropic Messages answers
of a content filter, of a message whose role is `bogus`, of a streamed
tool call and of a timeout, Responses requests
with an `input` of the wrong type and with an image and a web search
tool, a streamed Responses answer, and a world route whose answer holds
`$now`. Each request carries a digest of every answer before it, so a
replay that answered one byte otherwise diverges at the next request.
Prints each status and body, and the digest, as one JSON line."""

import hashlib
import json
import os
import urllib.error
import urllib.request

openai = os.environ["OPENAI_BASE_URL"]
anthropic = os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages"
seen = hashlib.sha256()
got = []
bearer = {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
claude = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}


def said():
    return "seen " + seen.hexdigest()


def ask(url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, body = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    seen.update(b"%d " % status + body)
    got.append([status, body.decode()])


def user():
    return [{"role": "user", "content": said()}]


ask(openai + "/chat/completions",
    {"model": "m", "messages": user(), "n": 2, "stream": True}, bearer)
ask(anthropic, {"model": "c", "max_tokens": 64, "messages": user()}, claude)
ask(anthropic, {"model": "c", "max_tokens": 64, "messages": user(), "stream": True}, claude)
ask(anthropic, {"model": "c", "max_tokens": 64, "messages": user()}, claude)
ask(openai + "/responses", {"model": "m", "stream": True, "input": said()}, bearer)
ask("http://deploys.internal/api/deploys?service=checkout")
# Refused from rules 9, so last: the model's replies above are the same.
ask(anthropic, {"model": "c", "max_tokens": 64,
                "messages": [{"role": "bogus", "content": said()}]}, claude)
ask(openai + "/responses", {"model": "m", "input": 42}, bearer)
ask(openai + "/responses", {"model": "m", "stream": True, "tools": [{"type": "web_search"}],
                            "input": [{"role": "user", "content": [
                                {"type": "input_text", "text": said()},
                                {"type": "input_image", "image_url": "https://example.com/a.png"}]}]},
    bearer)
ask(openai + "/chat/completions", {"model": "m", "messages": user()}, bearer)
print(json.dumps({"got": got, "seen": seen.hexdigest()}))
