"""A small production-style agent on the `openai` package, traced by a real
third-party instrumentation, talking to a loopback OpenAI-compatible stub.

usage: agent.py openai-v2|openinference TRACE_OUT STUB_LOG
       agent.py agents-chat|agents-responses|agents-client|agents-genai TRACE_OUT STUB_LOG

The first two: the stub answers two chat completions, a call of `get_alert`,
then a final text, and the agent runs the tool itself. The `agents-*`
flavours run the OpenAI Agents SDK (agents_agent.py). The finished spans are
written as one OTLP protobuf ExportTraceServiceRequest (TRACE_OUT); the
requests the stub answered go to STUB_LOG as JSON.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler

import traced

FLAVOUR, TRACE_OUT, STUB_LOG = sys.argv[1], sys.argv[2], sys.argv[3]
if FLAVOUR.startswith("agents-"):
    import os
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import agents_agent
    agents_agent.main(FLAVOUR, TRACE_OUT, STUB_LOG)
    sys.exit(0)

ANSWERS = [
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_alert", "arguments": "{\"id\": \"ALERT-7\"}"}}]},
    {"role": "assistant", "content": "ALERT-7 is checkout latency; roll back D-42."},
]
ANSWERED = []


class Stub(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = ANSWERS[len(ANSWERED)]
        ANSWERED.append({"messages": body["messages"], "answer": message})
        reply = {
            "id": f"chatcmpl-{len(ANSWERED)}",
            "object": "chat.completion",
            "created": 1772366400,
            "model": "stub-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        traced.send_json(self, reply)


server = traced.serve(Stub)
trace, provider, exporter = traced.tracing()

if FLAVOUR == "openai-v2":
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=provider)
else:
    from openinference.instrumentation.openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=provider)

import openai

TOOLS = [{"type": "function", "function": {"name": "get_alert", "description": "Fetch one alert by id", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}]


def get_alert(id):
    return {"id": id, "service": "checkout", "kind": "latency"}


client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="stub")
messages = [
    {"role": "system", "content": "You are the on-call assistant."},
    {"role": "user", "content": json.dumps({"alert": "ALERT-7"})},
]
with trace.get_tracer("agent").start_as_current_span("invoke_agent on-call"):
    for _ in range(4):
        r = client.chat.completions.create(model="stub-model", messages=messages, tools=TOOLS)
        m = r.choices[0].message
        if not m.tool_calls:
            break
        messages.append(m.model_dump(exclude_none=True))
        for c in m.tool_calls:
            result = get_alert(**json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(result)})

traced.finish(provider, exporter, server, TRACE_OUT, STUB_LOG, ANSWERED)
