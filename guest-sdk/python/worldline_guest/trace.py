"""Notes for the person debugging the run, shown next to the events."""

from wit_world.imports import trace as _raw


def note(kind: str, text: str) -> None:
    """Record why the agent did something (``kind`` is a short label such as ``plan``)."""
    _raw.note(kind, text)
