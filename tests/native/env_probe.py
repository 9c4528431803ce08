"""A native agent that reports what it was given: the names of its
environment variables, its working directory, the task on stdin, and what
the run's server answers a model request without the run's token (and,
with it, a request to a path nothing serves and one with a 17 MiB body)."""

import json
import os
import sys
import urllib.error
import urllib.request


def status(url, headers, data=b"{}"):
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


base = os.environ["OPENAI_BASE_URL"]
token = os.environ["OPENAI_API_KEY"]
print("starting")
print(json.dumps({
    "env": sorted(os.environ),
    "cwd_is_home": os.getcwd() == os.environ["HOME"],
    "task": json.loads(sys.stdin.read()),
    "without_token": status(base + "/chat/completions", {"content-type": "application/json"}),
    "unserved": status(base + "/files", {"authorization": "Bearer " + token}),
    "huge": status(base + "/chat/completions", {"authorization": "Bearer " + token}, b"x" * (17 << 20)),
}))
