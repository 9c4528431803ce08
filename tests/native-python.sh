# Sourced by tests/run and examples/run: a virtual environment under the
# build folder ($1, e.g. target/) holding the pinned Python packages that
# native agents are tested with (the official `mcp` and `openai` clients,
# LangGraph with the MCP adapters, which need mcp 1.x, and the OpenAI
# Agents SDK),
# installed once and found again by later runs (a stamp names what it
# holds). Exports WORLDLINE_NATIVE_PYTHON, its interpreter.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
NATIVE_PYTHON_PACKAGES="mcp==1.30.0 openai==3.57.0 langgraph==1.2.24 langchain-openai==1.7.4 langchain-mcp-adapters==0.3.2 openai-agents==0.24.0"

ensure_native_python() {
  local venv="$1/native-python"
  ensure_stamped_venv "$venv" "$NATIVE_PYTHON_PACKAGES" || return 1
  WORLDLINE_NATIVE_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_NATIVE_PYTHON
}
