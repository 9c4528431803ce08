"""An episode held open while `worldline serve` is stopped: `held.py URL
[STEP]` begins one, makes the step STEP names when given (a JSON
`[tool, args]`, its observation awaited), prints `begun`, then waits for
the server to close the connection and prints the close frame it got as
JSON ([code, reason], or null without one)."""

import json
import sys

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

url = sys.argv[1].replace("http://", "ws://") + "/ws"
with connect(url) as ws:
    ws.send(json.dumps({"type": "reset", "data": {}}))
    assert json.loads(ws.recv(timeout=30))["type"] == "observation"
    if len(sys.argv) > 2:
        name, args = json.loads(sys.argv[2])
        action = {"type": "call_tool", "tool_name": name, "arguments": args}
        ws.send(json.dumps({"type": "step", "data": action}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"
    print("begun", flush=True)
    try:
        ws.recv(timeout=60)
        print(json.dumps("answered"))
    except ConnectionClosed as e:
        print(json.dumps([e.rcvd.code, e.rcvd.reason] if e.rcvd else None))
    except TimeoutError:
        print(json.dumps("still open"))
