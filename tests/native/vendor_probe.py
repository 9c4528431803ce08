"""A native agent that asks the vendors' model APIs at their public URLs
through the proxy worldline set (HTTP_PROXY, HTTPS_PROXY): OpenAI's Chat
Completions and Anthropic's Messages over plain http, and OpenAI's over
https (a CONNECT tunnel). Prints what each got as one JSON line."""

import json
import urllib.error
import urllib.request


def post(url, body, headers):
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return {"status": r.status, "body": json.loads(r.read())}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": json.loads(e.read() or b"null")}
    except urllib.error.URLError as e:
        return {"error": str(e.reason)}


chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}
messages = {"model": "claude-sonnet-4-5", "max_tokens": 64,
            "messages": [{"role": "user", "content": "hello"}]}
print(json.dumps({
    "openai": post("http://api.openai.com/v1/chat/completions", chat,
                   {"authorization": "Bearer sk-test"}),
    "anthropic": post("http://api.anthropic.com/v1/messages", messages,
                      {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}),
    "tunnel": post("https://api.openai.com/v1/chat/completions", chat,
                   {"authorization": "Bearer sk-test"}),
}, sort_keys=True))
