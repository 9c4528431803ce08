# Sourced by tests/run: a virtual environment under the build folder ($1,
# e.g. target/) holding the pinned Python packages the training tests check
# worldline's output with: `atif` (Harbor's ATIF v1.8 trajectory models,
# which validate `export --format atif`). `openenv-core` and `ray` join it
# with the tests of `worldline serve` and the Ray recipe, not before: ray
# alone costs minutes on a fresh machine.
# Installed once and found again by later runs (a stamp names what it
# holds). Exports WORLDLINE_TRAIN_PYTHON, its interpreter.
TRAIN_PYTHON_PACKAGES="atif==1.8.0"

ensure_train_python() {
  local venv="$1/train-python"
  if [ "$(cat "$venv/.packages" 2>/dev/null)" != "$TRAIN_PYTHON_PACKAGES" ]; then
    echo "installing $TRAIN_PYTHON_PACKAGES into $venv"
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
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $TRAIN_PYTHON_PACKAGES
    echo "$TRAIN_PYTHON_PACKAGES" > "$venv/.packages"
  fi
  WORLDLINE_TRAIN_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_TRAIN_PYTHON
}
