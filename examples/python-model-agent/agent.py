"""A model-driven agent on the Python guest SDK: the model sees the task
and the world's tools, chooses tool calls, the agent runs them through the
host and feeds the results back, until the model answers without a tool
call. The Python twin of `examples/model-agent` (Rust).

The same build runs against a scripted model (the cases in `cases/model/`)
or any OpenAI-compatible server (`--model-set provider=openai
--model-set base_url=...`).

Build: `worldline build-python examples/python-model-agent/agent.py`.
"""

import json

import worldline_guest as wl
from worldline_guest import model, tools, trace

MAX_TURNS = 16
SYSTEM = (
    "You are the on-call engineer. Use the tools to find what caused the alert, "
    "fix it with the smallest safe change, record one incident note, and close the ticket only when "
    "the cause is fixed. Answer with a JSON object when you are done."
)


def ask(messages, defs):
    """One model call; a provider that timed out or was unavailable gets one more try."""
    try:
        return model.chat(messages, tools=defs, temperature=0.0)
    except (wl.Timeout, wl.Unavailable) as e:
        trace.note("model-retry", str(e))
        return model.chat(messages, tools=defs, temperature=0.0)


@wl.agent
def run(task):
    messages = [model.system(SYSTEM), model.user(json.dumps(task, sort_keys=True))]
    defs = model.tool_defs(tools.specs())
    for turn in range(1, MAX_TURNS + 1):
        message = ask(messages, defs)
        messages.append(message.message)
        if not message.tool_calls:
            text = message.content or ""
            try:
                out = json.loads(text)
            except ValueError:
                out = None
            if not isinstance(out, dict):
                out = {"answer": text}
            out["turns"] = turn
            return out
        for call in message.tool_calls:
            try:
                content = tools.call_json(call.name, json.dumps(call.arguments()))
            except wl.Error as e:
                content = json.dumps({"error": {"kind": e.kind.value, "message": e.message}})
            messages.append(model.tool_result(call.id, content))
    raise wl.Failed(f"no answer after {MAX_TURNS} model turns")
