# Sourced by tests/run: a virtual environment under the build folder ($1,
# e.g. target/) holding the pinned `openenv-core` package, whose own client
# the tests of `worldline serve` drive it with (OpenEnv's environment
# protocol). Installed once and found again by later runs (a stamp names
# what it holds). Exports WORLDLINE_OPENENV_PYTHON, its interpreter.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
# openenv-core declares gradio, pandas and numpy for its web interface and
# server (474 MB, 8 min 52 s to install under load); its client needs what
# its imports name: those, at the versions pip resolved for the whole
# package, then openenv-core itself without its declared dependencies
# (140 MB).
OPENENV_PYTHON_DEPS="fastapi==0.165.0 fastmcp==4.2.3 pydantic==2.14.4 requests==2.34.2 websockets==17.4"
OPENENV_PYTHON_PACKAGE="openenv-core==0.3.0"

ensure_openenv_python() {
  local venv="$1/openenv-python"
  ensure_stamped_venv "$venv" "$OPENENV_PYTHON_DEPS" "the client of openenv-core" "$OPENENV_PYTHON_PACKAGE" || return 1
  WORLDLINE_OPENENV_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_OPENENV_PYTHON
}
