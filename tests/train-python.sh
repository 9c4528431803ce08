# Sourced by tests/run: a virtual environment under the build folder ($1,
# e.g. target/) holding the pinned Python packages the training tests check
# worldline's output with: `atif` (Harbor's ATIF v1.8 trajectory models,
# which validate `export --format atif`). `openenv-core` and `ray` have
# venvs of their own (tests/openenv-python.sh, tests/ray-python.sh).
# Installed once and found again by later runs (a stamp names what it
# holds). Exports WORLDLINE_TRAIN_PYTHON, its interpreter.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
TRAIN_PYTHON_PACKAGES="atif==1.8.0"

ensure_train_python() {
  local venv="$1/train-python"
  ensure_stamped_venv "$venv" "$TRAIN_PYTHON_PACKAGES" || return 1
  WORLDLINE_TRAIN_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_TRAIN_PYTHON
}
