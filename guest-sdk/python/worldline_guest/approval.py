"""Human approval of an action before the agent takes it (the case's
``[[approve]]`` rules answer). Each request is one recorded event::

    decision = approval.request("refund", order="B-2001", amount=250)
    if isinstance(decision, approval.Denied):
        trace.note("plan", f"refund not approved: {decision.reason}")
"""

import json
from dataclasses import dataclass
from typing import Any, Optional, Union

from wit_world.imports import approval as _raw


@dataclass(frozen=True)
class Approved:
    """The action may go ahead."""

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True)
class Denied:
    """The action was refused, with the approver's reason."""

    reason: str

    def __bool__(self) -> bool:
        return False


Decision = Union[Approved, Denied]


def request(kind: str, details: Optional[dict] = None, /, **more: Any) -> Decision:
    """Ask for approval of an action of ``kind`` (e.g. ``"refund"``) with
    details given as a dict, as keywords, or both. The decision is truthy
    when approved."""
    body = dict(details or {})
    body.update(more)
    answer = _raw.request(kind, json.dumps(body, sort_keys=True, separators=(",", ":")))
    if isinstance(answer, _raw.Decision_Denied):
        return Denied(answer.value)
    return Approved()
