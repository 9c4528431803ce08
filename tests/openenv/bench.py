"""Sessions per second and step latency of an OpenEnv server, driven by
openenv-core's GenericEnvClient: `bench.py URL SESSIONS STEPS CONCURRENCY
STEP_JSON` runs SESSIONS episodes, CONCURRENCY at once, each a reset,
STEPS steps of STEP_JSON and `end`. `bench.py --trivial PORT` serves the
same protocol with no world behind it (every step answered at once), the
baseline. Prints a JSON object of the figures."""

import asyncio
import json
import sys
import time

from openenv.core.generic_client import GenericEnvClient


async def trivial(port):
    from websockets.asyncio.server import serve

    async def session(ws):
        async for raw in ws:
            m = json.loads(raw)
            if m["type"] == "close":
                break
            if m["type"] == "state":
                await ws.send(json.dumps({"type": "state", "data": {"step_count": 0}}))
                continue
            await ws.send(json.dumps({"type": "observation", "data": {"observation": {"tools": []}, "reward": None, "done": False}}))

    async with serve(session, "127.0.0.1", port, max_size=1 << 20):
        print(json.dumps({"addr": f"127.0.0.1:{port}"}), flush=True)
        await asyncio.Future()


async def bench(url, sessions, steps, concurrency, step):
    lat = []
    gate = asyncio.Semaphore(concurrency)

    async def episode():
        async with gate:
            async with GenericEnvClient(base_url=url) as env:
                await env.reset()
                for _ in range(steps):
                    t = time.perf_counter()
                    await env.step(step)
                    lat.append(time.perf_counter() - t)
                await env.step({"type": "end"})

    t0 = time.perf_counter()
    await asyncio.gather(*(episode() for _ in range(sessions)))
    wall = time.perf_counter() - t0
    lat.sort()
    return {
        "sessions": sessions,
        "steps": steps,
        "concurrency": concurrency,
        "wall_s": round(wall, 3),
        "sessions_per_s": round(sessions / wall, 1),
        "step_ms_p50": round(lat[len(lat) // 2] * 1e3, 3),
        "step_ms_p99": round(lat[int(len(lat) * 0.99)] * 1e3, 3),
    }


if sys.argv[1] == "--trivial":
    asyncio.run(trivial(int(sys.argv[2])))
else:
    url, n, k, c, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
    print(json.dumps(asyncio.run(bench(url, n, k, c, step))))
