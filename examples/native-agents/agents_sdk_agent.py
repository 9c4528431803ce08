"""An agent on the OpenAI Agents SDK (`openai-agents`), outside the sandbox
and with nothing of worldline: an `Agent` run by the SDK's own loop over
Chat Completions, its tools the world's, through the SDK's own
`MCPServerStreamableHttp`. Run it with

    worldline run cases/model/rollback.toml --exec -- python agents_sdk_agent.py

worldline sets OPENAI_BASE_URL and OPENAI_API_KEY to its loopback mediator,
WORLDLINE_MCP_URL to the world's tools over MCP, and
OPENAI_AGENTS_DISABLE_TRACING=1 is set below too (the SDK's trace exporter
posts to api.openai.com, no part of a world). The task comes as JSON on
stdin; the answer is the last line printed."""

import asyncio
import json
import os
import sys

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled  # noqa: E402
from agents.mcp import MCPServerStreamableHttp  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

INSTRUCTIONS = (
    "You are the on-call engineer. Use the tools to find what caused the alert, "
    "fix it with the smallest safe change, record one incident note, and close the ticket. "
    "Answer with a JSON object when you are done."
)


async def main() -> None:
    set_tracing_disabled(True)
    task = json.loads(sys.stdin.read() or os.environ["WORLDLINE_TASK"])
    model = OpenAIChatCompletionsModel(model="gpt-4.1-mini", openai_client=AsyncOpenAI())
    async with MCPServerStreamableHttp(
        params={"url": os.environ["WORLDLINE_MCP_URL"]}, cache_tools_list=True
    ) as world:
        agent = Agent(name="on-call", instructions=INSTRUCTIONS, model=model, mcp_servers=[world])
        result = await Runner.run(agent, json.dumps(task, sort_keys=True), max_turns=20)
    print(result.final_output, flush=True)


asyncio.run(main())
