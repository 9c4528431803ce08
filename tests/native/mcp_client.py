"""A real MCP client (the official `mcp` package) working the incident
case through a worldline MCP server: over stdio it starts the server
itself (`stdio WORLDLINE ARGS...`), over Streamable HTTP it connects to a
URL (`http URL`). Prints one JSON line: the tools listed and each call's
result. With `--second URL` it first checks that a second client on the
same run is refused."""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

STEPS = [
    ("get_alert", {"id": "ALERT-7"}),
    ("list_deploys", {"service": "checkout"}),
    ("rollback_deploy", {"id": "D-42", "reason": "ALERT-7: checkout p99 after D-42"}),
    ("add_incident_note", {"incident": "T-100", "text": "Rolled back D-42.", "author": "mcp-client"}),
    ("close_ticket", {"id": "T-100"}),
    ("no_such_tool", {}),
]


async def drive(session, second_url=None):
    await session.initialize()
    second = None
    if second_url:
        try:
            async with streamable_http_client(second_url) as (r, w, *_):
                async with ClientSession(r, w) as other:
                    await other.initialize()
            second = "accepted"
        except BaseException as e:  # the refusal surfaces as an error group
            second = "refused: " + type(e).__name__
    listed = await session.list_tools()
    results = []
    for name, args in STEPS:
        r = await session.call_tool(name, args)
        results.append({"tool": name, "isError": r.isError, "text": r.content[0].text})
    print(json.dumps({"tools": sorted(t.name for t in listed.tools), "results": results, "second": second}), flush=True)


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await drive(s)
    else:
        url = sys.argv[2]
        second = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--second" else None
        async with streamable_http_client(url) as (r, w, *_):
            async with ClientSession(r, w) as s:
                await drive(s, second)


asyncio.run(main())
