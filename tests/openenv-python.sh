# Sourced by tests/run: a virtual environment under the build folder ($1,
# e.g. target/) holding the pinned `openenv-core` package, whose own client
# the tests of `worldline serve` drive it with (OpenEnv's environment
# protocol). Installed once and found again by later runs (a stamp names
# what it holds). Exports WORLDLINE_OPENENV_PYTHON, its interpreter.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
OPENENV_PYTHON_PACKAGES="openenv-core==0.3.0"

ensure_openenv_python() {
  local venv="$1/openenv-python"
  ensure_stamped_venv "$venv" "$OPENENV_PYTHON_PACKAGES" || return 1
  WORLDLINE_OPENENV_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_OPENENV_PYTHON
}
