"""The world's files (never the host's)."""

from typing import List, Union

from wit_world.imports import files as _raw

from .errors import Failed, host_call


def read(path: str) -> bytes:
    """The bytes of a world file."""
    return bytes(host_call(_raw.read, path))


def read_text(path: str) -> str:
    """A world file as UTF-8 text."""
    data = read(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Failed(f"{path}: {e}") from None


def write(path: str, data: Union[bytes, str]) -> None:
    """Write a world file (text is written as UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    host_call(_raw.write, path, data)


def paths(prefix: str = "") -> List[str]:
    """The world's file paths that start with ``prefix``."""
    return list(host_call(_raw.paths, prefix))
