"""The world's tools: ``tools.call(name, **args)`` returns the parsed JSON answer."""

import json
from dataclasses import dataclass
from typing import Any, List, Optional

from wit_world.imports import tools as _raw

from .errors import Failed, host_call


@dataclass
class Spec:
    """A tool as the world declares it."""

    name: str
    description: str
    params_schema: Any
    """JSON Schema of the arguments object (parsed; ``None`` if it is not JSON)."""
    mutates: bool


def specs() -> List[Spec]:
    """The tools this agent may see, in the world's declared order."""
    return [Spec(s.name, s.description, _schema(s.params_schema), s.mutates) for s in _raw.specs()]


def _schema(text: str) -> Any:
    """A parameter schema parsed (``None`` when the host's text is not JSON)."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def call(name: str, arguments: Optional[dict] = None, /, **args: Any) -> Any:
    """Call tool ``name``; return its answer parsed from JSON.

    Give the arguments as keywords (``tools.call("get_ticket", id="T-1")``),
    as a dict (for names that are not Python identifiers), or both.
    Raises a subclass of :class:`worldline_guest.Error` when the host refuses
    or the tool fails (``Denied``, ``Timeout``, ...).
    """
    body = dict(arguments or {})
    body.update(args)
    text = call_json(name, json.dumps(body, sort_keys=True, separators=(",", ":")))
    try:
        return json.loads(text)
    except ValueError as e:
        raise Failed(f"{name} answered with text that is not JSON: {e}") from None


def call_json(name: str, args_json: str) -> str:
    """Call a tool with raw JSON text; get raw JSON text back."""
    return host_call(_raw.call, name, args_json)
