"""Episodes against `worldline serve`, driven by OpenEnv's own client
(`openenv-core`'s GenericEnvClient over its WebSocket protocol), all at
once: `client.py URL PLAN.json`. PLAN is a list of episodes, each
`{"case"?, "seed"?, "fork_of"?, "steps": [[tool, args], ...]}` (`fork_of`:
`{"run", "at"}`, a recorded episode to begin from); each ends with the
`end` action. Prints a JSON list: per episode the tools the reset
observation listed, the state after the reset, each step's observation,
the last result's reward, done and observation, the reset observation's
`fork_of`, and the state after it."""

import asyncio
import json
import sys

from openenv.core.generic_client import GenericEnvClient


async def episode(url, plan):
    async with GenericEnvClient(base_url=url) as env:
        reset = {k: plan[k] for k in ("case", "seed", "fork_of") if k in plan}
        first = await env.reset(**reset)
        at_reset = await env.state()
        steps = []
        for name, args in plan["steps"]:
            r = await env.step({"type": "call_tool", "tool_name": name, "arguments": args})
            steps.append({"observation": r.observation, "done": r.done, "reward": r.reward})
        last = await env.step({"type": "end"})
        state = await env.state()
        return {
            "tools": sorted(t["name"] for t in first.observation["tools"]),
            "task": first.observation["task"],
            "fork_of": first.observation.get("fork_of"),
            "state_at_reset": at_reset,
            "steps": steps,
            "reward": last.reward,
            "done": last.done,
            "last": last.observation,
            "state": state,
        }


async def main():
    url = sys.argv[1]
    with open(sys.argv[2]) as f:
        plans = json.load(f)
    results = await asyncio.gather(*(episode(url, p) for p in plans))
    print(json.dumps(results))


asyncio.run(main())
