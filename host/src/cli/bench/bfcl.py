"""`worldline bench import bfcl/CATEGORY`: read the pinned BFCL package
(bfcl-eval) installed in this Python and print, as one JSON document
`{"files": {path: text}, "tasks": N}`, a worldline project for one
multi-turn category: the world (its tools from data/multi_turn_func_doc,
answered by BFCL's own classes in the service `service/bfcl.py`), a case
per task with per-turn state and response checks as BFCL's
multi_turn_checker grades, and a README with provenance (decision 0377).
Deterministic: the same package gives the same bytes.
Run as `python - CATEGORY SERVICE_SOURCE < this file`, with TZ=UTC (BFCL's
TradingBot stamps transactions in the process's zone; the sandbox's is UTC)."""

import ast
import hashlib
import inspect
import json
import sys
import types
from pathlib import Path

PACKAGE, VERSION = "bfcl-eval", "2026.3.23"
category, service_source = sys.argv[1], sys.argv[2]

require(PACKAGE, VERSION, f"--no-deps {PACKAGE}=={VERSION} mpmath==1.3.0")  # noqa: F821 (pinned.py)
CATEGORIES = ["multi_turn_base", "multi_turn_long_context", "multi_turn_miss_param"]
if category not in CATEGORIES:
    sys.exit(f"bfcl/{category} cannot be imported: only {', '.join(f'bfcl/{c}' for c in CATEGORIES)}")

import bfcl_eval  # noqa: E402
from bfcl_eval.constants.executable_backend_config import (  # noqa: E402
    MULTI_TURN_FUNC_DOC_FILE_MAPPING,
)
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (  # noqa: E402
    execute_multi_turn_func_call,
)

# The service's own helpers (its row encoding, the classes it dispatches
# to), loaded without the sandbox's worldline_service module.
stub = types.ModuleType("worldline_service")
stub.Table = lambda name: None
stub.ToolError = Exception
stub.tool = lambda f: f
sys.modules["worldline_service"] = stub
service = types.ModuleType("bfcl_service")
exec(compile(Path(service_source).read_text(), "bfcl_service.py", "exec"), service.__dict__)

root = Path(bfcl_eval.__file__).parent
data = root / "data"
sources = {
    "questions": data / f"BFCL_v4_{category}.json",
    "answers": data / "possible_answer" / f"BFCL_v4_{category}.json",
}
for cls in service.CLASSES:
    sources[f"doc {cls}"] = data / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[cls]
hashes = {n: hashlib.sha256(p.read_bytes()).hexdigest() for n, p in sources.items()}
entries = [json.loads(line) for line in sources["questions"].read_text().splitlines() if line.strip()]
answers = {}
for line in sources["answers"].read_text().splitlines():
    if line.strip():
        a = json.loads(line)
        answers[a["id"]] = a["ground_truth"]
long_context = "long_context" in category

world = "bfcl-multi-turn"
wdir = f"worlds/{world}/v1"
files = {}


def toml_str(s):
    return json.dumps(s, ensure_ascii=False)


def toml_value(v):
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_str(k)} = {toml_value(x)}" for k, x in v.items()) + " }" \
            if v else "{}"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        raise ValueError("TOML has no null")
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return toml_str(v)


# BFCL's own types, as its handlers map them for an OpenAI-style model.
TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": "string",
         "list": "array", "bool": "boolean", "int": "integer"}


def schema(v):
    if isinstance(v, dict):
        out = {}
        for k, x in sorted(v.items()):
            if x is None:
                continue
            if k == "type" and isinstance(x, str):
                x = TYPES.get(x, x)
            out[k] = schema(x) if k not in ("required", "enum") else x
        return out
    if isinstance(v, list):
        return [schema(x) for x in v]
    return v


tools = []
for cls in service.CLASSES:
    for line in sources[f"doc {cls}"].read_text().splitlines():
        if line.strip():
            tools.append((cls, json.loads(line)))
lines = [f'name = "{world}"', "version = 1",
         f"description = {toml_str(f'BFCL multi-turn ({PACKAGE}=={VERSION}), imported by worldline bench import: the tools of its eight classes, answered by the classes themselves.')}",
         "",
         "[service]", 'component = "bfcl.wasm"', "fuel = 20_000_000_000", "memory_mb = 512", "",
         "# A row per involved class: its initial config (JSON text), its place",
         "# among the task's classes, and whether the long-context scenario loads.",
         "[tables.config]", 'key = "class"', 'rows = "data/config.jsonl"', "",
         "# A row per involved class: its public attributes (BFCL's state check).",
         "[tables.state]", 'key = "class"', 'rows = "data/state.jsonl"', "",
         "[permissions]", 'default = "allow"', ""]
