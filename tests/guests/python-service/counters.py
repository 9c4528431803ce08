"""Test world service in Python for tests/worlds/counters (the Rust
counter-service's tools): `bump` does one get and one update, `panic`
raises (a TypeError of its own given `times`), `spin` never ends, `clock` answers the time and two random
numbers, `refuse` answers a typed error after a write, `log` writes a file
and inserts a row, `keys` lists the counters' ids as `Table.query()`
orders them, `bye` calls `sys.exit` or raises `KeyboardInterrupt`."""

import sys

import worldline_service as ws

COUNTERS = ws.Table("counters")
EVENTS = ws.Table("events")


@ws.tool
def bump(id):
    c = COUNTERS.require(id)
    c = COUNTERS.update(id, n=c["n"] + 1)
    return {"id": c["id"], "n": c["n"]}


@ws.tool
def panic(times=None):
    if times is not None:
        # A TypeError of the tool's own (a number added to text).
        return "raised " + times
    raise RuntimeError("the ledger is corrupt")


@ws.tool
def nan():
    return {"v": float("nan")}


@ws.tool
def spin():
    i = 0
    while True:
        i += 1


@ws.tool
def clock():
    return {"now": ws.now(), "random": [ws.random(), ws.random()]}


@ws.tool
def refuse(id):
    COUNTERS.update(id, n=-1)
    raise ws.Conflict("counter is locked")


@ws.tool
def log():
    ws.files.write("log.txt", "bumped at " + ws.now())
    key = EVENTS.insert({"what": "log"})
    return {"event": key, "files": ws.files.list("")}


@ws.tool
def keys():
    return [c["id"] for c in COUNTERS.query()]


@ws.tool
def bye(kind):
    if kind == "exit":
        sys.exit(3)
    raise KeyboardInterrupt()
