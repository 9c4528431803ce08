"""Typed errors of host calls.

Every failed call to the host (a tool, the model, the world's files) raises a
subclass of :class:`Error` that carries the host's ``error-kind``, so an agent
can write ``except Denied:`` or branch on ``err.kind``. An :class:`Error` that
escapes the agent's ``run`` function ends the run as ``errored`` (exit 1), like
a Rust agent returning ``Err``; any other exception is a fault (exit 3) whose
traceback the run report shows.
"""

# Why the errors mirror the Rust SDK (was decision 0021): every host
# `tool-error` is a subclass of `Error` named after its `error-kind`; an `Error`
# escaping `run` is the WIT `err` (status `errored`, exit 1), like a Rust
# agent's `Err`; any other exception traps with its traceback (status `trapped`,
# exit 3); output and arguments are JSON with sorted keys and no spaces, as
# serde_json writes them. A Python and a Rust agent that decide the same then
# produce the same requests, output and statuses, so cases and graders do not
# care about the language. One exception class with a kind field is less
# idiomatic to catch; catching every exception as `errored` would make a bug
# read as a decision.

from enum import Enum

from componentize_py_types import Err
from wit_world.imports import types as _types


class ErrorKind(str, Enum):
    """Why a host call failed, as the host names it."""

    DENIED = "denied"
    NOT_FOUND = "not-found"
    INVALID_ARGS = "invalid-args"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    CONFLICT = "conflict"
    FAILED = "failed"


class Error(Exception):
    """A failed host call, or an agent-level failure, with its kind."""

    kind = ErrorKind.FAILED

    def __init__(self, message: str, kind: "ErrorKind | None" = None):
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.message}"


class Denied(Error):
    """A permission of the case or world refused the call; nothing changed."""

    kind = ErrorKind.DENIED


class NotFound(Error):
    """The named tool, row or file does not exist."""

    kind = ErrorKind.NOT_FOUND


class InvalidArgs(Error):
    """The arguments did not match the tool's parameter schema."""

    kind = ErrorKind.INVALID_ARGS


class Timeout(Error):
    """The call took longer than the world allows."""

    kind = ErrorKind.TIMEOUT


class Unavailable(Error):
    """The service behind the call is down."""

    kind = ErrorKind.UNAVAILABLE


class Conflict(Error):
    """The call conflicts with the current state (for example a duplicate)."""

    kind = ErrorKind.CONFLICT


class Failed(Error):
    """Any other failure, and agent-side failures (bad JSON, a plan that cannot go on)."""

    kind = ErrorKind.FAILED


_BY_KIND = {
    _types.ErrorKind.DENIED: Denied,
    _types.ErrorKind.NOT_FOUND: NotFound,
    _types.ErrorKind.INVALID_ARGS: InvalidArgs,
    _types.ErrorKind.TIMEOUT: Timeout,
    _types.ErrorKind.UNAVAILABLE: Unavailable,
    _types.ErrorKind.CONFLICT: Conflict,
    _types.ErrorKind.FAILED: Failed,
}


def from_wit(err) -> Error:
    """The typed error for a ``tool-error`` the host returned."""
    return _BY_KIND[err.kind](err.message)


def host_call(fn, *args):
    """Call a generated binding; turn its ``Err(tool-error)`` into an :class:`Error`."""
    try:
        return fn(*args)
    except Err as e:
        raise from_wit(e.value) from None
