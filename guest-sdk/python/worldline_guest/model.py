"""Model calls: OpenAI chat-completions shaped JSON in and out.

``chat`` sends a conversation and returns a :class:`Response`; ``complete``
sends any request dict and returns the parsed JSON::

    from worldline_guest import model, tools

    resp = model.chat(
        [model.system("You are on call."), model.user("T-100?")],
        tools=model.tool_defs(tools.specs()),
    )
    for call in resp.tool_calls:
        answer = tools.call(call.name, call.arguments())

The host records every call in full and answers it with the case's
provider (scripted, an OpenAI-compatible endpoint, or a recording).
"""

import json
from dataclasses import dataclass
from typing import Any, List, Optional

from wit_world.imports import model as _raw

from .errors import Failed, InvalidArgs, host_call


def system(content: str) -> dict:
    """A system message."""
    return {"role": "system", "content": content}


def user(content: str) -> dict:
    """A user message."""
    return {"role": "user", "content": content}


def assistant(content: str) -> dict:
    """An assistant message."""
    return {"role": "assistant", "content": content}


def tool_result(call_id: str, content: Any) -> dict:
    """The answer to tool call ``call_id`` (non-text content is sent as JSON)."""
    if not isinstance(content, str):
        content = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def tool_defs(specs) -> List[dict]:
    """The world's tools (``tools.specs()``) as model tool definitions."""
    return [
        {
            "type": "function",
            "function": {"name": s.name, "description": s.description, "parameters": s.params_schema},
        }
        for s in specs
    ]


@dataclass
class ToolCall:
    """A call the model asks for."""

    id: str
    name: str
    arguments_json: str
    """The arguments as the model wrote them (JSON text)."""

    def arguments(self) -> dict:
        """The arguments parsed (``InvalidArgs`` when the model wrote something else)."""
        text = self.arguments_json.strip() or "{}"
        try:
            return json.loads(text)
        except ValueError as e:
            raise InvalidArgs(f"the model's arguments for {self.name}: {e}") from None


@dataclass
class Response:
    """A chat-completions response; ``raw`` is the whole parsed document."""

    raw: dict

    @property
    def message(self) -> dict:
        """The first choice's message (an empty assistant message if none)."""
        choices = self.raw.get("choices") or []
        if not choices:
            return {"role": "assistant", "content": ""}
        return choices[0].get("message") or {}

    @property
    def content(self) -> Optional[str]:
        """The first choice's text."""
        return self.message.get("content")

    @property
    def tool_calls(self) -> List[ToolCall]:
        """The tool calls the first choice asks for."""
        return [
            ToolCall(c.get("id", ""), c.get("function", {}).get("name", ""), c.get("function", {}).get("arguments") or "")
            for c in self.message.get("tool_calls") or []
        ]

    @property
    def finish_reason(self) -> Optional[str]:
        choices = self.raw.get("choices") or []
        return choices[0].get("finish_reason") if choices else None


def chat(messages: List[dict], /, **fields: Any) -> Response:
    """Send a conversation (plus ``tools=``, ``temperature=``, ...); get a :class:`Response`."""
    return Response(complete({"messages": messages}, **fields))


def complete(request: Optional[dict] = None, /, **fields: Any) -> Any:
    """Send a chat-completions request and return the parsed response.

    Pass the request as a dict, as keyword fields, or both (fields win):
    ``model.complete(messages=[{"role": "user", "content": "hi"}])``.
    """
    body = dict(request or {})
    body.update(fields)
    text = complete_json(json.dumps(body, sort_keys=True, separators=(",", ":")))
    try:
        return json.loads(text)
    except ValueError as e:
        raise Failed(f"the model answered with text that is not JSON: {e}") from None


def complete_json(request_json: str) -> str:
    """Send a raw JSON request; get the raw JSON response."""
    return host_call(_raw.complete, request_json)
