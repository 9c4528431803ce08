"""Bad input and too many sessions against `worldline serve
--max-sessions 1`, over the WebSocket protocol of OpenEnv's client (with
the `websockets` package openenv-core depends on): `hostile.py URL`.
Prints a JSON object: what each message was answered with."""

import json
import sys
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

url = sys.argv[1].replace("http://", "ws://") + "/ws"
out = {}
with connect(url) as first:
    def ask(text):
        first.send(text)
        return json.loads(first.recv(timeout=30))

    out["not_json"] = ask("{not json")
    out["unknown_type"] = ask(json.dumps({"type": "dance"}))
    out["step_first"] = ask(json.dumps({"type": "step", "data": {"type": "list_tools"}}))
    out["unknown_case"] = ask(json.dumps({"type": "reset", "data": {"case": "nope"}}))
    out["bad_action"] = ask(json.dumps({"type": "reset", "data": {}})) and ask(
        json.dumps({"type": "step", "data": {"type": "fly"}})
    )
    # The one session is held: a second connection is refused.
    with connect(url) as second:
        out["second"] = json.loads(second.recv(timeout=30))
    # A message past the cap closes the connection.
    try:
        first.send("x" * (2 << 20))
        first.recv(timeout=30)
        out["oversize"] = "answered"
    except Exception as e:
        out["oversize"] = type(e).__name__
# The slot is free again once the first connection's episode is ended
# and graded (shortly after it closed).
for _ in range(100):
    try:
        with connect(url) as third:
            third.send(json.dumps({"type": "state"}))
            out["third"] = json.loads(third.recv(timeout=30))
    except ConnectionClosed:
        out["third"] = "refused"
    if out["third"] != "refused" and out["third"].get("data", {}).get("code") != "CAPACITY_REACHED":
        break
    time.sleep(0.1)
# A client that says nothing is closed after the idle timeout (2 s here).
with connect(url) as idle:
    try:
        idle.recv(timeout=20)
        out["idle"] = "answered"
    except ConnectionClosed:
        out["idle"] = "closed"
    except TimeoutError:
        out["idle"] = "still open"
print(json.dumps(out))
