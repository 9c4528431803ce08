"""Model calls: OpenAI chat-completions shaped JSON in and out."""

import json
from typing import Any, Optional

from wit_world.imports import model as _raw

from .errors import Failed, host_call


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
