"""Pack a Rust extension built for WASI into a wheel for the sandbox's
CPython (tests/python-wasi-wheels.sh): the package's Python files, the
extension as a WebAssembly shared library, and the sdist's metadata.

usage: wasi-wheel.py SDIST_DIR PYTHON_SOURCE EXTENSION_WASM MODULE OUT_DIR

PYTHON_SOURCE is the folder holding the package's Python files ("-" when
it has none: a package of the extension alone, as maturin makes it);
MODULE the extension's dotted name (`pydantic_core._pydantic_core`).
"""

import base64
import hashlib
import pathlib
import sys
import zipfile

TAG = "cp314-cp314-wasi_0_0_0_wasm32"
SUFFIX = ".cpython-314-wasm32-wasi.so"


def main(sdist, source, wasm, module, out):
    sdist, out = pathlib.Path(sdist), pathlib.Path(out)
    meta = (sdist / "PKG-INFO").read_text()
    name = next(l.split(":", 1)[1].strip() for l in meta.splitlines() if l.startswith("Name:"))
    version = next(l.split(":", 1)[1].strip() for l in meta.splitlines() if l.startswith("Version:"))
    dist = f"{name.replace('-', '_')}-{version}"
    files = {}
    package = module.split(".")[0]
    if source != "-":
        root = pathlib.Path(source)
        for f in sorted((root / package).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                files[f.relative_to(root).as_posix()] = f.read_bytes()
    else:
        # maturin's package for a bare extension module.
        init = f"from .{package} import *\n\n__doc__ = {package}.__doc__\n"
        init += f"if hasattr({package}, '__all__'):\n    __all__ = {package}.__all__\n"
        files[f"{package}/__init__.py"] = init.encode()
        module = f"{package}.{package}"
    files[module.replace(".", "/") + SUFFIX] = pathlib.Path(wasm).read_bytes()
    files[f"{dist}.dist-info/METADATA"] = meta.encode()
    files[f"{dist}.dist-info/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: worldline tests/wasi-wheel.py\nRoot-Is-Purelib: false\nTag: {TAG}\n"
    ).encode()
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{dist}-{TAG}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    print(wheel)


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(*sys.argv[1:])
