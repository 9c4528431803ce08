"""Put before every converter (`bench_cmd.rs`): `require` ends the
converter, saying how to install it, unless this Python has the pinned
package at its pinned version."""

import importlib.metadata as _metadata
import sys as _sys


def require(package, version, install):
    try:
        found = _metadata.version(package)
    except _metadata.PackageNotFoundError:
        _sys.exit(f"{package} is not installed in this Python: install {package}=={version} into a venv"
                  f" (python3 -m venv V && V/bin/pip install {install}) and pass --python V/bin/python")
    if found != version:
        _sys.exit(f"{package}=={found} is installed; this importer reads {package}=={version} "
                  f"(pip install {install})")
