"""The tau2 side of the agreement test (host/tests/bench_tau2.rs): for
every task of a tau2 domain, the oracle (its gold actions, then its
communicate_info said to the user) and perturbed trajectories (the last
call with a wrong argument, the last call skipped, the last call made
twice, nothing at all), each played against tau2's own environment and
graded by tau2's own evaluator (`evaluate_simulation`, all reward types
of the task's basis). Writes, for each trajectory, a copy of the imported
case whose task is that trajectory for the `caller` test guest, and
prints `{case name: tau2 reward}` as JSON.

Usage: python tau2_agree.py DOMAIN IMPORTED_DIR OUT_DIR [STRIDE]
(STRIDE N: every Nth task only, from the first; default 1, all of them)"""

import json
import multiprocessing
import os
import re
import sys
from pathlib import Path

import logging

logging.disable(logging.CRITICAL)
from loguru import logger  # noqa: E402

logger.remove()
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage  # noqa: E402
from tau2.data_model.simulation import SimulationRun, TerminationReason  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.environment.db import DB  # noqa: E402
from tau2.registry import registry  # noqa: E402

# Each environment tau2 makes reads and parses db.json again; keep its
# text and validate a fresh copy from it each time (what a load gives).
_text = {}


def _cached_load(cls, path):
    if str(path) not in _text:
        _text[str(path)] = Path(path).read_text()
    return cls.model_validate(json.loads(_text[str(path)]))


DB.load = classmethod(_cached_load)

domain, imported, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
stride = int(sys.argv[4]) if len(sys.argv) > 4 else 1
out.mkdir(parents=True, exist_ok=True)


def wrong(args):
    """The arguments with one value changed: the last string gets `X`
    appended, else the last number is one more."""
    args = json.loads(json.dumps(args))
    for k in sorted(args, reverse=True):
        v = args[k]
        if isinstance(v, str):
            args[k] = v + "X"
            return args
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            args[k] = v + 1
            return args
    return None


def variants(task):
    gold = [(a.name, dict(a.arguments)) for a in (task.evaluation_criteria.actions or [])
            if a.requestor == "assistant"]
    said = list(task.evaluation_criteria.communicate_info or [])
    out = {"oracle": (gold, said), "nothing": ([], [])}
    if gold:
        out["skip-last"] = (gold[:-1], said)
        out["extra-call"] = (gold + [gold[-1]], said)
        w = wrong(gold[-1][1])
        if w is not None:
            out["wrong-arg"] = (gold[:-1] + [(gold[-1][0], w)], said)
    return out


def tau2_reward(task, calls, said):
    env = registry.get_env_constructor(domain)()
    messages = [UserMessage(role="user", content="hi")]
    for i, (name, args) in enumerate(calls):
        tc = ToolCall(id=f"c{i}", name=name, arguments=args, requestor="assistant")
        messages.append(AssistantMessage(role="assistant", tool_calls=[tc], content=None))
        messages.append(env.get_response(tc))
    for s in said:
        messages.append(AssistantMessage(role="assistant", content=s))
    messages.append(AssistantMessage(role="assistant", content="done"))
    sim = SimulationRun(id="agree", task_id=task.id, start_time="", end_time="", duration=0.0,
                        termination_reason=TerminationReason.AGENT_STOP, messages=messages,
                        timestamp="")
    info = evaluate_simulation(sim, task, EvaluationType.ALL, solo_mode=False, domain=domain)
    return info.reward


def toml_value(v):
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }" \
            if v else "{}"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v, ensure_ascii=False)


def per_task(task):
    """Each trajectory of one task: its case name, tau2's reward, the case."""
    name = f"task-{int(task.id):03d}"
    text = (imported / "cases" / f"{name}.toml").read_text()
    out = []
    for variant, (calls, said) in variants(task).items():
        script = [{"tool": n, "args": a} for n, a in calls] + \
                 [{"tool": "user.say", "args": {"message": s}} for s in said]
        body = re.sub(r"^task = .*$", "task = " + toml_value({"calls": script}), text,
                      count=1, flags=re.M)
        out.append((f"{name}--{variant}", tau2_reward(task, calls, said), body))
    return out


if __name__ == "__main__":
    # Tasks are independent: one process per core (forked after tau2 is
    # imported), results in task order.
    tasks = registry.get_tasks_loader(domain)()[::stride]
    with multiprocessing.get_context("fork").Pool(os.cpu_count() or 1) as pool:
        done = pool.map(per_task, tasks, chunksize=1)
    rewards = {}
    for case, reward, body in (x for each in done for x in each):
        rewards[case] = reward
        (out / f"{case}.toml").write_text(body)
    json.dump(rewards, sys.stdout, sort_keys=True)
