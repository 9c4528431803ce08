"""An agent outside the sandbox, on the official `openai` and `mcp`
packages and nothing of worldline: a plain tool loop. Run it with

    worldline run cases/model/rollback.toml --exec -- python openai_mcp_agent.py

worldline sets OPENAI_BASE_URL and OPENAI_API_KEY (which the OpenAI client
reads by itself) to its loopback mediator, WORLDLINE_MCP_URL to the world's
tools over MCP, and hands the task as JSON on stdin. The answer is the last
JSON line printed."""

import asyncio
import json
import os
import sys

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openai import AsyncOpenAI

MAX_TURNS = 20


async def main() -> None:
    task = json.loads(sys.stdin.read() or os.environ["WORLDLINE_TASK"])
    model = AsyncOpenAI()
    async with streamable_http_client(os.environ["WORLDLINE_MCP_URL"]) as (read, write, *_):
        async with ClientSession(read, write) as mcp:
            await mcp.initialize()
            listed = await mcp.list_tools()
            tools = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description or "",
                        "parameters": t.inputSchema,
                    },
                }
                for t in listed.tools
            ]
            messages = [{"role": "user", "content": json.dumps(task, sort_keys=True)}]
            for _ in range(MAX_TURNS):
                reply = await model.chat.completions.create(
                    model="gpt-4.1-mini", messages=messages, tools=tools
                )
                message = reply.choices[0].message
                if not message.tool_calls:
                    print(message.content, flush=True)
                    return
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    args = json.loads(call.function.arguments or "{}")
                    result = await mcp.call_tool(call.function.name, args)
                    text = result.content[0].text if result.content else ""
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    sys.exit(f"no answer after {MAX_TURNS} model calls")


asyncio.run(main())
