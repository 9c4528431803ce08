"""A ticket-triage agent on the OpenAI Agents SDK, traced by real
instrumentations, talking to a loopback stub of the OpenAI API (Chat
Completions and Responses).

Flavours (agent.py passes them on):
- agents-chat / agents-responses: the SDK's Chat Completions or Responses
  model, traced by both OpenInference instrumentors at once (the Agents
  SDK's, whose `generation`/`response` LLM spans hold the `openai` client's
  LLM spans);
- agents-client: the Chat Completions model, traced by OpenInference's
  `openai` instrumentor alone (no tool spans: the results are in the tool
  messages the next call sends);
- agents-genai: the Chat Completions model, traced by OpenTelemetry's
  openai-v2 instrumentation.

The stub answers three model calls: two calls at once (`get_ticket`,
`get_alert`), two more at once (`get_deploy` of a deploy that does not
exist, which answers worldline's error shape, and `list_deploys`), then the
final text. `get_ticket` answers plain JSON text; the others answer as the
SDK's MCP tools do, a text content part (`{"type": "text", "text": ...}`, a
`ToolOutputTextDict`). STUB_LOG gets each answer
the stub gave, in Chat Completions' shape, and the requests it answered.
"""

import asyncio
import json
from http.server import BaseHTTPRequestHandler

import traced

ANSWERS = [
    [("get_ticket", {"id": "T-100"}), ("get_alert", {"id": "ALERT-7"})],
    [("get_deploy", {"id": "D-999"}), ("list_deploys", {"service": "checkout"})],
    json.dumps({"cause_deploy": "D-42", "action": "rollback"}),
]
ANSWERED = []


def chat_reply(n, answer):
    if isinstance(answer, str):
        message = {"role": "assistant", "content": answer}
    else:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{n}_{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for k, (name, args) in enumerate(answer)
        ]}
    reply = {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1772366400, "model": "stub-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop" if isinstance(answer, str) else "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return message, reply


def responses_reply(n, answer):
    message, _ = chat_reply(n, answer)
    if isinstance(answer, str):
        output = [{"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": answer, "annotations": []}]}]
    else:
        output = [{"type": "function_call", "id": f"fc_{n}_{k}", "call_id": c["id"], "name": c["function"]["name"],
                   "arguments": c["function"]["arguments"], "status": "completed"}
                  for k, c in enumerate(message["tool_calls"])]
    reply = {
        "id": f"resp_{n}", "object": "response", "created_at": 1772366400, "model": "stub-model",
        "status": "completed", "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
        "tools": [], "temperature": 1.0, "top_p": 1.0, "error": None, "incomplete_details": None,
        "instructions": None, "metadata": {},
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
    }
    return message, reply


class Stub(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        n = len(ANSWERED) + 1
        make = responses_reply if self.path.endswith("/responses") else chat_reply
        message, reply = make(n, ANSWERS[n - 1])
        ANSWERED.append({"request": body, "answer": message})
        traced.send_json(self, reply)


def main(flavour, trace_out, stub_log):
    server = traced.serve(Stub)
    trace, provider, exporter = traced.tracing()

    if flavour == "agents-genai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=provider)
    elif flavour == "agents-client":
        from openinference.instrumentation.openai import OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=provider)
    else:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, exclusive_processor=True)
        OpenAIInstrumentor().instrument(tracer_provider=provider)

    from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner,
                        ToolOutputTextDict, function_tool, set_tracing_disabled)
    from openai import AsyncOpenAI

    if flavour in ("agents-genai", "agents-client"):
        set_tracing_disabled(True)

    def text(value):
        return ToolOutputTextDict(type="text", text=json.dumps(value, sort_keys=True))

    @function_tool
    def get_ticket(id: str) -> str:
        """Fetch one ticket by id."""
        return json.dumps({"id": id, "alert": "ALERT-7", "status": "open"}, sort_keys=True)

    @function_tool
    def get_alert(id: str) -> ToolOutputTextDict:
        """Fetch one alert by id."""
        return text({"id": id, "service": "checkout", "kind": "latency"})

    @function_tool
    def get_deploy(id: str) -> ToolOutputTextDict:
        """Fetch one deploy by id."""
        return text({"error": {"kind": "not-found", "message": f"no deploys row {id}"}})

    @function_tool
    def list_deploys(service: str) -> ToolOutputTextDict:
        """The deploys of a service, newest first."""
        return text({"deploys": [{"id": "D-42", "service": service, "status": "live"}]})

    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="stub", max_retries=0)
    model_class = OpenAIResponsesModel if flavour == "agents-responses" else OpenAIChatCompletionsModel
    agent = Agent(
        name="triage",
        instructions="You triage incident tickets: find the deploy that caused the alert.",
        model=model_class(model="stub-model", openai_client=client),
        tools=[get_ticket, get_alert, get_deploy, list_deploys],
        model_settings=ModelSettings(parallel_tool_calls=True),
    )
    task = json.dumps({"alert": "ALERT-7", "ticket": "T-100"})
    with trace.get_tracer("triage-app").start_as_current_span("triage-request"):
        asyncio.run(Runner.run(agent, task, max_turns=6))

    traced.finish(provider, exporter, server, trace_out, stub_log, ANSWERED)
