# Sourced by tests/run and examples/run: a virtual environment under the
# build folder ($1, e.g. target/) holding the pinned Python packages that
# native agents are tested with (the official `mcp` and `openai` clients,
# LangGraph with the MCP adapters, which need mcp 1.x, and the OpenAI
# Agents SDK),
# installed once and found again by later runs (a stamp names what it
# holds). Exports WORLDLINE_NATIVE_PYTHON, its interpreter.
NATIVE_PYTHON_PACKAGES="mcp==1.30.0 openai==3.57.0 langgraph==1.2.24 langchain-openai==1.7.4 langchain-mcp-adapters==0.3.2 openai-agents==0.24.0"

ensure_native_python() {
  local venv="$1/native-python"
  if [ "$(cat "$venv/.packages" 2>/dev/null)" != "$NATIVE_PYTHON_PACKAGES" ]; then
    echo "installing $NATIVE_PYTHON_PACKAGES into $venv"
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
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $NATIVE_PYTHON_PACKAGES
    echo "$NATIVE_PYTHON_PACKAGES" > "$venv/.packages"
  fi
  WORLDLINE_NATIVE_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_NATIVE_PYTHON
}