for cls, t in tools:
    lines += ["[[tools]]", f"name = {toml_str(t['name'])}",
              f"description = {toml_str(t['description'])}",
              f"params = {toml_value(schema(t['parameters']))}",
              'op = "service"', 'validate = "off"', ""]
files[f"{wdir}/world.toml"] = "\n".join(lines)
files[f"{wdir}/data/config.jsonl"] = ""
files[f"{wdir}/data/state.jsonl"] = ""
files["worldline.toml"] = 'cases = ["cases"]\nworlds = "worlds"\n'

methods = {}
for cls in service.CLASSES:
    for name, fn in inspect.getmembers(service._TYPES[cls], predicate=inspect.isfunction):
        if not name.startswith("_"):
            methods.setdefault(name, inspect.signature(fn))


def parsed(call):
    """A ground-truth call string `name(arg=value, ...)`: its name and
    arguments by keyword (a positional one named from the method's
    signature)."""
    node = ast.parse(call, mode="eval").body
    name = node.func.id
    args = {}
    params = [p for p in methods[name].parameters if p != "self"]
    for i, a in enumerate(node.args):
        args[params[i]] = ast.literal_eval(a)
    for k in node.keywords:
        args[k.arg] = ast.literal_eval(k.value)
    return name, args


def as_json(v):
    """A Python argument as JSON (a tuple as a list)."""
    return json.loads(json.dumps(v))


def text(turn):
    return "\n".join(m["content"] for m in turn if m.get("role") == "user")


notes = []
no_gold = []
for n, entry in enumerate(entries):
    tid = entry["id"]
    gt = answers[tid]
    classes = entry["involved_classes"]
    questions = entry["question"]
    c = [f'world = "{world}@v1"',
         f"description = {toml_str(f'BFCL {category} task {tid}: {len(questions)} user turns over {len(classes)} classes')}",
         f'tags = ["bfcl", "{category}"]',
         "seed = 1",
         "clock = 2024-09-01T10:30:00Z",
         f"task = {{ id = {toml_str(tid)}, category = {toml_str(category)}, message = {toml_str(text(questions[0]))} }}",
         ""]
    if entry.get("excluded_function"):
        notes.append(f"{tid}: `excluded_function` {', '.join(entry['excluded_function'])}: no code of"
                     f" {PACKAGE}=={VERSION} reads it, so BFCL offers it from the start, as here")
    # The instances as BFCL loads them, and their public state after each
    # turn of the ground truth, by BFCL's own executor.
    rows_config = [{"class": cls, "order": i, "long_context": long_context,
                    "config": json.dumps(entry["initial_config"].get(cls, {}))}
                   for i, cls in enumerate(classes)]
    _, start = execute_multi_turn_func_call([], entry["initial_config"], classes,
                                            f"import{n}", tid, long_context=long_context)
    c += ["[[overlay]]", 'table = "config"', f"rows = {toml_value(rows_config)}", "",
          "[[overlay]]", 'table = "state"',
          f"rows = {toml_value([service.public_row(k, start[k]) for k in classes])}", ""]
    c += ["# The user: BFCL's later turns, one per message of the agent's.",
          "[user]", f"max_turns = {len(questions)}", ""]
    for t in range(1, len(questions)):
        c += ["[[user.rules]]", f"turn = {t}", f"reply = {toml_str(text(questions[t]))}", ""]
    c += ["[[user.rules]]", f"turn = {len(questions)}", 'end = "that was the last turn"',
          "satisfied = true", "", "[expect]"]
    for t, calls in enumerate(gt, start=1):
        for call in calls:
            name, args = parsed(call)
            c += ["", "[[expect.gold]]", f"tool = {toml_str(name)}",
                  f"args = {toml_value(as_json(args))}", f"turn = {t}"]
    if not any(gt):
        no_gold.append(tid)
    for t, calls in enumerate(gt, start=1):
        results, after = execute_multi_turn_func_call(calls, entry["initial_config"], classes,
                                                      f"import{n}", tid,
                                                      long_context=long_context)
        if not calls:
            # BFCL checks nothing on a turn whose ground truth is empty.
            continue
        wanted = {}
        for r in results:
            wanted[r] = wanted.get(r, 0) + 1
        checks = [{"tool": "*", "result": r, "min": k} for r, k in sorted(wanted.items())]
        c += ["", "# BFCL: the model made a call in this turn.", "[[expect.turn]]", f"turn = {t}",
              "this_turn_only = true", 'calls = [{ tool = "*", min = 1 }]',
              "", "# BFCL's response check (every result of the turn's ground truth among the",
              "# model's results so far) and state check (the public attributes).",
              "[[expect.turn]]", f"turn = {t}", f"calls = {toml_value(checks)}"]
        for cls in classes:
            c += ["[[expect.turn.state]]", 'table = "state"', f"key = {toml_str(cls)}",
                  f"equals = {toml_value(service.public_row(cls, after[cls]))}"]
    files[f"cases/{tid}.toml"] = "\n".join(c) + "\n"

