# Sourced by tests/run and examples/run: put componentize-py on PATH,
# installing it when missing into a virtual environment under the build
# folder ($1, e.g. target/), where later runs find it again. A virtual
# environment, not `pip install` into the system's Python: Debian 12 and
# other distributions refuse that (PEP 668, externally managed).
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
  if ! python3 -m venv "$venv" 2>/dev/null; then
    # Debian ships venv's pip bootstrap separately.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      python3 -m venv "$venv"
    else
      echo "cannot create a Python virtual environment; install python3-venv (Debian, Ubuntu) and run again" >&2
      return 1
    fi
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "componentize-py==$COMPONENTIZE_PY_VERSION"
  export PATH="$venv/bin:$PATH"
  [ "$(componentize-py --version 2>/dev/null)" = "$wanted" ]
}
