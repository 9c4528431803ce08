"""The user the agent works for (the case's ``[user]`` plays them).

``user.say(message)`` sends a message and returns the user's next line as a
:class:`Reply`, or :class:`Ended` once the user has left (every later
``say`` ends the same way). Each call is one recorded turn::

    turn = user.say("Which order is it about?")
    if isinstance(turn, user.Ended):
        return {"action": "none"}
    order = turn.text
"""

from dataclasses import dataclass
from typing import Union

from wit_world.imports import user as _raw


@dataclass(frozen=True)
class Reply:
    """The user's reply."""

    text: str


@dataclass(frozen=True)
class Ended:
    """The user ended the conversation, and why."""

    reason: str
    satisfied: bool


Turn = Union[Reply, Ended]


def say(message: str) -> Turn:
    """Send the user ``message`` and wait for their next line."""
    turn = _raw.say(message)
    if isinstance(turn, _raw.Turn_Reply):
        return Reply(turn.value)
    return Ended(turn.value.reason, turn.value.satisfied)
