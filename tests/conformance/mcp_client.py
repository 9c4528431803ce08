"""The conformance scenario's calls, made by a real MCP client (the official
`mcp` package) against `worldline mcp`: over stdio it starts the server
itself (`stdio WORLDLINE ARGS...`), over Streamable HTTP it connects to a
URL (`http URL`). No model: the client is the agent."""

import asyncio
import sys

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

STEPS = [
    ("get_alert", {"id": "ALERT-7"}),
    ("list_deploys", {"service": "checkout"}),
    ("list_deploys", {"service": "checkout"}),
    ("rollback_deploy", {"id": "D-42", "reason": "ALERT-7: checkout p99 after D-42"}),
    ("add_incident_note", {"incident": "T-100", "text": "Rolled back D-42.", "author": "conformance"}),
    ("close_ticket", {"id": "T-100"}),
]


async def drive(session):
    await session.initialize()
    await session.list_tools()
    for name, args in STEPS:
        await session.call_tool(name, args)


async def main():
    if sys.argv[1] == "stdio":
        params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as s:
                await drive(s)
    else:
        async with streamable_http_client(sys.argv[2]) as (r, w, *_):
            async with ClientSession(r, w) as s:
                await drive(s)


asyncio.run(main())
