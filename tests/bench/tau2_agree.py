"""The tau2 side of the agreement test (host/tests/bench_tau2.rs): for
every task of a tau2 domain, the oracle (its gold actions, then its
communicate_info said to the user) and perturbed trajectories (the last
call with a wrong argument, the last call skipped, the last call made
twice, nothing at all; the gold actions with each whole number sent as a
float, `50.0`, or each number as text, `"50"`, which tau2's models
convert), each played against tau2's own environment and
graded by tau2's own evaluator (`evaluate_simulation`, all reward types
of the task's basis). Writes, for each trajectory, a copy of the imported
case whose task is that trajectory for the `caller` test guest, and
prints `{case name: tau2 reward}` as JSON.

Telecom's trajectories have the user's steps too: the user's calls of
their own tools, made in tau2 as the user's tool calls and here by the
imported stand-in user when the agent's message names the tool and its
arguments.

Usage: python tau2_agree.py DOMAIN IMPORTED_DIR OUT_DIR [STRIDE]
(STRIDE N: every Nth task only, from the first; default 1, all of them)"""

import gc
import json
import multiprocessing
import os
import pickle
import re
import sys
from pathlib import Path

# tau2's modules and the three databases each trajectory makes are
# hundreds of thousands of objects without cycles, and the cyclic
# collector, run as they grew, took as long as making them.
gc.disable()

import logging  # noqa: E402

logging.disable(logging.CRITICAL)
from loguru import logger  # noqa: E402

logger.remove()
from tau2.data_model.message import AssistantMessage, ToolCall, UserMessage  # noqa: E402
from tau2.data_model.simulation import SimulationRun, TerminationReason  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.environment.db import DB  # noqa: E402
from tau2.registry import registry  # noqa: E402
from tau2.utils import load_file  # noqa: E402

# Each environment tau2 makes reads and parses its database files again
# (db.json; telecom's db.toml and user_db.toml); keep each parsed once and
# validate a fresh copy of it each time (what a load gives). The copy is
# unpickled: 0.04 s for airline's rows, where `copy.deepcopy` took 0.2 s.
_parsed = {}


def _cached_load(cls, path):
    if str(path) not in _parsed:
        _parsed[str(path)] = pickle.dumps(load_file(path), protocol=pickle.HIGHEST_PROTOCOL)
    return cls.model_validate(pickle.loads(_parsed[str(path)]))


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


def numbers_as(v, how):
    """`v` with each number in it (not a bool) made `how(number)`, or
    None when it has none."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            return {k: walk(y) for k, y in x.items()}
        if isinstance(x, list):
            return [walk(y) for y in x]
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            found.append(x)
            return how(x)
        return x
    out = walk(v)
    return out if found else None


def telecom_steps(task):
    """Telecom's gold as the steps a trajectory is made of, in order: an
    agent's call `(name, args)`, or a user's call of their own tool
    `("user", (name, args))`."""
    return [(a.name, dict(a.arguments)) if a.requestor == "assistant"
            else ("user", (a.name, dict(a.arguments)))
            for a in task.evaluation_criteria.actions or []]


def telecom_variants(task):
    """The oracle and perturbed trajectories of a telecom task: the last
    step skipped, made twice, the last agent call with a wrong argument."""
    gold = telecom_steps(task)
    out = {"oracle": (gold, []), "nothing": ([], [])}
    if gold:
        out["skip-last"] = (gold[:-1], [])
        out["extra-call"] = (gold + [gold[-1]], [])
        last = max((i for i, s in enumerate(gold) if s[0] != "user"), default=None)
        w = None if last is None else wrong(gold[last][1])
        if w is not None:
            out["wrong-arg"] = (gold[:last] + [(gold[last][0], w)] + gold[last + 1:], [])
    return out


def variants(task):
    if domain == "telecom":
        return telecom_variants(task)
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
        if numbers_as([a for _, a in gold], float) is not None:
            for variant, how in [("float-numbers", float), ("text-numbers", str)]:
                out[variant] = ([(n, numbers_as(a, how) or a) for n, a in gold], said)
    return out


def tau2_reward(task, calls, said):
    env = registry.get_env_constructor(domain)()
    if domain == "telecom":
        env.set_state(None, task.initial_state.initialization_actions, [])
    messages = [UserMessage(role="user", content="hi")]
    for i, (name, args) in enumerate(calls):
        if name == "user":  # the user's call of their own tool
            tc = ToolCall(id=f"c{i}", name=args[0], arguments=args[1], requestor="user")
            messages.append(UserMessage(role="user", tool_calls=[tc], content=None))
            messages.append(env.get_response(tc))
            continue
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


def case_name(task):
    """The imported case's name (as the importers make it)."""
    if task.id.isdigit():
        return f"task-{int(task.id):03d}"
    return "task-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in task.id) \
        .strip("-").replace("--", "-")


def per_task(task):
    """Each trajectory of one task: its case name, tau2's reward, the case."""
    name = case_name(task)
    text = (imported / "cases" / f"{name}.toml").read_text()
    out = []
    for variant, (calls, said) in variants(task).items():
        # A user's step is a message to the user naming the tool and its
        # arguments' values, which the imported stand-in user answers by
        # calling it.
        script = [{"tool": "user.say", "args": {"message": " ".join(
                      ["Please", a[0]] + [str(v) for v in a[1].values()]) + " now."}}
                  if n == "user" else {"tool": n, "args": a} for n, a in calls] + \
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
