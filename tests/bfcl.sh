# Sourced by tests/run: a virtual environment under the build folder ($1,
# e.g. target/) holding the pinned BFCL package (bfcl-eval), whose
# multi-turn data, func-doc and backend classes `worldline bench import
# bfcl/...` reads and whose own multi_turn_checker the agreement test
# grades with (decision 0377). bfcl-eval declares every model
# provider's SDK, vllm-free but still torch-sized (sentence-transformers,
# faiss); the multi-turn checker and the classes of the multi_turn_base
# category import only the standard library and mpmath (MathAPI), so the
# package goes in without its declared dependencies and mpmath at the
# version it pins. Installed once and found again by later runs (a stamp
# names what it holds). WORLDLINE_SKIP_BFCL=1 skips it, and the tests that
# need it then say they were skipped. Exports WORLDLINE_BFCL_PYTHON.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
BFCL_DEPS="mpmath==1.3.0"
BFCL_PACKAGE="bfcl-eval==2026.3.23"

ensure_bfcl() {
  if [ -n "${WORLDLINE_SKIP_BFCL:-}" ]; then
    echo "WORLDLINE_SKIP_BFCL is set: not installing $BFCL_PACKAGE; the bfcl tests skip"
    return 0
  fi
  local venv="$1/bfcl-python"
  ensure_stamped_venv "$venv" "$BFCL_DEPS" "the multi-turn data and checker of bfcl-eval" "$BFCL_PACKAGE" || return 1
  WORLDLINE_BFCL_PYTHON="$(cd "$venv/bin" && pwd)/python"
  export WORLDLINE_BFCL_PYTHON
}
