"""A native agent that sends the requests `ASKS` lists (JSON: each an API,
`chat`, `responses` or `messages`, and a body) to the run's model APIs,
and prints each status and body as one JSON line."""

import json
import os
import urllib.error
import urllib.request

urls = {
    "chat": (os.environ["OPENAI_BASE_URL"] + "/chat/completions",
             {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}),
    "responses": (os.environ["OPENAI_BASE_URL"] + "/responses",
                  {"authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}),
    "messages": (os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
                 {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}),
}
got = []
for api, body in json.loads(os.environ["ASKS"]):
    url, headers = urls[api]
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            got.append([r.status, r.read().decode()])
    except urllib.error.HTTPError as e:
        got.append([e.code, e.read().decode()])
print(json.dumps(got))
