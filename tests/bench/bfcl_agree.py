"""The BFCL side of the agreement test (host/tests/bench_bfcl.rs): for
every task of a BFCL multi-turn category, the oracle (the ground truth's
calls, turn by turn) and perturbed trajectories (the last call with a wrong
argument, the last call skipped, the last call made twice, the last two
calls of a turn swapped, nothing at all), each graded by BFCL's own
`multi_turn_checker` as its eval runner calls it (the calls of a turn as
one decoded step of `name(arg=value)` strings). Writes, for each
trajectory, a copy of the imported case whose task is that trajectory for
the `caller` test guest (each turn's calls, then a message to the user,
whose reply opens the next turn), and prints `{case name: valid}` as JSON.

Usage: TZ=UTC python bfcl_agree.py CATEGORY IMPORTED_DIR OUT_DIR [STRIDE]
(STRIDE N: every Nth task only, from the first; default 1, all of them)"""

import ast
import json
import re
import sys
from pathlib import Path

import bfcl_eval
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

category, imported, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
stride = int(sys.argv[4]) if len(sys.argv) > 4 else 1
out.mkdir(parents=True, exist_ok=True)
data = Path(bfcl_eval.__file__).parent / "data"


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


entries = lines(data / f"BFCL_v4_{category}.json")
answers = {a["id"]: a["ground_truth"] for a in lines(data / "possible_answer" / f"BFCL_v4_{category}.json")}


def gold_calls(case_text):
    """The imported case's gold calls by turn: [[(name, args)]]."""
    turns = {}
    for block in case_text.split("[[expect.gold]]")[1:]:
        tool = re.search(r'^tool = (".*")$', block, re.M).group(1)
        args = re.search(r"^args = (.*)$", block, re.M).group(1)
        turn = int(re.search(r"^turn = (\d+)$", block, re.M).group(1))
        turns.setdefault(turn, []).append((json.loads(tool), toml_inline(args)))
    return turns


def toml_inline(text):
    """The imported case's inline TOML value (written by the importer as
    JSON-like inline tables) as a Python value."""
    import tomllib
    return tomllib.loads(f"v = {text}")["v"]


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


def variants(gold):
    """Trajectories: a list of turns, each a list of (name, args)."""
    out = {"oracle": gold, "nothing": [[] for _ in gold]}
    last = max((i for i, t in enumerate(gold) if t), default=None)
    if last is None:
        return out

    def with_last(calls):
        return [list(t) if i != last else calls for i, t in enumerate(gold)]

    turn = gold[last]
    out["skip-last"] = with_last(turn[:-1])
    out["extra-call"] = with_last(turn + [turn[-1]])
    w = wrong(turn[-1][1])
    if w is not None:
        out["wrong-arg"] = with_last(turn[:-1] + [(turn[-1][0], w)])
    if len(turn) >= 2 and turn[-1] != turn[-2]:
        out["swapped"] = with_last(turn[:-2] + [turn[-1], turn[-2]])
    return out


def call_text(name, args):
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def toml_value(v):
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }" \
            if v else "{}"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v, ensure_ascii=False)


valid = {}
for entry in entries[::stride]:
    tid = entry["id"]
    text = (imported / "cases" / f"{tid}.toml").read_text()
    by_turn = gold_calls(text)
    gold = [by_turn.get(t, []) for t in range(1, len(answers[tid]) + 1)]
    for variant, turns in variants(gold).items():
        decoded = [[[call_text(n, a) for n, a in t]] if t else [] for t in turns]
        result = multi_turn_checker(decoded, answers[tid], dict(entry), category,
                                    f"agree_{variant}")
        name = f"{tid}--{variant}"
        valid[name] = result["valid"]
        script = []
        for i, t in enumerate(turns, start=1):
            script += [{"tool": n, "args": a} for n, a in t]
            script.append({"tool": "user.say", "args": {"message": f"Done with turn {i}."}})
        task = "task = " + toml_value({"calls": script})
        body = re.sub(r"^task = .*$", lambda _: task, text, count=1, flags=re.M)
        (out / f"{name}.toml").write_text(body)
json.dump(valid, sys.stdout, sort_keys=True)
