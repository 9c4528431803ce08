"""A LangGraph agent outside the sandbox: a ReAct graph over a ChatOpenAI
model, whose tools come from the world's MCP server (langchain-mcp-adapters),
and nothing of worldline. Run it with

    worldline run cases/model/rollback.toml --exec -- python langgraph_agent.py

ChatOpenAI reads OPENAI_BASE_URL and OPENAI_API_KEY, which worldline points
at its loopback mediator; WORLDLINE_MCP_URL is the world's tools. The task
comes as JSON on stdin; the answer is the last JSON line printed."""

import asyncio
import json
import os
import sys

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


async def main() -> None:
    task = json.loads(sys.stdin.read() or os.environ["WORLDLINE_TASK"])
    client = MultiServerMCPClient(
        {"world": {"url": os.environ["WORLDLINE_MCP_URL"], "transport": "streamable_http"}}
    )
    # One MCP session for the whole run (the adapters' default opens one
    # per tool call).
    async with client.session("world") as session:
        tools = await load_mcp_tools(session)
        model = ChatOpenAI(model="gpt-4.1-mini", temperature=0)
        graph = create_react_agent(model, tools)
        result = await graph.ainvoke(
            {"messages": [{"role": "user", "content": json.dumps(task, sort_keys=True)}]},
            {"recursion_limit": 40},
        )
    print(result["messages"][-1].content, flush=True)


asyncio.run(main())
