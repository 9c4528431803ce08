"""Bad input and too many sessions against `worldline serve
--max-sessions 1`, over the WebSocket protocol of OpenEnv's client (with
the `websockets` package openenv-core depends on): `hostile.py URL`.
Prints a JSON object: what each message was answered with."""

import json
import socket
import sys
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

url = sys.argv[1].replace("http://", "ws://") + "/ws"
hostport = url.split("//")[1].split("/")[0]
out = {}


def closed(e):
    """The close frame a closed connection got: [code, reason], or None."""
    return [e.rcvd.code, e.rcvd.reason] if e.rcvd else None


def ending(ws, *sends, reads=1):
    """How `ws` ends once it has sent `sends` and read `reads` replies:
    the close frame it got, "answered", or "still open"."""
    try:
        for message in sends:
            ws.send(message)
        for _ in range(reads):
            ws.recv(timeout=30)
        return "answered"
    except ConnectionClosed as e:
        return closed(e)
    except TimeoutError:
        return "still open"


def handshake(host, origin=None):
    """The status line a WebSocket upgrade naming `host` (and `origin`) gets."""
    name, port = hostport.rsplit(":", 1)
    with socket.create_connection((name, int(port)), timeout=30) as s:
        request = (
            f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n"
        )
        if origin:
            request += f"Origin: {origin}\r\n"
        s.sendall((request + "\r\n").encode())
        return s.recv(1024).split(b"\r\n")[0].decode()

with connect(url) as first:
    def ask(text):
        first.send(text)
        return json.loads(first.recv(timeout=30))

    out["not_json"] = ask("{not json")
    out["unknown_type"] = ask(json.dumps({"type": "dance"}))
    out["number_type"] = ask(json.dumps({"type": 5}))
    out["list_data"] = ask(json.dumps({"type": "reset", "data": [1]}))
    out["typo_key"] = ask(json.dumps({"type": "reset", "data": {"sed": 5}}))
    out["step_first"] = ask(json.dumps({"type": "step", "data": {"type": "list_tools"}}))
    out["unknown_case"] = ask(json.dumps({"type": "reset", "data": {"case": "nope"}}))
    out["bad_action"] = ask(json.dumps({"type": "reset", "data": {}})) and ask(
        json.dumps({"type": "step", "data": {"type": "fly"}})
    )
    # An action's keys are its type's (OpenEnv's actions forbid others):
    # a misspelt `arguments` ran the tool with none, an `end` with a key
    # too many ended the episode. `metadata`, which every OpenEnv action
    # has, is taken.
    out["misspelt_arguments"] = ask(json.dumps({"type": "step", "data": {
        "type": "call_tool", "tool_name": "get_alert", "args": {"id": "ALERT-7"}}}))
    out["null_arguments"] = ask(json.dumps({"type": "step", "data": {
        "type": "call_tool", "tool_name": "get_alert", "arguments": None}}))
    out["number_tool_name"] = ask(json.dumps({"type": "step", "data": {
        "type": "call_tool", "tool_name": 5, "arguments": {}}}))
    out["end_extra"] = ask(json.dumps({"type": "step", "data": {"type": "end", "please": "grade"}}))
    out["with_metadata"] = ask(json.dumps({"type": "step", "data": {"type": "list_tools", "metadata": {}}}))
    # A fork's keys are `run` and `at`, and it keeps the recorded seed.
    out["fork_extra"] = ask(json.dumps({"type": "reset", "data": {"fork_of": {"run": "20260101", "at": 0, "evnt": 5}}}))
    out["fork_seed"] = ask(json.dumps({"type": "reset", "data": {"fork_of": {"run": "20260101", "at": 0}, "seed": 99}}))
    # A seed that is no u64, and a fork of a file rather than a run.
    out["bad_seed"] = ask(json.dumps({"type": "reset", "data": {"seed": -1}}))
    out["text_seed"] = ask(json.dumps({"type": "reset", "data": {"seed": "abc"}}))
    out["wide_seed"] = ask(json.dumps({"type": "reset", "data": {"seed": 2**64}}))
    out["fork_path"] = ask(
        json.dumps({"type": "reset", "data": {"fork_of": {"run": "/etc/passwd", "at": 0}}})
    )
    # A refused reset leaves the open episode going (it ended and graded
    # it, and the client never got its result).
    out["state_after_refused"] = ask(json.dumps({"type": "state"}))
    # A tool the world lacks: the call is recorded, and `error` says so.
    out["unknown_tool"] = ask(
        json.dumps({"type": "step", "data": {"type": "call_tool", "tool_name": "nope", "arguments": {}}})
    )
    # A binary frame is answered, and the connection goes on.
    first.send(b'{"type": "state"}')
    out["binary"] = json.loads(first.recv(timeout=30))
    # Only clients of this machine connect: not a page of another origin,
    # not a request naming another host (a DNS rebinding).
    out["foreign_host"] = handshake("evil.example")
    out["foreign_origin"] = handshake(hostport, "http://evil.example")
    out["local_origin"] = handshake(hostport, "http://localhost:3000")
    # The one session is held: a second connection is refused, and then
    # closed with a frame saying so; a client that speaks first (as
    # OpenEnv's EnvClient does: its `reset` is sent before it reads) is
    # told the same by the frame, whichever comes first.
    with connect(url) as second:
        out["second"] = json.loads(second.recv(timeout=30))
        out["second_closed"] = ending(second)
    with connect(url) as eager:
        out["eager_closed"] = ending(eager, json.dumps({"type": "reset", "data": {}}), reads=2)
    # A message past the cap closes the connection, saying why.
    out["oversize"] = ending(first, "x" * (2 << 20))
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
# `close` is answered with a close frame.
with connect(url) as closing:
    out["close"] = ending(closing, json.dumps({"type": "close"}))
# An OpenEnv HTTP client's POST /reset: 404 saying where the server answers.
name, port = hostport.rsplit(":", 1)
with socket.create_connection((name, int(port)), timeout=30) as s:
    s.sendall(f"POST /reset HTTP/1.1\r\nHost: {hostport}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}".encode())
    reply = b""
    while chunk := s.recv(4096):
        reply += chunk
    out["post_reset"] = reply.decode(errors="replace")
# A client that says nothing is closed after the idle timeout (2 s here),
# its keepalive pings or not (they held it open for good).
with connect(url) as idle:
    out["idle"] = ending(idle)
with connect(url, ping_interval=0.5) as pinging:
    out["idle_pinging"] = ending(pinging)
print(json.dumps(out))
