"""What `worldline build-python` runs around the agent's import.

componentize-py imports the agent module once at build time and snapshots
the interpreter. A network call during that import (urllib3 probes for IPv6
when `requests` is imported) makes the C library keep a network handle of
the build's host in the snapshot; that handle does not exist when the agent
runs, so its first network call would trap with `unknown handle index`
instead of being denied as a sandbox denies it. :func:`offline` makes such
calls raise :class:`PermissionError` while the module is imported, so
nothing is kept, and puts the real functions back afterwards. It also
loads the codec host names are encoded with (below)."""

import contextlib
import socket

# Host names are encoded with the `idna` codec before any lookup: imported
# here, at build time, it is in the snapshot, so a connection an agent tries
# is denied as the sandbox denies it (an `OSError`) instead of failing with
# `LookupError: unknown encoding: idna`.
import encodings.idna  # noqa: F401

_FUNCTIONS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo")
_METHODS = ("bind", "connect", "connect_ex")


def _refuse(*args, **kwargs):
    raise PermissionError(13, "no network while the agent is being built")


@contextlib.contextmanager
def offline():
    saved_functions = {name: getattr(socket, name) for name in _FUNCTIONS}
    saved_methods = {name: getattr(socket.socket, name) for name in _METHODS}
    for name in _FUNCTIONS:
        setattr(socket, name, _refuse)
    for name in _METHODS:
        setattr(socket.socket, name, _refuse)
    try:
        yield
    finally:
        for name, function in saved_functions.items():
            setattr(socket, name, function)
        for name, method in saved_methods.items():
            setattr(socket.socket, name, method)
