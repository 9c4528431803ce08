"""Validate `worldline export --format atif` output with the pinned `atif`
package's models (Harbor's ATIF v1.8): every line of the file given must be
a valid `Trajectory`. Prints, per document, what the test compares as JSON:
the tool calls' names in step order, how many results answer them, the
model steps, the reward and verdict, the group (if any), the names of
the agent's tool definitions, each step's event and the approvals'
decisions."""

import json
import sys

from atif import Trajectory

out = []
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        t = Trajectory.model_validate_json(line)
        calls = [c.function_name for s in t.steps for c in (s.tool_calls or [])]
        answered = sum(
            1
            for s in t.steps
            if s.observation
            for r in s.observation.results
            if r.source_call_id is not None
        )
        out.append(
            {
                "schema_version": t.schema_version,
                "tool_calls": calls,
                "results": answered,
                "model_steps": sum(1 for s in t.steps if s.llm_call_count == 1),
                "reward": t.extra["reward"],
                "verdict": t.extra["verdict"],
                "group": t.extra.get("group"),
                "tools": [d["function"]["name"] for d in t.agent.tool_definitions or []],
                "seqs": [(s.extra or {}).get("seq") for s in t.steps],
                "approvals": [
                    s.extra["approval"]["decision"]
                    for s in t.steps
                    if (s.extra or {}).get("approval")
                ],
            }
        )
print(json.dumps(out))
