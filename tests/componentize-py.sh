# Sourced by tests/run and examples/run: put componentize-py on PATH,
# installing it when missing into a virtual environment under the build
# folder ($1, e.g. target/), where later runs find it again (tests/venv.sh).
#
# Why a virtual environment under the build folder (was decision 0197): `pip
# install` into the system Python is refused on Debian 12 (PEP 668); a venv
# under the build folder needs no privileges, is removed with the build and is
# cached between runs. `pip install --user` is refused there too,
# `--break-system-packages` is what PEP 668 exists to stop, and `pipx` is not
# installed by default either. Where `venv` lacks its pip bootstrap (Debian
# without `python3-venv`) the package is installed when root, else named.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
COMPONENTIZE_PY_VERSION=0.25.1

ensure_componentize_py() {
  local venv="$1/componentize-py-$COMPONENTIZE_PY_VERSION"
  local wanted="componentize-py $COMPONENTIZE_PY_VERSION"
  if [ -x "$venv/bin/componentize-py" ]; then
    export PATH="$venv/bin:$PATH"
  fi
  if [ "$(componentize-py --version 2>/dev/null)" = "$wanted" ]; then
    return 0
  fi
  echo "installing componentize-py $COMPONENTIZE_PY_VERSION into $venv"
  rm -rf "$venv"
  make_venv "$venv" || return 1
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "componentize-py==$COMPONENTIZE_PY_VERSION"
  export PATH="$venv/bin:$PATH"
  [ "$(componentize-py --version 2>/dev/null)" = "$wanted" ]
}