readme = [f"# BFCL {category}, imported", "",
          f"Made by `worldline bench import bfcl/{category}` from the PyPI package "
          f"`{PACKAGE}=={VERSION}`; the same package gives the same files.", "",
          "## Provenance", "", "| file of the package | SHA-256 |", "|---|---|"]
readme += [f"| `{sources[n].relative_to(root.parent)}` | `{h}` |" for n, h in sorted(hashes.items())]
readme += ["", "## What is carried", "",
           f"- the world `{world}@v1`: the tools of BFCL's eight multi-turn classes with the names,"
           " descriptions and parameters of `data/multi_turn_func_doc` (BFCL's types written as"
           " JSON schema's: `dict` as object, `float` as number, `tuple` as array, `any` as string;"
           " `validate = \"off\"`: BFCL does not check arguments either), answered by"
           " `service/bfcl.py`, which runs BFCL's own classes from the bundled package: build it with"
           " `worldline build-python --service service/bfcl.py --venv VENV -o"
           f" {wdir}/bfcl.wasm` (VENV: the environment holding {PACKAGE}=={VERSION} and"
           " mpmath==1.3.0); a tool's answer is BFCL's execution result text (a dict as JSON),"
           " an exception the text BFCL gives (`Error during execution: ...`);",
           f"- a case per task ({len(entries)}), `cases/ID.toml`, with `task.id` the benchmark's id and"
           " its first user turn as the message; the task's initial config and involved classes as"
           " overlays of the tables `config` and `state`; the later turns as a scripted user (one"
           " reply per agent message; the last turn's message ends the conversation);",
           "- BFCL's checks after each turn whose ground truth is not empty, as its"
           " `multi_turn_checker` makes them: the model made a call in the turn; every execution"
           " result of the turn's ground truth is among the model's results of all turns so far"
           " (with multiplicity, any tool); each involved class's public attributes equal the ground"
           " truth's after that turn (a set, a dict with a key that is not text, None, a Directory and a"
           " File written tagged, so the row equality is BFCL's `==`);",
           "- the ground-truth calls as `[[expect.gold]]` with their turn: `worldline validate`'s"
           " oracle, and the final state;",
           "- every tool of the task's classes offered from the start, as BFCL offers them: the"
           f" `excluded_function` some tasks list is read by no code of {PACKAGE}=={VERSION} (the"
           " tools BFCL holds back until a later turn are a task's `missed_function`, the"
           " `multi_turn_miss_func` category's, which is not importable).", "",
           "## Not carried, and why", "",
           "- BFCL's prompt (its system prompt with the function docs) and its decoding of a model's"
           " text into calls: worldline agents call tools directly;",
           "- the irrelevance check of a turn whose ground truth is empty (no call is made there) is"
           " not a state or response check; BFCL applies it only in the miss-param category.", ""]
readme += ["## Validation", "",
           f"The oracle (the ground truth's calls, turn by turn) of every task that has one passes"
           f" `worldline validate`; {len(no_gold)} tasks have no ground-truth call:"
           f" {', '.join(no_gold) or 'none'}. An agent that does nothing fails every task (each has a"
           " turn whose ground truth calls a tool, and BFCL asks for a call in that turn).", ""]
if notes:
    readme += ["## Per task", ""] + [f"- {x}" for x in notes] + [""]
files["README.md"] = "\n".join(readme)

json.dump({"files": dict(sorted(files.items())), "tasks": len(entries)}, sys.stdout,
          ensure_ascii=False, sort_keys=True)
